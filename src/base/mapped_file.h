// Read-only memory mapping of a whole file (model shards). Move-only; unmapped on destruction.
#pragma once

#include "base/error.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ewgpu {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // IO_ERROR with detail {path, errno} when the file cannot be opened or mapped.
  static Result<MappedFile> open(const std::string& path);

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace ewgpu
