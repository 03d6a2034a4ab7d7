// tensor-cache.json (or legacy ndarray-cache.json): the weight manifest of an MLC folder (mlc-format.md §1.4,
// §1.6). Pure parsing + per-record consistency (dtype, format, nbytes vs shape); files are not touched here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace ewgpu {

enum class DType { kF16, kF32, kBF16, kU32, kI32, kU8, kI8 };

std::string_view dtypeName(DType d);  // TVM spelling: "float16", "float32", "bfloat16", "uint32", ...
std::optional<DType> dtypeFromName(std::string_view s);
int dtypeSize(DType d);  // bytes per element in memory

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // logical shape
  DType dtype = DType::kF32;
  bool f32_as_bf16 = false;  // format "f32-to-bf16" and dtype float32: stored as 2-byte bf16 words
  std::string format;        // "f32-to-bf16" or "raw" as written
  int shard = 0;             // index into TensorCache::shards
  uint64_t byte_offset = 0;  // inside the shard file
  uint64_t nbytes = 0;       // encoded bytes in the shard

  int64_t numel() const;
  uint64_t decodedBytes() const { return (uint64_t)numel() * (uint64_t)dtypeSize(dtype); }  // in memory
};

struct ShardInfo {
  std::string data_path;  // relative to the folder: params_shard_<N>.bin
  uint64_t nbytes = 0;    // exact file size
  std::string md5;        // lowercase hex, empty when the manifest has none
};

struct TensorCache {
  std::string file;  // "tensor-cache.json" or "ndarray-cache.json"
  std::vector<ShardInfo> shards;
  std::vector<TensorInfo> tensors;  // manifest order
  nlohmann::json metadata;
};

// Checks the schema, dtype/format names, nbytes == numel*itemsize (or 2*numel for f32-to-bf16 float32),
// byteOffset+nbytes <= shard nbytes, no overlapping records, no duplicate names.
// Errors: INVALID_MODEL_FOLDER {file, problem, tensor?, ...}.
Result<TensorCache> parseTensorCache(const nlohmann::json& j, const std::string& file);

}  // namespace ewgpu
