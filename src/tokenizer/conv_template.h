// Conversation templates: the `conv_template` object of mlc-chat-config.json (or a legacy template name
// resolved through the built-in registry) and the prompt rendering of MLC's native engine (CreatePrompt;
// docs mlc-format.md §4.2): system text from the system template, one role-prefixed block per message
// with its separator, then the assistant generation header. Tokens = system_prefix_token_ids followed by
// encode(prompt) (add_special_tokens = false, so template markers become their special-token ids).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tokenizer/tokenizer.h"

namespace ewgpu {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
};

class ConvTemplate {
 public:
  // `j` is the conv_template value: an object (fields of mlc-format.md §4.1) or a legacy name string.
  // Errors: INVALID_MODEL_FOLDER with detail {file: "mlc-chat-config.json", problem}.
  static Result<ConvTemplate> fromJson(const nlohmann::json& j);
  // chatml, qwen2, qwen3, qwen3_5, qwen3_5_nothink, llama-3, llama-3_1, llama-2. Unknown: BAD_REQUEST.
  static Result<ConvTemplate> builtin(std::string_view name);
  static std::vector<std::string> builtinNames();

  // The prompt text. A role the template has no prefix for is BAD_REQUEST (detail {role}).
  // enableThinking = false: the generation header becomes roles.assistant + role_content_sep +
  // "<think>\n\n</think>\n\n" (WebLLM's extra_body.enable_thinking = false for Qwen3).
  Result<std::string> render(std::span<const ChatMessage> messages, bool addGenerationHeader = true,
                             bool enableThinking = true) const;
  // system_prefix_token_ids + tokenizer.encode(render(messages)).
  Result<std::vector<int32_t>> renderTokens(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                            bool enableThinking = true) const;

  const std::vector<std::string>& stopStrings() const { return stopStr_; }
  const std::vector<int32_t>& stopTokenIds() const { return stopTokenIds_; }
  const std::vector<int32_t>& systemPrefixTokenIds() const { return systemPrefixTokenIds_; }
  const std::string& name() const { return name_; }

 private:
  struct HistoryEntry {
    std::string role;
    std::optional<std::string> content;
  };
  std::string roleText(const std::string& role, const std::string& content) const;

  std::string name_;
  std::string systemTemplate_ = "{system_message}";
  std::string systemMessage_;
  std::vector<int32_t> systemPrefixTokenIds_;
  bool addRoleAfterSystemMessage_ = true;
  std::map<std::string, std::string> roles_;
  std::map<std::string, std::string> roleTemplates_ = {
      {"user", "{user_message}"}, {"assistant", "{assistant_message}"}, {"tool", "{tool_message}"}};
  std::vector<HistoryEntry> messages_;  // pre-filled history (empty in shipped configs)
  std::vector<std::string> seps_;
  std::string roleContentSep_, roleEmptySep_;
  std::vector<std::string> stopStr_;
  std::vector<int32_t> stopTokenIds_;
  bool stripReasoningInHistory_ = false;
};

}  // namespace ewgpu
