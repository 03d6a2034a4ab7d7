// Whole-model CPU reference (see reference_model.h). Forward pass per layer (two residual branches):
//   x += Mixer(Norm(x));  x += MLP(Norm(x));   logits = Norm(x) lm_head^T
// with the family variants of docs/architectures.md: LayerNorm, post-norms on the branch outputs (gemma2/3, olmo2;
// olmo2 without pre-norms), the parallel block x + Mixer(n1(x)) + MLP(n2(x)) (gpt_neox, phi), GeGLU / GELU MLPs,
// soft-capped scores and logits, per-layer sliding windows and RoPE bases.
// Mixer = causal GQA attention (llama family: NeoX RoPE over the full head_dim; qwen3: per-head q/k norms;
// qwen3_5: per-head query|gate rows, q/k norms, partial RoPE, sigmoid output gate) or Gated DeltaNet
// (qwen3_5-architecture.md §6). All norms use the stored weight as a plain multiplier (mlc-format.md §3.4).
#include "model/reference_model.h"

#include <cmath>
#include <string>

#include "model/model_folder.h"
#include "model/reference_ops.h"

namespace ewgpu {

namespace {

// Moves a loaded tensor into `dst`, or returns the loader's error.
Status take(std::vector<float>& dst, Result<std::vector<float>> r) {
  if (!r.ok()) return std::move(r).error();
  dst = std::move(r).value();
  return {};
}

void addInPlace(std::vector<float>& x, const std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)((double)x[i] + y[i]);
}

// Columns [first, first + width) of every row of m [n, row_width] -> [n, width].
std::vector<float> columns(std::span<const float> m, int n, int row_width, int first, int width) {
  std::vector<float> out((size_t)n * width);
  for (int t = 0; t < n; ++t)
    for (int c = 0; c < width; ++c) out[(size_t)t * width + c] = m[(size_t)t * row_width + first + c];
  return out;
}

std::optional<ref::Llama3Scaling> llama3Scaling(const ModelConfig& c) {
  if (!c.rope_scaling || c.rope_scaling->rope_type != "llama3") return std::nullopt;
  return ref::Llama3Scaling{c.rope_scaling->factor, c.rope_scaling->low_freq_factor, c.rope_scaling->high_freq_factor,
                            c.rope_scaling->original_max_position_embeddings};
}

// YaRN's cos/sin factor: 0.1 · m · ln(s) + 1 for s > 1.
double yarnMscale(double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0; }

}  // namespace

ref::RopeSpec ropeSpecOf(const ModelConfig& c, int layer) {
  ref::RopeSpec r;
  if (c.isGemma4()) {  // sliding: default RoPE over head_dim; full: proportional over global_head_dim
    r.rotary_dim = c.headDimOf(layer);
    r.theta = c.ropeThetaOf(layer);
    r.float32_angles = true;
    if (c.windowOf(layer) == 0) {
      r.proportional = true;
      r.rotated_pairs = (int)std::floor(c.rope_global_partial * r.rotary_dim / 2.0);
      r.freq_divisor = c.rope_global_factor;
    }
    return r;
  }
  r.rotary_dim = c.rotaryDim();
  r.theta = c.ropeThetaOf(layer);
  r.llama3 = llama3Scaling(c);
  if (c.rope_scaling && c.rope_scaling->rope_type == "longrope") {
    const RopeScaling& s = *c.rope_scaling;
    r.short_factor.assign(s.short_factor.begin(), s.short_factor.end());
    r.long_factor.assign(s.long_factor.begin(), s.long_factor.end());
    r.short_factor.resize(r.rotary_dim / 2, 1.0);
    r.long_factor.resize(r.rotary_dim / 2, 1.0);
    r.original = s.original_max_position_embeddings;
    const double factor = (double)s.max_position_embeddings / s.original_max_position_embeddings;
    r.attention_factor = factor <= 1 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log((double)r.original));
  }
  if (c.rope_scaling && c.rope_scaling->rope_type == "yarn") {
    const RopeScaling& s = *c.rope_scaling;
    r.yarn = true;
    r.yarn_factor = s.factor;
    r.beta_fast = s.beta_fast;
    r.beta_slow = s.beta_slow;
    r.yarn_original = s.original_max_position_embeddings;
    r.attention_factor = s.mscale_all_dim > 0 ? yarnMscale(s.factor, s.mscale) / yarnMscale(s.factor, s.mscale_all_dim)
                                              : yarnMscale(s.factor, 1.0);
  }
  return r;
}

std::vector<float> ReferenceModel::norm(const Norm& n, std::span<const float> x) const {
  if (n.empty()) return std::vector<float>(x.begin(), x.end());
  if (config_.norm == NormKind::kLayer) return ref::layerNorm(x, n.w, n.b, config_.rms_eps);
  return ref::rmsNorm(x, n.w, config_.rms_eps);
}

Status ReferenceModel::loadLayer(const ModelFolder& f, int i) {
  const ModelConfig& c = config_;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  const LayerNames n = layerNames(c, i);
  LayerWeights& w = layers_[i];
  w.full_attention = c.isFullAttention(i);
  const bool ln = c.norm == NormKind::kLayer;
  auto norm = [&](const std::string& name, Norm& dst) -> Status {
    if (name.empty()) return {};
    EWGPU_TRY(take(dst.w, loadVectorF32(f, name)));
    if (ln) EWGPU_TRY(take(dst.b, loadVectorF32(f, normBiasName(name))));
    return {};
  };
  EWGPU_TRY(norm(n.input_norm, w.input_norm));
  EWGPU_TRY(norm(n.ffn_norm, w.post_norm));
  EWGPU_TRY(norm(n.post_attn_norm, w.attn_out_norm));
  EWGPU_TRY(norm(n.post_ffn_norm, w.mlp_out_norm));
  const bool gated = c.mlp == MlpKind::kSwiGlu || c.mlp == MlpKind::kGeGlu;
  w.intermediate = c.intermediateOf(i);
  EWGPU_TRY(take(w.gate_up, loadMatrixF32(f, n.up, (gated ? 2 : 1) * w.intermediate, c.hidden)));
  EWGPU_TRY(take(w.down, loadMatrixF32(f, n.down, c.hidden, w.intermediate)));
  if (!n.ple_gate.empty()) {
    EWGPU_TRY(take(w.ple_gate, loadMatrixF32(f, n.ple_gate, c.ple_dim, c.hidden)));
    EWGPU_TRY(take(w.ple_proj, loadMatrixF32(f, n.ple_proj, c.hidden, c.ple_dim)));
    EWGPU_TRY(norm(n.ple_norm, w.ple_norm));
  }
  if (!n.layer_scalar.empty()) {
    std::vector<float> s;
    EWGPU_TRY(take(s, loadVectorF32(f, n.layer_scalar)));
    if (s.empty()) return makeError(ErrorCode::kInvalidModelFolder, n.layer_scalar + " is empty", {{"layer", i}});
    w.layer_scalar = s[0];  // [1] is MLC's zero padding
  }
  if (n.up_bias) EWGPU_TRY(take(w.up_bias, loadVectorF32(f, n.up + ".bias")));
  if (n.down_bias) EWGPU_TRY(take(w.down_bias, loadVectorF32(f, n.down + ".bias")));
  const int H = c.hidden, D = c.headDimOf(i);
  if (w.full_attention) {
    AttentionWeights& a = w.attn;
    const int q_rows = (c.arch == Arch::kQwen3_5 ? 2 : 1) * c.n_heads * D, kv_rows = c.kvHeadsOf(i) * D;
    if (n.qkv.size() == 1) {
      EWGPU_TRY(take(a.qkv, loadMatrixF32(f, n.qkv[0], q_rows + 2 * kv_rows, H)));
      if (n.qkv_bias) EWGPU_TRY(take(a.qkv_bias, loadVectorF32(f, n.qkv[0] + ".bias")));
    } else {  // separate q, k, v modules: stacked as one q|k|v matrix
      const int rows[3] = {q_rows, kv_rows, kv_rows};
      for (int m = 0; m < 3; ++m) {
        std::vector<float> part;
        EWGPU_TRY(take(part, loadMatrixF32(f, n.qkv[m], rows[m], H)));
        a.qkv.insert(a.qkv.end(), part.begin(), part.end());
      }
    }
    EWGPU_TRY(take(a.o, loadMatrixF32(f, n.o, H, c.n_heads * D)));
    if (n.o_bias) EWGPU_TRY(take(a.o_bias, loadVectorF32(f, n.o + ".bias")));
    if (!n.q_norm.empty()) {
      EWGPU_TRY(take(a.q_norm, loadVectorF32(f, n.q_norm)));
      EWGPU_TRY(take(a.k_norm, loadVectorF32(f, n.k_norm)));
    }
    return {};
  }
  GdnWeights& g = w.gdn;
  const std::string la = p + "linear_attn.";
  const int hv = c.lin_v_heads, dv = c.lin_v_dim;
  EWGPU_TRY(take(g.qkv, loadMatrixF32(f, la + "in_proj_qkv", c.linearConvDim(), H)));
  EWGPU_TRY(take(g.z, loadMatrixF32(f, la + "in_proj_z", hv * dv, H)));
  EWGPU_TRY(take(g.a, loadMatrixF32(f, la + "in_proj_a", hv, H)));
  EWGPU_TRY(take(g.b, loadMatrixF32(f, la + "in_proj_b", hv, H)));
  EWGPU_TRY(take(g.out, loadMatrixF32(f, la + "out_proj", H, hv * dv)));
  EWGPU_TRY(take(g.conv, loadVectorF32(f, la + "conv1d_weight")));  // [C, 1, kernel] == [C, kernel]
  EWGPU_TRY(take(g.a_log, loadVectorF32(f, la + "A_log")));
  EWGPU_TRY(take(g.dt_bias, loadVectorF32(f, la + "dt_bias")));
  EWGPU_TRY(take(g.norm, loadVectorF32(f, la + "norm.weight")));
  if (g.conv.size() != (size_t)c.linearConvDim() * c.lin_conv_kernel || g.a_log.size() != (size_t)hv ||
      g.dt_bias.size() != (size_t)hv || g.norm.size() != (size_t)dv)
    return makeError(ErrorCode::kInvalidModelFolder, "linear-attention tensor of unexpected size", {{"layer", i}});
  return {};
}

Result<ReferenceModel> ReferenceModel::load(const ModelFolder& folder) {
  ReferenceModel m;
  m.config_ = folder.config();
  const ModelConfig& c = m.config_;
  const ModelNames names = modelNames(c);
  EWGPU_TRY(take(m.embed_, loadMatrixF32(folder, names.embed, c.vocab, c.hidden)));
  if (!names.lm_head.empty()) EWGPU_TRY(take(m.lm_head_, loadMatrixF32(folder, names.lm_head, c.vocab, c.hidden)));
  if (names.lm_head_bias) EWGPU_TRY(take(m.lm_head_bias_, loadVectorF32(folder, names.lm_head + ".bias")));
  EWGPU_TRY(take(m.final_norm_.w, loadVectorF32(folder, names.final_norm)));
  if (c.norm == NormKind::kLayer) EWGPU_TRY(take(m.final_norm_.b, loadVectorF32(folder, normBiasName(names.final_norm))));
  EWGPU_TRY(m.loadGemma4(folder));
  m.layers_.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) EWGPU_TRY(m.loadLayer(folder, i));
  m.reset();
  return m;
}

Status ReferenceModel::loadGemma4(const ModelFolder& folder) {
  const ModelConfig& c = config_;
  const ModelNames names = modelNames(c);
  if (names.ple_shards.empty()) return {};
  const std::vector<int> shard_layers = gemma4PleShardLayers(c);
  const int64_t width = (int64_t)c.n_layers * c.ple_dim;
  ple_embed_.assign((size_t)c.ple_vocab * width, 0.0f);
  int64_t first = 0;  // first column of this shard in the whole table
  for (size_t s = 0; s < names.ple_shards.size(); ++s) {
    const int64_t cols = (int64_t)shard_layers[s] * c.ple_dim;
    std::vector<float> part;
    EWGPU_TRY(take(part, loadMatrixF32(folder, names.ple_shards[s], c.ple_vocab, cols)));
    for (int64_t r = 0; r < c.ple_vocab; ++r)
      std::copy_n(part.begin() + r * cols, cols, ple_embed_.begin() + r * width + first);
    first += cols;
  }
  EWGPU_TRY(take(ple_projection_, loadMatrixF32(folder, names.ple_projection, (int)width, c.hidden)));
  EWGPU_TRY(take(ple_projection_norm_.w, loadVectorF32(folder, names.ple_projection_norm)));
  return {};
}

// (rmsNorm(per_layer_model_projection(x) / sqrt(hidden)) per layer + embed_tokens_per_layer[token]) / sqrt(2), with x
// the (scaled) token embedding; the stored per-layer embedding already holds its sqrt(hpl).
std::vector<float> ReferenceModel::perLayerInputs(std::span<const int32_t> tokens, std::span<const float> x) const {
  const ModelConfig& c = config_;
  const int n = (int)tokens.size(), width = c.n_layers * c.ple_dim;
  std::vector<float> proj = ref::linear(x, ple_projection_, width, c.hidden);  // [n, L * hpl]
  const double in_scale = 1.0 / std::sqrt((double)c.hidden), out_scale = 1.0 / std::sqrt(2.0);
  for (float& v : proj) v = (float)(v * in_scale);
  proj = ref::rmsNorm(proj, ple_projection_norm_.w, c.rms_eps);  // rows of hpl: one norm per layer
  for (int t = 0; t < n; ++t)
    for (int k = 0; k < width; ++k) {
      float& v = proj[(size_t)t * width + k];
      v = (float)(((double)v + ple_embed_[(size_t)tokens[t] * width + k]) * out_scale);
    }
  return proj;
}

void ReferenceModel::reset() {
  const ModelConfig& c = config_;
  state_.assign(c.n_layers, LayerState{});
  for (int i = 0; i < c.n_layers; ++i) {
    if (layers_[i].full_attention) continue;
    state_[i].conv.assign((size_t)(c.lin_conv_kernel - 1) * c.linearConvDim(), 0.0f);
    state_[i].recurrent.assign((size_t)c.lin_v_heads * c.lin_k_dim * c.lin_v_dim, 0.0f);
  }
  position_ = 0;
  layer_outputs_.clear();
  final_hidden_.clear();
}

std::vector<float> ReferenceModel::attention(int layer, std::span<const float> h, int n) {
  const ModelConfig& c = config_;
  const AttentionWeights& w = layers_[layer].attn;
  LayerState& st = state_[layer];
  const int D = c.headDimOf(layer), q_width = c.n_heads * D, kv_width = c.kvHeadsOf(layer) * D;
  const bool gated = c.arch == Arch::kQwen3_5;  // per head: D query rows, then D gate rows
  const int q_rows = (gated ? 2 : 1) * q_width, rows = q_rows + 2 * kv_width;
  const std::vector<float> qkv = ref::linear(h, w.qkv, rows, c.hidden, w.qkv_bias);  // [n, rows]
  std::vector<float> q((size_t)n * q_width), gate(gated ? q.size() : 0);
  for (int t = 0; t < n; ++t)
    for (int hd = 0; hd < c.n_heads; ++hd)
      for (int d = 0; d < D; ++d) {
        const size_t dst = (size_t)t * q_width + hd * D + d, src = (size_t)t * rows + (gated ? 2 * hd * D : hd * D) + d;
        q[dst] = qkv[src];
        if (gated) gate[dst] = qkv[src + D];
      }
  std::vector<float> k = columns(qkv, n, rows, q_rows, kv_width),
                     v = columns(qkv, n, rows, q_rows + kv_width, kv_width);
  // q/k norms: rows of head_dim (one norm per head), or olmo2's over the whole projection (rows of q_width).
  if (!w.q_norm.empty()) q = ref::rmsNorm(q, w.q_norm, c.rms_eps);
  if (!w.k_norm.empty()) k = ref::rmsNorm(k, w.k_norm, c.rms_eps);
  if (c.isGemma4()) v = ref::rmsNorm(v, std::vector<float>(D, 1.0f), c.rms_eps);  // v_norm: no scale
  const ref::RopeSpec rope = ropeSpecOf(c, layer);
  for (int t = 0; t < n; ++t) {
    ref::ropeNeox(std::span(q).subspan((size_t)t * q_width, q_width), D, rope, position_ + t);
    ref::ropeNeox(std::span(k).subspan((size_t)t * kv_width, kv_width), D, rope, position_ + t);
  }
  if (c.rope_scaling && c.rope_scaling->llama4_beta > 0) {  // ministral3: q scaled by its position
    const RopeScaling& s = *c.rope_scaling;
    for (int t = 0; t < n; ++t) {
      const double f = 1.0 + s.llama4_beta * std::log(1.0 + std::floor((double)(position_ + t) /
                                                                    s.original_max_position_embeddings));
      for (int i = 0; i < q_width; ++i) q[(size_t)t * q_width + i] = (float)(q[(size_t)t * q_width + i] * f);
    }
  }
  // gemma4's KV-shared layers attend over their source layer's cache (already holding these tokens) and add none.
  const int src = c.kvSourceOf(layer);
  if (src == layer) {
    st.k_cache.insert(st.k_cache.end(), k.begin(), k.end());
    st.v_cache.insert(st.v_cache.end(), v.begin(), v.end());
  }
  const LayerState& kv = state_[src];
  std::vector<float> a = ref::causalAttention(q, kv.k_cache, kv.v_cache, n, c.n_heads, c.kvHeadsOf(layer), D,
                                              (float)c.attnScale(), c.windowOf(layer), c.attn_softcap);
  for (size_t i = 0; i < gate.size(); ++i) a[i] = (float)(a[i] * ref::sigmoid(gate[i]));
  return ref::linear(a, w.o, c.hidden, q_width, w.o_bias);
}

std::vector<float> ReferenceModel::gatedDeltaNet(int layer, std::span<const float> h, int n) {
  const ModelConfig& c = config_;
  const GdnWeights& w = layers_[layer].gdn;
  LayerState& st = state_[layer];
  const ref::GdnShape s{c.lin_k_heads, c.lin_v_heads, c.lin_k_dim, c.lin_v_dim};
  const int C = c.linearConvDim(), key_width = s.hk * s.dk, value_width = s.hv * s.dv;
  const std::vector<float> u = ref::linear(h, w.qkv, C, c.hidden);  // [n, C] raw, what the conv window keeps
  const std::vector<float> z = ref::linear(h, w.z, value_width, c.hidden);
  const std::vector<float> a = ref::linear(h, w.a, s.hv, c.hidden), b = ref::linear(h, w.b, s.hv, c.hidden);
  std::vector<float> y = ref::causalConv1d(u, C, w.conv, c.lin_conv_kernel, st.conv);
  for (float& x : y) x = (float)ref::silu(x);
  std::vector<float> q = ref::l2Norm(columns(y, n, C, 0, key_width), s.dk);
  const std::vector<float> k = ref::l2Norm(columns(y, n, C, key_width, key_width), s.dk);
  const std::vector<float> v = columns(y, n, C, 2 * key_width, value_width);
  const double q_scale = 1.0 / std::sqrt((double)s.dk);
  for (float& x : q) x = (float)(x * q_scale);
  std::vector<float> g, beta;
  ref::gdnGates(a, b, w.a_log, w.dt_bias, g, beta);
  const bool chunked = n > 1 && gdn_prefill_ == GdnPrefill::kChunked;
  const std::vector<float> o = chunked ? ref::gdnChunked(q, k, v, g, beta, s, st.recurrent)
                                       : ref::gdnRecurrent(q, k, v, g, beta, s, st.recurrent);
  return ref::linear(ref::gatedRmsNorm(o, z, w.norm, c.rms_eps), w.out, c.hidden, value_width);
}

std::vector<float> ReferenceModel::mlp(const LayerWeights& w, std::span<const float> h, int n) const {
  const int I = w.intermediate;
  std::vector<float> act;
  if (config_.mlp == MlpKind::kSwiGlu || config_.mlp == MlpKind::kGeGlu) {
    const std::vector<float> gu = ref::linear(h, w.gate_up, 2 * I, config_.hidden, w.up_bias);  // [n, 2I]
    const std::vector<float> g = columns(gu, n, 2 * I, 0, I), u = columns(gu, n, 2 * I, I, I);
    if (config_.mlp == MlpKind::kSwiGlu) {
      act = ref::swiglu(g, u);
    } else {
      act.resize(g.size());
      for (size_t i = 0; i < g.size(); ++i) act[i] = (float)(ref::geluTanh(g[i]) * u[i]);
    }
  } else {
    act = ref::linear(h, w.gate_up, I, config_.hidden, w.up_bias);
    for (float& x : act) x = (float)(config_.mlp == MlpKind::kGelu ? ref::geluErf(x) : ref::geluTanh(x));
  }
  return ref::linear(act, w.down, config_.hidden, I, w.down_bias);
}

std::vector<float> ReferenceModel::forward(std::span<const int32_t> tokens) {
  const ModelConfig& c = config_;
  const int n = (int)tokens.size(), H = c.hidden;
  if (n == 0) return {};
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab) return {};
  std::vector<float> x((size_t)n * H);  // residual stream [n, hidden]
  for (int t = 0; t < n; ++t) std::copy_n(embed_.begin() + (size_t)tokens[t] * H, H, x.begin() + (size_t)t * H);
  if (c.embed_scale != 1.0f)
    for (float& v : x) v = (float)((double)v * c.embed_scale);
  const std::vector<float> pli = ple_embed_.empty() ? std::vector<float>{} : perLayerInputs(tokens, x);
  layer_outputs_.assign(c.n_layers, {});
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = layers_[l];
    const std::vector<float> h = norm(w.input_norm, x);
    std::vector<float> mixed = w.full_attention ? attention(l, h, n) : gatedDeltaNet(l, h, n);
    if (c.parallel_residual) {  // both branches read the layer's input
      const std::vector<float> m = mlp(w, c.shared_norm ? h : norm(w.post_norm, x), n);
      addInPlace(x, mixed);
      addInPlace(x, m);
    } else {
      addInPlace(x, w.attn_out_norm.empty() ? mixed : norm(w.attn_out_norm, mixed));
      std::vector<float> m = mlp(w, norm(w.post_norm, x), n);
      addInPlace(x, w.mlp_out_norm.empty() ? m : norm(w.mlp_out_norm, m));
    }
    if (!w.ple_gate.empty()) {  // gemma4: x += norm(proj(gelu(gate(x)) * per-layer input of this layer))
      const int P = c.ple_dim;
      std::vector<float> g = ref::linear(x, w.ple_gate, P, H);  // [n, hpl]
      for (int t = 0; t < n; ++t)
        for (int k = 0; k < P; ++k) {
          float& v = g[(size_t)t * P + k];
          v = (float)(ref::geluTanh(v) * pli[(size_t)t * c.n_layers * P + (size_t)l * P + k]);
        }
      addInPlace(x, norm(w.ple_norm, ref::linear(g, w.ple_proj, H, P)));
    }
    if (w.layer_scalar != 1.0f)
      for (float& v : x) v = (float)((double)v * w.layer_scalar);
    layer_outputs_[l] = x;
  }
  final_hidden_ = norm(final_norm_, x);
  position_ += n;
  std::vector<float> out = ref::linear(final_hidden_, lm_head_.empty() ? embed_ : lm_head_, c.vocab, H, lm_head_bias_);
  if (c.logit_scale != 1.0)
    for (float& v : out) v = (float)(v * c.logit_scale);
  if (c.final_softcap > 0)
    for (float& v : out) v = (float)ref::softcap(v, c.final_softcap);
  return out;
}

std::vector<int32_t> greedyGenerate(ReferenceModel& model, std::span<const int32_t> prompt, int n) {
  std::vector<int32_t> out;
  const int vocab = model.config().vocab;
  std::vector<float> logits = model.forward(prompt);
  for (int i = 0; i < n && !logits.empty(); ++i) {
    const int32_t next = ref::argmax(std::span(logits).last(vocab));
    out.push_back(next);
    if (i + 1 < n) logits = model.forward(std::span(&next, 1));
  }
  return out;
}

}  // namespace ewgpu
