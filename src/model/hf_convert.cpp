// HF -> MLC conversion for the transformers cross-check (mlc-format.md §3; qwen3_5-architecture.md §1-2).
#include "model/hf_convert.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model/expected_params.h"
#include "model/hf_convert_archs.h"
#include "model/safetensors.h"

namespace ewgpu {

namespace {

using json = nlohmann::json;

Error hfError(const std::string& file, const std::string& problem, const std::string& msg,
              json extra = json::object()) {
  json d = {{"file", file}, {"problem", problem}};
  d.update(extra);
  return makeError(ErrorCode::kInvalidModelFolder, file + ": " + msg, std::move(d));
}

// The text config: top level, or `text_config` of a VL config (tie flag may sit at the top level).
json textConfig(const json& hf) {
  if (!hf.contains("text_config") || !hf["text_config"].is_object()) return hf;
  json t = hf["text_config"];
  if (!t.contains("tie_word_embeddings") && hf.contains("tie_word_embeddings"))
    t["tie_word_embeddings"] = hf["tie_word_embeddings"];
  if (!t.contains("model_type")) t["model_type"] = hf.value("model_type", "");
  return t;
}

// layer_types -> the equivalent full_attention_interval (the only pattern MLC's qwen3_5 supports).
Result<int> intervalFromLayerTypes(const json& types) {
  int n = (int)types.size();
  for (int interval = 1; interval <= n; ++interval) {
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) {
      bool full = types[i].is_string() && types[i].get<std::string>() == "full_attention";
      ok = full == ((i + 1) % interval == 0);
    }
    if (ok) return interval;
  }
  return hfError("config.json", "unsupported", "layer_types is not every-k-th-layer full attention",
                 {{"field", "layer_types"}});
}

void copyIfPresent(const json& from, json& to, const char* key, const char* as = nullptr) {
  if (from.contains(key) && !from[key].is_null()) to[as ? as : key] = from[key];
}

// Concatenates the rows of several tensors.
Result<std::vector<float>> concatRows(const std::map<std::string, std::vector<float>>& hf,
                                      const std::vector<std::string>& names) {
  std::vector<float> out;
  for (const std::string& n : names) {
    auto it = hf.find(n);
    if (it == hf.end())
      return hfError("model.safetensors", "missing_tensor", "tensor " + n + " is missing", {{"tensor", n}});
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

bool startsWith(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool endsWith(const std::string& s, std::string_view x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// HF source names of one MLC tensor ("" module suffix handled by the caller).
std::vector<std::string> hfSources(const std::string& mlc) {
  auto replaceTail = [&](std::string_view tail, std::vector<std::string_view> parts, std::string_view suffix) {
    std::string base = mlc.substr(0, mlc.size() - tail.size());
    std::vector<std::string> v;
    for (auto p : parts) v.push_back(base + std::string(p) + std::string(suffix));
    return v;
  };
  for (std::string_view suffix : {".weight", ".bias"}) {
    for (std::string_view fused : {"qkv_proj", "c_attn"})
      if (endsWith(mlc, std::string(fused) + std::string(suffix)))
        return replaceTail(std::string(fused) + std::string(suffix), {"q_proj", "k_proj", "v_proj"}, suffix);
    if (endsWith(mlc, "gate_up_proj" + std::string(suffix)))
      return replaceTail("gate_up_proj" + std::string(suffix), {"gate_proj", "up_proj"}, suffix);
  }
  if (endsWith(mlc, "linear_attn.conv1d_weight")) return replaceTail("conv1d_weight", {"conv1d.weight"}, "");
  return {mlc};
}

// Qwen3.5 norms used as (1 + w): the converter stores w + 1 (mlc-format.md §3.4).
bool isOffsetNorm(const ModelConfig& c, const std::string& name) {
  if (c.arch != Arch::kQwen3_5) return false;
  return endsWith(name, "input_layernorm.weight") || endsWith(name, "post_attention_layernorm.weight") ||
         name == "model.norm.weight" || endsWith(name, "self_attn.q_norm.weight") ||
         endsWith(name, "self_attn.k_norm.weight");
}

}  // namespace

static Result<ModelConfig> modelConfigFromHfUnchecked(const json& hfIn, Quant quant) {
  if (!hfIn.is_object()) return hfError("config.json", "bad_json", "is not a JSON object");
  if (!otherDecoderModelType(hfIn).empty()) {  // gemma, phi, stablelm, ...: hf_convert_archs.h
    auto j = otherDecoderChatConfig(hfIn, quant);
    if (!j.ok()) return std::move(j).error();
    return parseModelConfig(*j, "config.json");
  }
  json hf = textConfig(hfIn);
  json mc = json::object();
  for (const char* k :
       {"hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads",
        "head_dim", "rms_norm_eps", "vocab_size", "tie_word_embeddings", "attention_bias", "rope_theta", "rope_scaling",
        "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads",
        "linear_conv_kernel_dim", "full_attention_interval", "partial_rotary_factor"})
    copyIfPresent(hf, mc, k);
  if (hf.contains("rope_parameters") && hf["rope_parameters"].is_object()) {
    // transformers 5 writes rope_theta, partial rotary and the scaling (e.g. Llama 3's) in one rope_parameters
    // object; a top-level rope_scaling (transformers 4) takes precedence.
    const json& rp = hf["rope_parameters"];
    copyIfPresent(rp, mc, "rope_theta");
    copyIfPresent(rp, mc, "partial_rotary_factor");
    if (!mc.contains("rope_scaling") && rp.value("rope_type", std::string("default")) != "default") {
      json rs = json::object();
      for (const char* k : {"rope_type", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
        copyIfPresent(rp, rs, k);
      mc["rope_scaling"] = rs;
    }
  }
  if (hf.contains("layer_types") && hf["layer_types"].is_array()) {
    auto interval = intervalFromLayerTypes(hf["layer_types"]);
    if (!interval.ok()) return std::move(interval).error();
    mc["full_attention_interval"] = *interval;
  }
  std::string type = hf.value("model_type", "");
  int context = hf.value("max_position_embeddings", 4096);
  json j = {{"model_type", type == "qwen3_5_text" ? "qwen3_5" : type},
            {"quantization", quantName(quant)},
            {"model_config", mc},
            {"context_window_size", context},
            {"prefill_chunk_size", std::min(context, 2048)}};
  if (type == "mistral" && hf.contains("sliding_window") && hf["sliding_window"].is_number_integer()) {
    j["sliding_window_size"] = hf["sliding_window"];
    j["context_window_size"] = -1;
  }
  return parseModelConfig(j, "config.json");
}

Result<ModelConfig> modelConfigFromHf(const json& hf, Quant quant) {
  try {  // json accessors throw on unexpected types: report them as a bad config
    return modelConfigFromHfUnchecked(hf, quant);
  } catch (const json::exception& e) {
    return hfError("config.json", "wrong_type", std::string("unexpected value: ") + e.what());
  }
}

Result<WeightMap> mlcWeightsFromHf(const ModelConfig& c, const std::map<std::string, std::vector<float>>& hfIn) {
  if (isOtherDecoderType(c.model_type)) return otherDecoderWeights(c, hfIn);
  std::map<std::string, std::vector<float>> hf;  // names with the "model." prefix of a text model
  for (const auto& [name, v] : hfIn) {
    if (startsWith(name, "model.visual.") || startsWith(name, "mtp.") || endsWith(name, "rotary_emb.inv_freq"))
      continue;
    if (startsWith(name, "model.language_model."))
      hf["model." + name.substr(21)] = v;
    else
      hf[name] = v;
  }
  WeightMap out;
  for (const ParamSpec& p : expectedParams(c)) {
    if (p.kind == ParamKind::kQScale) continue;
    bool matrix = p.kind == ParamKind::kQWeight || p.kind == ParamKind::kWeight;
    std::string name = matrix ? p.module + ".weight" : p.name;
    auto v = concatRows(hf, hfSources(name));
    if (!v.ok()) return std::move(v).error();
    if (isOffsetNorm(c, name))
      for (float& x : *v) x += 1.0f;
    out[name] = std::move(v).value();
  }
  return out;
}

Status convertHfFolder(const std::string& hf_dir, const std::string& out_dir, Quant quant,
                       const std::string& tokenizer_json_path) {
  std::ifstream in(hf_dir + "/config.json", std::ios::binary);
  if (!in) return hfError("config.json", "missing", "config.json is missing");
  std::stringstream ss;
  ss << in.rdbuf();
  json hf = json::parse(ss.str(), nullptr, false);
  if (hf.is_discarded()) return hfError("config.json", "bad_json", "is not valid JSON");
  auto cfg = modelConfigFromHf(hf, quant);
  if (!cfg.ok()) return std::move(cfg).error();
  // One model.safetensors, or the files named by model.safetensors.index.json.
  std::set<std::string> files;
  std::ifstream idx(hf_dir + "/model.safetensors.index.json", std::ios::binary);
  if (idx) {
    std::stringstream is;
    is << idx.rdbuf();
    json ij = json::parse(is.str(), nullptr, false);
    if (ij.is_discarded() || !ij.contains("weight_map") || !ij["weight_map"].is_object())
      return hfError("model.safetensors.index.json", "bad_json", "has no weight_map");
    for (const auto& f : ij["weight_map"])
      if (f.is_string()) files.insert(f.get<std::string>());
  } else {
    files.insert("model.safetensors");
  }
  std::map<std::string, std::vector<float>> tensors;
  for (const std::string& f : files) {
    auto t = readSafetensorsF32(hf_dir + "/" + f);
    if (!t.ok()) return std::move(t).error();
    tensors.merge(*t);
  }
  auto weights = mlcWeightsFromHf(*cfg, tensors);
  if (!weights.ok()) return std::move(weights).error();
  auto written = writeMlcFolder(out_dir, *cfg, *weights, quant, tokenizer_json_path);
  if (!written.ok() || !isOtherDecoderType(cfg->model_type)) return written;
  return writeMlcModelConfig(out_dir, cfg->raw["model_config"]);  // MLC's own field set for these
}

}  // namespace ewgpu
