// ewgpu run MODEL [PROMPT]: generate text through the engine (include/ewgpu/engine.h) from a model folder, a
// store id or a URL, streaming it to stdout, then the timings (time to first token, prefill and decode tok/s)
// on stderr. With no prompt on a terminal it is `ewgpu chat MODEL` (chat_repl.h), as `ollama run` is.
#include "chat_repl.h"
#include "command.h"
#include "ewgpu/engine.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace ewgpu::cli {
namespace {

const std::vector<std::string> kValued = {"--max-tokens", "--temperature", "--top-p", "--top-k", "--seed", "--steps",
                                          "--system", "--adapter", "--cache-dir", "--context", "--file", "--stop",
                                          "--activations"};

Result<uint32_t> countFlag(const Args& args, const std::string& name, uint64_t lo, uint64_t hi, uint32_t dflt) {
  auto v = flagValue(args, name);
  if (!v) return dflt;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0 || n < (long long)lo || (uint64_t)n > hi)
    return makeError(ErrorCode::kBadRequest,
                     name + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                     {{"field", name}, {"value", *v}});
  return (uint32_t)n;
}

Result<std::optional<float>> numberFlag(const Args& args, const std::string& name) {
  auto v = flagValue(args, name);
  if (!v) return std::optional<float>{};
  char* end = nullptr;
  const float f = std::strtof(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !std::isfinite(f))
    return makeError(ErrorCode::kBadRequest, name + " must be a number", {{"field", name}, {"value", *v}});
  return std::optional<float>{f};
}

int runRun(const Args& args) {
  const bool json = hasFlag(args, "--json");
  auto pos = positionals(args, kValued);
  if (pos.empty()) {
    std::fprintf(stderr, "usage: ewgpu run MODEL [PROMPT] [--chat] [--max-tokens N] ...\n");
    return 2;
  }
  std::string prompt = pos.size() > 1 ? pos[1] : "";
  const bool repl = pos.size() == 1 && !flagValue(args, "--file") && !json && isatty(fileno(stdin));
  if (auto f = flagValue(args, "--file")) {
    std::ifstream in(*f);
    if (!in) return reportError(makeError(ErrorCode::kBadRequest, "cannot read " + *f, {{"file", *f}}), json);
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }
  if (prompt.empty()) prompt = "Hello";

  // Every flag is checked before the model loads.
  auto max_tokens = countFlag(args, "--max-tokens", 1, 1u << 30, 128);
  auto steps = countFlag(args, "--steps", 1, 32, 16);
  auto context = countFlag(args, "--context", 0, 1u << 24, 0);
  auto top_k = countFlag(args, "--top-k", 0, 1u << 30, 0);
  auto temperature = numberFlag(args, "--temperature");
  auto top_p = numberFlag(args, "--top-p");
  auto act = activationsFlag(args);
  Status bad;
  auto check = [&](const auto& r) {
    if (!r && bad.ok()) bad = r.error();
  };
  check(max_tokens);
  check(steps);
  check(context);
  check(top_k);
  check(temperature);
  check(top_p);
  check(act);
  if (!bad) return reportError(bad.error(), json);

  CompletionRequest req;
  if (hasFlag(args, "--chat")) {
    if (auto s = flagValue(args, "--system")) req.messages.push_back({"system", *s});
    req.messages.push_back({"user", prompt});
  } else {
    req.prompt = prompt;
  }
  req.max_tokens = *max_tokens;
  req.temperature = *temperature;
  req.top_p = *top_p;
  if (flagValue(args, "--top-k")) req.top_k = *top_k;
  if (auto v = flagValue(args, "--seed")) {
    char* end = nullptr;
    const unsigned long long s = std::strtoull(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || (*v)[0] == '-')
      return reportError(makeError(ErrorCode::kBadRequest, "--seed must be a non-negative integer",
                                   {{"field", "--seed"}, {"value", *v}}),
                         json);
    req.seed = s;
  } else {
    req.seed = 0;  // reproducible by default, as before
  }
  if (auto v = flagValue(args, "--stop")) req.stop.push_back(*v);
  req.logprobs = json;  // the JSON output lists the token ids
  req.priority = Priority::kInteractive;

  EngineOptions eo;
  if (auto a = flagValue(args, "--adapter")) eo.adapter = *a;
  if (auto c = flagValue(args, "--cache-dir")) eo.cache_dir = *c;
  eo.rows = 1;
  eo.context = *context;
  eo.max_steps = 32;
  eo.decode_steps = *steps;
  eo.activations = *act;
  auto engine = Engine::create(eo);
  if (!engine) return reportError(engine.error(), json);
  auto loaded = (*engine)->load(pos[0])->wait();
  if (!loaded) return reportError(loaded.error(), json);
  if (repl) {
    ChatOptions co;
    co.model = loaded->id;
    if (auto s = flagValue(args, "--system")) co.system = *s;
    co.sampling = req;
    co.sampling.messages.clear();
    co.sampling.prompt.reset();
    co.sampling.logprobs = false;
    if (!flagValue(args, "--seed")) co.sampling.seed.reset();  // a fresh seed per turn
    return runChatRepl(**engine, co, stdin, stdout);
  }

  std::function<void(const Chunk&)> print;
  if (!json)
    print = [](const Chunk& c) {
      std::fwrite(c.delta.data(), 1, c.delta.size(), stdout);
      std::fflush(stdout);
    };
  auto job = (*engine)->complete(req, print);
  if (!job) return reportError(job.error(), json);
  const CompletionResult& r = (*job)->wait();
  if (r.error) return reportError(*r.error, json);
  DeviceInfo dev;
  if (auto d = (*engine)->probe()) dev = *d;
  if (json) {
    std::vector<int32_t> ids;
    for (const auto& t : r.logprobs) ids.push_back(t.id);
    nlohmann::json j = {{"model", loaded->model_type},
                        {"text", r.text},
                        {"tokens", ids},
                        {"finish_reason", r.finish_reason},
                        {"usage", {{"prompt_tokens", r.usage.prompt_tokens}, {"completion_tokens", r.usage.completion_tokens}}},
                        {"timings",
                         {{"load_ms", loaded->load_ms}, {"load_ms_by_stage", loaded->load_ms_by_stage},
                          {"ttft_ms", r.timings.ttft_ms}, {"prefill_tok_s", r.timings.prefill_tok_s},
                          {"decode_tok_s", r.timings.decode_tok_s}, {"decode_steps_per_sync", *steps}}},
                        {"device", dev.device}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::fprintf(stderr, "\n\n[%s on %s] prompt %u tokens, generated %u (%s); load %.0f ms, TTFT %.1f ms, "
                       "prefill %.1f tok/s, decode %.1f tok/s (K=%u)\n",
               loaded->model_type.c_str(), dev.device.c_str(), r.usage.prompt_tokens, r.usage.completion_tokens,
               r.finish_reason.c_str(), loaded->load_ms, r.timings.ttft_ms, r.timings.prefill_tok_s,
               r.timings.decode_tok_s, *steps);
  return 0;
}

Registration reg{{"run", "run MODEL [PROMPT] [--chat] [--max-tokens N] [--temperature T] [--top-p P] [--seed S] "
                         "[--steps K] [--activations auto|f32|int8|int16] [--json]",
                  "generate through the engine from a model folder or store id, streaming text; prints TTFT and tok/s",
                  runRun}};

}  // namespace
}  // namespace ewgpu::cli
