#include "runtime/generator.h"

#include <algorithm>

namespace ewgpu {
namespace {

double msBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Generator::Generator(gpu::Context& ctx, Forward& fwd, const Tokenizer* tok, uint32_t steps)
    : exec_(ctx, fwd, tok, steps) {}

Status Generator::validate(const GenerationRequest& req) const {
  return checkRowRequest({req.prompt, req.sampling, req.stop_strings, 0}, exec_.contextLength(), (int)exec_.vocabSize());
}

Result<uint64_t> Generator::submit(GenerationRequest req, GenerationCallbacks cb) {
  EWGPU_TRY(validate(req));
  Seq s;
  s.id = next_id_++;
  s.req = std::move(req);
  s.cb = std::move(cb);
  s.result.prompt_tokens = (uint32_t)s.req.prompt.size();
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

void Generator::apply(const RowEvent& ev, std::vector<std::function<void()>>& calls) {
  for (auto& s : seqs_) {
    if (s.row != (int)ev.row || s.done) continue;
    s.t_last = Clock::now();
    if (ev.first) {
      s.result.cached_tokens = ev.cached_tokens;
      s.t_first = s.t_last;
      s.result.ttft_ms = s.result.prefill_ms = msBetween(s.t_submit, s.t_first);
    }
    s.result.completion_tokens += ev.sampled;
    for (const auto& t : ev.tokens) {
      s.result.tokens.push_back(t.id);
      if (s.req.sampling.logprobs) s.result.token_info.push_back(t);
    }
    if (!ev.text.empty()) {
      s.result.text += ev.text;
      if (s.cb.on_text) calls.push_back([f = s.cb.on_text, t = ev.text] { f(t); });
    }
    if (ev.finished) {
      s.row = -1;  // the executor freed the row
      finish(s, ev.finish_reason, calls);
    }
    return;
  }
}

void Generator::finish(Seq& s, const std::string& reason, std::vector<std::function<void()>>& calls) {
  if (s.row >= 0) {
    std::string tail = exec_.stop((uint32_t)s.row);
    if (!tail.empty() && reason != "error") {
      s.result.text += tail;
      if (s.cb.on_text) calls.push_back([f = s.cb.on_text, tail] { f(tail); });
    }
    s.row = -1;
  }
  s.done = true;
  s.result.finish_reason = reason;
  if (s.t_first.time_since_epoch().count() && s.t_last > s.t_first) s.result.decode_ms = msBetween(s.t_first, s.t_last);
  if (s.cb.on_done) calls.push_back([f = s.cb.on_done, r = s.result] { f(r); });
}

bool Generator::step() {
  std::vector<std::function<void()>> calls;
  for (auto& s : seqs_)
    if (s.cancelled && !s.done) finish(s, "abort", calls);
  // FIFO admission into free rows.
  for (auto& s : seqs_) {
    if (s.done || s.row >= 0) continue;
    uint32_t r = 0;
    while (r < exec_.rowCapacity() && exec_.rowBusy(r)) ++r;
    if (r == exec_.rowCapacity()) break;
    RowRequest rr{s.req.prompt, s.req.sampling, s.req.stop_strings, s.id};
    rr.shared_prefix = s.req.shared_prefix;
    Status st = exec_.start(r, std::move(rr));
    if (!st) {
      s.result.error = st.error();
      finish(s, "error", calls);
      continue;
    }
    s.row = (int)r;
  }
  std::vector<RowEvent> events;
  Status st = exec_.step(events);
  for (const auto& ev : events) apply(ev, calls);
  if (!st) {
    failed_ = st.error();
    for (auto& s : seqs_)
      if (!s.done) {
        s.row = -1;
        s.result.error = st.error();
        finish(s, "error", calls);
      }
  }
  while (!seqs_.empty() && seqs_.front().done) seqs_.pop_front();
  for (auto& c : calls) c();  // outside every loop over seqs_: a callback may submit or cancel
  return !idle();
}

Status Generator::runToCompletion() {
  while (step()) {
    if (!exec_.inFlight()) continue;
    Status w = exec_.wait();
    if (!w) failed_ = w.error();
  }
  if (failed_) {
    Error e = *failed_;
    failed_.reset();
    return e;
  }
  return {};
}

}  // namespace ewgpu
