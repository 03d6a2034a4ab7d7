// The prebuilt catalogue: WebLLM's ModelRecords (webllm-prebuilt-models.tsv, embedded at build time) as data.
// One CatalogEntry per TSV row; parsing is strict about the header and lenient about empty optional cells.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace ewgpu {

struct CatalogEntry {
  std::string model_id;                                 // unique id, e.g. "Llama-3.2-1B-Instruct-q4f16_1-MLC"
  std::string model_url;                                // HF repo URL, e.g. "https://huggingface.co/mlc-ai/<repo>"
  double vram_required_mb = 0;                          // WebLLM's estimate in MB (0 when absent)
  std::optional<bool> low_resource_required;            // absent for a few rows
  std::vector<std::string> required_features;           // WebGPU features, only "shader-f16" occurs
  std::string quantization;                             // "q4f16_1", "q4f32_1", "q0f16", ...
  std::string arch;                                     // inferred mlc model_type: "llama", "qwen2", ...
  std::string webllm_model_type;                        // "LLM", "embedding", "VLM"
  nlohmann::json overrides = nlohmann::json::object();  // shallow overrides of mlc-chat-config.json
  uint64_t buffer_size_required_bytes = 0;              // required maxStorageBufferBindingSize (0 when absent)
  std::string model_manifest;                           // gemma-4 only
  std::string model_lib;                                // wasm URL (unused by this engine)

  nlohmann::json toJson() const;
};

// Parses the TSV text (header row + one row per model). BAD_REQUEST on a wrong header or malformed row.
Result<std::vector<CatalogEntry>> parseCatalogTsv(std::string_view tsv);

// The embedded catalogue, parsed once. Empty if the embedded text failed to parse (a build bug; tested).
const std::vector<CatalogEntry>& prebuiltCatalog();

// Entry by exact model_id, or nullptr.
const CatalogEntry* findPrebuilt(std::string_view model_id);

}  // namespace ewgpu
