// The native host of the scheduler: the engine's driver thread (scheduler steps, GPU waits, model uploads), its
// callback thread, loader threads (store resolution, downloads, folder parsing), and the model/state calls of
// the public API. Requests and chat.completions are in engine_requests.cpp.
#include "api/engine_impl.h"
#include "base/clock.h"
#include "grammar/tokenizer_vocabulary.h"
#include "runtime/local_engine.h"
#include "store/cache_files.h"
#include "store/model_store.h"
#include "store/catalog.h"
#include "store/model_url.h"

#include <filesystem>
#include <iostream>

namespace ewgpu {
namespace {

// The id a folder registers under when the caller names none: its name, or parent-name for a folder named for
// its quantization ("tests/fixtures/qwen3_5_tiny/q4f16_1" -> "qwen3_5_tiny-q4f16_1").
std::string idForFolder(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  if (name.size() > 1 && name[0] == 'q' && std::isdigit((unsigned char)name[1]) && p.has_parent_path() &&
      !p.parent_path().filename().empty())
    name = p.parent_path().filename().string() + "-" + name;
  return name;
}

bool isDirectory(const std::string& s) {
  std::error_code ec;
  return std::filesystem::is_directory(s, ec);
}

bool looksLikePath(const std::string& s) {
  return !isHttpUrl(s) && (s.find('/') != std::string::npos || s.rfind(".", 0) == 0 || s.rfind("~", 0) == 0);
}

}  // namespace

Engine::Impl::Impl(EngineOptions o) : opts(std::move(o)) {
  (void)sched.configure({opts.decode_steps, std::nullopt, opts.task_share});
  std::weak_ptr<Subscribers> w = subs;
  sched.setEventSink([w](const EngineEvent& ev) {
    auto s = w.lock();
    if (!s) return;
    std::vector<std::function<void(const EngineEvent&)>> fns;
    {
      std::lock_guard<std::mutex> lk(s->mu);
      for (auto& [id, f] : s->fns) fns.push_back(f);
    }
    for (auto& f : fns) f(ev);
  });
}

void Engine::Impl::post(Effects fx) {
  if (fx.empty()) return;
  {
    std::lock_guard<std::mutex> lk(cb_mu);
    for (auto& f : fx) cb_queue.push_back(std::move(f));
  }
  cb_cv.notify_one();
}

void Engine::Impl::event(const std::string& type, nlohmann::json data) {
  Effects fx;
  sched.emit(type, std::move(data), fx);  // emit only reads the sink, set once at construction
  post(std::move(fx));
}

void Engine::Impl::callbackLoop() {
  for (;;) {
    std::function<void()> f;
    {
      std::unique_lock<std::mutex> lk(cb_mu);
      cb_cv.wait(lk, [&] { return cb_stop || !cb_queue.empty(); });
      if (cb_queue.empty()) return;  // cb_stop and drained
      f = std::move(cb_queue.front());
      cb_queue.pop_front();
    }
    try {
      f();
    } catch (const std::exception& e) {
      std::cerr << "ewgpu: a callback threw: " << e.what() << "\n";  // the engine goes on
    } catch (...) {
      std::cerr << "ewgpu: a callback threw\n";
    }
  }
}

Status Engine::Impl::ensureContext() {
  if (ctx && !ctx->lost()) return {};
  ctx.reset();
  gpu::ContextOptions co;
  co.adapter = opts.adapter;
  co.robust = opts.robust;
  // Compiled pipelines persist beside the models (gpu/pipeline_cache.h): a second run skips what Dawn can reuse.
  co.pipeline_cache_dir = opts.cache_dir.empty() ? defaultCacheDir() : opts.cache_dir;
  auto c = gpu::Context::create(co);
  if (!c) return std::move(c).error();
  ctx = std::move(*c);
  std::lock_guard<std::mutex> lk(mu);
  device = ctx->info();
  return {};
}

void Engine::Impl::handleFailures(const std::vector<std::pair<std::string, EngineError>>& failures, Effects& fx) {
  bool lost = ctx && ctx->lost();
  for (const auto& [model, e] : failures) lost |= e.code == ErrorCode::kDeviceLost;
  if (!lost) return;  // the failing model's jobs ended; the model stays loaded
  EngineError e = makeError(ErrorCode::kDeviceLost, "the GPU device was lost; load the model again",
                            {{"models", nlohmann::json::array()}});
  for (const auto& [id, r] : models) e.detail["models"].push_back(id);
  sched.failAll(e, fx);
  for (auto& [id, r] : models) {
    std::unique_ptr<RowBackend> b = sched.removeModel(id, fx);
    b.reset();  // before the Forward it points into
    sched.emit("model.unloaded", {{"model", id}, {"reason", "device.lost"}}, fx);
  }
  models.clear();
  current_model.clear();
  ctx.reset();
  device.reset();
  sched.emit("device.lost", {{"error", e.toJson()}}, fx);
}

void Engine::Impl::driverLoop() {
  uint32_t idle_steps = 0;
  for (;;) {
    std::deque<std::function<void(bool)>> cmds;
    {
      std::unique_lock<std::mutex> lk(mu);
      if (!wake && commands.empty() && !sched.inFlight()) {
        if (!sched.hasWork())
          cv.wait(lk, [&] { return stopping || wake || !commands.empty(); });
        else if (idle_steps > 1)  // work that cannot move yet: do not spin
          cv.wait_for(lk, std::chrono::milliseconds(2), [&] { return stopping || wake || !commands.empty(); });
      }
      if (stopping) return;
      wake = false;
      cmds.swap(commands);
    }
    for (auto& c : cmds) c(false);  // uploads and unloads: GPU work, without mu (they lock it to publish)
    Effects fx;
    RowBackend* wait_on = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu);
      std::vector<std::pair<std::string, EngineError>> failures;
      sched.step(fx, &failures);
      handleFailures(failures, fx);
      wait_on = sched.oldestInFlight();
      idle_steps = wait_on ? 0 : idle_steps + 1;
      post(std::move(fx));  // under mu: effects queue in the order the scheduler made them (see post)
    }
    // Only this thread touches backends, so waiting without mu is safe; public calls queue their changes.
    if (wait_on) (void)wait_on->wait();  // a failed wait shows as an error at the next step
  }
}

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions opts) {
  if (opts.rows < 1 || opts.rows > kMaxDecodeRows)
    return makeError(ErrorCode::kBadRequest, "rows must be 1.." + std::to_string(kMaxDecodeRows),
                     {{"field", "rows"}, {"value", opts.rows}});
  if (opts.max_steps < 1 || opts.max_steps > 64)
    return makeError(ErrorCode::kBadRequest, "max_steps must be 1..64", {{"field", "max_steps"}, {"value", opts.max_steps}});
  if (opts.decode_steps < 1 || opts.decode_steps > opts.max_steps)
    return makeError(ErrorCode::kBadRequest, "decode_steps must be 1..max_steps",
                     {{"field", "decodeSteps"}, {"value", opts.decode_steps}, {"max", opts.max_steps}});
  if (!(opts.task_share > 0 && opts.task_share <= 1))
    return makeError(ErrorCode::kBadRequest, "task_share must be in (0, 1]", {{"field", "taskShare"}, {"value", opts.task_share}});
  if (!(opts.submission_ms >= 0 && opts.submission_ms <= 10000))
    return makeError(ErrorCode::kBadRequest, "submission_ms must be in [0, 10000]", {{"field", "submission_ms"}});
  if (opts.default_max_tokens < 1)
    return makeError(ErrorCode::kBadRequest, "default_max_tokens must be at least 1", {{"field", "default_max_tokens"}});
  auto impl = std::make_unique<Impl>(std::move(opts));
  Impl* p = impl.get();
  p->cb_thread = std::thread([p] { p->callbackLoop(); });
  p->driver = std::thread([p] { p->driverLoop(); });
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  chat.completions.engine = this;
  embeddings.engine = this;
}

Engine::~Engine() {
  Impl& m = *impl_;
  m.closing = true;
  {
    std::lock_guard<std::mutex> lk(m.loaders_mu);
    for (auto& t : m.loaders) t.join();
    m.loaders.clear();
  }
  Effects fx;
  std::deque<std::function<void(bool)>> cmds;
  {
    std::lock_guard<std::mutex> lk(m.mu);
    m.stopping = true;
    cmds.swap(m.commands);
  }
  m.cv.notify_all();
  m.driver.join();
  for (auto& c : cmds) c(true);  // loads that never ran resolve with ENGINE_CLOSED
  {
    std::lock_guard<std::mutex> lk(m.mu);
    m.sched.cancelAll(fx);
    for (auto& [id, r] : m.models) m.sched.removeModel(id, fx).reset();
    m.models.clear();
  }
  m.ctx.reset();
  m.post(std::move(fx));
  {
    std::lock_guard<std::mutex> lk(m.cb_mu);
    m.cb_stop = true;
  }
  m.cb_cv.notify_all();
  m.cb_thread.join();
}

// One load in progress: what its stages report and how it ends. Shared by the loader thread and the driver
// command that finishes it (by value: neither outlives the other's use of it).
struct LoadRun {
  Engine::Impl* p;
  std::string id;
  LoadOptions lo;
  std::shared_ptr<Pending<Result<ModelInfo>>> out;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  nlohmann::json stages = nlohmann::json::object();

  std::chrono::steady_clock::time_point last_report{};
  void progress(const std::string& stage, double f, uint64_t bytes = 0, uint64_t total = 0, uint32_t pipelines = 0,
                uint32_t pipelines_total = 0) {
    {
      std::lock_guard<std::mutex> lk(p->mu);
      if (p->loading.count(id)) p->loading[id] = stage;
    }
    last_report = std::chrono::steady_clock::now();
    if (lo.progress)
      p->post({[fn = lo.progress, pr = LoadProgress{id, stage, f, bytes, total, pipelines, pipelines_total}] { fn(pr); }});
    p->event("model.progress", {{"model", id}, {"stage", stage}, {"fraction", f}});
  }
  // Reports from inside a stage at most every 100 ms.
  bool due() const { return std::chrono::steady_clock::now() - last_report > std::chrono::milliseconds(100); }
  void fail(Error e) {
    {
      std::lock_guard<std::mutex> lk(p->mu);
      p->loading.erase(id);
    }
    p->event("model.failed", {{"model", id}, {"error", e.toJson()}});
    finish(std::move(e));
  }
  // The handle completes after every progress callback of this load has run: they go through the callback
  // thread, so the result does too (a streamed load's last progress frame comes before its ready frame).
  void finish(Result<ModelInfo> v) {
    if (!lo.progress) return out->set(std::move(v));
    auto boxed = std::make_shared<Result<ModelInfo>>(std::move(v));
    p->post({[o = out, boxed] { o->set(std::move(*boxed)); }});
  }
  bool cancelled() const { return p->closing.load() || (lo.cancel && lo.cancel->load()); }
};

// What the GPU half of a load built (driver thread only): freed there when the load fails.
struct GpuLoad {
  Status status = makeError(ErrorCode::kCancelled, "load cancelled");  // until buildGpuModel has run
  std::unique_ptr<GpuModel> model;
  std::unique_ptr<Forward> forward;
};

// An embedding model on the driver thread: its Encoder (weights and ops) instead of a Forward and an Executor.
// It is resident but not in the scheduler: embeddings requests run as driver commands (engine_embeddings.cpp).
void loadEncoderOnDriver(Engine::Impl& p, LoadRun& L, std::shared_ptr<ModelAssets> assets, ModelFolder& folder) {
  Status st = p.ensureContext();
  if (!st) return L.fail(std::move(st).error());
  L.progress("upload", 0.85);
  const auto t_up = std::chrono::steady_clock::now();
  auto enc = Encoder::create(*p.ctx, folder);
  if (!enc) return L.fail(std::move(enc).error());
  L.stages["upload"] = msSince(t_up);
  assets->context = (*enc)->maxSequence();
  Resident r;
  r.info = {L.id, assets->dir, assets->config.model_type, std::string(quantName(assets->config.quant)),
            assets->context, (uint32_t)assets->config.vocab, 0, (*enc)->weightBytes(), msSince(L.t0), L.stages};
  r.encoder = std::move(*enc);
  r.assets = assets;
  r.folder = std::make_unique<ModelFolder>(std::move(folder));
  r.keep = L.lo.keep_resident;
  ModelInfo info = r.info;
  {
    std::lock_guard<std::mutex> lk(p.mu);
    p.models.emplace(L.id, std::move(r));
    p.loading.erase(L.id);
    if (p.current_model.empty()) p.current_model = L.id;
  }
  p.evictIdleExcept(L.id);
  L.progress("ready", 1);
  p.event("model.ready", {{"model", L.id}, {"load_ms", info.load_ms}, {"stages", info.load_ms_by_stage}});
  L.finish(std::move(info));
}

// The GPU half of a generative model's load, on the driver thread: the device (first load), the weights (their
// bytes written through the staging ring while the pipelines compile), the Forward.
Status buildGpuModel(LoadRun& L, const ModelFolder& folder, GpuLoad& g) {
  Engine::Impl& p = *L.p;
  const auto t_dev = std::chrono::steady_clock::now();
  EWGPU_TRY(p.ensureContext());
  L.stages["device"] = msSince(t_dev);  // the adapter and device, on the first load (or after a loss)
  L.progress("upload", 0.85);
  auto t_up = std::chrono::steady_clock::now();
  UploadOptions uo;
  UploadStats us;
  uo.stats = &us;
  uint64_t total = 0;
  for (const auto& t : folder.tensors()) total += t.nbytes;
  uo.on_bytes = [&L, total](uint64_t b) {
    if (L.due() || b >= total) L.progress("upload", 0.85, b, total);
  };
  uo.overlap = true;  // the weights are written while the pipelines compile (Forward::create's while_compiling)
  EWGPU_ASSIGN(g.model, uploadModel(*p.ctx, folder, uo));
  L.stages["upload"] = msSince(t_up);
  L.stages["read"] = us.read_ms;  // overlaps "upload" (UploadStats)
  L.stages["upload_buffers"] = us.alloc_ms;
  L.stages["upload_write"] = us.write_ms;
  L.stages["upload_wait"] = us.wait_ms;
  L.progress("pipelines", 0.9);
  auto t_pipe = std::chrono::steady_clock::now();
  ForwardOptions fo;
  fo.max_batch = p.opts.rows;
  fo.slots = p.opts.rows;
  fo.context = p.opts.context;
  fo.max_steps = p.opts.max_steps;
  fo.activations = p.opts.activations;
  p.ctx->setKernelCompiledHook([&L](size_t ready, size_t total) {
    if (L.due() || ready == total) L.progress("pipelines", 0.9, 0, 0, (uint32_t)ready, (uint32_t)total);
  });
  const gpu::CompileStats cs0 = p.ctx->compileStats();
  double copy_ms = 0;
  auto fwd = Forward::create(*p.ctx, *g.model, fo, [&] { return g.model->finishUpload(&copy_ms); });
  p.ctx->setKernelCompiledHook({});
  if (!fwd) return std::move(fwd).error();
  g.forward = std::move(*fwd);
  L.stages["pipelines"] = msSince(t_pipe);
  // Of which: parsing WGSL into shader modules (on this thread), and waiting for Dawn's compiling threads after the
  // ring.
  const gpu::CompileStats cs1 = p.ctx->compileStats();
  L.stages["pipelines_shader_modules"] = cs1.shader_ms - cs0.shader_ms;
  L.stages["pipelines_wait"] = cs1.wait_ms - cs0.wait_ms;
  // The weights written through the staging ring while the pipelines compiled (inside "pipelines").
  if (us.copy_threads) L.stages["upload_ring"] = copy_ms;
  return {};
}

void Engine::Impl::runLoad(const std::string& source, LoadOptions lo, std::shared_ptr<Pending<Result<ModelInfo>>> out) {
  auto run = std::make_shared<LoadRun>(LoadRun{this, lo.id, lo, out});
  LoadRun& L = *run;

  // Resolve: a folder as it is; an id or URL through the store, pulling what is not cached.
  L.progress("resolve", 0);
  std::string dir;
  if (isDirectory(source)) {
    dir = source;
  } else if (looksLikePath(source)) {
    return L.fail(makeError(ErrorCode::kIo, "no such model folder: " + source, {{"path", source}, {"field", "model"}}));
  } else {
    StoreOptions so;
    so.cache_dir = opts.cache_dir;
    auto store = ModelStore::open(so);
    if (!store) return L.fail(std::move(store).error());
    auto r = (*store)->resolve(source);
    if (!r && (r.error().code == ErrorCode::kCacheIncomplete || r.error().code == ErrorCode::kUnknownModel)) {
      PullOptions po;
      po.cancel = lo.cancel ? lo.cancel.get() : &closing;  // the destructor stops a download it would wait for
      po.on_progress = [&L](const DownloadProgress& dp) {
        L.progress("download", dp.bytes_total ? 0.8 * (double)dp.bytes_done / (double)dp.bytes_total : 0,
                   (uint64_t)dp.bytes_done, (uint64_t)dp.bytes_total);
      };
      auto pulled = (*store)->pull(source, lo.id, po);
      if (!pulled) return L.fail(std::move(pulled).error());
      if (L.id.empty()) L.id = pulled->id;
      r = (*store)->resolve(pulled->id);
    }
    if (!r) return L.fail(std::move(r).error());
    dir = *r;
    if (L.id.empty()) L.id = isHttpUrl(source) ? modelIdFromUrl(source) : source;
  }
  if (L.id.empty()) L.id = idForFolder(dir);
  {
    std::lock_guard<std::mutex> lk(mu);
    if (models.count(L.id)) {
      L.finish(models[L.id].info);  // already resident: nothing to do
      return;
    }
    if (loading.count(L.id)) {
      L.finish(makeError(ErrorCode::kBadRequest, "model " + L.id + " is already loading", {{"model", L.id}}));
      return;
    }
    loading[L.id] = "parse";
  }
  event("model.loading", {{"model", L.id}, {"folder", dir}});
  L.stages["resolve"] = msSince(L.t0);
  if (L.cancelled()) return L.fail(makeError(ErrorCode::kCancelled, "load cancelled", {{"model", L.id}}));

  // The folder (config and tensor manifest) is validated here first. Then, for a generative model on the GPU, the
  // driver thread (the only thread that touches the GPU) creates the device, uploads the weights and builds the
  // Forward (command 1) while this thread parses the tokenizer and template (the Qwen3 tokenizer.json takes
  // ~0.6 s); command 2 then builds the executor from both, or fails the load with the parse's error (the GPU
  // objects are freed on the driver thread). Embedding models and injected backends parse first, as before.
  L.progress("parse", 0.8);
  const auto t_parse = std::chrono::steady_clock::now();
  auto folder = ModelFolder::open(dir);
  if (!folder) return L.fail(std::move(folder).error());
  auto shared_folder = std::make_shared<ModelFolder>(std::move(*folder));
  const bool overlap = !opts.backend_factory && !shared_folder->config().isEmbedding();
  auto gpu = std::make_shared<GpuLoad>();
  if (overlap) {
    std::lock_guard<std::mutex> lk(mu);
    commands.push_back([this, run, gpu, shared_folder](bool closing_now) {
      if (closing_now || run->cancelled()) return;  // command 2 reports it
      gpu->status = buildGpuModel(*run, *shared_folder, *gpu);
    });
    wake = true;
    cv.notify_all();
  }
  auto loaded = loadModelAssets(L.id, dir, *shared_folder);
  const double parse_ms = msSince(t_parse);

  std::lock_guard<std::mutex> lk(mu);
  commands.push_back([this, run, loaded = std::make_shared<Result<std::shared_ptr<ModelAssets>>>(std::move(loaded)),
                      gpu = std::move(gpu), shared_folder, parse_ms](bool closing_now) mutable {
    LoadRun& L = *run;
    const std::string& id = L.id;
    L.stages["parse"] = parse_ms;  // beside "device", "upload" and "pipelines" when they overlapped
    if (!*loaded) return L.fail(std::move(*loaded).error());
    std::shared_ptr<ModelAssets> assets = std::move(**loaded);
    if (closing_now) return L.fail(makeError(ErrorCode::kEngineClosed, "the engine was closed", {{"model", id}}));
    if (L.cancelled()) return L.fail(makeError(ErrorCode::kCancelled, "load cancelled", {{"model", id}}));
    Resident r;
    std::unique_ptr<RowBackend> exec;
    Status st;
    uint64_t weight_bytes = 0;
    if (assets->config.isEmbedding()) return loadEncoderOnDriver(*this, L, assets, *shared_folder);
    if (opts.backend_factory) {
      auto b = opts.backend_factory(assets->dir, assets->config, assets->tokenizer);
      if (!b) return L.fail(std::move(b).error());
      exec = std::move(*b);
      assets->context = exec->contextLength();
    } else {
      if (!gpu->status) return L.fail(std::move(gpu->status).error());
      // Warm-up: the Forward's first submission (cache and state initialisation) and the wait for it.
      const auto t_warm = std::chrono::steady_clock::now();
      st = ctx->finish();
      if (!st) return L.fail(std::move(st).error());
      L.stages["warmup"] = msSince(t_warm);
      assets->context = gpu->forward->contextLength();
      exec = std::make_unique<Executor>(*ctx, *gpu->forward, &assets->tokenizer, opts.decode_steps, opts.submission_ms);
      weight_bytes = gpu->model->weight_bytes;
      r.model = std::move(gpu->model);
      r.forward = std::move(gpu->forward);
    }
    r.info = {id, assets->dir, assets->config.model_type, std::string(quantName(assets->config.quant)),
              assets->context, (uint32_t)assets->config.vocab, exec->rowCapacity(), weight_bytes, msSince(L.t0),
              L.stages};
    r.assets = assets;
    r.folder = std::make_unique<ModelFolder>(std::move(*shared_folder));
    r.keep = L.lo.keep_resident;
    ModelInfo info = r.info;
    {
      std::lock_guard<std::mutex> lk2(mu);
      st = sched.addModel(id, std::move(exec));
      if (st) {
        models.emplace(id, std::move(r));
        loading.erase(id);
        if (current_model.empty()) current_model = id;
      }
    }
    if (!st) return L.fail(std::move(st).error());
    evictIdleExcept(id);
    L.progress("ready", 1);
    event("model.ready", {{"model", id}, {"load_ms", info.load_ms}, {"stages", info.load_ms_by_stage}});
    L.finish(std::move(info));
  });
  wake = true;
  cv.notify_all();
}

LoadHandle Engine::load(const std::string& source, LoadOptions opts) {
  auto out = std::make_shared<Pending<Result<ModelInfo>>>();
  if (source.empty()) {
    out->set(makeError(ErrorCode::kBadRequest, "no model given", {{"field", "model"}}));
    return out;
  }
  if (impl_->closing) {
    out->set(makeError(ErrorCode::kEngineClosed, "the engine was closed"));
    return out;
  }
  Impl* p = impl_.get();
  std::lock_guard<std::mutex> lk(p->loaders_mu);
  p->loaders.emplace_back([p, source, opts = std::move(opts), out]() mutable {
    try {
      p->runLoad(source, std::move(opts), out);
    } catch (const std::exception& e) {
      out->set(makeError(ErrorCode::kInternal, std::string("load failed: ") + e.what()));
    }
  });
  return out;
}

std::optional<Resident> Engine::Impl::takeResidentLocked(const std::string& id) {
  auto it = models.find(id);
  if (it == models.end()) return std::nullopt;
  std::optional<Resident> r(std::move(it->second));
  models.erase(it);
  if (current_model == id) current_model = models.empty() ? "" : models.begin()->first;
  return r;
}

DetachedModel Engine::Impl::detachLocked(const std::string& id, Effects& fx) {
  DetachedModel d;
  d.backend = sched.removeModel(id, fx);
  d.resident = takeResidentLocked(id);
  sched.emit("model.unloaded", {{"model", id}}, fx);
  return d;
}

// A newly loaded model replaces the others that were not loaded with keep_resident and have no work.
void Engine::Impl::evictIdleExcept(const std::string& keep_id) {
  std::vector<std::string> idle;
  {
    std::lock_guard<std::mutex> lk(mu);
    for (const auto& [id, r] : models)
      if (id != keep_id && !r.keep && !sched.modelBusy(id)) idle.push_back(id);
  }
  for (const auto& id : idle) {
    Effects fx;
    DetachedModel d;
    {
      std::lock_guard<std::mutex> lk(mu);
      d = detachLocked(id, fx);
      post(std::move(fx));
    }
    d.destroy();
  }
}

Status Engine::use(const std::string& id) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  if (!impl_->models.count(id))
    return makeError(impl_->loading.count(id) ? ErrorCode::kNoModel : ErrorCode::kUnknownModel,
                     impl_->loading.count(id) ? "model " + id + " is still loading" : "model " + id + " is not loaded",
                     {{"model", id}, {"field", "model"}});
  impl_->current_model = id;
  return {};
}

Status Engine::unload(const std::string& id_in) {
  std::string id;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    id = id_in.empty() ? impl_->current_model : id_in;
    if (id.empty()) return makeError(ErrorCode::kNoModel, "no model is loaded");
    if (!impl_->models.count(id))
      return makeError(ErrorCode::kUnknownModel, "model " + id + " is not loaded", {{"model", id}, {"field", "model"}});
    // The model leaves `models` at once, so the caller's next look (resident(), state(), /v1/models, a request
    // naming it, a load of the same id) no longer finds it. Its jobs and rows leave the scheduler on the driver
    // thread, the only one that stops rows, in the command's turn: a load of the same id queues its upload after.
    Impl* p = impl_.get();
    auto held = std::make_shared<DetachedModel>();
    held->resident = p->takeResidentLocked(id);
    p->commands.push_back([p, id, held](bool) {  // also when closing (the driver has stopped): before the context goes
      Effects fx;
      DetachedModel d;
      {
        std::lock_guard<std::mutex> lk(p->mu);
        d = p->detachLocked(id, fx);
        p->post(std::move(fx));
      }
      d.destroy();  // the executor, then the Forward and weights it used
      held->destroy();
    });
    p->wake = true;
  }
  impl_->cv.notify_all();
  return {};
}

void Engine::unloadAll() {
  for (const auto& id : resident()) (void)unload(id);
}

std::vector<std::string> Engine::resident() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  std::vector<std::string> ids;
  for (const auto& [id, r] : impl_->models) ids.push_back(id);
  return ids;
}

std::string Engine::current() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->current_model;
}

// Runs `change` on the scheduler under the engine's mutex, wakes the driver and hands the effects over.
template <class F>
auto Engine::Impl::changeScheduler(F change) {
  Effects fx;
  decltype(change(fx)) r;
  {
    std::lock_guard<std::mutex> lk(mu);
    r = change(fx);
    wake = true;
    post(std::move(fx));
  }
  cv.notify_all();
  return r;
}

size_t Engine::cancel(uint64_t job_id) {
  return impl_->changeScheduler([&](Effects& fx) { return impl_->sched.cancel(job_id, fx); });
}

size_t Engine::cancel(const std::string& s) {
  std::string digits = s.rfind("job-", 0) == 0 ? s.substr(4) : s;
  if (!digits.empty() && digits.size() < 20 && std::all_of(digits.begin(), digits.end(), ::isdigit))
    return cancel((uint64_t)std::stoull(digits));
  return impl_->changeScheduler([&](Effects& fx) { return impl_->sched.cancelSession(s, fx); });
}

Status Engine::configure(const EngineConfig& c) {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    EWGPU_TRY(impl_->sched.configure(c));
    impl_->wake = true;
  }
  impl_->cv.notify_all();
  Features f = features();
  impl_->event("config.changed", f.toJson());
  return {};
}

std::function<void()> Engine::subscribe(std::function<void(const EngineEvent&)> fn) {
  auto subs = impl_->subs;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lk(subs->mu);
    id = subs->next++;
    subs->fns[id] = std::move(fn);
  }
  std::weak_ptr<Subscribers> w = subs;
  return [w, id] {
    if (auto s = w.lock()) {
      std::lock_guard<std::mutex> lk(s->mu);
      s->fns.erase(id);
    }
  };
}

EngineState Engine::state() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  EngineState s = impl_->sched.state();
  for (auto& m : s.models) {
    auto it = impl_->models.find(m.id);
    if (it == impl_->models.end()) continue;
    m.folder = it->second.assets->dir;
    m.keep_resident = it->second.keep;
    m.current = m.id == impl_->current_model;
  }
  for (const auto& [id, r] : impl_->models) {  // embedding models: resident, not in the scheduler
    if (!r.encoder) continue;
    ModelState m;
    m.id = id;
    m.status = "ready";
    m.folder = r.assets->dir;
    m.keep_resident = r.keep;
    m.current = id == impl_->current_model;
    m.context_window = r.assets->context;
    s.models.push_back(m);
  }
  for (const auto& [id, stage] : impl_->loading) {
    ModelState m;
    m.id = id;
    m.status = "loading";
    s.models.push_back(m);
  }
  return s;
}

Features Engine::features() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  const SchedulerConfig& c = impl_->sched.config();
  Features f;
  f.decode_steps = c.decode_steps;
  f.max_rows = impl_->opts.rows;
  f.rows = c.rows ? std::min(c.rows, impl_->opts.rows) : impl_->opts.rows;
  f.task_share = c.task_share;
  f.batched_decode = f.rows > 1;
  return f;
}

Result<DeviceInfo> Engine::probe() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    if (impl_->device) return *impl_->device;
  }
  auto out = std::make_shared<Pending<Result<DeviceInfo>>>();
  Impl* p = impl_.get();
  {
    std::lock_guard<std::mutex> lk(p->mu);
    if (p->stopping) return makeError(ErrorCode::kEngineClosed, "the engine was closed");
    p->commands.push_back([p, out](bool closing) {
      if (closing) return out->set(makeError(ErrorCode::kEngineClosed, "the engine was closed"));
      Status st = p->ensureContext();
      if (!st) return out->set(std::move(st).error());
      out->set(p->ctx->info());
    });
    p->wake = true;
  }
  p->cv.notify_all();
  return out->wait();
}

Result<FitReport> Engine::canRun(const std::string& id) {
  auto dev = probe();
  if (!dev) return std::move(dev).error();
  StoreOptions so;
  so.cache_dir = impl_->opts.cache_dir;
  auto store = ModelStore::open(so);
  if (!store) return std::move(store).error();
  return ewgpu::canRun(**store, id, *dev);
}

Result<std::vector<Recommendation>> Engine::recommendModels(const RecommendOptions& o) {
  auto dev = probe();
  if (!dev) return std::move(dev).error();
  return ewgpu::recommendModels(*dev, o);
}

// Projected decode speed before anything has decoded: weight bytes read per token over the effective weight
// bandwidth measured on this project's reference adapters (docs/benchmarks.md): about 0.8 TB/s on the H200
// (Llama-3.2-1B: 695 MB per token at 1201 tok/s) and about 0.1 GB/s on SwiftShader with two cores.
Result<SpeedEstimate> Engine::estimateSpeed(const std::string& id_in) {
  std::string id;
  uint64_t bytes = 0;
  bool cpu = false;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    id = id_in.empty() ? impl_->current_model : id_in;
    if (id.empty()) return makeError(ErrorCode::kNoModel, "no model is loaded", {{"field", "model"}});
    const double measured = impl_->sched.measuredDecodeTokS(id);
    if (measured > 0) return SpeedEstimate{measured, "measured"};
    auto it = impl_->models.find(id);
    if (it != impl_->models.end()) bytes = it->second.info.weight_bytes;
    if (impl_->device) cpu = impl_->device->cpuAdapter();
  }
  if (bytes == 0) {
    StoreOptions so;
    so.cache_dir = impl_->opts.cache_dir;
    auto store = ModelStore::open(so);
    if (!store) return std::move(store).error();
    auto rec = (*store)->record(id);
    if (!rec) return std::move(rec).error();
    for (const auto& f : rec->files)
      if (f.name.rfind("params_shard_", 0) == 0 && f.size > 0) bytes += (uint64_t)f.size;
    if (bytes == 0)
      if (const CatalogEntry* e = findPrebuilt(id))
        bytes = (uint64_t)(paramsFromId(e->model_id) * 1e9 * bitsPerWeight(e->quantization) / 8);
    if (bytes == 0) return makeError(ErrorCode::kUnknownModel, "no size is known for " + id, {{"model", id}});
  }
  auto dev = probe();
  if (dev) cpu = dev->cpuAdapter();
  const double bandwidth = cpu ? 0.1e9 : 0.8e12;
  return SpeedEstimate{bandwidth / (double)bytes, "projected"};
}

std::string Engine::tokenText(const std::string& model, int32_t id) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  auto it = impl_->models.find(model);
  if (it == impl_->models.end()) return {};
  const int32_t ids[1] = {id};
  return it->second.assets->tokenizer.decode(ids);
}

}  // namespace ewgpu
