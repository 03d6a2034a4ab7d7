// `ewgpu serve`: its flags and its run loop, shared by apps/ewgpu/cmd_serve.cpp and the fake-backend server
// the HTTP tests start (tests/server/fake_serve.cpp), so both parse and behave alike.
#pragma once

#include <string>
#include <vector>

#include "server/http_server.h"

namespace ewgpu::server {

struct ServeConfig {
  ServerOptions server;
  EngineOptions engine;
  std::vector<std::string> models;  // --model ID_OR_DIR, loaded in order after the server listens
  bool quiet = false;
};

// Flags: --model X (repeatable), --host H, --port N, --api-key K, --cors ORIGIN (repeatable), --web DIR,
// --timeout S (header/body read and write timeout), --threads N, --adapter A, --cache-dir D, --rows N, --steps K,
// --context N, --max-body BYTES, --quiet. BAD_REQUEST naming the flag for a bad value or an unknown flag; `extra` lists
// flags a caller handles itself (each takes a value).
Result<ServeConfig> parseServeArgs(const std::vector<std::string>& args, const std::vector<std::string>& extra = {});

// Creates the engine, binds, prints "listening on http://HOST:PORT" on stdout, loads the models, and serves
// until SIGINT/SIGTERM. Returns the process exit code.
int runServe(ServeConfig cfg);

}  // namespace ewgpu::server
