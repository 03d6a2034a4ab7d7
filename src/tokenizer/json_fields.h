// Typed reads of the optional fields of tokenizer.json objects. A field of the wrong type is an error naming it
// by its path in the file ("model.byte_fallback", "pre_tokenizer.pretokenizers[1].pattern"): detail {field,
// problem: "wrong_type" | "bad_value"}. Tokenizer::fromJson turns these into INVALID_MODEL_FOLDER {file, field,
// problem}. Nothing here throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"

namespace ewgpu::tokjson {

inline Error fieldError(const std::string& field, const std::string& problem, const std::string& what) {
  return makeError(ErrorCode::kBadRequest, field + " " + what, {{"field", field}, {"problem", problem}});
}

inline std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
inline std::string index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// obj[key] when present and not null; nullptr otherwise (also when obj is not an object).
inline const nlohmann::json* find(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

inline Result<bool> optBool(const nlohmann::json& obj, const char* key, bool def, const std::string& path) {
  const nlohmann::json* v = find(obj, key);
  if (!v) return def;
  if (!v->is_boolean()) return fieldError(join(path, key), "wrong_type", "is not a boolean");
  return v->get<bool>();
}

inline Result<std::string> optString(const nlohmann::json& obj, const char* key, std::string def,
                                     const std::string& path) {
  const nlohmann::json* v = find(obj, key);
  if (!v) return def;
  if (!v->is_string()) return fieldError(join(path, key), "wrong_type", "is not a string");
  return v->get<std::string>();
}

// An integer in [lo, hi].
inline Result<int64_t> optInt(const nlohmann::json& obj, const char* key, int64_t def, int64_t lo, int64_t hi,
                              const std::string& path) {
  const nlohmann::json* v = find(obj, key);
  if (!v) return def;
  if (!v->is_number_integer()) return fieldError(join(path, key), "wrong_type", "is not an integer");
  const bool negative = !v->is_number_unsigned() && v->get<int64_t>() < 0;
  if (negative ? v->get<int64_t>() < lo : v->get<uint64_t>() > (uint64_t)hi || (int64_t)v->get<uint64_t>() < lo)
    return fieldError(join(path, key), "bad_value",
                      "is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return negative ? v->get<int64_t>() : (int64_t)v->get<uint64_t>();
}

// An array (empty when absent).
inline Result<const nlohmann::json*> optArray(const nlohmann::json& obj, const char* key, const std::string& path) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json* v = find(obj, key);
  if (!v) return &kEmpty;
  if (!v->is_array()) return fieldError(join(path, key), "wrong_type", "is not an array");
  return v;
}

}  // namespace ewgpu::tokjson
