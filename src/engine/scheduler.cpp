#include "engine/scheduler.h"

#include <algorithm>

namespace ewgpu {
namespace {

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double msBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

bool isSet(std::chrono::steady_clock::time_point t) { return t.time_since_epoch().count() != 0; }

}  // namespace

Status Scheduler::addModel(const std::string& id, std::unique_ptr<RowBackend> backend) {
  if (models_.count(id)) return makeError(ErrorCode::kInternal, "model already added", {{"model", id}});
  EWGPU_TRY(backend->setSteps(std::min(cfg_.decode_steps, backend->maxSteps())));
  Model m;
  m.row_job.assign(backend->rowCapacity(), 0);
  m.backend = std::move(backend);
  models_.emplace(id, std::move(m));
  return {};
}

RowBackend* Scheduler::backend(const std::string& id) {
  auto it = models_.find(id);
  return it == models_.end() ? nullptr : it->second.backend.get();
}

std::unique_ptr<RowBackend> Scheduler::removeModel(const std::string& id, Effects& fx) {
  auto it = models_.find(id);
  if (it == models_.end()) return nullptr;
  std::vector<uint64_t> ids;
  for (const auto& [jid, j] : jobs_)
    if (j.spec.model == id) ids.push_back(jid);
  for (uint64_t jid : ids) finish(jid, Outcome::kCancelled, "abort", std::nullopt, true, fx);
  std::erase_if(pending_stops_, [&](const PendingStop& p) { return p.model == id; });
  std::unique_ptr<RowBackend> b = std::move(it->second.backend);
  models_.erase(it);
  return b;
}

uint64_t Scheduler::submit(JobSpec spec, JobCallbacks cb, Effects& fx) {
  if (!spec.session.empty()) {
    std::vector<uint64_t> older;
    for (const auto& [jid, j] : jobs_)
      if (j.spec.session == spec.session) older.push_back(jid);
    for (uint64_t jid : older) finish(jid, Outcome::kSuperseded, "abort", std::nullopt, false, fx);
  }
  Job j;
  j.id = next_id_++;
  j.arrival = arrivals_++;
  j.task = spec.task.empty() ? "job:" + std::to_string(j.id) : spec.task;
  j.spec = std::move(spec);
  j.spec.row.prefill_order = ((uint64_t)j.spec.priority << 48) | j.arrival;
  j.cb = std::move(cb);
  j.t_submit = Clock::now();
  const int band = (int)j.spec.priority;
  const uint64_t id = j.id;
  emit("job.queued", {{"job", id}, {"model", j.spec.model}, {"priority", priorityName(j.spec.priority)},
                      {"task", j.task}, {"session", j.spec.session}},
       fx);
  jobs_.emplace(id, std::move(j));
  queue_[band].push_back(id);
  return id;
}

size_t Scheduler::cancel(uint64_t id, Effects& fx) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return 0;
  if (it->second.row < 0) {
    finish(id, Outcome::kCancelled, "abort", std::nullopt, false, fx);
    return 1;
  }
  if (std::find(pending_cancels_.begin(), pending_cancels_.end(), id) != pending_cancels_.end()) return 0;
  pending_cancels_.push_back(id);
  return 1;
}

size_t Scheduler::cancelSession(const std::string& session, Effects& fx) {
  if (session.empty()) return 0;
  std::vector<uint64_t> ids;
  for (const auto& [jid, j] : jobs_)
    if (j.spec.session == session) ids.push_back(jid);
  size_t n = 0;
  for (uint64_t jid : ids) n += cancel(jid, fx);
  return n;
}

void Scheduler::failAll(const EngineError& e, Effects& fx) {
  for (auto& [id, m] : models_) std::fill(m.row_job.begin(), m.row_job.end(), 0);
  pending_stops_.clear();
  pending_cancels_.clear();
  std::vector<uint64_t> ids;
  for (auto& [jid, j] : jobs_) {
    j.row = -1;
    ids.push_back(jid);
  }
  for (uint64_t jid : ids) finish(jid, Outcome::kFailed, "error", e, false, fx);
}

void Scheduler::cancelAll(Effects& fx) {
  std::vector<uint64_t> ids;
  for (const auto& [jid, j] : jobs_) ids.push_back(jid);
  for (uint64_t jid : ids) finish(jid, Outcome::kCancelled, "abort", std::nullopt, true, fx);
  pending_cancels_.clear();
}

Status Scheduler::configure(const EngineConfig& c) {
  if (c.decode_steps && (*c.decode_steps < 1 || *c.decode_steps > 256))
    return makeError(ErrorCode::kBadRequest, "decodeSteps must be 1..256",
                     {{"field", "decodeSteps"}, {"value", *c.decode_steps}});
  if (c.rows && *c.rows < 1)
    return makeError(ErrorCode::kBadRequest, "rows must be at least 1", {{"field", "rows"}, {"value", *c.rows}});
  if (c.task_share && !(*c.task_share > 0 && *c.task_share <= 1))
    return makeError(ErrorCode::kBadRequest, "taskShare must be in (0, 1]",
                     {{"field", "taskShare"}, {"value", *c.task_share}});
  for (const auto& [id, m] : models_) {
    if (c.decode_steps && *c.decode_steps > m.backend->maxSteps())
      return makeError(ErrorCode::kBadRequest,
                       "decodeSteps above what model " + id + " was loaded with (" +
                           std::to_string(m.backend->maxSteps()) + ")",
                       {{"field", "decodeSteps"}, {"value", *c.decode_steps}, {"max", m.backend->maxSteps()}});
    if (c.rows && *c.rows > m.backend->rowCapacity())
      return makeError(ErrorCode::kBadRequest,
                       "rows above what model " + id + " was loaded with (" +
                           std::to_string(m.backend->rowCapacity()) + "); reload it with more rows",
                       {{"field", "rows"}, {"value", *c.rows}, {"max", m.backend->rowCapacity()}});
  }
  if (c.decode_steps) cfg_.decode_steps = *c.decode_steps;
  if (c.rows) cfg_.rows = *c.rows;
  if (c.task_share) cfg_.task_share = *c.task_share;
  steps_dirty_ |= c.decode_steps.has_value();
  return {};
}

uint32_t Scheduler::rowsInUse(const RowBackend& b) const {
  return cfg_.rows ? std::min(cfg_.rows, b.rowCapacity()) : b.rowCapacity();
}

uint32_t Scheduler::taskCap(const Model& m) const {
  return std::max<uint32_t>(1, (uint32_t)(cfg_.task_share * rowsInUse(*m.backend)));
}

void Scheduler::emit(const std::string& type, nlohmann::json data, Effects& fx) {
  if (!sink_) return;
  fx.push_back([sink = sink_, ev = EngineEvent{type, std::move(data)}] { sink(ev); });
}

void Scheduler::finish(uint64_t id, Outcome o, const std::string& reason, std::optional<EngineError> err,
                       bool stop_now, Effects& fx) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Job& j = it->second;
  const auto now = Clock::now();
  if (j.row >= 0) {
    Model& m = models_.at(j.spec.model);
    if (stop_now) {
      std::string tail = m.backend->stop((uint32_t)j.row);
      if (!tail.empty() && o != Outcome::kFailed) {
        j.text += tail;
        if (j.cb.on_chunk) fx.push_back([f = j.cb.on_chunk, c = Chunk{j.id, j.spec.index, tail, {}}] { f(c); });
      }
      m.row_job[j.row] = 0;
    } else {
      pending_stops_.push_back({j.spec.model, (uint32_t)j.row, id});
    }
  } else {
    auto& q = queue_[(int)j.spec.priority];
    q.erase(std::remove(q.begin(), q.end(), id), q.end());
  }
  std::erase(pending_cancels_, id);

  CompletionResult r;
  r.id = id;
  r.model = j.spec.model;
  r.text = std::move(j.text);
  r.finish_reason = reason;
  r.outcome = o;
  r.error = std::move(err);
  r.usage.prompt_tokens = (uint32_t)j.spec.row.prompt.size();
  r.usage.completion_tokens = j.completion_tokens;
  r.usage.cached_tokens = j.cached_tokens;
  r.logprobs = std::move(j.logprobs);
  r.index = j.spec.index;
  r.started_at_ms = j.started_at_ms;
  r.finished_at_ms = unixMs();
  Timings& t = r.timings;
  t.total_ms = msBetween(j.t_submit, now);
  if (isSet(j.t_start)) t.queued_ms = msBetween(j.t_submit, j.t_start);
  if (isSet(j.t_first)) {
    t.ttft_ms = msBetween(j.t_submit, j.t_first);
    t.prefill_ms = msBetween(j.t_start, j.t_first);
    t.decode_ms = msBetween(j.t_first, j.t_last);
    if (t.prefill_ms > 0) t.prefill_tok_s = (r.usage.prompt_tokens - r.usage.cached_tokens) / (t.prefill_ms / 1000);
    if (t.decode_ms > 0 && j.completion_tokens > 1) t.decode_tok_s = (j.completion_tokens - 1) / (t.decode_ms / 1000);
    if (t.decode_tok_s > 0) {
      auto mi = models_.find(j.spec.model);
      if (mi != models_.end()) {
        mi->second.decode_tokens += j.completion_tokens - 1;
        mi->second.decode_ms += t.decode_ms;
      }
    }
  }
  switch (o) {
    case Outcome::kCompleted: ++completed_; break;
    case Outcome::kCancelled: ++cancelled_; break;
    case Outcome::kPreempted: ++preempted_; break;
    case Outcome::kSuperseded: ++superseded_; break;
    case Outcome::kFailed: ++failed_; break;
  }
  emit("job.finished", {{"job", id}, {"model", r.model}, {"outcome", outcomeName(o)}, {"finish_reason", reason}},
       fx);
  if (j.cb.on_done) fx.push_back([f = std::move(j.cb.on_done), r = std::move(r)] { f(r); });
  jobs_.erase(it);
}

void Scheduler::startJob(Job& j, Model& m, uint32_t row, Effects& fx) {
  auto& q = queue_[(int)j.spec.priority];
  q.erase(std::remove(q.begin(), q.end(), j.id), q.end());
  Status st = m.backend->start(row, j.spec.row);
  if (!st) return finish(j.id, Outcome::kFailed, "error", st.error(), false, fx);
  j.row = (int)row;
  m.row_job[row] = j.id;
  j.t_start = Clock::now();
  j.started_at_ms = unixMs();
  emit("job.started", {{"job", j.id}, {"model", j.spec.model}, {"row", row}}, fx);
}

bool Scheduler::preemptFor(const Job& waiting, Model& m, Effects& fx) {
  const Job* victim = nullptr;
  for (uint64_t jid : m.row_job) {
    auto it = jobs_.find(jid);
    if (jid == 0 || it == jobs_.end() || !it->second.spec.preemptible || it->second.id == waiting.id) continue;
    const Job& c = it->second;
    if (!victim || c.spec.priority > victim->spec.priority ||
        (c.spec.priority == victim->spec.priority && c.t_start > victim->t_start))
      victim = &c;
  }
  if (!victim) return false;
  finish(victim->id, Outcome::kPreempted, "abort", std::nullopt, true, fx);
  return true;
}

void Scheduler::admit(const std::string& id, Model& m, Effects& fx) {
  const uint32_t usable = rowsInUse(*m.backend), cap = taskCap(m);
  for (;;) {
    // Rows held per task on this model.
    std::map<std::string, uint32_t> held;
    for (uint32_t r = 0; r < m.row_job.size(); ++r) {
      auto it = jobs_.find(m.row_job[r]);
      if (m.row_job[r] && it != jobs_.end()) ++held[it->second.task];
    }
    // The first job by band then arrival whose task is below its cap. The rule is flat, as the seed's: a task
    // at its cap waits even when the other rows are idle, so the next caller finds a free row.
    Job* cand = nullptr;
    for (const auto& q : queue_) {
      for (uint64_t jid : q) {
        Job& c = jobs_.at(jid);
        if (c.spec.model == id && held[c.task] < cap) {
          cand = &c;
          break;
        }
      }
      if (cand) break;
    }
    if (!cand) return;
    int row = -1;
    for (uint32_t r = 0; r < usable && r < m.row_job.size() && row < 0; ++r)
      if (m.row_job[r] == 0) row = (int)r;
    if (row < 0) {
      if (cand->spec.priority != Priority::kInteractive || !preemptFor(*cand, m, fx)) return;
      for (uint32_t r = 0; r < usable && r < m.row_job.size() && row < 0; ++r)
        if (m.row_job[r] == 0) row = (int)r;
      if (row < 0) return;
    }
    startJob(*cand, m, (uint32_t)row, fx);
  }
}

void Scheduler::apply(Model& m, const RowEvent& ev, Effects& fx) {
  if (ev.row >= m.row_job.size()) return;
  auto it = jobs_.find(m.row_job[ev.row]);
  if (m.row_job[ev.row] == 0 || it == jobs_.end()) return;
  Job& j = it->second;
  const auto now = Clock::now();
  if (ev.first) {
    j.t_first = now;
    j.cached_tokens = ev.cached_tokens;
  }
  if (ev.sampled) j.t_last = now;
  j.completion_tokens += ev.sampled;
  generated_ += ev.sampled;
  j.text += ev.text;
  if (j.spec.row.sampling.logprobs) j.logprobs.insert(j.logprobs.end(), ev.tokens.begin(), ev.tokens.end());
  if (j.cb.on_chunk && (!ev.text.empty() || !ev.tokens.empty()))
    fx.push_back([f = j.cb.on_chunk, c = Chunk{j.id, j.spec.index, ev.text, ev.tokens}] { f(c); });
  if (ev.finished) {
    m.row_job[ev.row] = 0;  // the backend freed the row itself
    j.row = -1;
    finish(j.id, Outcome::kCompleted, ev.finish_reason, std::nullopt, false, fx);
  }
}

void Scheduler::step(Effects& fx, std::vector<std::pair<std::string, EngineError>>* failures) {
  for (uint64_t id : std::vector<uint64_t>(pending_cancels_)) finish(id, Outcome::kCancelled, "abort", std::nullopt, true, fx);
  pending_cancels_.clear();
  for (const auto& p : pending_stops_) {
    auto it = models_.find(p.model);
    if (it == models_.end() || it->second.row_job[p.row] != p.job) continue;
    it->second.backend->stop(p.row);
    it->second.row_job[p.row] = 0;
  }
  pending_stops_.clear();
  if (steps_dirty_) {
    for (auto& [id, m] : models_) (void)m.backend->setSteps(std::min(cfg_.decode_steps, m.backend->maxSteps()));
    steps_dirty_ = false;
  }
  for (auto& [id, m] : models_) admit(id, m, fx);
  for (auto& [id, m] : models_) {
    std::vector<RowEvent> events;
    Status st = m.backend->step(events);
    for (const auto& ev : events) apply(m, ev, fx);
    if (!st) {
      // The backend lost every row: its jobs fail, other models' jobs go on.
      std::fill(m.row_job.begin(), m.row_job.end(), 0);
      std::vector<uint64_t> ids;
      for (auto& [jid, j] : jobs_)
        if (j.spec.model == id && j.row >= 0) {
          j.row = -1;
          ids.push_back(jid);
        }
      for (uint64_t jid : ids) finish(jid, Outcome::kFailed, "error", st.error(), false, fx);
      if (failures) failures->push_back({id, st.error()});
    }
  }
}

bool Scheduler::modelBusy(const std::string& model) const {
  for (const auto& [id, j] : jobs_)
    if (j.spec.model == model) return true;
  return false;
}

bool Scheduler::inFlight() const {
  for (const auto& [id, m] : models_)
    if (m.backend->inFlight()) return true;
  return false;
}

RowBackend* Scheduler::oldestInFlight() const {
  RowBackend* best = nullptr;
  for (const auto& [id, m] : models_)
    if (m.backend->inFlight() && (!best || m.backend->oldestTicket() < best->oldestTicket())) best = m.backend.get();
  return best;
}

double Scheduler::measuredDecodeTokS(const std::string& model) const {
  auto it = models_.find(model);
  if (it == models_.end() || it->second.decode_ms <= 0) return 0;
  return it->second.decode_tokens / (it->second.decode_ms / 1000);
}

EngineState Scheduler::state() const {
  EngineState s;
  for (const auto& [id, m] : models_) {
    ModelState ms;
    ms.id = id;
    ms.status = "ready";
    ms.rows = rowsInUse(*m.backend);
    for (uint64_t j : m.row_job) ms.rows_busy += j != 0;
    ms.context_window = m.backend->contextLength();
    ms.decode_tok_s = measuredDecodeTokS(id);
    s.models.push_back(ms);
  }
  for (int b = 0; b < 3; ++b) s.queued[b] = (uint32_t)queue_[b].size();
  for (const auto& [id, j] : jobs_) s.running += j.row >= 0;
  s.completed = completed_;
  s.failed = failed_;
  s.cancelled = cancelled_;
  s.preempted = preempted_;
  s.superseded = superseded_;
  s.generated_tokens = generated_;
  return s;
}

}  // namespace ewgpu
