// libFuzzer target: tensor-cache.json (the weight manifest). Parsing returns a manifest or a typed error, never a
// throw or undefined behaviour; an accepted manifest keeps every record inside its shard without overlaps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/tensor_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return 0;
  auto tc = ewgpu::parseTensorCache(j, "tensor-cache.json");
  if (!tc) {
    if (tc.error().code != ewgpu::ErrorCode::kInvalidModelFolder || !tc.error().detail.contains("problem"))
      std::abort();
    return 0;
  }
  for (const auto& t : tc->tensors) {
    if (t.shard < 0 || (size_t)t.shard >= tc->shards.size()) std::abort();
    const uint64_t shard_bytes = tc->shards[(size_t)t.shard].nbytes;
    if (t.byte_offset > shard_bytes || t.nbytes > shard_bytes - t.byte_offset) std::abort();
    if (t.nbytes != (t.f32_as_bf16 ? 2 * (uint64_t)t.numel() : t.decodedBytes())) std::abort();
  }
  return 0;
}
