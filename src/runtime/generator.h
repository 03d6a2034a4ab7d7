// The simplest policy over an Executor, for tools, benchmarks and tests that drive one model directly: requests
// wait in FIFO order and take the first free row; callbacks run after the executor's step, outside any loop
// over internal state (a callback may submit or cancel). The engine (src/engine/) is the real policy: bands,
// sessions, preemption, tasks. step() never blocks; runToCompletion() is the native driver (waits on the GPU).
#pragma once

#include "runtime/executor.h"

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
  uint32_t shared_prefix = 0;  // RowRequest::shared_prefix (prefix reuse: a system prompt's length)
};

struct GenerationResult {
  std::string text;
  std::vector<int32_t> tokens;        // generated ids shown to the caller (stop token / text after a stop excluded)
  std::vector<TokenInfo> token_info;  // with logprobs when requested
  std::string finish_reason;          // "stop", "length", "abort", "error"
  std::optional<Error> error;
  uint32_t prompt_tokens = 0, completion_tokens = 0;
  uint32_t cached_tokens = 0;  // prompt tokens reused from earlier sequences (prefix reuse), not prefilled
  double ttft_ms = 0, prefill_ms = 0, decode_ms = 0;  // time to first token; prefill; rest of decode
};

struct GenerationCallbacks {
  std::function<void(const std::string& delta)> on_text;  // streamed text (never half a UTF-8 character)
  std::function<void(const GenerationResult&)> on_done;
};

using GeneratorStats = ExecutorStats;

class Generator {
 public:
  Generator(gpu::Context& ctx, Forward& fwd, const Tokenizer* tok, uint32_t steps = 16);

  // BAD_REQUEST on an invalid request (empty prompt, bad sampling values), CONTEXT_TOO_LONG for a prompt at or
  // beyond the context window. max_tokens is clamped to the context window (finish "length" there).
  Result<uint64_t> submit(GenerationRequest req, GenerationCallbacks cb);
  // Cancels a sequence: it finishes with "abort" and its partial text at the next step().
  bool cancel(uint64_t id);
  Status setSteps(uint32_t k) { return exec_.setSteps(k); }
  uint32_t steps() const { return exec_.steps(); }
  Status setPipelineDepth(uint32_t depth) { return exec_.setPipelineDepth(depth); }
  void setPrefixReuse(bool on) { exec_.setPrefixReuse(on); }

  // Advances without blocking. Returns true while work remains (queued, running or in flight).
  bool step();
  // Native driver: step() until idle, waiting on the GPU in between. A device error ends every sequence with
  // "error" and is returned.
  Status runToCompletion();
  bool idle() const { return seqs_.empty() && !exec_.inFlight(); }
  const GeneratorStats& stats() const { return exec_.stats(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Seq {
    uint64_t id = 0;
    GenerationRequest req;
    GenerationCallbacks cb;
    int row = -1;
    bool done = false, cancelled = false;
    GenerationResult result;
    Clock::time_point t_submit, t_first, t_last;
  };
  Status validate(const GenerationRequest& req) const;
  void apply(const RowEvent& ev, std::vector<std::function<void()>>& calls);
  void finish(Seq& s, const std::string& reason, std::vector<std::function<void()>>& calls);

  Executor exec_;
  std::deque<Seq> seqs_;  // waiting and running, in submission order
  uint64_t next_id_ = 1;
  std::optional<Error> failed_;
};

}  // namespace ewgpu
