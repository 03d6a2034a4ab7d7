// A file embedded in the binary at build time (cmake/embed_binary.cmake): its name, md5 and bytes.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace ewgpu {

struct EmbeddedFile {
  std::string_view name;  // file name inside the embedded folder
  std::string_view md5;   // lowercase hex of the bytes, computed when the file was embedded
  const unsigned char* data;
  size_t size;
  std::span<const unsigned char> bytes() const { return {data, size}; }
};

}  // namespace ewgpu
