// libFuzzer target: tokenizer.json. Loading returns a tokenizer or a typed error naming the file (never a throw,
// a crash or undefined behaviour); an accepted tokenizer encodes and decodes a fixed text (with special-token
// text, ill-formed UTF-8 and whitespace runs) without faults, and its ids lie inside its vocabulary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tok = ewgpu::Tokenizer::fromJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tok) {
    if (tok.error().code != ewgpu::ErrorCode::kInvalidModelFolder || !tok.error().detail.contains("file")) std::abort();
    return 0;
  }
  static const std::string_view kText =
      "Hello world <|im_start|>user\n  tabs\t\tand  spaces   \xC3\xA9t\xC3\xA9 \xE4\xB8\x80 \xF0\x9F\x98\x80 "
      "\xFF\xC0 bad bytes 12345 don't <s>[INST]</s>\r\n";
  const auto ids = tok->encode(kText);
  for (int32_t id : ids)
    if (id < 0 || id >= tok->vocabSize()) std::abort();
  (void)tok->decode(ids);
  for (int32_t id : {-1, 0, tok->vocabSize() - 1, tok->vocabSize(), 1 << 30}) {
    const int32_t one[1] = {id};
    (void)tok->decode(one);
    (void)tok->idToToken(id);
  }
  return 0;
}
