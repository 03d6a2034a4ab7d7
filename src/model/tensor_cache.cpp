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

// A record field that is missing or of the wrong type: bad_record naming the tensor and the field.
Error recordFieldError(const std::string& file, const std::string& tensor, const std::string& field,
                       const std::string& what) {
  return cacheError(file, "bad_record", (tensor.empty() ? std::string("a record") : tensor) + ": " + field + " " + what,
                    {{"tensor", tensor}, {"field", "records[].records[]." + field}});
}

// Largest element count a record may declare: keeps numel * itemsize and every offset inside uint64.
constexpr uint64_t kMaxNumel = uint64_t(1) << 48;

Result<TensorInfo> parseRecord(const nlohmann::json& r, const std::string& file, int shard, uint64_t shardBytes,
                               const std::string& dataPath) {
  if (!r.is_object()) return recordFieldError(file, "", "entry", "is not an object");
  if (!r.contains("name") || !r["name"].is_string()) return recordFieldError(file, "", "name", "is missing or not a string");
  TensorInfo t;
  t.name = r["name"].get<std::string>();
  nlohmann::json who = {{"tensor", t.name}};
  if (!r.contains("shape") || !r["shape"].is_array())
    return recordFieldError(file, t.name, "shape", "is missing or not an array");
  uint64_t numel = 1;
  for (const auto& d : r["shape"]) {
    if (!isUint(d)) return recordFieldError(file, t.name, "shape", "holds a value that is not a non-negative integer");
    const uint64_t dim = d.get<uint64_t>();
    if (dim > kMaxNumel || (dim && numel > kMaxNumel / dim))
      return recordFieldError(file, t.name, "shape", "has more than 2^48 elements");
    numel *= dim;
    t.shape.push_back((int64_t)dim);
  }
  if (!r.contains("dtype") || !r["dtype"].is_string())
    return recordFieldError(file, t.name, "dtype", "is missing or not a string");
  auto dt = dtypeFromName(r["dtype"].get<std::string>());
  if (!dt) {
    who["dtype"] = r["dtype"];
    return cacheError(file, "unknown_dtype", t.name + " has unknown dtype " + r["dtype"].get<std::string>(), who);
  }
  t.dtype = *dt;
  t.format = "raw";
  if (auto it = r.find("format"); it != r.end() && !it->is_null()) {
    if (!it->is_string()) return recordFieldError(file, t.name, "format", "is not a string");
    t.format = it->get<std::string>();
  }
  if (t.format != "raw" && t.format != "f32-to-bf16") {
    who["format"] = t.format;
    return cacheError(file, "unknown_format", t.name + " has unknown format " + t.format, who);
  }
  t.f32_as_bf16 = t.format == "f32-to-bf16" && t.dtype == DType::kF32;
  for (const char* k : {"nbytes", "byteOffset"})
    if (!r.contains(k) || !isUint(r[k])) return recordFieldError(file, t.name, k, "is missing or not a non-negative integer");
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

// A shard entry's field that is missing or of the wrong type.
static Error shardFieldError(const std::string& file, const std::string& field, const std::string& what,
                      const std::string& shard = "") {
  nlohmann::json d = {{"field", "records[]." + field}};
  if (!shard.empty()) d["shard"] = shard;
  return cacheError(file, "bad_schema", (shard.empty() ? std::string("a shard entry") : shard) + ": " + field + " " + what,
                    d);
}

static Result<TensorCache> parseTensorCacheUnchecked(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) return cacheError(file, "bad_schema", "the document is not a JSON object", {{"field", ""}});
  if (!j.contains("records") || !j["records"].is_array())
    return cacheError(file, "bad_schema", "records is missing or not an array", {{"field", "records"}});
  TensorCache tc;
  tc.file = file;
  tc.metadata = nlohmann::json::object();
  if (auto it = j.find("metadata"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return cacheError(file, "bad_schema", "metadata is not an object", {{"field", "metadata"}});
    tc.metadata = *it;
  }
  std::unordered_map<std::string, int> seen;
  for (const auto& s : j["records"]) {
    if (!s.is_object()) return shardFieldError(file, "entry", "is not an object");
    if (!s.contains("dataPath") || !s["dataPath"].is_string())
      return shardFieldError(file, "dataPath", "is missing or not a string");
    ShardInfo sh;
    sh.data_path = s["dataPath"].get<std::string>();
    if (!s.contains("nbytes") || !isUint(s["nbytes"]))
      return shardFieldError(file, "nbytes", "is missing or not a non-negative integer", sh.data_path);
    if (!s.contains("records") || !s["records"].is_array())
      return shardFieldError(file, "records", "is missing or not an array", sh.data_path);
    sh.nbytes = s["nbytes"].get<uint64_t>();
    if (sh.data_path.empty() || sh.data_path.find("..") != std::string::npos || sh.data_path[0] == '/')
      return cacheError(file, "bad_schema", "shard path escapes the folder", {{"shard", sh.data_path}, {"field", "records[].dataPath"}});
    std::string fmt = "raw-shard";
    if (auto it = s.find("format"); it != s.end() && !it->is_null()) {
      if (!it->is_string()) return shardFieldError(file, "format", "is not a string", sh.data_path);
      fmt = it->get<std::string>();
    }
    if (fmt != "raw-shard")
      return cacheError(file, "unknown_format", "shard " + sh.data_path + " has format " + fmt,
                        {{"shard", sh.data_path}, {"format", fmt}});
    if (auto it = s.find("md5sum"); it != s.end() && !it->is_null()) {
      if (!it->is_string()) return shardFieldError(file, "md5sum", "is not a string", sh.data_path);
      sh.md5 = it->get<std::string>();
    }
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
