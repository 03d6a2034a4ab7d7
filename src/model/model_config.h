// mlc-chat-config.json -> ModelConfig: architecture, quantization, dimensions, runtime and sampling defaults
// of one MLC model folder (mlc-format.md §1.2-1.3, §2.1). Parsing never throws: a field the architecture
// needs that is missing or of the wrong type is INVALID_MODEL_FOLDER with detail {file, field, problem}.
#pragma once

#include <nlohmann/json.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace ewgpu {

enum class Arch {
  kLlama, kMistral, kQwen2, kQwen3, kQwen3_5,
  kGemma, kGemma2, kGemma3, kPhi3, kOlmo2, kStableLm, kGptNeox, kPhi, kMinistral3,
  kBert,    // encoder (embedding model), issue 17
  kGemma4,  // Gemma 4 E2B text: per-layer head dims, KV-shared layers, per-layer inputs
};
// How a decoder layer normalises (docs/architectures.md): RMSNorm (stored weight as a plain multiplier; the (1 + w)
// of gemma and qwen3_5 is baked in by the converters), or LayerNorm with a bias (stablelm, gpt_neox, phi).
enum class NormKind { kRms, kLayer };
// The MLP: gated (one fused gate|up matrix, then down) with SiLU or tanh-GELU, or plain fc1 (+ bias) → GELU →
// fc2 (+ bias) with exact (erf) or tanh GELU.
enum class MlpKind { kSwiGlu, kGeGlu, kGelu, kGeluTanh };
enum class Quant { kQ4F16_1, kQ4F32_1, kQ0F16, kQ0F32, kQ3F16_1 };

std::string_view archName(Arch a);                     // "llama", ..., "qwen3_5"
std::optional<Arch> archFromName(std::string_view s);  // accepts "qwen3_5_text" as kQwen3_5
// True when the engine runs this MLC model_type (archFromName knows it): the one place that says so. The store's
// device fit, `ewgpu list --catalog` and the catalogue test ask this.
bool archRunnable(std::string_view model_type);
std::vector<std::string> runnableArchNames();  // "llama", "mistral", ... in Arch order
// False for an architecture the model layer knows (parser, validator, CPU reference, writers) but the GPU
// forward does not run yet (none today: gemma4 was the last). archRunnable is archFromName && archGpuRunnable.
bool archGpuRunnable(Arch a);
std::vector<std::string> knownArchNames();     // every Arch's name (runnable or not), in Arch order
inline bool usesLayerNorm(Arch a) { return a == Arch::kStableLm || a == Arch::kGptNeox || a == Arch::kPhi; }
std::string_view quantName(Quant q);                   // "q4f16_1", ...
std::optional<Quant> quantFromName(std::string_view s);

// Constants of a quantization (mlc-format.md §2.1). For q0*: quantized=false and the group fields are 0.
struct QuantSpec {
  bool quantized = false;
  int bits = 0;             // 4 or 3
  int group_size = 0;       // elements per scale along the input axis: 32 (int4), 40 (int3)
  int elems_per_word = 0;   // codes per uint32: 8 (int4), 10 (int3; top 2 bits unused)
  int words_per_group = 0;  // group_size / elems_per_word = 4
  int max_int = 0;          // 2^(bits-1)-1: 7 (int4), 3 (int3); codes are 0..2*max_int
  bool f32_scales = false;  // q_scale dtype float32 (stored bf16 on disk) instead of float16
  bool f32_model = false;   // model dtype float32 (q4f32_1, q0f32) instead of float16
};
QuantSpec quantSpec(Quant q);

// RoPE scaling: "llama3" (Llama-3.1/3.2), "longrope" (phi3; "su" is read as longrope) and "yarn" (ministral3).
// Other types are rejected at parse time.
struct RopeScaling {
  std::string rope_type = "llama3";
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 1.0f;
  int original_max_position_embeddings = 0;
  // longrope: per-frequency divisors of the inverse frequencies (rotary_dim / 2 each), short below
  // original_max_position_embeddings positions, long from there; cos and sin times
  // sqrt(1 + ln(max_position_embeddings / original) / ln(original)) when that ratio is above 1.
  std::vector<float> short_factor, long_factor;
  int max_position_embeddings = 0;
  // yarn: the frequency ramp between beta_fast and beta_slow rotations; mscale / mscale_all_dim as in DeepSeek's
  // YaRN (the cos/sin factor get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)).
  float beta_fast = 32.0f, beta_slow = 1.0f, mscale = 1.0f, mscale_all_dim = 0.0f;
  // ministral3 (transformers' Llama-4 attention scaling): q times 1 + beta · ln(1 + floor(pos / original)); 0 = off.
  float llama4_beta = 0.0f;
};

struct ModelConfig {
  std::string model_type;  // as written in the file ("qwen3_5_text" stays that)
  Arch arch = Arch::kLlama;
  Quant quant = Quant::kQ4F16_1;

  int hidden = 0;        // H, residual width
  int intermediate = 0;  // I, MLP width (gate/up rows each)
  int n_layers = 0;
  int n_heads = 0;  // query heads of (full) attention
  int n_kv_heads = 0;
  int head_dim = 0;  // D (explicit for qwen3/qwen3_5; hidden/n_heads by default elsewhere)
  int vocab = 0;     // embedding rows (vocab_size), may exceed the tokenizer's size
  float rms_eps = 1e-6f;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  bool tie_embeddings = false;  // no lm_head tensor; logits from the embedding
  bool qkv_bias = false;        // fused qkv (c_attn) has a bias: qwen2 always, qwen3/qwen3_5 iff attention_bias
  bool o_bias = false;          // o_proj has a bias: qwen3/qwen3_5 iff attention_bias
  bool qk_norm = false;         // per-head q_norm/k_norm [D]: qwen3, qwen3_5, gemma3
  bool qk_norm_full = false;    // olmo2: q_norm [HQ·D] and k_norm [HKV·D] over the whole projection

  // The decoder layer's shape beyond the llama family (set per architecture by the parser; docs/architectures.md).
  NormKind norm = NormKind::kRms;
  MlpKind mlp = MlpKind::kSwiGlu;
  bool mlp_bias = false;           // fc1 / fc2 biases (gpt_neox, phi)
  bool lm_head_bias = false;       // phi: lm_head.linear has a bias
  bool pre_norms = true;           // input / pre-MLP norms (olmo2 has none: it norms the branch outputs)
  bool post_norms = false;         // the attention and MLP outputs are normed before their residual add (gemma2/3, olmo2)
  bool parallel_residual = false;  // x + attn(n1(x)) + mlp(n2(x)) (gpt_neox with use_parallel_residual, phi)
  bool shared_norm = false;        // parallel with one norm for both branches (phi)
  float embed_scale = 1.0f;        // the looked-up embedding row times this (gemma: sqrt(hidden))
  float attn_softcap = 0.0f;       // gemma2: scores → cap · tanh(score / cap)
  float final_softcap = 0.0f;      // gemma2: logits → cap · tanh(logit / cap)
  double attn_scale = 0.0;         // softmax scale; 0 = 1 / sqrt(head_dim)
  // Sliding-window layers (gemma2: every other layer; gemma3: all but every pattern-th): layer_window positions.
  int layer_window = 0;            // 0: no per-layer window (mistral's sliding_window applies to every layer)
  int window_pattern = 0;          // gemma2: 2 (even layers slide), gemma3: sliding_window_pattern
  double rope_local_theta = 0.0;   // gemma3: the RoPE base of the sliding layers (0: rope_theta)

  // Gemma 4 (docs/architectures.md "gemma4"); unused elsewhere. head_dim / n_kv_heads / intermediate /
  // rope_theta are the sliding layers' (and the single-wide MLP's); the per-layer accessors below resolve them.
  std::vector<bool> layer_full;    // per layer: full attention (true) or sliding (layer_window); empty elsewhere
  int global_head_dim = 0;         // head_dim of the full-attention layers (E2B 512)
  int global_kv_heads = 0;         // num_global_key_value_heads (defaults to n_kv_heads)
  int kv_shared_layers = 0;        // the last this many layers reuse the KV of an earlier layer (kvSourceOf)
  bool double_wide_mlp = false;    // the KV-shared layers' MLP is 2 x intermediate wide
  int ple_dim = 0;                 // hidden_size_per_layer_input: width of each layer's per-layer input
  int ple_vocab = 0;               // vocab_size_per_layer_input: rows of the per-layer embedding
  double rope_global_theta = 0.0;  // the full layers' RoPE base
  float rope_global_partial = 1.0f;  // full layers' "proportional" RoPE: the share of head_dim/2 frequencies used
  float rope_global_factor = 1.0f;   // its frequency divisor (rope_parameters.full_attention.factor)
  double logit_scale = 1.0;        // logits times this before the soft-cap (gemma4: 1/sqrt(hidden), the stored
                                   // tied embedding being pre-multiplied by sqrt(hidden))

  // Qwen3.5 (Gated DeltaNet) only; 0 elsewhere.
  int lin_k_heads = 0;  // linear_num_key_heads
  int lin_v_heads = 0;  // linear_num_value_heads
  int lin_k_dim = 0;    // linear_key_head_dim
  int lin_v_dim = 0;    // linear_value_head_dim
  int lin_conv_kernel = 0;
  int full_attention_interval = 0;  // layer i is full attention iff (i+1) % interval == 0 (qwen3_5)
  float partial_rotary_factor = 1.0f;

  // Runtime.
  int context_window = -1;  // -1 when a sliding window is used instead
  int prefill_chunk = 0;
  int sliding_window = -1;  // -1 = disabled
  // Positions a sequence may use: context_window_size, or the sliding window when that is -1 (MLC's folders
  // for sliding-window models; this engine's KV cache is not a ring buffer, so the window bounds a sequence).
  // parseModelConfig rejects a folder with neither.
  uint32_t contextLength() const { return (uint32_t)(context_window > 0 ? context_window : sliding_window); }
  int active_vocab = 0;     // logits at index >= this are masked (defaults to vocab)
  float temperature = 1.0f, top_p = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f, repetition_penalty = 1.0f;
  nlohmann::json conv_template;   // object (or a legacy string name)
  nlohmann::json tokenizer_info;  // {token_postproc_method, prepend_space_in_encode, strip_space_in_decode}
  std::vector<std::string> tokenizer_files;
  nlohmann::json raw;  // the whole parsed file

  bool isFullAttention(int layer) const;  // always true except qwen3_5 linear-attention layers
  int windowOf(int layer) const;          // attention window of a layer in positions, 0 for none
  double ropeThetaOf(int layer) const;    // RoPE base of a layer
  double attnScale() const { return attn_scale > 0 ? attn_scale : 1.0 / std::sqrt((double)head_dim); }
  int rotaryDim() const;                  // int(head_dim * partial_rotary_factor)
  // Per-layer shape (gemma4 varies it by layer; every other architecture returns the global field).
  bool isGemma4() const { return arch == Arch::kGemma4; }
  int headDimOf(int layer) const;        // head_dim, or global_head_dim on a gemma4 full layer
  int kvHeadsOf(int layer) const;        // n_kv_heads, or global_kv_heads on a gemma4 full layer
  int intermediateOf(int layer) const;   // intermediate, doubled on gemma4's KV-shared layers (double_wide_mlp)
  // The layer whose KV cache `layer` attends over: itself, or for gemma4's last kv_shared_layers layers the last
  // earlier non-shared layer of the same kind (sliding / full).
  int kvSourceOf(int layer) const;
  bool isKvShared(int layer) const { return kvSourceOf(layer) != layer; }
  int linearConvDim() const { return 2 * lin_k_heads * lin_k_dim + lin_v_heads * lin_v_dim; }  // C

  // BERT (encoder, model_task "embedding") only; see parseBertConfig in model_config.cpp. A bert config also
  // fills hidden, intermediate, n_layers, n_heads (= n_kv_heads), head_dim, vocab, context_window (the
  // position-embedding rows) and prefill_chunk.
  int type_vocab = 0;             // token_type_embeddings rows (type_vocab_size, default 2; type 0 is used)
  float layer_norm_eps = 1e-12f;  // every LayerNorm
  std::string hidden_act;         // "gelu" (exact, erf) is the only one the engine runs
  bool embedding_normalize = true;  // L2-normalise the pooled vector (embedding_metadata.normalize, default true)
  bool isEmbedding() const { return arch == Arch::kBert; }
};

// Parses an mlc-chat-config.json document. `path` only names the file in error details.
Result<ModelConfig> parseModelConfig(const nlohmann::json& j, const std::string& path);
// Reads and parses the file (INVALID_MODEL_FOLDER {file, problem:"missing"|"bad_json"} on failure).
Result<ModelConfig> loadModelConfig(const std::string& path);

}  // namespace ewgpu
