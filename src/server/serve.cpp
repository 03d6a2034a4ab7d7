#include "server/serve.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

namespace ewgpu::server {
namespace {

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop = true; }

Error bad(const std::string& flag, const std::string& message) {
  return makeError(ErrorCode::kBadRequest, flag + ": " + message, {{"field", flag}});
}

Result<int64_t> integer(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno || n < lo || n > hi)
    return bad(flag, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return (int64_t)n;
}

bool isLoopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

Result<ServeConfig> parseServeArgs(const std::vector<std::string>& args, const std::vector<std::string>& extra) {
  ServeConfig c;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool has_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    if (flag == "--quiet") {
      c.quiet = true;
      continue;
    }
    auto next = [&]() -> Result<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return bad(flag, "needs a value");
      return args[++i];
    };
    bool known_extra = false;
    for (const auto& e : extra) known_extra |= e == flag;
    if (known_extra) {
      EWGPU_TRY(next());
      continue;
    }
    if (flag.rfind("--", 0) != 0) return bad(flag, "unexpected argument (models are given with --model)");
    auto v = next();
    if (!v) return std::move(v).error();
    if (flag == "--model")
      c.models.push_back(*v);
    else if (flag == "--host")
      c.server.host = *v;
    else if (flag == "--port")
      EWGPU_ASSIGN(c.server.port, integer(flag, *v, 0, 65535));
    else if (flag == "--api-key")
      c.server.api_key = *v;
    else if (flag == "--cors")
      c.server.cors_origins.push_back(*v);
    else if (flag == "--web")
      c.server.web_dir = *v;
    else if (flag == "--timeout") {
      EWGPU_ASSIGN(c.server.read_timeout_s, integer(flag, *v, 1, 3600));
      c.server.write_timeout_s = c.server.read_timeout_s;
    } else if (flag == "--threads")
      EWGPU_ASSIGN(c.server.threads, integer(flag, *v, 1, 1024));
    else if (flag == "--max-body")
      EWGPU_ASSIGN(c.server.max_body_bytes, integer(flag, *v, 1024, 1ll << 32));
    else if (flag == "--adapter")
      c.engine.adapter = *v;
    else if (flag == "--cache-dir")
      c.engine.cache_dir = c.server.cache_dir = *v;
    else if (flag == "--rows")
      EWGPU_ASSIGN(c.engine.rows, integer(flag, *v, 1, 32));
    else if (flag == "--steps")
      EWGPU_ASSIGN(c.engine.decode_steps, integer(flag, *v, 1, 32));
    else if (flag == "--context")
      EWGPU_ASSIGN(c.engine.context, integer(flag, *v, 0, 1 << 24));
    else
      return bad(flag, "unknown flag");
  }
  return c;
}

int runServe(ServeConfig cfg) {
  std::signal(SIGPIPE, SIG_IGN);  // a client that leaves mid-write is an error value, not a signal
  if (!isLoopback(cfg.server.host))
    std::fprintf(stderr, "warning: listening on %s, not loopback: other machines can reach this engine%s\n",
                 cfg.server.host.c_str(), cfg.server.api_key.empty() ? " (and no --api-key is set)" : "");
  auto engine = Engine::create(cfg.engine);
  if (!engine) {
    std::fprintf(stderr, "error: %s\n", engine.error().message.c_str());
    return 1;
  }
  auto server = HttpServer::create(**engine, cfg.server);
  if (!server) {
    std::fprintf(stderr, "error: %s\n", server.error().message.c_str());
    return 1;
  }
  auto port = (*server)->bind();
  if (!port) {
    std::fprintf(stderr, "error: %s\n", port.error().message.c_str());
    return 1;
  }
  std::printf("ewgpu serve: listening on http://%s:%d\n", cfg.server.host.c_str(), *port);
  std::fflush(stdout);
  g_stop = false;
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::atomic<bool> listening_ended{false};
  std::thread listener([&] {
    Status st = (*server)->listen();
    if (!st) std::fprintf(stderr, "error: %s\n", st.error().message.c_str());
    listening_ended = true;
  });
  int rc = 0;
  for (const auto& m : cfg.models) {
    auto h = (*engine)->load(m, {.keep_resident = true});  // every --model stays served
    // Bounded: a load ends (ready or failed); a signal stops waiting for it.
    const Result<ModelInfo>* r = nullptr;
    while (!(r = h->waitFor(100)) && !g_stop) {
    }
    if (!r) break;
    if (*r) {
      if (!cfg.quiet) std::printf("ewgpu serve: model %s ready (%.0f ms)\n", (*r)->id.c_str(), (*r)->load_ms);
    } else {
      std::fprintf(stderr, "error: loading %s: %s\n", m.c_str(), r->error().message.c_str());
      rc = 1;
    }
    std::fflush(stdout);
  }
  if (rc == 0 && !cfg.models.empty() && !g_stop) {
    std::printf("ewgpu serve: ready\n");
    std::fflush(stdout);
  }
  while (!g_stop && !listening_ended && rc == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (*server)->stop();
  listener.join();
  server->reset();
  engine->reset();
  return rc;
}

}  // namespace ewgpu::server
