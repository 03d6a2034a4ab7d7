// OpenAI's endpoints: POST /v1/chat/completions and /v1/completions (streamed as SSE or not), POST /v1/embeddings,
// GET /v1/models
// and /v1/models/{id}. The request shapes are parsed by src/api/openai (through Engine::chat.completions);
// this file adds what is HTTP's: the X-Session / X-Priority headers, SSE framing with `data: [DONE]`, the
// status of an error, and cancelling a job whose client left.
#include "server/connection.h"
#include "server/server_impl.h"

namespace ewgpu::server {
namespace {

// The error code name inside an engine error JSON, back to its code (for the HTTP status).
ErrorCode codeOf(const json& err) {
  const std::string name = err.contains("error") ? err["error"].value("code", "") : "";
  for (ErrorCode c : kAllErrorCodes)
    if (errorCodeName(c) == name) return c;
  return ErrorCode::kInternal;
}

// Scheduling from headers, where the body does not set the field (an existing proxy can route by X-Session).
Status applyHeaders(const httplib::Request& req, json& body) {
  const std::string session = req.get_header_value("X-Session"), priority = req.get_header_value("X-Priority");
  if (session.empty() && priority.empty()) return {};
  for (const auto& [name, v] : {std::pair<const char*, const std::string&>{"X-Session", session}, {"X-Priority", priority}}) {
    try {
      (void)json(v).dump();  // throws on invalid UTF-8
    } catch (const json::exception&) {
      return badField(name, "must be UTF-8 text");
    }
  }
  CompletionRequest check;  // validates the header values the way the body's fields are
  EWGPU_TRY(openai::applySchedulingHeaders(check, session, priority));
  if (!session.empty() && (!body.contains("session") || body["session"].is_null())) body["session"] = session;
  if (!priority.empty() && (!body.contains("priority") || body["priority"].is_null())) body["priority"] = priority;
  return {};
}

void countUsage(Context& ctx, const json& j) {
  if (!j.contains("usage") || !j["usage"].is_object()) return;
  ctx.metrics.prompt_tokens += j["usage"].value("prompt_tokens", 0u);
  ctx.metrics.completion_tokens += j["usage"].value("completion_tokens", 0u);
}

void completion(const httplib::Request& req, httplib::Response& res, Context& ctx, bool chat) {
  auto body = parseBody(req);
  if (!body) return sendError(res, body.error());
  if (Status st = applyHeaders(req, *body); !st) return sendError(res, st.error());
  const bool stream = body->contains("stream") && (*body)["stream"].is_boolean() && (*body)["stream"].get<bool>();
  const json& so = body->contains("stream_options") ? (*body)["stream_options"] : json();
  const bool include_usage = so.is_object() && so.contains("include_usage") && so["include_usage"].is_boolean() &&
                             so["include_usage"].get<bool>();
  auto q = std::make_shared<EventQueue>();
  std::function<void(const json&)> on_chunk;
  if (stream)
    on_chunk = [q, &ctx, include_usage](const json& c) {
      // The stream's last frame: the finish chunk (it carries "ewgpu"), or the usage chunk that follows it when
      // asked, or an error object when the job failed. Then [DONE], and the queue closes.
      const bool usage_chunk = c.contains("usage") && c["usage"].is_object();
      const bool last = c.contains("error") || (usage_chunk ? include_usage : c.contains("ewgpu") && !include_usage);
      if (usage_chunk) countUsage(ctx, c);
      q->push(sseFrame(c), last);
      if (last) {
        q->push("data: [DONE]\n\n");
        q->close();
      }
    };
  auto h = chat ? ctx.engine.chat.completions.create(*body, on_chunk) : ctx.engine.createCompletion(*body, on_chunk);
  if (!h) return sendError(res, h.error());
  ChatCompletionHandle job = *h;
  Engine* engine = &ctx.engine;
  res.set_header("X-Request-Id", job->completion_id);
  res.set_header("X-Ewgpu-Job", std::to_string(job->id));  // for POST /v1/engine/cancel {"id"}
  if (stream) {
    streamQueue(req, res, ctx, q, [engine, job] { engine->cancel(job->id); });
    return;
  }
  // Not streamed: wait here, checking that the client is still there.
  const int fd = clientSocket(req);
  const json* r = nullptr;
  while (!(r = job->response->waitFor(ctx.opts.disconnect_poll_ms))) {
    if (peerClosed(fd) || ctx.stopping) {
      if (!ctx.stopping) ctx.metrics.disconnects++;
      ctx.engine.cancel(job->id);
      r = &job->wait();  // ends promptly: cancelled
      break;
    }
  }
  if (r->contains("error")) return sendJson(res, openai::httpStatus(makeError(codeOf(*r), "")), *r);
  countUsage(ctx, *r);
  sendJson(res, 200, *r);
}

void chatCompletions(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  completion(req, res, ctx, true);
}
void completions(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  completion(req, res, ctx, false);
}

// POST /v1/embeddings: Engine::embeddings.create, waited on here (the work runs on the engine's thread). An
// embeddings job cannot be cancelled midway: a client that leaves only stops this handler waiting.
void embeddings(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto body = parseBody(req);
  if (!body) return sendError(res, body.error());
  auto h = ctx.engine.embeddings.create(*body);
  if (!h) return sendError(res, h.error());
  EmbeddingsHandle job = *h;
  const int fd = clientSocket(req);
  const json* r = nullptr;
  while (!(r = job->response->waitFor(ctx.opts.disconnect_poll_ms))) {
    if (peerClosed(fd) || ctx.stopping) {
      if (!ctx.stopping) ctx.metrics.disconnects++;
      return;  // the result is dropped when it comes
    }
  }
  if (r->contains("error")) return sendJson(res, openai::httpStatus(makeError(codeOf(*r), "")), *r);
  countUsage(ctx, *r);
  sendJson(res, 200, *r);
}

json modelObject(const ModelState& m, int64_t created) {
  return {{"id", m.id},
          {"object", "model"},
          {"created", created},
          {"owned_by", "ewgpu"},
          {"ewgpu",
           {{"status", m.status},
            {"current", m.current},
            {"rows", m.rows},
            {"rowsBusy", m.rows_busy},
            {"contextWindow", m.context_window},
            {"keepResident", m.keep_resident}}}};
}

void listModels(const httplib::Request&, httplib::Response& res, Context& ctx) {
  json data = json::array();
  for (const auto& m : ctx.engine.state().models)
    if (m.status == "ready") data.push_back(modelObject(m, ctx.started_unix_s));
  sendJson(res, 200, {{"object", "list"}, {"data", data}});
}

void getModel(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  const std::string id = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
  for (const auto& m : ctx.engine.state().models)
    if (m.id == id && m.status == "ready") return sendJson(res, 200, modelObject(m, ctx.started_unix_s));
  sendError(res,
            makeError(ErrorCode::kUnknownModel, "model " + id + " is not loaded", {{"field", "model"}, {"model", id}}));
}

}  // namespace

std::vector<Route> openaiRoutes() {
  return {{{"POST", "/v1/chat/completions"}, "/v1/chat/completions", chatCompletions},
          {{"POST", "/v1/completions"}, "/v1/completions", completions},
          {{"POST", "/v1/embeddings"}, "/v1/embeddings", embeddings},
          {{"GET", "/v1/models"}, "/v1/models", listModels},
          {{"GET", "/v1/models/{id}"}, R"(/v1/models/([^/]+))", getModel}};
}

}  // namespace ewgpu::server
