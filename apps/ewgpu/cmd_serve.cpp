// ewgpu serve: the OpenAI-compatible HTTP server with the engine's own operations (docs/http-api.md). CLI11
// declares the flags (for --help and unknown-flag errors); server::parseServeArgs checks their values.
#include <cstdio>
#include <map>
#include <memory>

#include "command.h"
#include "server/serve.h"

namespace ewgpu::cli {
namespace {

struct ServeFlags {
  std::vector<std::string> models, cors;
  std::map<std::string, std::string> values;  // --flag -> value, for the flags given once
  bool quiet = false;
  bool json = false;  // errors as JSON
};

int runServeCommand(const ServeFlags& f) {
  std::vector<std::string> args;
  for (const auto& m : f.models) args.insert(args.end(), {"--model", m});
  for (const auto& c : f.cors) args.insert(args.end(), {"--cors", c});
  for (const auto& [flag, v] : f.values)
    if (!v.empty()) args.insert(args.end(), {flag, v});
  if (f.quiet) args.push_back("--quiet");
  auto cfg = server::parseServeArgs(args);
  if (!cfg) return reportError(cfg.error(), f.json);
  return server::runServe(std::move(*cfg));
}

Registration reg{{"serve", "an OpenAI-compatible HTTP server over the engine (127.0.0.1:8080 by default)",
                  [](CLI::App& app) {
                    auto f = std::make_shared<ServeFlags>();
                    app.add_option("-m,--model", f->models, "a model folder or store id to load (repeatable)");
                    app.add_option("--cors", f->cors, "an origin allowed to call the server (repeatable)");
                    const std::pair<const char*, const char*> once[] = {
                        {"--host", "address to bind (default 127.0.0.1; others are warned about)"},
                        {"--port", "port (default 8080; 0 = any free port)"},
                        {"--api-key", "a Bearer key every route but /health requires"},
                        {"--web", "a folder of static files served at / (the browser build)"},
                        {"--timeout", "header/body read and write timeout in seconds"},
                        {"--threads", "HTTP threads"},
                        {"--max-body", "largest request body in bytes (default 8 MiB)"},
                        {"--adapter", "auto|gpu|swiftshader"},
                        {"--cache-dir", "the model store's folder"},
                        {"--rows", "decode rows per model (1..32)"},
                        {"--steps", "decode steps per GPU submission (K)"},
                        {"--context", "positions per sequence (default: the model's)"}};
                    for (const auto& [flag, help] : once) app.add_option(flag, f->values[flag], help);
                    app.add_flag("--quiet", f->quiet, "no request log");
                    addJsonFlag(app, f->json);
                    return [f] { return runServeCommand(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
