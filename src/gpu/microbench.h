// The seed's WebGPU micro-benchmarks, natively: idle submit+wait latency, streaming-read bandwidth swept over
// workgroup counts (vec4 loads), GPU cost per dependent dispatch inside one pass and with one pass per dispatch,
// and CPU encode cost per dispatch. `ewgpu bench gpu` prints them; `ewgpu bench decode` uses the bandwidth and
// the dispatch cost to compute its floor.
#pragma once

#include "gpu/context.h"

#include <string>
#include <vector>

namespace ewgpu::gpu {

struct MicrobenchOptions {
  uint64_t read_bytes = 0;              // 0: 1 GiB (64 MiB on CPU adapters), capped at the max binding size
  std::vector<uint32_t> workgroups;     // empty: a default sweep
  uint32_t dispatches = 2000;           // per dispatch-cost measurement
  uint32_t repeats = 5;                 // median of this many runs
};

struct BandwidthPoint {
  uint32_t workgroups = 0;
  double gpu_ms = 0;       // timestamps (0 when unavailable)
  double wall_ms = 0;      // submit..done on the CPU clock
  double gbps = 0;         // bytes / best of the two times (GPU if available)
};

struct MicrobenchResult {
  double submit_wait_us = 0;             // idle submit + wait for completion, median
  std::vector<BandwidthPoint> bandwidth;
  double best_gbps = 0;
  double dispatch_in_pass_us = 0;        // GPU time per dependent dispatch inside one pass
  double dispatch_pass_each_us = 0;      // GPU time per dispatch when each has its own pass
  double encode_us = 0;                  // CPU time to encode one dispatch (setPipeline+setBindGroup+dispatch)
  bool timestamps = false;
  uint64_t read_bytes = 0;
  nlohmann::json toJson() const;
};

Result<MicrobenchResult> runMicrobench(Context& ctx, const MicrobenchOptions& opts = {});

// Host-to-GPU upload of `bytes` from hot host memory into storage buffers of 64 MiB, from the first API call to
// the GPU having taken the copies (Context::finish), by method: queue writes in 8 MiB and 1 MiB pieces (a model
// load's path before 2026-12-03), buffers mapped at creation filled by 1 and by `threads` host threads, and
// gpu/upload.h's ring of four 16 MiB map-write staging buffers filled by 1, 4 and `threads` threads. Run twice each, the second run reported (the first
// pays one-time costs: Dawn's allocators, the driver's).
struct UploadPoint {
  std::string method;
  double ms = 0;
  double gbps = 0;
};
Result<std::vector<UploadPoint>> runUploadBench(Context& ctx, uint64_t bytes, uint32_t threads);

}  // namespace ewgpu::gpu
