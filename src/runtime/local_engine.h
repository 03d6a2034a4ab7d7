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

#include <functional>
#include <memory>
#include <optional>

namespace ewgpu {

// Where a LocalEngine load is, for a progress display (the engine API has its own LoadProgress). Stages in order:
// parse (folder, tokenizer, template), upload (weights to the GPU), pipelines (kernels compiled for the Forward;
// the total grows while the forward asks for them, and is final once they are all ready).
struct LocalLoadProgress {
  enum class Stage { kParse, kUpload, kPipelines, kDone };
  Stage stage = Stage::kParse;
  double parse_ms = 0;          // set from the upload stage on
  uint64_t bytes_uploaded = 0;  // so far
  double upload_ms = 0;         // time spent uploading so far
  size_t pipelines = 0;         // kernels built so far,
  size_t pipelines_total = 0;   // of those asked for so far
};

struct LocalEngineOptions {
  gpu::ContextOptions gpu;
  ForwardOptions forward;
  uint64_t max_chunk_bytes = 0;
  std::function<void(const LocalLoadProgress&)> on_progress;  // called from the loading thread; may be empty
};

struct LocalEngine {
  std::unique_ptr<gpu::Context> ctx;
  std::unique_ptr<ModelFolder> folder;
  std::unique_ptr<GpuModel> model;
  std::unique_ptr<Forward> forward;
  std::optional<Tokenizer> tokenizer;
  std::optional<ConvTemplate> conv;
  double load_ms = 0;
  // Where load_ms went: device creation, weight upload (the buffers; natively the matrices' bytes are written
  // through the staging ring inside Forward::create while its pipelines compile, copy_ms of it), Forward::create
  // (its pipelines, see ctx->compileStats()), and the wait for the GPU to finish the uploads.
  struct LoadPhases {
    double device_ms = 0, upload_ms = 0, forward_ms = 0, copy_ms = 0, finish_ms = 0;
  } phases;

  // Validates the folder, its tokenizer and its conversation template (whose token ids must lie inside the
  // vocabulary: INVALID_MODEL_FOLDER otherwise) before any GPU work, then uploads and builds the Forward.
  static Result<LocalEngine> load(const std::string& dir, const LocalEngineOptions& opts);
};

// INVALID_MODEL_FOLDER {file: mlc-chat-config.json, field, problem: "outside_vocabulary", id, vocab_size} when a
// template's system_prefix_token_ids or stop_token_ids name an id the model has no embedding row for.
Status checkTemplateIds(const ConvTemplate& conv, int vocab);

// Sampling defaults of a folder: temperature, top_p and penalties from mlc-chat-config.json; stop token ids
// from the conversation template (e.g. Qwen3.8-2B: 0.6, 0.95, [248046, 248044]).
SamplingParams defaultSampling(const ModelConfig& config, const ConvTemplate* conv);

}  // namespace ewgpu
