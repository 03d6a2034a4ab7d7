// A directory of Dawn's cache blobs, so pipelines compiled in one run are reused by the next. Dawn asks for
// blobs by an opaque binary key (through WGPUDawnCacheDeviceDescriptor's load/store functions) and stores what
// it can reuse: the SPIR-V Tint generated for a shader with its override constants, and the Vulkan pipeline
// cache data the driver hands back. Each blob is one file, <dir>/<md5(key)>.blob, holding the whole key (checked
// on load, so an md5 collision reads as a miss) and the value; files are written to a temporary name and
// renamed, so a reader never sees half a blob and concurrent processes at worst both write the same blob.
// The directory is chosen by the caller per adapter and Dawn build (Context::create: cache_dir/pipelines/<key>),
// because a blob is only meaningful to the Dawn and driver that made it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ewgpu::gpu {

class PipelineDiskCache {
 public:
  explicit PipelineDiskCache(std::string dir) : dir_(std::move(dir)) {}

  // Dawn's callbacks (userdata = this). Safe to call from any thread; never throws; I/O errors read as misses
  // (load) or are dropped (store): a cache that cannot be written only costs the next run a recompile.
  static size_t load(const void* key, size_t key_size, void* value, size_t value_size, void* userdata);
  static void store(const void* key, size_t key_size, const void* value, size_t value_size, void* userdata);

  const std::string& dir() const { return dir_; }
  uint32_t hits() const { return hits_.load(); }
  uint32_t misses() const { return misses_.load(); }
  uint32_t stores() const { return stores_.load(); }

 private:
  std::string pathFor(const void* key, size_t key_size) const;

  std::string dir_;
  std::atomic<uint32_t> hits_{0}, misses_{0}, stores_{0};
};

// A file-name-safe key for the adapter and the Dawn build: "<vendor>-<device>-<driver description>-dawn<id>",
// where id is the size and modification time of the loaded Dawn library (a rebuilt or upgraded Dawn gets a
// fresh directory). Characters other than [A-Za-z0-9._-] become '_'.
std::string pipelineCacheKey(const std::string& vendor, const std::string& device, const std::string& description);

}  // namespace ewgpu::gpu
