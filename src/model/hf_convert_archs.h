// HF -> MLC conversion facts of the catalogue's decoder architectures beyond llama/mistral/qwen: gemma, gemma2,
// gemma3_text, phi3, olmo2, stablelm, gpt_neox, phi (transformers) / phi-msft (legacy), ministral3. Each follows
// its mlc-llm loader and Config dataclass (docs/mlc-architectures.md has the tables): the mlc-chat-config
// fields MLC's gen_config writes, and for every MLC tensor the HF tensors it comes from and the transform
// (row concatenation, Gemma's +1 norms, GPT-NeoX's per-head qkv reorder). hf_convert.cpp calls these.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"
#include "model/tiny_model.h"

namespace ewgpu {

// True for the MLC model_types this file maps (the list below, as mlc-chat-config spells them).
bool isOtherDecoderType(std::string_view mlc_model_type);

// The MLC model_type a HF config converts to when it is one of these architectures ("" otherwise):
// gemma, gemma2, gemma3_text (also gemma3 with a text_config), gemma4 (gemma4_text, or gemma4 with a text_config), phi3, olmo2, stablelm, gpt_neox, phi, phi-msft,
// ministral3 (HF "mistral3" / "ministral3").
std::string otherDecoderModelType(const nlohmann::json& hf);

// The mlc-chat-config.json fields (model_type, quantization, model_config, context_window_size,
// sliding_window_size, prefill_chunk_size) MLC writes for such a HF config: model_config is the arch's Config
// dataclass after __post_init__ (run twice, as gen_config's override step does). INVALID_MODEL_FOLDER
// {file: config.json, field, problem} for a missing required field or a setting MLC rejects.
Result<nlohmann::json> otherDecoderChatConfig(const nlohmann::json& hf, Quant quant);

// How one MLC tensor is made from HF tensors.
struct HfSource {
  enum class Transform {
    kConcatRows,    // row concatenation of the sources (one source: a copy)
    kPlusOne,       // w + 1 (Gemma's RMSNorm weights)
    kNeoxQkvOrder,  // GPT-NeoX query_key_value: per-head [q k v] rows -> [all q; all k; all v]
  };
  std::vector<std::string> names;
  Transform transform = Transform::kConcatRows;
  // gemma4 (applied after the transform): the values times `scale` (its two embeddings, pre-multiplied as MLC's
  // loader does); columns [col_first, col_first + col_count) of a [rows, col_total] source (its per-layer embedding's
  // shards; col_count 0 = all); zero-padded to pad_to values (layer_scalar [1] -> [2]); and, when the source is
  // absent from the checkpoint, zeros / ones of the expected size (the KV-shared layers' unused k/v and k_norm).
  double scale = 1.0;
  int64_t col_first = 0, col_count = 0, col_total = 0;
  int64_t pad_to = 0;
  enum class Fill { kNone, kZeros, kOnes } fill_if_missing = Fill::kNone;
};

// HF tensor names of a vision-language checkpoint as those of its text model: "language_model.model.X" and
// "model.language_model.X" -> "model.X", "language_model.lm_head.X" -> "lm_head.X"; "" for a tensor of the
// vision tower or projector (dropped). Other names are returned as they are.
std::string textModelTensorName(const std::string& hf);

// The HF sources (names after textModelTensorName) of the MLC tensor `mlc` ("<module>.weight" for matrices,
// else the parameter name) for a config of model_type `c.model_type`.
HfSource hfSourceOf(const ModelConfig& c, const std::string& mlc);

// Applies a source's transform to its tensors (already looked up, in `names` order). heads/head_dim are
// the attention heads and head dim (kNeoxQkvOrder only).
Result<std::vector<float>> applyHfSource(const HfSource& s, const std::vector<const std::vector<float>*>& parts,
                                         int heads, int head_dim);

// HF tensors (any name spelling above) -> the MLC logical WeightMap of cfg: every expectedParams(cfg) tensor
// from its hfSourceOf. INVALID_MODEL_FOLDER {file: model.safetensors, tensor, problem: missing_tensor}.
Result<WeightMap> otherDecoderWeights(const ModelConfig& cfg, const std::map<std::string, std::vector<float>>& hf);

// Replaces the model_config of OUT_DIR/mlc-chat-config.json (written by writeMlcFolder from the parsed
// ModelConfig) by `model_config`, the fields MLC's Config class writes (otherDecoderChatConfig's).
Status writeMlcModelConfig(const std::string& out_dir, const nlohmann::json& model_config);

}  // namespace ewgpu
