// A RowBackend with no GPU for the scheduler and engine tests. Each step() advances every busy row by one
// "submission": a row's first step is its prefill (no output), the next one samples its first token, then one
// token per step. Token k of a row is id (prompt[0] + k) % vocab and its text is "<k> ". A row ends with
// "length" at max_tokens, or with "stop" when the token id equals a stop id. Everything it does is recorded
// so tests can check what the policy asked for.
#pragma once

#include "runtime/row_backend.h"

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace ewgpu::test {

class FakeBackend final : public RowBackend {
 public:
  struct Log {  // shared with the test, which may read it from another thread
    std::mutex mu;
    std::vector<std::string> calls;  // "start <row> <first prompt id>", "stop <row>"
    uint32_t max_busy = 0;
  };

  explicit FakeBackend(uint32_t rows, uint32_t context = 4096, std::shared_ptr<Log> log = std::make_shared<Log>())
      : rows_(rows), context_(context), log_(std::move(log)) {}


  uint32_t rowCapacity() const override { return (uint32_t)rows_.size(); }
  uint32_t contextLength() const override { return context_; }
  uint32_t vocabSize() const override { return 1000; }
  Status start(uint32_t row, RowRequest req) override {
    if (row >= rows_.size() || rows_[row].used)
      return makeError(ErrorCode::kInternal, "row is not free", {{"row", row}});
    if (fail_next_start_) {
      fail_next_start_ = false;
      return makeError(ErrorCode::kBadRequest, "the fake refused this request", {{"field", "prompt"}});
    }
    rows_[row] = Row{true, std::move(req), 0};
    record("start " + std::to_string(row) + " " + std::to_string(rows_[row].req.prompt.at(0)));
    uint32_t busy = 0;
    for (const auto& r : rows_) busy += r.used;
    std::lock_guard<std::mutex> lk(log_->mu);
    log_->max_busy = std::max(log_->max_busy, busy);
    return {};
  }
  std::string stop(uint32_t row) override {
    if (row < rows_.size() && rows_[row].used) {
      rows_[row].used = false;
      record("stop " + std::to_string(row));
    }
    return {};
  }
  Status setSteps(uint32_t k) override {
    steps_ = k;
    return {};
  }
  uint32_t steps() const override { return steps_; }
  uint32_t maxSteps() const override { return 32; }
  Status step(std::vector<RowEvent>& events) override {
    if (fail_next_step_) {
      fail_next_step_ = false;
      for (auto& r : rows_) r.used = false;
      return makeError(ErrorCode::kGpu, "the fake's submission failed");
    }
    for (uint32_t i = 0; i < rows_.size(); ++i) {
      Row& r = rows_[i];
      if (!r.used) continue;
      if (r.ticks++ == 0) continue;  // the prefill
      RowEvent ev;
      ev.row = i;
      ev.first = r.sampled == 0;
      const int32_t id = (r.req.prompt[0] + (int32_t)r.sampled) % 1000;
      ++r.sampled;
      ev.sampled = 1;
      bool stop = false;
      for (int32_t s : r.req.sampling.stop_token_ids) stop |= s == id;
      if (stop) {
        ev.finished = true;
        ev.finish_reason = "stop";
      } else {
        ev.tokens.push_back({id, 0, {}});
        ev.text = std::to_string(r.sampled - 1) + " ";
        if (r.sampled >= r.req.sampling.max_tokens) {
          ev.finished = true;
          ev.finish_reason = "length";
        }
      }
      if (ev.finished) r.used = false;
      events.push_back(std::move(ev));
    }
    return {};
  }
  bool inFlight() const override { return false; }
  uint64_t oldestTicket() const override { return kNoTicket; }
  Status wait() override { return {}; }

  bool busy(uint32_t row) const { return rows_.at(row).used; }
  uint32_t busyRows() const {
    uint32_t n = 0;
    for (const auto& r : rows_) n += r.used;
    return n;
  }
  std::vector<int32_t> busyTags() const {  // the first prompt id of each busy row
    std::vector<int32_t> t;
    for (const auto& r : rows_)
      if (r.used) t.push_back(r.req.prompt.at(0));
    return t;
  }
  void failNextStart() { fail_next_start_ = true; }
  void failNextStep() { fail_next_step_ = true; }
  std::shared_ptr<Log> log() const { return log_; }

 private:
  struct Row {
    bool used = false;
    RowRequest req;
    uint32_t ticks = 0, sampled = 0;
  };
  void record(std::string s) {
    std::lock_guard<std::mutex> lk(log_->mu);
    log_->calls.push_back(std::move(s));
  }
  std::vector<Row> rows_{};
  uint32_t context_;
  uint32_t steps_ = 16;
  bool fail_next_start_ = false, fail_next_step_ = false;
  std::shared_ptr<Log> log_;

 public:
  FakeBackend(const FakeBackend&) = delete;
};

inline std::unique_ptr<FakeBackend> makeFake(uint32_t rows, uint32_t context = 4096) {
  auto b = std::make_unique<FakeBackend>(rows, context);
  return b;
}

}  // namespace ewgpu::test
