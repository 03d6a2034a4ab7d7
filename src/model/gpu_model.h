// A model's weights on the GPU, uploaded from a validated ModelFolder. Linear weights keep MLC's packed layout
// (the kernels dequantise on the fly); a matrix above the device's storage-binding limit is split along its rows
// into several buffers (the 2B model's tied embedding is ~286 MB at q4). Qwen3.5's four GDN input projections
// are fused row-wise into one matrix [qkv | z | b | a] so one GEMV covers them. Norms and small tensors are f32.
#pragma once

#include "gpu/context.h"
#include "kernels/linear.h"
#include "model/model_folder.h"

#include <functional>
#include <memory>
#include <vector>

namespace ewgpu {

// A linear (or embedding) matrix [n, k] on the GPU.
struct GpuMatrix {
  kernels::WeightFormat format = kernels::WeightFormat::kQ4F16;
  uint32_t n = 0, k = 0;
  std::vector<gpu::Buffer> w, s;  // per row chunk (s empty for dense formats)
  std::vector<uint32_t> rows;     // rows per chunk
  gpu::Buffer bias;               // f32 [n], empty when none

  // The view the kernel wrappers take.
  kernels::LinearWeights view() const;
  uint64_t bytes() const;
};

struct GpuLayer {
  bool full_attention = true;
  // Norm weights f32 [H] (+1 already baked in for qwen3_5 and gemma), empty where the architecture has none:
  // input_norm before the attention, post_norm before the MLP (llama's post_attention_layernorm; phi's parallel
  // block has only input_norm), attn_out_norm / mlp_out_norm on the branch outputs (gemma2/3, olmo2). LayerNorm
  // biases beside them (*_b).
  gpu::Buffer input_norm, post_norm, attn_out_norm, mlp_out_norm;
  gpu::Buffer input_norm_b, post_norm_b;
  // Full attention.
  GpuMatrix qkv, o;                   // qkv rows: q (or interleaved q|gate per head for qwen3_5), k, v
  gpu::Buffer qk_norm;                // f32 [2, D]: q_norm then k_norm (ones when the model has none)
  gpu::Buffer qk_norm_full;           // olmo2: f32 [HQ·D + HKV·D], q_norm then k_norm over the whole projection
  // Gated DeltaNet (qwen3_5 linear-attention layers).
  GpuMatrix in_proj, out_proj;        // in_proj rows: qkv (C) | z (nv*Vd) | b (nv) | a (nv)
  gpu::Buffer conv_w, a_log, dt_bias, gdn_norm;  // f32 [C, ks], [nv], [nv], [Vd]
  // MLP.
  GpuMatrix gate_up, down;
  // gemma4: the per-layer input branch (gate [hpl, H], projection [H, hpl], its output norm [H]) and the layer
  // scalar (f32 [2], [0] multiplies the layer's output); empty elsewhere. A KV-shared layer's qkv holds q only.
  GpuMatrix ple_gate, ple_proj;
  gpu::Buffer ple_norm, layer_scalar;
};

class WeightCopies;  // gpu_model.cpp

struct GpuModel {
  ModelConfig config;
  GpuMatrix embed;
  GpuMatrix lm_head;      // empty (n == 0) when tied: use embed
  gpu::Buffer final_norm, final_norm_b;  // final_norm_b: LayerNorm models only
  std::vector<GpuLayer> layers;
  // gemma4's per-layer embedding: its shards ([ple_vocab, layers_s * hpl] each, layers in order), the model
  // projection [L * hpl, H] and its norm [hpl]; empty elsewhere.
  std::vector<GpuMatrix> ple_shards;
  GpuMatrix ple_projection;
  gpu::Buffer ple_projection_norm;
  uint64_t weight_bytes = 0;

  const GpuMatrix& logitsMatrix() const { return lm_head.n ? lm_head : embed; }

  // Set by uploadModel with UploadOptions::overlap: the matrices' bytes not yet written. finishUpload() writes them
  // (through gpu/upload.h's staging ring, on the calling thread) and must run before the first submission that reads
  // the weights; the buffers may be bound before (Forward::create runs it while its pipelines compile). The folder
  // must outlive it.
  std::unique_ptr<WeightCopies> copies;
  // Writes `copies` (nothing when there are none); copy_ms: the time it took.
  Status finishUpload(double* copy_ms = nullptr);
  GpuModel();
  ~GpuModel();
  GpuModel(GpuModel&&) noexcept;
  GpuModel& operator=(GpuModel&&) noexcept;
};

// Where an upload's time went (uploadModel fills it when UploadOptions::stats is set).
struct UploadStats {
  double read_ms = 0;      // bringing the folder's bytes into memory: the read-ahead thread's time (it overlaps the
                           // writes), or with copy_through_host the reads into the host slice
  double alloc_ms = 0;     // creating the GPU buffers
  double write_ms = 0;     // inside queue writes (Dawn copies into its staging memory), or the staging ring's time
                           // (0 with overlap: finishUpload writes them later)
  double wait_ms = 0;      // the final wait for the GPU to take the copies
  uint64_t read_bytes = 0; // bytes the read-ahead thread brought in before the upload ended
  uint32_t copy_threads = 0;  // host threads filling the staging ring (0: queue writes)
};

struct UploadOptions {
  // Largest buffer one weight chunk may use (0 = the device's maxStorageBufferBindingSize). Tests lower it to
  // exercise the split.
  uint64_t max_chunk_bytes = 0;
  // Called after each buffer is written with the bytes uploaded so far (load progress); may be empty.
  std::function<void(uint64_t bytes_uploaded)> on_bytes;
  // When set, a matrix's rows are not read here: each contiguous range of a record that goes to a buffer is handed
  // to defer(dst, dst_offset, record, offset in the record, bytes), and the caller writes those bytes itself
  // before the model is used (the browser: from the shard's Blob, asynchronously). Sizes and offsets are
  // multiples of 4. Vectors (norms, biases: small, converted to f32) are still written here.
  std::function<void(const gpu::Buffer& dst, uint64_t dst_offset, const TensorInfo& t, uint64_t offset, uint64_t size)>
      defer;
  // Natively, weights go to the queue straight from the mapped shards (no host copy), while a read-ahead thread
  // faults the shards' pages in ahead of the writes. copy_through_host = true reads each slice into a host buffer
  // first (the browser's way, and the A/B baseline: EWGPU_UPLOAD_COPY=1); read_ahead = false
  // (EWGPU_UPLOAD_READ_AHEAD=0) leaves the page faults to the writes.
  bool copy_through_host = false;
  bool read_ahead = true;
  // Natively (not with defer or copy_through_host), the matrices' rows go to the GPU through a ring of map-write
  // staging buffers (gpu/upload.h), filled from the mapped shards by `copy_threads` host threads (0 = the hardware's
  // threads, at most 4; $EWGPU_UPLOAD_THREADS). ring = false, or EWGPU_UPLOAD_RING=0, writes each slice with a queue
  // write on this thread instead (with the read-ahead thread).
  bool ring = true;
  uint32_t copy_threads = 0;
  // With the ring: return before writing the matrices (GpuModel::copies), so that the caller writes them while its
  // pipelines compile (Forward::create's while_compiling); GpuModel::finishUpload() must run before the first
  // submission that reads the weights. Without, uploadModel writes them itself.
  bool overlap = false;
  UploadStats* stats = nullptr;
};

kernels::WeightFormat weightFormatOf(Quant q);

Result<std::unique_ptr<GpuModel>> uploadModel(gpu::Context& ctx, const ModelFolder& folder,
                                              const UploadOptions& opts = {});

}  // namespace ewgpu
