// ewgpu serve: the OpenAI-compatible HTTP server with the engine's own operations (docs/http-api.md).
#include <cstdio>

#include "command.h"
#include "server/serve.h"

namespace ewgpu::cli {
namespace {

int runServeCommand(const Args& args) {
  auto cfg = server::parseServeArgs(args);
  if (!cfg) return reportError(cfg.error(), false);
  return server::runServe(std::move(*cfg));
}

Registration reg{{"serve",
                  "serve [--model ID_OR_DIR]... [--host H] [--port N] [--api-key K] [--cors ORIGIN]... [--web DIR] "
                  "[--rows N] [--steps K] [--adapter A] [--cache-dir D]",
                  "an OpenAI-compatible HTTP server over the engine (127.0.0.1:8080 by default)", runServeCommand}};

}  // namespace
}  // namespace ewgpu::cli
