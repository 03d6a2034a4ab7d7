// The GPU encoder of an embedding model (model_type "bert"): weights, activation buffers and every kernel op built
// once, and a forward over a packed batch of sequences. A batch is not padded: the tokens of all its sequences sit
// back to back in one [T, H] activation (T ≤ maxTokens()), every GEMM covers all T rows at once, and
// encoder_attention lets each token attend to the tokens of its own sequence only (bidirectional, no causal mask),
// which is what MLC's padded batch with its pad mask computes for each row.
//
//   embed (word + position + type 0) -> LayerNorm -> per layer: qkv (+b) -> attention -> o (+b) + residual ->
//   LayerNorm -> fc1 (+b) + exact GELU -> fc2 (+b) + residual -> LayerNorm
//
// The [CLS] row (the first token) of each sequence is copied into a readback; pooling ends there, the host does
// the L2 normalisation (as MLC's embedding engine does). Two-phase like the decode loop: submit() records, submits
// and requests the map without waiting; ready()/collect() after Context::processEvents(); run() waits (the
// native engine's driver thread and tests).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/error.h"
#include "gpu/context.h"
#include "gpu/readback.h"
#include "kernels/encoder_ops.h"
#include "kernels/linear.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"

namespace ewgpu {

struct EncoderOptions {
  uint32_t max_tokens = 0;  // tokens per submission (0: the position embeddings, i.e. one longest sequence)
};

class Encoder {
 public:
  // Uploads the weights (q0f32 as f32) and builds every op. BAD_REQUEST for a folder that is not bert.
  static Result<std::unique_ptr<Encoder>> create(gpu::Context& ctx, const ModelFolder& folder, EncoderOptions o = {});
  ~Encoder();

  const ModelConfig& config() const { return config_; }
  uint32_t maxTokens() const { return max_tokens_; }           // per submission
  uint32_t maxSequence() const { return (uint32_t)config_.context_window; }  // tokens of one input
  uint64_t weightBytes() const { return weight_bytes_; }

  // Records and submits one packed batch (Σ lengths ≤ maxTokens(), each 1..maxSequence(), ids in [0, vocab):
  // BAD_REQUEST otherwise) and requests the readback. One batch in flight at a time.
  Status submit(std::span<const std::vector<int32_t>> seqs);
  bool pending() const { return readback_.pending(); }
  bool ready() const { return readback_.ready(); }
  // After ready() (or a failed map): the [CLS] rows of the submitted batch, [sequences][hidden], as computed.
  Result<std::vector<std::vector<float>>> collect();

  // Every sequence (any count), split into packed submissions of at most maxTokens() tokens, waiting on each;
  // each vector L2-normalised when `normalize`. For the driver thread and tests.
  Result<std::vector<std::vector<float>>> run(std::span<const std::vector<int32_t>> seqs, bool normalize);
  // The whole last hidden state [n, hidden] of one sequence (tests).
  Result<std::vector<float>> hiddenStates(std::span<const int32_t> tokens);

  struct Weights;
  struct Ops;

 private:
  explicit Encoder(gpu::Context& ctx);
  void recordForward(gpu::Recorder& rec, uint32_t tokens) const;

  gpu::Context& ctx_;
  ModelConfig config_;
  uint32_t max_tokens_ = 0, submitted_ = 0;
  uint64_t weight_bytes_ = 0;
  std::unique_ptr<Weights> w_;
  std::unique_ptr<Ops> ops_;
  gpu::Buffer toks_, meta_, x_, a_, qkv_, att_, mid_;  // activations: [T, 4] u32, [1] u32, [T, H] x 2, [T, 3H], [T, H], [T, I]
  gpu::Readback readback_;                             // [maxTokens, H] f32: one [CLS] row per sequence
};

}  // namespace ewgpu
