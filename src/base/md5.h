// MD5 (RFC 1321), streaming. Used to check shards against tensor-cache.json's md5sum; not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ewgpu {

class Md5 {
 public:
  Md5();
  void update(const void* data, size_t size);
  std::string hexDigest();  // finalises; lowercase hex, 32 chars. Call once.

 private:
  void block(const uint8_t* p);  // one 64-byte block
  uint32_t h_[4];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

std::string md5Hex(std::span<const uint8_t> data);

}  // namespace ewgpu
