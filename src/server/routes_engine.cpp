// The engine's own operations over HTTP (the seed's everything-webgpu/v1 vocabulary): status, models
// (resident, registered in the store, and the prebuilt catalogue), load (progress as SSE), unload, batch (one
// task), cancel (by job id or session), configure (live), and an SSE subscription to engine events.
#include <set>

#include "server/connection.h"
#include "server/server_impl.h"
#include "store/catalog.h"

namespace ewgpu::server {
namespace {

// Unknown fields are rejected, as the OpenAI routes reject them.
Status onlyFields(const json& b, std::initializer_list<const char*> known) {
  std::set<std::string> k(known.begin(), known.end());
  for (const auto& [name, v] : b.items())
    if (!k.count(name)) return badField(name, "unknown field");
  return {};
}

Status readString(const json& b, const char* k, std::string& out, bool required = false) {
  if (!b.contains(k) || b[k].is_null()) {
    if (required) return badField(k, "required");
    return {};
  }
  if (!b[k].is_string()) return badField(k, "must be a string");
  out = b[k].get<std::string>();
  if (out.size() > 4096) return badField(k, "longer than 4096 bytes");
  if (required && out.empty()) return badField(k, "must not be empty");
  return {};
}

Status readBool(const json& b, const char* k, bool& out) {
  if (!b.contains(k) || b[k].is_null()) return {};
  if (!b[k].is_boolean()) return badField(k, "must be true or false");
  out = b[k].get<bool>();
  return {};
}

// A body that may be empty (POST with no body means {}).
Result<json> optionalBody(const httplib::Request& req) {
  if (req.body.empty()) return json::object();
  return parseBody(req);
}

void status(const httplib::Request&, httplib::Response& res, Context& ctx) {
  const double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  sendJson(res, 200,
           {{"state", ctx.engine.state().toJson()},
            {"features", ctx.engine.features().toJson()},
            {"current", ctx.engine.current()},
            {"server",
             {{"uptimeS", uptime}, {"threads", ctx.opts.threads}, {"streamsOpen", ctx.metrics.streams_open.load()}}}});
}

void models(const httplib::Request&, httplib::Response& res, Context& ctx) {
  json resident = ctx.engine.state().toJson()["models"];
  json registered = json::array();
  json store_error = nullptr;
  {
    std::lock_guard<std::mutex> lk(ctx.store_mu);
    if (!ctx.store) {
      StoreOptions so;
      so.cache_dir = ctx.opts.cache_dir;
      auto s = ModelStore::open(so);
      if (s)
        ctx.store = std::move(*s);
      else
        store_error = s.error().toJson();
    }
    if (ctx.store) {
      auto l = ctx.store->list();
      if (!l) {
        store_error = l.error().toJson();
      } else {
        for (const auto& m : *l)
          registered.push_back({{"id", m.record.id},
                                {"state", cacheStateName(m.state)},
                                {"url", m.record.url},
                                {"localPath", m.record.local_path},
                                {"bytesOnDisk", m.bytes_on_disk},
                                {"bytesTotal", m.bytes_total}});
      }
    }
  }
  json available = json::array();
  for (const auto& e : prebuiltCatalog())
    available.push_back({{"id", e.model_id},
                         {"quantization", e.quantization},
                         {"arch", e.arch},
                         {"vramRequiredMB", e.vram_required_mb},
                         {"type", e.webllm_model_type}});
  json out = {{"resident", resident}, {"registered", registered}, {"available", available}};
  if (!store_error.is_null()) out["storeError"] = store_error;
  sendJson(res, 200, out);
}

// A load that failed on what the caller named (a missing folder is IO_ERROR with detail.field "model") is
// the caller's input: 4xx, with the engine's code kept.
void sendLoadError(httplib::Response& res, const Error& e) {
  json body = openai::errorJson(e);
  int st = openai::httpStatus(e);
  if (st >= 500 && e.detail.is_object() && e.detail.contains("field")) {
    st = 400;
    body["error"]["type"] = "invalid_request_error";
  }
  sendJson(res, st, body);
}

json modelInfoJson(const ModelInfo& m) {
  return {{"id", m.id},
          {"folder", m.folder},
          {"modelType", m.model_type},
          {"quantization", m.quantization},
          {"contextWindow", m.context_window},
          {"vocab", m.vocab},
          {"rows", m.rows},
          {"weightBytes", m.weight_bytes},
          {"loadMs", m.load_ms},
          {"loadMsByStage", m.load_ms_by_stage}};
}

json progressJson(const LoadProgress& p) {
  return {{"model", p.model},
          {"stage", p.stage},
          {"fraction", p.fraction},
          {"bytes", p.bytes},
          {"totalBytes", p.total_bytes},
          {"pipelines", p.pipelines},
          {"pipelinesTotal", p.pipelines_total}};
}

void load(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto body = parseBody(req);
  if (!body) return sendError(res, body.error());
  if (Status st = onlyFields(*body, {"model", "id", "keep_resident", "stream"}); !st) return sendError(res, st.error());
  std::string model, id;
  bool keep = false, stream = false;
  if (Status st = readString(*body, "model", model, true); !st) return sendError(res, st.error());
  if (Status st = readString(*body, "id", id); !st) return sendError(res, st.error());
  if (Status st = readBool(*body, "keep_resident", keep); !st) return sendError(res, st.error());
  if (Status st = readBool(*body, "stream", stream); !st) return sendError(res, st.error());
  auto q = std::make_shared<EventQueue>();
  LoadOptions lo;
  lo.id = id;
  lo.keep_resident = keep;
  lo.cancel = std::make_shared<std::atomic<bool>>(false);
  if (stream) lo.progress = [q](const LoadProgress& p) { q->push(sseFrame(progressJson(p), "progress")); };
  LoadHandle h = ctx.engine.load(model, lo);
  if (stream) {
    // The closing frame comes from a waiter: the load's result is a handle, not a callback.
    std::thread([h, q] {
      const auto& r = h->wait();  // bounded: a load ends (ready, failed, or cancelled by a departed client)
      if (r)
        q->push(sseFrame(modelInfoJson(*r), "ready"));
      else
        q->push(sseFrame(openai::errorJson(r.error()), "error"));
      q->close();
    }).detach();
    auto cancel = lo.cancel;
    return streamQueue(req, res, ctx, q, [cancel] { cancel->store(true); });
  }
  const int fd = clientSocket(req);
  const Result<ModelInfo>* r = nullptr;
  while (!(r = h->waitFor(100)))
    if (peerClosed(fd) || ctx.stopping) lo.cancel->store(true);
  if (!*r) return sendLoadError(res, r->error());
  sendJson(res, 200, modelInfoJson(**r));
}

void unload(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto body = optionalBody(req);
  if (!body) return sendError(res, body.error());
  if (Status st = onlyFields(*body, {"model"}); !st) return sendError(res, st.error());
  std::string model;
  if (Status st = readString(*body, "model", model); !st) return sendError(res, st.error());
  if (Status st = ctx.engine.unload(model); !st) return sendError(res, st.error());
  sendJson(res, 200, {{"unloaded", model.empty() ? json(nullptr) : json(model)}});
}

json itemJson(const CompletionResult& r) {
  json j = {{"index", r.index},
            {"id", r.id},
            {"model", r.model},
            {"text", r.text},
            {"finish_reason", r.finish_reason},
            {"outcome", outcomeName(r.outcome)},
            {"usage", openai::usageJson(r.usage)},
            {"startedAt", r.started_at_ms},
            {"finishedAt", r.finished_at_ms}};
  if (r.error) j["error"] = r.error->toJson();
  return j;
}

void batch(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto body = parseBody(req);
  if (!body) return sendError(res, body.error());
  if (Status st = onlyFields(*body, {"requests", "task", "stream"}); !st) return sendError(res, st.error());
  bool stream = false;
  if (Status st = readBool(*body, "stream", stream); !st) return sendError(res, st.error());
  std::string task;
  if (Status st = readString(*body, "task", task); !st) return sendError(res, st.error());
  if (!body->contains("requests") || !(*body)["requests"].is_array() || (*body)["requests"].empty())
    return sendError(res, badField("requests", "must be a non-empty list of chat or completion bodies"));
  const json& items = (*body)["requests"];
  if (items.size() > 4096) return sendError(res, badField("requests", "at most 4096 requests per batch"));
  std::vector<CompletionRequest> reqs;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string f = "requests[" + std::to_string(i) + "]";
    if (!items[i].is_object()) return sendError(res, badField(f, "must be an object"));
    json item = items[i];
    if (item.contains("stream") && item["stream"] == true)
      return sendError(res, badField(f + ".stream", "set stream on the batch, not on its items"));
    auto p = item.contains("prompt") ? openai::parseCompletionRequest(item) : openai::parseChatRequest(item);
    if (!p) {
      Error e = std::move(p).error();
      const std::string field = e.detail.is_object() ? e.detail.value("field", "") : "";
      e.detail["field"] = f + (field.empty() ? "" : "." + field);
      e.message = f + "." + e.message;
      return sendError(res, e);
    }
    reqs.push_back(std::move(p->req));
  }
  auto q = std::make_shared<EventQueue>();
  std::function<void(const CompletionResult&)> on_item;
  if (stream) on_item = [q](const CompletionResult& r) { q->push(sseFrame(itemJson(r), "item")); };
  auto h = ctx.engine.batch(std::move(reqs), on_item);
  if (!h) return sendError(res, h.error());
  BatchHandle b = *h;
  Engine* engine = &ctx.engine;
  auto cancel_all = [engine, b] {
    for (uint64_t id : b->ids)
      if (id) engine->cancel(id);
  };
  auto summary = [b](const std::vector<CompletionResult>& rs) {
    json results = json::array();
    for (const auto& r : rs) results.push_back(itemJson(r));
    return json{{"object", "batch"}, {"task", b->task}, {"results", results}};
  };
  (void)task;  // the engine names the batch's task itself ("batch:N"); a caller's name is accepted for the record
  if (stream) {
    std::thread([b, q, summary] {
      const auto& rs = b->wait();  // bounded: every item ends (or is cancelled when the client leaves)
      q->push(sseFrame(summary(rs), "done"));
      q->push("data: [DONE]\n\n");
      q->close();
    }).detach();
    return streamQueue(req, res, ctx, q, cancel_all);
  }
  const int fd = clientSocket(req);
  while (!b->results->waitFor(ctx.opts.disconnect_poll_ms))
    if (peerClosed(fd) || ctx.stopping) {
      cancel_all();
      b->wait();
      return;
    }
  sendJson(res, 200, summary(b->wait()));
}

void cancel(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto body = parseBody(req);
  if (!body) return sendError(res, body.error());
  if (Status st = onlyFields(*body, {"id", "session"}); !st) return sendError(res, st.error());
  const bool has_id = body->contains("id") && !(*body)["id"].is_null();
  const bool has_session = body->contains("session") && !(*body)["session"].is_null();
  if (has_id == has_session) return sendError(res, badField("id", "give exactly one of id and session"));
  size_t n = 0;
  if (has_id) {
    const json& id = (*body)["id"];
    if (id.is_number_unsigned())
      n = ctx.engine.cancel(id.get<uint64_t>());
    else if (id.is_string() && !id.get<std::string>().empty() && id.get<std::string>().size() < 64) {
      const std::string s = id.get<std::string>();
      const std::string digits = s.rfind("job-", 0) == 0 ? s.substr(4) : s;
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        return sendError(res, badField("id", "must be a job id (123 or \"job-123\")"));
      n = ctx.engine.cancel(s);
    } else
      return sendError(res, badField("id", "must be a job id (123 or \"job-123\")"));
  } else {
    std::string session;
    if (Status st = readString(*body, "session", session, true); !st) return sendError(res, st.error());
    n = ctx.engine.cancel(session);
  }
  sendJson(res, 200, {{"cancelled", n}});
}

void configure(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto body = parseBody(req);
  if (!body) return sendError(res, body.error());
  if (Status st = onlyFields(*body, {"decode_steps", "rows", "task_share"}); !st) return sendError(res, st.error());
  EngineConfig c;
  for (const char* k : {"decode_steps", "rows"}) {
    if (!body->contains(k) || (*body)[k].is_null()) continue;
    const json& v = (*body)[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1024)
      return sendError(res, badField(k, "must be a positive integer"));
    (std::string(k) == "rows" ? c.rows : c.decode_steps) = (uint32_t)v.get<int64_t>();
  }
  if (body->contains("task_share") && !(*body)["task_share"].is_null()) {
    const json& v = (*body)["task_share"];
    if (!v.is_number()) return sendError(res, badField("task_share", "must be a number in (0, 1]"));
    c.task_share = v.get<double>();
  }
  if (Status st = ctx.engine.configure(c); !st) return sendError(res, st.error());
  sendJson(res, 200, {{"features", ctx.engine.features().toJson()}});
}

void events(const httplib::Request& req, httplib::Response& res, Context& ctx) {
  auto q = std::make_shared<EventQueue>();
  Engine* engine = &ctx.engine;
  q->push(sseFrame({{"type", "state"}, {"state", engine->state().toJson()}}, "state"));
  // Each change with the state after it. Runs on the engine's callback thread: it only queues.
  auto unsubscribe = engine->subscribe([q, engine](const EngineEvent& e) {
    q->push(sseFrame({{"type", e.type}, {"data", e.data}, {"state", engine->state().toJson()}}, e.type));
  });
  streamQueue(req, res, ctx, q, unsubscribe);
}

}  // namespace

std::vector<Route> engineRoutes() {
  return {{{"GET", "/v1/engine/status"}, "/v1/engine/status", status},
          {{"GET", "/v1/engine/models"}, "/v1/engine/models", models},
          {{"POST", "/v1/engine/load"}, "/v1/engine/load", load},
          {{"POST", "/v1/engine/unload"}, "/v1/engine/unload", unload},
          {{"POST", "/v1/engine/batch"}, "/v1/engine/batch", batch},
          {{"POST", "/v1/engine/cancel"}, "/v1/engine/cancel", cancel},
          {{"POST", "/v1/engine/configure"}, "/v1/engine/configure", configure},
          {{"GET", "/v1/engine/events"}, "/v1/engine/events", events}};
}

}  // namespace ewgpu::server
