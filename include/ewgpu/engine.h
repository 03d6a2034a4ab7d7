// everything-webgpu's public C++ API: one engine that shares one GPU among many callers. docs/api.md is its
// reference (checked against this header by tests/api/api_doc_test.cpp).
//
//   auto engine = ewgpu::Engine::create({}).value();
//   engine->load("Qwen3-0.6B-q4f16_1-MLC").wait();                    // a store id, a folder or a base URL
//   auto job = engine->complete({.messages = {{"user", "Hello"}}}, [](const ewgpu::Chunk& c) { ... });
//   ewgpu::CompletionResult r = job->wait();                          // text, finish_reason, outcome, usage
//
// Threading: every public call is thread-safe and returns without waiting on the GPU (load, unload and probe
// hand their GPU work to the engine's thread and return a handle). The engine owns one driver thread that
// advances the host-neutral scheduler (src/engine/scheduler.h) and waits on the GPU, and one callback thread
// that runs every callback in order, outside the engine's locks: a callback may call back into the engine
// (it must not block on a handle of the same engine: wait() from a callback would wait for itself).
// The browser build drives the same scheduler from its event loop instead of these threads.
#pragma once

#include "ewgpu/types.h"
#include "gpu/device_info.h"
#include "kernels/gemv_op.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "store/device_fit.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ewgpu {

// A value that arrives later, waited on with wait() (native hosts) or polled with ready().
template <class T>
class Pending {
 public:
  bool ready() const {
    std::lock_guard<std::mutex> lk(mu_);
    return value_.has_value();
  }
  const T& wait() const {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return value_.has_value(); });
    return *value_;
  }
  // Waits at most `ms`; null if the value has not arrived by then.
  const T* waitFor(int64_t ms) const {
    std::unique_lock<std::mutex> lk(mu_);
    if (!cv_.wait_for(lk, std::chrono::milliseconds(ms), [&] { return value_.has_value(); })) return nullptr;
    return &*value_;
  }
  void set(T v) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (value_) return;
      value_ = std::move(v);
    }
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::optional<T> value_;
};

struct EngineOptions {
  std::string adapter;       // "" = $EWGPU_ADAPTER or "auto"; "gpu"; "swiftshader"
  std::string cache_dir;     // the model store ("" = $EWGPU_CACHE_DIR or the XDG cache)
  uint32_t rows = 4;         // decode rows built per model (1..32): the most sequences one model decodes at once
  uint32_t decode_steps = 16;  // K decode steps per GPU submission (live: configure)
  uint32_t max_steps = 32;     // the largest K configure() may set later
  // A decode submission is cut to about this much GPU time (fewer than K steps when steps are slow: many rows,
  // a big model, a CPU adapter), so a newcomer's prefill never queues behind long submissions. 0 = K always.
  double submission_ms = 8;
  double task_share = 0.5;     // (0, 1]: the share of a model's rows one task may hold (live: configure)
  uint32_t context = 0;        // positions per row (0 = the model's context window)
  uint32_t default_max_tokens = 256;
  kernels::Activations activations = kernels::Activations::kAuto;
  bool robust = false;       // keep Dawn's bounds clamps (gpu::ContextOptions::robust)
  // Runs models on something other than this engine's GPU executor (the scheduler tests' fake backend, say):
  // called on the engine's thread with the validated folder, its config and tokenizer. Empty = the GPU.
  std::function<Result<std::unique_ptr<RowBackend>>(const std::string& dir, const ModelConfig& config,
                                                    const Tokenizer& tokenizer)>
      backend_factory;
};

struct LoadProgress {
  std::string model;
  std::string stage;      // "resolve" | "download" | "parse" | "upload" | "pipelines" | "ready"
  double fraction = 0;    // of the whole load, 0..1
  uint64_t bytes = 0, total_bytes = 0;  // download and upload stages: bytes so far, of the total
  uint32_t pipelines = 0;               // pipelines stage: built so far,
  uint32_t pipelines_total = 0;         // of those asked for so far (final once pipelines == pipelines_total)
};

struct LoadOptions {
  std::string id;              // register the model under this id ("" = the store id, or the folder's name)
  bool keep_resident = false;  // a later load does not unload it (others are unloaded once they are idle)
  std::function<void(const LoadProgress&)> progress;  // called on the callback thread
  std::shared_ptr<std::atomic<bool>> cancel;          // set to stop the load (partial downloads are kept)
};

struct ModelInfo {
  std::string id, folder, model_type, quantization;
  uint32_t context_window = 0, vocab = 0, rows = 0;
  uint64_t weight_bytes = 0;
  double load_ms = 0;
  nlohmann::json load_ms_by_stage = nlohmann::json::object();  // docs/api.md: resolve ... warmup, read
};

using LoadHandle = std::shared_ptr<const Pending<Result<ModelInfo>>>;

// One job: its id at once, its result when it ends (exactly once, whatever the outcome).
struct CompletionJob {
  uint64_t id = 0;
  std::shared_ptr<Pending<CompletionResult>> result;
  const CompletionResult& wait() const { return result->wait(); }
  bool done() const { return result->ready(); }
};
using CompletionHandle = std::shared_ptr<const CompletionJob>;

struct BatchJob {
  std::vector<uint64_t> ids;  // one per request, in order
  std::string task;
  std::shared_ptr<Pending<std::vector<CompletionResult>>> results;  // in request order, when all have ended
  const std::vector<CompletionResult>& wait() const { return results->wait(); }
};
using BatchHandle = std::shared_ptr<const BatchJob>;

struct SpeedEstimate {
  double tok_s = 0;
  std::string source;  // "measured" (decoded on this engine) | "projected" (from weight bytes and the adapter)
};

// The OpenAI chat.completions shapes, verbatim JSON (docs/api.md "chat.completions").
struct ChatCompletionJob {
  uint64_t id = 0;
  std::string completion_id;  // "chatcmpl-..."
  std::shared_ptr<Pending<nlohmann::json>> response;  // the chat.completion object (or the last chunk's content)
  const nlohmann::json& wait() const { return response->wait(); }
};
using ChatCompletionHandle = std::shared_ptr<const ChatCompletionJob>;

// The OpenAI embeddings shape, verbatim JSON (docs/api.md "embeddings"): the {object: "list", data, model, usage}
// object, or {"error": ...} when the GPU failed.
struct EmbeddingsJob {
  std::shared_ptr<Pending<nlohmann::json>> response;
  const nlohmann::json& wait() const { return response->wait(); }
};
using EmbeddingsHandle = std::shared_ptr<const EmbeddingsJob>;

class Engine {
 public:
  // Creates the engine and its threads. No GPU work happens until the first load() or probe().
  static Result<std::unique_ptr<Engine>> create(EngineOptions opts = {});
  // Stops the threads: unfinished jobs end as cancelled, loads in progress are cancelled, models are unloaded.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Models. `source` is a model folder, a store id (registered or from the catalogue; pulled if not cached) or
  // an http(s) base URL. The first model loaded becomes the current one.
  LoadHandle load(const std::string& source, LoadOptions opts = {});
  Status use(const std::string& id);
  // "" = the current model. It leaves resident() and the model lists at once and its jobs end as cancelled; its GPU
  // memory is freed on the driver thread soon after.
  Status unload(const std::string& id = "");
  void unloadAll();
  std::vector<std::string> resident() const;  // models ready to run
  std::string current() const;

  // Generation.
  Result<CompletionHandle> complete(CompletionRequest req, std::function<void(const Chunk&)> on_chunk = {});
  // One task for all the requests (their task fields are replaced by the batch's); on_item gets each result
  // as it ends.
  Result<BatchHandle> batch(std::vector<CompletionRequest> reqs,
                            std::function<void(const CompletionResult&)> on_item = {});
  size_t cancel(uint64_t job_id);
  size_t cancel(const std::string& job_id_or_session);  // "123" / "job-123" is a job id, anything else a session

  // Live settings (no reload), lifecycle events, snapshots.
  Status configure(const EngineConfig& c);
  std::function<void()> subscribe(std::function<void(const EngineEvent&)> fn);  // returns unsubscribe
  EngineState state() const;
  Features features() const;

  // Device and catalogue.
  Result<DeviceInfo> probe();
  Result<FitReport> canRun(const std::string& id);
  Result<std::vector<Recommendation>> recommendModels(const RecommendOptions& o = {});
  Result<SpeedEstimate> estimateSpeed(const std::string& id = "");

  // chat.completions.create: OpenAI's request JSON in, OpenAI's response JSON out (streamed chunks through
  // on_chunk when the request says "stream": true). BAD_REQUEST names the offending field.
  struct ChatCompletions {
    Result<ChatCompletionHandle> create(const nlohmann::json& request,
                                        std::function<void(const nlohmann::json& chunk)> on_chunk = {});
    Engine* engine = nullptr;
  };
  struct Chat {
    ChatCompletions completions;
  } chat;
  // embeddings.create: OpenAI's embeddings request JSON in ({input, model?}; input a string, strings, or token
  // ids), the response JSON out, for an embedding model (bert). BAD_REQUEST / CONTEXT_TOO_LONG name the field;
  // a chat model named here, or an embedding model given to chat.completions, is BAD_REQUEST {field: "model"}.
  // The work runs on the engine's driver thread between scheduler steps; the call itself never waits.
  struct Embeddings {
    Result<EmbeddingsHandle> create(const nlohmann::json& request);
    Engine* engine = nullptr;
  } embeddings;

  // The /v1/completions shape (a raw prompt, no template).
  Result<ChatCompletionHandle> createCompletion(const nlohmann::json& request,
                                                std::function<void(const nlohmann::json& chunk)> on_chunk = {});

  // The text of one token of a resident model (for logprobs in OpenAI's shape).
  std::string tokenText(const std::string& model, int32_t id) const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ewgpu
