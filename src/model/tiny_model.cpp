// Random test models: tiny dims for exact tests, or the real dims of five WebLLM models (written by
// streaming random codes) for GPU benchmarks.
#include "model/tiny_model.h"

#include <cmath>

#include "model/mlc_writer.h"
#include "model/quantize.h"

namespace ewgpu {

namespace {

// splitmix64 stream: small, seedable, identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return (float)((next() >> 40) + 0.5) * (1.0f / 16777216.0f); }  // (0, 1)
  float normal() { return std::sqrt(-2.0f * std::log(uniform())) * std::cos(6.2831853f * uniform()); }

 private:
  uint64_t s_;
};

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Values of a non-matrix parameter (norms, biases, Qwen3.5 GDN parameters), by name.
void fillVector(const ParamSpec& p, Rng& rng, std::vector<float>& v) {
  v.resize(p.rows * p.cols);
  for (float& x : v) {
    if (p.kind == ParamKind::kConv)
      x = 0.3f * rng.normal();
    else if (endsWith(p.name, "A_log"))
      x = std::log(1.0f + 15.0f * rng.uniform());
    else if (endsWith(p.name, "dt_bias"))
      x = 1.0f + 0.3f * rng.normal();
    else if (endsWith(p.name, ".bias"))
      x = 0.05f * rng.normal();
    else
      x = 1.0f + 0.1f * rng.normal();  // every norm weight (Qwen3.5 (1+w) norms: the stored w+1)
  }
}

struct Preset {
  std::string_view name;
  Arch arch;
  int hidden, intermediate, layers, heads, kv_heads, head_dim, vocab;
  bool tie = true;
};
// Dims from each model's HF config.json (the families' rows: docs/mlc-architectures.md).
constexpr Preset kPresets[] = {
    {"qwen3-0.6b", Arch::kQwen3, 1024, 3072, 28, 16, 8, 128, 151936},
    {"llama-3.2-1b", Arch::kLlama, 2048, 8192, 16, 32, 8, 64, 128256},
    {"qwen2.5-1.5b", Arch::kQwen2, 1536, 8960, 28, 12, 2, 128, 151936},
    {"qwen3.5-0.8b", Arch::kQwen3_5, 1024, 3584, 24, 8, 2, 256, 248320},
    {"qwen3.5-2b", Arch::kQwen3_5, 2048, 6144, 24, 8, 2, 256, 248320},
    {"phi-3.5-mini", Arch::kPhi3, 3072, 8192, 32, 32, 32, 96, 32064, false},
    {"gemma-2-2b", Arch::kGemma2, 2304, 9216, 26, 8, 4, 256, 256000},
    {"gemma3-1b", Arch::kGemma3, 1152, 6912, 26, 4, 1, 256, 262144},
    {"olmo-2-1b", Arch::kOlmo2, 2048, 8192, 16, 16, 16, 128, 100352, false},
    {"stablelm-2-1.6b", Arch::kStableLm, 2048, 5632, 24, 32, 32, 64, 100352, false},
    // Gemma 4 E2B text: head dim 256 (full layers 512), 20 KV-shared layers, per-layer inputs of 256, window 512
    // (tinyModelConfig's real-shape gemma4 branch).
    {"gemma-4-e2b", Arch::kGemma4, 1536, 6144, 35, 8, 1, 256, 262144},
};

// Random packed codes for one row (codes 0..2*max_int, padding codes 0).
void randomCodeRow(const QuantSpec& s, int64_t cols, Rng& rng, uint32_t* words, int64_t nwords) {
  const uint32_t mask = (1u << s.bits) - 1, top = 2u * s.max_int;
  for (int64_t wi = 0; wi < nwords; ++wi) {
    int64_t g = wi / s.words_per_group, inGroup = (wi % s.words_per_group) * s.elems_per_word;
    int64_t first = g * s.group_size + inGroup;
    int64_t valid = std::clamp<int64_t>(cols - first, 0, s.elems_per_word);
    uint64_t r = rng.next();
    uint32_t w = 0;
    for (int64_t e = 0; e < valid; ++e) {
      uint32_t code = (uint32_t)(r >> (e * s.bits)) & mask;
      if (code > top) code = (uint32_t)s.max_int;
      w |= code << (e * s.bits);
    }
    words[wi] = w;
  }
}

Status streamMatrixParam(ShardWriter& w, const ParamSpec& p, const QuantSpec& s, Rng& rng) {
  const int64_t n = p.rows * p.cols;
  uint64_t nbytes =
      p.kind == ParamKind::kQWeight ? (uint64_t)p.shape[0] * p.shape[1] * 4 : (uint64_t)p.shape[0] * p.shape[1] * 2;
  EWGPU_TRY(w.begin(p.name, p.shape, p.dtype, nbytes));
  if (p.kind == ParamKind::kQWeight) {
    std::vector<uint32_t> row(p.shape[1]);
    for (int64_t r = 0; r < p.rows; ++r) {
      randomCodeRow(s, p.cols, rng, row.data(), (int64_t)row.size());
      EWGPU_TRY(w.write(row.data(), row.size() * 4));
    }
  } else {
    // Scales: a N(0, 0.02) weight has max|w| over a group of about 2.5 sigma; dense weights: N(0, 0.02)-like.
    int64_t count = p.kind == ParamKind::kQScale ? p.shape[0] * p.shape[1] : n;
    std::vector<float> buf(1 << 16);
    for (int64_t i = 0; i < count; i += (int64_t)buf.size()) {
      size_t m = (size_t)std::min<int64_t>((int64_t)buf.size(), count - i);
      for (size_t k = 0; k < m; ++k)
        buf[k] = p.kind == ParamKind::kQScale ? (0.05f / s.max_int) * (0.75f + 0.5f * rng.uniform())
                                              : 0.0346f * (2.0f * rng.uniform() - 1.0f);
      EWGPU_TRY(writeFloatValues(w, p.dtype, buf.data(), m));
    }
  }
  return w.end();
}

// Real-shape writer: tensor by tensor, never holding a matrix in f32.
Status streamRandomFolder(const ModelConfig& c, uint64_t seed, const std::string& out_dir,
                          const std::string& tokenizer_path) {
  EWGPU_TRY(makeDirs(out_dir));
  ShardWriter w(out_dir);
  Rng rng(seed);
  QuantSpec s = quantSpec(c.quant);
  std::vector<float> v;
  for (const ParamSpec& p : expectedParams(c)) {
    if (p.kind == ParamKind::kVector || p.kind == ParamKind::kConv) {
      fillVector(p, rng, v);
      EWGPU_TRY(w.begin(p.name, p.shape, p.dtype, v.size() * 2));
      EWGPU_TRY(writeFloatValues(w, p.dtype, v.data(), v.size()));
      EWGPU_TRY(w.end());
    } else {
      EWGPU_TRY(streamMatrixParam(w, p, s, rng));
    }
  }
  return finishMlcFolder(out_dir, c, w, tokenizer_path);
}

// Tiny settings of the families beyond llama / qwen, chosen so every path of the family runs at test sizes:
// windows shorter than the tests' prompts, LongRoPE / YaRN switching inside them, soft-caps that bite.
// Returns false for the llama / qwen families (their config is complete as it is).
bool familyTinyConfig(const TinyModelSpec& spec, ModelConfig& c) {
  const bool tiny = spec.shape.empty();
  switch (spec.arch) {
    case Arch::kGemma:
    case Arch::kGemma2:
    case Arch::kGemma3:
      c.rope_theta = 10000.0;
      if (spec.arch == Arch::kGemma) return true;
      c.layer_window = tiny ? 24 : (spec.arch == Arch::kGemma2 ? 4096 : 512);
      c.attn_scale = 1.0 / std::sqrt(tiny ? 24.0 : (double)c.head_dim);
      if (spec.arch == Arch::kGemma2) {
        c.attn_softcap = tiny ? 2.0f : 50.0f;  // tiny: scores of a few units, so the cap matters
        c.final_softcap = tiny ? 0.5f : 30.0f;
      } else {
        c.window_pattern = tiny ? 2 : 6;
        c.rope_theta = 1e6;
        c.rope_local_theta = 10000.0;
      }
      return true;
    case Arch::kPhi3:
      c.rope_theta = 10000.0;
      c.partial_rotary_factor = tiny ? 0.75f : 1.0f;
      c.tie_embeddings = false;
      if (tiny) {  // LongRoPE switching to the long factors from position 32
        RopeScaling r;
        r.rope_type = "longrope";
        for (int i = 0; i < c.rotaryDim() / 2; ++i) {
          r.short_factor.push_back(1.0f + 0.25f * i);
          r.long_factor.push_back(2.0f + 0.5f * i);
        }
        r.original_max_position_embeddings = 32;
        r.max_position_embeddings = 256;
        c.rope_scaling = r;
      }
      return true;
    case Arch::kOlmo2:
      c.rope_theta = 500000.0;
      c.tie_embeddings = false;
      return true;
    case Arch::kStableLm:
      c.rope_theta = 10000.0;
      c.partial_rotary_factor = 0.25f;
      c.qkv_bias = true;
      c.rms_eps = 1e-5f;
      c.tie_embeddings = false;
      return true;
    case Arch::kGptNeox:
      c.rope_theta = 10000.0;
      c.partial_rotary_factor = 0.25f;
      c.parallel_residual = true;
      c.mlp = MlpKind::kGelu;
      c.rms_eps = 1e-5f;
      c.tie_embeddings = false;
      return true;
    case Arch::kPhi:
      c.rope_theta = 10000.0;
      c.partial_rotary_factor = 0.5f;
      c.rms_eps = 1e-5f;
      c.tie_embeddings = false;
      return true;
    case Arch::kGemma4: {
      // Tiny: 5 layers s s f s f whose last 2 share the KV of layers 1 (sliding) and 2 (full) with double-wide
      // MLPs, full layers of twice the head dim with proportional RoPE, a window shorter than the tests' prompts.
      // A real shape (n_layers from the spec) keeps E2B's 4:1 pattern and sizes.
      if (tiny && spec.n_layers <= 0) c.n_layers = 5;
      const int L = c.n_layers;
      c.layer_full.assign(L, false);
      for (int i = 0; i < L; ++i) c.layer_full[i] = tiny ? ((i + 1) % 3 == 0 || i == L - 1) : (i + 1) % 5 == 0;
      c.layer_full[L - 1] = true;  // transformers forces the last layer to full attention
      c.global_head_dim = 2 * c.head_dim;
      c.global_kv_heads = c.n_kv_heads;
      c.kv_shared_layers = tiny ? (L >= 5 ? 2 : 0) : L * 4 / 7;  // E2B: 20 of 35
      c.double_wide_mlp = c.kv_shared_layers > 0;
      c.ple_dim = tiny ? 32 : 256;  // whole q4 groups
      c.ple_vocab = c.vocab;
      c.layer_window = tiny ? 24 : 512;
      c.final_softcap = tiny ? 1.5f : 30.0f;
      c.rope_theta = 10000.0;
      c.rope_global_theta = 1e6;
      c.rope_global_partial = 0.25f;
      return true;
    }
    case Arch::kMinistral3:
      c.rope_theta = 1e6;
      c.tie_embeddings = tiny ? false : c.tie_embeddings;
      if (tiny) {  // YaRN at factor 4 over 32 original positions
        RopeScaling r;
        r.rope_type = "yarn";
        r.factor = 4.0f;
        r.original_max_position_embeddings = 32;
        r.mscale = 1.0f;
        r.mscale_all_dim = 1.0f;
        r.llama4_beta = 0.1f;  // the query scale steps up at positions 32, 64, ...
        c.rope_scaling = r;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string> shapePresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

Status applyShapePreset(TinyModelSpec& spec, std::string_view shape) {
  for (const Preset& p : kPresets) {
    if (p.name != shape) continue;
    spec.shape = std::string(shape);
    spec.arch = p.arch;
    spec.hidden = p.hidden;
    spec.intermediate = p.intermediate;
    spec.n_layers = p.layers;
    spec.n_heads = p.heads;
    spec.n_kv_heads = p.kv_heads;
    spec.head_dim = p.head_dim;
    spec.vocab = p.vocab;
    spec.tie_embeddings = p.tie;
    spec.lin_k_heads = spec.lin_v_heads = 16;
    spec.lin_k_dim = spec.lin_v_dim = 128;
    spec.lin_conv_kernel = 4;
    spec.full_attention_interval = 4;
    return {};
  }
  return makeError(ErrorCode::kBadRequest, "unknown shape preset " + std::string(shape),
                   {{"shape", std::string(shape)}, {"known", shapePresetNames()}});
}

ModelConfig tinyModelConfig(const TinyModelSpec& spec, int tokenizer_vocab) {
  ModelConfig c;
  c.arch = spec.arch;
  c.model_type = std::string(archName(spec.arch));
  c.quant = spec.quant;
  bool q35 = spec.arch == Arch::kQwen3_5;
  c.hidden = spec.hidden;
  c.intermediate = spec.intermediate;
  c.n_layers = spec.n_layers > 0 ? spec.n_layers : (q35 ? 4 : 2);
  c.n_heads = spec.n_heads;
  c.n_kv_heads = spec.n_kv_heads;
  c.head_dim = spec.head_dim > 0 ? spec.head_dim : (q35 ? 32 : 16);
  int rounded = (tokenizer_vocab + 63) / 64 * 64;
  c.vocab = spec.vocab > 0 ? spec.vocab : (spec.vocab_from_tokenizer ? tokenizer_vocab : rounded);
  c.active_vocab = std::min(c.vocab, tokenizer_vocab);
  bool llamaLike = spec.arch == Arch::kLlama || spec.arch == Arch::kMistral;
  c.rms_eps = llamaLike ? 1e-5f : 1e-6f;
  c.rope_theta = spec.arch == Arch::kLlama ? 500000.0 : (q35 ? 1e7 : 1e6);
  if (spec.arch == Arch::kLlama) c.rope_scaling = RopeScaling{"llama3", 32.0f, 1.0f, 4.0f, 8192};
  c.tie_embeddings = spec.arch != Arch::kMistral && spec.tie_embeddings;
  c.qkv_bias = spec.arch == Arch::kQwen2;
  c.qk_norm = spec.arch == Arch::kQwen3 || q35;
  if (q35) {
    c.lin_k_heads = spec.lin_k_heads;
    c.lin_v_heads = spec.lin_v_heads;
    c.lin_k_dim = spec.lin_k_dim;
    c.lin_v_dim = spec.lin_v_dim;
    c.lin_conv_kernel = spec.lin_conv_kernel;
    c.full_attention_interval = spec.full_attention_interval;
    c.partial_rotary_factor = 0.25f;
  }
  if (spec.arch == Arch::kBert) {  // MLC BertConfig dims: MHA, biases everywhere, 512 positions, 2 token types
    c.n_kv_heads = c.n_heads;
    c.head_dim = c.hidden / c.n_heads;
    c.type_vocab = 2;
    c.layer_norm_eps = 1e-12f;
    c.hidden_act = "gelu";
    c.context_window = c.prefill_chunk = 512;
    if (!spec.conv_template.empty()) c.conv_template = convTemplatePreset(spec.conv_template);
    return c;
  }
  c.context_window = spec.shape.empty() ? 2048 : 4096;
  c.prefill_chunk = spec.shape.empty() ? 512 : 2048;
  c.sliding_window = -1;
  if (!spec.conv_template.empty()) c.conv_template = convTemplatePreset(spec.conv_template);
  if (!familyTinyConfig(spec, c)) return c;
  // The families beyond llama / qwen: their layer shape comes from the parser (model_config.cpp), so the writer's
  // config and a reader's agree by construction.
  nlohmann::json j = mlcChatConfigJson(c);
  auto parsed = parseModelConfig(j, "mlc-chat-config.json");
  return parsed.ok() ? std::move(parsed).value() : c;
}

WeightMap randomTinyWeights(const ModelConfig& c, uint64_t seed) {
  WeightMap m;
  Rng rng(seed);
  for (const ParamSpec& p : expectedParams(c)) {
    if (p.kind == ParamKind::kQScale) continue;
    if (p.kind == ParamKind::kQWeight || p.kind == ParamKind::kWeight) {
      std::vector<float>& w = m[p.module + ".weight"];
      w.resize(p.rows * p.cols);
      for (float& x : w) x = 0.02f * rng.normal();
    } else {
      fillVector(p, rng, m[p.name]);
    }
  }
  return m;
}

Status writeTinyModel(const TinyModelSpec& spec, const std::string& out_dir) {
  auto tok = readTokenizerFacts(spec.tokenizer_path);
  if (!tok.ok()) return std::move(tok).error();
  ModelConfig c = tinyModelConfig(spec, tok->vocab);
  if (spec.shape.empty())
    return writeMlcFolder(out_dir, c, randomTinyWeights(c, spec.seed), c.quant, spec.tokenizer_path);
  c = finalizeWriterConfig(std::move(c), *tok);
  return streamRandomFolder(c, spec.seed, out_dir, spec.tokenizer_path);
}

}  // namespace ewgpu
