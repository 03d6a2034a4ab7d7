// Expected tensor names/shapes/dtypes per architecture and quantization (mlc-format.md §2.5, §3.1-3.4).
#include "model/expected_params.h"

#include <algorithm>

namespace ewgpu {

namespace {

// Collects specs in writing order.
class ParamList {
 public:
  explicit ParamList(const ModelConfig& c) : q_(quantSpec(c.quant)), dt_(modelDType(c.quant)) {}

  void matrix(const std::string& module, int64_t rows, int64_t cols, bool embedding = false) {
    matrices.push_back({module, rows, cols, embedding});
    if (!q_.quantized) {
      params.push_back({module + ".weight", {rows, cols}, dt_, ParamKind::kWeight, module, rows, cols});
      return;
    }
    int64_t groups = (cols + q_.group_size - 1) / q_.group_size;
    params.push_back({module + ".q_weight",
                      {rows, groups * q_.words_per_group},
                      DType::kU32,
                      ParamKind::kQWeight,
                      module,
                      rows,
                      cols});
    DType scaleType = q_.f32_scales ? DType::kF32 : DType::kF16;
    params.push_back({module + ".q_scale", {rows, groups}, scaleType, ParamKind::kQScale, module, rows, cols});
  }
  void vector(const std::string& name, int64_t n, std::optional<DType> dtype = std::nullopt) {
    params.push_back({name, {n}, dtype.value_or(dt_), ParamKind::kVector, name, n, 1});
  }
  void conv(const std::string& name, int64_t channels, int64_t kernel) {
    params.push_back({name, {channels, 1, kernel}, dt_, ParamKind::kConv, name, channels, kernel});
  }

  std::vector<ParamSpec> params;
  std::vector<MatrixSpec> matrices;

 private:
  QuantSpec q_;
  DType dt_;
};

void addNorm(const ModelConfig& c, const std::string& name, ParamList& out) {
  if (name.empty()) return;
  out.vector(name, c.hidden);
  if (c.norm == NormKind::kLayer) out.vector(normBiasName(name), c.hidden);
}

void addAttention(const ModelConfig& c, int layer, const LayerNames& n, ParamList& out) {
  int64_t D = c.headDimOf(layer), H = c.hidden, q = c.n_heads, kv = c.kvHeadsOf(layer);
  int64_t qRows = c.arch == Arch::kQwen3_5 ? 2 * q * D : q * D;  // qwen3_5: query|gate per head
  int64_t rows = qRows + 2 * kv * D;
  if (n.qkv.size() == 1) {
    out.matrix(n.qkv[0], rows, H);
    if (n.qkv_bias) out.vector(n.qkv[0] + ".bias", rows);
  } else {
    const int64_t parts[3] = {qRows, kv * D, kv * D};
    for (int i = 0; i < 3; ++i) {
      out.matrix(n.qkv[i], parts[i], H);
      if (n.qkv_bias) out.vector(n.qkv[i] + ".bias", parts[i]);
    }
  }
  if (!n.q_norm.empty()) {
    out.vector(n.q_norm, c.qk_norm_full ? q * D : D);
    out.vector(n.k_norm, c.qk_norm_full ? kv * D : D);
  }
  out.matrix(n.o, H, q * D);
  if (n.o_bias) out.vector(n.o + ".bias", H);
}

void addLinearAttention(const ModelConfig& c, const std::string& p, ParamList& out) {
  int64_t H = c.hidden, nv = c.lin_v_heads, vd = c.lin_v_dim;
  std::string la = p + "linear_attn.";
  out.matrix(la + "in_proj_qkv", c.linearConvDim(), H);
  out.matrix(la + "in_proj_z", nv * vd, H);
  out.matrix(la + "in_proj_a", nv, H);
  out.matrix(la + "in_proj_b", nv, H);
  out.conv(la + "conv1d_weight", c.linearConvDim(), c.lin_conv_kernel);
  out.vector(la + "A_log", nv, DType::kF32);
  out.vector(la + "dt_bias", nv, DType::kF32);
  out.vector(la + "norm.weight", vd);
  out.matrix(la + "out_proj", H, nv * vd);
}

// BERT (MLC's BertModel, python/mlc_llm/model/bert/bert_model.py): three embeddings, a LayerNorm (weight + bias)
// after them and after each residual add, every Linear with a bias, q|k|v fused into one `qkv` (rows q, k, v:
// bert_loader.py concatenates HF query, key, value along axis 0). No final norm, no lm_head.
ParamList buildBertList(const ModelConfig& c) {
  ParamList out(c);
  const int64_t H = c.hidden, I = c.intermediate;
  out.matrix("embeddings.word_embeddings", c.vocab, H, true);
  out.matrix("embeddings.position_embeddings", c.context_window, H, true);
  out.matrix("embeddings.token_type_embeddings", c.type_vocab, H, true);
  out.vector("embeddings.LayerNorm.weight", H);
  out.vector("embeddings.LayerNorm.bias", H);
  auto linear = [&](const std::string& module, int64_t rows, int64_t cols) {
    out.matrix(module, rows, cols);
    out.vector(module + ".bias", rows);
  };
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    linear(p + "attention.self.qkv", 3 * H, H);
    linear(p + "attention.output.dense", H, H);
    out.vector(p + "attention.output.LayerNorm.weight", H);
    out.vector(p + "attention.output.LayerNorm.bias", H);
    linear(p + "intermediate.dense", I, H);
    linear(p + "output.dense", H, I);
    out.vector(p + "output.LayerNorm.weight", H);
    out.vector(p + "output.LayerNorm.bias", H);
  }
  return out;
}

ParamList buildList(const ModelConfig& c) {
  if (c.arch == Arch::kBert) return buildBertList(c);
  ParamList out(c);
  const ModelNames m = modelNames(c);
  out.matrix(m.embed, c.vocab, c.hidden, true);
  const std::vector<int> shard_layers = gemma4PleShardLayers(c);
  for (size_t s = 0; s < m.ple_shards.size(); ++s)
    out.matrix(m.ple_shards[s], c.ple_vocab, (int64_t)shard_layers[s] * c.ple_dim, true);
  if (!m.ple_projection.empty()) {
    out.matrix(m.ple_projection, (int64_t)c.n_layers * c.ple_dim, c.hidden);
    out.vector(m.ple_projection_norm, c.ple_dim);
  }
  const bool gated = c.mlp == MlpKind::kSwiGlu || c.mlp == MlpKind::kGeGlu;
  for (int i = 0; i < c.n_layers; ++i) {
    const LayerNames n = layerNames(c, i);
    addNorm(c, n.input_norm, out);
    if (c.isFullAttention(i))
      addAttention(c, i, n, out);
    else
      addLinearAttention(c, "model.layers." + std::to_string(i) + ".", out);
    addNorm(c, n.post_attn_norm, out);
    addNorm(c, n.ffn_norm, out);
    const int64_t I = c.intermediateOf(i);
    out.matrix(n.up, (gated ? 2 : 1) * I, c.hidden);
    // gpt_neox keeps its MLP biases in float32 (MLC's ffn_out_dtype; the quantized linear does not cast them).
    const std::optional<DType> mlp_bias = c.arch == Arch::kGptNeox ? std::optional<DType>(DType::kF32) : std::nullopt;
    if (n.up_bias) out.vector(n.up + ".bias", (gated ? 2 : 1) * I, mlp_bias);
    out.matrix(n.down, c.hidden, I);
    if (n.down_bias) out.vector(n.down + ".bias", c.hidden, mlp_bias);
    addNorm(c, n.post_ffn_norm, out);
    if (!n.ple_gate.empty()) {
      out.matrix(n.ple_gate, c.ple_dim, c.hidden);
      out.matrix(n.ple_proj, c.hidden, c.ple_dim);
      addNorm(c, n.ple_norm, out);
    }
    if (!n.layer_scalar.empty()) out.vector(n.layer_scalar, 2);
  }
  addNorm(c, m.final_norm, out);
  if (!m.lm_head.empty()) {
    out.matrix(m.lm_head, c.vocab, c.hidden);
    if (m.lm_head_bias) out.vector(m.lm_head + ".bias", c.vocab);
  }
  return out;
}

}  // namespace

std::vector<int> gemma4PleShardLayers(const ModelConfig& c) {
  if (c.arch != Arch::kGemma4 || c.ple_dim <= 0) return {};
  const int64_t kMaxShardBytes = 512ll << 20;
  const int64_t q4_bytes = (int64_t)c.ple_vocab * c.n_layers * c.ple_dim / 2;  // MLC counts 4 bits a value
  const int n = (int)std::max<int64_t>(1, (q4_bytes + kMaxShardBytes - 1) / kMaxShardBytes);
  std::vector<int> layers(n, c.n_layers / n);
  for (int s = 0; s < c.n_layers % n; ++s) ++layers[s];
  return layers;
}

std::string normBiasName(const std::string& w) {
  const std::string suffix = ".weight";
  if (w.size() > suffix.size() && w.compare(w.size() - suffix.size(), suffix.size(), suffix) == 0)
    return w.substr(0, w.size() - suffix.size()) + ".bias";
  return w + ".bias";
}

LayerNames layerNames(const ModelConfig& c, int layer) {
  LayerNames n;
  const std::string i = std::to_string(layer);
  n.qkv_bias = c.qkv_bias;
  n.o_bias = c.o_bias;
  n.up_bias = n.down_bias = c.mlp_bias;
  switch (c.arch) {
    case Arch::kPhi3: {
      const std::string p = "transformer.h." + i + ".";
      n.input_norm = p + "ln.weight";
      n.qkv = {p + "mixer.qkv_proj"};
      n.o = p + "mixer.out_proj";
      n.ffn_norm = p + "post_attention_layernorm.weight";
      n.up = p + "mlp.gate_up_proj";
      n.down = p + "mlp.down_proj";
      return n;
    }
    case Arch::kPhi: {
      const std::string p = "transformer.h." + i + ".";
      n.input_norm = p + "ln.weight";
      n.qkv = {p + "mixer.Wqkv"};
      n.o = p + "mixer.out_proj";
      n.up = p + "mlp.fc1";
      n.down = p + "mlp.fc2";
      return n;
    }
    case Arch::kGptNeox: {
      const std::string p = "gpt_neox.layers." + i + ".";
      n.input_norm = p + "input_layernorm.weight";
      n.qkv = {p + "attention.query_key_value"};
      n.o = p + "attention.dense";
      n.ffn_norm = p + "post_attention_layernorm.weight";
      n.up = p + "mlp.dense_h_to_4h";
      n.down = p + "mlp.dense_4h_to_h";
      return n;
    }
    default:
      break;
  }
  const std::string p = (c.arch == Arch::kGemma3 ? "language_model.model.layers." : "model.layers.") + i + ".";
  n.input_norm = p + "input_layernorm.weight";
  const bool c_attn = c.arch == Arch::kQwen2 || c.arch == Arch::kQwen3 || c.arch == Arch::kQwen3_5;
  if (c.arch == Arch::kGemma4) {
    if (c.ple_dim > 0) {
      n.ple_gate = p + "per_layer_input_gate";
      n.ple_proj = p + "per_layer_projection";
      n.ple_norm = p + "post_per_layer_input_norm.weight";
    }
    n.layer_scalar = p + "layer_scalar";
  }
  if (c.arch == Arch::kGemma3 || c.arch == Arch::kGemma4)
    n.qkv = {p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"};
  else
    n.qkv = {p + (c_attn ? "self_attn.c_attn" : "self_attn.qkv_proj")};
  n.o = p + "self_attn.o_proj";
  if (c.qk_norm || c.qk_norm_full) {
    n.q_norm = p + "self_attn.q_norm.weight";
    n.k_norm = p + "self_attn.k_norm.weight";
  }
  if (c.post_norms) {  // gemma2/3: post_attention_layernorm norms the attention output; olmo2 likewise
    n.post_attn_norm = p + "post_attention_layernorm.weight";
    n.post_ffn_norm = p + "post_feedforward_layernorm.weight";
    if (c.pre_norms) n.ffn_norm = p + "pre_feedforward_layernorm.weight";
  } else {
    n.ffn_norm = p + "post_attention_layernorm.weight";
  }
  if (!c.pre_norms) n.input_norm.clear();
  n.up = p + "mlp.gate_up_proj";
  n.down = p + "mlp.down_proj";
  return n;
}

ModelNames modelNames(const ModelConfig& c) {
  ModelNames m;
  m.lm_head_bias = c.lm_head_bias;
  switch (c.arch) {
    case Arch::kPhi3:
      m.embed = "transformer.embd";
      m.final_norm = "transformer.norm.weight";
      m.lm_head = c.tie_embeddings ? "" : "lm_head";
      return m;
    case Arch::kPhi:
      m.embed = "transformer.embd";
      m.final_norm = "lm_head.ln.weight";
      m.lm_head = "lm_head.linear";
      return m;
    case Arch::kGptNeox:
      m.embed = "gpt_neox.embed_in";
      m.final_norm = "gpt_neox.final_layer_norm.weight";
      m.lm_head = "embed_out";
      return m;
    default:
      break;
  }
  const std::string p = c.arch == Arch::kGemma3 ? "language_model.model." : "model.";
  m.embed = p + "embed_tokens";
  if (c.arch == Arch::kGemma4 && c.ple_dim > 0) {
    for (size_t s = 0; s < gemma4PleShardLayers(c).size(); ++s)
      m.ple_shards.push_back(p + "embed_tokens_per_layer.shards." + std::to_string(s));
    m.ple_projection = p + "per_layer_model_projection";
    m.ple_projection_norm = p + "per_layer_projection_norm.weight";
  }
  m.final_norm = p + "norm.weight";
  m.lm_head = c.tie_embeddings ? "" : "lm_head";
  return m;
}

DType modelDType(Quant q) { return quantSpec(q).f32_model ? DType::kF32 : DType::kF16; }

std::vector<ParamSpec> expectedParams(const ModelConfig& c) { return buildList(c).params; }

std::vector<MatrixSpec> expectedMatrices(const ModelConfig& c) { return buildList(c).matrices; }

int64_t parameterCount(const ModelConfig& c) {
  int64_t n = 0;
  for (const ParamSpec& p : expectedParams(c)) {
    if (p.kind == ParamKind::kQScale) continue;
    n += p.rows * p.cols;
  }
  return n;
}

WeightTraffic weightTraffic(const ModelConfig& c) {
  WeightTraffic t;
  t.parameters = parameterCount(c);
  for (const ParamSpec& p : expectedParams(c)) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    uint64_t bytes = (uint64_t)n * dtypeSize(p.dtype);
    t.weight_bytes += bytes;
    const ModelNames names = modelNames(c);
    const bool ple = std::find(names.ple_shards.begin(), names.ple_shards.end(), p.module) != names.ple_shards.end();
    if (ple) {  // gemma4's per-layer embedding: one row of each shard per token
      t.bytes_per_token += bytes / (uint64_t)p.shape[0];
      continue;
    }
    bool embedding = p.module == names.embed, head = !names.lm_head.empty() && p.module == names.lm_head;
    if (embedding || head) {
      if (head || c.tie_embeddings) t.lm_head_bytes += bytes;
      if (embedding) t.bytes_per_token += bytes / (uint64_t)p.shape[0];  // one row of the lookup
      continue;
    }
    t.bytes_per_token += bytes;
  }
  t.bytes_per_token += t.lm_head_bytes;
  return t;
}

}  // namespace ewgpu
