// libFuzzer target: the conversation template renderer. The input is a conv_template value (JSON object or legacy
// name) followed by chat messages; parsing returns a template or a typed error, and rendering any messages with it
// (any role, any content) returns a prompt or BAD_REQUEST, never a throw, a crash or undefined behaviour.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tokenizer/conv_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // Seeds put the template first, then a NUL byte, then the messages.
  std::string json_text;
  while (in.remaining_bytes() > 0) {
    const char c = in.ConsumeIntegral<char>();
    if (c == '\0') break;
    json_text += c;
  }
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded()) j = json_text;  // a legacy name
  auto t = ewgpu::ConvTemplate::fromJson(j);
  if (!t) {
    if (t.error().code != ewgpu::ErrorCode::kInvalidModelFolder) std::abort();
    return 0;
  }
  static const char* kRoles[] = {"system", "user", "assistant", "tool", "function", ""};
  std::vector<ewgpu::ChatMessage> messages;
  while (in.remaining_bytes() > 0 && messages.size() < 16) {
    ewgpu::ChatMessage m;
    m.role = kRoles[in.ConsumeIntegralInRange<size_t>(0, std::size(kRoles) - 1)];
    m.content = in.ConsumeRandomLengthString(256);
    messages.push_back(std::move(m));
  }
  for (bool header : {true, false})
    for (bool thinking : {true, false}) {
      auto r = t->render(messages, header, thinking);
      if (!r && r.error().code != ewgpu::ErrorCode::kBadRequest) std::abort();
    }
  return 0;
}
