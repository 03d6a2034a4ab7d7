// Host side of src/kernels/attention_cpu.wgsl: the attention of CPU adapters (SwiftShader), attention.wgsl's fused
// decode (q/k norm, RoPE, KV store, paged KV) and its prefill as plain loops with no barriers, one invocation per
// query head, one pipeline for both passes. It takes attention.wgsl's bindings; Forward builds it in place of both
// attention pipelines where attentionCpuServes() holds (grid z: 1 decode, 2 prefill). GPUs never take it.
#pragma once

#include <cstdint>

#include "gpu/device_info.h"

namespace ewgpu::kernels {

// Query heads per workgroup of attention_cpu.wgsl (its HG): the grid is (ceil(HQ / 4), rows or tokens, 1 or 2).
inline constexpr uint32_t kAttentionCpuHeads = 4;

// A CPU adapter and one position range per head (SPLIT 1: attention_cpu does not write flash-decoding partials).
// EWGPU_ATTN_CPU=0 turns it off (A/B runs against attention.wgsl).
bool attentionCpuServes(const DeviceInfo& d, uint32_t split);

}  // namespace ewgpu::kernels
