// ewgpu chat MODEL: an interactive multi-turn chat with a model folder or store id (chat_repl.h).
#include <cstdio>

#include "chat_repl.h"
#include "command.h"

namespace ewgpu::cli {
namespace {

const std::vector<std::string> kValued = {"--system", "--max-tokens", "--temperature", "--top-p",
                                          "--seed",   "--adapter",    "--cache-dir",   "--context"};

Result<uint64_t> number(const Args& args, const std::string& flag, uint64_t lo, uint64_t hi) {
  const std::string v = *flagValue(args, flag);
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi)
    return makeError(ErrorCode::kBadRequest,
                     flag + ": must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                     {{"field", flag}});
  return (uint64_t)n;
}

Result<float> real(const Args& args, const std::string& flag, float lo, float hi) {
  const std::string v = *flagValue(args, flag);
  char* end = nullptr;
  const float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= lo && x <= hi))
    return makeError(ErrorCode::kBadRequest,
                     flag + ": must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                     {{"field", flag}});
  return x;
}

int runChat(const Args& args) {
  auto pos = positionals(args, kValued);
  if (pos.size() != 1) {
    std::fprintf(stderr, "usage: ewgpu chat MODEL [--system TEXT] [--max-tokens N] [--temperature T] ...\n");
    return 2;
  }
  ChatOptions co;
  if (auto s = flagValue(args, "--system")) co.system = *s;
  co.sampling.max_tokens = 512;
  if (flagValue(args, "--max-tokens")) {
    auto n = number(args, "--max-tokens", 1, 1u << 20);
    if (!n) return reportError(n.error(), false);
    co.sampling.max_tokens = (uint32_t)*n;
  }
  if (flagValue(args, "--seed")) {
    auto n = number(args, "--seed", 0, UINT64_MAX);
    if (!n) return reportError(n.error(), false);
    co.sampling.seed = *n;
  }
  if (flagValue(args, "--temperature")) {
    auto t = real(args, "--temperature", 0, 2);
    if (!t) return reportError(t.error(), false);
    co.sampling.temperature = *t;
  }
  if (flagValue(args, "--top-p")) {
    auto t = real(args, "--top-p", 1e-6f, 1);
    if (!t) return reportError(t.error(), false);
    co.sampling.top_p = *t;
  }
  EngineOptions eo;
  eo.rows = 1;
  if (auto a = flagValue(args, "--adapter")) eo.adapter = *a;
  if (auto c = flagValue(args, "--cache-dir")) eo.cache_dir = *c;
  if (flagValue(args, "--context")) {
    auto n = number(args, "--context", 0, 1u << 24);
    if (!n) return reportError(n.error(), false);
    eo.context = (uint32_t)*n;
  }
  auto engine = Engine::create(eo);
  if (!engine) return reportError(engine.error(), false);
  std::fprintf(stderr, "loading %s ...\n", pos[0].c_str());
  LoadHandle load = (*engine)->load(pos[0]);
  const auto& loaded = load->wait();
  if (!loaded) return reportError(loaded.error(), false);
  co.model = loaded->id;
  return runChatRepl(**engine, co, stdin, stdout);
}

Registration reg{{"chat", "chat MODEL [--system TEXT] [--max-tokens N] [--temperature T] [--top-p P] [--seed S]",
                  "an interactive multi-turn chat (/reset, /system, Ctrl-C stops a reply, Ctrl-D exits)", runChat}};

}  // namespace
}  // namespace ewgpu::cli
