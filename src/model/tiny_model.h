// Writing MLC model folders: writeMlcFolder (config + manifest + shards + tokenizer from logical f32 weights,
// quantized per the requested format) and random tiny/real-shape test models (writeTinyModel), the folders the
// tests, the CPU reference and the GPU benchmarks run on.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"

namespace ewgpu {

// Logical weights keyed by MLC name: matrices as "<module>.weight" row-major [out, in] (fused qkv/gate_up
// already concatenated, Qwen3.5 (1+w) norms already holding w+1), vectors/conv by their stored name.
using WeightMap = std::map<std::string, std::vector<float>>;

// Writes out_dir/{mlc-chat-config.json, tensor-cache.json, params_shard_N.bin, tokenizer.json}. `cfg` gives
// the architecture and dims (cfg.quant is replaced by `quant`; empty conv_template/tokenizer_info are filled
// with the family defaults). Every expectedParams tensor must be derivable from `weights`:
// INVALID_MODEL_FOLDER {problem:"missing_weight"|"wrong_size", tensor} otherwise. Records carry format
// "f32-to-bf16" like the MLC writer; shards follow the 32 MiB cap rule (mlc-format.md §1.5) and get md5sums.
Status writeMlcFolder(const std::string& out_dir, const ModelConfig& cfg, const WeightMap& weights, Quant quant,
                      const std::string& tokenizer_json_path);

// mlc-chat-config.json document for a config (used by writeMlcFolder).
nlohmann::json mlcChatConfigJson(const ModelConfig& cfg);
// conv_template object for a template name: "chatml", "qwen2", "qwen3", "qwen3_5", "qwen3_5_nothink", "llama-3".
nlohmann::json convTemplatePreset(std::string_view name);
std::string_view defaultConvTemplateName(Arch a);  // llama/mistral -> llama-3 / chatml, qwen2, qwen3, qwen3_5_nothink

// Number of token ids a tokenizer.json defines: max id over model.vocab and added_tokens, plus one.
Result<int> tokenizerVocabSize(const std::string& tokenizer_json_path);

struct TinyModelSpec {
  Arch arch = Arch::kLlama;
  Quant quant = Quant::kQ4F16_1;
  std::string tokenizer_path;  // tokenizer.json copied into the folder; sets the vocab
  uint64_t seed = 1;
  int hidden = 64, intermediate = 128, n_layers = 0 /* 0: 2, or 4 for qwen3_5 */, n_heads = 4, n_kv_heads = 2;
  int head_dim = 0;  // 0: 16, or 32 for qwen3_5
  int lin_k_heads = 2, lin_v_heads = 4, lin_k_dim = 16, lin_v_dim = 16, lin_conv_kernel = 4;
  int full_attention_interval = 4;
  int vocab = 0;                      // 0: tokenizer size rounded up to a multiple of 64
  bool vocab_from_tokenizer = false;  // vocab = tokenizer size exactly
  bool tie_embeddings = true;         // ignored for mistral (always an lm_head)
  std::string shape;                  // "" = tiny, else a preset with real dims (see applyShapePreset)
  std::string conv_template;          // "" = defaultConvTemplateName(arch)
};

// Real dims for "qwen3-0.6b", "llama-3.2-1b", "qwen2.5-1.5b", "qwen3.5-0.8b", "qwen3.5-2b", "phi-3.5-mini",
// "gemma-2-2b", "gemma3-1b", "olmo-2-1b", "stablelm-2-1.6b", "gemma-4-e2b" (sets arch too).
// BAD_REQUEST for an unknown name.
Status applyShapePreset(TinyModelSpec& spec, std::string_view shape);
std::vector<std::string> shapePresetNames();  // the names applyShapePreset knows

// The ModelConfig a spec describes, for a tokenizer of `tokenizer_vocab` ids.
ModelConfig tinyModelConfig(const TinyModelSpec& spec, int tokenizer_vocab);

// Seeded random logical weights for a config: linears N(0, 0.02), norms 1 + N(0, 0.1) (+1 baked in for the
// Qwen3.5 (1+w) norms), Qwen3.5 A_log = log U(1,16), dt_bias 1 + N(0, 0.3), conv N(0, 0.3), gated norm
// 1 + N(0, 0.1), biases N(0, 0.02). Deterministic in (config, seed).
WeightMap randomTinyWeights(const ModelConfig& cfg, uint64_t seed);

// Tiny spec: randomTinyWeights + writeMlcFolder. Preset shape: streams tensor by tensor, quantized formats
// drawn directly as random codes + scales (no f32 matrices held), so GB-sized folders write at disk speed.
Status writeTinyModel(const TinyModelSpec& spec, const std::string& out_dir);

}  // namespace ewgpu
