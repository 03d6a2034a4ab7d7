// libFuzzer target: the OpenAI request parser (src/api/openai.cpp), the code every HTTP body and every in-process
// chat.completions.create call goes through. The first byte picks the shape (chat or completions) and whether the
// scheduling headers are applied; the rest is the body. Whatever the bytes: a parsed request within the bounds
// docs/api.md states, or BAD_REQUEST / UNSUPPORTED naming the field, with an OpenAI error object that serialises
// and a 4xx status. Never a throw, a crash or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/openai.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void checkError(const ewgpu::Error& e) {
  check(e.code == ewgpu::ErrorCode::kBadRequest || e.code == ewgpu::ErrorCode::kUnsupported);
  check(e.detail.is_object() && e.detail.contains("field") && e.detail["field"].is_string());
  const nlohmann::json j = ewgpu::openai::errorJson(e);
  check(j["error"]["param"] == e.detail["field"]);
  (void)j.dump();  // throws on invalid UTF-8 in a message that quotes the input
  const int status = ewgpu::openai::httpStatus(e);
  check(status >= 400 && status < 500);
}

void checkRequest(const ewgpu::CompletionRequest& r, bool chat) {
  check(chat ? !r.prompt.has_value() : r.prompt.has_value() && r.messages.empty());
  if (r.temperature) check(*r.temperature >= 0 && *r.temperature <= 2);
  if (r.top_p) check(*r.top_p >= 0 && *r.top_p <= 1);
  for (auto* p : {&r.presence_penalty, &r.frequency_penalty})
    if (*p) check(**p >= -2 && **p <= 2);
  for (const auto& [id, bias] : r.logit_bias) check(id >= 0 && bias >= -100 && bias <= 100);
  check(r.top_logprobs <= 20 && (r.top_logprobs == 0 || r.logprobs));
  for (const auto& s : r.stop) check(!s.empty());
  for (const auto& m : r.messages) check(!m.role.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool chat = (data[0] & 1) == 0;
  const bool headers = (data[0] & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  nlohmann::json body = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (body.is_discarded()) return 0;
  auto parsed = chat ? ewgpu::openai::parseChatRequest(body) : ewgpu::openai::parseCompletionRequest(body);
  if (!parsed) {
    checkError(parsed.error());
    return 0;
  }
  check(parsed->chat == chat);
  checkRequest(parsed->req, chat);
  if (headers) {
    // Header values as a proxy might send them: the body's own session string and one of a few priorities.
    const std::string session = body.is_object() && body.contains("user") && body["user"].is_string()
                                    ? body["user"].get<std::string>() : "s";
    const char* priorities[] = {"", "interactive", "normal", "background", "urgent"};
    ewgpu::Status st = ewgpu::openai::applySchedulingHeaders(parsed->req, session, priorities[data[0] >> 2 & 3]);
    if (!st) checkError(st.error());
  }
  return 0;
}
