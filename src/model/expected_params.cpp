// Expected tensor names/shapes/dtypes per architecture and quantization (mlc-format.md §2.5, §3.1-3.4).
#include "model/expected_params.h"

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

void addAttention(const ModelConfig& c, const std::string& p, ParamList& out) {
  int64_t D = c.head_dim, H = c.hidden, q = c.n_heads, kv = c.n_kv_heads;
  int64_t qRows = c.arch == Arch::kQwen3_5 ? 2 * q * D : q * D;  // qwen3_5: query|gate per head
  int64_t rows = qRows + 2 * kv * D;
  bool llamaNames = c.arch == Arch::kLlama || c.arch == Arch::kMistral;
  std::string qkv = p + (llamaNames ? "self_attn.qkv_proj" : "self_attn.c_attn");
  out.matrix(qkv, rows, H);
  if (c.qkv_bias) out.vector(qkv + ".bias", rows);
  if (c.qk_norm) {
    out.vector(p + "self_attn.q_norm.weight", D);
    out.vector(p + "self_attn.k_norm.weight", D);
  }
  out.matrix(p + "self_attn.o_proj", H, q * D);
  if (c.o_bias) out.vector(p + "self_attn.o_proj.bias", H);
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
  out.matrix("model.embed_tokens", c.vocab, c.hidden, true);
  for (int i = 0; i < c.n_layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    out.vector(p + "input_layernorm.weight", c.hidden);
    if (c.isFullAttention(i))
      addAttention(c, p, out);
    else
      addLinearAttention(c, p, out);
    out.vector(p + "post_attention_layernorm.weight", c.hidden);
    out.matrix(p + "mlp.gate_up_proj", 2 * (int64_t)c.intermediate, c.hidden);
    out.matrix(p + "mlp.down_proj", c.hidden, c.intermediate);
  }
  out.vector("model.norm.weight", c.hidden);
  if (!c.tie_embeddings) out.matrix("lm_head", c.vocab, c.hidden);
  return out;
}

}  // namespace

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
    bool embedding = p.module == "model.embed_tokens", head = p.module == "lm_head";
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
