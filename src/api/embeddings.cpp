// embeddings.create: request parsing and response building (see embeddings.h).
#include "api/embeddings.h"

#include <cstring>

namespace ewgpu {

namespace {
Error field(const std::string& f, const std::string& what, ErrorCode code = ErrorCode::kBadRequest) {
  return makeError(code, f + ": " + what, {{"field", f}});
}
}  // namespace

Result<std::string> embeddingModelField(const nlohmann::json& body) {
  if (!body.is_object()) return field("body", "the request must be a JSON object");
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return std::string();
  if (!it->is_string()) return field("model", "must be a string");
  return it->get<std::string>();
}

Result<EmbeddingRequest> prepareEmbeddings(const ModelAssets& a, const nlohmann::json& body) {
  EmbeddingRequest r;
  EWGPU_ASSIGN(r.model, embeddingModelField(body));
  if (!a.config.isEmbedding())
    return makeError(ErrorCode::kBadRequest,
                     "model: " + a.id + " is a chat model (" + a.config.model_type +
                         "), not an embedding model; use chat.completions",
                     {{"field", "model"}, {"model", a.id}, {"model_type", a.config.model_type}});
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    if (k == "input" || k == "model" || k == "user") continue;
    if (k == "encoding_format") {
      if (!it->is_null() && *it != "float" && *it != "base64") return field(k, "must be \"float\" or \"base64\"");
      r.base64 = *it == "base64";
    } else if (k == "dimensions") {
      if (!it->is_null() && (!it->is_number_integer() || it->get<int64_t>() != a.config.hidden))
        return field(k, "must be the model's width, " + std::to_string(a.config.hidden) + " (no truncation)");
    } else {
      return field(k, "is not a field of an embeddings request");
    }
  }
  if (body.contains("user") && !body["user"].is_null() && !body["user"].is_string()) return field("user", "must be a string");
  auto in = body.find("input");
  if (in == body.end() || in->is_null()) return field("input", "required (a string, strings, or token ids)");
  const uint32_t maxLen = (uint32_t)a.config.context_window;
  auto addTokens = [&](std::vector<int32_t> ids, const std::string& name) -> Status {
    if (ids.empty()) return field(name, "must not be empty");
    if (ids.size() > maxLen)
      return makeError(ErrorCode::kContextTooLong,
                       name + ": " + std::to_string(ids.size()) + " tokens, more than the model's " +
                           std::to_string(maxLen),
                       {{"field", name}, {"tokens", ids.size()}, {"context_window", maxLen}});
    r.prompt_tokens += ids.size();
    r.inputs.push_back(std::move(ids));
    return {};
  };
  auto text = [&](const nlohmann::json& s, const std::string& name) -> Status {
    if (s.get_ref<const std::string&>().empty()) return field(name, "must not be empty");
    return addTokens(a.tokenizer.encode(s.get<std::string>(), true), name);
  };
  auto tokenList = [&](const nlohmann::json& arr, const std::string& name) -> Status {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < arr.size(); ++i) {
      const auto& v = arr[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= a.config.vocab)
        return makeError(ErrorCode::kBadRequest,
                         name + ": token ids must be integers in [0, " + std::to_string(a.config.vocab) + ")",
                         {{"field", name}, {"index", i}, {"vocab_size", a.config.vocab}});
      ids.push_back((int32_t)v.get<int64_t>());
    }
    return addTokens(std::move(ids), name);
  };
  if (in->is_string()) {
    EWGPU_TRY(text(*in, "input"));
  } else if (in->is_array()) {
    if (in->empty()) return field("input", "must not be empty");
    if (in->size() > kMaxEmbeddingInputs && !(*in)[0].is_number())
      return field("input", "at most " + std::to_string(kMaxEmbeddingInputs) + " inputs per request");
    if ((*in)[0].is_number()) {
      EWGPU_TRY(tokenList(*in, "input"));
    } else {
      for (size_t i = 0; i < in->size(); ++i) {
        const std::string name = "input[" + std::to_string(i) + "]";
        const auto& v = (*in)[i];
        if (v.is_string())
          EWGPU_TRY(text(v, name));
        else if (v.is_array())
          EWGPU_TRY(tokenList(v, name));
        else
          return field(name, "must be a string or an array of token ids");
      }
    }
  } else {
    return field("input", "must be a string, an array of strings, or token ids");
  }
  return r;
}

// Standard base64 (RFC 4648, with padding) of the vector's little-endian float32 bytes.
std::string base64Floats(const std::vector<float>& v) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> b(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int k = 0; k < 4; ++k) b[i * 4 + k] = (uint8_t)(u >> (8 * k));
  }
  std::string out;
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t n = (uint32_t)b[i] << 16 | (i + 1 < b.size() ? (uint32_t)b[i + 1] << 8 : 0) |
                       (i + 2 < b.size() ? b[i + 2] : 0);
    out += abc[n >> 18 & 63];
    out += abc[n >> 12 & 63];
    out += i + 1 < b.size() ? abc[n >> 6 & 63] : '=';
    out += i + 2 < b.size() ? abc[n & 63] : '=';
  }
  return out;
}

nlohmann::json embeddingsResponse(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                  uint64_t prompt_tokens, bool base64) {
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", base64 ? nlohmann::json(base64Floats(vectors[i])) : nlohmann::json(vectors[i])}});
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace ewgpu
