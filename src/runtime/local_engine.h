// One model loaded on one GPU for the CLI hosts (ewgpu run, ewgpu bench decode/prefill): the validated folder,
// its weights on the GPU, a Forward, the tokenizer and the conversation template. Also the request defaults the
// folder itself says (sampling values from mlc-chat-config.json, stop ids and strings from its conv_template).
#pragma once

#include "gpu/context.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"
#include "runtime/forward.h"
#include "runtime/generator.h"
#include "tokenizer/conv_template.h"
#include "tokenizer/tokenizer.h"

#include <memory>
#include <optional>

namespace ewgpu {

struct LocalEngineOptions {
  gpu::ContextOptions gpu;
  ForwardOptions forward;
  uint64_t max_chunk_bytes = 0;
};

struct LocalEngine {
  std::unique_ptr<gpu::Context> ctx;
  std::unique_ptr<ModelFolder> folder;
  std::unique_ptr<GpuModel> model;
  std::unique_ptr<Forward> forward;
  std::optional<Tokenizer> tokenizer;
  std::optional<ConvTemplate> conv;
  double load_ms = 0;
  // Where load_ms went: device creation, weight upload, Forward::create (its pipelines, see
  // ctx->compileStats()), and the wait for the GPU to finish the uploads.
  struct LoadPhases {
    double device_ms = 0, upload_ms = 0, forward_ms = 0, finish_ms = 0;
  } phases;

  static Result<LocalEngine> load(const std::string& dir, const LocalEngineOptions& opts);
};

// Sampling defaults of a folder: temperature, top_p and penalties from mlc-chat-config.json; stop token ids
// from the conversation template (e.g. Qwen3.8-2B: 0.6, 0.95, [248046, 248044]).
SamplingParams defaultSampling(const ModelConfig& config, const ConvTemplate* conv);

}  // namespace ewgpu
