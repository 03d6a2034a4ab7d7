// Host-side wrappers of the prefill kernels: GemmOp (src/kernels/gemm.wgsl, a linear layer over T tokens with a
// store / residual-add / gated or GELU epilogue, every weight format) and RmsNormOp (src/kernels/rmsnorm.wgsl: RMSNorm or
// LayerNorm, stored or added).
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
  kGelu = 3,         // y[t, n] = gelu(acc (+ bias)), exact (erf): gpt_neox, bert
  kGeluTanh = 4,     // y[t, n] = gelu_tanh(acc (+ bias)), the tanh approximation: phi-1.5 / phi-2
  kGeGlu = 5,        // as kSwiGlu with gelu_tanh(gate_i): gemma
};
// The epilogues whose weight holds gate and up halves (output width N / 2).
inline bool gatedEpilogue(Epilogue e) { return e == Epilogue::kSwiGlu || e == Epilogue::kGeGlu; }

// Tile shape of the GEMM (a tuning knob; 64 or 128 each). Bigger tiles need more workgroup memory:
// (tile_t + tile_n) * 16 * 4 bytes (q3: * 20 / 16); create() checks it against the device limit.
struct GemmTiling {
  uint32_t tile_t = 64;  // tokens per workgroup tile
  uint32_t tile_n = 64;  // weight rows per workgroup tile
  uint32_t stages = 0;   // workgroup buffers: 2 (one barrier per K step), 1, or 0 = 2 when it fits the limit
};

// The int8 prefill path (gemm_q8_tile.wgsl) of a q4 GemmOp: x is first quantized per 32-element group into `xq`
// (gemv_quant.wgsl: `digits` int8 digits and a step per group), then multiplied with dot4I8Packed. `xq` is scratch
// of at least max_tokens · quantRowWords(K, digits) u32 that every op of a forward may share (each op quantizes
// its own input right before its GEMM). Null: the f32 GEMM.
struct GemmQ8 {
  const gpu::Buffer* xq = nullptr;
  uint32_t digits = 1;  // 1 (int8, as llama.cpp's MMQ) or 2 (int16 fixed point, the decode GEMVs' default)
  uint32_t tile_t = 0;  // tokens per tile, 64 or 128 (0: EWGPU_PREFILL_TILE, else 64)
};
// u32 words of one x̂ row of K features (gemv_quant.wgsl's ROW_U32: digits, zero points, steps; a multiple of 4).
uint32_t quantRowWords(uint32_t K, uint32_t digits);
// gemv_quant.wgsl's SG constant on `d`: 1 where subgroups hold at least 4 invocations (EWGPU_QUANT_SG=0 turns the
// subgroup path off), else 0.
int quantSubgroups(const DeviceInfo& d);

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
  // With q8.xq set and q4 weights, the int8 path (GemmQ8; tiles of q8.tile_t tokens × 64 weight rows); other
  // formats ignore q8.
  static Result<GemmOp> create(gpu::Context& ctx, const LinearWeights& weights, const gpu::Buffer& x,
                               const gpu::Buffer& y, const gpu::Buffer& meta, Epilogue epi, uint32_t max_tokens,
                               GemmTiling tiling = {}, GemmQ8 q8 = {});
  // Dispatches every chunk for `tokens` rows (clamped to max_tokens; 0 records nothing).
  void record(gpu::Recorder& rec, uint32_t tokens) const;
  // 2 * T * N * K (kSwiGlu: N = 2I): the FLOPs of `tokens` rows, for benchmarks.
  double flops(uint32_t tokens) const { return 2.0 * tokens * (double)n_ * k_; }
  bool int8() const { return quant_.kernel != nullptr; }

 private:
  static GemmOp shell(uint32_t tile_t, uint32_t max_tokens, const LinearWeights& weights);  // no parts yet
  static Result<GemmOp> createInt8(gpu::Context& ctx, const LinearWeights& weights, const gpu::Buffer& x,
                                   const gpu::Buffer& y, const gpu::Buffer& meta, Epilogue epi, uint32_t max_tokens,
                                   GemmQ8 q8);
  struct Part {
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bind_group;
    uint32_t groups_x = 0;  // column tiles
    gpu::Buffer params;     // linear_cpu.wgsl's uniform (CPU adapters)
  };
  std::vector<Part> parts_;
  Part quant_;  // the int8 path's x quantization (gemv_quant.wgsl, one workgroup per token)
  uint32_t tile_t_ = 64, max_tokens_ = 0, n_ = 0, k_ = 0;
};

class RmsNormOp {
 public:
  // x, out: f32 [max_tokens, H] (different buffers); weight: f32 [H]; meta[0] = T (the prefill meta, or a
  // Forward's active-rows word for decode rows). With `mode` a LayerNorm (bias f32 [H]) and/or out += norm(x).
  struct Mode {
    bool layer = false;                 // LayerNorm: mean subtracted, then + bias
    const gpu::Buffer* bias = nullptr;  // LayerNorm's bias (required with layer)
    bool add = false;                   // out[t] += norm(x[t]) instead of out[t] = norm(x[t])
  };
  static Result<RmsNormOp> create(gpu::Context& ctx, const gpu::Buffer& x, const gpu::Buffer& weight,
                                  const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t H, float eps,
                                  uint32_t max_tokens, const Mode& mode);
  static Result<RmsNormOp> create(gpu::Context& ctx, const gpu::Buffer& x, const gpu::Buffer& weight,
                                  const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t H, float eps,
                                  uint32_t max_tokens) {
    return create(ctx, x, weight, out, meta, H, eps, max_tokens, Mode{});
  }
  void record(gpu::Recorder& rec, uint32_t tokens) const;

 private:
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup bind_group_;
  uint32_t max_tokens_ = 0;
};

}  // namespace ewgpu::kernels
