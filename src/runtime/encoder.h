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
// and requests the map without waiting; ready()/collect() after Context::processEvents(). EncodeJob (below) takes
// one request's sequences through those two phases without ever waiting, so the browser host steps it from its
// event loop; run() drives the same EncodeJob with a wait between steps (the native engine's driver thread, tests).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
  bool submitted() const { return submitted_ > 0; }  // a batch was submitted and not collected yet
  bool ready() const { return readback_.ready(); }
  // After ready() (or a failed map): the [CLS] rows of the submitted batch, [sequences][hidden], as computed.
  Result<std::vector<std::vector<float>>> collect();

  // Every sequence (any count) through an EncodeJob, waiting for each submission's readback. For the driver
  // thread and tests.
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

// One request's sequences (any count) through an Encoder, never waiting: packed submissions of at most
// maxTokens() tokens, one in flight at a time; each vector L2-normalised at the end when `normalize`. The host
// calls advance() after Context::processEvents() until it returns true. One job per encoder at a time: a host with
// several requests keeps them in a queue and advances the first.
class EncodeJob {
 public:
  EncodeJob(std::vector<std::vector<int32_t>> seqs, bool normalize) : seqs_(std::move(seqs)), normalize_(normalize) {}

  // Collects the batch in flight if its readback has landed, then submits the next one. true once the job is
  // finished (every vector in hand, or failed); false while a readback is awaited.
  bool advance(Encoder& e);
  bool finished() const { return finished_; }
  // After finished(): the vectors in input order, or the error that stopped the job.
  Result<std::vector<std::vector<float>>> take();

 private:
  std::vector<std::vector<int32_t>> seqs_;
  bool normalize_;
  size_t next_ = 0;  // first sequence not yet submitted
  bool finished_ = false;
  std::vector<std::vector<float>> out_;
  std::optional<Error> error_;
};

}  // namespace ewgpu
