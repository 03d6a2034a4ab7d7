// Host side of the decode GEMV (src/kernels/gemv.wgsl): one op = one linear layer applied to B activation rows,
// with the fused RMSNorm prologue and residual / SwiGLU epilogues. create() compiles and binds once per weight
// chunk; record() only dispatches.
#pragma once

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "kernels/linear.h"
#include "kernels/linear_cpu.h"

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ewgpu::kernels {

// Precision of x in a q4 GEMV. kInt8: x̂ quantized to int8 per 32-element group (step max|x̂| / 127) and
// multiplied with dot4I8Packed (as llama.cpp's q8_1 activations): far fewer instructions than decoding the codes to
// f32, which bounds the f32 kernel on large GPUs. kInt16: a second int8 digit carries the rounding residual
// (16-bit fixed point per group, error ≤ 1/64516 of the group max), twice the dot products. Both apply to q4 formats in
// the single-row staged fast path (batch 1) and in the batched kernel (gemv_quant.wgsl quantizes each active row
// once per step); elsewhere x stays f32. kAuto: kInt16 on GPU adapters with
// WGSL's packed dot product, f32 on CPU adapters; EWGPU_GEMV_Q8=0 / 1 / 2 (f32 / int8 / int16) overrides kAuto.
enum class Activations { kAuto, kF32, kInt8, kInt16 };
// "auto", "f32", "int8", "int16" (the CLI's --activations values) and back; nullopt for any other name.
std::string_view activationsName(Activations a);
// kAuto resolved on `d`: EWGPU_GEMV_Q8 (0 / 1 / 2) where set, else kInt16 on GPUs with the packed dot product and
// kF32 elsewhere; other values as given.
Activations resolveActivations(Activations act, const DeviceInfo& d);
std::optional<Activations> activationsFromName(std::string_view name);
// The int8 digits of x̂ at `a`: 1 for kInt8, 2 for kInt16, 0 otherwise (f32 x; kAuto unresolved).
inline uint32_t activationDigits(Activations a) {
  return a == Activations::kInt8 ? 1 : a == Activations::kInt16 ? 2 : 0;
}

// The most activation rows a decode GEMV takes (decode rows of a Forward).
inline constexpr uint32_t kMaxGemvBatch = 32;

struct GemvConfig {
  Epilogue epi = Epilogue::kStore;
  // Activation rows, 1..kMaxGemvBatch. 1: gemv.wgsl's single-row fast paths. Above 1: gemv_batch.wgsl (q4, q0
  // formats; each weight word decoded once for all active rows), which needs `active`; q3f16_1 keeps gemv.wgsl's
  // per-row path, at most 8 rows.
  uint32_t batch = 1;
  const gpu::Buffer* norm = nullptr;  // RMSNorm weight f32 [K] for the prologue, or none
  float eps = 1e-6f;
  uint32_t x_stride = 0, y_stride = 0;  // floats per batch row (0: K and the output width)
  uint32_t tpr = 0;                 // threads per row (0: device default)
  uint32_t rpt = 0;                 // rows per thread group (0: 4 / batch, at least 1)
  uint32_t ksplit = 0;              // thread groups splitting K per row (0: by matrix size; batched: int8 x̂ only)
  Activations act = Activations::kAuto;
  // batch > 1: u32 [1] holding the active rows of the step (rows 0..active-1 are computed, written on the GPU
  // queue before the submission; record() gets the same count for the grid).
  const gpu::Buffer* active = nullptr;
  uint32_t batch_tile = 0;          // activation rows per workgroup of gemv_batch (0: 16 on CPU adapters, else 4)
  // batch > 1 with int8 x̂: gemv_batch.wgsl's Q8 path or gemm_q8.wgsl (a small-M GEMM), for every step of the op:
  // the two round differently, and a row's sums may not depend on how many rows run beside it. kAuto: the GEMM in
  // engines of at least kGemmMinBatch rows for matrices of at most kGemmMaxRows weight rows (EWGPU_GEMMQ=0 / 1
  // overrides both, EWGPU_GEMMQ_MAXN the second).
  enum class BatchKernel { kAuto, kGemv, kGemm };
  BatchKernel batch_kernel = BatchKernel::kAuto;
  int gemm_tile = -1;               // 1 gemm_q8_wt (workgroup-memory tiles), 0 gemm_q8 (K-sliced); -1 the default
                                    // (gemm_q8; the environment, kGemmWideRows says how)
  uint32_t gemm_ks = 0;             // gemm_q8 / gemm_q8_wt: K slices (0: the op's default)
  uint32_t gemm_nb = 0;             // gemm_q8: threads of weight blocks per workgroup (0: the op's default)
  int gemm_wg = -1;                 // gemm_q8: smaller tiles double NB up to this many threads (0: never; -1:
                                    // EWGPU_GEMMQ_WG, else 128)
  uint32_t gemm_max_mb = 0;         // gemm_q8 / gemm_q8_wt: the largest tile's blocks of 4 activation rows (1, 2, 4,
                                    // 8; 0: the largest that fits)
  uint32_t gemm_nw = 0;             // gemm_q8_wt: weight rows per tile, 16·i up to 64, 4·i unstaged (0: 64 for
                                    // matrices of kGemmWideRows rows or more, else 16)
  int gemm_xsm = -1;                // gemm_q8_wt: 1 x̂ staged in workgroup memory, 0 read from global (-1: default)
  int gemm_xsplit = -1;             // gemm_q8: 1 x̂ in gemv_quant.wgsl's XSPLIT layout, 0 not (-1: EWGPU_GEMMQ_XSPLIT,
                                    // else 1)
  // One-row ops (gemv.wgsl): the projection that runs after this one. Workgroups appended to this dispatch touch its
  // codes and scales, so that they wait in the L2 when it starts (gemv.wgsl L2NEXT). Taken where gemvL2Next()
  // allows it, this op is one dispatch of one row of workgroups, `l2_next` one chunk of a q4 format and y's buffer
  // holds kL2SinkBytes past its outputs (the touched words are written there); the outputs do not change.
  const LinearWeights* l2_next = nullptr;
};

// Whether one-row GEMVs pull the next projection's weights into the L2 (GemvConfig::l2_next): where EWGPU_GEMV_L2=1,
// opt-in until the engine's A/B on a GPU (a decode step's small dispatches each wait on their first loads from
// memory there, docs/measurements/run38 call a).
bool gemvL2Next(const DeviceInfo& d);
// The spare bytes at the end of a GEMV's y buffer that GemvConfig::l2_next needs.
inline constexpr uint64_t kL2SinkBytes = 1024;

// Engines of at least this many decode rows run their batched q4 projections through gemm_q8.wgsl, except
// matrices of more than kGemmMaxRows weight rows (the LM head), which stay on gemv_batch.wgsl: gemm_q8's workgroups
// of 4 weight rows each read every active row's x̂, and over 128k rows that traffic costs more than gemv_batch's
// re-reads of the weights. H200, LM head µs at 1 / 8 / 16 / 32 active rows, gemv_batch against gemm_q8
// (docs/measurements/h200-run29): Llama-3.2-1B (128256 rows) 48 / 147 / 277 / 539 against 63 / 149 / 292 / 598,
// Qwen3.5-2B (248320) - / 269 / 522 / 1036 against - / 289 / 570 / 1186; the largest other matrix (16384 rows,
// the 1B's gate/up) 8.4 / 20.9 / 37.0 / 68.1 against 10.4 / 19.8 / 32.0 / 57.7.
inline constexpr uint32_t kGemmMinBatch = 32;
inline constexpr uint32_t kGemmMaxRows = 65536;
// gemm_q8_wt.wgsl's default width for matrices of at least kGemmWideRows weight rows (the MLP's gate/up, the LM
// head): 64 weight rows per tile, else 16. The GEMM is gemm_q8.wgsl for every op unless EWGPU_GEMMQ_TILE_ROWS=n puts
// the matrices of n rows or more on gemm_q8_wt (fixed per op, so rows stay bit-identical across steps), or
// EWGPU_GEMMQ_KERNEL=tile every op. Not the default: on an H100 (docs/measurements/h100-run36) gate/up on it took a
// 32-row engine's Llama-3.2-1B from 9.0k to 9.5k tok/s at 32 streams but from 6.3k to 6.2k at 16 and from 800 to
// 590 with one stream (its 4-row tile has 32 threads), and left Qwen3.5-2B unchanged at 32 and slower below.
inline constexpr uint32_t kGemmWideRows = 12288;

class GemvOp {
 public:
  static Result<GemvOp> create(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                               const GemvConfig& cfg);
  // `rows`: the active rows of this step (batched ops; 0 = every row). Single-row and q3 ops ignore it.
  void record(gpu::Recorder& rec, uint32_t rows = 0) const;
  uint32_t dispatches() const {
    return (uint32_t)(parts_.size() + gemm_parts_.size()) + (quant_.kernel ? 1 : 0);
  }
  bool batched() const { return batch_tile_ > 0; }
  // The workgroups that touch GemvConfig::l2_next's weights (0: none).
  uint32_t l2Workgroups() const { return l2_wg_; }
  bool gemm() const { return !gemm_parts_.empty(); }  // a small-M GEMM instead of gemv_batch.wgsl
  // The GEMM's kernel ("gemm_q8_wt" or "gemm_q8"), or "" without one.
  std::string gemmKernel() const { return gemm() ? gemm_parts_[0][0].kernel->name : std::string(); }
  bool xsplit() const { return xsplit_; }  // gemm_q8 reads x̂ in gemv_quant.wgsl's XSPLIT layout
  // gemm_q8 / gemm_q8_wt: the threads of a workgroup of the tile of 4 · 2^i activation rows (0 where the op has no
  // such tile).
  uint32_t gemmThreads(uint32_t i) const { return gemm() && i <= max_tile_ ? gemm_parts_[0][i].threads : 0; }

 private:
  struct Part {
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bg;
    uint32_t gx = 1, gy = 1;
    uint32_t threads = 0;  // GEMM tiles: threads per workgroup
  };
  static Result<GemvOp> createBatched(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x,
                                      const gpu::Buffer& y, const GemvConfig& cfg);
  // CPU adapters, one row: linear_cpu.wgsl (kernels/linear_cpu.h), one pipeline for every layer.
  static Result<GemvOp> createCpu(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x,
                                  const gpu::Buffer& y, const GemvConfig& cfg);
  // The int8 x̂ scratch (xq_) and gemv_quant.wgsl's dispatch that fills it (quant_); its u32s per row.
  Status createQuant(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const GemvConfig& cfg,
                     uint32_t digits);
  static uint32_t quantRowU32(uint32_t k, uint32_t digits);
  // Whether a batched op's GEMM is gemm_q8_wt.wgsl rather than gemm_q8.wgsl (the environment's choice, addGemm).
  static bool gemmOnTile(const LinearWeights& w, const GemvConfig& cfg);
  // The gemm_q8 pipelines of a batched op (after createQuant).
  Status addGemm(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                 const GemvConfig& cfg, uint32_t digits);
  Status addGemmTile(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                     const GemvConfig& cfg, uint32_t digits);
  void capTile(const GemvConfig& cfg);  // max_tile_ capped by the sweeps' knob
  std::vector<Part> parts_;
  std::vector<gpu::Buffer> params_;  // createCpu: the layer's uniforms
  uint32_t batch_ = 1, batch_tile_ = 0;  // batched: gx = ceil(rows / batch_tile_)
  // Batched with int8 x̂: the quantize dispatch before the parts, and the quantized rows it writes.
  Part quant_;
  gpu::Buffer xq_;
  bool xsplit_ = false;  // x̂ in gemv_quant.wgsl's XSPLIT layout (gemm_q8 only)
  // gemm_q8: per weight chunk, the pipelines of tiles of 4, 8, 16 and 32 activation rows (MB 1, 2, 4, 8); a step
  // takes the smallest that holds its active rows.
  std::vector<std::array<Part, 4>> gemm_parts_;
  uint32_t max_tile_ = 3;  // the largest of those a step takes
  uint32_t l2_wg_ = 0;
};

}  // namespace ewgpu::kernels
