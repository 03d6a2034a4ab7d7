// The scheduler's policy on a fake backend (no GPU): bands and FIFO, supersession, opt-in preemption, task
// shares, cancel at every stage, per-request failures, live configuration, several models.
#include "engine/scheduler.h"
#include "fake_backend.h"

#include <gtest/gtest.h>

#include <map>

namespace ewgpu {
namespace {

using test::FakeBackend;

struct Harness {
  Scheduler sched;
  std::map<std::string, FakeBackend*> fakes;
  std::map<int32_t, CompletionResult> results;  // by tag (the prompt's first token)
  std::map<int32_t, int> done_count, chunks_after_done;
  std::map<int32_t, std::string> streamed;
  std::vector<int32_t> done_order;

  explicit Harness(uint32_t rows, double share = 0.5, uint32_t models = 1) {
    EXPECT_TRUE(sched.configure({std::nullopt, std::nullopt, share}).ok());
    for (uint32_t i = 0; i < models; ++i) {
      auto b = std::make_unique<FakeBackend>(rows);
      const std::string id = "m" + std::to_string(i);
      fakes[id] = b.get();
      EXPECT_TRUE(sched.addModel(id, std::move(b)).ok());
    }
  }
  FakeBackend& fake(const std::string& m = "m0") { return *fakes.at(m); }
  static void run(Effects& fx) {
    Effects mine;
    mine.swap(fx);
    for (auto& f : mine) f();
  }
  uint64_t submit(int32_t tag, Priority p = Priority::kNormal, uint32_t max_tokens = 4, std::string session = "",
                  std::string task = "", bool preemptible = false, std::string model = "m0") {
    JobSpec s;
    s.model = model;
    s.row.prompt = {tag};
    s.row.sampling.max_tokens = max_tokens;
    s.priority = p;
    s.session = std::move(session);
    s.task = std::move(task);
    s.preemptible = preemptible;
    JobCallbacks cb;
    cb.on_chunk = [this, tag](const Chunk& c) {
      if (done_count[tag]) ++chunks_after_done[tag];
      streamed[tag] += c.delta;
    };
    cb.on_done = [this, tag](const CompletionResult& r) {
      ++done_count[tag];
      results[tag] = r;
      done_order.push_back(tag);
    };
    Effects fx;
    uint64_t id = sched.submit(std::move(s), std::move(cb), fx);
    run(fx);
    return id;
  }
  void step(int n = 1) {
    for (int i = 0; i < n; ++i) {
      Effects fx;
      sched.step(fx);
      run(fx);
    }
  }
  void drain() {
    for (int i = 0; i < 10000 && sched.hasWork(); ++i) step();
    ASSERT_FALSE(sched.hasWork());
  }
  // Tags in the order the backend started them.
  std::vector<int32_t> starts(const std::string& m = "m0") {
    std::vector<int32_t> out;
    for (const auto& c : fake(m).log()->calls)
      if (c.rfind("start ", 0) == 0) out.push_back(std::stoi(c.substr(c.rfind(' ') + 1)));
    return out;
  }
};

TEST(Scheduler, BandsFirstThenFifoWithinABand) {
  Harness h(1);
  h.submit(1, Priority::kNormal, 3);
  h.step();  // 1 takes the only row
  h.submit(2, Priority::kNormal);
  h.submit(3, Priority::kBackground);
  h.submit(4, Priority::kNormal);
  h.submit(5, Priority::kInteractive);
  h.submit(6, Priority::kBackground);
  h.drain();
  EXPECT_EQ(h.starts(), (std::vector<int32_t>{1, 5, 2, 4, 3, 6}));
  for (int32_t t = 1; t <= 6; ++t) {
    EXPECT_EQ(h.done_count[t], 1) << t;
    EXPECT_EQ(h.results[t].outcome, Outcome::kCompleted) << t;
    EXPECT_EQ(h.results[t].finish_reason, "length") << t;
    EXPECT_EQ(h.streamed[t], h.results[t].text) << t;
  }
  EXPECT_EQ(h.results[1].text, "0 1 2 ");
}

TEST(Scheduler, ASessionSupersedesItsRunningJobAtOnceWithItsPartialText) {
  Harness h(1);
  h.submit(1, Priority::kNormal, 50, "ghost");
  h.step(4);  // prefill, then three tokens
  ASSERT_EQ(h.done_count[1], 0);
  h.submit(2, Priority::kNormal, 3, "ghost");
  // Delivered inside submit(), before any further step: its GPU work is not waited for.
  ASSERT_EQ(h.done_count[1], 1);
  EXPECT_EQ(h.results[1].outcome, Outcome::kSuperseded);
  EXPECT_EQ(h.results[1].finish_reason, "abort");
  EXPECT_EQ(h.results[1].text, "0 1 2 ");
  h.drain();
  EXPECT_EQ(h.results[2].outcome, Outcome::kCompleted);
  EXPECT_EQ(h.chunks_after_done[1], 0);
  const auto& calls = h.fake().log()->calls;
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[1], "stop 0");  // the row is stopped before the next job takes it
  EXPECT_EQ(calls[2], "start 0 2");
}

TEST(Scheduler, ASessionSupersedesAQueuedJobWhichNeverRuns) {
  Harness h(1);
  h.submit(1, Priority::kNormal, 5);
  h.step();
  h.submit(2, Priority::kNormal, 5, "s");
  h.submit(3, Priority::kNormal, 5, "s");
  EXPECT_EQ(h.results[2].outcome, Outcome::kSuperseded);
  EXPECT_EQ(h.results[2].started_at_ms, 0);
  h.drain();
  EXPECT_EQ(h.starts(), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(h.results[3].outcome, Outcome::kCompleted);
}

TEST(Scheduler, InteractivePreemptsOnlyJobsThatOptedIn) {
  Harness h(1);
  h.submit(1, Priority::kBackground, 100, "", "", /*preemptible=*/true);
  h.step(3);
  h.submit(2, Priority::kInteractive, 3);
  h.step();
  ASSERT_EQ(h.done_count[1], 1);
  EXPECT_EQ(h.results[1].outcome, Outcome::kPreempted);
  EXPECT_EQ(h.results[1].text, "0 1 ");  // its partial text
  h.drain();
  EXPECT_EQ(h.results[2].outcome, Outcome::kCompleted);
  EXPECT_EQ(h.starts(), (std::vector<int32_t>{1, 2}));  // never requeued
  EXPECT_EQ(h.done_count[1], 1);

  // A job that did not opt in is never interrupted: the interactive request waits.
  Harness g(1);
  g.submit(1, Priority::kBackground, 6);
  g.step(2);
  g.submit(2, Priority::kInteractive, 2);
  g.drain();
  EXPECT_EQ(g.results[1].outcome, Outcome::kCompleted);
  EXPECT_EQ(g.results[1].text, "0 1 2 3 4 5 ");
  EXPECT_EQ(g.done_order, (std::vector<int32_t>{1, 2}));
}

TEST(Scheduler, OnlyAnInteractiveRequestPreempts) {
  Harness h(1);
  h.submit(1, Priority::kBackground, 5, "", "", true);
  h.step(2);
  h.submit(2, Priority::kNormal, 2);
  h.drain();
  EXPECT_EQ(h.results[1].outcome, Outcome::kCompleted);
  EXPECT_EQ(h.done_order, (std::vector<int32_t>{1, 2}));
}

TEST(Scheduler, ThePreemptionVictimIsTheLowestBandThenTheLatestStarted) {
  Harness h(3);
  h.submit(1, Priority::kBackground, 100, "", "", true);
  h.step();
  h.submit(2, Priority::kNormal, 100, "", "", true);
  h.step();
  h.submit(3, Priority::kBackground, 100, "", "", true);
  h.step(2);
  h.submit(4, Priority::kInteractive, 2);
  h.step();
  EXPECT_EQ(h.results[3].outcome, Outcome::kPreempted);  // background, started after 1
  EXPECT_EQ(h.done_count[1], 0);
  EXPECT_EQ(h.done_count[2], 0);
  h.submit(5, Priority::kInteractive, 2);
  h.step();
  EXPECT_EQ(h.results[1].outcome, Outcome::kPreempted);
  EXPECT_EQ(h.done_count[2], 0);
}

TEST(Scheduler, ATaskHoldsAtMostItsShareSoTheNextCallerFindsARow) {
  Harness h(4, 0.5);  // cap = 2 rows
  for (int32_t t = 100; t < 110; ++t) h.submit(t, Priority::kNormal, 6, "", "translate");
  for (int i = 0; i < 30; ++i) {
    h.step();
    EXPECT_LE(h.fake().busyRows(), 2u);  // the rule is flat: even alone, the batch holds its share
  }
  // Two independent callers arrive while the batch still has queued work: each gets a row at once.
  h.submit(200, Priority::kNormal, 6);
  h.submit(201, Priority::kInteractive, 6);
  h.step();
  auto s = h.starts();
  EXPECT_NE(std::find(s.begin(), s.end(), 200), s.end());
  EXPECT_NE(std::find(s.begin(), s.end(), 201), s.end());
  h.drain();
  for (int32_t t = 100; t < 110; ++t) EXPECT_EQ(h.results[t].outcome, Outcome::kCompleted);
  EXPECT_LE(h.fake().log()->max_busy, 4u);
}

TEST(Scheduler, TasksShareTheRowsAndAFullShareUsesThemAll) {
  Harness h(4, 0.25);  // cap = 1 row per task
  for (int32_t t = 100; t < 104; ++t) h.submit(t, Priority::kNormal, 3, "", "batch-a");
  for (int32_t t = 200; t < 204; ++t) h.submit(t, Priority::kNormal, 3, "", "batch-b");
  h.step();
  EXPECT_EQ(h.fake().busyRows(), 2u);  // one row each
  h.drain();
  EXPECT_EQ(h.fake().log()->max_busy, 2u);

  Harness all(4, 1.0);
  for (int32_t t = 100; t < 108; ++t) all.submit(t, Priority::kNormal, 3, "", "batch");
  all.step();
  EXPECT_EQ(all.fake().busyRows(), 4u);
  all.drain();
}

TEST(Scheduler, CancelWhileQueuedPrefillingAndDecoding) {
  Harness h(1);
  uint64_t a = h.submit(1, Priority::kNormal, 50);
  uint64_t q = h.submit(2, Priority::kNormal, 50);
  Effects fx;
  EXPECT_EQ(h.sched.cancel(q, fx), 1u);  // queued: ends now, never runs
  Harness::run(fx);
  EXPECT_EQ(h.results[2].outcome, Outcome::kCancelled);
  EXPECT_EQ(h.results[2].finish_reason, "abort");
  h.step();  // 1 starts (prefilling)
  EXPECT_EQ(h.sched.cancel(a, fx), 1u);
  EXPECT_EQ(h.sched.cancel(a, fx), 0u);  // already stopping
  EXPECT_EQ(h.done_count[1], 0);         // running: ends at the next step
  h.step();
  EXPECT_EQ(h.results[1].outcome, Outcome::kCancelled);
  EXPECT_EQ(h.results[1].text, "");
  EXPECT_FALSE(h.fake().busy(0));

  uint64_t d = h.submit(3, Priority::kNormal, 50);
  h.step(4);
  EXPECT_EQ(h.sched.cancel(d, fx), 1u);
  h.step();
  EXPECT_EQ(h.results[3].outcome, Outcome::kCancelled);
  EXPECT_EQ(h.results[3].text, "0 1 2 ");
  EXPECT_EQ(h.starts(), (std::vector<int32_t>{1, 3}));
  EXPECT_FALSE(h.sched.hasWork());
  EXPECT_EQ(h.sched.cancel(12345, fx), 0u);
}

TEST(Scheduler, CancelBySessionCountsWhatItStopped) {
  Harness h(2);
  h.submit(1, Priority::kNormal, 50, "a");
  h.submit(2, Priority::kNormal, 50, "b");
  h.submit(3, Priority::kNormal, 50, "c");
  h.step(2);
  Effects fx;
  EXPECT_EQ(h.sched.cancelSession("a", fx), 1u);
  EXPECT_EQ(h.sched.cancelSession("c", fx), 1u);  // queued
  EXPECT_EQ(h.sched.cancelSession("zzz", fx), 0u);
  Harness::run(fx);
  h.step();
  EXPECT_EQ(h.results[1].outcome, Outcome::kCancelled);
  EXPECT_EQ(h.results[3].outcome, Outcome::kCancelled);
  EXPECT_EQ(h.done_count[2], 0);
}

TEST(Scheduler, AFailedStartEndsThatRequestOnly) {
  Harness h(1);
  h.fake().failNextStart();
  h.submit(1);
  h.submit(2);
  h.drain();
  EXPECT_EQ(h.results[1].outcome, Outcome::kFailed);
  ASSERT_TRUE(h.results[1].error.has_value());
  EXPECT_EQ(h.results[1].error->code, ErrorCode::kBadRequest);
  EXPECT_EQ(h.results[2].outcome, Outcome::kCompleted);
}

TEST(Scheduler, ABackendFailureEndsThatModelsJobsOnly) {
  Harness h(2, 0.5, 2);
  h.submit(1, Priority::kNormal, 20, "", "", false, "m0");
  h.submit(2, Priority::kNormal, 5, "", "", false, "m1");
  h.step(2);
  h.fake("m0").failNextStep();
  h.step();
  EXPECT_EQ(h.results[1].outcome, Outcome::kFailed);
  EXPECT_EQ(h.results[1].error->code, ErrorCode::kGpu);
  h.drain();
  EXPECT_EQ(h.results[2].outcome, Outcome::kCompleted);
  // The failed model runs new work again.
  h.submit(3, Priority::kNormal, 2, "", "", false, "m0");
  h.drain();
  EXPECT_EQ(h.results[3].outcome, Outcome::kCompleted);
}

TEST(Scheduler, ModelsAreSteppedTogether) {
  Harness h(1, 0.5, 2);
  h.submit(1, Priority::kNormal, 3, "", "", false, "m0");
  h.submit(2, Priority::kNormal, 3, "", "", false, "m1");
  h.step(4);  // prefill + three tokens each, in the same steps
  EXPECT_EQ(h.results[1].outcome, Outcome::kCompleted);
  EXPECT_EQ(h.results[2].outcome, Outcome::kCompleted);
}

TEST(Scheduler, ConfigureChangesRowsAndStepsLive) {
  Harness h(4);
  EXPECT_TRUE(h.sched.configure({8u, 2u, std::nullopt}).ok());
  for (int32_t t = 1; t <= 6; ++t) h.submit(t, Priority::kNormal, 3);
  h.step();
  EXPECT_EQ(h.fake().steps(), 8u);
  h.drain();
  EXPECT_EQ(h.fake().log()->max_busy, 2u);
  auto bad_rows = h.sched.configure({std::nullopt, 9u, std::nullopt});
  ASSERT_FALSE(bad_rows.ok());
  EXPECT_EQ(bad_rows.error().detail["field"], "rows");
  auto bad_steps = h.sched.configure({0u, std::nullopt, std::nullopt});
  ASSERT_FALSE(bad_steps.ok());
  EXPECT_EQ(bad_steps.error().detail["field"], "decodeSteps");
  auto bad_share = h.sched.configure({std::nullopt, std::nullopt, 1.5});
  ASSERT_FALSE(bad_share.ok());
  EXPECT_EQ(bad_share.error().detail["field"], "taskShare");
}

TEST(Scheduler, RemovingAModelCancelsItsJobs) {
  Harness h(1);
  h.submit(1, Priority::kNormal, 50);
  h.submit(2, Priority::kNormal, 50);
  h.step(3);
  Effects fx;
  auto b = h.sched.removeModel("m0", fx);
  Harness::run(fx);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(h.results[1].outcome, Outcome::kCancelled);
  EXPECT_EQ(h.results[1].text, "0 1 ");
  EXPECT_EQ(h.results[2].outcome, Outcome::kCancelled);
  EXPECT_FALSE(h.sched.hasWork());
  EXPECT_EQ(h.sched.removeModel("m0", fx), nullptr);
}

TEST(Scheduler, CallbacksRunOutsideTheSchedulerAndMaySubmit) {
  // Effects are closures the host runs after step(): one that submits from on_done must not disturb the step
  // that produced it.
  Harness h(1);
  JobSpec s;
  s.model = "m0";
  s.row.prompt = {7};
  s.row.sampling.max_tokens = 2;
  int follow_ups = 0;
  JobCallbacks cb;
  cb.on_done = [&](const CompletionResult&) {
    Effects inner;
    JobSpec t = s;
    t.row.prompt = {8};
    h.sched.submit(std::move(t), {nullptr, [&](const CompletionResult&) { ++follow_ups; }}, inner);
    Harness::run(inner);
  };
  Effects fx;
  h.sched.submit(s, cb, fx);
  h.drain();
  EXPECT_EQ(follow_ups, 1);
  EXPECT_EQ(h.starts(), (std::vector<int32_t>{7, 8}));
}

TEST(Scheduler, StateCountsQueuedPerBandAndOutcomes) {
  Harness h(1);
  h.submit(1, Priority::kNormal, 10);
  h.step();
  h.submit(2, Priority::kInteractive);
  h.submit(3, Priority::kBackground);
  h.submit(4, Priority::kBackground);
  EngineState st = h.sched.state();
  EXPECT_EQ(st.queued[0], 1u);
  EXPECT_EQ(st.queued[1], 0u);
  EXPECT_EQ(st.queued[2], 2u);
  EXPECT_EQ(st.running, 1u);
  ASSERT_EQ(st.models.size(), 1u);
  EXPECT_EQ(st.models[0].rows_busy, 1u);
  h.drain();
  st = h.sched.state();
  EXPECT_EQ(st.completed, 4u);
  EXPECT_EQ(st.running, 0u);
  EXPECT_GT(st.generated_tokens, 10u);
  EXPECT_EQ(st.toJson()["queued"]["background"], 0);
}

}  // namespace
}  // namespace ewgpu
