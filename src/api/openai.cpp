#include "api/openai.h"

#include <cmath>
#include <set>

namespace ewgpu::openai {
namespace {

using json = nlohmann::json;

Error unsupported(const std::string& field, const std::string& message) {
  return makeError(ErrorCode::kUnsupported, field + ": " + message, {{"field", field}});
}

// Typed field readers: absent or null leaves the target unset; a present value of the wrong type or out of
// range is BAD_REQUEST naming the field.
Status readNumber(const json& b, const char* k, double lo, double hi, std::optional<float>& out) {
  if (!b.contains(k) || b[k].is_null()) return {};
  if (!b[k].is_number()) return badField(k, "must be a number");
  const double v = b[k].get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    return badField(k, "must be in [" + json(lo).dump() + ", " + json(hi).dump() + "]", {{"value", v}});
  out = (float)v;
  return {};
}

Status readCount(const json& b, const char* k, int64_t lo, int64_t hi, std::optional<uint32_t>& out) {
  if (!b.contains(k) || b[k].is_null()) return {};
  const json& v = b[k];
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    return badField(k, "must be an integer");
  const double d = v.get<double>();
  if (d < (double)lo || d > (double)hi)
    return badField(k, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", {{"value", v}});
  out = (uint32_t)d;
  return {};
}

Status readBool(const json& b, const char* k, bool& out) {
  if (!b.contains(k) || b[k].is_null()) return {};
  if (!b[k].is_boolean()) return badField(k, "must be true or false");
  out = b[k].get<bool>();
  return {};
}

Status readString(const json& b, const char* k, std::string& out, size_t max_len = 256) {
  if (!b.contains(k) || b[k].is_null()) return {};
  if (!b[k].is_string()) return badField(k, "must be a string");
  out = b[k].get<std::string>();
  if (out.size() > max_len) return badField(k, "longer than " + std::to_string(max_len) + " bytes");
  return {};
}

// response_format, in OpenAI's shapes ({type: "text" | "json_object"}, {type: "json_schema", json_schema: {name,
// schema, strict, description}}) and WebLLM's ({type: "json_object", schema: "<a JSON Schema as a string>"}).
Status readResponseFormat(const json& b, CompletionRequest& r) {
  if (!b.contains("response_format") || b["response_format"].is_null()) return {};
  const json& rf = b["response_format"];
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
    return badField("response_format", "must be an object with a type");
  const std::string type = rf["type"].get<std::string>();
  ResponseFormat out;
  if (type == "text") {
    for (const auto& [k, v] : rf.items())
      if (k != "type") return badField("response_format." + k, "unknown field");
    return {};
  }
  if (type == "grammar") return unsupported("response_format.type", "grammar (EBNF) is not supported; use json_schema");
  if (type == "json_object") {
    out.type = "json_object";
    for (const auto& [k, v] : rf.items())
      if (k != "type" && k != "schema") return badField("response_format." + k, "unknown field");
    if (rf.contains("schema") && !rf["schema"].is_null()) {  // WebLLM: the schema as a JSON string
      out.type = "json_schema";
      if (rf["schema"].is_string()) {
        out.schema = json::parse(rf["schema"].get<std::string>(), nullptr, false);
        if (out.schema.is_discarded()) return badField("response_format.schema", "is not valid JSON");
      } else if (rf["schema"].is_object() || rf["schema"].is_boolean()) {
        out.schema = rf["schema"];
      } else {
        return badField("response_format.schema", "must be a JSON Schema (an object, or one as a string)");
      }
    }
  } else if (type == "json_schema") {
    out.type = "json_schema";
    for (const auto& [k, v] : rf.items())
      if (k != "type" && k != "json_schema") return badField("response_format." + k, "unknown field");
    if (!rf.contains("json_schema") || !rf["json_schema"].is_object())
      return badField("response_format.json_schema", "required: an object with name and schema");
    const json& js = rf["json_schema"];
    for (const auto& [k, v] : js.items())
      if (k != "name" && k != "schema" && k != "strict" && k != "description")
        return badField("response_format.json_schema." + k, "unknown field");
    if (!js.contains("name") || !js["name"].is_string() || js["name"].get<std::string>().empty())
      return badField("response_format.json_schema.name", "required: a non-empty string");
    out.name = js["name"].get<std::string>();
    if (out.name.size() > 64) return badField("response_format.json_schema.name", "longer than 64 characters");
    if (js.contains("strict") && !js["strict"].is_null()) {
      if (!js["strict"].is_boolean()) return badField("response_format.json_schema.strict", "must be true or false");
      out.strict = js["strict"].get<bool>();
    }
    if (js.contains("description") && !js["description"].is_null() && !js["description"].is_string())
      return badField("response_format.json_schema.description", "must be a string");
    if (js.contains("schema") && !js["schema"].is_null()) {
      if (!js["schema"].is_object() && !js["schema"].is_boolean())
        return badField("response_format.json_schema.schema", "must be a JSON Schema (an object or a boolean)");
      out.schema = js["schema"];
    }
  } else {
    return badField("response_format.type", "must be text, json_object or json_schema", {{"value", type}});
  }
  r.response_format = std::move(out);
  return {};
}

// The fields both shapes share: sampling, stop, logit_bias, logprobs, scheduling, stream.
Status readCommon(const json& b, ParsedRequest& p, std::set<std::string>& known) {
  CompletionRequest& r = p.req;
  known.insert({"model", "max_tokens", "temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty",
                "repetition_penalty", "seed", "stop", "logit_bias", "stream", "stream_options", "n", "user",
                "priority", "session", "task", "preemptible", "metadata", "logprobs", "top_logprobs",
                "response_format"});
  EWGPU_TRY(readResponseFormat(b, r));
  EWGPU_TRY(readString(b, "model", r.model));
  std::optional<uint32_t> n;
  EWGPU_TRY(readCount(b, "n", 1, 128, n));
  if (n && *n != 1) return unsupported("n", "only n = 1 is supported (send n requests instead)");
  EWGPU_TRY(readCount(b, "max_tokens", 1, 1u << 30, r.max_tokens));
  EWGPU_TRY(readNumber(b, "temperature", 0, 2, r.temperature));
  EWGPU_TRY(readNumber(b, "top_p", 1e-6, 1, r.top_p));
  EWGPU_TRY(readCount(b, "top_k", 0, 1u << 30, r.top_k));
  EWGPU_TRY(readNumber(b, "presence_penalty", -2, 2, r.presence_penalty));
  EWGPU_TRY(readNumber(b, "frequency_penalty", -2, 2, r.frequency_penalty));
  EWGPU_TRY(readNumber(b, "repetition_penalty", 1e-3, 100, r.repetition_penalty));
  if (b.contains("seed") && !b["seed"].is_null()) {
    if (!b["seed"].is_number_integer()) return badField("seed", "must be an integer");
    r.seed = b["seed"].is_number_unsigned() ? b["seed"].get<uint64_t>() : (uint64_t)b["seed"].get<int64_t>();
  }
  if (b.contains("stop") && !b["stop"].is_null()) {
    const json& s = b["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      if (s.size() > 16) return badField("stop", "at most 16 stop strings", {{"count", s.size()}});
      for (const auto& x : s) {
        if (!x.is_string()) return badField("stop", "must be a string or a list of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      return badField("stop", "must be a string or a list of strings");
    }
    for (const auto& x : r.stop)
      if (x.empty()) return badField("stop", "stop strings must not be empty");
  }
  if (b.contains("logit_bias") && !b["logit_bias"].is_null()) {
    const json& lb = b["logit_bias"];
    if (!lb.is_object()) return badField("logit_bias", "must be an object of token id -> bias");
    if (lb.size() > kSampleMaxBias) return badField("logit_bias", "at most 16 entries", {{"count", lb.size()}});
    for (const auto& [k, v] : lb.items()) {
      char* end = nullptr;
      const long id = std::strtol(k.c_str(), &end, 10);
      if (k.empty() || *end != '\0' || id < 0 || id > INT32_MAX) return badField("logit_bias", "keys must be token ids", {{"key", k}});
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < -100 || v.get<double>() > 100)
        return badField("logit_bias", "values must be numbers in [-100, 100]", {{"key", k}});
      r.logit_bias.push_back({(int32_t)id, v.get<float>()});
    }
  }
  EWGPU_TRY(readBool(b, "stream", p.stream));
  if (b.contains("stream_options") && !b["stream_options"].is_null()) {
    const json& so = b["stream_options"];
    if (!so.is_object()) return badField("stream_options", "must be an object");
    for (const auto& [k, v] : so.items())
      if (k != "include_usage") return badField("stream_options." + k, "unknown field");
    if (so.contains("include_usage") && !so["include_usage"].is_boolean())
      return badField("stream_options.include_usage", "must be true or false");
    p.include_usage = so.value("include_usage", false);
  }
  if (b.contains("user") && !b["user"].is_null() && !b["user"].is_string()) return badField("user", "must be a string");
  if (b.contains("metadata") && !b["metadata"].is_null() && !b["metadata"].is_object())
    return badField("metadata", "must be an object");
  std::string priority;
  EWGPU_TRY(readString(b, "priority", priority));
  if (!priority.empty()) EWGPU_ASSIGN(r.priority, priorityFromName(priority));
  EWGPU_TRY(readString(b, "session", r.session));
  EWGPU_TRY(readString(b, "task", r.task));
  EWGPU_TRY(readBool(b, "preemptible", r.preemptible));
  return {};
}

Status rejectUnknown(const json& b, const std::set<std::string>& known) {
  for (const auto& [k, v] : b.items())
    if (!known.count(k)) return badField(k, "unknown field");
  return {};
}

}  // namespace

Result<ParsedRequest> parseChatRequest(const json& b) {
  if (!b.is_object()) return badField("body", "the request must be a JSON object");
  ParsedRequest p;
  std::set<std::string> known = {"messages", "max_completion_tokens", "tools", "tool_choice",
                                 "parallel_tool_calls", "extra_body"};
  EWGPU_TRY(readCommon(b, p, known));
  std::optional<uint32_t> mct;
  EWGPU_TRY(readCount(b, "max_completion_tokens", 1, 1u << 30, mct));
  if (mct) p.req.max_tokens = mct;
  if (b.contains("logprobs") && !b["logprobs"].is_null()) {
    if (!b["logprobs"].is_boolean()) return badField("logprobs", "must be true or false");
    p.req.logprobs = b["logprobs"].get<bool>();
  }
  std::optional<uint32_t> top;
  EWGPU_TRY(readCount(b, "top_logprobs", 0, kSampleMaxTop, top));
  if (top) {
    if (!p.req.logprobs && *top > 0) return badField("top_logprobs", "needs logprobs: true");
    p.req.top_logprobs = *top;
  }
  if (!b.contains("messages")) return badField("messages", "required");
  const json& ms = b["messages"];
  if (!ms.is_array() || ms.empty()) return badField("messages", "must be a non-empty list");
  for (size_t i = 0; i < ms.size(); ++i) {
    const std::string f = "messages[" + std::to_string(i) + "]";
    const json& m = ms[i];
    if (!m.is_object()) return badField(f, "must be an object");
    for (const auto& [k, v] : m.items())
      if (k != "role" && k != "content" && k != "name") return badField(f + "." + k, "unknown field");
    if (!m.contains("role") || !m["role"].is_string()) return badField(f + ".role", "required string");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      return badField(f + ".role", "must be system, developer, user or assistant", {{"value", role}});
    std::string content;
    if (!m.contains("content") || m["content"].is_null()) return badField(f + ".content", "required");
    if (m["content"].is_string()) {
      content = m["content"].get<std::string>();
    } else if (m["content"].is_array()) {
      for (size_t j = 0; j < m["content"].size(); ++j) {
        const json& part = m["content"][j];
        const std::string pf = f + ".content[" + std::to_string(j) + "]";
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
          return badField(pf, "must be an object with a type");
        if (part["type"] != "text") return unsupported(pf + ".type", "only text content is supported");
        if (!part.contains("text") || !part["text"].is_string()) return badField(pf + ".text", "required string");
        content += part["text"].get<std::string>();
      }
    } else {
      return badField(f + ".content", "must be a string or a list of text parts");
    }
    p.req.messages.push_back({role == "developer" ? "system" : role, content});
  }
  if (b.contains("tools") && !b["tools"].is_null() && !(b["tools"].is_array() && b["tools"].empty()))
    return unsupported("tools", "tool calling is not supported");
  if (b.contains("tool_choice") && !b["tool_choice"].is_null() && b["tool_choice"] != "none")
    return unsupported("tool_choice", "tool calling is not supported");
  if (b.contains("extra_body") && !b["extra_body"].is_null() && !b["extra_body"].is_object())
    return badField("extra_body", "must be an object");
  EWGPU_TRY(rejectUnknown(b, known));
  return p;
}

Result<ParsedRequest> parseCompletionRequest(const json& b) {
  if (!b.is_object()) return badField("body", "the request must be a JSON object");
  ParsedRequest p;
  p.chat = false;
  std::set<std::string> known = {"prompt", "echo", "suffix", "best_of"};
  EWGPU_TRY(readCommon(b, p, known));
  if (b.contains("logprobs") && !b["logprobs"].is_null()) {  // completions: an integer count of top logprobs
    std::optional<uint32_t> lp;
    EWGPU_TRY(readCount(b, "logprobs", 0, kSampleMaxTop, lp));
    p.req.logprobs = true;
    p.req.top_logprobs = *lp;
  }
  if (!b.contains("prompt")) return badField("prompt", "required");
  const json& pr = b["prompt"];
  if (pr.is_string()) {
    p.req.prompt = pr.get<std::string>();
  } else if (pr.is_array() && pr.size() == 1 && pr[0].is_string()) {
    p.req.prompt = pr[0].get<std::string>();
  } else if (pr.is_array() && pr.size() > 1) {
    return unsupported("prompt", "one prompt per request");
  } else {
    return badField("prompt", "must be a string");
  }
  if (p.req.prompt->empty()) return badField("prompt", "must not be empty");
  if (b.contains("echo") && !b["echo"].is_null() && b["echo"] != false) return unsupported("echo", "not supported");
  if (b.contains("suffix") && !b["suffix"].is_null()) return unsupported("suffix", "not supported");
  std::optional<uint32_t> best_of;
  EWGPU_TRY(readCount(b, "best_of", 1, 128, best_of));
  if (best_of && *best_of != 1) return unsupported("best_of", "only best_of = 1 is supported");
  EWGPU_TRY(rejectUnknown(b, known));
  return p;
}

Status applySchedulingHeaders(CompletionRequest& req, const std::string& session, const std::string& priority) {
  if (req.session.empty() && !session.empty()) {
    if (session.size() > 256) return badField("X-Session", "longer than 256 bytes");
    req.session = session;
  }
  if (!priority.empty() && req.priority == Priority::kNormal) {
    auto p = priorityFromName(priority);
    if (!p) return badField("X-Priority", "must be interactive, normal or background", {{"value", priority}});
    req.priority = *p;
  }
  return {};
}

ResponseBuilder::ResponseBuilder(bool chat, std::string id, int64_t created, std::string model,
                                 std::function<std::string(int32_t)> token_text, bool logprobs)
    : chat_(chat), id_(std::move(id)), created_(created), model_(std::move(model)),
      token_text_(std::move(token_text)), logprobs_(logprobs) {}

json ResponseBuilder::chunkBase() const {
  return {{"id", id_}, {"object", chat_ ? "chat.completion.chunk" : "text_completion"}, {"created", created_},
          {"model", model_}, {"system_fingerprint", nullptr}};
}

json ResponseBuilder::logprobsJson(const std::vector<TokenInfo>& tokens) const {
  if (!logprobs_) return nullptr;
  auto text = [&](int32_t id) { return token_text_ ? token_text_(id) : std::to_string(id); };
  auto bytes = [](const std::string& s) {
    json a = json::array();
    for (unsigned char c : s) a.push_back((int)c);
    return a;
  };
  if (chat_) {
    json content = json::array();
    for (const auto& t : tokens) {
      json top = json::array();
      for (const auto& x : t.top) {
        std::string s = text(x.id);
        top.push_back({{"token", s}, {"logprob", x.logprob}, {"bytes", bytes(s)}});
      }
      std::string s = text(t.id);
      content.push_back({{"token", s}, {"logprob", t.logprob}, {"bytes", bytes(s)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json toks = json::array(), lps = json::array(), tops = json::array();
  for (const auto& t : tokens) {
    toks.push_back(text(t.id));
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& x : t.top) top[text(x.id)] = x.logprob;
    tops.push_back(top);
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", json::array()}};
}

std::vector<json> ResponseBuilder::chunks(const Chunk& c) {
  std::vector<json> out;
  if (chat_ && !role_sent_) {
    json j = chunkBase();
    j["choices"] = {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                     {"finish_reason", nullptr}}};
    out.push_back(std::move(j));
    role_sent_ = true;
  }
  if (c.delta.empty() && (!logprobs_ || c.tokens.empty())) return out;
  json j = chunkBase();
  if (chat_)
    j["choices"] = {{{"index", 0}, {"delta", {{"content", c.delta}}}, {"logprobs", logprobsJson(c.tokens)},
                     {"finish_reason", nullptr}}};
  else
    j["choices"] = {{{"index", 0}, {"text", c.delta}, {"logprobs", logprobsJson(c.tokens)}, {"finish_reason", nullptr}}};
  out.push_back(std::move(j));
  return out;
}

std::vector<json> ResponseBuilder::finalChunks(const CompletionResult& r, bool include_usage) {
  std::vector<json> out = chunks(Chunk{});
  json j = chunkBase();
  const std::string reason = r.finish_reason == "error" ? "abort" : r.finish_reason;
  if (chat_)
    j["choices"] = {{{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", reason}}};
  else
    j["choices"] = {{{"index", 0}, {"text", ""}, {"logprobs", nullptr}, {"finish_reason", reason}}};
  j["ewgpu"] = extensionJson(r);
  out.push_back(std::move(j));
  if (include_usage) {
    json u = chunkBase();
    u["choices"] = json::array();
    u["usage"] = usageJson(r.usage);
    out.push_back(std::move(u));
  }
  return out;
}

json ResponseBuilder::response(const CompletionResult& r) const {
  json j = {{"id", id_}, {"created", created_}, {"model", model_}, {"system_fingerprint", nullptr}};
  const std::string reason = r.finish_reason == "error" ? "abort" : r.finish_reason;
  if (chat_) {
    j["object"] = "chat.completion";
    j["choices"] = {{{"index", 0},
                     {"message", {{"role", "assistant"}, {"content", r.text}, {"refusal", nullptr}}},
                     {"logprobs", logprobsJson(r.logprobs)},
                     {"finish_reason", reason}}};
  } else {
    j["object"] = "text_completion";
    j["choices"] = {{{"index", 0}, {"text", r.text}, {"logprobs", logprobsJson(r.logprobs)}, {"finish_reason", reason}}};
  }
  j["usage"] = usageJson(r.usage);
  j["ewgpu"] = extensionJson(r);
  return j;
}

json extensionJson(const CompletionResult& r) {
  json j = {{"outcome", outcomeName(r.outcome)},
            {"job", r.id},
            {"startedAt", r.started_at_ms},
            {"finishedAt", r.finished_at_ms},
            {"timings",
             {{"queued_ms", r.timings.queued_ms}, {"ttft_ms", r.timings.ttft_ms}, {"prefill_ms", r.timings.prefill_ms},
              {"decode_ms", r.timings.decode_ms}, {"total_ms", r.timings.total_ms},
              {"prefill_tok_s", r.timings.prefill_tok_s}, {"decode_tok_s", r.timings.decode_tok_s}}}};
  if (r.error) j["error"] = r.error->toJson();
  return j;
}

json usageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

int httpStatus(const Error& e) {
  switch (e.code) {
    case ErrorCode::kBadRequest:
    case ErrorCode::kUnsupported:
    case ErrorCode::kInvalidModelFolder: return 400;
    case ErrorCode::kContextTooLong: return 400;
    case ErrorCode::kUnknownModel: return 404;
    case ErrorCode::kNoModel:
    case ErrorCode::kCacheIncomplete: return 409;
    case ErrorCode::kCancelled: return 499;
    case ErrorCode::kNoWebGPU:
    case ErrorCode::kDeviceLost:
    case ErrorCode::kOutOfMemory:
    case ErrorCode::kEngineClosed: return 503;
    default: return 500;
  }
}

json errorJson(const Error& e) {
  const int status = httpStatus(e);
  const char* type = status < 500 ? "invalid_request_error" : "server_error";
  json param = e.detail.is_object() && e.detail.contains("field") ? e.detail["field"] : json(nullptr);
  return {{"error",
           {{"message", e.message}, {"type", type}, {"param", param}, {"code", errorCodeName(e.code)},
            {"detail", e.detail}}}};
}

}  // namespace ewgpu::openai
