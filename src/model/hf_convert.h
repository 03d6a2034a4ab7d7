// HF checkpoint folder (config.json + model.safetensors / sharded index) -> MLC folder, for the
// transformers cross-check. Maps HF names to MLC names (fused qkv and gate_up rows, Qwen3.5 +1 norms,
// conv1d weight rename, "model." or "model.language_model." prefixes) and calls writeMlcFolder.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "model/model_config.h"
#include "model/tiny_model.h"

namespace ewgpu {

// HF config.json (llama, mistral, qwen2, qwen3, qwen3_5 / qwen3_5_text, nested text_config accepted)
// -> ModelConfig. INVALID_MODEL_FOLDER {file:"config.json", field, problem} for a missing field.
Result<ModelConfig> modelConfigFromHf(const nlohmann::json& hf, Quant quant);

// HF tensors (any F32/BF16/F16) -> the MLC logical WeightMap for cfg.
Result<WeightMap> mlcWeightsFromHf(const ModelConfig& cfg, const std::map<std::string, std::vector<float>>& hf);

// Whole conversion: reads hf_dir, writes out_dir.
Status convertHfFolder(const std::string& hf_dir, const std::string& out_dir, Quant quant,
                       const std::string& tokenizer_json_path);

}  // namespace ewgpu
