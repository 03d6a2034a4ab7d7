// Host side of src/kernels/linear_cpu.wgsl: the linear layers of a model on a CPU adapter (SwiftShader), decode
// GEMVs and prefill GEMMs alike, through one pipeline per weight format. The shapes and the epilogue of each
// layer go in a small uniform buffer instead of override constants, so the pipeline is compiled once per model
// rather than once per distinct (N, K, epilogue), which on SwiftShader is seconds each (docs/default-model.md,
// "Start-up on a CPU adapter"). GemvOp and GemmOp take this path by themselves where linearCpuServes() holds; GPUs
// never do.
#pragma once

#include "gpu/context.h"
#include "kernels/linear.h"

#include <vector>

namespace ewgpu::kernels {

// The CPU-adapter linear path serves this layer: a CPU adapter, q4 weights (q4f16_1, q4f32_1), K a multiple of 32,
// no bias with SwiGLU. EWGPU_LINEAR_CPU=0 turns it off (A/B runs against gemv.wgsl / gemm.wgsl).
bool linearCpuServes(const DeviceInfo& d, const LinearWeights& w, Epilogue epi);

struct LinearCpuPart {
  const gpu::Kernel* kernel = nullptr;
  gpu::BindGroup bg;
  gpu::Buffer params;  // the layer's uniform (shapes, epilogue)
  uint32_t gx = 1;     // workgroups along the output rows; along the tokens: ceil(tokens / kLinearCpuTokens)
};

inline constexpr uint32_t kLinearCpuTokens = 4;  // tokens per workgroup (linear_cpu.wgsl TT)

struct LinearCpuArgs {
  Epilogue epi = Epilogue::kStore;
  const gpu::Buffer* norm = nullptr;  // RMSNorm weight for the prologue (tokens must be 1)
  float eps = 1e-6f;
  uint32_t tokens = 1;                // fixed token count; 0: meta[0] (prefill)
  const gpu::Buffer* meta = nullptr;  // with tokens 0
  uint32_t x_stride = 0, y_stride = 0;  // floats per token (0: K and the output width)
};

// One part per weight chunk. GPU_ERROR when the pipeline fails; INTERNAL on a layer linearCpuServes() rejects.
Result<std::vector<LinearCpuPart>> createLinearCpu(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x,
                                                   const gpu::Buffer& y, const LinearCpuArgs& a);

}  // namespace ewgpu::kernels
