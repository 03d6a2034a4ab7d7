// The engine's policy, host-neutral: which job runs in which decode row of which resident model, and when a
// running job ends for a reason other than its own (cancel, supersession, preemption, unload). It owns no
// thread, no lock, no clock it does not read, no file and no GPU object: it is advanced by step(), which a
// native driver thread calls in a loop (src/api/engine.cpp) and the browser build from its event loop. Row
// backends (src/runtime/row_backend.h) do the work; a fake backend makes the policy testable without a GPU.
//
// The four mechanisms (docs/engine.md):
//  - priority bands interactive > normal > background, FIFO within a band;
//  - session supersession: a new job with the session of an unfinished one ends that one now as superseded
//    (its result is delivered at once; its row is stopped at the next step and its GPU work is not waited for);
//  - opt-in preemption: an interactive job that finds no free row stops a running job that set preemptible
//    (lowest band first, then the most recently started); the victim ends as preempted with its partial text
//    and is never requeued;
//  - tasks: a task holds at most max(1, floor(task_share * rows)) of a model's rows, even when the others are
//    idle (the seed's flat rule: the next caller always finds a row; task_share 1 lets one task use them all).
// Nothing else interrupts a running job. Each resident model has its own rows; all of them are stepped in every
// step(), so their GPU submissions interleave and share the device.
//
// Callbacks are never called from here: every call appends closures to an Effects list, which the host runs
// after it has released its lock, in order (a callback may call back into the engine).
#pragma once

#include "ewgpu/types.h"
#include "runtime/row_backend.h"

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ewgpu {

using Effects = std::vector<std::function<void()>>;

struct JobSpec {
  std::string model;
  RowRequest row;  // prompt ids, sampling, stop strings (prefill_order is set by the scheduler)
  Priority priority = Priority::kNormal;
  std::string session;
  std::string task;  // "" = a task of its own
  bool preemptible = false;
  size_t index = 0;  // position in its batch
};

struct JobCallbacks {
  std::function<void(const Chunk&)> on_chunk;
  std::function<void(const CompletionResult&)> on_done;  // exactly once per job
};

struct SchedulerConfig {
  uint32_t decode_steps = 16;
  uint32_t rows = 0;        // rows in use per model; 0 = every row the backend has
  double task_share = 0.5;  // (0, 1]: a task holds at most max(1, floor(task_share * rows)) rows
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig cfg = {}) : cfg_(cfg) {}

  // A model whose backend is ready. Its decode steps are set to the configured K (capped by the backend).
  Status addModel(const std::string& id, std::unique_ptr<RowBackend> backend);
  // Ends the model's jobs (queued and running) as cancelled and hands its backend back (to be destroyed by the
  // host, with the GPU objects it refers to). Null if there is no such model.
  std::unique_ptr<RowBackend> removeModel(const std::string& id, Effects& fx);
  bool hasModel(const std::string& id) const { return models_.count(id) != 0; }
  RowBackend* backend(const std::string& id);

  // Queues a job (the spec is valid: the host checked it against the model). Supersedes unfinished jobs of the
  // same session. Returns the job id (> 0).
  uint64_t submit(JobSpec spec, JobCallbacks cb, Effects& fx);
  // Queued jobs end at once; running ones at the next step(). Returns how many jobs it stopped.
  size_t cancel(uint64_t id, Effects& fx);
  size_t cancelSession(const std::string& session, Effects& fx);
  // Ends every job (queued and running): failAll as failed with `e` (the backends lost their rows), cancelAll
  // as cancelled (running rows are stopped now).
  void failAll(const EngineError& e, Effects& fx);
  void cancelAll(Effects& fx);

  Status configure(const EngineConfig& c);
  const SchedulerConfig& config() const { return cfg_; }

  // Applies pending stops, admits and preempts, steps every backend (non-blocking) and turns their events into
  // chunks and results. A backend failure ends that model's jobs as failed; it is returned in `failures`.
  void step(Effects& fx, std::vector<std::pair<std::string, EngineError>>* failures = nullptr);

  bool modelBusy(const std::string& model) const;  // it has queued or running jobs
  bool hasWork() const { return !jobs_.empty() || !pending_stops_.empty(); }
  bool inFlight() const;
  // The backend whose in-flight work the GPU finishes first (null when nothing is in flight).
  RowBackend* oldestInFlight() const;

  EngineState state() const;
  uint32_t rowsInUse(const RowBackend& b) const;
  // Subscribers' sink: called (through fx) with every lifecycle event the scheduler sees.
  void setEventSink(std::function<void(const EngineEvent&)> sink) { sink_ = std::move(sink); }
  void emit(const std::string& type, nlohmann::json data, Effects& fx);
  // Decode tok/s measured over the model's finished jobs (0 until one decoded).
  double measuredDecodeTokS(const std::string& model) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Job {
    uint64_t id = 0;
    JobSpec spec;
    JobCallbacks cb;
    uint64_t arrival = 0;
    std::string task;  // resolved: spec.task or "job:<id>"
    int row = -1;
    std::string text;
    std::vector<TokenInfo> logprobs;
    uint32_t completion_tokens = 0;
    uint32_t cached_tokens = 0;
    Clock::time_point t_submit, t_start, t_first, t_last;
    int64_t started_at_ms = 0;
  };
  struct Model {
    std::unique_ptr<RowBackend> backend;
    std::vector<uint64_t> row_job;  // job id per row, 0 = free
    double decode_tokens = 0, decode_ms = 0;
  };
  struct PendingStop {
    std::string model;
    uint32_t row;
    uint64_t job;
  };

  void admit(const std::string& id, Model& m, Effects& fx);
  bool preemptFor(const Job& waiting, Model& m, Effects& fx);
  void startJob(Job& j, Model& m, uint32_t row, Effects& fx);
  void apply(Model& m, const RowEvent& ev, Effects& fx);
  // Ends a job: delivers its result and forgets it. A running job's row is stopped now when `stop_now` (driver
  // context), else at the next step.
  void finish(uint64_t id, Outcome o, const std::string& reason, std::optional<EngineError> err, bool stop_now,
              Effects& fx);
  uint32_t taskCap(const Model& m) const;

  SchedulerConfig cfg_;
  std::map<std::string, Model> models_;
  std::map<uint64_t, Job> jobs_;  // unfinished jobs (queued and running)
  std::deque<uint64_t> queue_[3];  // queued job ids per band, FIFO
  std::vector<PendingStop> pending_stops_;
  std::vector<uint64_t> pending_cancels_;  // running jobs to end as cancelled at the next step
  bool steps_dirty_ = false;
  uint64_t next_id_ = 1, arrivals_ = 0;
  uint64_t completed_ = 0, failed_ = 0, cancelled_ = 0, preempted_ = 0, superseded_ = 0, generated_ = 0;
  std::function<void(const EngineEvent&)> sink_;
};

}  // namespace ewgpu
