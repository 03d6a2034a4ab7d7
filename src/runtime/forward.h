// The forward pass as recorded GPU work. Forward owns every activation buffer, the KV cache and recurrent state
// (per sequence slot), the sampling buffers and all kernel ops (pipelines and bind groups made once here), and
// records two kinds of work into a Recorder:
//   - one decode step for the active rows [0, rows) of the batch (rows ≤ max_batch, set per submission by the
//     executor, which keeps the active sequences compacted into the first rows; a row names its slot): embed
//     the token each row sampled last (still on the GPU) at the row's position, all layers, final norm +
//     lm_head, sample. K steps are recorded back to back with no CPU round trip; the rows buffer carries slot,
//     position, activity and the sampled token between them.
//   - one prefill chunk of T tokens of the sequence described by the prefill row (its own rows buffer), with
//     GEMMs instead of GEMVs; the last chunk also computes the last token's logits, samples the first generated
//     token and copies it into the sequence's decode row.
// Rows layout (u32 × 8): slot, pos, active, generated, token, out_index, finish, reserved (kernels/sampling.h).
// The KV cache of the attention layers is a pool of pages (kPageTokens positions; runtime/page_cache.h, docs/
// prefix-reuse.md); each slot's page table ([slots, pagesPerSlot()] u32) follows the rows in both the decode rows
// buffer and the prefill rows buffer. Forward starts with slot s on pages [s·pagesPerSlot(), (s+1)·pagesPerSlot()),
// so a caller that never writes a table sees one contiguous cache per slot.
#pragma once

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "kernels/gdn.h"
#include "kernels/gemv_op.h"
#include "kernels/linear.h"
#include "kernels/sampling.h"
#include "model/gpu_model.h"
#include "runtime/page_cache.h"

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace ewgpu {

// The most decode rows a Forward takes.
inline constexpr uint32_t kMaxDecodeRows = kernels::kMaxGemvBatch;

struct ForwardOptions {
  uint32_t max_batch = 1;      // decode rows (1..kMaxDecodeRows); a step computes only the active ones
  uint32_t slots = 1;          // sequences with their own KV cache / recurrent state
  uint32_t context = 0;        // positions per slot (0: the model's context window)
  uint32_t prefill_chunk = 0;  // tokens per prefill chunk (0: the model's prefill_chunk_size, at most 1024)
  uint32_t max_steps = 16;     // decode steps per submission the output ring holds (K max)
  // x precision of the q4 decode GEMVs (kernels/gemv_op.h). kAuto (decodeActivations below): on GPUs with WGSL's
  // packed dot product, in engines of more than one row, kInt8 (one digit) for the families whose one-digit decode
  // stays within 2e-2 of max |logit| against the transformers fixtures (qwen3_5 with gdn_digits' two digits for its
  // GDN projections); kInt16 (two) for gemma2, gemma4 and one-row engines (with mlp_digits' one digit for the MLP);
  // f32 x on CPU adapters.
  kernels::Activations activations = kernels::Activations::kAuto;
  // Prefix reuse (docs/prefix-reuse.md): KV pages beyond the slots' own (kAuto: one context's worth) for cached
  // prefixes, and Qwen3.5 recurrent-state snapshots (kAuto: slots + 1; 0 for models without GDN layers).
  static constexpr uint32_t kAuto = 0xFFFFFFFFu;
  uint32_t cache_pages = kAuto;
  uint32_t snapshots = kAuto;
  // KV cache elements: f16 halves the cache and the attention's reads; f32 is exact against the CPU reference.
  // kAuto: f16 on GPUs (f32 for gemma4: forward.cpp says why), f32 on CPU adapters (the tests' path);
  // EWGPU_KV=f16|f32 overrides kAuto.
  enum class Kv { kAuto, kF32, kF16 };
  Kv kv = Kv::kAuto;
  // x precision of the q4 prefill GEMMs: kInt8 / kInt16 quantize x per 32-element group to one or two int8 digits
  // for the packed dot product (gemm_q8_tile.wgsl); kF32 keeps gemm.wgsl. kAuto: kInt8 on GPUs with WGSL's packed
  // dot product (kInt16 for qwen3_5 and gemma4), kF32 on CPU adapters (SwiftShader emulates it); EWGPU_PREFILL_Q8=0/1/2
  // (f32/int8/int16) overrides kAuto. Other weight formats always take gemm.wgsl.
  kernels::Activations prefill_activations = kernels::Activations::kAuto;
  // The MLP's prefill GEMMs (gate/up, down: most of a layer's weights): 1 one int8 digit while the others keep
  // prefill_activations' two; 2 all alike. 0 (auto): one for qwen3_5 where prefill_activations is kAuto and gives
  // it two (GPUs); all alike otherwise. EWGPU_PREFILL_MLP_Q8=1 / 0 overrides auto.
  uint32_t prefill_mlp_digits = 0;
  // The MLP's decode GEMVs (gate/up, down): 1 x̂ as one int8 digit whatever `activations` gives the others; 2 all
  // alike. 0 (auto): one digit where `activations` is kAuto and gives two (GPUs with the packed dot product), but
  // not for gemma4; all alike otherwise. EWGPU_GEMV_MLP_Q8=1 / 0 overrides auto.
  uint32_t mlp_digits = 0;
  // Qwen3.5's GDN projections' decode GEMVs (in_proj, out_proj): 1 or 2 x̂ digits whatever `activations` gives the
  // others. 0 (auto): two where `activations` is kAuto and gives qwen3_5 one (engines of more than one row on GPUs
  // with the packed dot product); all alike otherwise. EWGPU_GEMV_GDN_Q8=1 / 2 overrides auto.
  uint32_t gdn_digits = 0;
};

// ForwardOptions::activations resolved on `d` for `arch` (decode GEMVs of q4 weights): a value other than kAuto,
// or EWGPU_GEMV_Q8 (0 / 1 / 2: f32 / int8 / int16) where set, as given; kAuto: f32 x without the packed dot product
// or on CPU adapters, else kInt8 where max_batch > 1, but kInt16 for gemma2 and gemma4 and in one-row engines
// (docs/kernels.md, "GEMV with quantized x").
kernels::Activations decodeActivations(const ForwardOptions& o, const DeviceInfo& d, Arch arch);
// The digits ForwardOptions::gdn_digits resolves to on `d` for `arch` (0: f32 x), before the weight format is
// looked at.
uint32_t decodeGdnDigits(const ForwardOptions& o, const DeviceInfo& d, Arch arch);
// The digits ForwardOptions::mlp_digits and prefill_mlp_digits resolve to on `d` for `arch` (0: the MLP takes the
// other projections' setting), before the weight format is looked at. `others` is the digits the other projections
// take (0 for f32 x).
uint32_t decodeMlpDigits(const ForwardOptions& o, const DeviceInfo& d, Arch arch);
uint32_t prefillMlpDigits(const ForwardOptions& o, Arch arch, uint32_t others);

struct ForwardStats {
  uint32_t decode_dispatches = 0;  // per decode step
  uint64_t kv_bytes = 0, state_bytes = 0, activation_bytes = 0;
};

class Forward {
 public:
  static constexpr uint32_t kRowWords = 8;
  static constexpr uint32_t kParamWords = 64;
  static constexpr uint32_t kOutWords = 44;

  // `while_compiling`, when set, runs on this thread once the ops are built and their pipelines are compiling on
  // Dawn's threads, before they are awaited (the loaders write the weights then: GpuModel::finishUpload).
  static Result<std::unique_ptr<Forward>> create(gpu::Context& ctx, const GpuModel& model, const ForwardOptions& o,
                                                 const std::function<Status()>& while_compiling = {});

  // Bytes a Forward allocates per slot (KV cache and recurrent state) and for everything else (activations,
  // logits, sampling buffers) at `rows` decode rows, for `context` positions: what a memory budget divides.
  static uint64_t slotBytes(const ModelConfig& c, uint32_t context);
  static uint64_t fixedBytes(const ModelConfig& c, uint32_t rows, uint32_t context, uint32_t prefill_chunk);
  // The most rows (1..kMaxDecodeRows, one slot each) whose Forward fits `budget` bytes beside the weights; 0 if
  // not even one does.
  static uint32_t rowsThatFit(const ModelConfig& c, uint32_t context, uint64_t weight_bytes, uint64_t budget);

  // One decode step of rows [0, rows) (0: max_batch). activeRows()[0] must hold the same count on the GPU.
  // `batch`: what the active rows ask of the sampler, which picks its dispatches from it (SampleBatch).
  // `max_pos`: no active row's position reaches past it in this step (UINT32_MAX: unknown); at or below
  // attnShortPositions() the attention takes one position range and no merge (attention.wgsl SPLIT 1).
  void recordDecodeStep(gpu::Recorder& rec, uint32_t rows = 0,
                        SampleBatch batch = SampleBatch::kSampled,
                        uint32_t max_pos = UINT32_MAX) const;
  // Decode positions up to which one range per head is used (0: the split always; see max_pos above).
  uint32_t attnShortPositions() const { return attn_short_; }
  uint32_t attnSplit() const { return attn_split_; }
  // Dispatches one decode step of max_batch rows records (Stats::decode_dispatches: a sampled batch, past
  // attnShortPositions).
  uint32_t decodeDispatches(SampleBatch batch, uint32_t max_pos) const;
  // `tokens` ids must already be in prefillIds(), the prefill row and meta written (see Generator).
  void recordPrefillChunk(gpu::Recorder& rec, uint32_t tokens, bool last, uint32_t decode_row) const;
  // Zeroes the recurrent state a slot carries between tokens (Qwen3.5's GDN conv window and state; the KV cache
  // needs nothing: positions restart at 0 and attention reads only up to the current one). Recorded before the
  // first prefill chunk of every sequence, so nothing of the slot's previous sequence leaks into the next.
  void recordResetSlot(gpu::Recorder& rec, uint32_t slot) const;

  // Prefix reuse. The page pool holds pagePool() pages (id pagePool() is the trash page unused entries name).
  uint32_t pagesPerSlot() const { return pps_; }
  uint32_t pagePool() const { return pool_; }
  uint32_t stateSnapshots() const { return snaps_; }
  bool hybrid() const { return model_.config.arch == Arch::kQwen3_5; }
  // Writes slot's page table (entries past `pages` name the trash page) into both rows buffers (queue order).
  void writePageTable(uint32_t slot, const std::vector<uint32_t>& pages) const;
  // Copies page `from` of every attention layer's K and V into page `to` (through a scratch page).
  void recordCopyPage(gpu::Recorder& rec, uint32_t from, uint32_t to) const;
  // Qwen3.5: copies a slot's conv window and recurrent state into snapshot `snap`, or back.
  void recordSaveState(gpu::Recorder& rec, uint32_t slot, uint32_t snap) const;
  void recordRestoreState(gpu::Recorder& rec, uint32_t snap, uint32_t slot) const;

  const ForwardOptions& options() const { return opts_; }
  uint32_t prefillChunk() const { return chunk_; }    // tokens per prefill chunk actually used
  uint32_t prefillDigits() const { return pdigits_; }  // int8 digits of the q4 prefill GEMMs' x (0: f32 x)
  uint32_t prefillMlpDigits() const { return pmlp_digits_; }  // the same for the MLP's GEMMs
  uint32_t decodeMlpDigits() const { return mlp_digits_; }     // x̂ digits of the MLP's decode GEMVs (0: f32 x)
  uint32_t decodeDigits() const { return digits_; }            // x̂ digits of the other decode GEMVs (0: f32 x)
  uint32_t decodeGdnDigits() const { return gdn_digits_; }     // x̂ digits of the GDN projections' decode GEMVs
  uint32_t contextLength() const { return ctx_len_; }  // positions per slot actually used
  bool kvF16() const { return kv16_; }
  const ForwardStats& stats() const { return stats_; }
  const GpuModel& model() const { return model_; }

  // Buffers the generator writes/reads.
  const gpu::Buffer& rows() const { return rows_; }            // [max_batch, 8], then the page tables
  const gpu::Buffer& rowsScratch() const { return rows_tmp_; }  // [max_batch, 8]: moving rows between lanes
  const gpu::Buffer& activeRows() const { return active_; }    // u32 [4]: [0] = active decode rows
  const gpu::Buffer& params() const { return params_; }        // [max_batch, 64]
  const gpu::Buffer& counts() const { return counts_; }        // [slots, vocab]
  const gpu::Buffer& out() const { return out_; }              // [max_batch, max_steps, 44]
  const gpu::Buffer& mask() const { return mask_; }            // [max_batch, ceil(vocab/32)]: grammar rows' allowed tokens
  const gpu::Buffer& prefillMask() const { return pmask_; }    // [ceil(vocab/32)]: the prefill sampler's
  const gpu::Buffer& logits() const { return logits_; }        // [max_batch, vocab]
  const gpu::Buffer& prefillRows() const { return prows_; }    // [1, 8], then the page tables
  const gpu::Buffer& prefillMeta() const { return pmeta_; }    // [T, slot]
  const gpu::Buffer& prefillIds() const { return pids_; }      // [chunk]
  const gpu::Buffer& prefillParams() const { return pparams_; }
  const gpu::Buffer& prefillOut() const { return pout_; }      // [1, 1, 44]
  const gpu::Buffer& prefillLogits() const { return plogits_; }  // [1, vocab]
  const gpu::Buffer& hidden() const { return hidden_; }        // [max_batch, H] (tests)
  const gpu::Buffer& prefillHidden() const { return phidden_; }  // [chunk, H] (tests)

 private:
  // olmo2's whole-projection q/k norm (qkv_norm.wgsl) into qkvn_ / pqkvn_, decode and prefill.
  struct QkvNormOps {
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bg, pbg;
  };
  struct AttnOps {
    kernels::GemvOp qkv, o;
    const gpu::Kernel* attn = nullptr;  // decode: q/k norm + RoPE + KV store fused in (attention.wgsl FUSED)
                                        // or attention_cpu.wgsl (CPU adapters: also the prefill's pattn)
    gpu::BindGroup attn_bg;
    uint32_t attn_gx = 0;  // decode grid x: HQ, or ceil(HQ / 4) with attention_cpu.wgsl
    const gpu::Kernel* attn1 = nullptr;  // decode with SPLIT > 1: the same with one range, writing mix_ itself
    gpu::BindGroup attn1_bg;
    // prefill
    kernels::RmsNormOp pnorm;
    kernels::GemmOp pqkv, po;
    const gpu::Kernel *pprep = nullptr, *pattn = nullptr;
    gpu::BindGroup pprep_bg, pattn_bg;
    uint32_t pattn_gx = 0, pattn_gz = 1;  // prefill grid x and z: HQ and 1, or ceil(HQ / 4) and 2 (attention_cpu)
    uint32_t pattn_bq = 1;  // tokens per workgroup along y (attention_prefill.wgsl: BQ, with x = the KV heads)
    uint32_t pprep_gx = 0;  // qk_prepare's heads: HQ + HKV, or HQ on a KV-shared layer (gemma4: q only)
    bool pnorm_used = true;  // false: no input norm (olmo2), or the parallel block's norm op runs instead
    std::optional<QkvNormOps> qkvn;
  };
  struct GdnOps {
    kernels::GemvOp in, out;
    kernels::GdnConvOp conv;
    kernels::GdnRecurrentOp rec;
    kernels::RmsNormOp pnorm;
    kernels::GemmOp pin, pout;
    kernels::GdnConvOp pconv;
    kernels::GdnPrefillOp pmix;
  };
  struct LayerOps {
    bool full = true;
    std::unique_ptr<AttnOps> attn;
    std::unique_ptr<GdnOps> gdn;
    kernels::GemvOp up, down;
    kernels::RmsNormOp ppost;
    kernels::GemmOp pup, pdown;
    // The families beyond llama / qwen (docs/architectures.md): norm dispatches where the GEMV's fused RMSNorm
    // prologue cannot express the layer (LayerNorm, a parallel block, post-norms added to the residual), decode
    // (n_*) and prefill (pn_*). n_mlp runs before the attention in a parallel block.
    std::optional<kernels::RmsNormOp> n_in, n_mlp, n_attn_out, n_mlp_out, pn_mlp, pn_attn_out, pn_mlp_out;
    bool ppost_used = true;  // ppost is the prefill's pre-MLP norm (false: none, or pn_mlp before the attention)
    // gemma4, after the MLP: the per-layer input gate (GELU-tanh) times the layer's per-layer input (per_layer.wgsl
    // MODE 1), its projection normed into the residual, then the layer scalar (MODE 2); decode and prefill.
    bool ple = false, scale = false;
    kernels::GemvOp ple_gate, ple_proj;
    kernels::GemmOp pple_gate, pple_proj;
    std::optional<kernels::RmsNormOp> n_ple, pn_ple;
    gpu::BindGroup ple_mul_bg, pple_mul_bg, scale_bg, pscale_bg;
  };
  struct Lookup {  // one embed.wgsl dispatch
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bg;
    uint32_t gy = 1;
  };

  Forward(gpu::Context& ctx, const GpuModel& m, const ForwardOptions& o) : ctx_(ctx), model_(m), opts_(o) {}
  Status createBuffers();
  Status createDecodeOps();
  Status createPrefillOps();
  Result<gpu::Buffer> buffer(uint64_t bytes, const char* label, uint64_t* counter);

  gpu::Context& ctx_;
  const GpuModel& model_;
  ForwardOptions opts_;
  ForwardStats stats_;
  uint32_t chunk_ = 0, ctx_len_ = 0;
  uint32_t pdigits_ = 0;      // prefillDigits()
  uint32_t pmlp_digits_ = 0;  // prefillMlpDigits()
  uint32_t mlp_digits_ = 0;   // decodeMlpDigits()
  uint32_t digits_ = 0;       // decodeDigits()
  uint32_t gdn_digits_ = 0;   // decodeGdnDigits()
  gpu::Buffer pxq_;       // the int8 prefill GEMMs' x̂ (kernels::GemmQ8), shared by every op
  bool kv16_ = false;  // the KV cache holds f16 (ForwardOptions::kv resolved)
  uint32_t pps_ = 1, pool_ = 1, snaps_ = 0;
  gpu::Buffer page_scratch_;
  std::vector<gpu::Buffer> snap_conv_, snap_state_;  // per layer (GDN layers only)

  gpu::Buffer rows_, rows_tmp_, active_, params_, counts_, out_, mask_, pmask_, logits_, hidden_, qkv_, proj_, mix_, act_,
      prep_;
  gpu::Buffer prows_, pmeta_, pids_, pparams_, pout_, plogits_, phidden_, pnormed_, pqkv_, pproj_, pq_, pmix_, pact_,
      pprep_, plast_;
  gpu::Buffer rope_, rope_local_;  // RoPE tables [ctx, R]: every layer's, and gemma3's sliding layers' (other base)
  // The families beyond llama / qwen: normed activations, a branch output before its post-norm, olmo2's normed
  // q|k|v (decode [B, .], prefill [T, .]), the last prefill row normed, and a meta word holding 1.
  gpu::Buffer normed_, normed2_, branch_, qkvn_, pnormed2_, pbranch_, pqkvn_, plastn_, one_;
  std::optional<kernels::RmsNormOp> n_final_, pn_final_;
  const gpu::Kernel* softcap_ = nullptr;  // gemma2's final-logit soft-cap (softcap.wgsl), decode and prefill
  gpu::BindGroup softcap_bg_, psoftcap_bg_;
  const gpu::Kernel* psoftcap_ = nullptr;
  const gpu::Buffer& ropeOf(int layer) const;
  Result<kernels::RmsNormOp> familyNorm(const gpu::Buffer& x, const gpu::Buffer& w, const gpu::Buffer* b,
                                        const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t rows,
                                        bool add) const;
  std::vector<gpu::Buffer> kc_, vc_, conv_state_, state_;  // per layer (empty where not used)
  std::vector<LayerOps> layers_;
  // gemma4's per-layer inputs: the shards' rows looked up into pli_ [rows, L * hpl], the model projection into
  // pliproj_, combined in place (per_layer.wgsl MODE 0); pgate_ [rows, hpl] the layer's gate; decode and prefill.
  gpu::Buffer pli_, pliproj_, pgate_, ppli_, ppliproj_, ppgate_;
  std::vector<gpu::Buffer> layer_index_;  // per layer: f32 [4] holding its index (per_layer.wgsl MODE 1's aux)
  std::vector<Lookup> ple_lookup_, pple_lookup_;
  kernels::GemvOp ple_model_;
  kernels::GemmOp pple_model_;
  const gpu::Kernel *ple_combine_ = nullptr, *ple_mul_ = nullptr, *layer_scale_ = nullptr;
  gpu::BindGroup ple_combine_bg_, pple_combine_bg_;
  std::vector<std::pair<const gpu::Kernel*, gpu::BindGroup>> embed_, pembed_;
  kernels::GemvOp lm_head_, plm_head_;
  std::optional<SampleOp> sample_, psample_;  // decode rows, the prefill row
  // Decode attention split over position ranges (attention.wgsl SPLIT) and merged by attention_combine.wgsl.
  uint32_t attn_split_ = 1;
  uint32_t attn_tpp_cap_ = 1;    // attention.wgsl TPP (threads per scored position): at most this
  uint32_t attn_tpp_fixed_ = 0;  // EWGPU_ATTN_TPP (0: by head dim)
  uint32_t attn_pvu_ = 8;        // attention.wgsl PVU (V rows a p·v lane loads at once); EWGPU_ATTN_PVU
  uint32_t attn_short_ = 0;      // decode positions served by attn1 (0: none); EWGPU_ATTN_SHORT
  gpu::Buffer attn_part_;
  const gpu::Kernel* combine_ = nullptr;
  gpu::BindGroup combine_bg_;
};

}  // namespace ewgpu
