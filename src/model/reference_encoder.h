// The CPU reference of the BERT encoder (model_type "bert", MLC's BertModel): the test oracle of the GPU encoder.
// Loads a bert folder's weights as f32 and runs one input sequence with plain loops and double accumulation:
//
//   x = LayerNorm(word_emb[id] + pos_emb[position] + type_emb[0])              positions 0..n-1, token type 0
//   per layer:  qkv = x Wqkv^T + b            [n, 3H], rows q | k | v, head h at columns h*D .. h*D+D-1
//               a   = softmax(q k^T / sqrt(D)) v   per head, every token sees every token (bidirectional)
//               x   = LayerNorm(x + a Wo^T + bo)
//               x   = LayerNorm(x + gelu(x W1^T + b1) W2^T + b2)   gelu exact: 0.5 x (1 + erf(x / sqrt 2))
//   embedding = x[0] (the [CLS] token of the last hidden state), L2-normalised when config.embedding_normalize.
//
// One sequence per call: MLC's padded batch masks pad tokens out of every row's attention (bert_model.py
// `_attention_mask`), so a batch's rows equal these single-sequence results.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/error.h"
#include "model/model_config.h"

namespace ewgpu {

class ModelFolder;

class ReferenceEncoder {
 public:
  // INVALID_MODEL_FOLDER from the loader; BAD_REQUEST when the folder is not a bert folder.
  static Result<ReferenceEncoder> load(const ModelFolder& folder);

  // Last hidden state [n, hidden] of one sequence. Empty when `tokens` is empty, longer than the position
  // embeddings, or holds an id outside [0, vocab).
  std::vector<float> hiddenStates(std::span<const int32_t> tokens) const;
  // The pooled embedding [hidden]: hiddenStates row 0, L2-normalised when the config says so. Empty as above.
  std::vector<float> embed(std::span<const int32_t> tokens) const;

  const ModelConfig& config() const { return config_; }

 private:
  struct Layer {
    std::vector<float> qkv, qkv_b;        // [3H, H], [3H]
    std::vector<float> o, o_b;            // [H, H], [H]
    std::vector<float> ln1_w, ln1_b;      // attention.output.LayerNorm [H]
    std::vector<float> fc1, fc1_b;        // intermediate.dense [I, H], [I]
    std::vector<float> fc2, fc2_b;        // output.dense [H, I], [H]
    std::vector<float> ln2_w, ln2_b;      // output.LayerNorm [H]
  };
  ModelConfig config_;
  std::vector<float> word_, pos_, type_;  // [V, H], [P, H], [T, H]
  std::vector<float> emb_ln_w_, emb_ln_b_;
  std::vector<Layer> layers_;
};

namespace ref {
// LayerNorm of every row: x [n, d] -> (x - mean) / sqrt(var + eps) * w + b (biased variance, as PyTorch).
std::vector<float> layerNormRows(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                                 float eps);
// Exact GELU in place: x * 0.5 * (1 + erf(x / sqrt(2))).
void geluErfInPlace(std::span<float> x);
// Bidirectional multi-head attention of one sequence: q, k, v [n, heads * d] -> [n, heads * d], scale 1/sqrt(d).
std::vector<float> bidirectionalAttention(std::span<const float> q, std::span<const float> k,
                                          std::span<const float> v, int n, int heads, int d);
}  // namespace ref

}  // namespace ewgpu
