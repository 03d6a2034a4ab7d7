// An opened, validated MLC model folder: config, manifest, lazily mapped shards, and typed weight access for
// the CPU reference and GPU upload. open() validates the whole folder (config fields, manifest, shard sizes via
// stat, every tensor the architecture needs with its shape and dtype, tokenizer.json) in milliseconds without
// reading shard contents; md5 checking is separate (verifyChecksums).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/expected_params.h"
#include "model/model_config.h"
#include "model/tensor_cache.h"

namespace ewgpu {

class ModelFolder {
 public:
  // INVALID_MODEL_FOLDER with detail {"file", "problem", "tensor"?, "field"?, ...} on the first problem found.
  static Result<ModelFolder> open(const std::string& dir);

  ModelFolder(ModelFolder&&) noexcept;
  ModelFolder& operator=(ModelFolder&&) noexcept;
  ModelFolder(const ModelFolder&) = delete;
  ModelFolder& operator=(const ModelFolder&) = delete;
  ~ModelFolder();

  // Reads every shard and compares its MD5 with the manifest's md5sum (shards without one are skipped).
  // INVALID_MODEL_FOLDER {file, problem:"md5_mismatch", expected, actual}.
  Status verifyChecksums() const;

  const ModelConfig& config() const { return config_; }
  const std::string& dir() const { return dir_; }
  const TensorCache& cache() const { return cache_; }
  const std::vector<TensorInfo>& tensors() const { return cache_.tensors; }
  const TensorInfo* find(std::string_view name) const;

  // The encoded bytes of a record, straight from the mapped shard (the shard is mapped on first use).
  Result<std::span<const uint8_t>> rawBytes(const TensorInfo& t) const;
  // Decoded bytes in the record's dtype: f32-to-bf16 float32 records expanded to 4-byte floats.
  Result<std::vector<uint8_t>> storageBytes(const TensorInfo& t) const;
  // out.size() encoded bytes of a record from `offset` into it. Natively a copy out of the mapped shard; in the
  // browser build a read of just that range (shards there are Blobs behind WORKERFS: mapping one would copy the
  // whole shard into the wasm heap), so a caller that reads in bounded slices never holds more than a slice.
  Status readRange(const TensorInfo& t, uint64_t offset, std::span<uint8_t> out) const;

 private:
  ModelFolder() = default;
  struct Shards;  // lazily mapped shard files, guarded by a mutex

  std::string dir_;
  ModelConfig config_;
  TensorCache cache_;
  std::unordered_map<std::string, size_t> index_;  // name -> tensors() index
  std::unique_ptr<Shards> shards_;
};

// open() without keeping the result.
Status validateModelFolder(const std::string& dir);

// How the dequantized product (q - max_int) * scale is rounded (mlc-format.md §2.3).
enum class DequantRounding {
  kExact,       // exact f32 product (what an engine computing in f32 sees; default)
  kModelDType,  // rounded to the model dtype (f16 for q4f16_1/q3f16_1), as MLC's compiled kernels do
};

// The logical weight of a linear/embedding module as row-major f32 [rows, cols]: resolves <module>.q_weight +
// .q_scale (NK layout, group padding ignored) or <module>.weight. rows/cols must match the stored shapes.
Result<std::vector<float>> loadMatrixF32(const ModelFolder& f, std::string_view module, int rows, int cols,
                                         DequantRounding rounding = DequantRounding::kExact);
// Any tensor (norm, bias, A_log, dt_bias, conv1d_weight, a dense weight) flattened to f32, any dtype.
Result<std::vector<float>> loadVectorF32(const ModelFolder& f, std::string_view name);

}  // namespace ewgpu
