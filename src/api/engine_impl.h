// Engine internals shared by src/api/engine.cpp (threads, models, loading) and src/api/engine_requests.cpp
// (requests, chat.completions). Guard: `mu` guards every field marked (mu); GPU objects are created, used and
// destroyed only on the driver thread.
#pragma once

#include "api/prepare.h"
#include "engine/scheduler.h"
#include "ewgpu/engine.h"
#include "gpu/context.h"
#include "grammar/vocabulary.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"
#include "runtime/encoder.h"
#include "runtime/executor.h"
#include "runtime/forward.h"
#include "tokenizer/conv_template.h"
#include "tokenizer/tokenizer.h"

#include <deque>
#include <map>
#include <optional>
#include <thread>

namespace ewgpu {

struct Resident {
  std::shared_ptr<const ModelAssets> assets;
  std::unique_ptr<ModelFolder> folder;
  std::unique_ptr<GpuModel> model;
  std::unique_ptr<Forward> forward;
  std::unique_ptr<Encoder> encoder;  // embedding models (bert) instead of forward: not in the scheduler
  bool keep = false;
  ModelInfo info;
};

// A resident model on its way out, holding its GPU objects until the driver thread destroys them (the backend
// first: its executor uses the Forward and the weights).
struct DetachedModel {
  std::optional<Resident> resident;
  std::unique_ptr<RowBackend> backend;
  void destroy() {
    backend.reset();
    resident.reset();
  }
};

// Subscribers, shared with the unsubscribe closures (which may outlive the engine).
struct Subscribers {
  std::mutex mu;
  std::map<uint64_t, std::function<void(const EngineEvent&)>> fns;
  uint64_t next = 1;
};

// A request checked against its model and turned into what the scheduler runs.
struct PreparedJob {
  JobSpec spec;
  std::shared_ptr<const ModelAssets> assets;
};

struct Engine::Impl {
  EngineOptions opts;

  mutable std::mutex mu;
  std::condition_variable cv;  // wakes the driver
  bool wake = false, stopping = false;        // (mu)
  Scheduler sched;                            // (mu)
  std::map<std::string, Resident> models;     // (mu) ready models
  std::map<std::string, std::string> loading;  // (mu) id -> stage
  std::string current_model;                  // (mu)
  std::optional<DeviceInfo> device;           // (mu) the adapter, once a context exists
  std::deque<std::function<void(bool closing)>> commands;  // (mu) run on the driver thread, without mu
  std::unique_ptr<gpu::Context> ctx;          // driver thread only
  std::thread driver;

  // Callbacks run in order on one thread, outside mu.
  std::mutex cb_mu;
  std::condition_variable cb_cv;
  std::deque<std::function<void()>> cb_queue;  // (cb_mu)
  bool cb_stop = false;                        // (cb_mu)
  std::thread cb_thread;
  std::shared_ptr<Subscribers> subs = std::make_shared<Subscribers>();

  std::mutex loaders_mu;
  std::vector<std::thread> loaders;  // (loaders_mu)
  std::atomic<bool> closing{false};
  std::atomic<uint64_t> batches{0};

  explicit Impl(EngineOptions o);
  // Hands closures to the callback thread. Effects the scheduler made are posted before mu is released, so the
  // callback thread runs them in the scheduler's order: a job's token chunks always precede its finish chunks,
  // even when another thread (a superseding submit, a cancel) finishes it while the driver is between steps.
  // Lock order: mu, then cb_mu; nothing takes mu while holding cb_mu.
  void post(Effects fx);
  void event(const std::string& type, nlohmann::json data);  // a facade event, through the callback thread
  template <class F>
  auto changeScheduler(F change);    // change(fx) and post(fx) under mu, then wake the driver
  void driverLoop();
  void callbackLoop();
  void handleFailures(const std::vector<std::pair<std::string, EngineError>>& failures, Effects& fx);
  Status ensureContext();            // driver thread
  void runLoad(const std::string& source, LoadOptions lo, std::shared_ptr<Pending<Result<ModelInfo>>> out);
  // Driver thread (or the destructor's, after the driver stopped), under mu: out of the scheduler (its jobs end as
  // cancelled, stopping their rows) and, if still there, out of `models`.
  DetachedModel detachLocked(const std::string& id, Effects& fx);
  // Under mu: the model out of `models` (the current one moves on); nullopt if it is not there.
  std::optional<Resident> takeResidentLocked(const std::string& id);
  void evictIdleExcept(const std::string& keep_id);  // driver thread

  // Requests (engine_requests.cpp).
  Result<PreparedJob> prepare(const CompletionRequest& req) const;
  // The resident model a request names ("" = the current one): NO_MODEL (none, or still loading) or UNKNOWN_MODEL
  // (not loaded, listing the resident ones), both naming the field "model". Called with mu held.
  Result<std::shared_ptr<const ModelAssets>> residentAssets(const std::string& requested) const;
  Result<CompletionHandle> submit(PreparedJob job, std::function<void(const Chunk&)> on_chunk,
                                  std::function<void(const CompletionResult&)> on_done);
  Result<EmbeddingsHandle> embeddingsCreate(const nlohmann::json& body);  // engine_embeddings.cpp
  Result<ChatCompletionHandle> openaiCreate(const nlohmann::json& body, bool chat,
                                            std::function<void(const nlohmann::json&)> on_chunk);
};

}  // namespace ewgpu
