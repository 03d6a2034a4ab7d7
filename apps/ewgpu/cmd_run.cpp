// ewgpu run [MODEL] [PROMPT]: generate text through the engine (include/ewgpu/engine.h) from a model folder, a
// store id or a URL (the built-in default model when the first argument names no model: run_target.h), streaming
// it to stdout, then the timings (time to first token, prefill and decode tok/s) on
// stderr. Flags are parsed and checked first (run_flags.h); a catalogue id that is not cached is pulled (unless
// --no-pull); the load draws a progress line on a terminal; Ctrl-C stops the generation cleanly (newline,
// timings, "interrupted", exit 130), a second one ends the process at once. With no prompt on a terminal it is
// `ewgpu chat MODEL` (chat_repl.h), as `ollama run` is.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "chat_repl.h"
#include "command.h"
#include "ewgpu/engine.h"
#include "run_flags.h"
#include "run_target.h"
#include "store/model_store.h"
#include "terminal.h"

namespace ewgpu::cli {
namespace {

// The folder to load: a folder path as is, a cached id or URL; an uncached pullable id is pulled first.
Result<std::string> modelDir(const RunOptions& o) {
  StoreOptions so;
  so.cache_dir = o.cache_dir;
  auto store = ModelStore::open(so);
  if (!store) return std::move(store).error();
  auto dir = resolveModelDir(o.model, **store);
  if (dir || dir.error().code != ErrorCode::kCacheIncomplete || o.no_pull) return dir;
  auto rec = (*store)->record(o.model);
  if (!rec || rec->source == SourceKind::kLocal) return dir;  // a local model never reaches the network
  const bool show = !o.json && stderrIsTerminal();
  auto pulled = (*store)->pull(o.model, "", terminalPullOptions(o.model, show));
  if (show) std::fprintf(stderr, "\n");
  if (!pulled) return std::move(pulled).error();
  return resolveModelDir(o.model, **store);
}

// The engine's load stages on the progress line (the upload's rate is timed from its first report).
struct LineProgress {
  std::chrono::steady_clock::time_point upload_start{};
  LocalLoadProgress operator()(const LoadProgress& p) {
    LocalLoadProgress l;
    const auto now = std::chrono::steady_clock::now();
    if (p.stage == "upload" || p.stage == "pipelines" || p.stage == "ready") {
      if (upload_start == std::chrono::steady_clock::time_point{}) upload_start = now;
      l.stage = p.stage == "upload" ? LocalLoadProgress::Stage::kUpload
                : p.stage == "pipelines" ? LocalLoadProgress::Stage::kPipelines
                                         : LocalLoadProgress::Stage::kDone;
      if (p.stage == "upload") {
        last_bytes = p.bytes;
        upload_ms = std::chrono::duration<double, std::milli>(now - upload_start).count();
      }
      l.bytes_uploaded = last_bytes;
      l.upload_ms = upload_ms;
      if (p.stage == "pipelines") pipelines = p.pipelines, pipelines_total = p.pipelines_total;
      l.pipelines = pipelines;
      l.pipelines_total = pipelines_total;
    }
    return l;
  }
  uint64_t last_bytes = 0;
  double upload_ms = 0;
  size_t pipelines = 0, pipelines_total = 0;
};

int runRun(RunOptions& o) {
  const bool json = o.json;
  // [MODEL] [PROMPT]: a lone first word that names no model is the default model's prompt; no word at all runs
  // the default model (on "Once upon a time" unless a prompt comes from -p, --file or stdin).
  if (o.model_flag.empty()) {
    std::vector<std::string> pos;
    if (!o.model_arg.empty()) pos.push_back(o.model_arg);
    if (o.prompt_arg) pos.push_back(*o.prompt_arg);
    StoreOptions so;
    so.cache_dir = o.cache_dir;
    auto target = resolveRunTarget(pos, so);
    if (!target) return reportError(target.error(), json);
    o.model_arg = target->model;
    o.prompt_arg = target->prompt;
  }
  const bool repl = !o.prompt_arg && !o.prompt_flag && !o.prompt_file && !json && ::isatty(0) == 1;
  if (repl) {  // checkRunOptions needs a prompt; the chat asks for each turn instead
    o.prompt_arg = "-";
    o.chat = true;
  }
  if (Status st = checkRunOptions(o, ::isatty(0) == 1); !st) return usageError(st.error().message, json);
  installInterruptHandler();
  setInterruptImmediate(true);  // until generation starts there is nothing to finish cleanly
  auto dir = modelDir(o);
  if (!dir) return reportError(dir.error(), json);
  auto cfg = loadModelConfig(*dir + "/mlc-chat-config.json");
  if (!cfg) return reportError(cfg.error(), json);
  if (o.context && *o.context > cfg->contextLength())
    return reportError(makeError(ErrorCode::kBadRequest,
                                 "--context " + std::to_string(*o.context) + " exceeds the model's context window",
                                 {{"flag", "--context"}, {"context_window", cfg->contextLength()}}),
                       json);

  EngineOptions eo;
  eo.adapter = o.adapter;
  eo.cache_dir = o.cache_dir;
  eo.rows = 1;
  eo.context = o.context.value_or(0);
  eo.max_steps = kRunMaxSteps;
  eo.decode_steps = o.steps;
  eo.submission_ms = 0;  // one caller: K steps per submission, as asked
  eo.activations = o.activations;
  std::unique_ptr<LoadProgressLine> line;  // outlives the engine, whose callback thread draws it
  auto engine = Engine::create(eo);
  if (!engine) return reportError(engine.error(), json);
  LoadOptions lo;
  lo.id = o.model;
  if (!json && stderrIsTerminal()) {
    line = std::make_unique<LoadProgressLine>(o.model);
    lo.progress = [l = line.get(), conv = std::make_shared<LineProgress>()](const LoadProgress& p) {
      l->update((*conv)(p));
    };
  }
  LoadHandle load = (*engine)->load(*dir, lo);
  const Result<ModelInfo>& loaded = load->wait();
  if (line) line->finish();
  if (!loaded) return reportError(loaded.error(), json);

  if (repl) {
    ChatOptions co;
    co.model = loaded->id;
    co.system = o.system.value_or("");
    co.sampling.max_tokens = o.max_tokens;
    co.sampling.temperature = o.sampling.temperature;
    co.sampling.top_p = o.sampling.top_p;
    co.sampling.top_k = o.sampling.top_k;
    co.sampling.seed = o.sampling.seed;  // unset: a fresh seed per turn
    co.sampling.stop = o.stop;
    return runChatRepl(**engine, co, stdin, stdout);
  }

  CompletionRequest req;
  if (o.chat) {
    if (o.system) req.messages.push_back({"system", *o.system});
    req.messages.push_back({"user", o.prompt});
  } else {
    req.prompt = o.prompt;
  }
  req.max_tokens = o.max_tokens;
  req.temperature = o.sampling.temperature;
  req.top_p = o.sampling.top_p;
  req.top_k = o.sampling.top_k;
  req.seed = o.sampling.seed.value_or(0);  // reproducible unless asked otherwise
  req.stop = o.stop;
  req.logprobs = json;  // the JSON output lists the token ids
  req.priority = Priority::kInteractive;
  std::function<void(const Chunk&)> print;
  if (!json)
    print = [](const Chunk& c) {
      std::fwrite(c.delta.data(), 1, c.delta.size(), stdout);
      std::fflush(stdout);
    };
  auto job = (*engine)->complete(req, print);
  if (!job) return reportError(job.error(), json);
  setInterruptImmediate(false);
  // Ctrl-C: the first interrupt cancels the job (it ends with "abort" and the text so far); the handler ends the
  // process at once on the second.
  bool cancelled = false;
  while (!(*job)->result->waitFor(50))
    if (interrupted() && !cancelled) cancelled = (*engine)->cancel((*job)->id) > 0;
  const CompletionResult& r = (*job)->wait();
  if (r.error) return reportError(*r.error, json);
  const bool was_interrupted = interrupted();
  DeviceInfo dev;
  if (auto d = (*engine)->probe()) dev = *d;
  if (json) {
    std::vector<int32_t> ids;
    for (const auto& t : r.logprobs) ids.push_back(t.id);
    nlohmann::json j = {{"model", loaded->model_type},
                        {"text", r.text},
                        {"tokens", ids},
                        {"finish_reason", r.finish_reason},
                        {"interrupted", was_interrupted},
                        {"usage", {{"prompt_tokens", r.usage.prompt_tokens}, {"completion_tokens", r.usage.completion_tokens}}},
                        {"timings",
                         {{"load_ms", loaded->load_ms}, {"load_ms_by_stage", loaded->load_ms_by_stage},
                          {"ttft_ms", r.timings.ttft_ms}, {"prefill_tok_s", r.timings.prefill_tok_s},
                          {"decode_tok_s", r.timings.decode_tok_s}, {"decode_steps_per_sync", o.steps}}},
                        {"device", dev.device}};
    std::cout << j.dump(2) << "\n";
    return was_interrupted ? kExitInterrupted : 0;
  }
  std::fprintf(stderr, "\n\n[%s on %s] prompt %u tokens, generated %u (%s); load %.0f ms, TTFT %.1f ms, "
                       "prefill %.1f tok/s, decode %.1f tok/s (K=%u)\n",
               loaded->model_type.c_str(), dev.device.c_str(), r.usage.prompt_tokens, r.usage.completion_tokens,
               r.finish_reason.c_str(), loaded->load_ms, r.timings.ttft_ms, r.timings.prefill_tok_s,
               r.timings.decode_tok_s, o.steps);
  if (was_interrupted) {
    std::fprintf(stderr, "interrupted\n");
    return kExitInterrupted;
  }
  return 0;
}

Registration reg{{"run", "generate through the engine from a model folder or store id, streaming text; prints TTFT and tok/s",
                  [](CLI::App& app) {
                    auto o = std::make_shared<RunOptions>();
                    addRunFlags(app, *o);
                    return [o] { return runRun(*o); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
