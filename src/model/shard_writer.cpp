// ShardWriter: see shard_writer.h. Shard numbers are assigned when a shard file is opened (the MLC writer
// numbers at flush time, so a big tensor's shard may get a different number there; readers never rely on it).
#include "model/shard_writer.h"

#include <cerrno>
#include <cstring>
#include <map>

#include "base/md5.h"

namespace ewgpu {

struct ShardWriter::Open {
  int index = 0;
  std::string path;
  FILE* file = nullptr;
  uint64_t size = 0;
  Md5 md5;
  nlohmann::json records = nlohmann::json::array();
};

namespace {
Error ioError(const std::string& path, const std::string& what) {
  int e = errno;
  return makeError(ErrorCode::kIo, what + " " + path + ": " + std::strerror(e), {{"path", path}, {"errno", e}});
}
}  // namespace

ShardWriter::ShardWriter(std::string dir, uint64_t cap) : dir_(std::move(dir)), cap_(cap) {}

ShardWriter::~ShardWriter() {
  for (auto* s : {pending_.get(), alone_.get()})
    if (s && s->file) std::fclose(s->file);
}

Status ShardWriter::openShard(std::unique_ptr<Open>& slot) {
  slot = std::make_unique<Open>();
  slot->index = next_index_++;
  slot->path = dir_ + "/params_shard_" + std::to_string(slot->index) + ".bin";
  slot->file = std::fopen(slot->path.c_str(), "wb");
  if (!slot->file) return ioError(slot->path, "cannot create");
  return {};
}

Status ShardWriter::closeShard(std::unique_ptr<Open>& slot) {
  if (!slot) return {};
  int rc = std::fclose(slot->file);
  slot->file = nullptr;
  if (rc != 0) return ioError(slot->path, "cannot write");
  nlohmann::json s = {{"dataPath", "params_shard_" + std::to_string(slot->index) + ".bin"},
                      {"format", "raw-shard"},
                      {"nbytes", slot->size},
                      {"records", slot->records},
                      {"md5sum", slot->md5.hexDigest()}};
  if ((size_t)slot->index >= shards_.size()) shards_.resize(slot->index + 1);
  shards_[slot->index] = std::move(s);
  slot.reset();
  return {};
}

Status ShardWriter::begin(const std::string& name, const std::vector<int64_t>& shape, DType dtype, uint64_t nbytes) {
  if (current_) return makeError(ErrorCode::kInternal, "ShardWriter::begin inside a record", {{"tensor", name}});
  uint64_t pendingBytes = pending_ ? pending_->size : 0;
  if (pendingBytes + nbytes >= cap_) {
    if (2 * nbytes >= cap_) {
      EWGPU_TRY(openShard(alone_));
      current_ = alone_.get();
    } else {
      EWGPU_TRY(closeShard(pending_));
    }
  }
  if (!current_) {
    if (!pending_) EWGPU_TRY(openShard(pending_));
    current_ = pending_.get();
  }
  current_->records.push_back({{"name", name},
                               {"shape", shape},
                               {"dtype", dtypeName(dtype)},
                               {"format", "f32-to-bf16"},
                               {"nbytes", nbytes},
                               {"byteOffset", current_->size}});
  remaining_ = nbytes;
  return {};
}

Status ShardWriter::write(const void* data, size_t n) {
  if (!current_ || n > remaining_) return makeError(ErrorCode::kInternal, "ShardWriter::write past the record");
  if (n && std::fwrite(data, 1, n, current_->file) != n) return ioError(current_->path, "cannot write");
  current_->md5.update(data, n);
  current_->size += n;
  remaining_ -= n;
  return {};
}

Status ShardWriter::end() {
  if (!current_ || remaining_ != 0) return makeError(ErrorCode::kInternal, "ShardWriter::end of an incomplete record");
  bool wasAlone = current_ == alone_.get();
  current_ = nullptr;
  if (wasAlone) EWGPU_TRY(closeShard(alone_));
  return {};
}

Result<nlohmann::json> ShardWriter::finish(nlohmann::json metadata) {
  if (current_) return makeError(ErrorCode::kInternal, "ShardWriter::finish inside a record");
  EWGPU_TRY(closeShard(pending_));
  return nlohmann::json{{"metadata", std::move(metadata)}, {"records", shards_}};
}

}  // namespace ewgpu
