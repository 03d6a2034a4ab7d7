// tensor-cache.json parsing and per-record checks (mlc-format.md §1.4, §1.6).
#include "model/tensor_cache.h"

#include <algorithm>
#include <unordered_map>

namespace ewgpu {

namespace {

constexpr std::pair<DType, std::string_view> kDTypeNames[] = {
    {DType::kF16, "float16"}, {DType::kF32, "float32"}, {DType::kBF16, "bfloat16"}, {DType::kU32, "uint32"},
    {DType::kI32, "int32"},   {DType::kU8, "uint8"},    {DType::kI8, "int8"},
};

Error cacheError(const std::string& file, const std::string& problem, const std::string& msg,
                 nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json d = {{"file", file}, {"problem", problem}};
  d.update(extra);
  return makeError(ErrorCode::kInvalidModelFolder, file + ": " + msg, std::move(d));
}

bool isUint(const nlohmann::json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

Result<TensorInfo> parseRecord(const nlohmann::json& r, const std::string& file, int shard, uint64_t shardBytes,
                               const std::string& dataPath) {
  if (!r.is_object() || !r.contains("name") || !r["name"].is_string())
    return cacheError(file, "bad_record", "a record has no name");
  TensorInfo t;
  t.name = r["name"].get<std::string>();
  nlohmann::json who = {{"tensor", t.name}};
  if (!r.contains("shape") || !r["shape"].is_array())
    return cacheError(file, "bad_record", t.name + " has no shape", who);
  for (const auto& d : r["shape"]) {
    if (!isUint(d)) return cacheError(file, "bad_record", t.name + " has a bad shape", who);
    t.shape.push_back(d.get<int64_t>());
  }
  if (!r.contains("dtype") || !r["dtype"].is_string())
    return cacheError(file, "bad_record", t.name + " has no dtype", who);
  auto dt = dtypeFromName(r["dtype"].get<std::string>());
  if (!dt) {
    who["dtype"] = r["dtype"];
    return cacheError(file, "unknown_dtype", t.name + " has unknown dtype " + r["dtype"].get<std::string>(), who);
  }
  t.dtype = *dt;
  t.format = r.value("format", std::string("raw"));
  if (t.format != "raw" && t.format != "f32-to-bf16") {
    who["format"] = t.format;
    return cacheError(file, "unknown_format", t.name + " has unknown format " + t.format, who);
  }
  t.f32_as_bf16 = t.format == "f32-to-bf16" && t.dtype == DType::kF32;
  if (!r.contains("nbytes") || !isUint(r["nbytes"]) || !r.contains("byteOffset") || !isUint(r["byteOffset"]))
    return cacheError(file, "bad_record", t.name + " lacks nbytes/byteOffset", who);
  t.nbytes = r["nbytes"].get<uint64_t>();
  t.byte_offset = r["byteOffset"].get<uint64_t>();
  t.shard = shard;
  uint64_t expect = t.f32_as_bf16 ? 2ull * (uint64_t)t.numel() : t.decodedBytes();
  if (t.nbytes != expect)
    return cacheError(file, "nbytes_mismatch", t.name + ": nbytes disagrees with shape and dtype",
                      {{"tensor", t.name}, {"nbytes", t.nbytes}, {"expected", expect}});
  if (t.byte_offset > shardBytes || t.nbytes > shardBytes - t.byte_offset)
    return cacheError(
        dataPath, "outside_shard", t.name + " lies outside its shard",
        {{"tensor", t.name}, {"byteOffset", t.byte_offset}, {"nbytes", t.nbytes}, {"shard_nbytes", shardBytes}});
  return t;
}

// Records of one shard must not overlap (zero-size records are ignored).
Status checkOverlaps(const std::vector<TensorInfo>& all, size_t first, const std::string& dataPath) {
  std::vector<const TensorInfo*> v;
  for (size_t i = first; i < all.size(); ++i)
    if (all[i].nbytes) v.push_back(&all[i]);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->byte_offset < b->byte_offset; });
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i - 1]->byte_offset + v[i - 1]->nbytes > v[i]->byte_offset)
      return cacheError(dataPath, "overlapping_records", v[i]->name + " overlaps " + v[i - 1]->name,
                        {{"tensor", v[i]->name}, {"other", v[i - 1]->name}});
  return {};
}

}  // namespace

std::string_view dtypeName(DType d) {
  for (auto& [k, n] : kDTypeNames)
    if (k == d) return n;
  return "?";
}

std::optional<DType> dtypeFromName(std::string_view s) {
  for (auto& [k, n] : kDTypeNames)
    if (n == s) return k;
  return std::nullopt;
}

int dtypeSize(DType d) {
  switch (d) {
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF32:
    case DType::kU32:
    case DType::kI32:
      return 4;
    case DType::kU8:
    case DType::kI8:
      return 1;
  }
  return 1;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static Result<TensorCache> parseTensorCacheUnchecked(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || !j.contains("records") || !j["records"].is_array())
    return cacheError(file, "bad_schema", "no records array");
  TensorCache tc;
  tc.file = file;
  tc.metadata = j.value("metadata", nlohmann::json::object());
  std::unordered_map<std::string, int> seen;
  for (const auto& s : j["records"]) {
    if (!s.is_object() || !s.contains("dataPath") || !s["dataPath"].is_string() || !s.contains("nbytes") ||
        !isUint(s["nbytes"]) || !s.contains("records") || !s["records"].is_array())
      return cacheError(file, "bad_schema", "a shard entry lacks dataPath/nbytes/records");
    ShardInfo sh;
    sh.data_path = s["dataPath"].get<std::string>();
    sh.nbytes = s["nbytes"].get<uint64_t>();
    if (sh.data_path.empty() || sh.data_path.find("..") != std::string::npos || sh.data_path[0] == '/')
      return cacheError(file, "bad_schema", "shard path escapes the folder", {{"shard", sh.data_path}});
    std::string fmt = s.value("format", std::string("raw-shard"));
    if (fmt != "raw-shard")
      return cacheError(file, "unknown_format", "shard " + sh.data_path + " has format " + fmt,
                        {{"shard", sh.data_path}, {"format", fmt}});
    if (s.contains("md5sum") && s["md5sum"].is_string()) sh.md5 = s["md5sum"].get<std::string>();
    int shard = (int)tc.shards.size();
    size_t first = tc.tensors.size();
    for (const auto& r : s["records"]) {
      auto t = parseRecord(r, file, shard, sh.nbytes, sh.data_path);
      if (!t.ok()) return std::move(t).error();
      if (!seen.emplace(t->name, shard).second)
        return cacheError(file, "duplicate_tensor", t->name + " appears twice", {{"tensor", t->name}});
      tc.tensors.push_back(std::move(t).value());
    }
    EWGPU_TRY(checkOverlaps(tc.tensors, first, sh.data_path));
    tc.shards.push_back(std::move(sh));
  }
  return tc;
}

Result<TensorCache> parseTensorCache(const nlohmann::json& j, const std::string& file) {
  try {  // json accessors throw on unexpected types: report, never throw
    return parseTensorCacheUnchecked(j, file);
  } catch (const nlohmann::json::exception& e) {
    return cacheError(file, "bad_schema", std::string("value of unexpected type: ") + e.what());
  }
}

}  // namespace ewgpu
