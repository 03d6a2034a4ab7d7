// ewgpu chat [MODEL]: an interactive multi-turn chat with a model folder or store id (chat_repl.h); with no model,
// the built-in default model.
#include <cstdio>
#include <memory>

#include "chat_repl.h"
#include "command.h"

namespace ewgpu::cli {
namespace {

struct ChatFlags {
  std::string model = "default";
  std::string system, adapter, cache_dir;
  uint32_t max_tokens = 512;
  std::optional<uint32_t> context;
  SamplingFlags sampling;
  bool json = false;  // errors as JSON
};

int runChat(const ChatFlags& f) {
  ChatOptions co;
  co.system = f.system;
  co.sampling.max_tokens = f.max_tokens;
  co.sampling.temperature = f.sampling.temperature;
  co.sampling.top_p = f.sampling.top_p;
  co.sampling.top_k = f.sampling.top_k;
  co.sampling.seed = f.sampling.seed;  // unset: a fresh seed per turn
  EngineOptions eo;
  eo.rows = 1;
  eo.adapter = f.adapter;
  eo.cache_dir = f.cache_dir;
  eo.context = f.context.value_or(0);
  auto engine = Engine::create(eo);
  if (!engine) return reportError(engine.error(), f.json);
  std::fprintf(stderr, "loading %s ...\n", f.model.c_str());
  LoadHandle load = (*engine)->load(f.model);
  const auto& loaded = load->wait();
  if (!loaded) return reportError(loaded.error(), f.json);
  co.model = loaded->id;
  return runChatRepl(**engine, co, stdin, stdout);
}

Registration reg{{"chat", "an interactive multi-turn chat (/reset, /system, Ctrl-C stops a reply, Ctrl-D exits)",
                  [](CLI::App& app) {
                    auto f = std::make_shared<ChatFlags>();
                    app.add_option("MODEL", f->model, "a model folder or store id (default: the built-in model)")
                        ->capture_default_str();
                    app.add_option("--system", f->system, "the system message of the conversation");
                    app.add_option("-n,--max-tokens", f->max_tokens, "tokens per reply, at most")
                        ->check(bounded<uint32_t>(1, 1 << 20))
                        ->capture_default_str();
                    app.add_option("-c,--context", f->context, "positions per sequence (default: the model's)")
                        ->check(bounded<uint32_t>(1, 1 << 24));
                    addSamplingFlags(app, f->sampling);
                    addAdapterFlag(app, f->adapter);
                    addCacheDirFlag(app, f->cache_dir);
                    addJsonFlag(app, f->json);
                    return [f] { return runChat(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
