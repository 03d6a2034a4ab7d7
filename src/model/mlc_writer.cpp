// writeMlcFolder: logical f32 weights -> a complete MLC folder (mlc-format.md §1-3), plus the shared
// pieces declared in mlc_writer.h.
#include "model/mlc_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/half.h"
#include "model/quantize.h"

namespace ewgpu {

namespace {

using json = nlohmann::json;

Result<json> readJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(ErrorCode::kIo, "cannot read " + path, {{"path", path}});
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return makeError(ErrorCode::kBadRequest, path + " is not valid JSON", {{"path", path}});
  return j;
}

Status writeTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return makeError(ErrorCode::kIo, "cannot write " + path, {{"path", path}});
  return {};
}

// True when `node` (or a member of a Sequence) has type `type` and, if given, matches `extra`.
bool hasComponent(const json& node, const std::string& type, const json& extra = json::object()) {
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) return false;
  const std::string nodeType = node["type"].get<std::string>();
  if (nodeType == "Sequence") {
    for (const char* key : {"decoders", "normalizers", "pretokenizers"})
      if (node.contains(key) && node[key].is_array())
        for (const auto& m : node[key])
          if (hasComponent(m, type, extra)) return true;
    return false;
  }
  if (nodeType != type) return false;
  for (auto it = extra.begin(); it != extra.end(); ++it)
    if (!node.contains(it.key()) || node[it.key()] != it.value()) return false;
  return true;
}

Status writeMatrix(ShardWriter& w, const ModelConfig& c, const ParamSpec& qw, const ParamSpec* qs,
                   const std::vector<float>& m) {
  QuantSpec s = quantSpec(c.quant);
  if (!s.quantized) {
    EWGPU_TRY(w.begin(qw.name, qw.shape, qw.dtype, (uint64_t)m.size() * 2));
    EWGPU_TRY(writeFloatValues(w, qw.dtype, m.data(), m.size()));
    return w.end();
  }
  QuantizedMatrix q = quantizeMatrix(s, m.data(), qw.rows, qw.cols);
  EWGPU_TRY(w.begin(qw.name, qw.shape, DType::kU32, q.q_weight.size() * 4));
  EWGPU_TRY(w.write(q.q_weight.data(), q.q_weight.size() * 4));  // little-endian host
  EWGPU_TRY(w.end());
  EWGPU_TRY(w.begin(qs->name, qs->shape, qs->dtype, q.q_scale.size() * 2));
  EWGPU_TRY(writeFloatValues(w, qs->dtype, q.q_scale.data(), q.q_scale.size()));
  return w.end();
}

}  // namespace

Result<TokenizerFacts> readTokenizerFacts(const std::string& path) {
  auto j = readJsonFile(path);
  if (!j.ok()) return std::move(j).error();
  TokenizerFacts t;
  int maxId = -1;
  if (!j->is_object()) return makeError(ErrorCode::kBadRequest, path + " is not a tokenizer.json", {{"path", path}});
  const json model = j->value("model", json::object());
  const json vocab = model.is_object() ? model.value("vocab", json()) : json();
  if (vocab.is_object())
    for (auto it = vocab.begin(); it != vocab.end(); ++it)
      if (it.value().is_number_integer()) maxId = std::max(maxId, it.value().get<int>());
  if (j->contains("added_tokens") && (*j)["added_tokens"].is_array())
    for (const auto& a : (*j)["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        continue;
      int id = a["id"].get<int>();
      maxId = std::max(maxId, id);
      t.added[a["content"].get<std::string>()] = id;
    }
  if (maxId < 0) return makeError(ErrorCode::kBadRequest, path + " defines no tokens", {{"path", path}});
  t.vocab = maxId + 1;
  const json& dec = j->value("decoder", json());
  const json& norm = j->value("normalizer", json());
  t.info = {{"token_postproc_method", hasComponent(dec, "ByteLevel") ? "byte_level" : "byte_fallback"},
            {"prepend_space_in_encode", hasComponent(norm, "Prepend", {{"prepend", "\xe2\x96\x81"}})},
            {"strip_space_in_decode", hasComponent(dec, "Strip", {{"content", " "}, {"start", 1}, {"stop", 0}})}};
  return t;
}

Result<int> tokenizerVocabSize(const std::string& path) {
  auto t = readTokenizerFacts(path);
  if (!t.ok()) return std::move(t).error();
  return t->vocab;
}

ModelConfig finalizeWriterConfig(ModelConfig c, const TokenizerFacts& tok) {
  if (c.model_type.empty()) c.model_type = std::string(archName(c.arch));
  if (c.active_vocab <= 0) c.active_vocab = std::min(c.vocab, tok.vocab);
  if (c.conv_template.is_null()) c.conv_template = convTemplatePreset(defaultConvTemplateName(c.arch));
  json& t = c.conv_template;
  if (t.is_object()) {
    // The preset ids are those of the family's real tokenizer; use the ids of this tokenizer instead, and none
    // where it lacks the token (a byte-level test tokenizer has no special tokens: an id of the real family's
    // vocabulary would lie outside this model's, which the loader rejects).
    // A preset id this tokenizer holds as an added token stays too (gemma's <bos> 2 and <eos> 1).
    auto added = [&](const json& id) {
      for (const auto& [text, v] : tok.added)
        if (id == v) return true;
      return false;
    };
    json ids = json::array();
    auto push = [&](const json& id) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    };
    for (const auto& s : t.value("stop_str", json::array())) {
      auto it = s.is_string() ? tok.added.find(s.get<std::string>()) : tok.added.end();
      if (it != tok.added.end()) push(it->second);
    }
    for (const auto& id : t.value("stop_token_ids", json::array()))
      if (added(id)) push(id);
    t["stop_token_ids"] = ids;
    if (t.value("system_prefix_token_ids", json()).is_array()) {
      json prefix = json::array();
      for (const auto& id : t["system_prefix_token_ids"])
        if (added(id)) prefix.push_back(id);
      auto it = tok.added.find("<|begin_of_text|>");
      if (prefix.empty() && it != tok.added.end()) prefix.push_back(it->second);
      t["system_prefix_token_ids"] = prefix;
    }
  }
  if (c.tokenizer_info.is_null() || c.tokenizer_info.empty()) c.tokenizer_info = tok.info;
  c.tokenizer_files = {"tokenizer.json"};
  return c;
}

Status writeFloatValues(ShardWriter& w, DType dtype, const float* values, size_t n) {
  std::vector<uint16_t> buf(std::min<size_t>(n, 1 << 16));
  for (size_t i = 0; i < n; i += buf.size()) {
    size_t m = std::min(buf.size(), n - i);
    for (size_t k = 0; k < m; ++k)
      buf[k] = dtype == DType::kF16 ? floatToHalf(values[i + k]) : floatToBf16(values[i + k]);
    EWGPU_TRY(w.write(buf.data(), m * 2));
  }
  return {};
}

Status makeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return makeError(ErrorCode::kIo, "cannot create " + dir + ": " + ec.message(), {{"path", dir}});
  return {};
}

Status finishMlcFolder(const std::string& out_dir, const ModelConfig& c, ShardWriter& w,
                       const std::string& tokenizer_json_path) {
  int64_t paramBytes = 0, count = 0;
  for (const ParamSpec& p : expectedParams(c)) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    paramBytes += n * dtypeSize(p.dtype);
    ++count;
  }
  json meta = {{"ParamSize", count},
               {"ParamBytes", (double)paramBytes},
               {"BitsPerParam", 8.0 * (double)paramBytes / (double)parameterCount(c)}};
  auto manifest = w.finish(meta);
  if (!manifest.ok()) return std::move(manifest).error();
  EWGPU_TRY(writeTextFile(out_dir + "/tensor-cache.json", manifest->dump(4)));
  EWGPU_TRY(writeTextFile(out_dir + "/mlc-chat-config.json", mlcChatConfigJson(c).dump(2)));
  std::error_code ec;
  std::filesystem::copy_file(tokenizer_json_path, out_dir + "/tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return makeError(ErrorCode::kIo, "cannot copy " + tokenizer_json_path + ": " + ec.message(),
                     {{"path", tokenizer_json_path}});
  return {};
}

Status writeMlcFolder(const std::string& out_dir, const ModelConfig& cfg, const WeightMap& weights, Quant quant,
                      const std::string& tokenizer_json_path) {
  auto tok = readTokenizerFacts(tokenizer_json_path);
  if (!tok.ok()) return std::move(tok).error();
  ModelConfig c = cfg;
  c.quant = quant;
  c = finalizeWriterConfig(std::move(c), *tok);
  EWGPU_TRY(makeDirs(out_dir));
  ShardWriter w(out_dir);
  std::vector<ParamSpec> specs = expectedParams(c);
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamSpec& p = specs[i];
    if (p.kind == ParamKind::kQScale) continue;  // written with its q_weight
    bool matrix = p.kind == ParamKind::kQWeight || p.kind == ParamKind::kWeight;
    std::string key = matrix ? p.module + ".weight" : p.name;
    auto it = weights.find(key);
    if (it == weights.end())
      return makeError(ErrorCode::kInvalidModelFolder, "no weight for " + key,
                       {{"problem", "missing_weight"}, {"tensor", key}});
    if ((int64_t)it->second.size() != p.rows * p.cols)
      return makeError(
          ErrorCode::kInvalidModelFolder, key + " has the wrong number of values",
          {{"problem", "wrong_size"}, {"tensor", key}, {"expected", p.rows * p.cols}, {"actual", it->second.size()}});
    if (matrix) {
      EWGPU_TRY(writeMatrix(w, c, p, p.kind == ParamKind::kQWeight ? &specs[i + 1] : nullptr, it->second));
    } else {
      EWGPU_TRY(w.begin(p.name, p.shape, p.dtype, it->second.size() * 2));
      EWGPU_TRY(writeFloatValues(w, p.dtype, it->second.data(), it->second.size()));
      EWGPU_TRY(w.end());
    }
  }
  return finishMlcFolder(out_dir, c, w, tokenizer_json_path);
}

}  // namespace ewgpu
