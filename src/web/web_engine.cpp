// The browser host (browser build only): the engine's single-threaded driver, stepped by the worker's event loop
// (web/everything-webgpu-worker.js). It holds what src/api/engine.cpp holds natively (a gpu::Context, resident
// models, the Scheduler) minus the threads: every export runs to completion without waiting on the GPU, and
// ewgpu_web_step() advances the scheduler by one non-blocking step. The worker calls it again when a readback's
// promise resolves (Module.ewgpuOnFutureDone), so the decode loop is driven by those promises: no Asyncify, no
// busy wait. Requests and responses are OpenAI's shapes (api/openai.h), as natively; chunks and results go to the
// worker as JSON messages (ewgpuJsPost). Exports return a malloc'd JSON string the caller frees (ewgpu_web_free):
// {"ok": ...} or {"error": {code, message, detail}} with the engine's error codes.
// Embedding models (bert) hold an Encoder instead of a Forward and are not in the scheduler: an embeddings request
// is an EncodeJob (runtime/encoder.h) in a FIFO that the same step advances, so its readbacks are awaited the same
// way as the decode loop's.
#include "api/embeddings.h"
#include "api/openai.h"
#include "api/prepare.h"
#include "base/clock.h"
#include "base/md5.h"
#include "engine/scheduler.h"
#include "gpu/context.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"
#include "runtime/encoder.h"
#include "runtime/executor.h"
#include "runtime/forward.h"
#include "runtime/local_engine.h"
#include "store/catalog.h"
#include "store/device_fit.h"
#include "tokenizer/conv_template.h"
#include "tokenizer/tokenizer.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

extern "C" {
void ewgpuJsPost(const char* json);  // library_ewgpu_webgpu.js: hands one message to the worker
}

namespace ewgpu::web {
namespace {

struct Model {
  std::shared_ptr<const ModelAssets> assets;  // tokenizer, template, defaults, vocabulary (api/prepare.h)
  std::unique_ptr<GpuModel> gpu;
  std::unique_ptr<Forward> forward;
  std::unique_ptr<Encoder> encoder;  // embedding models instead of gpu + forward (not in the scheduler)
  uint64_t weight_bytes = 0;
  bool weights_pending = false;  // streamed weights not all written yet (ewgpu_web_weights_done)
};

// An embeddings request in flight: its model (the assets pin which load it was checked against) and its job.
struct EmbeddingTask {
  std::shared_ptr<const ModelAssets> assets;
  EncodeJob job;
  uint64_t prompt_tokens = 0;
  bool base64 = false;
  double request = 0;  // the page's request number: the result is {"type":"done","request":...}
};

struct Host {
  std::unique_ptr<gpu::Context> ctx;
  Scheduler sched;
  std::map<std::string, Model> models;
  std::string current;
  uint64_t seed_counter = 0x9E3779B97F4A7C15ull;
  uint64_t next_completion = 1;
  std::map<std::string, std::unique_ptr<GpuModel>> staged;  // upload_only with streamed weights, until done
  std::deque<EmbeddingTask> embeddings;  // FIFO; per encoder only the first task advances
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

// The resident model a request names (or the current one), with the native engine's errors (residentAssets).
Result<const Model*> residentModel(const Host& h, const std::string& requested) {
  const std::string id = requested.empty() ? h.current : requested;
  if (id.empty()) return makeError(ErrorCode::kNoModel, "no model is loaded (load one first)", {{"field", "model"}});
  auto it = h.models.find(id);
  if (it == h.models.end()) {
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& [mid, m] : h.models) ids.push_back(mid);
    return makeError(ErrorCode::kUnknownModel, "model " + id + " is not loaded",
                     {{"field", "model"}, {"model", id}, {"resident", ids}});
  }
  if (it->second.weights_pending)
    return makeError(ErrorCode::kNoModel, "model " + id + " is still loading", {{"field", "model"}, {"model", id}});
  return &it->second;
}

// The model the request names (or the current one), then the host-neutral api::prepareJob, as natively.
Result<JobSpec> prepare(Host& h, const CompletionRequest& req, const Model** out_model) {
  EWGPU_ASSIGN(*out_model, residentModel(h, req.model));
  h.seed_counter = h.seed_counter * 6364136223846793005ull + 1442695040888963407ull;
  return prepareJob(*(*out_model)->assets, req, PrepareOptions{256, h.seed_counter});
}

// Advances the embeddings FIFO by one non-blocking step: per encoder, the first task collects a landed readback
// and submits its next batch; a finished task posts its response (or error) and the next task of that encoder
// starts in the same pass. true while some task awaits a readback.
bool advanceEmbeddings(Host& h) {
  std::set<const Encoder*> busy;
  bool waiting = false;
  for (auto it = h.embeddings.begin(); it != h.embeddings.end();) {
    EmbeddingTask& t = *it;
    auto m = h.models.find(t.assets->id);
    Encoder* enc = m != h.models.end() && m->second.assets == t.assets ? m->second.encoder.get() : nullptr;
    if (enc && busy.count(enc)) {
      ++it;
      continue;
    }
    if (!enc) {  // unloaded (or reloaded) since the request was checked
      const Error e = makeError(ErrorCode::kUnknownModel, "model " + t.assets->id + " is not loaded",
                                {{"field", "model"}, {"model", t.assets->id}});
      post({{"type", "done"}, {"request", t.request}, {"error", e.toJson()}, {"response", openai::errorJson(e)}});
      it = h.embeddings.erase(it);
      continue;
    }
    if (!t.job.advance(*enc)) {
      busy.insert(enc);
      waiting = true;
      ++it;
      continue;
    }
    auto v = t.job.take();
    if (!v)
      post({{"type", "done"}, {"request", t.request}, {"error", v.error().toJson()},
            {"response", openai::errorJson(v.error())}});
    else
      post({{"type", "done"}, {"request", t.request},
            {"response", embeddingsResponse(t.assets->id, *v, t.prompt_tokens, t.base64)}});
    it = h.embeddings.erase(it);
  }
  return waiting;
}

Status ensureContext(Host& h) {
  if (h.ctx) return {};
  gpu::ContextOptions o;
  auto c = gpu::Context::create(o);
  if (!c) return std::move(c).error();
  h.ctx = std::move(*c);
  return {};
}

// An embedding model: its Encoder (weights and every pipeline) instead of a Forward and an Executor, resident but
// not in the scheduler. Its weights are not streamed (stream_weights is ignored): MLC stores q0f32 as
// f32-to-bf16, which the encoder widens on the CPU, one tensor at a time through the heap.
char* loadEncoder(Host& h, const std::string& id, std::shared_ptr<ModelAssets> assets, const ModelFolder& folder,
                  const nlohmann::json& opts, std::chrono::steady_clock::time_point t0, nlohmann::json stages) {
  if (opts.value("upload_only", false))
    return fail(
        makeError(ErrorCode::kUnsupported, "upload_only: not for embedding models", {{"field", "upload_only"}}));
  post({{"type", "progress"}, {"model", id}, {"stage", "upload"}, {"fraction", 0.3}});
  const auto t_up = std::chrono::steady_clock::now();
  auto enc = Encoder::create(*h.ctx, folder);
  if (!enc) return fail(enc.error());
  if (Status s = h.ctx->takeError(); !s) return fail(s.error());
  stages["upload"] = msSince(t_up);
  assets->context = (*enc)->maxSequence();
  Model m;
  m.assets = assets;
  m.weight_bytes = (*enc)->weightBytes();
  m.encoder = std::move(*enc);
  nlohmann::json info = {{"model", id}, {"model_type", assets->config.model_type}, {"embedding", true},
                         {"context_window", assets->context}, {"hidden_size", assets->config.hidden},
                         {"weight_bytes", m.weight_bytes}, {"load_ms", msSince(t0)}, {"stages", stages},
                         {"pipelines", h.ctx->kernelsCompiled()}};
  h.models.emplace(id, std::move(m));
  h.current = id;
  return ok(info);
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

// Loads the folder at `dir` as `id`: parse, upload, pipelines, rows. Options JSON: {rows, context, decode_steps,
// max_steps, submission_ms, stream_weights (below), upload_only (upload the weights, report the times, keep
// nothing: for measurements)}.
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
  auto loaded = loadModelAssets(id, dir, *folder);
  if (!loaded) return fail(loaded.error());
  std::shared_ptr<ModelAssets> assets = std::move(*loaded);
  Model m;
  stages["parse"] = msSince(t0);
  if (Status s = ensureContext(h); !s) return fail(s.error());
  if (assets->config.isEmbedding()) return loadEncoder(h, id, std::move(assets), *folder, opts, t0, std::move(stages));
  post({{"type", "progress"}, {"model", id}, {"stage", "upload"}, {"fraction", 0.3}});
  auto t_up = std::chrono::steady_clock::now();
  // stream_weights: the matrices' bytes are not read here; the answer lists each write [buffer handle, offset,
  // shard, offset in the shard, bytes] and the worker makes them from the shard Blobs (never a whole shard in
  // memory), then calls ewgpu_web_weights_done. Until then the model takes no requests.
  const bool stream = opts.value("stream_weights", false);
  nlohmann::json writes = nlohmann::json::array();
  UploadOptions uo;
  if (stream)
    uo.defer = [&writes](const gpu::Buffer& dst, uint64_t dst_off, const TensorInfo& t, uint64_t off, uint64_t n) {
      writes.push_back({(double)reinterpret_cast<uintptr_t>(dst.handle()), (double)dst_off, t.shard,
                        (double)(t.byte_offset + off), (double)n});
    };
  auto model = uploadModel(*h.ctx, *folder, uo);
  if (!model) return fail(model.error());
  stages["upload"] = msSince(t_up);
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& sh : folder->cache().shards) shards.push_back(sh.data_path);
  if (opts.value("upload_only", false)) {  // measurements (bench/web_load_memory.mjs): the weights, then nothing
    const uint64_t bytes = (*model)->weight_bytes;
    if (stream) h.staged[id] = std::move(*model);
    else model->reset();
    nlohmann::json r = {{"model", id}, {"upload_only", true}, {"weight_bytes", bytes}, {"load_ms", msSince(t0)},
                        {"stages", stages}};
    if (stream) r["writes"] = std::move(writes), r["shards"] = std::move(shards);
    return ok(r);
  }
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
  assets->context = (*fwd)->contextLength();
  m.assets = assets;
  m.weight_bytes = (*model)->weight_bytes;
  auto exec = std::make_unique<Executor>(*h.ctx, **fwd, &assets->tokenizer, opts.value("decode_steps", 16u),
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
  nlohmann::json info = {{"model", id}, {"context_window", assets->context},
                         {"weight_bytes", m.weight_bytes}, {"rows", rows}, {"load_ms", msSince(t0)}, {"stages", stages},
                         {"pipelines", h.ctx->kernelsCompiled()}};
  m.weights_pending = stream && !writes.empty();
  if (stream) info["writes"] = std::move(writes), info["shards"] = std::move(shards);
  h.models.emplace(id, std::move(m));
  h.current = id;
  return ok(info);
}

// The streamed weights of `id` are written: it takes requests now (an upload_only model is released).
__attribute__((used)) char* ewgpu_web_weights_done(const char* id_c) {
  if (!g_host) return ok({{"ready", false}});
  const std::string id = id_c;
  if (g_host->staged.erase(id)) return ok({{"ready", false}, {"released", true}});
  auto it = g_host->models.find(id);
  if (it == g_host->models.end()) return fail(makeError(ErrorCode::kUnknownModel, "model " + id + " is not loaded", {{"model", id}}));
  it->second.weights_pending = false;
  if (Status s = g_host->ctx->takeError(); !s) return fail(s.error());
  return ok({{"ready", true}});
}

__attribute__((used)) char* ewgpu_web_unload(const char* id_c) {
  if (!g_host) return ok({{"unloaded", false}});
  Host& h = *g_host;
  const std::string id = id_c;
  h.staged.erase(id);
  Effects fx;
  auto backend = h.sched.removeModel(id, fx);
  run(fx);
  backend.reset();
  const bool had = h.models.erase(id) != 0;
  if (h.current == id) h.current = h.models.empty() ? "" : h.models.begin()->first;
  return ok({{"unloaded", had}});
}

}  // extern "C"

namespace {

// A prepared request's callbacks: chunks and the result as messages {"type":"chunk","request":r,"chunk":...} and
// {"type":"done","request":r,"response":...}.
JobCallbacks callbacksFor(const openai::ParsedRequest& p, std::shared_ptr<const ModelAssets> assets,
                          const std::string& cid, double request) {
  const int64_t created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto token_text = [assets](int32_t id) {
    const int32_t ids[1] = {id};
    return assets->tokenizer.decode(ids);
  };
  auto builder = std::make_shared<openai::ResponseBuilder>(p.chat, cid, created, assets->id, token_text, p.req.logprobs);
  const bool stream = p.stream, usage = p.include_usage;
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
    nlohmann::json resp = builder->response(r);
    resp["index"] = r.index;
    post({{"type", "done"}, {"request", request}, {"response", std::move(resp)}});
  };
  return cb;
}

}  // namespace

extern "C" {

// Queues a chat.completions (chat=1) or completions (chat=0) request; see callbacksFor for its messages.
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
  JobCallbacks cb = callbacksFor(*parsed, m->assets, cid, request);
  Effects fx;
  const uint64_t job = h.sched.submit(std::move(*spec), std::move(cb), fx);
  run(fx);
  return ok({{"job", job}, {"id", cid}});
}

// A batch, as natively (Engine::batch): every item prepared first (a bad one fails the whole batch with
// detail.index, nothing submitted), then submitted as one task. Item i's result is the message
// {"type":"done","request": first_request + i, ...}. An item with `prompt` is a completion, otherwise a chat.
__attribute__((used)) char* ewgpu_web_batch(const char* body_c, double first_request) {
  if (!g_host) g_host = new Host();
  Host& h = *g_host;
  auto body = nlohmann::json::parse(body_c, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("requests") || !body["requests"].is_array() ||
      body["requests"].empty())
    return fail(makeError(ErrorCode::kBadRequest, "requests: a batch needs a non-empty list", {{"field", "requests"}}));
  const auto& items = body["requests"];
  if (items.size() > 4096) return fail(makeError(ErrorCode::kBadRequest, "requests: at most 4096 per batch", {{"field", "requests"}}));
  std::string task = body.value("task", std::string());
  if (task.empty()) task = "batch:" + std::to_string(h.next_completion);
  std::vector<std::pair<openai::ParsedRequest, JobSpec>> jobs;
  std::vector<const Model*> models;
  for (size_t i = 0; i < items.size(); ++i) {
    auto fail_at = [&](Error e) {
      e.detail["index"] = i;
      if (e.detail.contains("field") && e.detail["field"].is_string())
        e.detail["field"] = "requests[" + std::to_string(i) + "]." + e.detail["field"].get<std::string>();
      return fail(e);
    };
    if (!items[i].is_object()) return fail_at(makeError(ErrorCode::kBadRequest, "a batch item must be an object"));
    if (items[i].contains("stream")) return fail_at(makeError(ErrorCode::kBadRequest, "stream: not on batch items", {{"field", "stream"}}));
    nlohmann::json item = items[i];
    if (!item.contains("model") && body.contains("model")) item["model"] = body["model"];
    const bool chat = !item.contains("prompt");
    auto parsed = chat ? openai::parseChatRequest(item) : openai::parseCompletionRequest(item);
    if (!parsed) return fail_at(parsed.error());
    parsed->req.task = task;
    const Model* m = nullptr;
    auto spec = prepare(h, parsed->req, &m);
    if (!spec) return fail_at(spec.error());
    spec->index = i;
    jobs.emplace_back(std::move(*parsed), std::move(*spec));
    models.push_back(m);
  }
  nlohmann::json ids = nlohmann::json::array();
  Effects fx;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string cid = std::string(jobs[i].first.chat ? "chatcmpl-" : "cmpl-") + std::to_string(h.next_completion++);
    JobCallbacks cb = callbacksFor(jobs[i].first, models[i]->assets, cid, first_request + (double)i);
    ids.push_back(h.sched.submit(std::move(jobs[i].second), std::move(cb), fx));
  }
  run(fx);
  return ok({{"task", task}, {"jobs", ids}});
}

// Queues an embeddings.create request (api/embeddings.h: OpenAI's shape, the native engine's checks and errors,
// BAD_REQUEST naming the field). Its result is the message {"type":"done","request":r,"response":...} once every
// batch has been read back (advanceEmbeddings, from ewgpu_web_step).
__attribute__((used)) char* ewgpu_web_embeddings(const char* body_c, double request) {
  if (!g_host) g_host = new Host();
  Host& h = *g_host;
  auto body = nlohmann::json::parse(body_c, nullptr, false);
  if (body.is_discarded()) return fail(makeError(ErrorCode::kBadRequest, "the request is not JSON"));
  auto model = embeddingModelField(body);
  if (!model) return fail(model.error());
  auto m = residentModel(h, *model);
  if (!m) return fail(m.error());
  auto req = prepareEmbeddings(*(*m)->assets, body);
  if (!req) return fail(req.error());
  const size_t inputs = req->inputs.size();
  h.embeddings.push_back(EmbeddingTask{(*m)->assets,
                                       EncodeJob(std::move(req->inputs), (*m)->assets->config.embedding_normalize),
                                       req->prompt_tokens, req->base64, request});
  return ok({{"model", (*m)->assets->id}, {"inputs", inputs}});
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
  const bool encoding = advanceEmbeddings(h);
  h.sched.step(fx, &failures);
  run(fx);
  for (const auto& [model, e] : failures)
    post({{"type", "failure"}, {"model", model}, {"error", e.toJson()}});
  if (h.sched.inFlight() || encoding) return h.sched.hasWork() && !h.sched.inFlight() ? 2 : 1;
  return h.sched.hasWork() ? 2 : 0;
}

// {decode_steps?, rows?, task_share?} (or the seed's decodeSteps / taskShare): live, as natively; BAD_REQUEST
// naming the field out of range.
__attribute__((used)) char* ewgpu_web_configure(const char* json_c) {
  if (!g_host) g_host = new Host();
  auto j = nlohmann::json::parse(json_c ? json_c : "{}", nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail(makeError(ErrorCode::kBadRequest, "configure: not a JSON object"));
  EngineConfig c;
  for (const auto& [k, v] : j.items()) {
    if (k == "decode_steps" || k == "decodeSteps") {
      if (!v.is_number_unsigned()) return fail(makeError(ErrorCode::kBadRequest, "decodeSteps must be 1..256", {{"field", "decodeSteps"}}));
      c.decode_steps = v.get<uint32_t>();
    } else if (k == "rows") {
      if (!v.is_number_unsigned()) return fail(makeError(ErrorCode::kBadRequest, "rows must be at least 1", {{"field", "rows"}}));
      c.rows = v.get<uint32_t>();
    } else if (k == "task_share" || k == "taskShare") {
      if (!v.is_number()) return fail(makeError(ErrorCode::kBadRequest, "taskShare must be in (0, 1]", {{"field", "taskShare"}}));
      c.task_share = v.get<double>();
    } else {
      return fail(makeError(ErrorCode::kBadRequest, "configure: unknown field " + k, {{"field", k}}));
    }
  }
  if (Status s = g_host->sched.configure(c); !s) return fail(s.error());
  const SchedulerConfig& cfg = g_host->sched.config();
  return ok({{"decode_steps", cfg.decode_steps}, {"rows", cfg.rows}, {"task_share", cfg.task_share}});
}

// WebLLM's prebuilt catalogue (the same embedded list as natively): [{model_id, model_url, vram_required_MB, ...}].
__attribute__((used)) char* ewgpu_web_catalog() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : prebuiltCatalog()) out.push_back(e.toJson());
  return ok(out);
}

// canRun before anything is downloaded (store/device_fit.h): facts from the catalogue entry of `id` when there is
// one, then from a folder (`dir`, mounted by the worker; "" for none). UNKNOWN_MODEL when neither knows it.
__attribute__((used)) char* ewgpu_web_can_run(const char* id_c, const char* dir_c) {
  if (!g_host || !g_host->ctx) return fail(makeError(ErrorCode::kNoWebGPU, "the engine is not initialised"));
  const std::string id = id_c ? id_c : "", dir = dir_c ? dir_c : "";
  ModelFacts f;
  f.id = id;
  const CatalogEntry* e = findPrebuilt(id);
  if (e) f = factsFromCatalog(*e);
  if (!dir.empty()) addFactsFromFolder(dir, f);
  if (!e && dir.empty())
    return fail(makeError(ErrorCode::kUnknownModel, "model " + id + " is neither registered nor in the catalogue",
                          {{"model", id}, {"field", "model"}}));
  return ok(checkFit(f, g_host->ctx->info()).toJson());
}

// recommendModels({maxVramMB?, prefer?: "quality" | "speed", limit?}) for this device.
__attribute__((used)) char* ewgpu_web_recommend(const char* json_c) {
  if (!g_host || !g_host->ctx) return fail(makeError(ErrorCode::kNoWebGPU, "the engine is not initialised"));
  auto j = nlohmann::json::parse(json_c ? json_c : "{}", nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
  RecommendOptions o;
  for (const char* k : {"maxVramMB", "max_vram_mb"})
    if (j.contains(k)) {
      if (!j[k].is_number()) return fail(makeError(ErrorCode::kBadRequest, "maxVramMB must be a number", {{"field", "maxVramMB"}}));
      o.max_vram_mb = j[k].get<double>();
    }
  if (j.contains("prefer")) {
    if (!j["prefer"].is_string()) return fail(makeError(ErrorCode::kBadRequest, "prefer must be quality or speed", {{"field", "prefer"}}));
    o.prefer = j["prefer"].get<std::string>();
  }
  if (j.contains("limit")) {
    if (!j["limit"].is_number_unsigned()) return fail(makeError(ErrorCode::kBadRequest, "limit must be a count", {{"field", "limit"}}));
    o.limit = j["limit"].get<size_t>();
  }
  auto r = recommendModels(g_host->ctx->info(), o);
  if (!r) return fail(r.error());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& rec : *r) out.push_back(rec.toJson());
  return ok(out);
}

// Streaming MD5 of fetched shards (the worker feeds bounded slices): new -> update* -> final (frees the state,
// returns the hex digest to free with ewgpu_web_free).
__attribute__((used)) void* ewgpu_web_md5_new() { return new Md5(); }
__attribute__((used)) void ewgpu_web_md5_update(void* h, const uint8_t* p, int n) {
  if (h && p && n > 0) static_cast<Md5*>(h)->update(p, (size_t)n);
}
__attribute__((used)) char* ewgpu_web_md5_final(void* h) {
  auto* m = static_cast<Md5*>(h);
  const std::string hex = m ? m->hexDigest() : std::string();
  delete m;
  char* out = static_cast<char*>(std::malloc(hex.size() + 1));
  std::memcpy(out, hex.c_str(), hex.size() + 1);
  return out;
}

__attribute__((used)) char* ewgpu_web_state() {
  if (!g_host) return ok({{"models", nlohmann::json::array()}});
  nlohmann::json models = nlohmann::json::array();
  for (const auto& [id, m] : g_host->models)
    models.push_back({{"model", id}, {"context_window", m.assets->context}, {"weight_bytes", m.weight_bytes},
                      {"decode_tok_s", g_host->sched.measuredDecodeTokS(id)}, {"embedding", m.encoder != nullptr}});
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
