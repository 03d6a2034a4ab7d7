// The HTTP host of the engine: OpenAI's /v1 endpoints, the engine's own operations (status, models, load,
// unload, batch, cancel, configure, events), /health and /metrics, on cpp-httplib. docs/http-api.md documents
// every route; tests/server/http_doc_test checks that page against routes().
//
// Threading: httplib's pool threads parse requests and call the engine, which returns at once; a generation's
// chunks reach the waiting HTTP thread through a queue fed by the engine's callback thread. HTTP threads never
// run GPU work. Every handler catches everything: a bad request is a 4xx in OpenAI's error shape, never a crash.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ewgpu/engine.h"

namespace ewgpu::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0 = a free port (bind() returns it)
  std::string api_key;                    // "" = no auth; else "Authorization: Bearer KEY" on all but /health
  std::vector<std::string> cors_origins;  // allowed Origin values ("*" = any); empty = CORS off
  std::string web_dir;                    // "" = none; else served as static files under /
  std::string cache_dir;                  // the model store listed by /v1/engine/models ("" = the default)
  size_t max_body_bytes = 8u << 20;       // larger bodies are 413
  int read_timeout_s = 10;                // headers and body must arrive within this
  int write_timeout_s = 10;
  int keep_alive_s = 5;         // an idle keep-alive connection is closed after this
  int threads = 64;             // HTTP worker threads (each open generation holds one)
  int disconnect_poll_ms = 10;  // how often a waiting request checks that its client is still there
};

struct RouteInfo {
  std::string method;  // "GET" | "POST"
  std::string path;    // as documented: "/v1/models/{id}"
};

class HttpServer {
 public:
  // The server does not own the engine; it must outlive the server.
  static Result<std::unique_ptr<HttpServer>> create(Engine& engine, ServerOptions opts);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port; returns the port bound (the free one when port is 0). IO error when it cannot bind.
  Result<int> bind();
  // Serves until stop() (blocks the calling thread).
  Status listen();
  // Stops accepting, ends open streams (their generations are cancelled), and makes listen() return.
  void stop();

  std::vector<RouteInfo> routes() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Every route the server registers (the same list as HttpServer::routes(); no server needed).
std::vector<RouteInfo> allRoutes();

}  // namespace ewgpu::server
