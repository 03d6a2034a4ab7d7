// Host side of src/kernels/attention_cpu.wgsl: the decode attention of CPU adapters (SwiftShader), attention.wgsl's
// fused decode (q/k norm, RoPE, KV store, paged KV) as plain loops with no barriers, one invocation per query head.
// It takes attention.wgsl's bindings; Forward builds it in place of the decode attention pipeline where
// attentionCpuServes() holds. GPUs never take it.
#pragma once

#include <cstdint>

#include "gpu/device_info.h"

namespace ewgpu::kernels {

// Query heads per workgroup of attention_cpu.wgsl (its HG): the grid is (ceil(HQ / 4), rows).
inline constexpr uint32_t kAttentionCpuHeads = 4;

// A CPU adapter and one position range per head (SPLIT 1: attention_cpu does not write flash-decoding partials).
// EWGPU_ATTN_CPU=0 turns it off (A/B runs against attention.wgsl).
bool attentionCpuServes(const DeviceInfo& d, uint32_t split);

}  // namespace ewgpu::kernels
