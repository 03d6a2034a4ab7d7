// HF -> MLC facts of gemma, gemma2, gemma3_text, phi3, olmo2, stablelm, gpt_neox, phi / phi-msft and ministral3
// (see the header; values and rules from mlc-llm's <arch>_model.py Config classes and <arch>_loader.py).
#include "model/hf_convert_archs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <optional>

#include "model/expected_params.h"

namespace ewgpu {

namespace {

using json = nlohmann::json;

Error cfgError(const std::string& field, const std::string& problem, const std::string& what) {
  return makeError(ErrorCode::kInvalidModelFolder, "config.json: field '" + field + "' " + what,
                   {{"file", "config.json"}, {"field", field}, {"problem", problem}});
}

bool startsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool endsWith(const std::string& s, std::string_view x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Reads a HF config the way MLC's ConfigBase.from_dict fills a dataclass: a field present in config.json
// (null included) takes its value, an absent one its default. The first missing required field is kept.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  json get(const char* k, json dflt) const { return j_.contains(k) ? j_[k] : std::move(dflt); }
  json required(const char* k) {
    if (j_.contains(k) && !j_[k].is_null()) return j_[k];
    if (!missing_) missing_ = k;
    return json();
  }
  bool has(const char* k) const { return j_.contains(k) && !j_[k].is_null(); }
  // The first of `names` present: MLC's context fallback (max_position_embeddings, then max_sequence_length).
  std::optional<int64_t> firstInt(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (has(n)) return j_[n].get<int64_t>();
    return std::nullopt;
  }
  std::optional<Error> error() const {
    if (!missing_) return std::nullopt;
    return cfgError(missing_, "missing_field", "is missing");
  }

 private:
  const json& j_;
  const char* missing_ = nullptr;
};

// `v` when it is a non-zero number, else `dflt` (MLC's "0 or None means derive it").
int64_t orDefault(const json& v, int64_t dflt) {
  if (!v.is_number() || v.get<double>() == 0) return dflt;
  return v.get<int64_t>();
}

// prefill_chunk_size after __post_init__ ran twice with context windows c1 then c2 (gen_config re-creates the
// config after its overrides): first min(c1, 8192), then capped again when above c2.
int64_t prefillChunk(int64_t c1, int64_t c2) {
  int64_t p = std::min<int64_t>(c1, 8192);
  if (p > c2) p = std::min<int64_t>(c2, 8192);
  return p;
}

Result<int64_t> contextWindow(const Fields& f) {
  auto c = f.firstInt({"max_position_embeddings", "max_sequence_length"});
  if (!c)
    return cfgError("max_position_embeddings", "missing_field",
                    "is missing (neither it nor max_sequence_length gives the context window)");
  return *c;
}

json ropeBase(const Fields& f, double dflt) { return f.has("rope_theta") ? f.get("rope_theta", dflt) : json(dflt); }

// The result: mlc-chat-config fields around model_config.
json chatConfig(const std::string& type, Quant quant, json mc, int64_t context, int64_t sliding, int64_t prefill) {
  return {{"model_type", type},         {"quantization", quantName(quant)}, {"model_config", std::move(mc)},
          {"context_window_size", context}, {"sliding_window_size", sliding}, {"prefill_chunk_size", prefill}};
}

Result<json> gemmaConfig(const json& hf, Quant quant, bool gemma2) {
  Fields f(hf);
  json mc = {{"hidden_size", f.required("hidden_size")},
             {"intermediate_size", f.required("intermediate_size")},
             {"attention_bias", f.required("attention_bias")},
             {"num_attention_heads", f.required("num_attention_heads")},
             {"num_key_value_heads", f.required("num_key_value_heads")},
             {"head_dim", f.required("head_dim")},
             {"num_hidden_layers", f.required("num_hidden_layers")},
             {"rms_norm_eps", f.required("rms_norm_eps")},
             {"vocab_size", f.required("vocab_size")}};
  if (auto e = f.error()) return *e;
  json act = f.get("hidden_activation", json());
  if (act.is_null()) act = f.get("hidden_act", json());
  if (act != "gelu" && act != "gelu_pytorch_tanh")
    return cfgError("hidden_activation", "unsupported", "must be gelu or gelu_pytorch_tanh (MLC's gemma runs tanh GeLU)");
  if (mc["attention_bias"] != false) return cfgError("attention_bias", "unsupported", "must be false for gemma");
  mc["hidden_activation"] = act;
  mc["position_embedding_base"] = ropeBase(f, 10000);
  auto ctx = contextWindow(f);
  if (!ctx) return std::move(ctx).error();
  int64_t context = *ctx, prefill = prefillChunk(*ctx, *ctx);
  if (gemma2) {
    for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "sliding_window"})
      mc[k] = f.get(k, json());
    if (!mc["sliding_window"].is_number_integer())
      return cfgError("sliding_window", "missing_field", "is missing (MLC's gemma2 context window is the sliding window)");
    context = mc["sliding_window"].get<int64_t>();  // every layer attends over at most the sliding window
    prefill = prefillChunk(*ctx, context);
  }
  mc["context_window_size"] = context;
  mc["prefill_chunk_size"] = prefill;
  mc["tensor_parallel_shards"] = 1;
  mc["max_batch_size"] = 1;
  return chatConfig(gemma2 ? "gemma2" : "gemma", quant, mc, context, -1, prefill);
}

json slidingPattern(const json& types);

Result<json> gemma3Config(const json& hfIn, Quant quant) {
  const bool textOnly = !hfIn.contains("text_config") || !hfIn["text_config"].is_object();
  const json& text = textOnly ? hfIn : hfIn["text_config"];
  Fields f(text);
  json t = {{"hidden_size", f.required("hidden_size")},
            {"intermediate_size", f.required("intermediate_size")},
            {"num_hidden_layers", f.required("num_hidden_layers")}};
  if (auto e = f.error()) return *e;
  t["attention_bias"] = f.get("attention_bias", false);
  t["num_attention_heads"] = f.get("num_attention_heads", 8);
  t["num_key_value_heads"] = f.get("num_key_value_heads", 4);
  t["head_dim"] = f.get("head_dim", 256);
  t["rms_norm_eps"] = f.get("rms_norm_eps", 1e-6);
  json act = f.get("hidden_activation", "gelu_pytorch_tanh");
  if (act.is_null()) act = f.get("hidden_act", json());
  if (act != "gelu" && act != "gelu_pytorch_tanh")
    return cfgError("hidden_activation", "unsupported", "must be gelu or gelu_pytorch_tanh (MLC's gemma runs tanh GeLU)");
  if (t["attention_bias"] != false) return cfgError("attention_bias", "unsupported", "must be false for gemma3");
  t["hidden_activation"] = act;
  json base = f.get("position_embedding_base", 1000000);
  if (base == 1000000 && f.has("rope_theta")) base = f.get("rope_theta", base);
  t["position_embedding_base"] = base;
  t["rope_scaling"] = f.get("rope_scaling", 0);
  json sliding = f.get("sliding_window_size", json());
  if (sliding.is_null()) sliding = f.get("sliding_window", json());
  if (!sliding.is_number_integer())
    return cfgError("sliding_window", "missing_field", "is missing (gemma3's local layers need it)");
  // context_window_size defaults to 131072, so max_position_embeddings is not read; prefill is taken from it,
  // then the context becomes max(sliding window, 8192) (MLC runs the local layers over the sliding window).
  const int64_t c1 = orDefault(f.get("context_window_size", 131072), 0);
  if (c1 == 0) return cfgError("context_window_size", "bad_value", "is 0");
  const int64_t context = std::max<int64_t>(sliding.get<int64_t>(), 8192);
  const int64_t prefill = prefillChunk(c1, context);
  t["context_window_size"] = context;
  t["prefill_chunk_size"] = prefill;
  t["query_pre_attn_scalar"] = f.get("query_pre_attn_scalar", 256);
  t["sliding_window_size"] = sliding;
  // Beyond MLC's fields (it runs every layer on one base and window): the engine's per-layer window pattern and the
  // sliding layers' RoPE base (docs/architectures.md); the defaults are gemma3's (6, 10000).
  if (json p = slidingPattern(f.get("layer_types", json())); !p.is_null()) t["sliding_window_pattern"] = p;
  else t["sliding_window_pattern"] = f.get("sliding_window_pattern", 6);
  t["rope_local_base_freq"] = f.get("rope_local_base_freq", 10000.0);
  Fields outer(hfIn);
  json mc = {{"text_config", t},
             {"vocab_size", outer.get("vocab_size", 262208)},
             {"tensor_parallel_shards", 1},
             {"max_batch_size", 1},
             {"context_window_size", context},
             {"sliding_window_size", sliding},
             {"prefill_chunk_size", prefill},
             {"is_text_model", textOnly}};
  return chatConfig("gemma3_text", quant, mc, context, sliding.get<int64_t>(), prefill);
}

// The value of `key` in the first per_layer_config entry of a full-attention layer (transformers 5.17 writes the
// full layers' head_dim there instead of global_head_dim), or null.
json fullLayerOverride(const json& text, const char* key) {
  const json types = text.value("layer_types", json::array());
  const json plc = text.value("per_layer_config", json::object());
  if (!types.is_array() || !plc.is_object()) return json();
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != "full_attention") continue;
    auto it = plc.find(std::to_string(i));
    if (it != plc.end() && it->is_object() && it->contains(key)) return (*it)[key];
  }
  return json();
}

// MLC's Gemma4Config {text_config: Gemma4TextConfig, ...} (gemma4_model.py, mlc-llm fa7cf711) from a HF Gemma 4
// config (text-only gemma4_text, or the multimodal gemma4 with a text_config); defaults are transformers 5.17's.
Result<json> gemma4Config(const json& hfIn, Quant quant) {
  const bool textOnly = !hfIn.contains("text_config") || !hfIn["text_config"].is_object();
  const json& text = textOnly ? hfIn : hfIn["text_config"];
  Fields f(text);
  json t = {{"hidden_size", f.required("hidden_size")},
            {"intermediate_size", f.required("intermediate_size")},
            {"num_hidden_layers", f.required("num_hidden_layers")}};
  if (auto e = f.error()) return *e;
  const int64_t L = t["num_hidden_layers"].get<int64_t>();
  t["vocab_size"] = f.get("vocab_size", 262144);
  t["attention_bias"] = f.get("attention_bias", false);
  t["num_attention_heads"] = f.get("num_attention_heads", 8);
  t["num_key_value_heads"] = f.get("num_key_value_heads", 4);
  t["head_dim"] = f.get("head_dim", 256);
  t["rms_norm_eps"] = f.get("rms_norm_eps", 1e-6);
  json act = f.get("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh")
    return cfgError("hidden_activation", "unsupported", "must be gelu_pytorch_tanh for gemma4");
  t["hidden_activation"] = act;
  for (const char* k : {"attention_bias", "attention_k_eq_v", "enable_moe_block"})
    if (f.get(k, false) != false) return cfgError(k, "unsupported", "must be false (gemma4 without it is implemented)");
  json types = f.get("layer_types", json());
  if (types.is_null()) {  // transformers' default: every 6th layer full, and the last
    types = json::array();
    for (int64_t i = 0; i < L; ++i) types.push_back((i + 1) % 6 == 0 || i == L - 1 ? "full_attention" : "sliding_attention");
  }
  t["layer_types"] = types;
  json gd = f.get("global_head_dim", json());
  if (gd.is_null()) gd = fullLayerOverride(text, "head_dim");
  t["global_head_dim"] = gd.is_null() ? json(512) : gd;
  json gkv = fullLayerOverride(text, "num_key_value_heads");  // transformers uses it only with attention_k_eq_v
  t["num_global_key_value_heads"] = gkv.is_null() ? t["num_key_value_heads"] : gkv;
  t["num_kv_shared_layers"] = f.get("num_kv_shared_layers", 0);
  t["use_double_wide_mlp"] = f.get("use_double_wide_mlp", false);
  t["hidden_size_per_layer_input"] = f.get("hidden_size_per_layer_input", 256);
  t["vocab_size_per_layer_input"] = f.get("vocab_size_per_layer_input", 262144);
  t["final_logit_softcapping"] = f.get("final_logit_softcapping", json());
  const json sliding = f.get("sliding_window", 512);
  if (!sliding.is_number_integer() || sliding.get<int64_t>() <= 0)
    return cfgError("sliding_window", "bad_value", "is not a positive integer (gemma4's sliding layers need it)");
  t["sliding_window_size"] = sliding;
  json rope = f.get("rope_parameters", json());
  if (!rope.is_object())
    rope = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
            {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}}};
  t["position_embedding_base"] = rope.value("sliding_attention", json::object()).value("rope_theta", 10000.0);
  t["global_position_embedding_base"] = rope.value("full_attention", json::object()).value("rope_theta", 1e6);
  t["kwargs"] = {{"rope_parameters", rope}};
  auto ctx = contextWindow(f);
  if (!ctx) return std::move(ctx).error();
  const int64_t prefill = prefillChunk(*ctx, *ctx);
  t["context_window_size"] = *ctx;
  t["prefill_chunk_size"] = prefill;
  t["tensor_parallel_shards"] = 1;
  t["max_batch_size"] = 1;
  json mc = {{"text_config", t},
             {"vocab_size", t["vocab_size"]},
             {"tensor_parallel_shards", 1},
             {"max_batch_size", 1},
             {"context_window_size", *ctx},
             {"sliding_window_size", sliding},
             {"prefill_chunk_size", prefill},
             {"is_text_model", textOnly}};
  return chatConfig("gemma4", quant, mc, *ctx, sliding.get<int64_t>(), prefill);
}

Result<json> phi3Config(const json& hf, Quant quant) {
  Fields f(hf);
  json mc = {{"model_type", "phi3"},
             {"hidden_size", f.required("hidden_size")},
             {"vocab_size", f.required("vocab_size")},
             {"num_hidden_layers", f.required("num_hidden_layers")},
             {"num_attention_heads", f.required("num_attention_heads")},
             {"intermediate_size", f.required("intermediate_size")},
             {"rms_norm_eps", f.required("rms_norm_eps")},
             {"num_key_value_heads", f.get("num_key_value_heads", json())},
             {"max_position_embeddings", f.required("max_position_embeddings")}};
  if (auto e = f.error()) return *e;
  mc["position_embedding_base"] = ropeBase(f, 10000);
  json rs = f.get("rope_scaling", json());
  if (rs.is_object() && !rs.contains("type")) rs = json();
  if (rs.is_object()) {
    if (rs["type"] == "su") rs["type"] = "longrope";
    if (rs["type"] != "longrope")
      return cfgError("rope_scaling", "unsupported", "has type " + rs["type"].dump() + "; phi3 takes longrope only");
    rs["rope_type"] = rs["type"];
    rs["max_position_embeddings"] = mc["max_position_embeddings"];
    rs["original_max_position_embeddings"] = f.get("original_max_position_embeddings", 0);
  }
  mc["rope_scaling"] = rs;
  mc["original_max_position_embeddings"] = f.get("original_max_position_embeddings", 0);
  const int64_t context = mc["max_position_embeddings"].get<int64_t>();
  const int64_t heads = mc["num_attention_heads"].get<int64_t>();
  mc["context_window_size"] = context;
  mc["prefill_chunk_size"] = prefillChunk(context, context);
  mc["head_dim"] = orDefault(f.get("head_dim", 0), mc["hidden_size"].get<int64_t>() / heads);
  mc["tensor_parallel_shards"] = 1;
  mc["max_batch_size"] = 1;
  mc["tie_word_embeddings"] = f.get("tie_word_embeddings", false);
  mc["partial_rotary_factor"] = f.get("partial_rotary_factor", 1.0);
  mc["num_key_value_heads"] = orDefault(mc["num_key_value_heads"], heads);
  return chatConfig("phi3", quant, mc, context, -1, prefillChunk(context, context));
}

Result<json> olmo2Config(const json& hf, Quant quant) {
  Fields f(hf);
  json mc = {{"vocab_size", f.required("vocab_size")},
             {"hidden_size", f.required("hidden_size")},
             {"num_attention_heads", f.required("num_attention_heads")},
             {"intermediate_size", f.required("intermediate_size")},
             {"hidden_act", f.required("hidden_act")},
             {"num_hidden_layers", f.required("num_hidden_layers")}};
  if (auto e = f.error()) return *e;
  auto ctx = contextWindow(f);
  if (!ctx) return std::move(ctx).error();
  const int64_t heads = mc["num_attention_heads"].get<int64_t>();
  mc["num_key_value_heads"] = orDefault(f.get("num_key_value_heads", 0), heads);
  mc["head_dim"] = orDefault(f.get("head_dim", 0), mc["hidden_size"].get<int64_t>() / heads);
  mc["position_embedding_base"] = ropeBase(f, 10000);
  mc["rope_scaling"] = f.get("rope_scaling", json());
  mc["rms_norm_eps"] = f.get("rms_norm_eps", 1e-5);
  mc["tie_word_embeddings"] = f.get("tie_word_embeddings", false);
  mc["context_window_size"] = *ctx;
  mc["prefill_chunk_size"] = prefillChunk(*ctx, *ctx);
  mc["tensor_parallel_shards"] = 1;
  mc["pipeline_parallel_stages"] = 1;
  mc["max_batch_size"] = 1;
  return chatConfig("olmo2", quant, mc, *ctx, -1, prefillChunk(*ctx, *ctx));
}

Result<json> stablelmConfig(const json& hf, Quant quant) {
  Fields f(hf);
  json mc = {{"vocab_size", f.required("vocab_size")},
             {"hidden_size", f.required("hidden_size")},
             {"num_hidden_layers", f.required("num_hidden_layers")},
             {"num_attention_heads", f.required("num_attention_heads")},
             {"num_key_value_heads", f.required("num_key_value_heads")},
             {"layer_norm_eps", f.required("layer_norm_eps")},
             {"partial_rotary_factor", f.required("partial_rotary_factor")},
             {"rope_theta", f.required("rope_theta")},
             {"intermediate_size", f.required("intermediate_size")}};
  if (auto e = f.error()) return *e;
  auto ctx = contextWindow(f);
  if (!ctx) return std::move(ctx).error();
  mc["use_qkv_bias"] = f.get("use_qkv_bias", false);
  mc["head_dim"] = orDefault(f.get("head_dim", 0),
                             mc["hidden_size"].get<int64_t>() / mc["num_attention_heads"].get<int64_t>());
  mc["context_window_size"] = *ctx;
  mc["prefill_chunk_size"] = prefillChunk(*ctx, *ctx);
  mc["tensor_parallel_shards"] = 1;
  mc["max_batch_size"] = 1;
  return chatConfig("stablelm", quant, mc, *ctx, -1, prefillChunk(*ctx, *ctx));
}

Result<json> gptNeoxConfig(const json& hf, Quant quant) {
  Fields f(hf);
  json mc = {{"use_parallel_residual", f.required("use_parallel_residual")},
             {"hidden_size", f.required("hidden_size")},
             {"intermediate_size", f.required("intermediate_size")},
             {"num_attention_heads", f.required("num_attention_heads")},
             {"num_hidden_layers", f.required("num_hidden_layers")},
             {"layer_norm_eps", f.required("layer_norm_eps")},
             {"vocab_size", f.required("vocab_size")},
             {"rotary_pct", f.required("rotary_pct")}};
  if (auto e = f.error()) return *e;
  auto ctx = contextWindow(f);
  if (!ctx) return std::move(ctx).error();
  mc["position_embedding_base"] = ropeBase(f, 10000);  // HF's rotary_emb_base is not read by MLC
  mc["context_window_size"] = *ctx;
  mc["head_dim"] = orDefault(f.get("head_dim", 0),
                             mc["hidden_size"].get<int64_t>() / mc["num_attention_heads"].get<int64_t>());
  mc["prefill_chunk_size"] = prefillChunk(*ctx, *ctx);
  mc["tensor_parallel_shards"] = 1;
  mc["ffn_out_dtype"] = "float32";
  mc["max_batch_size"] = 1;
  return chatConfig("gpt_neox", quant, mc, *ctx, -1, prefillChunk(*ctx, *ctx));
}

// transformers' PhiForCausalLM (MLC "phi", Phi1Config).
Result<json> phiConfig(const json& hf, Quant quant) {
  Fields f(hf);
  auto ctx = contextWindow(f);
  if (!ctx) return std::move(ctx).error();
  json mc = {{"vocab_size", f.get("vocab_size", 51200)},
             {"hidden_size", f.get("hidden_size", 2048)},
             {"num_hidden_layers", f.get("num_hidden_layers", 24)},
             {"num_attention_heads", f.get("num_attention_heads", 32)},
             {"layer_norm_eps", f.get("layer_norm_eps", 1e-5)},
             {"position_embedding_base", ropeBase(f, 10000)},
             {"partial_rotary_factor", f.get("partial_rotary_factor", 0.5)}};
  const int64_t hidden = mc["hidden_size"].get<int64_t>(), heads = mc["num_attention_heads"].get<int64_t>();
  mc["intermediate_size"] = orDefault(f.get("intermediate_size", 8192), 4 * hidden);
  mc["num_key_value_heads"] = orDefault(f.get("num_key_value_heads", 0), heads);
  mc["context_window_size"] = *ctx;
  mc["prefill_chunk_size"] = prefillChunk(*ctx, *ctx);
  mc["head_dim"] = orDefault(f.get("head_dim", 0), hidden / heads);
  mc["tensor_parallel_shards"] = 1;
  mc["max_batch_size"] = 1;
  return chatConfig("phi", quant, mc, *ctx, -1, prefillChunk(*ctx, *ctx));
}

// The legacy microsoft/phi-2 remote-code config (MLC "phi-msft", PhiConfig).
Result<json> phiMsftConfig(const json& hf, Quant quant) {
  Fields f(hf);
  json mc = {{"model_type", "phi-msft"},
             {"vocab_size", f.get("vocab_size", 51200)},
             {"n_positions", f.get("n_positions", 2048)},
             {"n_embd", f.get("n_embd", 2560)},
             {"n_layer", f.get("n_layer", 32)},
             {"n_head", f.get("n_head", 32)},
             {"rotary_dim", f.get("rotary_dim", 32)},
             {"position_embedding_base", ropeBase(f, 10000)},
             {"layer_norm_epsilon", f.get("layer_norm_epsilon", 1e-5)}};
  const int64_t embd = mc["n_embd"].get<int64_t>(), heads = mc["n_head"].get<int64_t>();
  const int64_t context = f.firstInt({"max_position_embeddings", "max_sequence_length"})
                              .value_or(mc["n_positions"].get<int64_t>());
  mc["context_window_size"] = context;
  mc["prefill_chunk_size"] = context;  // phi: the whole context, not min(context, 8192)
  mc["n_head_kv"] = orDefault(f.get("n_head_kv", 0), heads);
  mc["n_inner"] = orDefault(f.get("n_inner", 0), 4 * embd);
  mc["head_dim"] = orDefault(f.get("head_dim", 0), embd / heads);
  mc["tensor_parallel_shards"] = 1;
  return chatConfig("phi-msft", quant, mc, context, -1, context);
}

Result<json> ministral3Config(const json& hfIn, Quant quant) {
  json merged = hfIn;
  if (hfIn.contains("text_config") && hfIn["text_config"].is_object()) {
    merged.erase("text_config");
    merged.update(hfIn["text_config"]);
    for (const char* k : {"tie_word_embeddings", "dtype"})
      if (hfIn.contains(k)) merged[k] = hfIn[k];
  }
  Fields f(merged);
  if (f.has("quantization_config"))
    return cfgError("quantization_config", "unsupported",
                    "is set: an FP8 checkpoint (MLC needs its block-scale quantization); convert the BF16 one");
  json mc = {{"hidden_size", f.required("hidden_size")},
             {"intermediate_size", f.required("intermediate_size")},
             {"num_attention_heads", f.required("num_attention_heads")},
             {"num_hidden_layers", f.required("num_hidden_layers")},
             {"rms_norm_eps", f.required("rms_norm_eps")},
             {"vocab_size", f.required("vocab_size")}};
  if (auto e = f.error()) return *e;
  json rope = f.get("rope_parameters", json());
  json base = 10000;
  if (rope.is_object() && rope.contains("rope_theta")) {
    base = rope["rope_theta"];
    rope.erase("rope_theta");
  } else if (f.has("rope_theta")) {
    base = f.get("rope_theta", base);
  }
  int64_t sliding = -1;
  if (f.has("sliding_window_size") && f.get("sliding_window_size", 0) != 0)
    sliding = f.get("sliding_window_size", 0).get<int64_t>();
  else if (f.has("sliding_window"))
    sliding = f.get("sliding_window", -1).get<int64_t>();
  int64_t context = -1;
  if (sliding == -1) {
    auto ctx = contextWindow(f);
    if (!ctx) return std::move(ctx).error();
    context = *ctx;
  }
  std::vector<int64_t> candidates;
  if (sliding != -1) candidates.push_back(sliding);
  if (context != -1) candidates.push_back(context);
  const int64_t prefill = std::min<int64_t>(*std::min_element(candidates.begin(), candidates.end()), 8192);
  const int64_t heads = mc["num_attention_heads"].get<int64_t>();
  mc["attention_sink_size"] = 0;
  mc["context_window_size"] = context;
  mc["dtype"] = f.get("dtype", "float32");
  mc["head_dim"] = orDefault(f.get("head_dim", 0), mc["hidden_size"].get<int64_t>() / heads);
  mc["hidden_act"] = f.get("hidden_act", "silu");
  mc["max_batch_size"] = 1;
  mc["num_key_value_heads"] = orDefault(f.get("num_key_value_heads", 0), heads);
  mc["position_embedding_base"] = base;
  mc["prefill_chunk_size"] = prefill;
  mc["rope_parameters"] = rope;
  mc["sliding_window_size"] = sliding;
  mc["tensor_parallel_shards"] = 1;
  mc["tie_word_embeddings"] = f.get("tie_word_embeddings", false);
  mc["weight_block_size"] = nullptr;
  mc["modules_to_not_convert"] = json::array();
  return chatConfig("ministral3", quant, mc, context, sliding, prefill);
}

// Rows concatenated from q/k/v (or gate/up) when `mlc` is a fused projection of the standard loader.
std::optional<std::vector<std::string>> standardFusion(const std::string& mlc) {
  for (std::string_view suffix : {".weight", ".bias"}) {
    const std::string qkv = "self_attn.qkv_proj" + std::string(suffix), gu = "mlp.gate_up_proj" + std::string(suffix);
    if (endsWith(mlc, qkv)) {
      std::string base = mlc.substr(0, mlc.size() - qkv.size()) + "self_attn.";
      return std::vector<std::string>{base + "q_proj" + std::string(suffix), base + "k_proj" + std::string(suffix),
                                      base + "v_proj" + std::string(suffix)};
    }
    if (endsWith(mlc, gu)) {
      std::string base = mlc.substr(0, mlc.size() - gu.size()) + "mlp.";
      return std::vector<std::string>{base + "gate_proj" + std::string(suffix), base + "up_proj" + std::string(suffix)};
    }
  }
  return std::nullopt;
}

HfSource standard(const std::string& mlc) {
  if (auto f = standardFusion(mlc)) return {*f};
  return {{mlc}};
}

// s with its first `from` replaced by `to` (when present).
std::string replaced(std::string s, std::string_view from, std::string_view to) {
  size_t p = s.find(from);
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

bool isGemmaNorm(const std::string& n) { return endsWith(n, "layernorm.weight") || n == "model.norm.weight"; }

}  // namespace

constexpr std::string_view kOtherTypes[] = {"gemma",    "gemma2",   "gemma3_text", "phi3",     "olmo2",     "stablelm",
                                            "gpt_neox", "phi",      "phi-msft",    "ministral3", "gemma4"};

bool isOtherDecoderType(std::string_view t) {
  return std::find(std::begin(kOtherTypes), std::end(kOtherTypes), t) != std::end(kOtherTypes);
}

std::string otherDecoderModelType(const nlohmann::json& hf) {
  if (!hf.is_object()) return "";
  const std::string type = hf.value("model_type", "");
  std::string textType;
  if (hf.contains("text_config") && hf["text_config"].is_object())
    textType = hf["text_config"].value("model_type", "");
  if (isOtherDecoderType(type)) return type;
  if (type == "gemma3" && !textType.empty()) return "gemma3_text";
  if (type == "gemma4_text" || (type == "gemma4" && textType == "gemma4_text")) return "gemma4";
  if (type == "mistral3" && textType == "ministral3") return "ministral3";
  return "";
}

namespace {

// transformers 5 writes a config's RoPE as `rope_parameters` (rope_theta, partial_rotary_factor, the scaling
// fields; gemma3: one dict per layer type). The family configs above read the older top-level names, so they are
// put back there: rope_theta, partial_rotary_factor (gpt_neox: rotary_pct), a non-default type as rope_scaling,
// gemma3's sliding-layer base as rope_local_base_freq.
json hoistRopeParameters(json hf) {
  json* cfg = hf.contains("text_config") && hf["text_config"].is_object() ? &hf["text_config"] : &hf;
  auto it = cfg->find("rope_parameters");
  if (it == cfg->end() || !it->is_object()) return hf;
  json rp = *it;
  if (rp.contains("full_attention") && rp["full_attention"].is_object()) {
    if (rp.contains("sliding_attention") && rp["sliding_attention"].is_object() &&
        rp["sliding_attention"].contains("rope_theta") && !cfg->contains("rope_local_base_freq"))
      (*cfg)["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"];
    rp = rp["full_attention"];
  }
  if (rp.contains("rope_theta") && !cfg->contains("rope_theta")) (*cfg)["rope_theta"] = rp["rope_theta"];
  if (rp.contains("partial_rotary_factor")) {
    if (!cfg->contains("partial_rotary_factor")) (*cfg)["partial_rotary_factor"] = rp["partial_rotary_factor"];
    if (!cfg->contains("rotary_pct")) (*cfg)["rotary_pct"] = rp["partial_rotary_factor"];
  }
  const std::string type = rp.value("rope_type", rp.value("type", std::string("default")));
  if (type != "default" && (!cfg->contains("rope_scaling") || (*cfg)["rope_scaling"].is_null())) {
    rp["type"] = type;
    (*cfg)["rope_scaling"] = rp;
  }
  return hf;
}

// gemma3's layer_types as the every-k-th-layer-is-global pattern the engine reads (sliding_window_pattern).
json slidingPattern(const json& types) {
  if (!types.is_array() || types.empty()) return json();
  const int n = (int)types.size();
  for (int p = 1; p <= n + 1; ++p) {
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) ok = (types[i] == "full_attention") == ((i + 1) % p == 0);
    if (ok) return p;
  }
  return json();
}

}  // namespace

Result<nlohmann::json> otherDecoderChatConfig(const nlohmann::json& hfRaw, Quant quant) {
  const json hf = hoistRopeParameters(hfRaw);
  const std::string type = otherDecoderModelType(hf);
  try {
    if (type == "gemma4") return gemma4Config(hfRaw, quant);  // per-layer-type rope_parameters, kept as they are
    if (type == "gemma" || type == "gemma2") return gemmaConfig(hf, quant, type == "gemma2");
    if (type == "gemma3_text") return gemma3Config(hf, quant);
    if (type == "phi3") return phi3Config(hf, quant);
    if (type == "olmo2") return olmo2Config(hf, quant);
    if (type == "stablelm") return stablelmConfig(hf, quant);
    if (type == "gpt_neox") return gptNeoxConfig(hf, quant);
    if (type == "phi") return phiConfig(hf, quant);
    if (type == "phi-msft") return phiMsftConfig(hf, quant);
    if (type == "ministral3") return ministral3Config(hf, quant);
  } catch (const json::exception& e) {  // a field of the wrong type
    return cfgError("", "wrong_type", std::string("has a value of unexpected type: ") + e.what());
  }
  return cfgError("model_type", "unsupported", "is not one of the architectures this converter maps");
}

std::string textModelTensorName(const std::string& hf) {
  for (std::string_view drop : {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                "model.multi_modal_projector.", "vision_model.", "model.vision_model.",
                                "model.audio_tower.", "model.embed_vision.", "model.embed_audio."})
    if (startsWith(hf, drop)) return "";
  if (startsWith(hf, "language_model.model.")) return "model." + hf.substr(21);
  if (startsWith(hf, "model.language_model.")) return "model." + hf.substr(21);
  if (startsWith(hf, "language_model.lm_head.")) return hf.substr(15);
  return hf;
}

namespace {

// gemma4 (gemma4_loader.py, mlc-llm fa7cf711): HF's names; gate|up fused; both embeddings pre-multiplied; the
// per-layer embedding split into shards of whole layers; layer_scalar padded to 2; the KV-shared layers' k/v/k_norm,
// which transformers 5.17 neither creates nor saves, written as zeros / ones when the checkpoint lacks them.
HfSource gemma4Source(const ModelConfig& c, const std::string& mlc) {
  if (mlc == "model.embed_tokens.weight") {
    HfSource s{{mlc}};
    s.scale = std::sqrt((double)c.hidden);
    return s;
  }
  const std::string shard = "model.embed_tokens_per_layer.shards.";
  if (startsWith(mlc, shard)) {
    const int index = std::stoi(mlc.substr(shard.size()));
    const std::vector<int> layers = gemma4PleShardLayers(c);
    HfSource s{{"model.embed_tokens_per_layer.weight"}};
    s.scale = std::sqrt((double)c.ple_dim);
    for (int k = 0; k < index; ++k) s.col_first += (int64_t)layers[k] * c.ple_dim;
    s.col_count = (int64_t)layers[index] * c.ple_dim;
    s.col_total = (int64_t)c.n_layers * c.ple_dim;
    return s;
  }
  if (endsWith(mlc, ".layer_scalar")) {
    HfSource s{{mlc}};
    s.pad_to = 2;
    return s;
  }
  if (auto f = standardFusion(mlc); f && endsWith(mlc, "gate_up_proj.weight")) return {*f};
  HfSource s{{mlc}};
  if (endsWith(mlc, "self_attn.k_proj.weight") || endsWith(mlc, "self_attn.v_proj.weight"))
    s.fill_if_missing = HfSource::Fill::kZeros;
  if (endsWith(mlc, "self_attn.k_norm.weight")) s.fill_if_missing = HfSource::Fill::kOnes;
  return s;
}

}  // namespace

HfSource hfSourceOf(const ModelConfig& c, const std::string& mlc) {
  using T = HfSource::Transform;
  const std::string& type = c.model_type;
  if (type == "gemma" || type == "gemma2") {
    if (isGemmaNorm(mlc)) return {{mlc}, T::kPlusOne};
    return standard(mlc);
  }
  if (type == "gemma3_text") {
    const std::string n = startsWith(mlc, "language_model.") ? mlc.substr(15) : mlc;
    if (isGemmaNorm(n) || endsWith(n, "self_attn.q_norm.weight") || endsWith(n, "self_attn.k_norm.weight"))
      return {{n}, T::kPlusOne};
    if (auto f = standardFusion(n); f && endsWith(n, "gate_up_proj.weight")) return {*f};
    return {{n}};  // q/k/v stay separate in gemma3
  }
  if (type == "gemma4") return gemma4Source(c, mlc);
  if (type == "phi3") {
    if (mlc == "transformer.embd.weight") return {{"model.embed_tokens.weight"}};
    if (mlc == "transformer.norm.weight") return {{"model.norm.weight"}};
    std::string n = replaced(mlc, "transformer.h.", "model.layers.");
    n = replaced(n, ".ln.", ".input_layernorm.");
    n = replaced(n, ".mixer.out_proj.", ".self_attn.o_proj.");
    n = replaced(n, ".mixer.qkv_proj.", ".self_attn.qkv_proj.");  // fused in the HF checkpoint already
    return {{n}};
  }
  if (type == "gpt_neox") {
    if (endsWith(mlc, "attention.query_key_value.weight") || endsWith(mlc, "attention.query_key_value.bias"))
      return {{mlc}, T::kNeoxQkvOrder};
    return {{mlc}};
  }
  if (type == "phi-msft") {
    if (mlc == "transformer.embd.weight") return {{"transformer.embd.wte.weight"}};
    return {{mlc}};
  }
  if (type == "phi") {
    if (mlc == "transformer.embd.weight") return {{"model.embed_tokens.weight"}};
    if (startsWith(mlc, "lm_head.ln.")) return {{"model.final_layernorm." + mlc.substr(11)}};
    if (startsWith(mlc, "lm_head.linear.")) return {{"lm_head." + mlc.substr(15)}};
    std::string n = replaced(mlc, "transformer.h.", "model.layers.");
    for (std::string_view suffix : {"weight", "bias"}) {
      const std::string wqkv = ".mixer.Wqkv." + std::string(suffix);
      if (endsWith(n, wqkv)) {
        std::string base = n.substr(0, n.size() - wqkv.size()) + ".self_attn.";
        return {{base + "q_proj." + std::string(suffix), base + "k_proj." + std::string(suffix),
                 base + "v_proj." + std::string(suffix)}};
      }
    }
    n = replaced(n, ".ln.", ".input_layernorm.");
    n = replaced(n, ".mixer.out_proj.", ".self_attn.dense.");
    return {{n}};
  }
  return standard(mlc);  // olmo2, stablelm, ministral3: llama's names and fusions
}

Result<std::vector<float>> applyHfSource(const HfSource& s, const std::vector<const std::vector<float>*>& parts,
                                         int heads, int head_dim) {
  using T = HfSource::Transform;
  std::vector<float> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  if (s.transform == T::kPlusOne) {
    for (float& x : out) x += 1.0f;
  } else if (s.transform == T::kNeoxQkvOrder) {
    const size_t rows = 3 * (size_t)heads * head_dim;
    if (heads <= 0 || head_dim <= 0 || out.size() % rows != 0)
      return makeError(ErrorCode::kInvalidModelFolder,
                       "model.safetensors: " + s.names[0] + " has " + std::to_string(out.size()) +
                           " values, not a multiple of 3 x heads x head_dim",
                       {{"file", "model.safetensors"}, {"tensor", s.names[0]}, {"problem", "bad_shape"}});
    const size_t cols = out.size() / rows;
    std::vector<float> r(out.size());
    // HF row j*3D + s*D + e (head j, s = q/k/v, e < D) -> MLC row s*H*D + j*D + e.
    for (int j = 0; j < heads; ++j)
      for (int part = 0; part < 3; ++part)
        for (int e = 0; e < head_dim; ++e) {
          const size_t from = ((size_t)j * 3 * head_dim + (size_t)part * head_dim + e) * cols;
          const size_t to = ((size_t)part * heads * head_dim + (size_t)j * head_dim + e) * cols;
          std::copy(out.begin() + from, out.begin() + from + cols, r.begin() + to);
        }
    out = std::move(r);
  }
  if (s.col_count > 0) {
    if (s.col_total <= 0 || out.size() % (size_t)s.col_total != 0 || s.col_first + s.col_count > s.col_total)
      return makeError(ErrorCode::kInvalidModelFolder,
                       "model.safetensors: " + s.names[0] + " has " + std::to_string(out.size()) +
                           " values, not rows of " + std::to_string(s.col_total),
                       {{"file", "model.safetensors"}, {"tensor", s.names[0]}, {"problem", "bad_shape"}});
    const size_t rows = out.size() / (size_t)s.col_total;
    std::vector<float> r(rows * (size_t)s.col_count);
    for (size_t i = 0; i < rows; ++i)
      std::copy_n(out.begin() + i * s.col_total + s.col_first, s.col_count, r.begin() + i * s.col_count);
    out = std::move(r);
  }
  if (s.scale != 1.0)
    for (float& x : out) x = (float)((double)x * s.scale);
  if (s.pad_to > 0 && (int64_t)out.size() < s.pad_to) out.resize((size_t)s.pad_to, 0.0f);
  return out;
}

Result<WeightMap> otherDecoderWeights(const ModelConfig& c, const std::map<std::string, std::vector<float>>& hfIn) {
  std::map<std::string, std::vector<float>> hf;  // text-model names
  for (const auto& [name, v] : hfIn) {
    if (endsWith(name, "rotary_emb.inv_freq") || endsWith(name, "attention.masked_bias") ||
        endsWith(name, "attention.bias"))
      continue;  // buffers MLC's loaders mark unused
    std::string n = textModelTensorName(name);
    if (!n.empty()) hf[n] = v;
  }
  WeightMap out;
  for (const ParamSpec& p : expectedParams(c)) {
    if (p.kind == ParamKind::kQScale) continue;
    const bool matrix = p.kind == ParamKind::kQWeight || p.kind == ParamKind::kWeight;
    const std::string name = matrix ? p.module + ".weight" : p.name;
    if (out.count(name)) continue;
    const HfSource src = hfSourceOf(c, name);
    std::vector<const std::vector<float>*> parts;
    if (src.fill_if_missing != HfSource::Fill::kNone && src.names.size() == 1 && !hf.count(src.names[0])) {
      out[name].assign((size_t)(p.rows * p.cols), src.fill_if_missing == HfSource::Fill::kOnes ? 1.0f : 0.0f);
      continue;
    }
    for (const std::string& n : src.names) {
      auto it = hf.find(n);
      if (it == hf.end())
        return makeError(ErrorCode::kInvalidModelFolder, "model.safetensors: tensor " + n + " (for " + name + ") is missing",
                         {{"file", "model.safetensors"}, {"tensor", n}, {"problem", "missing_tensor"}});
      parts.push_back(&it->second);
    }
    auto v = applyHfSource(src, parts, c.n_heads, c.head_dim);
    if (!v.ok()) return std::move(v).error();
    out[name] = std::move(v).value();
  }
  return out;
}

Status writeMlcModelConfig(const std::string& out_dir, const nlohmann::json& model_config) {
  const std::string path = out_dir + "/mlc-chat-config.json";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (!in || j.is_discarded() || !j.is_object())
    return makeError(ErrorCode::kInternal, path + " was not written", {{"file", "mlc-chat-config.json"}});
  j["model_config"] = model_config;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << j.dump(2) << "\n";
  if (!out) return makeError(ErrorCode::kInternal, "cannot write " + path, {{"file", "mlc-chat-config.json"}});
  return {};
}

}  // namespace ewgpu
