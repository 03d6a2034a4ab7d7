// Host side of the Gated DeltaNet mixer kernels of Qwen3.5 (qwen3_5-architecture.md §6; docs/kernels-gdn.md):
// everything between the fused input projection and out_proj of one GDN layer.
//
//   proj [rows, C + NV*VD + 2*NV] f32 (one row per token: qkv | z | b | a, the lead's fused projection)
//     -> GdnConvOp     -> prep [rows, C + 2*NV] (q | k | v | beta | g), conv state updated
//     -> GdnRecurrentOp (decode) or GdnPrefillOp (one sequence, T tokens)
//     -> out [rows, NV*VD] f32 (gated-RMSNormed, the input of out_proj), recurrent state updated.
//
// Each op compiles its pipelines and builds its bind groups in create(); record() only records dispatches.
// Decode reads the shared row-state buffer rows [B, 8] u32 (0 slot, 1 pos, 2 active); prefill reads
// meta [2] u32 = [T, slot], written by the CPU before the submit (record() gets the same T for the grid size).
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "gpu/context.h"
#include "gpu/recorder.h"

namespace ewgpu::kernels {

// Shapes of one GDN layer.
struct GdnDims {
  uint32_t nk = 0;    // key heads (q and k)
  uint32_t nv = 0;    // value heads (= recurrent states); a multiple of nk
  uint32_t kd = 0;    // key head dim (<= 256)
  uint32_t vd = 0;    // value head dim (<= 256)
  uint32_t ks = 4;    // conv kernel width (>= 2)
  float eps = 1e-6f;  // rms_norm_eps of the gated norm

  uint32_t convChannels() const { return 2 * nk * kd + nv * vd; }           // C
  uint32_t projWidth() const { return convChannels() + nv * vd + 2 * nv; }  // qkv | z | b | a
  uint32_t prepWidth() const { return convChannels() + 2 * nv; }            // q | k | v | beta | g
  uint32_t outWidth() const { return nv * vd; }
  uint64_t convStateFloats() const { return (uint64_t)convChannels() * (ks - 1); }  // per slot
  uint64_t stateFloats() const { return (uint64_t)nv * kd * vd; }                   // per slot
  Status validate() const;
};

// Conv + SiLU + split + L2 norms + gates. Decode: one dispatch; prefill: two (the conv, then the state shift).
class GdnConvOp {
 public:
  struct Buffers {
    gpu::Binding proj;        // [rows, projWidth] f32
    gpu::Binding conv_w;      // [C, ks] f32 (f16 checkpoints converted at upload)
    gpu::Binding a_log;       // [nv] f32
    gpu::Binding dt_bias;     // [nv] f32
    gpu::Binding info;        // decode: rows [B, 8] u32; prefill: meta [T, slot] u32
    gpu::Binding conv_state;  // [slots, C, ks-1] f32, oldest first
    gpu::Binding prep;        // [rows, prepWidth] f32
  };
  static Result<GdnConvOp> create(gpu::Context& ctx, const GdnDims& dims, bool prefill, const Buffers& b);
  // Decode: `rows` = B rows of the rows buffer; prefill: `rows` = T (= meta[0]).
  void record(gpu::Recorder& rec, uint32_t rows) const;
  uint32_t dispatchCount() const { return prefill_ ? 2 : 1; }

 private:
  GdnDims dims_;
  bool prefill_ = false;
  const gpu::Kernel* conv_ = nullptr;
  const gpu::Kernel* shift_ = nullptr;
  gpu::BindGroup conv_bg_, shift_bg_;
};

// Buffers shared by the recurrence ops.
struct GdnMixBuffers {
  gpu::Binding prep;    // [rows, prepWidth] f32 (GdnConvOp output)
  gpu::Binding proj;    // [rows, projWidth] f32 (for z)
  gpu::Binding norm_w;  // [vd] f32, linear_attn.norm.weight (no +1)
  gpu::Binding info;    // decode: rows [B, 8] u32; prefill: meta [T, slot] u32
  gpu::Binding state;   // [slots, nv, kd, vd] f32
  gpu::Binding out;     // [rows, nv*vd] f32
};

// Decode: one recurrence step per active row and value head, then the gated norm. One dispatch.
class GdnRecurrentOp {
 public:
  // ksplit: invocations per column (0 = the largest power of two ≤ 8 dividing kd with vd*ksplit within the
  // device's workgroup size; kd/ksplit ≤ 64 state rows per invocation).
  static Result<GdnRecurrentOp> create(gpu::Context& ctx, const GdnDims& dims, const GdnMixBuffers& b,
                                       uint32_t ksplit = 0);
  void record(gpu::Recorder& rec, uint32_t batch_rows) const;

 private:
  GdnDims dims_;
  const gpu::Kernel* kernel_ = nullptr;
  gpu::BindGroup bg_;
};

// Prefill of T <= max_tokens tokens of one sequence (slot = meta[1]), continuing from the slot's state.
enum class GdnPrefillAlgo {
  kChunked,     // §6.8, chunks of 64: 3 dispatches (solve per chunk, state carry, output per chunk)
  kSequential,  // token-by-token recurrence, one workgroup per value head: 1 dispatch (reference)
  kColumns,     // the same recurrence with a head's value columns spread over workgroups (no barrier per token),
                // then the gated norm: 2 dispatches; needs subgroups (gdn_scan.wgsl)
};

class GdnPrefillOp {
 public:
  // ksplit: lanes per state column (sequential, columns; 0 = automatic). kColumns fails without subgroups.
  static Result<GdnPrefillOp> create(gpu::Context& ctx, const GdnDims& dims, uint32_t max_tokens,
                                     const GdnMixBuffers& b, GdnPrefillAlgo algo = GdnPrefillAlgo::kChunked,
                                     uint32_t ksplit = 0);
  // `tokens` must equal meta[0] (it sets the grid); 1 <= tokens <= max_tokens.
  void record(gpu::Recorder& rec, uint32_t tokens) const;
  uint32_t dispatchCount() const {
    return algo_ == GdnPrefillAlgo::kChunked ? 3 : algo_ == GdnPrefillAlgo::kColumns ? 2 : 1;
  }
  static constexpr uint32_t kChunk = 64;

 private:
  static Result<GdnPrefillOp> createColumns(gpu::Context& ctx, GdnPrefillOp op, const GdnMixBuffers& b,
                                            uint32_t ksplit);
  GdnDims dims_;
  GdnPrefillAlgo algo_ = GdnPrefillAlgo::kChunked;
  uint32_t max_tokens_ = 0;
  uint32_t state_cols_ = 0;  // state columns per workgroup of the state pass (chunked) or of the scan (columns)
  gpu::Buffer scratch_;      // [ceil(max_tokens/64), nv, 64, kd+vd] f32
  const gpu::Kernel* k_[3] = {nullptr, nullptr, nullptr};
  gpu::BindGroup bg_[3];
};

}  // namespace ewgpu::kernels
