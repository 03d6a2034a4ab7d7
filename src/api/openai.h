// OpenAI's chat.completions and completions shapes: request JSON -> CompletionRequest (validated, BAD_REQUEST
// naming the offending field in detail.field), and CompletionResult / streamed pieces -> response JSON.
// Used by Engine::chat.completions.create (in-process) and by the HTTP server; docs/api.md lists the fields.
#pragma once

#include "ewgpu/types.h"

#include <functional>
#include <string>

namespace ewgpu::openai {

struct ParsedRequest {
  CompletionRequest req;
  bool chat = true;            // chat.completions (messages) or completions (prompt)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// BAD_REQUEST (detail.field) for a malformed field or an unknown one; UNSUPPORTED (detail.field) for a field
// the engine understands but does not do (tools, response_format other than text, n > 1).
Result<ParsedRequest> parseChatRequest(const nlohmann::json& body);
Result<ParsedRequest> parseCompletionRequest(const nlohmann::json& body);
// The scheduling fields from HTTP headers (X-Session, X-Priority), where the body did not set them.
Status applySchedulingHeaders(CompletionRequest& req, const std::string& session, const std::string& priority);

// Builds the response side of one job.
class ResponseBuilder {
 public:
  // `token_text` turns a token id into its text (for logprobs); may be empty.
  ResponseBuilder(bool chat, std::string id, int64_t created, std::string model,
                  std::function<std::string(int32_t)> token_text, bool logprobs);
  const std::string& id() const { return id_; }
  // Streamed chunks for a piece of text (the first call also yields the role chunk, for chat).
  std::vector<nlohmann::json> chunks(const Chunk& c);
  // The closing chunks: role chunk if none was sent, the finish_reason chunk, and the usage chunk when asked.
  std::vector<nlohmann::json> finalChunks(const CompletionResult& r, bool include_usage);
  // The whole non-streamed response.
  nlohmann::json response(const CompletionResult& r) const;

 private:
  nlohmann::json logprobsJson(const std::vector<TokenInfo>& tokens) const;
  nlohmann::json chunkBase() const;
  bool chat_;
  std::string id_;
  int64_t created_;
  std::string model_;
  std::function<std::string(int32_t)> token_text_;
  bool logprobs_;
  bool role_sent_ = false;
};

// The extension object every response and final chunk carries: {"outcome", "job", "timings"} under "ewgpu".
nlohmann::json extensionJson(const CompletionResult& r);
nlohmann::json usageJson(const Usage& u);
// {"error": {"message", "type", "param", "code"}} with the engine's code (e.g. "BAD_REQUEST") as code and
// detail.field as param.
nlohmann::json errorJson(const Error& e);
// The HTTP status of an error: 400 bad input, 404 unknown model, 409 not loaded, 413 context, 500/503 others.
int httpStatus(const Error& e);

}  // namespace ewgpu::openai
