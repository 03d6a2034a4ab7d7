#include "gpu/pipeline_cache.h"

#include "base/md5.h"
#include "gpu/webgpu_abi.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <thread>
#include <vector>

namespace ewgpu::gpu {

namespace {

constexpr char kMagic[8] = {'e', 'w', 'g', 'p', 'u', 'b', 'l', '1'};

// Reads a whole blob file; empty when absent, unreadable or not a blob of this key.
std::vector<char> readBlob(const std::string& path, const void* key, size_t key_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t head = sizeof kMagic + sizeof(uint64_t);
  if (bytes.size() < head || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return {};
  uint64_t stored_key = 0;
  std::memcpy(&stored_key, bytes.data() + sizeof kMagic, sizeof stored_key);
  if (stored_key != key_size || bytes.size() < head + key_size ||
      std::memcmp(bytes.data() + head, key, key_size) != 0)
    return {};
  bytes.erase(bytes.begin(), bytes.begin() + (std::ptrdiff_t)(head + key_size));
  return bytes;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out;
}

}  // namespace

std::string PipelineDiskCache::pathFor(const void* key, size_t key_size) const {
  return dir_ + "/" + md5Hex(std::span<const uint8_t>(static_cast<const uint8_t*>(key), key_size)) + ".blob";
}

size_t PipelineDiskCache::load(const void* key, size_t key_size, void* value, size_t value_size, void* userdata) {
  auto* self = static_cast<PipelineDiskCache*>(userdata);
  try {
    std::vector<char> v = readBlob(self->pathFor(key, key_size), key, key_size);
    if (v.empty()) {
      if (!value) self->misses_++;
      return 0;
    }
    if (value) {
      if (value_size != v.size()) return 0;
      std::memcpy(value, v.data(), v.size());
      self->hits_++;
    }
    return v.size();
  } catch (...) {
    return 0;
  }
}

void PipelineDiskCache::store(const void* key, size_t key_size, const void* value, size_t value_size,
                              void* userdata) {
  auto* self = static_cast<PipelineDiskCache*>(userdata);
  try {
    std::error_code ec;
    std::filesystem::create_directories(self->dir_, ec);
    const std::string path = self->pathFor(key, key_size);
    std::string tmp = path + ".tmp" + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) return;
      uint64_t ks = key_size;
      out.write(kMagic, sizeof kMagic);
      out.write(reinterpret_cast<const char*>(&ks), sizeof ks);
      out.write(static_cast<const char*>(key), (std::streamsize)key_size);
      out.write(static_cast<const char*>(value), (std::streamsize)value_size);
      if (!out) {
        out.close();
        std::filesystem::remove(tmp, ec);
        return;
      }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      return;
    }
    self->stores_++;
  } catch (...) {
  }
}

std::string pipelineCacheKey(const std::string& vendor, const std::string& device, const std::string& description) {
  std::string dawn = "unknown";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&wgpuCreateInstance), &info) && info.dli_fname) {
    struct stat st {};
    if (stat(info.dli_fname, &st) == 0)
      dawn = std::to_string((long long)st.st_size) + "." + std::to_string((long long)st.st_mtime);
  }
  return sanitize(vendor + "-" + device + "-" + description + "-dawn" + dawn);
}

}  // namespace ewgpu::gpu
