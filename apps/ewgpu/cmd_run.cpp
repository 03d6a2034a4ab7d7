// ewgpu run MODEL [PROMPT]: generate text from a model folder or a store id, streaming it to stdout, then the
// timings (time to first token, prefill and decode tok/s) on stderr.
#include "command.h"
#include "runtime/local_engine.h"
#include "store/model_store.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace ewgpu::cli {
namespace {

const std::vector<std::string> kValued = {"--max-tokens", "--temperature", "--top-p", "--top-k", "--seed", "--steps",
                                          "--system", "--adapter", "--cache-dir", "--context", "--file", "--stop",
                                          "--activations"};

Result<std::string> modelDir(const std::string& arg, const Args& args) {
  StoreOptions so;
  if (auto c = flagValue(args, "--cache-dir")) so.cache_dir = *c;
  auto store = ModelStore::open(so);
  if (!store) return std::move(store).error();
  return resolveModelDir(arg, **store);
}

int runRun(const Args& args) {
  const bool json = hasFlag(args, "--json");
  auto pos = positionals(args, kValued);
  if (pos.empty()) {
    std::fprintf(stderr, "usage: ewgpu run MODEL [PROMPT] [--chat] [--max-tokens N] ...\n");
    return 2;
  }
  std::string prompt = pos.size() > 1 ? pos[1] : "";
  if (auto f = flagValue(args, "--file")) {
    std::ifstream in(*f);
    if (!in) return reportError(makeError(ErrorCode::kBadRequest, "cannot read " + *f, {{"file", *f}}), json);
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }
  if (prompt.empty()) prompt = "Hello";
  auto dir = modelDir(pos[0], args);
  if (!dir) return reportError(dir.error(), json);

  LocalEngineOptions lo;
  if (auto a = flagValue(args, "--adapter")) lo.gpu.adapter = *a;
  if (auto c = flagValue(args, "--context")) lo.forward.context = (uint32_t)std::stoul(*c);
  lo.forward.max_steps = 32;
  auto act = activationsFlag(args);
  if (!act) return reportError(act.error(), json);
  lo.forward.activations = *act;
  auto eng = LocalEngine::load(*dir, lo);
  if (!eng) return reportError(eng.error(), json);
  LocalEngine& e = *eng;
  const ModelConfig& cfg = e.model->config;

  std::vector<int32_t> ids;
  if (hasFlag(args, "--chat") && e.conv) {
    std::vector<ChatMessage> msgs;
    if (auto s = flagValue(args, "--system")) msgs.push_back({"system", *s});
    msgs.push_back({"user", prompt});
    auto r = e.conv->renderTokens(*e.tokenizer, msgs);
    if (!r) return reportError(r.error(), json);
    ids = std::move(*r);
  } else {
    ids = e.tokenizer->encode(prompt);
  }

  GenerationRequest req;
  req.prompt = ids;
  req.sampling = defaultSampling(cfg, e.conv ? &*e.conv : nullptr);
  req.sampling.max_tokens = 128;
  if (e.conv) req.stop_strings = e.conv->stopStrings();
  if (auto v = flagValue(args, "--max-tokens")) req.sampling.max_tokens = (uint32_t)std::stoul(*v);
  applySamplingFlags(args, req.sampling);
  if (auto v = flagValue(args, "--stop")) req.stop_strings.push_back(*v);
  uint32_t steps = 16;
  if (auto v = flagValue(args, "--steps")) steps = (uint32_t)std::stoul(*v);

  Generator gen(*e.ctx, *e.forward, &*e.tokenizer, steps);
  Status st = gen.setSteps(steps);
  if (!st) return reportError(st.error(), json);
  GenerationResult result;
  GenerationCallbacks cb;
  if (!json)
    cb.on_text = [](const std::string& d) {
      std::fwrite(d.data(), 1, d.size(), stdout);
      std::fflush(stdout);
    };
  cb.on_done = [&](const GenerationResult& r) { result = r; };
  auto id = gen.submit(req, cb);
  if (!id) return reportError(id.error(), json);
  st = gen.runToCompletion();
  if (result.error) return reportError(*result.error, json);
  if (!st) return reportError(st.error(), json);
  const double prefill_tps = result.prefill_ms > 0 ? result.prompt_tokens / (result.prefill_ms / 1000) : 0;
  const double decode_tps =
      result.decode_ms > 0 && result.completion_tokens > 1 ? (result.completion_tokens - 1) / (result.decode_ms / 1000) : 0;
  if (json) {
    nlohmann::json j = {{"model", cfg.model_type},
                        {"text", result.text},
                        {"tokens", result.tokens},
                        {"finish_reason", result.finish_reason},
                        {"usage", {{"prompt_tokens", result.prompt_tokens}, {"completion_tokens", result.completion_tokens}}},
                        {"timings",
                         {{"load_ms", e.load_ms}, {"ttft_ms", result.ttft_ms}, {"prefill_tok_s", prefill_tps},
                          {"decode_tok_s", decode_tps}, {"decode_steps_per_sync", steps}}},
                        {"device", e.ctx->info().device}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::fprintf(stderr, "\n\n[%s on %s] prompt %u tokens, generated %u (%s); load %.0f ms, TTFT %.1f ms, "
                       "prefill %.1f tok/s, decode %.1f tok/s (K=%u)\n",
               cfg.model_type.c_str(), e.ctx->info().device.c_str(), result.prompt_tokens, result.completion_tokens,
               result.finish_reason.c_str(), e.load_ms, result.ttft_ms, prefill_tps, decode_tps, steps);
  return 0;
}

Registration reg{{"run", "run MODEL [PROMPT] [--chat] [--max-tokens N] [--temperature T] [--top-p P] [--seed S] "
                         "[--steps K] [--activations auto|f32|int8|int16] [--json]",
                  "generate from a model folder or store id, streaming text; prints TTFT and tok/s", runRun}};

}  // namespace
}  // namespace ewgpu::cli
