#include "runtime/local_engine.h"

#include <chrono>

namespace ewgpu {

Status checkTemplateIds(const ConvTemplate& conv, int vocab) {
  for (auto [field, ids] : {std::pair{"conv_template.system_prefix_token_ids", &conv.systemPrefixTokenIds()},
                            {"conv_template.stop_token_ids", &conv.stopTokenIds()}})
    for (int32_t id : *ids)
      if (id < 0 || id >= vocab)
        return makeError(ErrorCode::kInvalidModelFolder,
                         std::string("mlc-chat-config.json: ") + field + " holds " + std::to_string(id) +
                             ", outside the vocabulary of " + std::to_string(vocab) + " tokens",
                         {{"file", "mlc-chat-config.json"},
                          {"field", field},
                          {"problem", "outside_vocabulary"},
                          {"id", id},
                          {"vocab_size", vocab}});
  return {};
}

Result<LocalEngine> LocalEngine::load(const std::string& dir, const LocalEngineOptions& opts) {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); };
  auto t0 = Clock::now();
  LocalLoadProgress progress;
  auto report = [&] {
    if (opts.on_progress) opts.on_progress(progress);
  };
  report();
  LocalEngine e;
  auto folder = ModelFolder::open(dir);
  if (!folder) return std::move(folder).error();
  e.folder = std::make_unique<ModelFolder>(std::move(*folder));
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  if (!tok) return std::move(tok).error();
  e.tokenizer.emplace(std::move(*tok));
  if (!e.folder->config().conv_template.is_null()) {
    auto conv = ConvTemplate::fromJson(e.folder->config().conv_template);
    if (!conv) return std::move(conv).error();
    EWGPU_TRY(checkTemplateIds(*conv, e.folder->config().vocab));
    e.conv.emplace(std::move(*conv));
  }
  progress.parse_ms = ms(t0);
  progress.stage = LocalLoadProgress::Stage::kUpload;
  report();
  auto mark = Clock::now();
  auto lap = [&mark] {
    auto now = Clock::now();
    double d = std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
    return d;
  };
  auto ctx = gpu::Context::create(opts.gpu);
  if (!ctx) return std::move(ctx).error();
  e.ctx = std::move(*ctx);
  e.phases.device_ms = lap();
  const auto t_upload = Clock::now();
  UploadOptions uo{opts.max_chunk_bytes};
  if (opts.on_progress)
    uo.on_bytes = [&](uint64_t bytes) {
      progress.bytes_uploaded = bytes;
      progress.upload_ms = ms(t_upload);
      report();
    };
  uo.overlap = true;  // the weights are written while Forward::create's pipelines compile
  auto model = uploadModel(*e.ctx, *e.folder, uo);
  if (!model) return std::move(model).error();
  e.model = std::move(*model);
  e.phases.upload_ms = lap();
  progress.upload_ms = ms(t_upload);
  progress.stage = LocalLoadProgress::Stage::kPipelines;
  report();
  if (opts.on_progress)
    e.ctx->setKernelCompiledHook([&](size_t ready, size_t total) {
      progress.pipelines = ready;
      progress.pipelines_total = total;
      report();
    });
  auto fwd = Forward::create(*e.ctx, *e.model, opts.forward,
                             [&] { return e.model->finishUpload(&e.phases.copy_ms); });
  e.ctx->setKernelCompiledHook({});
  if (!fwd) return std::move(fwd).error();
  e.forward = std::move(*fwd);
  e.phases.forward_ms = lap();
  EWGPU_TRY(e.ctx->finish());
  e.phases.finish_ms = lap();
  e.load_ms = ms(t0);
  progress.stage = LocalLoadProgress::Stage::kDone;
  report();
  return e;
}

SamplingParams defaultSampling(const ModelConfig& c, const ConvTemplate* conv) {
  SamplingParams p;
  p.temperature = c.temperature;
  p.top_p = c.top_p;
  p.presence_penalty = c.presence_penalty;
  p.frequency_penalty = c.frequency_penalty;
  p.repetition_penalty = c.repetition_penalty;
  if (conv)
    for (int32_t id : conv->stopTokenIds())
      if (id >= 0 && id < c.vocab && p.stop_token_ids.size() < kSampleMaxStop) p.stop_token_ids.push_back(id);
  return p;
}

}  // namespace ewgpu
