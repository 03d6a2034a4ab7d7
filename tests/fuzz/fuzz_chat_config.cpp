// libFuzzer target: mlc-chat-config.json. Whatever the bytes, parsing returns a value or a typed error (never a
// throw, a crash or undefined behaviour), and an accepted config is one the engine can size: its expected
// parameter list and weight traffic are computed as the loader does next.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/expected_params.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return 0;
  auto c = ewgpu::parseModelConfig(j, "mlc-chat-config.json");
  if (!c) {
    // INVALID_MODEL_FOLDER, or UNSUPPORTED for a model_type the engine does not run (model_config.h archRunnable).
    const bool unsupportedArch = c.error().code == ewgpu::ErrorCode::kUnsupported && c.error().detail.contains("model_type");
    if ((c.error().code != ewgpu::ErrorCode::kInvalidModelFolder && !unsupportedArch) || !c.error().detail.contains("file"))
      std::abort();
    return 0;
  }
  // Invariants the rest of the engine relies on (checkConsistency and the field bounds).
  if (c->hidden <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads != 0 || c->head_dim <= 0 ||
      c->vocab <= 0 || c->active_vocab <= 0 || c->active_vocab > c->vocab)
    std::abort();
  const auto params = ewgpu::expectedParams(*c);
  const ewgpu::WeightTraffic w = ewgpu::weightTraffic(*c);
  if (params.empty() || w.parameters <= 0) std::abort();
  return 0;
}
