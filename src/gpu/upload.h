// Host-to-GPU copies of many byte ranges through a ring of map-write staging buffers (a model's weights, natively):
// host threads copy the ranges into a staging buffer, the GPU copies it into the destinations while the next one is
// filled, and each staging buffer is mapped again once its copies are done. On the H200 this moved 1 GiB at 5.9-6.0
// GB/s against 2.5-2.9 for queue writes and 3.4-3.8 for buffers mapped at creation filled by 8-16 threads
// (`ewgpu bench gpu --upload`, docs/measurements/h200-run26). All on the calling thread's API calls; the copying
// threads make none.
#pragma once

#include "gpu/context.h"

#include <cstdint>
#include <vector>

namespace ewgpu::gpu {

struct UploadRange {
  const uint8_t* src = nullptr;
  WGPUBuffer dst = nullptr;
  uint64_t dst_offset = 0;  // multiple of 4
  uint64_t size = 0;        // multiple of 4
};

struct RingOptions {
  uint64_t slot_bytes = 16ull << 20;  // per staging buffer
  uint32_t slots = 4;
  uint32_t threads = 1;               // host threads filling a staging buffer (the caller's included)
};

// Host memory copies: `at` receives `n` bytes from `src`.
struct HostCopy {
  const uint8_t* src;
  uint8_t* at;
  size_t n;
};

// The copies done by `threads` threads (the caller's included), each taking the next piece of at most 1 MiB.
void copyPieces(const std::vector<HostCopy>& copies, uint32_t threads);

// Copies every range and submits the GPU copies; returns once the last staging buffer is mapped again (its copies
// done). Destinations need CopyDst usage. GPU_ERROR if a map fails.
Status uploadThroughRing(Context& ctx, const std::vector<UploadRange>& ranges, const RingOptions& o = {});

}  // namespace ewgpu::gpu
