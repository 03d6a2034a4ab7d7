// mlc-chat-config.json parsing (mlc-format.md §1.2-1.3). Field lookup: model_config first, then the top level
// (vocab_size, context_window_size, prefill_chunk_size and sliding_window_size live in both in real files).
#include "model/model_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace ewgpu {

namespace {

constexpr std::pair<Arch, std::string_view> kArchNames[] = {
    {Arch::kLlama, "llama"}, {Arch::kMistral, "mistral"}, {Arch::kQwen2, "qwen2"},
    {Arch::kQwen3, "qwen3"}, {Arch::kQwen3_5, "qwen3_5"},
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

// Typed lookups over model_config (then the top level) with the errors the loader reports.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& mc, const nlohmann::json& top, const std::string& file)
      : mc_(mc), top_(top), file_(file) {}

  const nlohmann::json* find(const char* name) const {
    if (mc_.is_object()) {
      auto it = mc_.find(name);
      if (it != mc_.end() && !it->is_null()) return &*it;
    }
    auto it = top_.find(name);
    if (it != top_.end() && !it->is_null()) return &*it;
    return nullptr;
  }

  // A positive integer that must be present.
  Result<int> positive(const char* name) const {
    const nlohmann::json* v = find(name);
    if (!v) return fieldError(file_, name, "missing_field", "is missing");
    if (!v->is_number_integer()) return fieldError(file_, name, "wrong_type", "is not an integer");
    int64_t x = v->get<int64_t>();
    if (x <= 0 || x > (1ll << 30)) return fieldError(file_, name, "bad_value", "is not a positive integer");
    return (int)x;
  }
  // An integer with a default; `def` also replaces 0 when zeroIsDefault (MLC dataclass defaults of 0).
  Result<int> integer(const char* name, int def, bool zeroIsDefault = false) const {
    const nlohmann::json* v = find(name);
    if (!v) return def;
    if (!v->is_number_integer()) return fieldError(file_, name, "wrong_type", "is not an integer");
    int64_t x = v->get<int64_t>();
    if (x == 0 && zeroIsDefault) return def;
    return (int)x;
  }
  Result<double> number(const char* name, std::optional<double> def) const {
    const nlohmann::json* v = find(name);
    if (!v) {
      if (def) return *def;
      return fieldError(file_, name, "missing_field", "is missing");
    }
    if (!v->is_number()) return fieldError(file_, name, "wrong_type", "is not a number");
    return v->get<double>();
  }
  Result<bool> boolean(const char* name, bool def) const {
    const nlohmann::json* v = find(name);
    if (!v) return def;
    if (!v->is_boolean()) return fieldError(file_, name, "wrong_type", "is not a boolean");
    return v->get<bool>();
  }

 private:
  const nlohmann::json& mc_;
  const nlohmann::json& top_;
  const std::string& file_;
};

Result<std::optional<RopeScaling>> parseRopeScaling(const FieldReader& f, const std::string& file) {
  const nlohmann::json* v = f.find("rope_scaling");
  if (!v) return std::optional<RopeScaling>{};
  if (!v->is_object()) return fieldError(file, "rope_scaling", "wrong_type", "is not an object");
  std::string type = v->value("rope_type", v->value("type", std::string("default")));
  if (type == "default") return std::optional<RopeScaling>{};
  if (type != "llama3") return fieldError(file, "rope_scaling", "unsupported", "has unsupported type " + type);
  RopeScaling rs;
  rs.rope_type = type;
  for (const char* k : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
    if (!v->contains(k) || !(*v)[k].is_number())
      return fieldError(file, std::string("rope_scaling.") + k, "missing_field", "is missing");
  rs.factor = (*v)["factor"].get<float>();
  rs.low_freq_factor = (*v)["low_freq_factor"].get<float>();
  rs.high_freq_factor = (*v)["high_freq_factor"].get<float>();
  rs.original_max_position_embeddings = (*v)["original_max_position_embeddings"].get<int>();
  return std::optional<RopeScaling>{rs};
}

Status parseDims(const FieldReader& f, ModelConfig& c) {
  EWGPU_ASSIGN(c.hidden, f.positive("hidden_size"));
  EWGPU_ASSIGN(c.intermediate, f.positive("intermediate_size"));
  EWGPU_ASSIGN(c.n_layers, f.positive("num_hidden_layers"));
  EWGPU_ASSIGN(c.n_heads, f.positive("num_attention_heads"));
  EWGPU_ASSIGN(c.vocab, f.positive("vocab_size"));
  EWGPU_ASSIGN(c.n_kv_heads, f.integer("num_key_value_heads", c.n_heads, true));
  int defHeadDim = c.arch == Arch::kQwen3_5 ? 256 : c.hidden / c.n_heads;
  EWGPU_ASSIGN(c.head_dim, f.integer("head_dim", defHeadDim, true));
  double eps;
  EWGPU_ASSIGN(eps, f.number("rms_norm_eps", std::nullopt));
  c.rms_eps = (float)eps;
  double defTheta = c.arch == Arch::kQwen3_5 ? 1e7 : 10000.0;
  // qwen* spell the RoPE base rope_theta, llama/mistral position_embedding_base.
  const char* thetaName = f.find("rope_theta") ? "rope_theta" : "position_embedding_base";
  EWGPU_ASSIGN(c.rope_theta, f.number(thetaName, defTheta));
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
  if (c.arch != Arch::kQwen3_5) return {};
  EWGPU_ASSIGN(c.lin_k_heads, f.positive("linear_num_key_heads"));
  EWGPU_ASSIGN(c.lin_v_heads, f.positive("linear_num_value_heads"));
  EWGPU_ASSIGN(c.lin_k_dim, f.positive("linear_key_head_dim"));
  EWGPU_ASSIGN(c.lin_v_dim, f.positive("linear_value_head_dim"));
  EWGPU_ASSIGN(c.lin_conv_kernel, f.integer("linear_conv_kernel_dim", 4));
  EWGPU_ASSIGN(c.full_attention_interval, f.integer("full_attention_interval", 4));
  double prf;
  EWGPU_ASSIGN(prf, f.number("partial_rotary_factor", 0.25));
  c.partial_rotary_factor = (float)prf;
  if (c.lin_conv_kernel <= 0) return fieldError(file, "linear_conv_kernel_dim", "bad_value", "must be positive");
  if (c.full_attention_interval <= 0)
    return fieldError(file, "full_attention_interval", "bad_value", "must be positive");
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

Status parseRuntime(const FieldReader& f, const nlohmann::json& j, const std::string& file, ModelConfig& c) {
  EWGPU_ASSIGN(c.context_window, f.integer("context_window_size", -1));
  EWGPU_ASSIGN(c.prefill_chunk, f.integer("prefill_chunk_size", 0));
  EWGPU_ASSIGN(c.sliding_window, f.integer("sliding_window_size", -1));
  if (c.context_window <= 0 && c.sliding_window <= 0)
    return fieldError(file, "context_window_size", "bad_value", "is not positive and there is no sliding_window_size");
  if (c.context_window == 0 || c.context_window < -1)
    return fieldError(file, "context_window_size", "bad_value", "must be positive (or -1 with a sliding window)");
  EWGPU_ASSIGN(c.active_vocab, f.integer("active_vocab_size", c.vocab, true));
  FieldReader top(nlohmann::json(), j, file);  // sampling fields are top-level only
  double v;
  EWGPU_ASSIGN(v, top.number("temperature", 1.0));
  c.temperature = (float)v;
  EWGPU_ASSIGN(v, top.number("top_p", 1.0));
  c.top_p = (float)v;
  EWGPU_ASSIGN(v, top.number("presence_penalty", 0.0));
  c.presence_penalty = (float)v;
  EWGPU_ASSIGN(v, top.number("frequency_penalty", 0.0));
  c.frequency_penalty = (float)v;
  EWGPU_ASSIGN(v, top.number("repetition_penalty", 1.0));
  c.repetition_penalty = (float)v;
  c.conv_template = j.value("conv_template", nlohmann::json());
  if (!c.conv_template.is_null() && !c.conv_template.is_object() && !c.conv_template.is_string())
    return fieldError(file, "conv_template", "wrong_type", "is neither an object nor a name");
  c.tokenizer_info = j.value("tokenizer_info", nlohmann::json::object());
  if (auto it = j.find("tokenizer_files"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return fieldError(file, "tokenizer_files", "wrong_type", "is not an array");
    for (const auto& s : *it) {
      if (!s.is_string()) return fieldError(file, "tokenizer_files", "wrong_type", "holds a non-string");
      c.tokenizer_files.push_back(s.get<std::string>());
    }
  }
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
  for (auto& [k, n] : kArchNames)
    if (n == s) return k;
  return std::nullopt;
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

bool ModelConfig::isFullAttention(int layer) const {
  if (arch != Arch::kQwen3_5 || full_attention_interval <= 0) return true;
  return (layer + 1) % full_attention_interval == 0;
}

int ModelConfig::rotaryDim() const { return (int)(head_dim * partial_rotary_factor); }

static Result<ModelConfig> parseModelConfigUnchecked(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) return fieldError(path, "", "wrong_type", "document is not a JSON object");
  ModelConfig c;
  c.raw = j;
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string()) return fieldError(path, "model_type", "missing_field", "is missing");
  c.model_type = mt->get<std::string>();
  auto arch = archFromName(c.model_type);
  if (!arch) return fieldError(path, "model_type", "unsupported", "names an unsupported architecture");
  c.arch = *arch;
  auto qn = j.find("quantization");
  if (qn == j.end() || !qn->is_string()) return fieldError(path, "quantization", "missing_field", "is missing");
  auto quant = quantFromName(qn->get<std::string>());
  if (!quant) return fieldError(path, "quantization", "unsupported", "names an unsupported quantization");
  c.quant = *quant;
  auto mc = j.find("model_config");
  if (mc == j.end() || !mc->is_object()) return fieldError(path, "model_config", "missing_field", "is missing");
  FieldReader f(*mc, j, path);
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
