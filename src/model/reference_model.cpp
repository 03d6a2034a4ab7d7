// Whole-model CPU reference (see reference_model.h). Forward pass per layer (pre-norm, two residual branches):
//   x += Mixer(RMSNorm(x));  x += MLP(RMSNorm(x));   logits = RMSNorm(x) lm_head^T
// Mixer = causal GQA attention (llama family: NeoX RoPE over the full head_dim; qwen3: per-head q/k norms;
// qwen3_5: per-head query|gate rows, q/k norms, partial RoPE, sigmoid output gate) or Gated DeltaNet
// (qwen3_5-architecture.md §6). All norms use the stored weight as a plain multiplier (mlc-format.md §3.4).
#include "model/reference_model.h"

#include "model/model_folder.h"
#include "model/reference_ops.h"

#include <cmath>
#include <string>

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
  if (!c.rope_scaling) return std::nullopt;
  return ref::Llama3Scaling{c.rope_scaling->factor, c.rope_scaling->low_freq_factor, c.rope_scaling->high_freq_factor,
                            c.rope_scaling->original_max_position_embeddings};
}

}  // namespace

Status ReferenceModel::loadLayer(const ModelFolder& f, int i) {
  const ModelConfig& c = config_;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  LayerWeights& w = layers_[i];
  w.full_attention = c.isFullAttention(i);
  EWGPU_TRY(take(w.input_norm, loadVectorF32(f, p + "input_layernorm.weight")));
  EWGPU_TRY(take(w.post_norm, loadVectorF32(f, p + "post_attention_layernorm.weight")));
  EWGPU_TRY(take(w.gate_up, loadMatrixF32(f, p + "mlp.gate_up_proj", 2 * c.intermediate, c.hidden)));
  EWGPU_TRY(take(w.down, loadMatrixF32(f, p + "mlp.down_proj", c.hidden, c.intermediate)));
  const int H = c.hidden, D = c.head_dim;
  if (w.full_attention) {
    AttentionWeights& a = w.attn;
    const bool llama_names = c.arch == Arch::kLlama || c.arch == Arch::kMistral;
    const std::string qkv = p + (llama_names ? "self_attn.qkv_proj" : "self_attn.c_attn");
    const int q_rows = (c.arch == Arch::kQwen3_5 ? 2 : 1) * c.n_heads * D;
    EWGPU_TRY(take(a.qkv, loadMatrixF32(f, qkv, q_rows + 2 * c.n_kv_heads * D, H)));
    if (c.qkv_bias) EWGPU_TRY(take(a.qkv_bias, loadVectorF32(f, qkv + ".bias")));
    EWGPU_TRY(take(a.o, loadMatrixF32(f, p + "self_attn.o_proj", H, c.n_heads * D)));
    if (c.o_bias) EWGPU_TRY(take(a.o_bias, loadVectorF32(f, p + "self_attn.o_proj.bias")));
    if (c.qk_norm) {
      EWGPU_TRY(take(a.q_norm, loadVectorF32(f, p + "self_attn.q_norm.weight")));
      EWGPU_TRY(take(a.k_norm, loadVectorF32(f, p + "self_attn.k_norm.weight")));
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
  EWGPU_TRY(take(m.embed_, loadMatrixF32(folder, "model.embed_tokens", c.vocab, c.hidden)));
  if (!c.tie_embeddings) EWGPU_TRY(take(m.lm_head_, loadMatrixF32(folder, "lm_head", c.vocab, c.hidden)));
  EWGPU_TRY(take(m.final_norm_, loadVectorF32(folder, "model.norm.weight")));
  m.layers_.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) EWGPU_TRY(m.loadLayer(folder, i));
  m.reset();
  return m;
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
  const int D = c.head_dim, q_width = c.n_heads * D, kv_width = c.n_kv_heads * D;
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
  std::vector<float> k = columns(qkv, n, rows, q_rows, kv_width), v = columns(qkv, n, rows, q_rows + kv_width, kv_width);
  if (!w.q_norm.empty()) q = ref::rmsNorm(q, w.q_norm, c.rms_eps);  // rows of head_dim: one norm per head
  if (!w.k_norm.empty()) k = ref::rmsNorm(k, w.k_norm, c.rms_eps);
  const auto scaling = llama3Scaling(c);
  for (int t = 0; t < n; ++t) {
    ref::ropeNeox(std::span(q).subspan((size_t)t * q_width, q_width), D, c.rotaryDim(), position_ + t, c.rope_theta,
                  scaling);
    ref::ropeNeox(std::span(k).subspan((size_t)t * kv_width, kv_width), D, c.rotaryDim(), position_ + t, c.rope_theta,
                  scaling);
  }
  st.k_cache.insert(st.k_cache.end(), k.begin(), k.end());
  st.v_cache.insert(st.v_cache.end(), v.begin(), v.end());
  std::vector<float> a = ref::causalAttention(q, st.k_cache, st.v_cache, n, c.n_heads, c.n_kv_heads, D,
                                              (float)(1.0 / std::sqrt((double)D)));
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
  const int I = config_.intermediate;
  const std::vector<float> gu = ref::linear(h, w.gate_up, 2 * I, config_.hidden);  // [n, 2I]
  const std::vector<float> act = ref::swiglu(columns(gu, n, 2 * I, 0, I), columns(gu, n, 2 * I, I, I));
  return ref::linear(act, w.down, config_.hidden, I);
}

std::vector<float> ReferenceModel::forward(std::span<const int32_t> tokens) {
  const ModelConfig& c = config_;
  const int n = (int)tokens.size(), H = c.hidden;
  if (n == 0) return {};
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab) return {};
  std::vector<float> x((size_t)n * H);  // residual stream [n, hidden]
  for (int t = 0; t < n; ++t)
    std::copy_n(embed_.begin() + (size_t)tokens[t] * H, H, x.begin() + (size_t)t * H);
  layer_outputs_.assign(c.n_layers, {});
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = layers_[l];
    const std::vector<float> h = ref::rmsNorm(x, w.input_norm, c.rms_eps);
    addInPlace(x, w.full_attention ? attention(l, h, n) : gatedDeltaNet(l, h, n));
    addInPlace(x, mlp(w, ref::rmsNorm(x, w.post_norm, c.rms_eps), n));
    layer_outputs_[l] = x;
  }
  final_hidden_ = ref::rmsNorm(x, final_norm_, c.rms_eps);
  position_ += n;
  return ref::logits(final_hidden_, lm_head_.empty() ? embed_ : lm_head_, c.vocab, H);
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
