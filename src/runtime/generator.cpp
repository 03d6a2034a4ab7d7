#include "runtime/generator.h"

#include <algorithm>
#include <cstring>

namespace ewgpu {
namespace {

double msBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

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

Generator::Generator(gpu::Context& ctx, Forward& fwd, const Tokenizer* tok, uint32_t steps)
    : ctx_(ctx), fwd_(fwd), tok_(tok), steps_(std::clamp<uint32_t>(steps, 1, fwd.options().max_steps)) {
  ctx_len_ = fwd.options().context ? fwd.options().context : (uint32_t)fwd.model().config.context_window;
  row_used_.assign(fwd.options().max_batch, false);
  const auto& o = fwd.options();
  auto a = gpu::Readback::create(ctx, (uint64_t)o.max_batch * o.max_steps * Forward::kOutWords * 4, "out-readback-0");
  auto b = gpu::Readback::create(ctx, (uint64_t)o.max_batch * o.max_steps * Forward::kOutWords * 4, "out-readback-1");
  auto c = gpu::Readback::create(ctx, Forward::kOutWords * 4, "prefill-out-readback");
  if (a && b && c) {
    rb_out_[0] = std::move(*a);
    rb_out_[1] = std::move(*b);
    rb_pout_ = std::move(*c);
  }
}

Status Generator::setPipelineDepth(uint32_t depth) {
  if (depth < 1 || depth > 2)
    return makeError(ErrorCode::kBadRequest, "pipeline depth must be 1 or 2", {{"depth", depth}});
  depth_ = depth;
  return {};
}

Status Generator::setSteps(uint32_t k) {
  if (k < 1 || k > fwd_.options().max_steps)
    return makeError(ErrorCode::kBadRequest, "decode steps must be 1.." + std::to_string(fwd_.options().max_steps),
                     {{"steps", k}, {"max", fwd_.options().max_steps}});
  steps_ = k;
  return {};
}

Result<uint64_t> Generator::submit(GenerationRequest req, GenerationCallbacks cb) {
  const int vocab = fwd_.model().config.vocab;
  if (req.prompt.empty()) return makeError(ErrorCode::kBadRequest, "empty prompt", {{"field", "prompt"}});
  if (req.prompt.size() >= ctx_len_)
    return makeError(ErrorCode::kBadRequest,
                     "prompt of " + std::to_string(req.prompt.size()) + " tokens does not fit the context window of " +
                         std::to_string(ctx_len_),
                     {{"field", "prompt"}, {"prompt_tokens", req.prompt.size()}, {"context_window", ctx_len_}});
  for (int32_t t : req.prompt)
    if (t < 0 || t >= vocab)
      return makeError(ErrorCode::kBadRequest, "token id out of range", {{"token", t}, {"vocab", vocab}});
  for (const auto& s : req.stop_strings)
    if (s.empty()) return makeError(ErrorCode::kBadRequest, "empty stop string", {{"field", "stop"}});
  EWGPU_TRY(req.sampling.validate(vocab));
  req.sampling.max_tokens = std::min<uint32_t>(req.sampling.max_tokens, ctx_len_ - (uint32_t)req.prompt.size());
  Seq s;
  s.id = next_id_++;
  s.req = std::move(req);
  s.cb = std::move(cb);
  s.result.prompt_tokens = (uint32_t)s.req.prompt.size();
  if (tok_) s.detok.emplace(*tok_);
  s.t_submit = Clock::now();
  seqs_.push_back(std::move(s));
  return seqs_.back().id;
}

bool Generator::cancel(uint64_t id) {
  for (auto& s : seqs_)
    if (s.id == id && !s.done) {
      s.cancelled = true;
      return true;
    }
  return false;
}

bool Generator::idle() const { return seqs_.empty() && in_flight_.empty(); }

Generator::Seq* Generator::byRow(int row) {
  for (auto& s : seqs_)
    if (s.row == row && !s.done) return &s;
  return nullptr;
}

bool Generator::step() {
  ctx_.processEvents();
  while (!in_flight_.empty() && !readbackOf(in_flight_.front()).pending()) {
    InFlight f = in_flight_.front();
    in_flight_.pop_front();
    consume(f);
  }
  if (!in_flight_.empty() && ctx_.lost()) failAll(ctx_.takeError().error());
  for (auto& s : seqs_)
    if (s.cancelled && !s.done) finish(s, "abort");
  while (!seqs_.empty() && seqs_.front().done) seqs_.pop_front();
  // Issue until nothing more can go: a prompt's prefill chunks, then decode submissions up to the pipeline depth.
  while (!seqs_.empty()) {
    const uint64_t before = stats_.submissions;
    Status st = issue();
    if (!st) {
      failAll(st.error());
      break;
    }
    if (stats_.submissions == before) break;
  }
  return !idle();
}

Status Generator::issue() {
  // Admit waiting sequences into free rows; a fresh row is inactive on the GPU until its prefill completes.
  for (auto& s : seqs_) {
    if (s.row >= 0 || s.done) continue;
    auto it = std::find(row_used_.begin(), row_used_.end(), false);
    if (it == row_used_.end()) break;
    s.row = (int)(it - row_used_.begin());
    *it = true;
    uint32_t row[Forward::kRowWords] = {(uint32_t)s.row, 0, 0, 0, 0, 0, 0, 0};
    ctx_.write(fwd_.rows(), (uint64_t)s.row * sizeof row, row, sizeof row);
  }
  // Prefill has priority (time to first token); one chunk per submission, chunks of one prompt back to back. The
  // last chunk's readback (the first token) is single-buffered: one prompt finishes prefill at a time.
  uint32_t decodes = 0;
  bool prefill_pending = false;
  for (const auto& f : in_flight_) {
    decodes += !f.prefill;
    prefill_pending |= f.prefill;
  }
  for (auto& s : seqs_) {
    if (s.row < 0 || s.done || s.prefilled == s.req.prompt.size()) continue;
    if (prefill_pending) break;
    while (s.prefilled < s.req.prompt.size() && !prefill_pending) {
      EWGPU_TRY(issuePrefill(s));
      prefill_pending = !in_flight_.empty() && in_flight_.back().prefill;
    }
    return {};
  }
  bool any = false;
  for (auto& s : seqs_) any |= s.decoding && !s.done;
  if (any && decodes < depth_) return issueDecode();
  return {};
}

Status Generator::issuePrefill(Seq& s) {
  const uint32_t cap = (uint32_t)(fwd_.prefillIds().size() / 4);
  const uint32_t T = std::min<uint32_t>(cap, (uint32_t)s.req.prompt.size() - s.prefilled);
  const bool last = s.prefilled + T == s.req.prompt.size();
  const uint32_t slot = (uint32_t)s.row;
  if (s.prefilled == 0) {  // sampling state of the slot: penalties see the prompt
    const uint32_t V = (uint32_t)fwd_.model().config.vocab;
    std::vector<uint32_t> counts(V, 0);
    for (int32_t t : s.req.prompt) counts[t] |= kCountPromptBit;
    ctx_.write(fwd_.counts(), (uint64_t)slot * V * 4, counts.data(), V * 4ull);
    uint32_t params[Forward::kParamWords];
    encodeParams(s.req.sampling, params);
    ctx_.write(fwd_.params(), (uint64_t)s.row * sizeof params, params, sizeof params);
    ctx_.write(fwd_.prefillParams(), 0, params, sizeof params);
  }
  uint32_t prow[Forward::kRowWords] = {slot, s.prefilled, 1, 0, 0, 0, 0, 0};
  uint32_t meta[4] = {T, slot, 0, 0};
  ctx_.write(fwd_.prefillRows(), 0, prow, sizeof prow);
  ctx_.write(fwd_.prefillMeta(), 0, meta, sizeof meta);
  ctx_.write(fwd_.prefillIds(), 0, s.req.prompt.data() + s.prefilled, T * 4ull);
  if (last) {
    uint32_t row[Forward::kRowWords] = {slot, (uint32_t)s.req.prompt.size(), 0, 0, 0, 0, 0, 0};
    ctx_.write(fwd_.rows(), (uint64_t)s.row * sizeof row, row, sizeof row);
  }
  gpu::Recorder rec(ctx_);
  if (s.prefilled == 0) fwd_.recordResetSlot(rec, slot);
  fwd_.recordPrefillChunk(rec, T, last, (uint32_t)s.row);
  if (last) rb_pout_.record(rec, fwd_.prefillOut(), 0, Forward::kOutWords * 4);
  EWGPU_TRY(rec.submit());
  ++stats_.submissions;
  ++stats_.prefill_chunks;
  s.prefilled += T;
  if (last) {
    rb_pout_.requestMap(ctx_);
    in_flight_.push_back({.prefill = true, .seq = s.id});
  }
  return {};
}

Status Generator::issueDecode() {
  const uint32_t B = fwd_.options().max_batch;
  // Steps worth submitting: the most any decoding sequence can still produce (max_tokens minus what it delivered
  // and what is in flight for it), at most K. A short max_tokens or the tail of a generation then runs no steps
  // whose tokens would be discarded. The in-flight decode submissions whose row mask has a decoding sequence's row
  // are all its own: a sequence that takes over a row decodes only after its prefill readback, which comes after
  // every submission issued for the row's previous sequence.
  uint32_t need = 0, rows = 0;
  for (const auto& s : seqs_) {
    if (!s.decoding || s.done || s.row < 0) continue;
    int64_t left = (int64_t)s.req.sampling.max_tokens - s.result.completion_tokens;
    for (const auto& f : in_flight_)
      if (!f.prefill && (f.rows >> s.row & 1u)) left -= f.steps;
    need = std::max<uint32_t>(need, (uint32_t)std::clamp<int64_t>(left, 0, steps_));
    rows |= 1u << s.row;
  }
  if (need == 0) return {};
  for (uint32_t b = 0; b < B; ++b) {
    Seq* s = byRow((int)b);
    uint32_t zero = 0;
    ctx_.write(fwd_.rows(), ((uint64_t)b * Forward::kRowWords + kRowOutIndex) * 4, &zero, 4);
    if (!s) ctx_.write(fwd_.rows(), ((uint64_t)b * Forward::kRowWords + kRowActive) * 4, &zero, 4);
  }
  uint32_t buf = 0;
  for (const auto& f : in_flight_)
    if (!f.prefill && f.buf == buf) buf = 1;
  gpu::Readback& rb = rb_out_[buf];
  gpu::Recorder rec(ctx_);
  for (uint32_t k = 0; k < need; ++k) fwd_.recordDecodeStep(rec);
  rb.record(rec, fwd_.out(), 0, rb.size());
  EWGPU_TRY(rec.submit());
  rb.requestMap(ctx_);
  in_flight_.push_back({.prefill = false, .steps = need, .buf = buf, .rows = rows});
  ++stats_.submissions;
  stats_.decode_steps += need;
  return {};
}

void Generator::consume(const InFlight& f) {
  ++stats_.readbacks;
  gpu::Readback& rb = readbackOf(f);
  Status st = rb.status();
  if (!st) return failAll(st.error());
  const auto* out = reinterpret_cast<const uint32_t*>(rb.data().data());
  if (f.prefill) {
    SampleOut o = decodeOut(out);
    rb.unmap();
    for (auto& s : seqs_)
      if (s.id == f.seq && !s.done) {
        s.t_first = Clock::now();
        s.result.ttft_ms = s.result.prefill_ms = msBetween(s.t_submit, s.t_first);
        s.decoding = true;
        deliver(s, o);
      }
    return;
  }
  const uint32_t kmax = fwd_.options().max_steps;
  for (auto& s : seqs_) {
    if (!s.decoding || s.done || s.row < 0) continue;
    for (uint32_t k = 0; k < f.steps && !s.done; ++k) {
      SampleOut o = decodeOut(out + ((uint64_t)s.row * kmax + k) * Forward::kOutWords);
      if (o.active) deliver(s, o);
    }
  }
  rb.unmap();
}

void Generator::deliver(Seq& s, const SampleOut& o) {
  if (s.done) return;
  s.t_last = Clock::now();
  ++s.result.completion_tokens;
  if (o.finish == SampleFinish::kStop) return finish(s, "stop");  // the stop token itself is not shown
  s.result.tokens.push_back(o.token);
  if (s.req.sampling.logprobs) s.result.token_info.push_back({o.token, o.logprob, o.top});
  std::string piece = s.detok ? s.detok->push(o.token) : std::string();
  s.pending += piece;
  // Stop strings: the earliest match ends the text there; nothing after it is shown.
  size_t cut = std::string::npos;
  for (const auto& stop : s.req.stop_strings) cut = std::min(cut, s.pending.find(stop));
  if (cut != std::string::npos) {
    s.pending.resize(cut);
    return finish(s, "stop");
  }
  size_t hold = heldSuffix(s.pending, s.req.stop_strings);
  std::string emit = s.pending.substr(0, s.pending.size() - hold);
  s.pending.erase(0, emit.size());
  if (!emit.empty()) {
    s.result.text += emit;
    if (s.cb.on_text) s.cb.on_text(emit);
  }
  if (o.finish == SampleFinish::kLength) finish(s, "length");
}

void Generator::finish(Seq& s, const std::string& reason) {
  if (s.done) return;
  std::string tail = s.pending;
  if (reason != "stop" && s.detok) tail += s.detok->flush();
  if (reason == "stop" && s.detok) s.detok->flush();
  if (!tail.empty() && reason != "error") {
    s.result.text += tail;
    if (s.cb.on_text) s.cb.on_text(tail);
  }
  s.pending.clear();
  s.done = true;
  s.result.finish_reason = reason;
  if (s.t_first.time_since_epoch().count() && s.t_last > s.t_first) s.result.decode_ms = msBetween(s.t_first, s.t_last);
  if (s.row >= 0) row_used_[s.row] = false;
  if (s.cb.on_done) s.cb.on_done(s.result);
}

void Generator::failAll(const Error& e) {
  in_flight_.clear();
  for (auto& s : seqs_) {
    if (s.done) continue;
    s.result.error = e;
    finish(s, "error");
  }
}

Status Generator::runToCompletion() {
  std::optional<Error> first;
  while (step()) {
    if (in_flight_.empty()) continue;
    Status w = readbackOf(in_flight_.front()).wait(ctx_);
    if (!w) failAll(w.error());
  }
  return ctx_.takeError();
}

}  // namespace ewgpu
