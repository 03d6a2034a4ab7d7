// The engine's vocabulary, shared by the public API (ewgpu/engine.h), the host-neutral scheduler
// (src/engine/scheduler.h) and every host (CLI, HTTP server, browser build). docs/api.md documents each name;
// tests/api/api_doc_test checks that page against this header.
#pragma once

#include "base/error.h"
#include "runtime/row_backend.h"
#include "tokenizer/conv_template.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ewgpu {

// Failures at the API are Error{code, message, detail} (src/base/error.h); the name the seed uses:
using EngineError = Error;

// Priority bands: interactive > normal (default) > background; FIFO within a band.
enum class Priority { kInteractive = 0, kNormal = 1, kBackground = 2 };
std::string_view priorityName(Priority p);  // "interactive" | "normal" | "background"
Result<Priority> priorityFromName(std::string_view name);

// How a job ended. finish_reason says why the text ended (OpenAI's words); the outcome says who ended it.
enum class Outcome {
  kCompleted,   // ran to a stop or to its length: finish_reason "stop" | "length"
  kCancelled,   // cancel(id or session), unload, or engine shutdown: "abort"
  kPreempted,   // interrupted by an interactive request (it set preemptible): "abort", partial text kept
  kSuperseded,  // a newer request with the same session replaced it: "abort"
  kFailed,      // error set (e.g. DEVICE_LOST): "error"
};
std::string_view outcomeName(Outcome o);  // "completed" | "cancelled" | "preempted" | "superseded" | "failed"

// Structured output (docs/structured-output.md): the text is one JSON document, constrained token by token.
struct ResponseFormat {
  std::string type = "text";  // "text" | "json_object" (any JSON object) | "json_schema" (valid against `schema`)
  nlohmann::json schema;      // json_schema: a JSON Schema (an object or a boolean); null = any JSON value
  std::string name;           // json_schema.name (informational)
  bool strict = false;        // json_schema.strict: accepted; the output always follows the schema
};

// One completion. Unset sampling fields take the model folder's defaults (mlc-chat-config.json).
struct CompletionRequest {
  std::string model;                  // "" = the current model (Engine::use)
  std::vector<ChatMessage> messages;  // rendered through the model's conversation template
  std::optional<std::string> prompt;  // raw text with no template (the /v1/completions shape); not with messages
  std::optional<uint32_t> max_tokens;  // default 256 (the engine's); clamped to the context window
  std::optional<float> temperature, top_p, presence_penalty, frequency_penalty, repetition_penalty;
  std::optional<uint32_t> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;                      // stop strings (the template's are added)
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> bias in [-100, 100]
  bool logprobs = false;
  uint32_t top_logprobs = 0;  // 0..20, needs logprobs
  std::optional<ResponseFormat> response_format;  // unset or "text": free text
  // Scheduling.
  Priority priority = Priority::kNormal;
  std::string session;  // a new request with the same session supersedes this one
  std::string task;     // "" = a task of its own; a batch is one task
  bool preemptible = false;
};

struct Usage {
  uint32_t prompt_tokens = 0, completion_tokens = 0;
  uint32_t cached_tokens = 0;  // prompt tokens reused from earlier requests (prefix reuse), not prefilled
};

struct Timings {
  double queued_ms = 0;   // submit -> a row was assigned
  double ttft_ms = 0;     // submit -> first token
  double prefill_ms = 0;  // row assigned -> first token
  double decode_ms = 0;   // first token -> last token
  double total_ms = 0;    // submit -> finished
  double prefill_tok_s = 0, decode_tok_s = 0;
};

struct CompletionResult {
  uint64_t id = 0;
  std::string model;
  std::string text;
  std::string finish_reason;  // "stop" | "length" | "abort" | "error"
  Outcome outcome = Outcome::kCompleted;
  Usage usage;
  Timings timings;
  std::vector<TokenInfo> logprobs;  // per generated token, when asked
  std::optional<EngineError> error;  // set when outcome is kFailed
  size_t index = 0;                 // position in its batch (0 for complete())
  int64_t started_at_ms = 0;        // unix ms when it got a row (0: never started)
  int64_t finished_at_ms = 0;       // unix ms when it ended
};

// A streamed piece of one job.
struct Chunk {
  uint64_t id = 0;
  size_t index = 0;
  std::string delta;
  std::vector<TokenInfo> tokens;
};

// Live settings: changed by configure() without a reload.
struct EngineConfig {
  std::optional<uint32_t> decode_steps;  // K decode steps per GPU submission, 1..the model's max
  std::optional<uint32_t> rows;          // decode rows in use per model, 1..the rows built at load
  std::optional<double> task_share;      // the fraction of a model's rows one task may hold, (0, 1]
};

// A lifecycle or state change, pushed to subscribers. type is one of: "model.loading", "model.progress",
// "model.ready", "model.failed", "model.unloaded", "job.queued", "job.started", "job.finished",
// "config.changed", "device.lost". data holds the fields of that change (model, job, outcome, ...).
struct EngineEvent {
  std::string type;
  nlohmann::json data = nlohmann::json::object();
};

struct ModelState {
  std::string id;
  std::string status;  // "loading" | "ready" | "failed"
  std::string folder;
  bool keep_resident = false;
  bool current = false;
  uint32_t rows = 0, rows_busy = 0;
  uint32_t context_window = 0;
  double decode_tok_s = 0;  // measured on this engine (0 until something decoded)
};

struct EngineState {
  std::vector<ModelState> models;
  uint32_t queued[3] = {0, 0, 0};  // per band: interactive, normal, background
  uint32_t running = 0;
  uint64_t completed = 0, failed = 0, cancelled = 0, preempted = 0, superseded = 0;
  uint64_t generated_tokens = 0;
  nlohmann::json toJson() const;
};

// What is actually switched on.
struct Features {
  uint32_t decode_steps = 0;
  uint32_t rows = 0;            // rows in use per model
  uint32_t max_rows = 0;        // rows built per model
  double task_share = 0;
  bool gpu_sampling = true;
  bool batched_decode = false;  // rows > 1
  bool kv_reuse = true;         // prefix reuse across requests (docs/prefix-reuse.md)
  bool structured_output = true;  // response_format json_object / json_schema
  nlohmann::json toJson() const;
};

}  // namespace ewgpu
