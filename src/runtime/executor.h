// The GPU executor of one resident model: a RowBackend over a Forward. It owns no policy: the caller starts a
// sequence in a free row and may stop it at any time. Work is issued in submissions:
//   - a prefill chunk (Forward::prefillChunk() tokens of one row; the last chunk samples the first token), or
//   - K decode steps for every active row, with no CPU round trip between the steps (the sampled ids stay on the
//     GPU), followed by one readback of the K outputs.
// Prefill chunks and decode submissions alternate while both are wanted, so a long prompt never stalls the rows
// that are decoding for more than one chunk. Two decode submissions are kept in flight (pipeline depth 2): the
// next K steps are encoded and queued while the GPU runs the current ones. Readbacks are consumed in submission
// order; output for a row whose sequence was stopped (or replaced) after the work was issued is discarded, which
// a per-row generation number decides. step() never blocks; wait() is for native drivers.
// Stop token ids and max_tokens are enforced on the GPU (a row goes inactive and later steps emit nothing); stop
// strings on the CPU (text after the match is discarded, the row is deactivated before the next submission).
// A grammar row (structured output, RowRequest::grammar) samples through an allowed-token mask the CPU computes
// from the tokens so far, so it runs one step per submission: the sampler pauses it after its token, and it joins
// the next submission issued after that token was read back (with its new mask). Rows without a grammar keep K
// steps per submission and the pipeline depth; a submission with only grammar rows runs one step.
#pragma once

#include "gpu/readback.h"
#include "runtime/forward.h"
#include "runtime/row_backend.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace ewgpu {

struct ExecutorStats {
  uint64_t submissions = 0, decode_steps = 0, prefill_chunks = 0, readbacks = 0;
  uint64_t row_steps = 0;  // Σ over decode steps of the rows computed (active lanes)
  uint32_t max_decodes_in_flight = 0;  // the most decode submissions ever queued at once (<= pipeline depth)
  uint64_t grammar_masks = 0;          // allowed-token masks computed for grammar rows
  double grammar_mask_ms = 0;          // CPU time spent computing them
  uint64_t cached_tokens = 0;          // prompt tokens reused (prefix reuse) instead of prefilled
  uint64_t prefill_groups = 0;         // readbacks of last prefill chunks (a group shares one: issuePrefillTurn)
};

// BAD_REQUEST (empty prompt, token ids outside the vocabulary, empty stop strings, sampling values) or
// CONTEXT_TOO_LONG (a prompt at or past `context` positions), with detail.field.
Status checkRowRequest(const RowRequest& req, uint32_t context, int vocab);

class Executor final : public RowBackend {
 public:
  // `tok` may be null (no text, tokens only). Rows: the Forward's max_batch (row r uses slot r). A decoding row
  // occupies a lane of the GPU batch (its index in the Forward's rows buffer); lanes are kept compact, so a step
  // computes lanes [0, active rows) only.
  // `submission_ms` > 0 caps the decode steps of one submission so that it takes about that long on the GPU
  // (from the measured time per step), K being the most: work queued ahead of a newcomer's prefill is then
  // bounded by the pipeline depth times this, whatever the rows and the model. 0 = always K steps.
  Executor(gpu::Context& ctx, Forward& fwd, const Tokenizer* tok, uint32_t steps = 16, double submission_ms = 0);

  uint32_t rowCapacity() const override { return (uint32_t)rows_.size(); }
  uint32_t contextLength() const override { return fwd_.contextLength(); }
  uint32_t vocabSize() const override { return (uint32_t)fwd_.model().config.vocab; }
  Status start(uint32_t row, RowRequest req) override;
  std::string stop(uint32_t row) override;
  Status setSteps(uint32_t k) override;
  uint32_t steps() const override { return steps_; }
  uint32_t maxSteps() const override { return fwd_.options().max_steps; }
  Status step(std::vector<RowEvent>& events) override;
  bool inFlight() const override { return !in_flight_.empty(); }
  uint64_t oldestTicket() const override { return in_flight_.empty() ? kNoTicket : in_flight_.front().ticket; }
  Status wait() override;

  // Decode submissions in flight at once: 1 (strict alternation of GPU work and CPU consumption) or 2 (default).
  Status setPipelineDepth(uint32_t depth);
  // Prefix reuse across sequences (docs/prefix-reuse.md), on by default. Off: every prompt is prefilled from 0 and
  // nothing is published or snapshotted (what was cached before stays until evicted).
  void setPrefixReuse(bool on) { reuse_ = on; }
  bool prefixReuse() const { return reuse_; }
  PageCacheStats pageCacheStats() const { return cache_.stats(); }
  bool rowBusy(uint32_t row) const { return row < rows_.size() && rows_[row].used; }
  double stepMs() const { return step_ms_; }  // measured GPU time per decode step (0 until measured)
  const ExecutorStats& stats() const { return stats_; }

 private:
  struct Row {
    bool used = false;
    uint32_t gen = 0;        // bumped at every start: output issued for an earlier generation is discarded
    RowRequest req;
    uint32_t prefilled = 0;  // prompt tokens already submitted for prefill
    bool last_issued = false, decoding = false;
    uint32_t sampled = 0;    // tokens sampled and consumed so far
    std::optional<StreamingDetokenizer> detok;
    std::string pending;     // text held back: could start a stop string
    std::unique_ptr<grammar::Matcher> matcher;  // grammar rows only
    bool grammar_busy = false;  // a submission that samples this grammar row's next token is in flight
    int lane = -1;           // the GPU lane from the last prefill chunk on (-1: none)
    std::vector<uint32_t> pages;  // the slot's page table (PageCache lease)
    uint32_t cached = 0;     // prompt tokens reused: the prefill started here
    uint32_t snap_at = 0;    // hybrid: snapshot the recurrent state after this many prompt tokens (0: none)
    bool prefill_started = false;
    std::vector<int32_t> sampled_ids;  // every token sampled and consumed (a stop token included)
  };
  // A submission whose readback has not been consumed yet.
  struct InFlight {
    bool prefill = false;
    uint64_t ticket = 0;
    std::chrono::steady_clock::time_point issued;
    uint32_t steps = 0;            // decode: steps in the submission
    uint32_t buf = 0;              // decode: which out readback
    // decode: the row in each computed lane and the generation it ran for. prefill: the rows whose first token
    // the group's last chunks sample, in the order of their outputs in the prefill readback.
    std::vector<uint32_t> lane_rows;
    std::vector<uint32_t> lane_gens;
  };

  static constexpr uint32_t kPrefillGroup = 8;  // last prefill chunks that share one readback

  Status issue();
  // One prefill chunk of row r; a last chunk copies its sampled output to the prefill readback at `out_slot`.
  Status issuePrefill(uint32_t r, uint32_t out_slot);
  // A prefill turn: one chunk of row r, or, when it is r's last, a group of last chunks (up to kPrefillGroup rows,
  // at most one chunk's worth of tokens in all) sharing one readback.
  Status issuePrefillTurn(uint32_t r);
  // Tokens of row r's next prefill chunk, and whether it is the prompt's last.
  std::pair<uint32_t, bool> nextChunk(const Row& row) const;
  Status issueDecode(uint32_t need);
  uint32_t decodeNeed() const;
  int prefillCandidate(bool last_only = false, uint32_t max_tokens = UINT32_MAX) const;
  void consume(const InFlight& f, std::vector<RowEvent>& events);
  gpu::Readback& readbackOf(const InFlight& f) { return f.prefill ? rb_pout_ : rb_out_[f.buf]; }
  // Turns one sampled step of a row into its event (text, stop strings, finish).
  void deliver(uint32_t r, const SampleOut& o, RowEvent& ev);
  void finishRow(uint32_t r, const std::string& reason, RowEvent& ev, bool exact = true);
  // Gives the row's pages back, first publishing what its sequence wrote; `exact`: its GPU state has seen exactly
  // the tokens it was given (no steps ran past a CPU-side stop), so a hybrid model snapshots it.
  void retire(uint32_t r, bool exact);
  void failAll();
  // Computes the grammar row's allowed-token mask and writes it to `buf` at word offset `at`.
  void writeMask(Row& row, const gpu::Buffer& buf, uint64_t at);
  void freeLane(Row& row);
  int takeLane(uint32_t r);  // the lowest free lane, now owned by row r

  gpu::Context& ctx_;
  Forward& fwd_;
  const Tokenizer* tok_;
  uint32_t steps_;
  double submission_ms_;
  double step_ms_ = 0;                          // moving average of the GPU time per decode step
  std::chrono::steady_clock::time_point last_land_;  // when the last readback was consumed
  uint32_t depth_ = 2;
  bool last_was_prefill_ = false;
  std::vector<Row> rows_;
  std::vector<int> lane_row_;  // per lane: the row it holds (-1: free)
  std::deque<InFlight> in_flight_;  // oldest first
  gpu::Readback rb_out_[2], rb_pout_;
  std::vector<uint32_t> mask_host_;  // [ceil(vocab/32)]
  Status init_;
  ExecutorStats stats_;
  PageCache cache_;
  bool reuse_ = true;
};

}  // namespace ewgpu
