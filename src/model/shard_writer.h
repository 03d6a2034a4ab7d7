// Streaming writer of params_shard_N.bin files + the tensor-cache.json manifest, following the MLC writer's
// 32 MiB cap rule (mlc-format.md §1.5): a tensor that would push the pending shard to the cap goes alone
// into a new shard when it is at least half the cap, else the pending shard is closed first. Tensors are
// streamed (begin / write... / end) so GB-sized folders never sit in memory; shard MD5s are computed on the fly.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/tensor_cache.h"

namespace ewgpu {

class ShardWriter {
 public:
  static constexpr uint64_t kDefaultCap = 32ull << 20;  // 33,554,432 bytes

  explicit ShardWriter(std::string dir, uint64_t cap = kDefaultCap);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Starts a record of `nbytes` encoded bytes; format is "f32-to-bf16" on every record (as the MLC writer).
  Status begin(const std::string& name, const std::vector<int64_t>& shape, DType dtype, uint64_t nbytes);
  Status write(const void* data, size_t n);  // appends to the current record
  Status end();                              // the record must be complete
  // Closes the pending shard and returns the manifest {"metadata", "records"}; `metadata` is stored as given.
  Result<nlohmann::json> finish(nlohmann::json metadata);

 private:
  struct Open;  // one shard file being written
  Status openShard(std::unique_ptr<Open>& slot);
  Status closeShard(std::unique_ptr<Open>& slot);

  std::string dir_;
  uint64_t cap_;
  int next_index_ = 0;
  std::unique_ptr<Open> pending_;       // the shard small tensors are packed into
  std::unique_ptr<Open> alone_;         // a big tensor's own shard while it is written
  Open* current_ = nullptr;             // where write() goes
  uint64_t remaining_ = 0;              // bytes still expected for the current record
  std::vector<nlohmann::json> shards_;  // closed shards, in index order
};

}  // namespace ewgpu
