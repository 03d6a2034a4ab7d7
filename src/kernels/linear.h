// Host-side wrappers of the prefill kernels: GemmOp (src/kernels/gemm.wgsl, a linear layer over T tokens with a
// store / residual-add / SwiGLU epilogue, every weight format) and RmsNormOp (src/kernels/rmsnorm.wgsl).
// create() validates shapes and buffer sizes, compiles the specialised pipelines and builds every bind group
// once; record() only dispatches, so nothing is created in the token loop. The token count T of the chunk is
// dynamic: the GPU reads it from meta[0], record(tokens) only sizes the grid (tokens >= meta[0] is fine).
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "gpu/context.h"
#include "gpu/recorder.h"

namespace ewgpu::kernels {

// Weight formats (docs/kernels.md): the QFMT override of the kernels.
enum class WeightFormat : int { kQ4F16 = 0, kQ4F32 = 1, kQ0F16 = 2, kQ0F32 = 3, kQ3F16 = 4 };

// A linear layer's weight W [N, K] (MLC NK layout), possibly split along N into several buffers (chunks).
struct LinearWeights {
  std::vector<const gpu::Buffer*> w_chunks;  // chunk c: rows [sum(chunk_rows[<c]), +chunk_rows[c]) of W, packed
  std::vector<const gpu::Buffer*> s_chunks;  // scales of the same rows (q4/q3); empty for q0f16/q0f32
  std::vector<uint32_t> chunk_rows;          // rows per chunk (sum = N)
  uint32_t N = 0, K = 0;                     // output rows, inputs
  WeightFormat format = WeightFormat::kQ4F16;
  const gpu::Buffer* bias = nullptr;  // f32 [N] or nullptr
};

enum class Epilogue : int {
  kStore = 0,        // y[t, n] = acc (+ bias)                           y [T, N]
  kResidualAdd = 1,  // y[t, n] += acc (+ bias)   (y = residual stream)   y [T, N]
  kSwiGlu = 2,       // y[t, i] = silu(gate_i) * up_i, rows 0..I-1 gate, I..2I-1 up; y [T, I = N / 2]
};

// Tile shape of the GEMM (a tuning knob; 64 or 128 each). Bigger tiles need more workgroup memory:
// (tile_t + tile_n) * 16 * 4 bytes (q3: * 20 / 16); create() checks it against the device limit.
struct GemmTiling {
  uint32_t tile_t = 64;  // tokens per workgroup tile
  uint32_t tile_n = 64;  // weight rows per workgroup tile
  uint32_t stages = 0;   // workgroup buffers: 2 (one barrier per K step), 1, or 0 = 2 when it fits the limit
};

// Bytes of one chunk's packed weights / scales for `rows` rows of K inputs.
uint64_t weightBytes(WeightFormat f, uint32_t rows, uint32_t K);
uint64_t scaleBytes(WeightFormat f, uint32_t rows, uint32_t K);  // 0 for q0 formats

class GemmOp {
 public:
  // x: f32 [max_tokens, K]; y: f32 [max_tokens, N] (kSwiGlu: [max_tokens, N / 2]); meta: meta[0] = T (u32).
  // BAD_REQUEST on inconsistent shapes or sizes (detail says which), GPU_ERROR when a pipeline fails.
  // kSwiGlu needs a single chunk. K must be a multiple of 32 (q4, q0) or of 4 (q3, rows padded to 40).
  // On a CPU adapter with the default tiling, q4 weights go through linear_cpu.wgsl instead (kernels/linear_cpu.h:
  // one pipeline for every layer, far cheaper to compile on SwiftShader than a tiled GEMM per shape).
  static Result<GemmOp> create(gpu::Context& ctx, const LinearWeights& weights, const gpu::Buffer& x,
                               const gpu::Buffer& y, const gpu::Buffer& meta, Epilogue epi, uint32_t max_tokens,
                               GemmTiling tiling = {});
  // Dispatches every chunk for `tokens` rows (clamped to max_tokens; 0 records nothing).
  void record(gpu::Recorder& rec, uint32_t tokens) const;
  // 2 * T * N * K (kSwiGlu: N = 2I): the FLOPs of `tokens` rows, for benchmarks.
  double flops(uint32_t tokens) const { return 2.0 * tokens * (double)n_ * k_; }

 private:
  struct Part {
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bind_group;
    uint32_t groups_x = 0;  // column tiles
    gpu::Buffer params;     // linear_cpu.wgsl's uniform (CPU adapters)
  };
  std::vector<Part> parts_;
  uint32_t tile_t_ = 64, max_tokens_ = 0, n_ = 0, k_ = 0;
};

class RmsNormOp {
 public:
  // x, out: f32 [max_tokens, H] (different buffers); weight: f32 [H]; meta[0] = T.
  static Result<RmsNormOp> create(gpu::Context& ctx, const gpu::Buffer& x, const gpu::Buffer& weight,
                                  const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t H, float eps,
                                  uint32_t max_tokens);
  void record(gpu::Recorder& rec, uint32_t tokens) const;

 private:
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup bind_group_;
  uint32_t max_tokens_ = 0;
};

}  // namespace ewgpu::kernels
