// mlc-chat-config.json parsing (mlc-format.md §1.2-1.3). Field lookup: model_config first, then the top level
// (vocab_size, context_window_size, prefill_chunk_size and sliding_window_size live in both in real files).
#include "model/model_config.h"

#include <cmath>
#include <algorithm>
#include <fstream>
#include <sstream>

namespace ewgpu {

namespace {

constexpr std::pair<Arch, std::string_view> kArchNames[] = {
    {Arch::kLlama, "llama"}, {Arch::kMistral, "mistral"}, {Arch::kQwen2, "qwen2"},
    {Arch::kQwen3, "qwen3"}, {Arch::kQwen3_5, "qwen3_5"}, {Arch::kGemma, "gemma"}, {Arch::kGemma2, "gemma2"},
    {Arch::kGemma3, "gemma3_text"}, {Arch::kPhi3, "phi3"}, {Arch::kOlmo2, "olmo2"}, {Arch::kStableLm, "stablelm"},
    {Arch::kGptNeox, "gpt_neox"}, {Arch::kPhi, "phi-msft"}, {Arch::kMinistral3, "ministral3"},
    {Arch::kBert, "bert"}, {Arch::kGemma4, "gemma4"},
};
constexpr std::pair<Quant, std::string_view> kQuantNames[] = {
    {Quant::kQ4F16_1, "q4f16_1"}, {Quant::kQ4F32_1, "q4f32_1"}, {Quant::kQ0F16, "q0f16"},
    {Quant::kQ0F32, "q0f32"},     {Quant::kQ3F16_1, "q3f16_1"},
};

Error fieldError(const std::string& file, const std::string& field, const std::string& problem,
                 const std::string& what) {
  return makeError(ErrorCode::kInvalidModelFolder, file + ": field '" + field + "' " + what,
                   {{"file", file}, {"field", field}, {"problem", problem}});
}

// UNSUPPORTED naming the model_type: a valid folder of an architecture this engine has no forward pass for.
Error unsupportedArchError(const std::string& file, const std::string& type) {
  std::string runnable;
  for (auto& [k, n] : kArchNames)
    if (archGpuRunnable(k)) runnable += (runnable.empty() ? "" : ", ") + std::string(n);
  return makeError(ErrorCode::kUnsupported,
                   file + ": model_type '" + type + "' is not an architecture this engine runs (it runs " + runnable + ")",
                   {{"file", file}, {"field", "model_type"}, {"problem", "unsupported"}, {"model_type", type}});
}

const nlohmann::json kNoObject;  // FieldReader keeps references: a named null, not a temporary

// Typed lookups over model_config (then the top level) with the errors the loader reports. A field present in
// both places is type-checked in both (the first one present is used), so a bad value never hides behind a good
// one; errors name the field where it sits ("model_config.hidden_size" or "context_window_size").
class FieldReader {
 public:
  FieldReader(const nlohmann::json& mc, const nlohmann::json& top, const std::string& file,
              std::string top_prefix = "")
      : mc_(mc), top_(top), file_(file), top_prefix_(std::move(top_prefix)) {}

  struct Found {
    const nlohmann::json* value;
    std::string field;  // as named in errors
  };

  // Every non-null occurrence: model_config's first, then the top level's.
  std::vector<Found> all(const char* name) const {
    std::vector<Found> out;
    if (mc_.is_object())
      if (auto it = mc_.find(name); it != mc_.end() && !it->is_null()) out.push_back({&*it, std::string("model_config.") + name});
    if (top_.is_object())
      if (auto it = top_.find(name); it != top_.end() && !it->is_null()) out.push_back({&*it, top_prefix_ + name});
    return out;
  }
  const nlohmann::json* find(const char* name) const {
    auto v = all(name);
    return v.empty() ? nullptr : v.front().value;
  }

  // An integer in [lo, hi] that must be present.
  Result<int> positive(const char* name, int64_t hi = 1ll << 30) const {
    auto v = all(name);
    if (v.empty()) return fieldError(file_, top_prefix_ + name, "missing_field", "is missing");
    return integerIn(v, 1, hi, 0);
  }
  // An integer in [lo, hi] with a default; `def` also replaces 0 when zeroIsDefault (MLC dataclass defaults of 0).
  // `alt` (when not 0) is one more allowed value outside the range (-1 for "disabled").
  Result<int> integer(const char* name, int def, int64_t lo, int64_t hi, bool zeroIsDefault = false,
                      int64_t alt = 0) const {
    auto v = all(name);
    if (v.empty()) return def;
    auto x = integerIn(v, lo, hi, alt, zeroIsDefault);
    if (!x) return x;
    return *x == 0 && zeroIsDefault ? def : *x;
  }
  // A finite number in [lo, hi] (`open_lo`: lo itself excluded).
  Result<double> number(const char* name, std::optional<double> def, double lo, double hi, bool open_lo = false) const {
    auto v = all(name);
    if (v.empty()) {
      if (def) return *def;
      return fieldError(file_, top_prefix_ + name, "missing_field", "is missing");
    }
    for (const Found& f : v) {
      if (!f.value->is_number()) return fieldError(file_, f.field, "wrong_type", "is not a number");
      const double x = f.value->get<double>();
      if (!std::isfinite(x) || x < lo || x > hi || (open_lo && x == lo))
        return fieldError(file_, f.field, "bad_value",
                          "is outside " + std::string(open_lo ? "(" : "[") + num(lo) + ", " + num(hi) + "]");
    }
    return v.front().value->get<double>();
  }
  Result<bool> boolean(const char* name, bool def) const {
    auto v = all(name);
    if (v.empty()) return def;
    for (const Found& f : v)
      if (!f.value->is_boolean()) return fieldError(file_, f.field, "wrong_type", "is not a boolean");
    return v.front().value->get<bool>();
  }

 private:
  static std::string num(double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  }
  Result<int> integerIn(const std::vector<Found>& v, int64_t lo, int64_t hi, int64_t alt,
                        bool zeroIsDefault = false) const {
    for (const Found& f : v) {
      if (!f.value->is_number_integer()) return fieldError(file_, f.field, "wrong_type", "is not an integer");
      const bool negative = f.value->is_number_integer() && !f.value->is_number_unsigned() && f.value->get<int64_t>() < 0;
      const int64_t x = negative ? f.value->get<int64_t>()
                                 : (int64_t)std::min<uint64_t>(f.value->get<uint64_t>(), uint64_t(1) << 62);
      if ((x < lo || x > hi) && !(alt != 0 && x == alt) && !(zeroIsDefault && x == 0))
        return fieldError(file_, f.field, "bad_value",
                          "is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" +
                              (alt ? " (or " + std::to_string(alt) + ")" : ""));
    }
    const nlohmann::json& first = *v.front().value;
    return (int)(first.is_number_unsigned() ? (int64_t)first.get<uint64_t>() : first.get<int64_t>());
  }

  const nlohmann::json& mc_;
  const nlohmann::json& top_;
  const std::string& file_;
  std::string top_prefix_;  // how fields of `top` are named in errors ("rope_scaling.")
};

Result<std::optional<RopeScaling>> parseRopeScaling(const FieldReader& f, const std::string& file) {
  const nlohmann::json* v = f.find("rope_scaling");
  if (!v) v = f.find("rope_parameters");  // ministral3 (transformers 5's name)
  if (!v) return std::optional<RopeScaling>{};
  if (v->is_number() && v->get<double>() == 0) return std::optional<RopeScaling>{};  // MLC's gemma3 writes 0
  if (!v->is_object()) return fieldError(file, "rope_scaling", "wrong_type", "is not an object");
  std::string type = "default";
  for (const char* k : {"type", "rope_type"}) {  // rope_type wins when both are there
    auto it = v->find(k);
    if (it == v->end() || it->is_null()) continue;
    if (!it->is_string()) return fieldError(file, std::string("rope_scaling.") + k, "wrong_type", "is not a string");
    type = it->get<std::string>();
  }
  if (type == "default") return std::optional<RopeScaling>{};
  if (type == "su") type = "longrope";  // phi3's earlier name (MLC renames it the same way)
  if (type != "llama3" && type != "longrope" && type != "yarn")
    return fieldError(file, "rope_scaling", "unsupported", "has unsupported type " + type);
  RopeScaling rs;
  rs.rope_type = type;
  FieldReader scaling(kNoObject, *v, file, "rope_scaling.");
  double x;
  if (type == "longrope") {
    for (auto [name, dst] : {std::pair{"short_factor", &rs.short_factor}, std::pair{"long_factor", &rs.long_factor}}) {
      auto it = v->find(name);
      if (it == v->end() || !it->is_array() || it->empty())
        return fieldError(file, std::string("rope_scaling.") + name, "wrong_type", "is not a non-empty array");
      for (const auto& e : *it) {
        if (!e.is_number() || !(e.get<double>() > 0))
          return fieldError(file, std::string("rope_scaling.") + name, "bad_value", "holds a non-positive factor");
        dst->push_back(e.get<float>());
      }
    }
    if (rs.short_factor.size() != rs.long_factor.size())
      return fieldError(file, "rope_scaling.long_factor", "bad_value", "is not as long as short_factor");
    // MLC copies both lengths into rope_scaling; a HF config keeps them at the top level.
    EWGPU_ASSIGN(rs.original_max_position_embeddings,
                 scaling.integer("original_max_position_embeddings",
                                 f.find("original_max_position_embeddings")
                                     ? f.find("original_max_position_embeddings")->get<int>() : 0, 1, 1 << 30));
    EWGPU_ASSIGN(rs.max_position_embeddings,
                 scaling.integer("max_position_embeddings",
                                 f.find("max_position_embeddings") ? f.find("max_position_embeddings")->get<int>() : 0,
                                 1, 1 << 30));
    if (rs.original_max_position_embeddings <= 0 || rs.max_position_embeddings <= 0)
      return fieldError(file, "rope_scaling.original_max_position_embeddings", "missing_field", "is missing");
    return std::optional<RopeScaling>{rs};
  }
  if (type == "yarn") {
    EWGPU_ASSIGN(x, scaling.number("factor", std::nullopt, 0, 1e6, true));
    rs.factor = (float)x;
    EWGPU_ASSIGN(x, scaling.number("beta_fast", 32.0, 0, 1e6, true));
    rs.beta_fast = (float)x;
    EWGPU_ASSIGN(x, scaling.number("beta_slow", 1.0, 0, 1e6, true));
    rs.beta_slow = (float)x;
    EWGPU_ASSIGN(x, scaling.number("mscale", 1.0, 0, 1e6));
    rs.mscale = (float)x;
    EWGPU_ASSIGN(x, scaling.number("mscale_all_dim", 0.0, 0, 1e6));
    rs.mscale_all_dim = (float)x;
    EWGPU_ASSIGN(rs.original_max_position_embeddings, scaling.positive("original_max_position_embeddings"));
    EWGPU_ASSIGN(x, scaling.number("llama_4_scaling_beta", 0.0, 0, 1e6));
    rs.llama4_beta = (float)x;
    return std::optional<RopeScaling>{rs};
  }
  EWGPU_ASSIGN(x, scaling.number("factor", std::nullopt, 0, 1e6, true));
  rs.factor = (float)x;
  EWGPU_ASSIGN(x, scaling.number("low_freq_factor", std::nullopt, 0, 1e6, true));
  rs.low_freq_factor = (float)x;
  EWGPU_ASSIGN(x, scaling.number("high_freq_factor", std::nullopt, 0, 1e6, true));
  rs.high_freq_factor = (float)x;
  if (rs.high_freq_factor == rs.low_freq_factor)
    return fieldError(file, "rope_scaling.high_freq_factor", "bad_value", "equals low_freq_factor");
  EWGPU_ASSIGN(rs.original_max_position_embeddings, scaling.positive("original_max_position_embeddings"));
  return std::optional<RopeScaling>{rs};
}

// The first of `names` the config has (MLC's configs spell some fields per family: phi-msft's n_embd is everyone
// else's hidden_size), or the first name when none is there (so a missing field is reported under its usual name).
const char* pick(const FieldReader& f, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (f.find(n)) return n;
  return *names.begin();
}

Status parseDims(const FieldReader& f, ModelConfig& c) {
  // Bounds keep every product the engine forms (rows x cols of a matrix, a shard's bytes) inside int64.
  EWGPU_ASSIGN(c.hidden, f.positive(pick(f, {"hidden_size", "n_embd"}), 1 << 20));
  if (c.arch == Arch::kPhi)  // n_inner 0: 4 · n_embd
    EWGPU_ASSIGN(c.intermediate, f.integer(pick(f, {"intermediate_size", "n_inner"}), 4 * c.hidden, 1, 1 << 22, true));
  else
    EWGPU_ASSIGN(c.intermediate, f.positive("intermediate_size", 1 << 22));
  EWGPU_ASSIGN(c.n_layers, f.positive(pick(f, {"num_hidden_layers", "n_layer"}), 1 << 12));
  EWGPU_ASSIGN(c.n_heads, f.positive(pick(f, {"num_attention_heads", "n_head"}), 1 << 12));
  EWGPU_ASSIGN(c.vocab, f.positive("vocab_size", 1 << 24));
  EWGPU_ASSIGN(c.n_kv_heads, f.integer(pick(f, {"num_key_value_heads", "n_head_kv"}), c.n_heads, 1, 1 << 12, true));
  const bool gemma3or4 = c.arch == Arch::kGemma3 || c.arch == Arch::kGemma4;
  int defHeadDim = c.arch == Arch::kQwen3_5 || gemma3or4 ? 256 : c.hidden / c.n_heads;
  EWGPU_ASSIGN(c.head_dim, f.integer("head_dim", defHeadDim, 1, 1 << 14, true));
  double eps;
  const bool layer_norm = usesLayerNorm(c.arch);
  const char* epsName = layer_norm ? pick(f, {"layer_norm_eps", "layer_norm_epsilon"}) : "rms_norm_eps";
  std::optional<double> defEps;
  if (gemma3or4) defEps = 1e-6;
  if (c.arch == Arch::kOlmo2) defEps = 1e-5;
  EWGPU_ASSIGN(eps, f.number(epsName, defEps, 0, 1, true));
  c.rms_eps = (float)eps;
  double defTheta = c.arch == Arch::kQwen3_5 ? 1e7 : c.arch == Arch::kGemma3 ? 1e6 : 10000.0;  // gemma4: sliding
  // qwen* and stablelm spell the RoPE base rope_theta, the others position_embedding_base.
  const char* thetaName = f.find("rope_theta") ? "rope_theta" : "position_embedding_base";
  EWGPU_ASSIGN(c.rope_theta, f.number(thetaName, defTheta, 0, 1e15, true));
  return {};
}

// The activation a config names (hidden_act / hidden_activation), for the families that choose.
Result<MlpKind> geluKind(const FieldReader& f, const std::string& file, MlpKind def) {
  const char* name = pick(f, {"hidden_activation", "hidden_act"});
  const nlohmann::json* v = f.find(name);
  if (!v) return def;
  if (!v->is_string()) return fieldError(file, name, "wrong_type", "is not a string");
  const std::string a = v->get<std::string>();
  if (a == "gelu") return MlpKind::kGelu;
  if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast") return MlpKind::kGeluTanh;
  return fieldError(file, name, "unsupported", "names an unsupported activation " + a);
}

// Gemma 4's RoPE per layer type: rope_parameters {sliding_attention: {rope_type default, rope_theta},
// full_attention: {rope_type proportional|default, rope_theta, partial_rotary_factor, factor}} (transformers 5.17;
// MLC keeps it in text_config.kwargs), else MLC's position_embedding_base / global_position_embedding_base with
// transformers' defaults for the rest (proportional, 0.25).
Status parseGemma4Rope(const FieldReader& f, const std::string& file, ModelConfig& c) {
  double x = 0;
  EWGPU_ASSIGN(c.rope_global_theta, f.number("global_position_embedding_base", 1e6, 0, 1e15, true));
  c.rope_global_partial = 0.25f;
  const nlohmann::json* rp = f.find("rope_parameters");
  if (!rp || !rp->is_object() || !rp->contains("full_attention")) return {};
  for (const char* kind : {"sliding_attention", "full_attention"}) {
    auto it = rp->find(kind);
    if (it == rp->end() || it->is_null()) continue;
    const std::string field = std::string("rope_parameters.") + kind + ".";
    if (!it->is_object()) return fieldError(file, field, "wrong_type", "is not an object");
    FieldReader r(kNoObject, *it, file, field);
    const std::string type = it->value("rope_type", std::string("default"));
    const bool full = std::string_view(kind) == "full_attention";
    if (type != "default" && !(full && type == "proportional"))
      return fieldError(file, field + "rope_type", "unsupported", "is " + type + " (gemma4 runs default / proportional)");
    EWGPU_ASSIGN(x, r.number("rope_theta", full ? c.rope_global_theta : c.rope_theta, 0, 1e15, true));
    (full ? c.rope_global_theta : c.rope_theta) = x;
    if (!full) continue;
    EWGPU_ASSIGN(x, r.number("partial_rotary_factor", 1.0, 0, 1, true));
    c.rope_global_partial = (float)x;
    EWGPU_ASSIGN(x, r.number("factor", 1.0, 0, 1e6, true));
    c.rope_global_factor = (float)x;
  }
  return {};
}

// model_type gemma4 (MLC's Gemma4TextConfig, mlc-llm fa7cf711; transformers 5.17 Gemma4TextConfig): gemma3's
// sandwich layer with per-layer-type head dims, KV sharing, per-layer inputs and a layer scalar.
Status parseGemma4(const FieldReader& f, const std::string& file, ModelConfig& c) {
  double x = 0;
  bool b = false;
  MlpKind act;
  EWGPU_ASSIGN(act, geluKind(f, file, MlpKind::kGeluTanh));
  if (act != MlpKind::kGeluTanh && act != MlpKind::kGelu) return fieldError(file, "hidden_activation", "unsupported", "is not GELU");
  c.mlp = MlpKind::kGeGlu;
  c.tie_embeddings = true;
  c.post_norms = c.qk_norm = true;
  c.attn_scale = 1.0;                                     // q/k are RMS-normed; no 1/sqrt(D)
  c.embed_scale = 1.0f;                                   // stored pre-multiplied by sqrt(hidden) (MLC's loader)
  c.logit_scale = 1.0 / std::sqrt((double)c.hidden);      // so the tied logits are divided back
  EWGPU_ASSIGN(x, f.number("final_logit_softcapping", 0.0, 0, 1e9));
  c.final_softcap = (float)x;
  const char* win = pick(f, {"sliding_window_size", "sliding_window"});
  EWGPU_ASSIGN(c.layer_window, f.integer(win, 0, 1, 1 << 30, true, -1));
  if (c.layer_window <= 0) return fieldError(file, win, "missing_field", "is missing (gemma4's sliding layers need it)");
  for (const char* k : {"attention_k_eq_v", "enable_moe_block"}) {
    EWGPU_ASSIGN(b, f.boolean(k, false));
    if (b) return fieldError(file, k, "unsupported", "is true (gemma4 with shared k=v or MoE blocks is not implemented)");
  }
  EWGPU_ASSIGN(b, f.boolean("attention_bias", false));
  if (b) return fieldError(file, "attention_bias", "unsupported", "must be false for gemma4");
  c.layer_full.assign(c.n_layers, true);  // MLC's default when layer_types is absent
  if (const nlohmann::json* t = f.find("layer_types")) {
    if (!t->is_array() || (int)t->size() != c.n_layers)
      return fieldError(file, "layer_types", "bad_value", "is not an array of num_hidden_layers layer types");
    for (int i = 0; i < c.n_layers; ++i) {
      const nlohmann::json& e = (*t)[i];
      if (e != "full_attention" && e != "sliding_attention")
        return fieldError(file, "layer_types", "bad_value", "holds " + e.dump() + ", not full/sliding_attention");
      c.layer_full[i] = e == "full_attention";
    }
  }
  EWGPU_ASSIGN(c.global_head_dim, f.integer("global_head_dim", c.head_dim, 1, 1 << 14, true));
  EWGPU_ASSIGN(c.global_kv_heads, f.integer("num_global_key_value_heads", c.n_kv_heads, 1, 1 << 12, true));
  EWGPU_ASSIGN(c.kv_shared_layers, f.integer("num_kv_shared_layers", 0, 0, c.n_layers - 1));
  EWGPU_ASSIGN(c.double_wide_mlp, f.boolean("use_double_wide_mlp", false));
  EWGPU_ASSIGN(c.ple_dim, f.integer("hidden_size_per_layer_input", 0, 0, 1 << 14));
  EWGPU_ASSIGN(c.ple_vocab, f.integer("vocab_size_per_layer_input", c.vocab, 1, 1 << 24, true));
  for (int i = c.n_layers - c.kv_shared_layers; i < c.n_layers; ++i) {
    bool found = false;  // a shared layer needs an earlier non-shared layer of its kind
    for (int j = 0; j < c.n_layers - c.kv_shared_layers; ++j) found = found || c.layer_full[j] == c.layer_full[i];
    if (!found)
      return fieldError(file, "num_kv_shared_layers", "bad_value",
                        "leaves layer " + std::to_string(i) + " no earlier layer of its type to share the KV of");
  }
  if (c.n_heads % c.global_kv_heads != 0)
    return fieldError(file, "num_global_key_value_heads", "bad_value", "does not divide num_attention_heads");
  return parseGemma4Rope(f, file, c);
}

// Layer shape of the families beyond llama / qwen (docs/architectures.md has the table).
Status parseFamily(const FieldReader& f, const std::string& file, ModelConfig& c) {
  double x = 0;
  switch (c.arch) {
    case Arch::kGemma:
    case Arch::kGemma2:
    case Arch::kGemma3: {
      c.tie_embeddings = true;  // gemma's lm_head is always its embedding
      MlpKind act;
      EWGPU_ASSIGN(act, geluKind(f, file, MlpKind::kGeluTanh));
      if (act != MlpKind::kGeluTanh && act != MlpKind::kGelu) return fieldError(file, "hidden_activation", "unsupported", "is not GELU");
      c.mlp = MlpKind::kGeGlu;  // MLC and transformers both run gemma's gate with the tanh GELU
      c.embed_scale = (float)std::sqrt((double)c.hidden);
      if (c.arch == Arch::kGemma) break;
      c.post_norms = true;
      EWGPU_ASSIGN(x, f.number("query_pre_attn_scalar", 256.0, 0, 1e9, true));
      c.attn_scale = 1.0 / std::sqrt(x);
      const char* win = pick(f, {"sliding_window", "sliding_window_size"});
      EWGPU_ASSIGN(c.layer_window, f.integer(win, 0, 1, 1 << 30, true, -1));
      if (c.layer_window < 0) c.layer_window = 0;
      if (c.arch == Arch::kGemma2) {
        c.window_pattern = 2;
        EWGPU_ASSIGN(x, f.number("attn_logit_softcapping", 0.0, 0, 1e9));
        c.attn_softcap = (float)x;
        EWGPU_ASSIGN(x, f.number("final_logit_softcapping", 0.0, 0, 1e9));
        c.final_softcap = (float)x;
      } else {
        c.qk_norm = true;
        EWGPU_ASSIGN(c.window_pattern, f.integer("sliding_window_pattern", 6, 1, 1 << 12));
        EWGPU_ASSIGN(c.rope_local_theta, f.number("rope_local_base_freq", 10000.0, 0, 1e15, true));
      }
      break;
    }
    case Arch::kGemma4:
      EWGPU_TRY(parseGemma4(f, file, c));
      break;
    case Arch::kPhi3:
    case Arch::kStableLm:
      EWGPU_ASSIGN(x, f.number("partial_rotary_factor", 1.0, 0, 1, true));
      c.partial_rotary_factor = (float)x;
      if (c.arch == Arch::kStableLm) {
        c.norm = NormKind::kLayer;
        EWGPU_ASSIGN(c.qkv_bias, f.boolean("use_qkv_bias", false));
      }
      break;
    case Arch::kOlmo2:
      c.pre_norms = false;
      c.post_norms = true;
      c.qk_norm_full = true;
      break;
    case Arch::kGptNeox:
      c.norm = NormKind::kLayer;
      c.qkv_bias = c.o_bias = c.mlp_bias = true;
      EWGPU_ASSIGN(c.mlp, geluKind(f, file, MlpKind::kGelu));
      if (c.mlp == MlpKind::kSwiGlu) c.mlp = MlpKind::kGelu;
      EWGPU_ASSIGN(c.parallel_residual, f.boolean("use_parallel_residual", true));
      EWGPU_ASSIGN(x, f.number("rotary_pct", 0.25, 0, 1, true));
      c.partial_rotary_factor = (float)x;
      break;
    case Arch::kPhi: {
      c.norm = NormKind::kLayer;
      c.qkv_bias = c.o_bias = c.mlp_bias = c.lm_head_bias = true;
      c.mlp = MlpKind::kGeluTanh;
      c.parallel_residual = c.shared_norm = true;
      c.tie_embeddings = false;
      int rd = 0;
      EWGPU_ASSIGN(rd, f.integer("rotary_dim", 0, 0, 1 << 14));
      if (rd > 0) {
        c.partial_rotary_factor = (float)rd / (float)c.head_dim;
      } else {
        EWGPU_ASSIGN(x, f.number("partial_rotary_factor", 0.5, 0, 1, true));
        c.partial_rotary_factor = (float)x;
      }
      break;
    }
    default:
      break;
  }
  return {};
}

Status parseArchFlags(const FieldReader& f, const std::string& file, ModelConfig& c) {
  bool attnBias = false;
  EWGPU_ASSIGN(attnBias, f.boolean("attention_bias", false));
  EWGPU_ASSIGN(c.tie_embeddings, f.boolean("tie_word_embeddings", false));
  if (c.arch == Arch::kMistral) c.tie_embeddings = false;  // no tie flag: lm_head always present
  c.qkv_bias = c.arch == Arch::kQwen2 || ((c.arch == Arch::kQwen3 || c.arch == Arch::kQwen3_5) && attnBias);
  c.o_bias = (c.arch == Arch::kQwen3 || c.arch == Arch::kQwen3_5) && attnBias;
  c.qk_norm = c.arch == Arch::kQwen3 || c.arch == Arch::kQwen3_5;
  EWGPU_ASSIGN(c.rope_scaling, parseRopeScaling(f, file));
  EWGPU_TRY(parseFamily(f, file, c));
  if (c.arch != Arch::kQwen3_5) return {};
  EWGPU_ASSIGN(c.lin_k_heads, f.positive("linear_num_key_heads", 1 << 12));
  EWGPU_ASSIGN(c.lin_v_heads, f.positive("linear_num_value_heads", 1 << 12));
  EWGPU_ASSIGN(c.lin_k_dim, f.positive("linear_key_head_dim", 1 << 14));
  EWGPU_ASSIGN(c.lin_v_dim, f.positive("linear_value_head_dim", 1 << 14));
  EWGPU_ASSIGN(c.lin_conv_kernel, f.integer("linear_conv_kernel_dim", 4, 1, 64));
  EWGPU_ASSIGN(c.full_attention_interval, f.integer("full_attention_interval", 4, 1, 1 << 12));
  double prf;
  EWGPU_ASSIGN(prf, f.number("partial_rotary_factor", 0.25, 0, 1, true));
  c.partial_rotary_factor = (float)prf;
  if (c.lin_v_heads % c.lin_k_heads != 0)
    return fieldError(file, "linear_num_value_heads", "bad_value", "is not a multiple of linear_num_key_heads");
  return {};
}

Status checkConsistency(const std::string& file, const ModelConfig& c) {
  if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    return fieldError(file, "num_key_value_heads", "bad_value", "does not divide num_attention_heads");
  if (c.head_dim <= 0) return fieldError(file, "head_dim", "bad_value", "must be positive");
  if (!(c.rms_eps > 0)) return fieldError(file, "rms_norm_eps", "bad_value", "must be positive");
  if (!(c.rope_theta > 0)) return fieldError(file, "rope_theta", "bad_value", "must be positive");
  if (c.partial_rotary_factor <= 0 || c.partial_rotary_factor > 1 || c.rotaryDim() % 2 != 0)
    return fieldError(file, "partial_rotary_factor", "bad_value", "gives an odd or empty rotary dim");
  if (c.active_vocab <= 0 || c.active_vocab > c.vocab)
    return fieldError(file, "active_vocab_size", "bad_value", "is not in (0, vocab_size]");
  return {};
}

// The conv_template object's token id lists: integers inside the vocabulary (the rest of the object is checked
// by ConvTemplate::fromJson in the tokenizer layer).
Status checkTemplateIdFields(const nlohmann::json& t, const std::string& file, int vocab) {
  if (!t.is_object()) return {};
  for (const char* k : {"system_prefix_token_ids", "stop_token_ids"}) {
    auto it = t.find(k);
    if (it == t.end() || it->is_null()) continue;
    const std::string field = std::string("conv_template.") + k;
    if (!it->is_array()) return fieldError(file, field, "wrong_type", "is not an array");
    for (const auto& id : *it) {
      if (!id.is_number_integer()) return fieldError(file, field, "wrong_type", "holds a non-integer");
      const bool neg = !id.is_number_unsigned() && id.get<int64_t>() < 0;
      if (neg || id.get<uint64_t>() >= (uint64_t)vocab) {
        Error e = fieldError(file, field, "outside_vocabulary",
                             "holds " + id.dump() + ", outside the vocabulary of " + std::to_string(vocab) + " tokens");
        e.detail["id"] = id;
        e.detail["vocab_size"] = vocab;
        return e;
      }
    }
  }
  return {};
}

Status parseRuntime(const FieldReader& f, const nlohmann::json& j, const std::string& file, ModelConfig& c) {
  constexpr int64_t kMaxPositions = 1 << 30;
  EWGPU_ASSIGN(c.context_window, f.integer("context_window_size", -1, 1, kMaxPositions, false, -1));
  EWGPU_ASSIGN(c.prefill_chunk, f.integer("prefill_chunk_size", 0, 0, kMaxPositions));
  EWGPU_ASSIGN(c.sliding_window, f.integer("sliding_window_size", -1, 1, kMaxPositions, false, -1));
  if (c.context_window <= 0 && c.sliding_window <= 0)
    return fieldError(file, "context_window_size", "bad_value", "is -1 and there is no sliding_window_size");
  EWGPU_ASSIGN(c.active_vocab, f.integer("active_vocab_size", c.vocab, 1, 1 << 24, true));
  FieldReader top(kNoObject, j, file);  // sampling fields are top-level only; ranges as SamplingParams
  double v;
  EWGPU_ASSIGN(v, top.number("temperature", 1.0, 0, 100));
  c.temperature = (float)v;
  EWGPU_ASSIGN(v, top.number("top_p", 1.0, 0, 1, true));
  c.top_p = (float)v;
  EWGPU_ASSIGN(v, top.number("presence_penalty", 0.0, -2, 2));
  c.presence_penalty = (float)v;
  EWGPU_ASSIGN(v, top.number("frequency_penalty", 0.0, -2, 2));
  c.frequency_penalty = (float)v;
  EWGPU_ASSIGN(v, top.number("repetition_penalty", 1.0, 0, 100, true));
  c.repetition_penalty = (float)v;
  if (auto it = j.find("conv_template"); it != j.end()) c.conv_template = *it;
  if (!c.conv_template.is_null() && !c.conv_template.is_object() && !c.conv_template.is_string())
    return fieldError(file, "conv_template", "wrong_type", "is neither an object nor a name");
  EWGPU_TRY(checkTemplateIdFields(c.conv_template, file, c.vocab));
  c.tokenizer_info = nlohmann::json::object();
  if (auto it = j.find("tokenizer_info"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return fieldError(file, "tokenizer_info", "wrong_type", "is not an object");
    c.tokenizer_info = *it;
  }
  if (auto it = j.find("tokenizer_files"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return fieldError(file, "tokenizer_files", "wrong_type", "is not an array");
    for (const auto& s : *it) {
      if (!s.is_string()) return fieldError(file, "tokenizer_files", "wrong_type", "holds a non-string");
      c.tokenizer_files.push_back(s.get<std::string>());
    }
  }
  return {};
}

// model_type "bert" (MLC's BertConfig, python/mlc_llm/model/bert/bert_model.py): its own fields instead of
// parseDims/parseArchFlags. context_window_size is the number of position embeddings (MLC falls back to HF
// max_position_embeddings when converting; both are read here). Only q0f32 (the WebLLM catalogue's format) and
// hidden_act "gelu" are accepted.
Status parseBertConfig(const FieldReader& f, const nlohmann::json& j, const std::string& file, ModelConfig& c) {
  if (c.quant != Quant::kQ0F32) return fieldError(file, "quantization", "unsupported", "is not q0f32 (bert runs q0f32 only)");
  EWGPU_ASSIGN(c.hidden, f.positive("hidden_size", 1 << 20));
  EWGPU_ASSIGN(c.intermediate, f.positive("intermediate_size", 1 << 22));
  EWGPU_ASSIGN(c.n_layers, f.positive("num_hidden_layers", 1 << 12));
  EWGPU_ASSIGN(c.n_heads, f.positive("num_attention_heads", 1 << 12));
  EWGPU_ASSIGN(c.vocab, f.positive("vocab_size", 1 << 24));
  c.n_kv_heads = c.n_heads;
  EWGPU_ASSIGN(c.head_dim, f.integer("head_dim", c.hidden / c.n_heads, 1, 1 << 14, true));
  if (c.head_dim * c.n_heads != c.hidden)
    return fieldError(file, "head_dim", "bad_value", "times num_attention_heads is not hidden_size");
  EWGPU_ASSIGN(c.type_vocab, f.integer("type_vocab_size", 2, 1, 1 << 12, true));
  double eps;
  EWGPU_ASSIGN(eps, f.number("layer_norm_eps", std::nullopt, 0, 1, true));
  c.layer_norm_eps = (float)eps;
  const nlohmann::json* act = f.find("hidden_act");
  if (!act) return fieldError(file, "hidden_act", "missing_field", "is missing");
  if (!act->is_string()) return fieldError(file, "hidden_act", "wrong_type", "is not a string");
  c.hidden_act = act->get<std::string>();
  if (c.hidden_act != "gelu") return fieldError(file, "hidden_act", "unsupported", "is not gelu");
  const char* ctxName = f.find("context_window_size") ? "context_window_size" : "max_position_embeddings";
  EWGPU_ASSIGN(c.context_window, f.positive(ctxName, 1 << 20));
  EWGPU_ASSIGN(c.prefill_chunk, f.integer("prefill_chunk_size", c.context_window, 0, 1 << 20, true));
  c.active_vocab = c.vocab;
  c.tokenizer_info = nlohmann::json::object();
  if (auto it = j.find("conv_template"); it != j.end()) c.conv_template = *it;
  if (auto it = j.find("embedding_metadata"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return fieldError(file, "embedding_metadata", "wrong_type", "is not an object");
    FieldReader meta(kNoObject, *it, file, "embedding_metadata.");
    EWGPU_ASSIGN(c.embedding_normalize, meta.boolean("normalize", true));
    if (auto p = it->find("pooling_strategy"); p != it->end() && !p->is_null() && *p != "cls")
      return fieldError(file, "embedding_metadata.pooling_strategy", "unsupported", "is not \"cls\"");
  }
  if (auto it = j.find("tokenizer_files"); it != j.end() && it->is_array())
    for (const auto& s : *it)
      if (s.is_string()) c.tokenizer_files.push_back(s.get<std::string>());
  return {};
}

}  // namespace

std::string_view archName(Arch a) {
  for (auto& [k, n] : kArchNames)
    if (k == a) return n;
  return "?";
}

std::optional<Arch> archFromName(std::string_view s) {
  if (s == "qwen3_5_text") return Arch::kQwen3_5;
  if (s == "phi") return Arch::kPhi;          // MLC registers phi-msft under both names
  if (s == "gemma3") return Arch::kGemma3;    // the text model of a gemma3 folder
  if (s == "gemma4_text") return Arch::kGemma4;
  for (auto& [k, n] : kArchNames)
    if (n == s) return k;
  return std::nullopt;
}

bool archGpuRunnable(Arch) { return true; }

bool archRunnable(std::string_view model_type) {
  const std::optional<Arch> a = archFromName(model_type);
  return a && archGpuRunnable(*a);
}

std::vector<std::string> runnableArchNames() {
  std::vector<std::string> v;
  for (auto& [k, n] : kArchNames)
    if (archGpuRunnable(k)) v.emplace_back(n);
  return v;
}

std::vector<std::string> knownArchNames() {
  std::vector<std::string> v;
  for (auto& [k, n] : kArchNames) v.emplace_back(n);
  return v;
}

std::string_view quantName(Quant q) {
  for (auto& [k, n] : kQuantNames)
    if (k == q) return n;
  return "?";
}

std::optional<Quant> quantFromName(std::string_view s) {
  for (auto& [k, n] : kQuantNames)
    if (n == s) return k;
  return std::nullopt;
}

QuantSpec quantSpec(Quant q) {
  switch (q) {
    case Quant::kQ4F16_1:
      return {true, 4, 32, 8, 4, 7, false, false};
    case Quant::kQ4F32_1:
      return {true, 4, 32, 8, 4, 7, true, true};
    case Quant::kQ3F16_1:
      return {true, 3, 40, 10, 4, 3, false, false};
    case Quant::kQ0F16:
      return {false, 0, 0, 0, 0, 0, false, false};
    case Quant::kQ0F32:
      return {false, 0, 0, 0, 0, 0, true, true};
  }
  return {};
}

int ModelConfig::windowOf(int layer) const {
  if (isGemma4()) return layer < (int)layer_full.size() && !layer_full[layer] ? layer_window : 0;
  if (layer_window > 0 && window_pattern > 0) {
    // gemma2: layers 0, 2, 4, ... slide; gemma3: every layer but each pattern-th (5, 11, ... for 6).
    const bool sliding = arch == Arch::kGemma2 ? layer % 2 == 0 : (layer + 1) % window_pattern != 0;
    return sliding ? layer_window : 0;
  }
  return sliding_window > 0 ? sliding_window : 0;
}

double ModelConfig::ropeThetaOf(int layer) const {
  if (isGemma4()) return windowOf(layer) > 0 ? rope_theta : rope_global_theta;
  return rope_local_theta > 0 && windowOf(layer) > 0 && layer_window > 0 ? rope_local_theta : rope_theta;
}

bool ModelConfig::isFullAttention(int layer) const {
  if (arch != Arch::kQwen3_5 || full_attention_interval <= 0) return true;
  return (layer + 1) % full_attention_interval == 0;
}

int ModelConfig::rotaryDim() const { return (int)(head_dim * partial_rotary_factor); }

int ModelConfig::headDimOf(int layer) const {
  return isGemma4() && windowOf(layer) == 0 ? global_head_dim : head_dim;
}

int ModelConfig::kvHeadsOf(int layer) const {
  return isGemma4() && windowOf(layer) == 0 ? global_kv_heads : n_kv_heads;
}

int ModelConfig::intermediateOf(int layer) const {
  return double_wide_mlp && isKvShared(layer) ? 2 * intermediate : intermediate;
}

int ModelConfig::kvSourceOf(int layer) const {
  const int first_shared = n_layers - kv_shared_layers;
  if (!isGemma4() || kv_shared_layers <= 0 || layer < first_shared) return layer;
  for (int j = first_shared - 1; j >= 0; --j)
    if (layer_full[j] == layer_full[layer]) return j;
  return layer;  // parseGemma4 rejects a config where no such layer exists
}

static Result<ModelConfig> parseModelConfigUnchecked(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return fieldError(path, "", "wrong_type", "document is not a JSON object");
  ModelConfig c;
  c.raw = j;
  auto mt = j.find("model_type");
  if (mt == j.end() || mt->is_null()) return fieldError(path, "model_type", "missing_field", "is missing");
  if (!mt->is_string()) return fieldError(path, "model_type", "wrong_type", "is not a string");
  c.model_type = mt->get<std::string>();
  auto arch = archFromName(c.model_type);
  if (!arch) return unsupportedArchError(path, c.model_type);
  c.arch = *arch;
  auto qn = j.find("quantization");
  if (qn == j.end() || qn->is_null()) return fieldError(path, "quantization", "missing_field", "is missing");
  if (!qn->is_string()) return fieldError(path, "quantization", "wrong_type", "is not a string");
  auto quant = quantFromName(qn->get<std::string>());
  if (!quant) return fieldError(path, "quantization", "unsupported", "names an unsupported quantization");
  c.quant = *quant;
  auto mc = j.find("model_config");
  if (mc == j.end() || mc->is_null()) return fieldError(path, "model_config", "missing_field", "is missing");
  if (!mc->is_object()) return fieldError(path, "model_config", "wrong_type", "is not an object");
  // gemma3's model_config nests the text model's fields in text_config (and their leftovers in its kwargs); the
  // outer fields (vocab_size, context_window_size, ...) win over the nested ones.
  nlohmann::json merged;
  const nlohmann::json* fields = &*mc;
  if (auto tc = mc->find("text_config"); tc != mc->end() && tc->is_object()) {
    merged = nlohmann::json::object();
    if (auto kw = tc->find("kwargs"); kw != tc->end() && kw->is_object()) merged.update(*kw);
    for (auto& [k, v] : tc->items())
      if (k != "kwargs") merged[k] = v;
    for (auto& [k, v] : mc->items())
      if (k != "text_config" && !(v.is_number() && v.get<double>() <= 0 && merged.contains(k))) merged[k] = v;
    fields = &merged;
  }
  FieldReader f(*fields, j, path);
  if (c.arch == Arch::kBert) {
    EWGPU_TRY(parseBertConfig(f, j, path, c));
    return c;
  }
  EWGPU_TRY(parseDims(f, c));
  EWGPU_TRY(parseArchFlags(f, path, c));
  EWGPU_TRY(parseRuntime(f, j, path, c));
  EWGPU_TRY(checkConsistency(path, c));
  return c;
}

Result<ModelConfig> parseModelConfig(const nlohmann::json& j, const std::string& path) {
  try {  // json accessors throw on unexpected types inside nested objects: report, never throw
    return parseModelConfigUnchecked(j, path);
  } catch (const nlohmann::json::exception& e) {
    return fieldError(path, "", "wrong_type", std::string("has a value of unexpected type: ") + e.what());
  }
}

Result<ModelConfig> loadModelConfig(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return makeError(ErrorCode::kInvalidModelFolder, "missing " + path, {{"file", name}, {"problem", "missing"}});
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded())
    return makeError(ErrorCode::kInvalidModelFolder, path + " is not valid JSON",
                     {{"file", name}, {"problem", "bad_json"}});
  return parseModelConfig(j, name);
}

}  // namespace ewgpu
