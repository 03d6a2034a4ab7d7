// Device fit: can this adapter run a model (before anything is downloaded), and which catalogue models suit it.
//
// canRun separates blockers (it will not run) from warnings (it runs, but slower or at a risk):
//  - architecture outside the engine's set (archRunnable: llama, mistral, qwen2, qwen3, qwen3_5, gemma, ... today) or
//    not a text LLM: blocker. Other architectures need forward graphs (layouts, norms, activations) the engine
//    does not have; notYetRunnableArchs says why for each of the catalogue's.
//  - one tensor row larger than maxStorageBufferBindingSize: blocker (the engine splits a big tensor across
//    bindings by rows, never inside a row); a tensor larger than the limit but splittable: warning.
//    Tensor sizes come from the model's tensor-cache.json when the store already has it, else from the
//    catalogue's buffer_size_required_bytes (a whole-buffer figure: warning only).
//  - vram_required_MB above the device-local memory (when the adapter reports heaps): blocker; above 90%:
//    warning. Unknown memory: a warning that it was not checked.
//  - required_features "shader-f16" missing: warning only — our kernels compute in f32 and do not need it.
//  - an unknown device (max_storage_buffer_binding_size == 0): warning; limits were not checked.
//
// recommendModels ranks the catalogue for a device (rule in docs/store.md "Recommendations").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu/device_info.h"
#include "store/catalog.h"

namespace ewgpu {

class ModelStore;

struct FitIssue {
  std::string code;     // "unsupported_arch", "vram", "tensor_row_too_large", "shader_f16", ...
  std::string message;  // one sentence for people
};

struct FitReport {
  bool ok = false;  // no blockers
  std::vector<FitIssue> blockers, warnings;
  nlohmann::json toJson() const;
};

// The architectures the engine implements (mlc model_type): archRunnable (model/model_config.h), the one list.
bool isSupportedArch(const std::string& arch);

// The catalogue's architectures the engine does not run yet, each with the reason (docs/store.md
// "Architectures"). Every catalogue entry's arch is runnable or listed here, and nothing listed here is
// runnable: tests/store/store_catalog_test.cpp walks the catalogue and keeps both true, so adding an
// architecture means removing it from this list.
struct ArchGap {
  std::string_view arch, reason;
};
std::span<const ArchGap> notYetRunnableArchs();

// Why a catalogue entry cannot run on any device ("" when it can): its architecture, or not a text LLM.
std::string notRunnableReason(const CatalogEntry& e);

// What is known about a model before download; filled from the catalogue and/or a cached folder.
struct ModelFacts {
  std::string id, arch, quantization, webllm_model_type = "LLM";
  double vram_required_mb = 0;  // 0 when unknown
  double weights_mb = 0;        // sum of shard sizes in MB when the manifest is known, else 0
  std::vector<std::string> required_features;
  uint64_t largest_tensor_bytes = 0;  // 0 when unknown
  uint64_t largest_row_bytes = 0;     // 0 when unknown
  bool tensor_sizes_exact = false;    // from tensor-cache.json (true) or the catalogue's estimate (false)
};

ModelFacts factsFromCatalog(const CatalogEntry& e);
// Adds what a model folder's mlc-chat-config.json / tensor-cache.json say (arch, largest tensor/row).
void addFactsFromFolder(const std::string& dir, ModelFacts& f);

FitReport checkFit(const ModelFacts& f, const DeviceInfo& dev);

// canRun for an id the store knows (registry or catalogue). UNKNOWN_MODEL otherwise.
Result<FitReport> canRun(ModelStore& store, const std::string& id, const DeviceInfo& dev);

struct RecommendOptions {
  std::optional<double> max_vram_mb;  // budget; default: the device-local memory when known
  std::string prefer = "quality";     // "quality" | "speed"
  size_t limit = 10;
};

struct Recommendation {
  const CatalogEntry* entry = nullptr;
  double params_b = 0;   // parameters in billions (from the id, else estimated from vram)
  double weight_mb = 0;  // estimated weight bytes in MB (params x bits per weight of the quantization)
  FitReport fit;
  nlohmann::json toJson() const;
};

// BAD_REQUEST for an unknown `prefer`.
Result<std::vector<Recommendation>> recommendModels(const DeviceInfo& dev, const RecommendOptions& o);

// Parameter count in billions read from an id ("Llama-3.2-1B-..." -> 1, "SmolLM2-135M-..." -> 0.135); 0 if none.
double paramsFromId(const std::string& id);
// Bits stored per weight for a quantization name (q4f16_1 -> 4.5 incl. scales, q0f16 -> 16, ...); 16 if unknown.
double bitsPerWeight(const std::string& quantization);

}  // namespace ewgpu
