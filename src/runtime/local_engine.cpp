#include "runtime/local_engine.h"

#include <chrono>

namespace ewgpu {

Result<LocalEngine> LocalEngine::load(const std::string& dir, const LocalEngineOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
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
    e.conv.emplace(std::move(*conv));
  }
  auto mark = std::chrono::steady_clock::now();
  auto lap = [&mark] {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
    return ms;
  };
  auto ctx = gpu::Context::create(opts.gpu);
  if (!ctx) return std::move(ctx).error();
  e.ctx = std::move(*ctx);
  e.phases.device_ms = lap();
  auto model = uploadModel(*e.ctx, *e.folder, {opts.max_chunk_bytes});
  if (!model) return std::move(model).error();
  e.model = std::move(*model);
  e.phases.upload_ms = lap();
  auto fwd = Forward::create(*e.ctx, *e.model, opts.forward);
  if (!fwd) return std::move(fwd).error();
  e.forward = std::move(*fwd);
  e.phases.forward_ms = lap();
  EWGPU_TRY(e.ctx->finish());
  e.phases.finish_ms = lap();
  e.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
