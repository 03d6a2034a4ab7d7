// Host side of the GPU sampler (src/kernels/sample.wgsl): the per-request sampling parameters and their
// validation, the packing of those parameters into the kernel's 64-word parameter row, the decoding of one
// 44-word out entry, and a CPU reference that picks the same token as the kernel (same hash, same ordering
// keys, same fixed-point top-p mass). docs/sampling.md describes the buffers and the semantics.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "base/error.h"
#include "gpu/context.h"
#include "gpu/device_info.h"
#include "gpu/recorder.h"

namespace ewgpu {

// Buffer geometry of the sample kernel (words per row / entry).
inline constexpr uint32_t kSampleParamWords = 64;         // params: [B, 64]
inline constexpr uint32_t kSampleRowWords = 8;            // rows: [B, 8]
inline constexpr uint32_t kSampleOutWords = 44;           // out: [B, KMAX, 44]
inline constexpr uint32_t kSampleMaxTop = 20;             // top logprobs per step
inline constexpr uint32_t kSampleMaxStop = 8;             // stop token ids per request
inline constexpr uint32_t kSampleMaxBias = 16;            // logit_bias pairs per request
inline constexpr uint32_t kSampleInactive = 0xFFFFFFFFu;  // out token of a step where the row was inactive
inline constexpr uint32_t kCountPromptBit = 0x80000000u;  // counts: token occurs in the prompt
// Words of one row of the allowed-token mask buffer [B, ceil(V/32)] (bit id % 32 of word id / 32).
inline constexpr uint32_t sampleMaskWords(uint32_t vocab) { return (vocab + 31) / 32; }

// Word indices of rows[b*8 + i].
enum SampleRowField : uint32_t {
  kRowSlot = 0,       // counts slot of the row
  kRowPos = 1,        // next position to write
  kRowActive = 2,     // 1 active, 0 done
  kRowGenerated = 3,  // tokens sampled so far
  kRowToken = 4,      // last sampled id: the next step's input
  kRowOutIndex = 5,   // step of the current submission (out ring index, modulo KMAX)
  kRowFinish = 6,     // SampleFinish
  kRowStats = 7,      // reserved; with WRITE_STATS: survivors of top-k/top-p at the last step
};

enum class SampleFinish : uint32_t { kNone = 0, kStop = 1, kLength = 2 };

struct SamplingParams {
  float temperature = 1;         // 0 = greedy; [0, 100]
  float top_p = 1;               // (0, 1]; 1 = off
  uint32_t top_k = 0;            // 0 or >= vocab = off
  float repetition_penalty = 1;  // > 0 (HF semantics); 1 = off
  float presence_penalty = 0;    // [-2, 2] (OpenAI, generated tokens only)
  float frequency_penalty = 0;   // [-2, 2] (OpenAI, generated tokens only)
  uint64_t seed = 0;
  uint32_t max_tokens = std::numeric_limits<uint32_t>::max();  // >= 1; tokens to sample before finish=length
  std::vector<int32_t> stop_token_ids;                         // <= 8, each in [0, vocab)
  uint32_t n_logprobs = 0;                                     // top logprobs per step, <= 20 (needs logprobs)
  bool logprobs = false;                                       // write the sampled token's logprob
  std::vector<std::pair<int32_t, float>> logit_bias;           // <= 16 (id in [0, vocab), value in [-100, 100])
  // A grammar row (structured output): only the tokens set in the row of the kernel's mask buffer may be
  // sampled, and the row pauses (active 0, finish none) after every token, for the host to compute the next mask.
  bool token_mask = false;

  // BAD_REQUEST (detail: field, value, allowed range) when a value is out of range for this vocabulary.
  Status validate(int vocab) const;
};

// Fills row64[0..64) with the kernel's parameter row (unused words 0).
void encodeParams(const SamplingParams& p, uint32_t* row64);

struct TopLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// One step of one row in the out ring.
struct SampleOut {
  bool active = false;  // false: the row was already finished at this step (token = kSampleInactive)
  int32_t token = -1;
  float logprob = 0;                          // log_softmax of the processed logits (0 unless requested)
  std::vector<TopLogprob> top;                // descending logprob, ties by ascending id
  SampleFinish finish = SampleFinish::kNone;  // after this step
};

SampleOut decodeOut(const uint32_t* row44);

// The CPU reference of one kernel step for one row.
struct SampleReference {
  int32_t token = -1;
  float logprob = 0;
  std::vector<TopLogprob> top;
  uint32_t survivors = 0;        // tokens kept by top-k/top-p (1 for greedy)
  std::vector<float> processed;  // logits after penalties and bias (sanitised: NaN -> -FLT_MAX, clamped)
  // How close the decision was (the GPU's f32 exp/log may legitimately decide otherwise only when these are
  // tiny, see docs/sampling.md): the Gumbel score gap between the winner and the runner-up, and the distance
  // of the top-p target from the cumulative mass on either side of the threshold, as a fraction of the mass.
  double score_gap = INFINITY;
  double top_p_margin = INFINITY;
};

// logits: [V] raw logits; counts: [V] the row's slot (bit 31 prompt, bits 0..30 generated); generated: tokens
// sampled so far by the row (the hash counter). Returns the token the kernel picks; fills *top with the
// top-n logprobs when asked.
int32_t sampleReference(std::span<const float> logits, const SamplingParams& p, std::span<const uint32_t> counts,
                        uint32_t generated, std::vector<TopLogprob>* top = nullptr);
SampleReference sampleReferenceFull(std::span<const float> logits, const SamplingParams& p,
                                    std::span<const uint32_t> counts, uint32_t generated);

// Threads of the sample kernel's one workgroup per row (its WG): 1024 where the device allows it and its workgroup
// memory holds the reductions, 64 on CPU adapters (SwiftShader pays per invocation at every barrier, and compiles
// the kernel in less time: the default model's sampler took 2.1 s of CPU time to compile at 64 against 2.75 s at
// 256, and its decode steps 137 against 148 ms of CPU time, same tokens). One
// workgroup walks the whole vocabulary several times (more with top-k / top-p: radix-select passes), so on a GPU
// the threads in flight set the speed: on the H200 at V = 151936, 256 threads took 59 µs per greedy step and
// 1.04 ms per top-p step.
uint32_t sampleWorkgroupSize(const DeviceInfo& d);

// CPU adapters sample with sample_cpu.wgsl instead: the same picks, bindings and outputs, one invocation per row in
// plain loops with no barriers, so it compiles in a fraction of sample.wgsl's time (docs/kernels.md, "CPU adapters:
// plain-loop sampler and decode attention"). Its constants are V, KMAX, ADVANCE_POS, WRITE_STATS and ORDER_WG
// (sampleWorkgroupSize: the sums follow that sample.wgsl's order), not WG / UNROLL / HIST_COPIES.
// EWGPU_SAMPLE_CPU=0 turns it off (A/B runs against sample.wgsl). GPUs never take it.
bool sampleCpuServes(const DeviceInfo& d);

// Logits each invocation loads at once in the kernel's full-row loops (its UNROLL). One load at a time leaves
// each invocation waiting out a memory round trip per element; 8 at once also made SwiftShader 1.6-1.8x faster
// at V = 151936 (4 was between). EWGPU_SAMPLE_UNROLL overrides (1..8) for A/B runs.
uint32_t sampleUnroll();

// sample.wgsl split over workgroups (PHASE 1..5, docs/sampling.md "The split sampler"): the passes over the whole
// vocabulary run on ceil(V / 2048) workgroups per row and the one-workgroup finish walks a candidate list, instead of
// one workgroup per row walking the vocabulary about ten times for top-p. On by default where sample.wgsl runs;
// EWGPU_SAMPLE_SPLIT=0 turns it off (one dispatch, PHASE 0) for A/B runs.
bool sampleSplit();

// sample.wgsl's SG: its workgroup reductions by subgroup shuffles over that many neighbouring invocations (a power of
// two up to the subgroup size, at most 32 and at most `wg`), or 0 to reduce through workgroup memory. On by default
// on GPUs with subgroups; CPU adapters keep 0 (sample_cpu.wgsl serves them, and its bit-exact test compares it with
// sample.wgsl's workgroup-memory order). EWGPU_SAMPLE_SG=0 / 1 turns it off / on where the device has subgroups.
uint32_t sampleSubgroupReduce(const DeviceInfo& d, uint32_t wg);
// The workgroup size of the split step's phases (PHASE 1..5) for a sampler whose one dispatch (PHASE 0) has `wg`
// threads: at most kSampleSplitWg. A phase's workgroup walks at most 2048 tokens, or the short candidate list, where
// a workgroup per row walking the whole vocabulary wants every thread; on the H200 the split step took fewer GPU µs
// at 512 than at 1024 and the one dispatch more (docs/sampling.md, "Cost"). EWGPU_SAMPLE_SPLIT_WG overrides it.
uint32_t sampleSplitWorkgroupSize(uint32_t wg);

// What a decode step's rows ask of the sampler, which picks its dispatches from it (SampleOp::record).
enum class SampleBatch : uint8_t {
  kSampled,  // some row samples (temperature > 0): the split step where it exists (phases 1-5) and the batch has
             // at most SampleOp::sampledSplitRows() rows, else the one dispatch
  kGreedy,   // every active row greedy, some with logprobs: the one dispatch
  kArgmax,   // every active row greedy without logprobs: phases 1 and 4 where the split step exists and the batch
             // has at most SampleOp::argmaxSplitRows() rows (the chunks' maxima over ceil(V / 2048) workgroups per
             // row, then each row's finish), else the one dispatch
  kSampledTopK,  // some row samples, every sampling row with a top-k whose list phase 1 writes (sampleRowBatch), no
                 // row wants logprobs: phases 1, 4 and 5 (or 1 and 6: SampleOp::topKPhase6) where kSampled takes the
                 // five phases, else the one dispatch
};

// What one row asks of the sampler at this vocabulary (the executor joins its active rows' with sampleBatchJoin):
// kArgmax greedy without logprobs, kGreedy greedy with them, kSampledTopK a sampled row with 0 < top_k < vocab,
// top_k × ceil(vocab / kSampleChunk) <= kSampleCap, no logprobs and no grammar mask (sample.wgsl's early_k: phase 1
// lists its candidates, so phases 2 and 3 have nothing to do for it), kSampled any other sampled row.
// EWGPU_SAMPLE_EARLY_TOPK=0 turns kSampledTopK and the kernel's early list off (A/B runs).
SampleBatch sampleRowBatch(const SamplingParams& p, uint32_t vocab);
// The batch of rows asking a and b: the dispatches serving both.
SampleBatch sampleBatchJoin(SampleBatch a, SampleBatch b);
bool sampleEarlyTopK();
// kSampledTopK's finish: phase 6 (phase 4 that also does phase 5's rows, over the whole vocabulary in the list
// pipeline) instead of phases 4 and 5. EWGPU_SAMPLE_TOPK_PHASE6=1 (A/B runs).
bool sampleTopKPhase6();

// SampleOp::argmaxSplitRows()'s default: the most rows whose greedy batch takes phases 1 and 4. Phase 1 runs
// ceil(V / 2048) workgroups of up to 1024 invocations per row, which one wave of a large GPU holds for a few rows
// only; past that the one dispatch (a workgroup per row) costs less (docs/sampling.md). EWGPU_SAMPLE_ARGMAX_ROWS
// overrides (0: always the one dispatch).
inline constexpr uint32_t kSampleArgmaxSplitRows = 2;
uint32_t sampleArgmaxSplitRows();

// SampleOp::sampledSplitRows()'s default: the most rows whose sampled batch takes the five phases (phases 1-3 are
// ceil(V / 2048) workgroups per row as well). EWGPU_SAMPLE_SPLIT_ROWS overrides (0: always the one dispatch).
inline constexpr uint32_t kSampleSampledSplitRows = 8;
uint32_t sampleSampledSplitRows();

// The sampler's dispatches for up to `max_rows` rows: sample_cpu.wgsl or sample.wgsl in one dispatch, or
// sample.wgsl's five split phases with their scratch (created here) and its one-dispatch form beside them.
// `constants` are the kernel's (V, KMAX, ...).
class SampleOp {
 public:
  struct Buffers {
    const gpu::Buffer *logits, *params, *counts, *rows, *out, *mask;
  };
  static Result<SampleOp> create(gpu::Context& ctx, bool cpu_kernel, bool split, gpu::Constants constants,
                                 const Buffers& b, uint32_t max_rows);
  // The dispatches for a batch of `rows` (SampleBatch above). Ops without the split step have one dispatch for
  // every batch.
  void record(gpu::Recorder& rec, uint32_t rows, SampleBatch batch = SampleBatch::kSampled) const;
  uint32_t dispatches(uint32_t rows, SampleBatch batch = SampleBatch::kSampled) const;
  uint32_t argmaxSplitRows() const { return argmax_rows_; }
  void setArgmaxSplitRows(uint32_t rows) { argmax_rows_ = rows; }
  uint32_t sampledSplitRows() const { return sampled_rows_; }
  void setSampledSplitRows(uint32_t rows) { sampled_rows_ = rows; }
  bool topKPhase6() const { return topk_phase6_; }
  // Records kSampledTopK batches as phases 1 and 6 from now on (on), or as phases 1, 4 and 5, compiling phase 6 on
  // first use (create() turns it on under EWGPU_SAMPLE_TOPK_PHASE6=1). Split ops only.
  Status setTopKPhase6(gpu::Context& ctx, bool on);
  bool split() const { return steps_.size() > 1; }
  // split: u32 [rows, kSampleCtrStride]; word 0 of each row is the last step's list length (past kSampleCap: the
  // row took the whole-vocabulary finish), then the row's top-p mass histogram, then phase 1's count of an early
  // top-k list (zero between steps).
  const gpu::Buffer& candidates() const { return ctr_; }

 private:
  struct Step {
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bg;
    bool chunked = false;  // grid (chunks, rows), else (rows)
  };
  std::vector<Step> steps_;
  Step whole_;  // split ops: PHASE 0 too
  uint32_t chunks_ = 1;
  uint32_t argmax_rows_ = sampleArgmaxSplitRows();
  uint32_t sampled_rows_ = sampleSampledSplitRows();
  bool topk_phase6_ = false;
  gpu::Constants split_constants_;  // the split phases' (phase 6 is compiled from them on demand)
  Buffers buffers_{};
  gpu::Buffer scratch_, ctr_;
};
inline constexpr uint32_t kSampleChunk = 2048;   // sample.wgsl CHUNK
inline constexpr uint32_t kSampleCap = 4096;     // sample.wgsl CAP
inline constexpr uint32_t kSampleSplitWg = 512;  // sampleSplitWorkgroupSize's limit
inline constexpr uint32_t kSampleBins = 512;     // sample.wgsl NB
inline constexpr uint32_t kSampleCtrStride = 2 + 3 * kSampleBins;  // sample.wgsl CTR_STRIDE

// Exposed for tests: the order-preserving key of a float, and the Exp(1) draw of token i at (seed, generated).
uint32_t sampleOrderKey(float x);
double sampleExpDraw(uint64_t seed, uint32_t generated, uint32_t token);

}  // namespace ewgpu
