// Generation as a non-blocking state machine over a Forward. Sequences are admitted into decode rows (each row
// owns a KV/state slot); work is issued in submissions:
//   - a prefill chunk (prefill_chunk tokens of one sequence; the last chunk samples its first token), or
//   - K decode steps for every active row, with no CPU round trip between the steps (the sampled ids stay on
//     the GPU), followed by one readback of the K outputs.
// step() never blocks: it issues work, pumps GPU events, and when a readback has landed it turns the tokens into
// text (streaming detokenizer), applies stop strings and delivers events. Two decode submissions are kept in
// flight (pipeline depth 2): the next K steps are encoded and queued while the GPU runs the current ones, so the
// GPU does not idle through the readback and the encoding. Readbacks are consumed in submission order; steps
// that ran for a row after its sequence ended (a stop string seen on the CPU, a cancel) are discarded. The browser build drives
// step() from its event loop; natively runToCompletion() drives it with waits.
// Stop token ids and max_tokens are enforced on the GPU (a row goes inactive and later steps emit nothing); stop
// strings on the CPU (text after the match is discarded, the row is deactivated before the next submission).
#pragma once

#include "gpu/readback.h"
#include "kernels/sampling.h"
#include "runtime/forward.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ewgpu {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids (already rendered through the conversation template)
  SamplingParams sampling;      // max_tokens, stop ids, temperature, ...
  std::vector<std::string> stop_strings;
};

struct TokenInfo {
  int32_t id = 0;
  float logprob = 0;
  std::vector<TopLogprob> top;
};

struct GenerationResult {
  std::string text;
  std::vector<int32_t> tokens;      // generated ids shown to the caller (stop token / text after a stop excluded)
  std::vector<TokenInfo> token_info;  // with logprobs when requested
  std::string finish_reason;        // "stop", "length", "abort", "error"
  std::optional<Error> error;
  uint32_t prompt_tokens = 0, completion_tokens = 0;
  double ttft_ms = 0, prefill_ms = 0, decode_ms = 0;  // time to first token; prefill; rest of decode
};

struct GenerationCallbacks {
  std::function<void(const std::string& delta)> on_text;  // streamed text (never half a UTF-8 character)
  std::function<void(const GenerationResult&)> on_done;
};

struct GeneratorStats {
  uint64_t submissions = 0, decode_steps = 0, prefill_chunks = 0, readbacks = 0;
};

class Generator {
 public:
  Generator(gpu::Context& ctx, Forward& fwd, const Tokenizer* tok, uint32_t steps = 16);

  // BAD_REQUEST on an invalid request (empty prompt, prompt at or beyond the context window, bad sampling
  // values). The request's max_tokens is clamped to the context window (finish "length" there).
  Result<uint64_t> submit(GenerationRequest req, GenerationCallbacks cb);
  // Cancels a sequence: it finishes with "abort" and its partial text at the next step().
  bool cancel(uint64_t id);
  // Decode steps per submission (1..max_steps of the Forward); takes effect at the next submission.
  Status setSteps(uint32_t k);
  uint32_t steps() const { return steps_; }
  // Decode submissions in flight at once: 1 (strict alternation of GPU work and CPU consumption) or 2 (default).
  Status setPipelineDepth(uint32_t depth);

  // Advances the state machine without blocking. Returns true while work remains (queued, running or in flight).
  bool step();
  // Native driver: step() until idle, waiting on the GPU in between. Device errors end every sequence with
  // "error" and are returned.
  Status runToCompletion();
  bool idle() const;
  const GeneratorStats& stats() const { return stats_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Seq {
    uint64_t id = 0;
    GenerationRequest req;
    GenerationCallbacks cb;
    int row = -1;
    uint32_t prefilled = 0;    // prompt tokens already prefilled
    bool decoding = false, done = false, cancelled = false;
    std::optional<StreamingDetokenizer> detok;
    std::string pending;       // text held back: could start a stop string
    GenerationResult result;
    Clock::time_point t_submit, t_first, t_last;
  };
  // A submission whose readback has not been consumed yet.
  struct InFlight {
    bool prefill = false;
    uint32_t steps = 0;  // decode: steps in the submission
    uint32_t buf = 0;    // decode: which out readback
    uint32_t rows = 0;   // decode: bit b set for the rows whose sequence was decoding when it was issued
    uint64_t seq = 0;    // prefill: the sequence whose first token it samples
  };

  Status issue();
  Status issuePrefill(Seq& s);
  Status issueDecode();
  void consume(const InFlight& f);
  gpu::Readback& readbackOf(const InFlight& f) { return f.prefill ? rb_pout_ : rb_out_[f.buf]; }
  void deliver(Seq& s, const SampleOut& o);
  void finish(Seq& s, const std::string& reason);
  void failAll(const Error& e);
  Seq* byRow(int row);

  gpu::Context& ctx_;
  Forward& fwd_;
  const Tokenizer* tok_;
  uint32_t steps_;
  uint32_t ctx_len_;
  std::deque<Seq> seqs_;   // admitted and waiting, in order
  std::vector<bool> row_used_;
  uint64_t next_id_ = 1;
  std::deque<InFlight> in_flight_;  // oldest first
  uint32_t depth_ = 2;
  gpu::Readback rb_out_[2], rb_pout_;
  GeneratorStats stats_;
};

}  // namespace ewgpu
