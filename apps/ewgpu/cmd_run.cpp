// ewgpu run MODEL [PROMPT]: generate text from a model folder or a store id, streaming it to stdout, then the
// timings (time to first token, prefill and decode tok/s) on stderr. Flags are parsed and checked first
// (run_flags.h); a catalogue id that is not cached is pulled (unless --no-pull); the load draws a progress line
// on a terminal; Ctrl-C stops the generation cleanly (newline, timings, "interrupted", exit 130), a second one
// ends the process at once.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "run_flags.h"
#include "runtime/local_engine.h"
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

int runRun(RunOptions& o) {
  const bool json = o.json;
  if (Status st = checkRunOptions(o, ::isatty(0) == 1); !st) return usageError(st.error().message, json);
  installInterruptHandler();
  setInterruptImmediate(true);  // until generation starts there is nothing to finish cleanly
  auto dir = modelDir(o);
  if (!dir) return reportError(dir.error(), json);

  LocalEngineOptions lo;
  lo.gpu.adapter = o.adapter;
  if (o.context) lo.forward.context = *o.context;
  lo.forward.max_steps = kRunMaxSteps;
  lo.forward.activations = o.activations;
  std::unique_ptr<LoadProgressLine> line;
  if (!json && stderrIsTerminal()) {
    line = std::make_unique<LoadProgressLine>(o.model);
    lo.on_progress = [&line](const LocalLoadProgress& p) { line->update(p); };
  }
  auto eng = LocalEngine::load(*dir, lo);
  if (line) line->finish();
  if (!eng) return reportError(eng.error(), json);
  LocalEngine& e = *eng;
  const ModelConfig& cfg = e.model->config;
  if (o.context && cfg.context_window > 0 && *o.context > (uint32_t)cfg.context_window)
    return reportError(makeError(ErrorCode::kBadRequest,
                                 "--context " + std::to_string(*o.context) + " exceeds the model's context window",
                                 {{"flag", "--context"}, {"context_window", cfg.context_window}}),
                       json);

  std::vector<int32_t> ids;
  if (o.chat && e.conv) {
    std::vector<ChatMessage> msgs;
    if (o.system) msgs.push_back({"system", *o.system});
    msgs.push_back({"user", o.prompt});
    auto r = e.conv->renderTokens(*e.tokenizer, msgs);
    if (!r) return reportError(r.error(), json);
    ids = std::move(*r);
  } else {
    ids = e.tokenizer->encode(o.prompt);
  }

  GenerationRequest req;
  req.prompt = ids;
  req.sampling = defaultSampling(cfg, e.conv ? &*e.conv : nullptr);
  req.sampling.max_tokens = o.max_tokens;
  if (e.conv) req.stop_strings = e.conv->stopStrings();
  o.sampling.applyTo(req.sampling);
  for (const auto& s : o.stop) req.stop_strings.push_back(s);
  const uint32_t steps = o.steps;

  Generator gen(*e.ctx, *e.forward, &*e.tokenizer, steps);
  Status st = gen.setSteps(steps);
  if (!st) return reportError(st.error(), json);
  GenerationResult result;
  GenerationCallbacks cb;
  uint64_t seq = 0;
  bool cancelled = false;
  // Ctrl-C: the first interrupt cancels the sequence at its next readback (it finishes with "abort" and the text
  // so far); the handler ends the process at once on the second.
  auto checkInterrupt = [&] {
    if (interrupted() && !cancelled && seq) cancelled = gen.cancel(seq);
  };
  cb.on_text = [&](const std::string& d) {
    if (!json) {
      std::fwrite(d.data(), 1, d.size(), stdout);
      std::fflush(stdout);
    }
    checkInterrupt();
  };
  cb.on_done = [&](const GenerationResult& r) { result = r; };
  auto id = gen.submit(req, cb);
  if (!id) return reportError(id.error(), json);
  seq = *id;
  setInterruptImmediate(false);
  checkInterrupt();  // an interrupt that came during the load
  st = gen.runToCompletion();
  if (result.error) return reportError(*result.error, json);
  if (!st) return reportError(st.error(), json);
  const bool was_interrupted = interrupted();
  const double prefill_tps = result.prefill_ms > 0 ? result.prompt_tokens / (result.prefill_ms / 1000) : 0;
  const double decode_tps =
      result.decode_ms > 0 && result.completion_tokens > 1 ? (result.completion_tokens - 1) / (result.decode_ms / 1000) : 0;
  if (json) {
    nlohmann::json j = {{"model", cfg.model_type},
                        {"text", result.text},
                        {"tokens", result.tokens},
                        {"finish_reason", result.finish_reason},
                        {"interrupted", was_interrupted},
                        {"usage", {{"prompt_tokens", result.prompt_tokens}, {"completion_tokens", result.completion_tokens}}},
                        {"timings",
                         {{"load_ms", e.load_ms}, {"ttft_ms", result.ttft_ms}, {"prefill_tok_s", prefill_tps},
                          {"decode_tok_s", decode_tps}, {"decode_steps_per_sync", steps}}},
                        {"device", e.ctx->info().device}};
    std::cout << j.dump(2) << "\n";
    return was_interrupted ? kExitInterrupted : 0;
  }
  std::fprintf(stderr, "\n\n[%s on %s] prompt %u tokens, generated %u (%s); load %.0f ms, TTFT %.1f ms, "
                       "prefill %.1f tok/s, decode %.1f tok/s (K=%u)\n",
               cfg.model_type.c_str(), e.ctx->info().device.c_str(), result.prompt_tokens, result.completion_tokens,
               result.finish_reason.c_str(), e.load_ms, result.ttft_ms, prefill_tps, decode_tps, steps);
  if (was_interrupted) {
    std::fprintf(stderr, "interrupted\n");
    return kExitInterrupted;
  }
  return 0;
}

Registration reg{{"run", "generate from a model folder or store id, streaming text; prints TTFT and tok/s",
                  [](CLI::App& app) {
                    auto o = std::make_shared<RunOptions>();
                    addRunFlags(app, *o);
                    return [o] { return runRun(*o); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
