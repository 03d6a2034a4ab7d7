// Conversation template parsing, the built-in registry (values of mlc-format.md §4.4) and rendering.
#include "tokenizer/conv_template.h"

#include <cstdint>

#include "model/conv_template_presets.h"

namespace ewgpu {

namespace {

Error configError(std::string problem) {
  return makeError(ErrorCode::kInvalidModelFolder, "conv_template: " + problem,
                   {{"file", "mlc-chat-config.json"}, {"problem", problem}});
}

// INVALID_MODEL_FOLDER {file, field: "conv_template.<key>", problem}.
Error fieldError(const std::string& key, const std::string& problem, const std::string& what) {
  const std::string field = "conv_template" + (key.empty() ? "" : "." + key);
  return makeError(ErrorCode::kInvalidModelFolder, "mlc-chat-config.json: " + field + " " + what,
                   {{"file", "mlc-chat-config.json"}, {"field", field}, {"problem", problem}});
}

// The text of `s` after its last "</think>", without the newlines that follow the tag.
std::string afterReasoning(const std::string& s) {
  const size_t p = s.rfind("</think>");
  if (p == std::string::npos) return s;
  size_t b = p + 8;
  while (b < s.size() && s[b] == '\n') ++b;
  return s.substr(b);
}

void replaceFirst(std::string& s, std::string_view placeholder, const std::string& value) {
  const size_t p = s.find(placeholder);
  if (p != std::string::npos) s.replace(p, placeholder.size(), value);
}

nlohmann::json chatmlBase(const char* name, const char* systemMessage) {
  return {{"name", name},
          {"system_template", "<|im_start|>system\n{system_message}<|im_end|>\n"},
          {"system_message", systemMessage},
          {"roles", {{"user", "<|im_start|>user"}, {"assistant", "<|im_start|>assistant"}}},
          {"seps", {"<|im_end|>\n"}},
          {"role_content_sep", "\n"},
          {"role_empty_sep", "\n"},
          {"stop_str", {"<|endoftext|>", "<|im_end|>"}},
          {"stop_token_ids", {151643, 151645}}};
}

nlohmann::json llama3Base(const char* name) {
  return {{"name", name},
          {"system_template", "<|start_header_id|>system<|end_header_id|>\n\n{system_message}<|eot_id|>"},
          {"system_message", "You are a helpful, respectful and honest assistant."},
          {"roles", {{"user", "<|start_header_id|>user"}, {"assistant", "<|start_header_id|>assistant"}}},
          {"seps", {"<|eot_id|>"}},
          {"role_content_sep", "<|end_header_id|>\n\n"},
          {"role_empty_sep", "<|end_header_id|>\n\n"},
          {"stop_str", {"<|end_of_text|>", "<|eot_id|>"}},
          {"stop_token_ids", {128001, 128009}},
          {"system_prefix_token_ids", {128000}}};
}

std::optional<nlohmann::json> builtinJson(std::string_view name) {
  if (name == "chatml") {
    auto j = chatmlBase("chatml",
                        "A conversation between a user and an LLM-based AI assistant. The assistant gives helpful "
                        "and honest answers.");
    j["stop_str"] = {"<|im_end|>"};
    j["stop_token_ids"] = {2};
    return j;
  }
  if (name == "qwen2") return chatmlBase("qwen2", "You are a helpful assistant.");
  if (name == "qwen3") {
    auto j = chatmlBase("qwen3", "You are a helpful assistant.");
    j["strip_reasoning_in_history"] = true;
    return j;
  }
  if (name == "qwen3_5" || name == "qwen3_5_nothink") {
    auto j = chatmlBase(name == "qwen3_5" ? "qwen3_5" : "qwen3_5_nothink", "You are a helpful assistant.");
    j["roles"]["assistant"] =
        name == "qwen3_5" ? "<|im_start|>assistant\n<think>" : "<|im_start|>assistant\n<think>\n\n</think>\n";
    j["stop_token_ids"] = {248046, 248044};
    return j;
  }
  if (name == "llama-3") return llama3Base("llama-3");
  if (name == "llama-3_1") {
    auto j = llama3Base("llama-3_1");
    j["roles"]["tool"] = "<|start_header_id|>ipython";
    j["stop_str"] = nlohmann::json::array();
    j["stop_token_ids"] = {128001, 128008, 128009};
    return j;
  }
  if (name == "llama-2") {
    return nlohmann::json{{"name", "llama-2"},
                          {"system_template", "[INST] <<SYS>>\n{system_message}\n<</SYS>>\n\n"},
                          {"system_message", "You are a helpful, respectful and honest assistant."},
                          {"roles", {{"user", "<s>[INST]"}, {"assistant", "[/INST]"}, {"tool", "[INST]"}}},
                          {"seps", {" ", " </s>"}},
                          {"role_content_sep", " "},
                          {"role_empty_sep", " "},
                          {"stop_str", {"[INST]"}},
                          {"stop_token_ids", {2}},
                          {"system_prefix_token_ids", {1}},
                          {"add_role_after_system_message", false}};
  }
  if (auto j = extraConvTemplate(name); !j.is_null()) return j;
  return std::nullopt;
}

template <class T>
bool readField(const nlohmann::json& j, const char* key, T& out, std::optional<Error>& error) {
  if (!j.contains(key) || j[key].is_null()) return true;  // keep the default
  try {
    out = j[key].get<T>();
    return true;
  } catch (const nlohmann::json::exception&) {
    error = fieldError(key, "wrong_type", "has the wrong type");
    return false;
  }
}

// A list of token ids: integers in [0, 2^31).
bool readIds(const nlohmann::json& j, const char* key, std::vector<int32_t>& out, std::optional<Error>& error) {
  if (!j.contains(key) || j[key].is_null()) return true;
  const nlohmann::json& v = j[key];
  if (!v.is_array()) {
    error = fieldError(key, "wrong_type", "is not an array");
    return false;
  }
  out.clear();
  for (const auto& id : v) {
    if (!id.is_number_integer() || (!id.is_number_unsigned() && id.get<int64_t>() < 0) ||
        id.get<uint64_t>() > (uint64_t)INT32_MAX) {
      error = fieldError(key, id.is_number_integer() ? "bad_value" : "wrong_type", "holds " + id.dump() + ", not a token id");
      return false;
    }
    out.push_back((int32_t)id.get<int64_t>());
  }
  return true;
}

}  // namespace

std::vector<std::string> ConvTemplate::builtinNames() {
  std::vector<std::string> names = {"chatml",          "qwen2",   "qwen3",     "qwen3_5",
                                    "qwen3_5_nothink", "llama-3", "llama-3_1", "llama-2"};
  for (auto& n : extraConvTemplateNames()) names.push_back(n);
  return names;
}

Result<ConvTemplate> ConvTemplate::builtin(std::string_view name) {
  auto j = builtinJson(name);
  if (!j)
    return makeError(ErrorCode::kBadRequest, "unknown conversation template " + std::string(name),
                     {{"name", std::string(name)}, {"known", builtinNames()}});
  return fromJson(*j);
}

Result<ConvTemplate> ConvTemplate::fromJson(const nlohmann::json& j) {
  if (j.is_string()) {
    auto t = builtin(j.get<std::string>());
    if (!t.ok()) return configError("unknown template name " + j.get<std::string>());
    return t;
  }
  if (!j.is_object()) return fieldError("", "wrong_type", "is neither an object nor a name");
  ConvTemplate t;
  std::optional<Error> error;
  std::vector<nlohmann::json> history;
  std::vector<int32_t> prefix;
  bool ok = readField(j, "name", t.name_, error) && readField(j, "system_template", t.systemTemplate_, error) &&
            readField(j, "system_message", t.systemMessage_, error) &&
            readIds(j, "system_prefix_token_ids", prefix, error) &&
            readField(j, "add_role_after_system_message", t.addRoleAfterSystemMessage_, error) &&
            readField(j, "roles", t.roles_, error) && readField(j, "seps", t.seps_, error) &&
            readField(j, "role_content_sep", t.roleContentSep_, error) &&
            readField(j, "role_empty_sep", t.roleEmptySep_, error) && readField(j, "stop_str", t.stopStr_, error) &&
            readIds(j, "stop_token_ids", t.stopTokenIds_, error) &&
            readField(j, "strip_reasoning_in_history", t.stripReasoningInHistory_, error) &&
            readField(j, "messages", history, error);
  if (!ok) return *error;
  if (j.contains("role_templates") && !j["role_templates"].is_null()) {
    std::map<std::string, std::string> rt;
    if (!j["role_templates"].is_object()) return fieldError("role_templates", "wrong_type", "is not an object");
    if (!readField(j, "role_templates", rt, error)) return *error;
    for (auto& [role, tpl] : rt) t.roleTemplates_[role] = tpl;
  }
  t.systemPrefixTokenIds_ = std::move(prefix);
  if (t.roles_.count("assistant") == 0) return fieldError("roles", "missing_field", "has no assistant entry");
  if (t.seps_.empty()) return fieldError("seps", "bad_value", "is empty");
  for (const auto& m : history) {
    if (!m.is_array() || m.size() != 2 || !m[0].is_string() || !(m[1].is_string() || m[1].is_null()))
      return fieldError("messages", "wrong_type", "entries must be [role, content|null]");
    t.messages_.push_back(
        {m[0].get<std::string>(), m[1].is_null() ? std::nullopt : std::optional<std::string>(m[1].get<std::string>())});
  }
  return t;
}

std::string ConvTemplate::roleText(const std::string& role, const std::string& content) const {
  auto it = roleTemplates_.find(role);
  std::string text = it == roleTemplates_.end() ? "{" + role + "_message}" : it->second;
  replaceFirst(text, "{" + role + "_message}", content);
  return text;
}

Result<std::string> ConvTemplate::render(std::span<const ChatMessage> messages, bool addGenerationHeader,
                                         bool enableThinking) const {
  // 1. System text: all system messages (history first) replace the default system message.
  bool customSystem = false;
  std::string system;
  for (const auto& m : messages_)
    if (m.role == "system" && m.content) system += *m.content, customSystem = true;
  for (const auto& m : messages)
    if (m.role == "system") system += m.content, customSystem = true;
  std::string buf = systemTemplate_;
  replaceFirst(buf, "{system_message}", customSystem ? system : systemMessage_);
  // No function calling here: its placeholder (ministral3's system template has one) renders as nothing,
  // as in mlc-llm's Conversation.as_prompt.
  for (size_t p; (p = buf.find("{function_string}")) != std::string::npos;) buf.erase(p, 17);

  // 2. The conversation: pre-filled history then the request, reasoning stripped from old assistant turns.
  std::vector<HistoryEntry> all = messages_;
  size_t requestStart = all.size();
  for (const auto& m : messages) all.push_back({m.role, m.content});
  if (stripReasoningInHistory_) {
    size_t lastUser = SIZE_MAX;
    for (size_t i = requestStart; i < all.size(); ++i)
      if (all[i].role == "user") lastUser = i;
    for (size_t i = requestStart; lastUser != SIZE_MAX && i < lastUser; ++i)
      if (all[i].role == "assistant" && all[i].content) all[i].content = afterReasoning(*all[i].content);
  }

  // 3. One block per non-system message.
  size_t counted = 0;
  for (const auto& m : all) {
    if (m.role == "system") continue;
    auto role = roles_.find(m.role);
    if (role == roles_.end())
      return makeError(ErrorCode::kBadRequest, "role \"" + m.role + "\" is not supported by the template",
                       {{"role", m.role}, {"template", name_}});
    if (!m.content) {
      buf += role->second + roleEmptySep_;
      continue;
    }
    ++counted;
    const std::string& sep = seps_[(m.role == "assistant" ? 1 : 0) % seps_.size()];
    if (addRoleAfterSystemMessage_ || buf.empty() || counted != 1) buf += role->second + roleContentSep_;
    buf += roleText(m.role, *m.content) + sep;
  }

  // 4. The generation header.
  if (addGenerationHeader) {
    const std::string& assistant = roles_.at("assistant");
    if (enableThinking)
      buf += assistant + roleEmptySep_;
    else
      buf += assistant + roleContentSep_ + "<think>\n\n</think>\n\n";
  }
  return buf;
}

Result<std::vector<int32_t>> ConvTemplate::renderTokens(const Tokenizer& tokenizer,
                                                        std::span<const ChatMessage> messages,
                                                        bool enableThinking) const {
  auto prompt = render(messages, true, enableThinking);
  if (!prompt.ok()) return std::move(prompt).error();
  std::vector<int32_t> ids = systemPrefixTokenIds_;
  const auto body = tokenizer.encode(*prompt);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

}  // namespace ewgpu
