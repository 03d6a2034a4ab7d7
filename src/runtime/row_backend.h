// The narrow interface between the scheduler (src/engine/, policy) and whatever runs sequences in decode rows
// (src/runtime/executor.h on the GPU; a fake in the scheduler tests). A backend owns a fixed number of rows; the
// policy decides which request goes into which free row and when a row's sequence is stopped. The backend does
// the work: prefill chunks, K decode steps per submission, readbacks, detokenization and stop strings. Nothing
// here blocks except wait(), which a native driver calls when it has nothing else to do.
#pragma once

#include "base/error.h"
#include "grammar/matcher.h"
#include "kernels/sampling.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace ewgpu {

// One sequence to run in a row: the prompt as token ids (already rendered through the conversation template).
struct RowRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;  // max_tokens, stop ids, temperature, ...
  std::vector<std::string> stop_strings;
  uint64_t prefill_order = 0;  // among rows waiting to prefill, the lowest goes first (the policy's priority)
  // Structured output: the tokens must follow this grammar (null: unconstrained). The row decodes one token per
  // submission (its next mask needs the token), and ends with "stop" when the document is complete.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // Prefix reuse (docs/prefix-reuse.md): prompt tokens later requests are likely to share (a system prompt). A
  // hybrid model (Qwen3.5) snapshots its recurrent state there (rounded down to a KV page) as well as at the end
  // of the turn, since it can resume only from an exact snapshot. 0: none.
  uint32_t shared_prefix = 0;
};

struct TokenInfo {
  int32_t id = 0;
  float logprob = 0;
  std::vector<TopLogprob> top;
};

// What happened to one row since the last step(). Events of one row arrive in order.
struct RowEvent {
  uint32_t row = 0;
  bool first = false;            // the prefill completed: this event carries the first sampled token
  uint32_t cached_tokens = 0;    // with first: prompt tokens reused from earlier sequences, not prefilled
  std::string text;              // new text (never half a UTF-8 character; held back while it could start a stop string)
  std::vector<TokenInfo> tokens;  // new tokens shown to the caller (a stop token or text after a stop is not shown)
  uint32_t sampled = 0;          // tokens sampled for this row in this event (a stop token included)
  bool finished = false;         // the row's sequence ended on its own; the row is free again
  std::string finish_reason;     // "stop" | "length" when finished
};

class RowBackend {
 public:
  virtual ~RowBackend() = default;

  virtual uint32_t rowCapacity() const = 0;    // rows [0, rowCapacity())
  virtual uint32_t contextLength() const = 0;  // positions per row: prompt + generated tokens must fit
  virtual uint32_t vocabSize() const = 0;
  // Starts a sequence in a free row (BAD_REQUEST if the row is busy or the request does not fit).
  virtual Status start(uint32_t row, RowRequest req) = 0;
  // Ends the row's sequence now: no more events for it, the row is free at once. Work already submitted for it
  // still runs on the GPU; its output is discarded. Returns the text that was held back (a possible stop-string
  // start, an incomplete UTF-8 tail), so a stopped sequence's partial text is complete.
  virtual std::string stop(uint32_t row) = 0;
  virtual Status setSteps(uint32_t k) = 0;  // decode steps per submission, from the next submission on
  virtual uint32_t steps() const = 0;
  virtual uint32_t maxSteps() const = 0;
  // Advances without blocking: consumes what landed (appending events), then issues work. An error is a
  // backend-wide failure (a lost device, a failed submission): every row's sequence is gone.
  virtual Status step(std::vector<RowEvent>& events) = 0;
  virtual bool inFlight() const = 0;  // work submitted whose output has not been consumed
  // A process-wide submission counter of the oldest work in flight (max when none): a driver with several
  // backends waits on the one whose work the GPU finishes first.
  virtual uint64_t oldestTicket() const = 0;
  virtual Status wait() = 0;  // native drivers only: blocks until the oldest work in flight has landed
};

inline constexpr uint64_t kNoTicket = std::numeric_limits<uint64_t>::max();

}  // namespace ewgpu
