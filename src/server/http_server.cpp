// The server's frame: httplib setup (limits, timeouts, threads), the guards every request passes (API key,
// CORS allowlist), the OpenAI-shaped error page for what httplib rejects itself, /health and /metrics, and
// the helpers the route files share.
#include "server/http_server.h"

#include <sstream>

#include "server/connection.h"
#include "server/server_impl.h"

namespace ewgpu::server {

void EventQueue::push(std::string s, bool is_final) {
  {
    std::lock_guard<std::mutex> lk(mu);
    items.push_back(std::move(s));
    final = final || is_final;
  }
  cv.notify_all();
}

void EventQueue::close() {
  {
    std::lock_guard<std::mutex> lk(mu);
    closed = true;
  }
  cv.notify_all();
}

std::pair<bool, bool> EventQueue::take(std::vector<std::string>& out, int ms) {
  std::unique_lock<std::mutex> lk(mu);
  if (items.empty() && !closed)
    cv.wait_for(lk, std::chrono::milliseconds(ms), [&] { return !items.empty() || closed; });
  while (!items.empty()) {
    out.push_back(std::move(items.front()));
    items.pop_front();
  }
  return {closed, final};
}

std::string dumpJson(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sseFrame(const json& j, const std::string& event) {
  std::string s;
  if (!event.empty()) s += "event: " + event + "\n";
  return s + "data: " + dumpJson(j) + "\n\n";
}

void sendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dumpJson(body), "application/json");
}

void sendError(httplib::Response& res, const Error& e) { sendJson(res, openai::httpStatus(e), openai::errorJson(e)); }

Error badField(const std::string& field, const std::string& message) {
  return makeError(ErrorCode::kBadRequest, field + ": " + message, {{"field", field}});
}

Result<json> parseBody(const httplib::Request& req) {
  if (req.body.empty()) return badField("body", "a JSON object is required");
  json j = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return badField("body", "not valid JSON (or not valid UTF-8)");
  if (!j.is_object()) return badField("body", "must be a JSON object");
  return j;
}

int clientSocket(const httplib::Request& req) {
  return findConnectionSocket(req.local_port, req.remote_addr, req.remote_port);
}

void streamQueue(const httplib::Request& req, httplib::Response& res, Context& ctx, std::shared_ptr<EventQueue> q,
                 std::function<void()> on_gone) {
  const int fd = clientSocket(req);
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass each frame on at once
  ctx.metrics.streams_open++;
  auto gone = std::make_shared<std::atomic<bool>>(false);
  auto leave = [&ctx, gone, on_gone]() {
    if (gone->exchange(true)) return;
    ctx.metrics.streams_open--;
    if (on_gone) on_gone();
  };
  res.set_chunked_content_provider(
      "text/event-stream",
      [q, fd, &ctx, gone, leave](size_t, httplib::DataSink& sink) {
        // Bounded by the stream itself: it closes when its job (or load) ends; a departed client or a stopping
        // server ends it earlier.
        for (;;) {
          std::vector<std::string> items;
          auto [closed, final] = q->take(items, ctx.opts.disconnect_poll_ms);
          for (const auto& s : items)
            if (!sink.write(s.data(), s.size())) {
              ctx.metrics.disconnects++;
              leave();
              return false;
            }
          if (closed) {
            sink.done();
            if (!gone->exchange(true)) ctx.metrics.streams_open--;
            return true;
          }
          if (peerClosed(fd) || ctx.stopping) {
            if (!ctx.stopping) ctx.metrics.disconnects++;
            leave();
            return false;
          }
        }
      },
      [gone, leave](bool success) {
        if (!success) leave();  // httplib gave up (write timeout, server stop) before the stream closed
      });
}

namespace {

void health(const httplib::Request&, httplib::Response& res, Context& ctx) {
  const EngineState s = ctx.engine.state();
  json models = json::array();
  for (const auto& m : s.models) models.push_back(m.id);
  sendJson(res, 200, {{"status", "ok"}, {"models", models}});
}

std::string label(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

void metrics(const httplib::Request&, httplib::Response& res, Context& ctx) {
  const EngineState s = ctx.engine.state();
  std::ostringstream o;
  auto head = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  head("ewgpu_http_requests_total", "counter", "HTTP requests answered, by route and status.");
  {
    std::lock_guard<std::mutex> lk(ctx.metrics.mu);
    for (const auto& [k, n] : ctx.metrics.requests)
      o << "ewgpu_http_requests_total{route=\"" << label(k.first) << "\",code=\"" << k.second << "\"} " << n << "\n";
  }
  head("ewgpu_jobs_total", "counter", "Generation jobs ended, by outcome.");
  const std::pair<const char*, uint64_t> outcomes[] = {{"completed", s.completed},
                                                       {"failed", s.failed},
                                                       {"cancelled", s.cancelled},
                                                       {"preempted", s.preempted},
                                                       {"superseded", s.superseded}};
  for (const auto& [name, n] : outcomes) o << "ewgpu_jobs_total{outcome=\"" << name << "\"} " << n << "\n";
  head("ewgpu_generated_tokens_total", "counter", "Tokens generated by the engine.");
  o << "ewgpu_generated_tokens_total " << s.generated_tokens << "\n";
  head("ewgpu_prompt_tokens_total", "counter", "Prompt tokens of the completions this server answered.");
  o << "ewgpu_prompt_tokens_total " << ctx.metrics.prompt_tokens.load() << "\n";
  head("ewgpu_completion_tokens_total", "counter", "Completion tokens of the completions this server answered.");
  o << "ewgpu_completion_tokens_total " << ctx.metrics.completion_tokens.load() << "\n";
  head("ewgpu_queue_depth", "gauge", "Jobs waiting for a row, by priority band.");
  const char* bands[] = {"interactive", "normal", "background"};
  for (int b = 0; b < 3; ++b) o << "ewgpu_queue_depth{band=\"" << bands[b] << "\"} " << s.queued[b] << "\n";
  head("ewgpu_jobs_running", "gauge", "Jobs holding a decode row.");
  o << "ewgpu_jobs_running " << s.running << "\n";
  head("ewgpu_rows", "gauge", "Decode rows in use per model.");
  for (const auto& m : s.models) o << "ewgpu_rows{model=\"" << label(m.id) << "\"} " << m.rows << "\n";
  head("ewgpu_rows_busy", "gauge", "Decode rows running a job, per model.");
  for (const auto& m : s.models) o << "ewgpu_rows_busy{model=\"" << label(m.id) << "\"} " << m.rows_busy << "\n";
  head("ewgpu_decode_tokens_per_second", "gauge", "Decode speed measured on this engine, per model.");
  for (const auto& m : s.models)
    o << "ewgpu_decode_tokens_per_second{model=\"" << label(m.id) << "\"} " << m.decode_tok_s << "\n";
  head("ewgpu_client_disconnects_total", "counter", "Requests whose client left before the answer ended.");
  o << "ewgpu_client_disconnects_total " << ctx.metrics.disconnects.load() << "\n";
  head("ewgpu_streams_open", "gauge", "Server-sent-event responses in progress.");
  o << "ewgpu_streams_open " << ctx.metrics.streams_open.load() << "\n";
  res.status = 200;
  res.set_content(o.str(), "text/plain; version=0.0.4");
}

std::vector<Route> frameRoutes() {
  return {{{"GET", "/health"}, "/health", health}, {{"GET", "/metrics"}, "/metrics", metrics}};
}

std::vector<Route> everyRoute() {
  std::vector<Route> r = frameRoutes();
  for (auto& x : openaiRoutes()) r.push_back(x);
  for (auto& x : engineRoutes()) r.push_back(x);
  return r;
}

// The route label for /metrics: the documented path, so ids do not explode the label set.
std::string routeLabel(const std::string& method, const std::string& path) {
  if (path.rfind("/v1/models/", 0) == 0) return method + " /v1/models/{id}";
  for (const auto& r : everyRoute())
    if (r.info.path == path) return method + " " + path;
  return method == "OPTIONS" ? "OPTIONS *" : "other";
}

bool constantTimeEqual(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

json errorBody(const std::string& code, const std::string& message, const std::string& type) {
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
}

// The guards every request passes before routing: CORS (an Origin not on the allowlist is refused, so a page
// cannot drive the engine unless allowed; preflight answered here), the API key, and a stopping server.
httplib::Server::HandlerResponse guard(Context& ctx, const httplib::Request& req, httplib::Response& res) {
  try {
    // The --web folder's files are public (any client may GET them without an Origin), and a page's own module
    // scripts and worker are fetched with its Origin header: those GETs skip the allowlist, which guards the API.
    const bool static_file = !ctx.opts.web_dir.empty() && (req.method == "GET" || req.method == "HEAD") &&
                             req.path.rfind("/v1/", 0) != 0 && req.path != "/v1" && req.path != "/health" &&
                             req.path != "/metrics";
    if (req.has_header("Origin") && !static_file) {
      const std::string origin = req.get_header_value("Origin");
      bool allowed = false;
      for (const auto& o : ctx.opts.cors_origins) allowed |= o == "*" || o == origin;
      if (!allowed) {
        sendJson(res, 403,
                 errorBody("FORBIDDEN_ORIGIN", "origin " + origin + " is not allowed (see --cors)",
                           "invalid_request_error"));
        return httplib::Server::HandlerResponse::Handled;
      }
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Session, X-Priority");
        res.set_header("Access-Control-Max-Age", "600");
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!ctx.opts.api_key.empty() && req.path != "/health") {
      const std::string auth = req.get_header_value("Authorization");
      if (!constantTimeEqual(auth, "Bearer " + ctx.opts.api_key)) {
        res.set_header("WWW-Authenticate", "Bearer");
        sendJson(res, 401,
                 errorBody("UNAUTHORIZED", "a valid API key is required (Authorization: Bearer KEY)",
                           "invalid_request_error"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (ctx.stopping) {
      sendJson(res, 503, errorBody("ENGINE_CLOSED", "the server is stopping", "server_error"));
      return httplib::Server::HandlerResponse::Handled;
    }
  } catch (...) {
    sendJson(res, 500, errorBody("INTERNAL", "the request could not be checked", "server_error"));
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

}  // namespace

std::vector<RouteInfo> allRoutes() {
  std::vector<RouteInfo> out;
  for (const auto& r : everyRoute()) out.push_back(r.info);
  return out;
}

struct HttpServer::Impl {
  std::unique_ptr<Context> ctx;
  httplib::Server http;
  std::vector<Route> routes;
  int bound_port = -1;
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

std::vector<RouteInfo> HttpServer::routes() const {
  std::vector<RouteInfo> out;
  for (const auto& r : impl_->routes) out.push_back(r.info);
  return out;
}

Result<std::unique_ptr<HttpServer>> HttpServer::create(Engine& engine, ServerOptions opts) {
  if (opts.port < 0 || opts.port > 65535) return badField("port", "must be in [0, 65535]");
  if (opts.threads < 1 || opts.threads > 1024) return badField("threads", "must be in [1, 1024]");
  if (opts.max_body_bytes < 1024) return badField("max_body_bytes", "must be at least 1024");
  auto impl = std::make_unique<Impl>();
  impl->ctx = std::unique_ptr<Context>(new Context{engine, opts});
  impl->ctx->started_unix_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  Context& ctx = *impl->ctx;
  httplib::Server& http = impl->http;
  const int threads = opts.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool((size_t)threads); };
  http.set_payload_max_length(opts.max_body_bytes);
  http.set_read_timeout(opts.read_timeout_s, 0);
  http.set_write_timeout(opts.write_timeout_s, 0);
  http.set_keep_alive_timeout(opts.keep_alive_s);
  http.set_tcp_nodelay(true);
  if (!opts.web_dir.empty() && !http.set_mount_point("/", opts.web_dir))
    return makeError(ErrorCode::kIo, "--web: " + opts.web_dir + " is not a folder", {{"field", "web"}});

  http.set_pre_routing_handler(
      [&ctx](const httplib::Request& req, httplib::Response& res) { return guard(ctx, req, res); });
  // What httplib answers itself (no route, body too large, bad request line) gets OpenAI's error shape.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string code = "BAD_REQUEST", message = "the request was rejected (HTTP " + std::to_string(res.status) + ")";
    if (res.status == 404) code = "NOT_FOUND", message = "no route " + req.method + " " + req.path;
    if (res.status == 413) message = "body: larger than the server's limit";
    if (res.status == 405) code = "METHOD_NOT_ALLOWED";
    sendJson(res, res.status, errorBody(code, message, res.status < 500 ? "invalid_request_error" : "server_error"));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    sendJson(res, 500, errorBody("INTERNAL", "the request failed inside the server", "server_error"));
  });
  http.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    std::lock_guard<std::mutex> lk(ctx.metrics.mu);
    ctx.metrics.requests[{routeLabel(req.method, req.path), res.status}]++;
  });

  impl->routes = everyRoute();
  for (const auto& r : impl->routes) {
    Handler h = r.handler;
    auto wrapped = [h, &ctx](const httplib::Request& req, httplib::Response& res) {
      try {
        h(req, res, ctx);
      } catch (const std::exception& e) {
        sendJson(res, 500, errorBody("INTERNAL", std::string("the server failed: ") + e.what(), "server_error"));
      } catch (...) {
        sendJson(res, 500, errorBody("INTERNAL", "the server failed", "server_error"));
      }
    };
    if (r.info.method == "GET")
      http.Get(r.pattern, wrapped);
    else
      http.Post(r.pattern, wrapped);
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Result<int> HttpServer::bind() {
  const auto& o = impl_->ctx->opts;
  const int port =
      o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    return makeError(ErrorCode::kIo, "cannot listen on " + o.host + ":" + std::to_string(o.port),
                     {{"host", o.host}, {"port", o.port}});
  impl_->bound_port = port;
  return port;
}

Status HttpServer::listen() {
  if (impl_->bound_port < 0) return makeError(ErrorCode::kInternal, "listen() before bind()");
  if (!impl_->http.listen_after_bind()) {
    if (impl_->ctx->stopping) return {};
    return makeError(ErrorCode::kIo, "the server stopped listening");
  }
  return {};
}

void HttpServer::stop() {
  if (!impl_) return;
  impl_->ctx->stopping = true;
  impl_->http.stop();
}

}  // namespace ewgpu::server
