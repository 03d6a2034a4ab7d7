// Requests of the public API: a CompletionRequest checked against its model (rendered, validated, defaults
// applied) becomes a scheduler job; batches; the OpenAI chat.completions / completions facade over them.
#include "api/engine_impl.h"
#include "api/openai.h"

#include <random>

namespace ewgpu {
namespace {

uint64_t randomSeed() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lk(mu);
  return gen();
}

std::string randomHex(size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  uint64_t r = randomSeed();
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0 && i) r = randomSeed();
    s += hex[r & 15];
    r >>= 4;
  }
  return s;
}

}  // namespace

Result<std::shared_ptr<const ModelAssets>> Engine::Impl::residentAssets(const std::string& requested) const {
  const std::string model = requested.empty() ? current_model : requested;
  if (model.empty()) return makeError(ErrorCode::kNoModel, "no model is loaded (load one first)", {{"field", "model"}});
  auto it = models.find(model);
  if (it == models.end()) {
    if (loading.count(model))
      return makeError(ErrorCode::kNoModel, "model " + model + " is still loading", {{"field", "model"}, {"model", model}});
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& [id, r] : models) ids.push_back(id);
    return makeError(ErrorCode::kUnknownModel, "model " + model + " is not loaded",
                     {{"field", "model"}, {"model", model}, {"resident", ids}});
  }
  return it->second.assets;
}

Result<PreparedJob> Engine::Impl::prepare(const CompletionRequest& req) const {
  PreparedJob job;
  {
    std::lock_guard<std::mutex> lk(mu);
    EWGPU_ASSIGN(job.assets, residentAssets(req.model));
  }
  EWGPU_ASSIGN(job.spec, prepareJob(*job.assets, req, PrepareOptions{opts.default_max_tokens, randomSeed()}));
  return job;
}

Result<CompletionHandle> Engine::Impl::submit(PreparedJob job, std::function<void(const Chunk&)> on_chunk,
                                              std::function<void(const CompletionResult&)> on_done) {
  auto out = std::make_shared<CompletionJob>();
  out->result = std::make_shared<Pending<CompletionResult>>();
  JobCallbacks cb;
  cb.on_chunk = std::move(on_chunk);
  cb.on_done = [res = out->result, on_done = std::move(on_done)](const CompletionResult& r) {
    if (on_done) on_done(r);
    res->set(r);
  };
  Effects fx;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (stopping) return makeError(ErrorCode::kEngineClosed, "the engine was closed");
    auto it = models.find(job.spec.model);
    if (it == models.end() || it->second.assets != job.assets)  // unloaded (or reloaded) since prepare()
      return makeError(ErrorCode::kUnknownModel, "model " + job.spec.model + " is not loaded",
                       {{"field", "model"}, {"model", job.spec.model}});
    out->id = sched.submit(std::move(job.spec), std::move(cb), fx);
    wake = true;
    post(std::move(fx));  // under mu, as every scheduler effect (Impl::post)
  }
  cv.notify_all();
  return CompletionHandle(out);
}

Result<CompletionHandle> Engine::complete(CompletionRequest req, std::function<void(const Chunk&)> on_chunk) {
  try {
    auto job = impl_->prepare(req);
    if (!job) return std::move(job).error();
    return impl_->submit(std::move(*job), std::move(on_chunk), {});
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("complete: ") + e.what());
  }
}

Result<BatchHandle> Engine::batch(std::vector<CompletionRequest> reqs, std::function<void(const CompletionResult&)> on_item) {
  try {
    if (reqs.empty()) return badField("requests", "a batch needs at least one request");
    if (reqs.size() > 100000) return badField("requests", "at most 100000 requests per batch");
    auto out = std::make_shared<BatchJob>();
    out->task = "batch:" + std::to_string(++impl_->batches);
    out->results = std::make_shared<Pending<std::vector<CompletionResult>>>();
    std::vector<PreparedJob> jobs;
    for (size_t i = 0; i < reqs.size(); ++i) {
      reqs[i].task = out->task;
      auto j = impl_->prepare(reqs[i]);
      if (!j) {
        Error e = std::move(j).error();
        e.detail["index"] = i;
        return e;
      }
      j->spec.index = i;
      jobs.push_back(std::move(*j));
    }
    struct Gather {
      std::mutex mu;
      std::vector<CompletionResult> results;
      size_t left;
    };
    auto g = std::make_shared<Gather>();
    g->results.resize(jobs.size());
    g->left = jobs.size();
    auto done = [g, res = out->results, on_item](const CompletionResult& r) {
      if (on_item) on_item(r);
      std::lock_guard<std::mutex> lk(g->mu);
      g->results[r.index] = r;
      if (--g->left == 0) res->set(g->results);
    };
    for (auto& j : jobs) {
      auto h = impl_->submit(std::move(j), {}, done);
      if (!h) {  // unloaded mid-batch: what was submitted runs; the rest ends as failed
        CompletionResult r;
        r.index = out->ids.size();
        r.outcome = Outcome::kFailed;
        r.finish_reason = "error";
        r.error = h.error();
        done(r);
        out->ids.push_back(0);
        continue;
      }
      out->ids.push_back((*h)->id);
    }
    return BatchHandle(out);
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("batch: ") + e.what());
  }
}

Result<ChatCompletionHandle> Engine::Impl::openaiCreate(const nlohmann::json& body, bool chat,
                                                        std::function<void(const nlohmann::json&)> on_chunk) {
  auto parsed = chat ? openai::parseChatRequest(body) : openai::parseCompletionRequest(body);
  if (!parsed) return std::move(parsed).error();
  auto job = prepare(parsed->req);
  if (!job) return std::move(job).error();
  auto out = std::make_shared<ChatCompletionJob>();
  out->completion_id = (chat ? "chatcmpl-" : "cmpl-") + randomHex(24);
  out->response = std::make_shared<Pending<nlohmann::json>>();
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::shared_ptr<const ModelAssets> assets = job->assets;
  auto token_text = [assets](int32_t id) {
    const int32_t ids[1] = {id};
    return assets->tokenizer.decode(ids);
  };
  auto builder = std::make_shared<openai::ResponseBuilder>(chat, out->completion_id, created, assets->id, token_text,
                                                           parsed->req.logprobs);
  const bool stream = parsed->stream, usage = parsed->include_usage;
  std::function<void(const Chunk&)> chunk_fn;
  if (stream && on_chunk)
    chunk_fn = [builder, on_chunk](const Chunk& c) {
      for (const auto& j : builder->chunks(c)) on_chunk(j);
    };
  auto done = [builder, on_chunk, stream, usage, resp = out->response](const CompletionResult& r) {
    if (stream && on_chunk && r.outcome != Outcome::kFailed)
      for (const auto& j : builder->finalChunks(r, usage)) on_chunk(j);
    if (r.outcome == Outcome::kFailed && r.error) {
      nlohmann::json e = openai::errorJson(*r.error);
      e["ewgpu"] = openai::extensionJson(r);
      if (stream && on_chunk) on_chunk(e);
      resp->set(std::move(e));
      return;
    }
    resp->set(builder->response(r));
  };
  auto h = submit(std::move(*job), std::move(chunk_fn), std::move(done));
  if (!h) return std::move(h).error();
  out->id = (*h)->id;
  return ChatCompletionHandle(out);
}

Result<ChatCompletionHandle> Engine::ChatCompletions::create(const nlohmann::json& request,
                                                             std::function<void(const nlohmann::json&)> on_chunk) {
  try {
    return engine->impl_->openaiCreate(request, true, std::move(on_chunk));
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("chat.completions.create: ") + e.what());
  }
}

Result<ChatCompletionHandle> Engine::createCompletion(const nlohmann::json& request,
                                                      std::function<void(const nlohmann::json&)> on_chunk) {
  try {
    return impl_->openaiCreate(request, false, std::move(on_chunk));
  } catch (const std::exception& e) {
    return makeError(ErrorCode::kInternal, std::string("completions.create: ") + e.what());
  }
}

}  // namespace ewgpu
