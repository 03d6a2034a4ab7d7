// The parameter list an architecture + quantization implies (mlc-format.md §2.5, §3): every tensor name,
// stored shape and dtype, so a folder can be validated before anything heavy happens and writers/uploaders
// enumerate the same list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/tensor_cache.h"

namespace ewgpu {

enum class ParamKind {
  kQWeight,  // <module>.q_weight, uint32 [N, ngroups*words_per_group]
  kQScale,   // <module>.q_scale, f16/f32 [N, ngroups]
  kWeight,   // <module>.weight, a dense matrix [N, K] in the model dtype (q0*)
  kVector,   // norms, biases, A_log, dt_bias: 1-D
  kConv,     // Qwen3.5 conv1d_weight [C, 1, kernel]
};

struct ParamSpec {
  std::string name;            // "model.layers.0.mlp.down_proj.q_weight"
  std::vector<int64_t> shape;  // stored (logical) shape as in tensor-cache.json
  DType dtype = DType::kF16;
  ParamKind kind = ParamKind::kVector;
  std::string module;          // owning module ("model.layers.0.mlp.down_proj"); == name for kVector/kConv
  int64_t rows = 0, cols = 0;  // logical [N, K] of the matrix for kQWeight/kQScale/kWeight; numel,1 otherwise
};

// A linear layer or embedding as a logical [rows=out, cols=in] matrix.
struct MatrixSpec {
  std::string module;  // "model.embed_tokens", "model.layers.3.self_attn.c_attn", "lm_head"
  int64_t rows = 0, cols = 0;
  bool embedding = false;
};

// The MLC names of one decoder layer's tensors by role ("" where the architecture has none; biases and norm
// biases are <module>.bias). docs/architectures.md lists them per architecture.
struct LayerNames {
  std::string input_norm;               // pre-attention norm weight (LayerNorm: + .bias beside it); "" for olmo2
  std::vector<std::string> qkv;         // one fused q|k|v module, or q, k, v modules (gemma3) fused on load
  bool qkv_bias = false;
  std::string o;                        // attention output projection
  bool o_bias = false;
  std::string q_norm, k_norm;           // per-head [D] (qwen3, gemma3) or whole-projection (olmo2) q/k norms
  std::string post_attn_norm;           // gemma2/3, olmo2: the attention output's norm before its residual add
  std::string ffn_norm;                 // pre-MLP norm; "" for a parallel block sharing input_norm (phi) and olmo2
  std::string post_ffn_norm;            // gemma2/3, olmo2
  std::string up, down;                 // gate|up (gated MLPs) or fc1, and down / fc2
  bool up_bias = false, down_bias = false;
  // gemma4 only: the per-layer input branch (gate [hpl, H], projection [H, hpl], its output norm [H]) and the
  // layer scalar [2] (HF's [1] zero-padded; element 0 multiplies the layer's output).
  std::string ple_gate, ple_proj, ple_norm, layer_scalar;
};
struct ModelNames {
  std::string embed;                    // the embedding matrix module
  std::string final_norm;               // final norm weight (LayerNorm: + .bias)
  std::string lm_head;                  // "" when tied to the embedding
  bool lm_head_bias = false;
  // gemma4 only: the per-layer embedding's shards (modules, [ple_vocab, layers_s * hpl] each, layers in order),
  // the per-layer model projection [L * hpl, H] and its norm [hpl].
  std::vector<std::string> ple_shards;
  std::string ple_projection, ple_projection_norm;
};
// gemma4: how many layers each shard of the per-layer embedding holds (MLC's Gemma4SplitScaledEmbedding):
// ceil(q4 bytes (vocab x L x hpl / 2) / 512 MiB) shards, the layers split evenly, the first shards taking one more
// each for the remainder (E2B: 3 shards of 12, 12, 11 layers). Empty without per-layer inputs.
std::vector<int> gemma4PleShardLayers(const ModelConfig& c);
LayerNames layerNames(const ModelConfig& c, int layer);
ModelNames modelNames(const ModelConfig& c);
// "<weight name without .weight>.bias": the bias beside a LayerNorm weight.
std::string normBiasName(const std::string& norm_weight);

// Every tensor the folder must contain, in writing order (embedding, layers 0..L-1, final norm, lm_head).
std::vector<ParamSpec> expectedParams(const ModelConfig& c);
// The matrices (each quantized or dense per the quantization), same order.
std::vector<MatrixSpec> expectedMatrices(const ModelConfig& c);

// Model dtype of the quantization: F32 for q4f32_1/q0f32, F16 otherwise.
DType modelDType(Quant q);

// Logical parameter count (matrix elements + vector elements; scales are not parameters).
int64_t parameterCount(const ModelConfig& c);

// Weight bytes of a folder in memory (f32 records counted at 4 bytes although stored as bf16) and the bytes
// one decoded token reads: every weight once, the lm_head (the embedding when tied) fully, plus one
// embedding row for the lookup.
struct WeightTraffic {
  int64_t parameters = 0;        // parameterCount
  uint64_t weight_bytes = 0;     // sum of all tensors
  uint64_t bytes_per_token = 0;  // read per decoded token
  uint64_t lm_head_bytes = 0;    // the logits matrix (embedding when tied), part of bytes_per_token
};
WeightTraffic weightTraffic(const ModelConfig& c);

}  // namespace ewgpu
