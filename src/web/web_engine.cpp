// The browser host (browser build only): the engine's single-threaded driver, stepped by the worker's event loop
// (web/everything-webgpu-worker.js). It holds what src/api/engine.cpp holds natively (a gpu::Context, resident
// models, the Scheduler) minus the threads: every export runs to completion without waiting on the GPU, and
// ewgpu_web_step() advances the scheduler by one non-blocking step. The worker calls it again when a readback's
// promise resolves (Module.ewgpuOnFutureDone), so the decode loop is driven by those promises: no Asyncify, no
// busy wait. Requests and responses are OpenAI's shapes (api/openai.h), as natively; chunks and results go to the
// worker as JSON messages (ewgpuJsPost). Exports return a malloc'd JSON string the caller frees (ewgpu_web_free):
// {"ok": ...} or {"error": {code, message, detail}} with the engine's error codes.
#include "api/openai.h"
#include "engine/scheduler.h"
#include "gpu/context.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"
#include "runtime/executor.h"
#include "runtime/forward.h"
#include "runtime/local_engine.h"
#include "tokenizer/conv_template.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

extern "C" {
void ewgpuJsPost(const char* json);  // library_ewgpu_webgpu.js: hands one message to the worker
}

namespace ewgpu::web {
namespace {

struct Model {
  std::string id;
  ModelConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ConvTemplate> conv;
  SamplingParams defaults;
  std::vector<std::string> stop_strings;
  uint32_t context = 0;
  std::unique_ptr<GpuModel> gpu;
  std::unique_ptr<Forward> forward;
  uint64_t weight_bytes = 0;
};

struct Host {
  std::unique_ptr<gpu::Context> ctx;
  Scheduler sched;
  std::map<std::string, Model> models;
  std::string current;
  uint64_t seed_counter = 0x9E3779B97F4A7C15ull;
  uint64_t next_completion = 1;
};
Host* g_host = nullptr;

char* dup(const nlohmann::json& j) {
  const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}
char* ok(nlohmann::json v = nlohmann::json::object()) { return dup({{"ok", std::move(v)}}); }
char* fail(const Error& e) { return dup({{"error", e.toJson()}}); }
void post(const nlohmann::json& j) {
  const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ewgpuJsPost(s.c_str());
}
void run(Effects& fx) {
  for (auto& f : fx) f();
  fx.clear();
}
double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

Error bad(const std::string& field, const std::string& message) {
  return makeError(ErrorCode::kBadRequest, field + ": " + message, {{"field", field}});
}

// What Engine::Impl::prepare does natively, for the one thread here.
Result<JobSpec> prepare(Host& h, const CompletionRequest& req, const Model** out_model) {
  const std::string id = req.model.empty() ? h.current : req.model;
  if (id.empty()) return makeError(ErrorCode::kNoModel, "no model is loaded (load one first)", {{"field", "model"}});
  auto it = h.models.find(id);
  if (it == h.models.end())
    return makeError(ErrorCode::kUnknownModel, "model " + id + " is not loaded", {{"field", "model"}, {"model", id}});
  const Model& m = it->second;
  *out_model = &m;
  std::vector<int32_t> ids;
  const char* field = "messages";
  if (req.prompt && !req.messages.empty()) return bad("prompt", "give either prompt or messages, not both");
  if (req.prompt) {
    field = "prompt";
    if (req.prompt->empty()) return bad("prompt", "must not be empty");
    ids = m.tokenizer->encode(*req.prompt);
  } else {
    if (req.messages.empty()) return bad("messages", "required (a non-empty list)");
    if (m.conv) {
      auto r = m.conv->renderTokens(*m.tokenizer, req.messages);
      if (!r) {
        Error e = std::move(r).error();
        e.detail["field"] = "messages";
        return e;
      }
      ids = std::move(*r);
    } else {
      std::string text;
      for (const auto& msg : req.messages) text += msg.content + "\n";
      ids = m.tokenizer->encode(text);
    }
  }
  if (ids.empty()) return bad(field, "renders to no tokens");
  if (ids.size() >= m.context)
    return makeError(ErrorCode::kContextTooLong,
                     "the prompt is " + std::to_string(ids.size()) + " tokens; the context window of " + m.id + " is " +
                         std::to_string(m.context),
                     {{"field", field}, {"prompt_tokens", ids.size()}, {"context_window", m.context}});
  // Structured output needs the model's vocabulary trie and the grammar matcher, which this host does not build yet.
  if (req.response_format && req.response_format->type != "text")
    return makeError(ErrorCode::kUnsupported, "response_format: structured output is not in the browser build yet",
                     {{"field", "response_format"}});
  SamplingParams s = m.defaults;
  if (req.temperature) s.temperature = *req.temperature;
  if (req.top_p) s.top_p = *req.top_p;
  if (req.top_k) s.top_k = *req.top_k;
  if (req.presence_penalty) s.presence_penalty = *req.presence_penalty;
  if (req.frequency_penalty) s.frequency_penalty = *req.frequency_penalty;
  if (req.repetition_penalty) s.repetition_penalty = *req.repetition_penalty;
  h.seed_counter = h.seed_counter * 6364136223846793005ull + 1442695040888963407ull;
  s.seed = req.seed ? *req.seed : h.seed_counter;
  if (req.max_tokens && *req.max_tokens == 0) return bad("max_tokens", "must be at least 1");
  s.max_tokens = std::min<uint64_t>(req.max_tokens.value_or(256), m.context - ids.size());
  s.logprobs = req.logprobs;
  if (req.top_logprobs && !req.logprobs) return bad("top_logprobs", "needs logprobs");
  s.n_logprobs = req.top_logprobs;
  s.logit_bias = req.logit_bias;
  EWGPU_TRY(s.validate(m.config.vocab));
  for (const auto& st : req.stop)
    if (st.empty()) return bad("stop", "stop strings must not be empty");
  JobSpec j;
  j.model = m.id;
  j.row.prompt = std::move(ids);
  j.row.sampling = std::move(s);
  j.row.stop_strings = m.stop_strings;
  j.row.stop_strings.insert(j.row.stop_strings.end(), req.stop.begin(), req.stop.end());
  j.priority = req.priority;
  j.session = req.session;
  j.task = req.task;
  j.preemptible = req.preemptible;
  return j;
}

Status ensureContext(Host& h) {
  if (h.ctx) return {};
  gpu::ContextOptions o;
  auto c = gpu::Context::create(o);
  if (!c) return std::move(c).error();
  h.ctx = std::move(*c);
  return {};
}

}  // namespace
}  // namespace ewgpu::web

using namespace ewgpu;
using namespace ewgpu::web;

extern "C" {

__attribute__((used)) void ewgpu_web_free(char* p) { std::free(p); }

// Creates the gpu::Context over the worker's GPUDevice. {"ok": {adapter info}}.
__attribute__((used)) char* ewgpu_web_init() {
  if (!g_host) g_host = new Host();
  if (Status s = ensureContext(*g_host); !s) return fail(s.error());
  return ok(g_host->ctx->info().toJson());
}

// Validates a folder (already written to the module's file system) without touching the GPU:
// INVALID_MODEL_FOLDER (detail: file, problem) on the first problem, as natively.
__attribute__((used)) char* ewgpu_web_validate_folder(const char* dir) {
  auto folder = ModelFolder::open(dir);
  if (!folder) return fail(folder.error());
  auto tok = Tokenizer::fromFile(std::string(dir) + "/tokenizer.json");
  if (!tok) return fail(tok.error());
  uint64_t bytes = 0;
  for (const auto& t : folder->tensors()) bytes += t.nbytes;
  return ok({{"tensors", folder->tensors().size()}, {"weight_bytes", bytes}});
}

// Loads the folder at `dir` as `id`: parse, upload, pipelines, rows. Options JSON: {rows, context, decode_steps}.
__attribute__((used)) char* ewgpu_web_load(const char* dir_c, const char* id_c, const char* options_c) {
  if (!g_host) g_host = new Host();
  Host& h = *g_host;
  const std::string dir = dir_c, id = id_c;
  auto opts = nlohmann::json::parse(options_c ? options_c : "{}", nullptr, false);
  if (opts.is_discarded() || !opts.is_object()) opts = nlohmann::json::object();
  if (h.models.count(id)) return ok({{"model", id}, {"already", true}});
  auto t0 = std::chrono::steady_clock::now();
  nlohmann::json stages = nlohmann::json::object();
  post({{"type", "progress"}, {"model", id}, {"stage", "parse"}, {"fraction", 0.1}});
  auto folder = ModelFolder::open(dir);
  if (!folder) return fail(folder.error());
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  if (!tok) return fail(tok.error());
  Model m;
  m.id = id;
  m.config = folder->config();
  m.tokenizer = std::make_unique<Tokenizer>(std::move(*tok));
  if (!m.config.conv_template.is_null()) {
    auto conv = ConvTemplate::fromJson(m.config.conv_template);
    if (!conv) return fail(conv.error());
    if (Status st = checkTemplateIds(*conv, m.config.vocab); !st) return fail(st.error());
    m.conv.emplace(std::move(*conv));
  }
  m.defaults = defaultSampling(m.config, m.conv ? &*m.conv : nullptr);
  if (m.conv) m.stop_strings = m.conv->stopStrings();
  stages["parse"] = msSince(t0);
  if (Status s = ensureContext(h); !s) return fail(s.error());
  post({{"type", "progress"}, {"model", id}, {"stage", "upload"}, {"fraction", 0.3}});
  auto t_up = std::chrono::steady_clock::now();
  auto model = uploadModel(*h.ctx, *folder);
  if (!model) return fail(model.error());
  stages["upload"] = msSince(t_up);
  post({{"type", "progress"}, {"model", id}, {"stage", "pipelines"}, {"fraction", 0.6}});
  auto t_pipe = std::chrono::steady_clock::now();
  ForwardOptions fo;
  const uint32_t rows = opts.value("rows", 4u);
  fo.max_batch = rows;
  fo.slots = rows;
  fo.context = opts.value("context", 0u);
  fo.max_steps = opts.value("max_steps", 32u);
  auto fwd = Forward::create(*h.ctx, **model, fo);
  if (!fwd) return fail(fwd.error());
  stages["pipelines"] = msSince(t_pipe);
  m.context = (*fwd)->contextLength();
  m.weight_bytes = (*model)->weight_bytes;
  auto exec = std::make_unique<Executor>(*h.ctx, **fwd, m.tokenizer.get(), opts.value("decode_steps", 16u),
                                         opts.value("submission_ms", 0.0));
  m.gpu = std::move(*model);
  m.forward = std::move(*fwd);
  if (Status s = h.sched.addModel(id, std::move(exec)); !s) return fail(s.error());
  if (Status s = h.ctx->takeError(); !s) {
    Effects fx;
    h.sched.removeModel(id, fx);
    run(fx);
    return fail(s.error());
  }
  nlohmann::json info = {{"model", id}, {"context_window", m.context}, {"weight_bytes", m.weight_bytes},
                         {"rows", rows}, {"load_ms", msSince(t0)}, {"stages", stages},
                         {"pipelines", h.ctx->kernelsCompiled()}};
  h.models.emplace(id, std::move(m));
  h.current = id;
  return ok(info);
}

__attribute__((used)) char* ewgpu_web_unload(const char* id_c) {
  if (!g_host) return ok({{"unloaded", false}});
  Host& h = *g_host;
  const std::string id = id_c;
  Effects fx;
  auto backend = h.sched.removeModel(id, fx);
  run(fx);
  backend.reset();
  const bool had = h.models.erase(id) != 0;
  if (h.current == id) h.current = h.models.empty() ? "" : h.models.begin()->first;
  return ok({{"unloaded", had}});
}

// Queues a chat.completions (chat=1) or completions (chat=0) request. Chunks and the result come as messages
// {"type":"chunk","request":r,"chunk":...} and {"type":"done","request":r,"response":...}.
__attribute__((used)) char* ewgpu_web_chat(const char* body_c, double request, int chat) {
  if (!g_host) g_host = new Host();
  Host& h = *g_host;
  auto body = nlohmann::json::parse(body_c, nullptr, false);
  if (body.is_discarded()) return fail(makeError(ErrorCode::kBadRequest, "the request is not JSON"));
  auto parsed = chat ? openai::parseChatRequest(body) : openai::parseCompletionRequest(body);
  if (!parsed) return fail(parsed.error());
  const Model* m = nullptr;
  auto spec = prepare(h, parsed->req, &m);
  if (!spec) return fail(spec.error());
  const std::string cid = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(h.next_completion++);
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Tokenizer* tok = m->tokenizer.get();
  auto token_text = [tok](int32_t id) {
    const int32_t ids[1] = {id};
    return tok->decode(ids);
  };
  auto builder = std::make_shared<openai::ResponseBuilder>(chat != 0, cid, created, m->id, token_text, parsed->req.logprobs);
  const bool stream = parsed->stream, usage = parsed->include_usage;
  JobCallbacks cb;
  if (stream)
    cb.on_chunk = [builder, request](const Chunk& c) {
      for (const auto& j : builder->chunks(c)) post({{"type", "chunk"}, {"request", request}, {"chunk", j}});
    };
  cb.on_done = [builder, request, stream, usage](const CompletionResult& r) {
    if (stream && r.outcome != Outcome::kFailed)
      for (const auto& j : builder->finalChunks(r, usage)) post({{"type", "chunk"}, {"request", request}, {"chunk", j}});
    if (r.outcome == Outcome::kFailed && r.error) {
      nlohmann::json e = openai::errorJson(*r.error);
      e["ewgpu"] = openai::extensionJson(r);
      post({{"type", "done"}, {"request", request}, {"error", r.error->toJson()}, {"response", e}});
      return;
    }
    post({{"type", "done"}, {"request", request}, {"response", builder->response(r)}});
  };
  Effects fx;
  const uint64_t job = h.sched.submit(std::move(*spec), std::move(cb), fx);
  run(fx);
  return ok({{"job", job}, {"id", cid}});
}

__attribute__((used)) char* ewgpu_web_cancel(double job) {
  if (!g_host) return ok({{"cancelled", 0}});
  Effects fx;
  const size_t n = g_host->sched.cancel(static_cast<uint64_t>(job), fx);
  run(fx);
  return ok({{"cancelled", n}});
}

// One non-blocking step. Returns 0: nothing to do; 1: waiting for GPU work in flight (step again when a readback
// lands); 2: more to do now (step again from the next task).
__attribute__((used)) int ewgpu_web_step() {
  if (!g_host) return 0;
  Host& h = *g_host;
  Effects fx;
  std::vector<std::pair<std::string, EngineError>> failures;
  if (h.ctx) h.ctx->processEvents();  // readbacks whose promise resolved: their callbacks run here
  h.sched.step(fx, &failures);
  run(fx);
  for (const auto& [model, e] : failures)
    post({{"type", "failure"}, {"model", model}, {"error", e.toJson()}});
  if (h.sched.inFlight()) return 1;
  return h.sched.hasWork() ? 2 : 0;
}

__attribute__((used)) char* ewgpu_web_state() {
  if (!g_host) return ok({{"models", nlohmann::json::array()}});
  nlohmann::json models = nlohmann::json::array();
  for (const auto& [id, m] : g_host->models)
    models.push_back({{"model", id}, {"context_window", m.context}, {"weight_bytes", m.weight_bytes},
                      {"decode_tok_s", g_host->sched.measuredDecodeTokS(id)}});
  nlohmann::json j = {{"models", models}, {"current", g_host->current}};
  if (g_host->ctx) {
    nlohmann::json per = nlohmann::json::object();
    uint32_t most = 0;
    for (const auto& [k, n] : g_host->ctx->storageBindingsPerKernel()) {
      per[k] = n;
      most = std::max(most, n);
    }
    j["storage_bindings_per_kernel"] = per;
    j["max_storage_bindings"] = most;
    j["device"] = g_host->ctx->info().toJson();
  }
  return ok(j);
}

}  // extern "C"
