// The whole-model CPU reference: the test oracle for the GPU engine. It loads an MLC model folder (every
// decoder architecture of model_config.h), dequantizes every weight to f32 once, and runs the forward pass with the
// plain operations of reference_ops.h (double accumulation). It keeps the sequence state between calls (KV
// cache for attention layers; conv window and recurrent state for Gated DeltaNet layers), so a prefill followed by
// one-token decodes continues the same sequence.
//
// Not covered: batching, sampling other than greedy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"
#include "model/reference_ops.h"

namespace ewgpu {

class ModelFolder;

class ReferenceModel {
 public:
  // How a Gated DeltaNet layer processes more than one new token. kChunked (default) mirrors the GPU prefill
  // (chunks of 64); kRecurrent steps token by token. A single new token always uses the recurrent step.
  enum class GdnPrefill { kChunked, kRecurrent };

  // Reads and dequantizes every tensor the architecture needs (INVALID_MODEL_FOLDER from the loader on failure).
  static Result<ReferenceModel> load(const ModelFolder& folder);

  // Continues the sequence with `tokens` at positions position() .. position()+n-1 and returns the logits
  // [n, vocab] row-major. Returns an empty vector, leaving the state unchanged, when `tokens` is empty or holds an
  // id outside [0, vocab).
  std::vector<float> forward(std::span<const int32_t> tokens);

  // Forgets the sequence: empty KV caches, zero conv windows and recurrent states, position 0.
  void reset();
  int position() const { return position_; }

  const ModelConfig& config() const { return config_; }
  void setGdnPrefill(GdnPrefill mode) { gdn_prefill_ = mode; }

  // Residual stream after each decoder layer for the last forward call: [n_layers][n * hidden].
  const std::vector<std::vector<float>>& layerOutputs() const { return layer_outputs_; }
  // Final-norm output for the last forward call: [n * hidden] (the lm_head input).
  const std::vector<float>& finalHidden() const { return final_hidden_; }

 private:
  // Full attention (every layer of llama/mistral/qwen2/qwen3, every interval-th layer of qwen3_5).
  struct AttentionWeights {
    std::vector<float> qkv;       // [q_rows + 2 * n_kv_heads * head_dim, hidden]; q_rows = n_heads * head_dim,
                                  // or 2 * n_heads * head_dim for qwen3_5 (per head: query rows then gate rows)
    std::vector<float> qkv_bias;  // [rows of qkv] or empty
    std::vector<float> o;         // [hidden, n_heads * head_dim]
    std::vector<float> o_bias;    // [hidden] or empty
    std::vector<float> q_norm;    // [head_dim] or empty (qwen3, qwen3_5, gemma3; shared by all heads), olmo2:
    std::vector<float> k_norm;    // [n_heads * head_dim] / [n_kv_heads * head_dim] over the whole projection
  };
  // Gated DeltaNet (qwen3_5 linear-attention layers). C = 2 * hk * dk + hv * dv.
  struct GdnWeights {
    std::vector<float> qkv;      // [C, hidden], rows q | k | v
    std::vector<float> z;        // [hv * dv, hidden]
    std::vector<float> a;        // [hv, hidden]
    std::vector<float> b;        // [hv, hidden]
    std::vector<float> conv;     // [C, kernel]
    std::vector<float> a_log;    // [hv]
    std::vector<float> dt_bias;  // [hv]
    std::vector<float> norm;     // [dv] (plain w)
    std::vector<float> out;      // [hidden, hv * dv]
  };
  // A norm's weight (and LayerNorm bias); empty where the architecture has none.
  struct Norm {
    std::vector<float> w, b;
    bool empty() const { return w.empty(); }
  };
  struct LayerWeights {
    bool full_attention = true;
    Norm input_norm;             // before the attention (empty: olmo2)
    Norm post_norm;              // before the MLP (empty: olmo2, phi's parallel block)
    Norm attn_out_norm, mlp_out_norm;  // on the branch outputs (gemma2/3, olmo2)
    AttentionWeights attn;
    GdnWeights gdn;
    std::vector<float> gate_up;  // [2 * intermediate, hidden], rows gate | up; or fc1 [intermediate, hidden]
    std::vector<float> up_bias, down_bias;
    std::vector<float> down;     // [hidden, intermediate]
    int intermediate = 0;        // this layer's MLP width (gemma4: doubled on KV-shared layers)
    // gemma4: the per-layer input branch and the layer scalar (1 elsewhere).
    std::vector<float> ple_gate;  // [hpl, hidden]
    std::vector<float> ple_proj;  // [hidden, hpl]
    Norm ple_norm;                // [hidden]
    float layer_scalar = 1.0f;
  };
  struct LayerState {
    std::vector<float> k_cache, v_cache;  // [position, n_kv_heads * head_dim] (K after norm and RoPE)
    std::vector<float> conv;              // [kernel - 1, C] previous raw in_proj_qkv rows, oldest first
    std::vector<float> recurrent;         // [hv, dk, dv]
  };

  Status loadLayer(const ModelFolder& folder, int layer);
  std::vector<float> attention(int layer, std::span<const float> h, int n);
  std::vector<float> gatedDeltaNet(int layer, std::span<const float> h, int n);
  std::vector<float> mlp(const LayerWeights& w, std::span<const float> h, int n) const;
  // gemma4: the per-layer inputs of n tokens, [n, n_layers * hpl] (layer l's hpl values at column l * hpl).
  std::vector<float> perLayerInputs(std::span<const int32_t> tokens, std::span<const float> x) const;
  Status loadGemma4(const ModelFolder& folder);

  ModelConfig config_;
  std::vector<float> embed_;       // [vocab, hidden]
  std::vector<float> lm_head_;     // [vocab, hidden]; empty when tied to embed_
  Norm final_norm_;                // [hidden]
  std::vector<float> lm_head_bias_;  // [vocab] (phi) or empty
  // gemma4 per-layer inputs (empty elsewhere).
  std::vector<float> ple_embed_;       // [ple_vocab, n_layers * hpl], the shards side by side (stored x sqrt(hpl))
  std::vector<float> ple_projection_;  // [n_layers * hpl, hidden]
  Norm ple_projection_norm_;           // [hpl]
  std::vector<float> norm(const Norm& n, std::span<const float> x) const;
  std::vector<LayerWeights> layers_;
  std::vector<LayerState> state_;
  int position_ = 0;
  GdnPrefill gdn_prefill_ = GdnPrefill::kChunked;
  std::vector<std::vector<float>> layer_outputs_;
  std::vector<float> final_hidden_;
};

// The RoPE of a layer of `c` (its base, partial rotary dims and scaling): what the reference applies and what the
// GPU's RoPE tables hold.
ref::RopeSpec ropeSpecOf(const ModelConfig& c, int layer);

// Greedy decoding: feeds `prompt` (continuing the model's sequence), then appends argmax tokens one at a time.
// Returns the n generated ids (empty when the prompt is empty or invalid).
std::vector<int32_t> greedyGenerate(ReferenceModel& model, std::span<const int32_t> prompt, int n);

}  // namespace ewgpu
