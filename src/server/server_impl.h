// HttpServer internals shared by its route files: the context every handler gets, the SSE queue between the
// engine's callback thread and a waiting HTTP thread, the server's own counters, and response helpers.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include "api/openai.h"
#include "server/http_server.h"
#include "store/model_store.h"

namespace ewgpu::server {

using json = nlohmann::json;

// Text pushed by engine callbacks (SSE frames, or nothing for a non-streamed request), taken by the HTTP
// thread that answers the request. `final` is set with the last frame a generation pushes before its result.
struct EventQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> items;  // (mu)
  bool final = false;             // (mu)
  bool closed = false;            // (mu) nothing more will come
  void push(std::string s, bool is_final = false);
  void close();
  // Moves out what is queued, waiting at most `ms` when nothing is. Returns {closed, final} as seen.
  std::pair<bool, bool> take(std::vector<std::string>& out, int ms);
};

// Counters for /metrics (the engine's own figures come from Engine::state()).
struct Metrics {
  std::mutex mu;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (mu) (route, status) -> count
  std::atomic<uint64_t> prompt_tokens{0}, completion_tokens{0}, disconnects{0}, streams_open{0};
};

struct Context {
  Engine& engine;
  ServerOptions opts;
  Metrics metrics;
  std::atomic<bool> stopping{false};
  int64_t started_unix_s = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::mutex store_mu;
  std::unique_ptr<ModelStore> store;  // (store_mu) opened on first use; null if it cannot be opened
};

using Handler = void (*)(const httplib::Request&, httplib::Response&, Context&);

struct Route {
  RouteInfo info;
  std::string pattern;  // httplib's regex
  Handler handler;
};

// Every route, in the order docs/http-api.md lists them (routes_openai.cpp, routes_engine.cpp, http_server.cpp).
std::vector<Route> openaiRoutes();
std::vector<Route> engineRoutes();

// Responses.
void sendJson(httplib::Response& res, int status, const json& body);
void sendError(httplib::Response& res, const Error& e);
Error badField(const std::string& field, const std::string& message);
// The request body as a JSON object (BAD_REQUEST naming "body" when it is not one).
Result<json> parseBody(const httplib::Request& req);
// JSON text for the wire: invalid UTF-8 (which cannot come from a parsed body, but may from model text cut
// mid-character) is replaced rather than thrown on.
std::string dumpJson(const json& j);
std::string sseFrame(const json& j, const std::string& event = "");

// Streams `q` as the response body until it closes, the client leaves or the server stops; `on_gone` runs
// (once) when the client left or the server stopped first.
void streamQueue(const httplib::Request& req, httplib::Response& res, Context& ctx, std::shared_ptr<EventQueue> q,
                 std::function<void()> on_gone);
// The client's socket (for peerClosed), found once per request; -1 when not found.
int clientSocket(const httplib::Request& req);

}  // namespace ewgpu::server
