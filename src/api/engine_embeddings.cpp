// embeddings.create on the native engine: the request is checked on the caller's thread (model resolved,
// inputs tokenized), then runs as a command on the driver thread, between scheduler steps, on the model's Encoder.
// The caller gets a handle at once; the response (or {"error"}) is set when the GPU work has been read back.
#include "api/embeddings.h"
#include "api/engine_impl.h"
#include "api/openai.h"

namespace ewgpu {

Result<EmbeddingsHandle> Engine::Impl::embeddingsCreate(const nlohmann::json& body) {
  std::string model;
  EWGPU_ASSIGN(model, embeddingModelField(body));
  std::shared_ptr<const ModelAssets> assets;
  {
    std::lock_guard<std::mutex> lk(mu);
    EWGPU_ASSIGN(assets, residentAssets(model));
    if (model.empty()) model = current_model;
  }
  auto req = prepareEmbeddings(*assets, body);
  if (!req) return std::move(req).error();
  auto out = std::make_shared<EmbeddingsJob>();
  out->response = std::make_shared<Pending<nlohmann::json>>();
  {
    std::lock_guard<std::mutex> lk(mu);
    if (stopping) return makeError(ErrorCode::kEngineClosed, "the engine was closed");
    commands.push_back([this, assets, req = std::move(*req), resp = out->response](bool closing_now) {
      if (closing_now) {
        resp->set(openai::errorJson(makeError(ErrorCode::kEngineClosed, "the engine was closed")));
        return;
      }
      Encoder* enc = nullptr;
      {
        std::lock_guard<std::mutex> lk2(mu);
        auto it = models.find(assets->id);
        if (it != models.end() && it->second.assets == assets) enc = it->second.encoder.get();
      }
      if (!enc) {  // unloaded since the request was checked (only this thread unloads, so enc stays valid)
        resp->set(openai::errorJson(makeError(ErrorCode::kUnknownModel, "model " + assets->id + " is not loaded",
                                              {{"field", "model"}, {"model", assets->id}})));
        return;
      }
      auto v = enc->run(req.inputs, assets->config.embedding_normalize);
      if (!v)
        resp->set(openai::errorJson(v.error()));
      else
        resp->set(embeddingsResponse(assets->id, *v, req.prompt_tokens, req.base64));
    });
    wake = true;
  }
  cv.notify_all();
  return EmbeddingsHandle(out);
}

Result<EmbeddingsHandle> Engine::Embeddings::create(const nlohmann::json& request) {
  try {
    return engine->impl_->embeddingsCreate(request);
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("embeddings.create: ") + e.what());
  }
}

}  // namespace ewgpu
