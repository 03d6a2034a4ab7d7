#include "runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace ewgpu {
namespace {

std::atomic<uint64_t> g_ticket{0};  // process-wide submission order, for drivers with several executors
// InFlight::lane_gens of a lane whose output in that submission belongs to no sequence (a grammar row waiting for
// its previous token, computed paused).
constexpr uint32_t kNotOurs = 0xFFFFFFFFu;

// Longest suffix of `text` that is a proper prefix of some stop string (held back until it resolves).
size_t heldSuffix(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const auto& s : stops)
    for (size_t n = std::min(text.size(), s.size() - 1); n > best; --n)
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        best = n;
        break;
      }
  return best;
}

}  // namespace

Status checkRowRequest(const RowRequest& req, uint32_t context, int vocab) {
  if (req.prompt.empty()) return makeError(ErrorCode::kBadRequest, "empty prompt", {{"field", "prompt"}});
  if (req.prompt.size() >= context)
    return makeError(ErrorCode::kContextTooLong,
                     "prompt of " + std::to_string(req.prompt.size()) +
                         " tokens does not fit the context window of " + std::to_string(context),
                     {{"field", "prompt"}, {"prompt_tokens", req.prompt.size()}, {"context_window", context}});
  for (int32_t t : req.prompt)
    if (t < 0 || t >= vocab)
      return makeError(ErrorCode::kBadRequest, "token id out of range", {{"field", "prompt"}, {"token", t}, {"vocab", vocab}});
  for (const auto& s : req.stop_strings)
    if (s.empty()) return makeError(ErrorCode::kBadRequest, "empty stop string", {{"field", "stop"}});
  return req.sampling.validate(vocab);
}

Executor::Executor(gpu::Context& ctx, Forward& fwd, const Tokenizer* tok, uint32_t steps, double submission_ms)
    : ctx_(ctx), fwd_(fwd), tok_(tok), steps_(std::clamp<uint32_t>(steps, 1, fwd.options().max_steps)),
      submission_ms_(submission_ms), cache_(fwd.pagePool(), fwd.stateSnapshots(), fwd.hybrid()) {
  const auto& o = fwd.options();
  rows_.resize(o.max_batch);
  lane_row_.assign(o.max_batch, -1);
  const uint64_t ring = (uint64_t)o.max_batch * o.max_steps * Forward::kOutWords * 4;
  auto a = gpu::Readback::create(ctx, ring, "out-readback-0");
  auto b = gpu::Readback::create(ctx, ring, "out-readback-1");
  auto c = gpu::Readback::create(ctx, (uint64_t)kPrefillGroup * Forward::kOutWords * 4, "prefill-out-readback");
  if (!a) init_ = std::move(a).error();
  else if (!b) init_ = std::move(b).error();
  else if (!c) init_ = std::move(c).error();
  else {
    mask_host_.assign(sampleMaskWords((uint32_t)fwd.model().config.vocab), 0);
    rb_out_[0] = std::move(*a);
    rb_out_[1] = std::move(*b);
    rb_pout_ = std::move(*c);
  }
}

Status Executor::setPipelineDepth(uint32_t depth) {
  if (depth < 1 || depth > 2)
    return makeError(ErrorCode::kBadRequest, "pipeline depth must be 1 or 2", {{"depth", depth}});
  depth_ = depth;
  return {};
}

Status Executor::setSteps(uint32_t k) {
  if (k < 1 || k > fwd_.options().max_steps)
    return makeError(ErrorCode::kBadRequest, "decode steps must be 1.." + std::to_string(fwd_.options().max_steps),
                     {{"field", "decodeSteps"}, {"steps", k}, {"max", fwd_.options().max_steps}});
  steps_ = k;
  return {};
}

Status Executor::start(uint32_t r, RowRequest req) {
  EWGPU_TRY(init_);
  const int vocab = fwd_.model().config.vocab;
  const uint32_t ctx_len = fwd_.contextLength();
  if (r >= rows_.size() || rows_[r].used)
    return makeError(ErrorCode::kInternal, "row is not free", {{"row", r}, {"rows", rows_.size()}});
  EWGPU_TRY(checkRowRequest(req, ctx_len, vocab));
  if (req.grammar && (!req.grammar->vocab || req.grammar->vocab->size() > (uint32_t)vocab))
    return makeError(ErrorCode::kInternal, "the grammar's vocabulary does not fit the model's", {{"field", "response_format"}});
  req.sampling.token_mask = req.grammar != nullptr;
  req.sampling.max_tokens = std::min<uint32_t>(req.sampling.max_tokens, ctx_len - (uint32_t)req.prompt.size());
  // The sequence's KV pages: a cached prefix shared where there is one, fresh pages for the positions it can reach.
  const uint32_t positions = std::min<uint32_t>(ctx_len, (uint32_t)req.prompt.size() + req.sampling.max_tokens);
  auto lease = cache_.acquire(req.prompt, positions, reuse_);
  if (!lease) return std::move(lease).error();
  if (lease->copy_from != kNoPage || lease->snapshot >= 0) {  // resuming a snapshot: recorded now, in queue order
    gpu::Recorder rec(ctx_);
    if (lease->copy_from != kNoPage) fwd_.recordCopyPage(rec, lease->copy_from, lease->pages[lease->cached / kPageTokens]);
    if (lease->snapshot >= 0) fwd_.recordRestoreState(rec, (uint32_t)lease->snapshot, r);
    Status st = rec.submit();
    if (!st) {
      cache_.release(lease->pages);
      return st;
    }
  }
  fwd_.writePageTable(r, lease->pages);
  Row& row = rows_[r];
  const uint32_t gen = row.gen + 1;
  row = Row{};
  row.gen = gen;
  row.used = true;
  row.req = std::move(req);
  if (tok_) row.detok.emplace(*tok_);
  if (row.req.grammar) row.matcher = std::make_unique<grammar::Matcher>(row.req.grammar);
  row.pages = std::move(lease->pages);
  row.cached = row.prefilled = lease->cached;
  stats_.cached_tokens += row.cached;
  if (reuse_ && fwd_.hybrid() && fwd_.stateSnapshots() > 0) {
    const uint32_t at = row.req.shared_prefix / kPageTokens * kPageTokens;
    if (at > row.cached && at <= row.req.prompt.size()) row.snap_at = at;
  }
  // The row gets a GPU lane with its last prefill chunk, which samples the first token (queued after any work
  // still in flight for the lane's previous sequence, which therefore finishes first).
  return {};
}

std::string Executor::stop(uint32_t r) {
  if (r >= rows_.size() || !rows_[r].used) return {};
  Row& row = rows_[r];
  std::string tail = row.pending;
  if (row.detok) tail += row.detok->flush();
  retire(r, false);
  row.used = false;
  row.detok.reset();
  row.pending.clear();
  row.matcher.reset();
  freeLane(row);
  return tail;
}

// Lanes freed or taken here only change what later submissions compute: the GPU queue is ordered, so work in
// flight for a lane's previous row finishes before anything written for its next one.
void Executor::freeLane(Row& row) {
  if (row.lane >= 0) lane_row_[row.lane] = -1;
  row.lane = -1;
}

int Executor::takeLane(uint32_t r) {
  for (uint32_t l = 0; l < lane_row_.size(); ++l)
    if (lane_row_[l] < 0) {
      lane_row_[l] = (int)r;
      rows_[r].lane = (int)l;
      return (int)l;
    }
  return -1;  // unreachable: there are as many lanes as rows
}

Status Executor::step(std::vector<RowEvent>& events) {
  EWGPU_TRY(init_);
  ctx_.processEvents();
  while (!in_flight_.empty() && !readbackOf(in_flight_.front()).pending()) {
    InFlight f = std::move(in_flight_.front());
    in_flight_.pop_front();
    Status st = readbackOf(f).status();
    if (!st) {
      failAll();
      return st;
    }
    consume(f, events);
  }
  if (ctx_.lost()) {
    failAll();
    Status e = ctx_.takeError();
    return e ? makeError(ErrorCode::kDeviceLost, "the GPU device was lost") : e;
  }
  Status st = issue();
  if (!st) failAll();
  return st;
}

// A failed wait leaves the rows as they are: the next step() reads the readback's status (or the lost device)
// and fails them there, so the policy above hears of it through step()'s error like any other failure.
Status Executor::wait() {
  if (in_flight_.empty()) return {};
  return readbackOf(in_flight_.front()).wait(ctx_);
}

void Executor::failAll() {
  in_flight_.clear();
  for (auto& r : rows_) {
    cache_.release(r.pages);  // nothing of a failed device is worth keeping
    r.pages.clear();
    r.used = false;
    r.detok.reset();
    r.matcher.reset();
    freeLane(r);
  }
  cache_.clear();
}

void Executor::retire(uint32_t r, bool exact) {
  Row& row = rows_[r];
  if (row.pages.empty()) return;
  if (reuse_) {
    // The tokens whose KV is written (or queued): the prompt's submitted chunks, then every sampled token but the
    // last (which no step has fed yet).
    std::vector<int32_t> toks = row.req.prompt;
    uint32_t known = row.prefilled;
    if (row.decoding && row.prefilled == toks.size() && row.sampled_ids.size() > 1)
      toks.insert(toks.end(), row.sampled_ids.begin(), row.sampled_ids.end() - 1);
    if (row.decoding) known = (uint32_t)toks.size();
    cache_.publish(toks, known, row.pages);
    if (exact && row.decoding && fwd_.hybrid()) {
      const int s = cache_.addSnapshot(toks, known, row.pages);
      if (s >= 0) {
        gpu::Recorder rec(ctx_);
        fwd_.recordSaveState(rec, r, (uint32_t)s);
        if (!rec.submit()) cache_.clear();  // the snapshot may be incomplete: forget every one
      }
    }
  }
  cache_.release(row.pages);
  row.pages.clear();
}

// Steps worth submitting: the most any decoding row can still produce (max_tokens minus what it was given and
// what is in flight for it), at most K. A short max_tokens or the tail of a generation then runs no steps whose
// tokens would be discarded. A row whose last prefill chunk is in flight counts already (its first token is
// sampled by that chunk), so its decode is queued behind the prefill without a CPU round trip.
uint32_t Executor::decodeNeed() const {
  uint32_t k = steps_;
  if (submission_ms_ > 0 && step_ms_ > 0)
    k = (uint32_t)std::clamp<double>(std::floor(submission_ms_ / step_ms_), 1, steps_);
  uint32_t need = 0;
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    const Row& row = rows_[r];
    if (!row.used || !(row.decoding || row.last_issued)) continue;
    if (row.matcher) {  // one step, and only once its last token is back (its mask depends on it)
      if (row.decoding && !row.grammar_busy && row.sampled < row.req.sampling.max_tokens) need = std::max(need, 1u);
      continue;
    }
    int64_t left = (int64_t)row.req.sampling.max_tokens - row.sampled - (row.decoding ? 0 : 1);
    for (const auto& f : in_flight_)
      if (!f.prefill)
        for (size_t l = 0; l < f.lane_rows.size(); ++l)
          if (f.lane_rows[l] == r && f.lane_gens[l] == row.gen) left -= f.steps;
    need = std::max<uint32_t>(need, (uint32_t)std::clamp<int64_t>(left, 0, k));
  }
  return need;
}

std::pair<uint32_t, bool> Executor::nextChunk(const Row& row) const {
  const uint32_t n = (uint32_t)row.req.prompt.size();
  uint32_t T = std::min<uint32_t>(fwd_.prefillChunk(), n - row.prefilled);
  if (row.snap_at > row.prefilled) T = std::min(T, row.snap_at - row.prefilled);  // a chunk ends at the snapshot
  return {T, row.prefilled + T == n};
}

// The row whose next prefill chunk goes first (lowest prefill_order, then lowest row), or -1. A last chunk
// (which samples the first token) waits while an earlier group's readback is in flight: the prefill readback is
// single-buffered. `last_only`: only rows whose next chunk is their last, of at most `max_tokens` tokens.
int Executor::prefillCandidate(bool last_only, uint32_t max_tokens) const {
  bool last_pending = false;
  for (const auto& f : in_flight_) last_pending |= f.prefill;
  int best = -1;
  for (uint32_t r = 0; r < rows_.size(); ++r) {
    const Row& row = rows_[r];
    if (!row.used || row.prefilled == row.req.prompt.size()) continue;
    const auto [T, last] = nextChunk(row);
    if (last && last_pending && !last_only) continue;
    if (last_only && (!last || T > max_tokens)) continue;
    if (best < 0 || row.req.prefill_order < rows_[best].req.prefill_order) best = (int)r;
  }
  return best;
}

Status Executor::issue() {
  // Alternate one prefill turn and one decode submission while both are wanted; with no row decoding, a
  // prompt's chunks go back to back.
  for (;;) {
    uint32_t decodes = 0;
    for (const auto& f : in_flight_) decodes += !f.prefill;
    const uint32_t want = decodeNeed();
    const int p = prefillCandidate();
    if (p >= 0 && (want == 0 || !last_was_prefill_)) {
      EWGPU_TRY(issuePrefillTurn((uint32_t)p));
      last_was_prefill_ = true;
    } else if (want > 0 && decodes < depth_) {
      EWGPU_TRY(issueDecode(want));
      last_was_prefill_ = false;
    } else {
      return {};
    }
  }
}

// Short prompts arriving together would otherwise reach their first token one GPU round trip apart (each last
// chunk waiting for the previous one's readback). Their last chunks go out back to back instead, each its own
// submission (the queue orders each chunk's buffer writes before its commands), each copying its sampled output
// to its own slot of the one readback.
Status Executor::issuePrefillTurn(uint32_t r) {
  if (!nextChunk(rows_[r]).second) return issuePrefill(r, 0);
  InFlight f;
  f.prefill = true;
  uint32_t budget = fwd_.prefillChunk();
  for (int next = (int)r; next >= 0 && f.lane_rows.size() < std::min<size_t>(kPrefillGroup, rows_.size());) {
    const uint32_t T = nextChunk(rows_[next]).first;
    EWGPU_TRY(issuePrefill((uint32_t)next, (uint32_t)f.lane_rows.size()));
    f.lane_rows.push_back((uint32_t)next);
    f.lane_gens.push_back(rows_[next].gen);
    budget -= std::min(budget, T);
    next = budget ? prefillCandidate(true, budget) : -1;
  }
  rb_pout_.requestMap(ctx_);
  ++stats_.prefill_groups;
  f.ticket = g_ticket++;
  f.issued = std::chrono::steady_clock::now();
  in_flight_.push_back(std::move(f));
  return {};
}

Status Executor::issuePrefill(uint32_t r, uint32_t out_slot) {
  Row& row = rows_[r];
  const uint32_t n = (uint32_t)row.req.prompt.size();
  const auto [T, last] = nextChunk(row);
  const uint32_t slot = r;
  const bool first = !row.prefill_started;
  if (first) {  // sampling state of the slot: penalties see the prompt
    const uint32_t V = (uint32_t)fwd_.model().config.vocab;
    std::vector<uint32_t> counts(V, 0);
    for (int32_t t : row.req.prompt) counts[t] |= kCountPromptBit;
    ctx_.write(fwd_.counts(), (uint64_t)slot * V * 4, counts.data(), V * 4ull);
  }
  int lane = row.lane;
  if (last) {  // the prefill sampler reads its own parameter row (and mask); the decode lane gets its copy
    if (lane < 0) lane = takeLane(r);
    uint32_t params[Forward::kParamWords];
    encodeParams(row.req.sampling, params);
    ctx_.write(fwd_.prefillParams(), 0, params, sizeof params);
    ctx_.write(fwd_.params(), (uint64_t)lane * sizeof params, params, sizeof params);
    if (row.matcher) {
      writeMask(row, fwd_.prefillMask(), 0);
      row.grammar_busy = true;
    }
  }
  uint32_t prow[Forward::kRowWords] = {slot, row.prefilled, 1, 0, 0, 0, 0, 0};
  uint32_t meta[4] = {T, slot, 0, 0};
  ctx_.write(fwd_.prefillRows(), 0, prow, sizeof prow);
  ctx_.write(fwd_.prefillMeta(), 0, meta, sizeof meta);
  ctx_.write(fwd_.prefillIds(), 0, row.req.prompt.data() + row.prefilled, T * 4ull);
  if (last) {
    uint32_t words[Forward::kRowWords] = {slot, n, 0, 0, 0, 0, 0, 0};
    ctx_.write(fwd_.rows(), (uint64_t)lane * sizeof words, words, sizeof words);
  }
  gpu::Recorder rec(ctx_);
  if (first && row.cached == 0) fwd_.recordResetSlot(rec, slot);  // a resumed snapshot was restored at start()
  fwd_.recordPrefillChunk(rec, T, last, last ? (uint32_t)lane : 0);
  if (row.snap_at && row.prefilled + T == row.snap_at) {
    const int s = cache_.addSnapshot(row.req.prompt, row.snap_at, row.pages);
    if (s >= 0) fwd_.recordSaveState(rec, slot, (uint32_t)s);
  }
  if (last) rb_pout_.record(rec, fwd_.prefillOut(), 0, Forward::kOutWords * 4, (uint64_t)out_slot * Forward::kOutWords * 4);
  EWGPU_TRY(rec.submit());
  ++stats_.submissions;
  ++stats_.prefill_chunks;
  row.prefill_started = true;
  row.prefilled += T;
  if (reuse_) cache_.publish(row.req.prompt, row.prefilled, row.pages);  // concurrent sequences may share them now
  if (last) row.last_issued = true;
  return {};
}

// Compacts the decoding rows into lanes [0, A) (a row in a lane at or past A moves into a free lane below it: its
// GPU state is copied through the scratch rows, its sampling parameters rewritten), then records `need` steps of
// A rows and the readback of their outputs.
Status Executor::issueDecode(uint32_t need) {
  uint32_t A = 0;
  for (int l : lane_row_) A += l >= 0;
  InFlight f;
  f.steps = need;
  f.ticket = g_ticket++;
  f.issued = std::chrono::steady_clock::now();
  std::vector<std::pair<uint32_t, uint32_t>> moves;  // (from lane, to lane)
  uint32_t hole = 0;
  for (uint32_t l = A; l < lane_row_.size(); ++l) {
    if (lane_row_[l] < 0) continue;
    while (lane_row_[hole] >= 0) ++hole;
    moves.emplace_back(l, hole);
    const uint32_t r = (uint32_t)lane_row_[l];
    lane_row_[hole] = (int)r;
    lane_row_[l] = -1;
    rows_[r].lane = (int)hole;
  }
  const uint64_t RW = Forward::kRowWords * 4;
  // What the lanes ask of the sampler (SampleBatch, joined over the lanes by sampleBatchJoin): the split step if one
  // samples (without phases 2 and 3 where every sampling lane is a top-k that phase 1 lists); greedy lanes wanting
  // no logprobs, the chunks' argmax; greedy lanes with logprobs, the one dispatch.
  SampleBatch batch = SampleBatch::kArgmax;
  for (uint32_t l = 0; l < A; ++l) {
    Row& row = rows_[lane_row_[l]];
    // A grammar row takes part only when its last token is back (it was paused by the sampler after it): its next
    // mask goes to its lane and its GPU row is switched on again. A busy one is computed paused, and this
    // submission's output for its lane is not its own (kNotOurs).
    const bool grammar_step = row.matcher && row.used && row.decoding && !row.grammar_busy;
    f.lane_rows.push_back((uint32_t)lane_row_[l]);
    batch = sampleBatchJoin(batch, sampleRowBatch(row.req.sampling, (uint32_t)fwd_.model().config.vocab));
    f.lane_gens.push_back(row.matcher && !grammar_step ? kNotOurs : row.gen);
    bool moved = false;
    uint32_t from_lane = l;
    for (const auto& [from, to] : moves)
      if (to == l) moved = true, from_lane = from;
    if (grammar_step) {
      writeMask(row, fwd_.mask(), (uint64_t)l * mask_host_.size());
      // The row's GPU state is still at its old lane when this write lands (the move is a copy in the submission).
      const uint32_t one = 1;
      ctx_.write(fwd_.rows(), from_lane * RW + kRowActive * 4, &one, 4);
      row.grammar_busy = true;
    }
    if (moved) {
      uint32_t params[Forward::kParamWords];
      encodeParams(row.req.sampling, params);
      ctx_.write(fwd_.params(), (uint64_t)l * sizeof params, params, sizeof params);
    } else {
      uint32_t zero = 0;
      ctx_.write(fwd_.rows(), l * RW + kRowOutIndex * 4, &zero, 4);
    }
  }
  const uint32_t active[4] = {A, 0, 0, 0};
  ctx_.write(fwd_.activeRows(), 0, active, sizeof active);
  for (const auto& g : in_flight_)
    if (!g.prefill && g.buf == f.buf) f.buf = 1;
  gpu::Readback& rb = rb_out_[f.buf];
  gpu::Recorder rec(ctx_);
  if (!moves.empty()) {
    rec.copy(fwd_.rows(), 0, fwd_.rowsScratch(), 0, lane_row_.size() * RW);
    for (const auto& [from, to] : moves) {
      rec.copy(fwd_.rowsScratch(), from * RW, fwd_.rows(), to * RW, RW);
      rec.clear(fwd_.rows(), to * RW + kRowOutIndex * 4, 4);
    }
  }
  // The furthest position a lane can reach in these steps (a bound: every in-flight decode step counted), which
  // picks the attention's variant per step (Forward::recordDecodeStep).
  uint32_t pos_bound = 0, in_flight_steps = 0;
  for (const auto& g : in_flight_)
    if (!g.prefill) in_flight_steps += g.steps;
  for (uint32_t l = 0; l < A; ++l) {
    const Row& row = rows_[lane_row_[l]];
    pos_bound = std::max<uint32_t>(pos_bound, (uint32_t)row.req.prompt.size() + row.sampled + in_flight_steps + 1);
  }
  for (uint32_t k = 0; k < need; ++k) fwd_.recordDecodeStep(rec, A, batch, pos_bound + k);
  rb.record(rec, fwd_.out(), 0, (uint64_t)A * fwd_.options().max_steps * Forward::kOutWords * 4);
  EWGPU_TRY(rec.submit());
  rb.requestMap(ctx_);
  in_flight_.push_back(std::move(f));
  ++stats_.submissions;
  stats_.decode_steps += need;
  stats_.row_steps += (uint64_t)need * A;
  uint32_t decodes = 0;
  for (const auto& g : in_flight_) decodes += !g.prefill;
  stats_.max_decodes_in_flight = std::max(stats_.max_decodes_in_flight, decodes);
  return {};
}

void Executor::consume(const InFlight& f, std::vector<RowEvent>& events) {
  ++stats_.readbacks;
  // The GPU time per decode step: from when this submission could start (issued, and the previous one done)
  // to when it landed, over its steps.
  const auto now = std::chrono::steady_clock::now();
  if (!f.prefill && f.steps > 0) {
    const auto start = std::max(f.issued, last_land_);
    const double per = std::chrono::duration<double, std::milli>(now - start).count() / f.steps;
    step_ms_ = step_ms_ > 0 ? 0.7 * step_ms_ + 0.3 * per : per;
  }
  last_land_ = now;
  gpu::Readback& rb = readbackOf(f);
  const auto* out = reinterpret_cast<const uint32_t*>(rb.data().data());
  if (f.prefill) {
    std::vector<SampleOut> outs;
    for (size_t i = 0; i < f.lane_rows.size(); ++i) outs.push_back(decodeOut(out + i * Forward::kOutWords));
    rb.unmap();
    for (size_t i = 0; i < f.lane_rows.size(); ++i) {
      const uint32_t r = f.lane_rows[i];
      Row& row = rows_[r];
      if (!row.used || row.gen != f.lane_gens[i]) continue;
      row.decoding = true;
      row.grammar_busy = false;
      RowEvent ev;
      ev.row = r;
      ev.first = true;
      ev.cached_tokens = row.cached;
      deliver(r, outs[i], ev);
      events.push_back(std::move(ev));
    }
    return;
  }
  const uint32_t kmax = fwd_.options().max_steps;
  for (uint32_t l = 0; l < f.lane_rows.size(); ++l) {
    const uint32_t r = f.lane_rows[l];
    if (!rows_[r].used || rows_[r].gen != f.lane_gens[l] || !rows_[r].decoding) continue;
    rows_[r].grammar_busy = false;
    RowEvent ev;
    ev.row = r;
    for (uint32_t k = 0; k < f.steps && !ev.finished; ++k) {
      SampleOut o = decodeOut(out + ((uint64_t)l * kmax + k) * Forward::kOutWords);
      if (o.active) deliver(r, o, ev);
    }
    if (ev.sampled || ev.finished || !ev.text.empty()) events.push_back(std::move(ev));
  }
  rb.unmap();
}

void Executor::deliver(uint32_t r, const SampleOut& o, RowEvent& ev) {
  Row& row = rows_[r];
  if (!row.used) return;
  ++row.sampled;
  ++ev.sampled;
  row.sampled_ids.push_back(o.token);
  if (o.finish == SampleFinish::kStop) return finishRow(r, "stop", ev);  // the stop token itself is not shown
  // The mask allowed only tokens the grammar takes; one it does not take (a NaN logit tying with the masked
  // ones) ends the document here rather than break it.
  if (row.matcher && !row.matcher->acceptToken(o.token)) return finishRow(r, "stop", ev);
  ev.tokens.push_back({o.token, o.logprob, o.top});
  row.pending += row.detok ? row.detok->push(o.token) : std::string();
  // Stop strings: the earliest match ends the text there; nothing after it is shown.
  size_t cut = std::string::npos;
  for (const auto& stop : row.req.stop_strings) cut = std::min(cut, row.pending.find(stop));
  if (cut != std::string::npos) {
    row.pending.resize(cut);
    return finishRow(r, "stop", ev, /*exact=*/false);  // the GPU may run steps past it
  }
  const size_t hold = heldSuffix(row.pending, row.req.stop_strings);
  ev.text += row.pending.substr(0, row.pending.size() - hold);
  row.pending.erase(0, row.pending.size() - hold);
  if (row.matcher && row.matcher->mustEnd()) return finishRow(r, "stop", ev);  // the document is complete
  if (o.finish == SampleFinish::kLength) finishRow(r, "length", ev);
}

void Executor::finishRow(uint32_t r, const std::string& reason, RowEvent& ev, bool exact) {
  Row& row = rows_[r];
  retire(r, exact);
  ev.text += row.pending;
  if (row.detok) {
    std::string rest = row.detok->flush();  // an incomplete UTF-8 tail: shown at a length cut, not after a stop
    if (reason != "stop") ev.text += rest;
  }
  row.pending.clear();
  row.used = false;
  row.detok.reset();
  row.matcher.reset();
  freeLane(row);
  ev.finished = true;
  ev.finish_reason = reason;
}

void Executor::writeMask(Row& row, const gpu::Buffer& buf, uint64_t at) {
  const auto t0 = std::chrono::steady_clock::now();
  row.matcher->fillMask(mask_host_, row.req.sampling.stop_token_ids);
  stats_.grammar_mask_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++stats_.grammar_masks;
  ctx_.write(buf, at * 4, mask_host_.data(), mask_host_.size() * 4);
}

}  // namespace ewgpu
