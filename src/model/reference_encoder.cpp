// CPU reference of the BERT encoder (see reference_encoder.h).
#include "model/reference_encoder.h"

#include <cmath>

#include "model/model_folder.h"
#include "model/reference_ops.h"

namespace ewgpu {

namespace ref {

std::vector<float> layerNormRows(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                                 float eps) {
  const size_t d = w.size(), n = x.size() / d;
  std::vector<float> y(x.size());
  for (size_t r = 0; r < n; ++r) {
    const float* row = x.data() + r * d;
    double mean = 0, var = 0;
    for (size_t i = 0; i < d; ++i) mean += row[i];
    mean /= (double)d;
    for (size_t i = 0; i < d; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= (double)d;
    const double inv = 1.0 / std::sqrt(var + eps);
    for (size_t i = 0; i < d; ++i) y[r * d + i] = (float)((row[i] - mean) * inv * w[i] + b[i]);
  }
  return y;
}

void geluErfInPlace(std::span<float> x) {
  for (float& v : x) v = (float)(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
}

std::vector<float> bidirectionalAttention(std::span<const float> q, std::span<const float> k,
                                          std::span<const float> v, int n, int heads, int d) {
  const int w = heads * d;
  std::vector<float> out((size_t)n * w), scores(n);
  const double scale = 1.0 / std::sqrt((double)d);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int e = 0; e < d; ++e) s += (double)q[(size_t)i * w + h * d + e] * k[(size_t)j * w + h * d + e];
        scores[j] = (float)(s * scale);
      }
      softmax(scores);
      for (int e = 0; e < d; ++e) {
        double acc = 0;
        for (int j = 0; j < n; ++j) acc += (double)scores[j] * v[(size_t)j * w + h * d + e];
        out[(size_t)i * w + h * d + e] = (float)acc;
      }
    }
  return out;
}

}  // namespace ref

Result<ReferenceEncoder> ReferenceEncoder::load(const ModelFolder& f) {
  const ModelConfig& c = f.config();
  if (c.arch != Arch::kBert) return makeError(ErrorCode::kBadRequest, "ReferenceEncoder needs a bert folder", {});
  ReferenceEncoder e;
  e.config_ = c;
  const int H = c.hidden, I = c.intermediate;
  EWGPU_ASSIGN(e.word_, loadMatrixF32(f, "embeddings.word_embeddings", c.vocab, H));
  EWGPU_ASSIGN(e.pos_, loadMatrixF32(f, "embeddings.position_embeddings", c.context_window, H));
  EWGPU_ASSIGN(e.type_, loadMatrixF32(f, "embeddings.token_type_embeddings", c.type_vocab, H));
  EWGPU_ASSIGN(e.emb_ln_w_, loadVectorF32(f, "embeddings.LayerNorm.weight"));
  EWGPU_ASSIGN(e.emb_ln_b_, loadVectorF32(f, "embeddings.LayerNorm.bias"));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Layer L;
    EWGPU_ASSIGN(L.qkv, loadMatrixF32(f, p + "attention.self.qkv", 3 * H, H));
    EWGPU_ASSIGN(L.qkv_b, loadVectorF32(f, p + "attention.self.qkv.bias"));
    EWGPU_ASSIGN(L.o, loadMatrixF32(f, p + "attention.output.dense", H, H));
    EWGPU_ASSIGN(L.o_b, loadVectorF32(f, p + "attention.output.dense.bias"));
    EWGPU_ASSIGN(L.ln1_w, loadVectorF32(f, p + "attention.output.LayerNorm.weight"));
    EWGPU_ASSIGN(L.ln1_b, loadVectorF32(f, p + "attention.output.LayerNorm.bias"));
    EWGPU_ASSIGN(L.fc1, loadMatrixF32(f, p + "intermediate.dense", I, H));
    EWGPU_ASSIGN(L.fc1_b, loadVectorF32(f, p + "intermediate.dense.bias"));
    EWGPU_ASSIGN(L.fc2, loadMatrixF32(f, p + "output.dense", H, I));
    EWGPU_ASSIGN(L.fc2_b, loadVectorF32(f, p + "output.dense.bias"));
    EWGPU_ASSIGN(L.ln2_w, loadVectorF32(f, p + "output.LayerNorm.weight"));
    EWGPU_ASSIGN(L.ln2_b, loadVectorF32(f, p + "output.LayerNorm.bias"));
    e.layers_.push_back(std::move(L));
  }
  return e;
}

std::vector<float> ReferenceEncoder::hiddenStates(std::span<const int32_t> tokens) const {
  const ModelConfig& c = config_;
  const int n = (int)tokens.size(), H = c.hidden, I = c.intermediate;
  if (n == 0 || n > c.context_window) return {};
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab) return {};
  std::vector<float> x((size_t)n * H);
  for (int i = 0; i < n; ++i)
    for (int e = 0; e < H; ++e)
      x[(size_t)i * H + e] = word_[(size_t)tokens[i] * H + e] + pos_[(size_t)i * H + e] + type_[e];
  x = ref::layerNormRows(x, emb_ln_w_, emb_ln_b_, c.layer_norm_eps);
  for (const Layer& L : layers_) {
    std::vector<float> qkv = ref::linear(x, L.qkv, 3 * H, H, L.qkv_b);
    std::vector<float> q((size_t)n * H), k((size_t)n * H), v((size_t)n * H);
    for (int i = 0; i < n; ++i)
      for (int e = 0; e < H; ++e) {
        q[(size_t)i * H + e] = qkv[(size_t)i * 3 * H + e];
        k[(size_t)i * H + e] = qkv[(size_t)i * 3 * H + H + e];
        v[(size_t)i * H + e] = qkv[(size_t)i * 3 * H + 2 * H + e];
      }
    std::vector<float> a = ref::bidirectionalAttention(q, k, v, n, c.n_heads, c.head_dim);
    std::vector<float> o = ref::linear(a, L.o, H, H, L.o_b);
    for (size_t i = 0; i < o.size(); ++i) o[i] += x[i];
    x = ref::layerNormRows(o, L.ln1_w, L.ln1_b, c.layer_norm_eps);
    std::vector<float> h = ref::linear(x, L.fc1, I, H, L.fc1_b);
    ref::geluErfInPlace(h);
    std::vector<float> y = ref::linear(h, L.fc2, H, I, L.fc2_b);
    for (size_t i = 0; i < y.size(); ++i) y[i] += x[i];
    x = ref::layerNormRows(y, L.ln2_w, L.ln2_b, c.layer_norm_eps);
  }
  return x;
}

std::vector<float> ReferenceEncoder::embed(std::span<const int32_t> tokens) const {
  std::vector<float> h = hiddenStates(tokens);
  if (h.empty()) return h;
  h.resize(config_.hidden);
  if (config_.embedding_normalize) {
    double ss = 0;
    for (float v : h) ss += (double)v * v;
    const double norm = std::sqrt(ss);
    if (norm > 1e-12)
      for (float& v : h) v = (float)(v / norm);
  }
  return h;
}

}  // namespace ewgpu
