#include "runtime/forward.h"

#include "kernels/attention_cpu.h"
#include "kernels/sampling.h"
#include "model/reference_model.h"
#include "model/expected_params.h"
#include "model/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ewgpu {
namespace {

using kernels::Epilogue;
using kernels::GemvConfig;

kernels::GdnDims gdnDims(const ModelConfig& c) {
  kernels::GdnDims d;
  d.nk = c.lin_k_heads;
  d.nv = c.lin_v_heads;
  d.kd = c.lin_k_dim;
  d.vd = c.lin_v_dim;
  d.ks = c.lin_conv_kernel;
  d.eps = c.rms_eps;
  return d;
}

// embed.wgsl's grid y for one row: a workgroup of 64 threads writes 512 elements.
uint32_t embedGroupsPerRow(const ModelConfig& c) { return (c.hidden + 511) / 512; }

// Bytes of one KV page (K and V of every attention layer) and of one recurrent-state snapshot (every GDN layer).
// A layer with a KV cache of its own: attention (not Qwen3.5's GDN) and not one of gemma4's KV-shared layers.
bool ownsKv(const ModelConfig& c, int l) { return c.isFullAttention(l) && !c.isKvShared(l); }

// Elements of one KV page of layer l's K (or V): its KV heads and head dim (gemma4 varies them by layer).
uint64_t layerPageElems(const ModelConfig& c, int l) {
  return (uint64_t)c.kvHeadsOf(l) * kPageTokens * c.headDimOf(l);
}

uint64_t pageBytes(const ModelConfig& c) {
  uint64_t b = 0;
  for (int l = 0; l < c.n_layers; ++l)
    if (ownsKv(c, l)) b += 2ull * layerPageElems(c, l) * 4;
  return b;
}

// The widest layer's query width (HQ · D) and MLP intermediate, and the largest head dim (gemma4 varies them).
uint32_t maxQd(const ModelConfig& c) {
  uint32_t m = (uint32_t)(c.n_heads * c.head_dim);
  for (int l = 0; l < c.n_layers; ++l) m = std::max<uint32_t>(m, c.n_heads * c.headDimOf(l));
  return m;
}
uint32_t maxInter(const ModelConfig& c) {
  uint32_t m = (uint32_t)c.intermediate;
  for (int l = 0; l < c.n_layers; ++l) m = std::max<uint32_t>(m, c.intermediateOf(l));
  return m;
}
uint32_t maxHeadDim(const ModelConfig& c) {
  uint32_t m = (uint32_t)c.head_dim;
  for (int l = 0; l < c.n_layers; ++l) m = std::max<uint32_t>(m, c.headDimOf(l));
  return m;
}
// Rotary dims of a layer's table: gemma4's tables span the whole head (the full layers' proportional RoPE leaves
// the frequencies past its share zero); every other architecture's rotaryDim().
uint32_t rotaryOf(const ModelConfig& c, int l) { return c.isGemma4() ? c.headDimOf(l) : c.rotaryDim(); }
// Floats of gemma4's per-layer inputs per row: L · hpl (0 elsewhere).
uint64_t pleWidth(const ModelConfig& c) { return c.isGemma4() ? (uint64_t)c.n_layers * c.ple_dim : 0; }

uint64_t snapshotBytes(const ModelConfig& c) {
  const kernels::GdnDims gd = gdnDims(c);
  uint64_t b = 0;
  for (int l = 0; l < c.n_layers; ++l)
    if (!c.isFullAttention(l)) b += (uint64_t)(gd.convStateFloats() + gd.stateFloats()) * 4;
  return b;
}

// Prefill attention in tiles on GPUs (attention_prefill.wgsl); EWGPU_ATTN_PREFILL=0 off. Tokens per workgroup:
// EWGPU_ATTN_BQ, else 64 with one lane per query head and token, 32 with two (heads over 64). H200, 512 / 4096-token
// prompts (docs/measurements/h200-run23): Llama-3.2-1B (one lane) 21.9-22.1k / 19.5k tok/s with 64, 22.5k / 18.7k
// with 32; Qwen3-0.6B (two lanes) 22.1-22.6k / 14.3k with 64, 26.5k / 15.4k with 32.
bool attnPrefillTiled() {
  const char* e = std::getenv("EWGPU_ATTN_PREFILL");
  return !e || std::string(e) != "0";
}
uint32_t attnPrefillBq(uint32_t lanes) {
  const char* e = std::getenv("EWGPU_ATTN_BQ");
  return e ? (uint32_t)std::strtoul(e, nullptr, 10) : lanes >= 2 ? 32 : 64;
}
// Threads per (query head, token) of attention_prefill.wgsl, splitting the head's dims: 2 for heads over 64, else 1;
// EWGPU_ATTN_LANES=1|2|4 overrides where each lane's share is at most 64 dims and a whole number of vec4.
uint32_t attnPrefillLanes(uint32_t d) {
  uint32_t lanes = d > 64 ? 2 : 1;
  if (const char* e = std::getenv("EWGPU_ATTN_LANES")) {
    const uint32_t v = (uint32_t)std::strtoul(e, nullptr, 10);
    if ((v == 1 || v == 2 || v == 4) && (d / 4) % v == 0 && d / 4 / v <= 16) lanes = v;
  }
  return lanes;
}
// attention_prefill.wgsl's lanes meet by subgroup shuffles (EWGPU_ATTN_PSG=0: through workgroup memory).
bool attnPrefillSg() {
  const char* e = std::getenv("EWGPU_ATTN_PSG");
  return !e || std::string(e) != "0";
}
// Positions per K/V tile of attention_prefill.wgsl: 1024 / D (two 4 KB tiles), at most 32; EWGPU_ATTN_BK overrides.
// H200, 512 / 4096 tokens (docs/measurements/h200-run23, call f): Qwen3-0.6B (D 128) 26.9k / 16.9k tok/s with 8
// positions, 25.3-26.5k / 15.4k with 16, 25.1k / 11.7k with 32; Llama-3.2-1B (D 64) 22.4k / 19.6k with 16,
// 21.6-21.7k / 19.5k with 32, 22.1k / 19.1k with 8.
uint32_t attnPrefillBk(uint32_t d) {
  const char* e = std::getenv("EWGPU_ATTN_BK");
  return std::clamp<uint32_t>(e ? (uint32_t)std::strtoul(e, nullptr, 10) : 1024 / d, 1, 32);
}
// Qwen3.5's GDN prefill: the column scan (gdn_scan.wgsl) on GPUs with subgroups, the token-by-token recurrence
// (gdn_recurrent.wgsl PREFILL) on GPUs without, the chunked form on CPU adapters; EWGPU_GDN_PREFILL=
// sequential|chunked|columns overrides (columns falls back to sequential without subgroups). H200, one layer at the
// 2B's dims (gdn_bench, docs/measurements/h200-run25): 0.043 / 0.258 / 0.655 ms for 64 / 512 / 1024 tokens as
// columns, 0.18 / 1.40 / 3.21 sequential, 0.73 / 2.39 / 4.63 chunked; the 2B's prefill at 512 / 4096 tokens 9.6k /
// 7.8k tok/s with columns, 6.7k / 5.7k sequential (the same run, ABAB).
kernels::GdnPrefillAlgo gdnPrefillAlgo(const DeviceInfo& d) {
  const char* e = std::getenv("EWGPU_GDN_PREFILL");
  if (e && std::string(e) == "sequential") return kernels::GdnPrefillAlgo::kSequential;
  if (e && std::string(e) == "chunked") return kernels::GdnPrefillAlgo::kChunked;
  if (d.cpuAdapter() && !(e && std::string(e) == "columns")) return kernels::GdnPrefillAlgo::kChunked;
  return d.subgroups ? kernels::GdnPrefillAlgo::kColumns : kernels::GdnPrefillAlgo::kSequential;
}
// Decode positions up to which the attention takes one range per head and no merge (Forward::attn_short_). H200
// (docs/measurements/h200-run27), one range against the split: positions 128-256 Llama-3.2-1B 1228 / 1179 tok/s,
// Qwen3-0.6B 994 / 975; positions 256-384 the 1B even (1219-1223 / 1222-1228), the 0.6B 816-820 / 891-914.
constexpr uint32_t kAttnShortDefault = 256;

// Decode attention shared by a KV group on GPUs (attention_gqa.wgsl); EWGPU_ATTN_GQA=1 on, 0 off.
bool attnGqa() {
  const char* e = std::getenv("EWGPU_ATTN_GQA");
  return e && std::string(e) == "1";
}

// The q4 formats, the only weights the int8-x̂ GEMV and GEMM paths take.
bool q4Weights(const ModelConfig& c) { return c.quant == Quant::kQ4F16_1 || c.quant == Quant::kQ4F32_1; }

uint32_t pagesFor(uint32_t positions) { return (positions + kPageTokens - 1) / kPageTokens; }

uint32_t attnWidth(const ModelConfig& c) {
  uint32_t w = ((c.arch == Arch::kQwen3_5 ? 2u : 1u) * c.n_heads + 2u * c.n_kv_heads) * c.head_dim;
  for (int l = 0; l < c.n_layers; ++l) w = std::max<uint32_t>(w, (c.n_heads + 2u * c.kvHeadsOf(l)) * c.headDimOf(l));
  return w;
}

// The families beyond llama / qwen need norm outputs and branch outputs of their own (Forward::normed_ ...).
bool familyBuffers(const ModelConfig& c) {
  return c.norm == NormKind::kLayer || c.post_norms || c.parallel_residual || c.qk_norm_full || !c.pre_norms;
}
// Floats per row (decode) or token (prefill) those buffers add.
uint64_t familyWidth(const ModelConfig& c) {
  return familyBuffers(c) ? 3ull * c.hidden + (c.qk_norm_full ? attnWidth(c) : 0) : 0;
}

Epilogue mlpEpilogue(const ModelConfig& c) {
  switch (c.mlp) {
    case MlpKind::kSwiGlu: return Epilogue::kSwiGlu;
    case MlpKind::kGeGlu: return Epilogue::kGeGlu;
    case MlpKind::kGelu: return Epilogue::kGelu;
    case MlpKind::kGeluTanh: return Epilogue::kGeluTanh;
  }
  return Epilogue::kSwiGlu;
}

// A RoPE table [ctx, R]: cos then sin of each position's angles (ropeSpecOf: scaling, LongRoPE, YaRN), in double.
std::vector<float> ropeTable(const ref::RopeSpec& spec, uint32_t positions) {
  const int R = spec.rotary_dim;
  std::vector<float> table((size_t)positions * R);
  std::vector<double> cs, sn;
  for (uint32_t p = 0; p < positions; ++p) {
    ref::ropeCosSin(spec, p, cs, sn);
    for (int i = 0; i < R / 2; ++i) {
      table[(size_t)p * R + i] = (float)cs[i];
      table[(size_t)p * R + R / 2 + i] = (float)sn[i];
    }
  }
  return table;
}

}  // namespace

Result<std::unique_ptr<Forward>> Forward::create(gpu::Context& ctx, const GpuModel& model, const ForwardOptions& o,
                                                 const std::function<Status()>& while_compiling) {
  std::unique_ptr<Forward> f(new Forward(ctx, model, o));
  const ModelConfig& c = model.config;
  if (o.max_batch < 1 || o.max_batch > kMaxDecodeRows)
    return makeError(ErrorCode::kBadRequest, "max_batch must be 1.." + std::to_string(kMaxDecodeRows),
                     {{"max_batch", o.max_batch}});
  if (o.max_batch > 8 && c.quant == Quant::kQ3F16_1)
    return makeError(ErrorCode::kBadRequest, "q3f16_1 models decode at most 8 rows", {{"max_batch", o.max_batch}});
  if (o.slots < o.max_batch)  // a decode row uses the slot of its index (Generator)
    return makeError(ErrorCode::kBadRequest, "slots must be at least max_batch",
                     {{"slots", o.slots}, {"max_batch", o.max_batch}});
  f->ctx_len_ = o.context ? o.context : c.contextLength();
  f->chunk_ = o.prefill_chunk ? o.prefill_chunk : (uint32_t)std::clamp(c.prefill_chunk, 16, 1024);
  f->chunk_ = std::min(f->chunk_, f->ctx_len_);
  f->pps_ = pagesFor(f->ctx_len_);
  ForwardOptions::Kv kv = o.kv;
  if (kv == ForwardOptions::Kv::kAuto) {
    const char* e = std::getenv("EWGPU_KV");
    if (e && std::string(e) == "f16") kv = ForwardOptions::Kv::kF16;
    else if (e && std::string(e) == "f32") kv = ForwardOptions::Kv::kF32;
    // gemma4 keeps f32: its attention has scale 1 over RMS-normed q and k, and an f16 cache put its tiny fixture's
    // logits 6.2e-3 of max |logit| off transformers on the H200 (the other families ≤ 5.3e-4; fixture_test).
    else if (ctx.info().cpuAdapter() || c.arch == Arch::kGemma4) kv = ForwardOptions::Kv::kF32;
    else kv = ForwardOptions::Kv::kF16;
  }
  f->kv16_ = kv == ForwardOptions::Kv::kF16;
  const uint64_t pool = (uint64_t)o.slots * f->pps_ + (o.cache_pages == ForwardOptions::kAuto ? f->pps_ : o.cache_pages);
  if (pool >= (1ull << 24))
    return makeError(ErrorCode::kBadRequest, "too many KV pages", {{"pages", pool}, {"cache_pages", o.cache_pages}});
  f->pool_ = (uint32_t)pool;
  f->snaps_ = f->hybrid() ? (o.snapshots == ForwardOptions::kAuto ? o.slots + 1 : std::min(o.snapshots, 1024u)) : 0;
  for (int l = 0; l <= c.n_layers; ++l) {  // every layer's head dim (gemma4 varies it), then the model's
    const int D = l < c.n_layers ? c.headDimOf(l) : c.head_dim;
    if (c.hidden % 32 || D % 4 || (D > 256 && D != 512))  // qk_prepare HEAD512 takes exactly 512
      return makeError(ErrorCode::kInvalidModelFolder, "unsupported dimensions for the GPU kernels",
                       {{"hidden", c.hidden},
                        {"head_dim", D},
                        {"problem", "hidden % 32, or head_dim > 256 and not 512"}});
  }
  // The memory budget: 90% of the device-local memory where the adapter reports it (docs/engine.md, "Rows").
  if (const uint64_t dev = ctx.info().deviceLocalBytes()) {
    const uint64_t budget = dev / 10 * 9;
    const uint64_t need = model.weight_bytes + fixedBytes(c, o.max_batch, f->ctx_len_, f->chunk_) +
                          (uint64_t)o.slots * slotBytes(c, f->ctx_len_);
    if (need > budget)
      return makeError(ErrorCode::kOutOfMemory, "the decode rows do not fit the device memory",
                       {{"rows", o.max_batch},
                        {"slots", o.slots},
                        {"context", f->ctx_len_},
                        {"bytes", need},
                        {"budget", budget},
                        {"rows_that_fit", rowsThatFit(c, f->ctx_len_, model.weight_bytes, budget)}});
  }
  EWGPU_TRY(f->createBuffers());
  // Every pipeline of the model compiles on Dawn's worker threads while the ops are built; on a CPU adapter
  // (SwiftShader) compilation is most of the load time (docs/benchmarks.md, "Start-up").
  ctx.deferPipelines(true);
  Status built = f->createDecodeOps();
  if (built) built = f->createPrefillOps();
  ctx.deferPipelines(false);
  Status beside = built && while_compiling ? while_compiling() : Status{};
  Status compiled = ctx.awaitPipelines();
  EWGPU_TRY(std::move(built));
  EWGPU_TRY(std::move(beside));
  EWGPU_TRY(std::move(compiled));
  return f;
}

uint64_t Forward::slotBytes(const ModelConfig& c, uint32_t context) {
  const kernels::GdnDims gd = gdnDims(c);
  (void)gd;
  // Sampling counts, the slot's own KV pages, its recurrent state.
  return (uint64_t)c.vocab * 4 + pagesFor(context) * pageBytes(c) + snapshotBytes(c);
}

uint64_t Forward::fixedBytes(const ModelConfig& c, uint32_t rows, uint32_t context, uint32_t prefill_chunk) {
  const kernels::GdnDims gd = gdnDims(c);
  const uint64_t qd = maxQd(c), inter = maxInter(c);
  const bool gdn = c.arch == Arch::kQwen3_5;
  const uint64_t mixw = std::max<uint64_t>(qd, gdn ? gd.outWidth() : 0);
  const uint64_t projw = gdn ? gd.projWidth() : 1, prepw = gdn ? gd.prepWidth() : 1;
  const uint64_t ple = 2 * pleWidth(c) + (c.isGemma4() ? c.ple_dim : 0);  // gemma4's per-layer inputs and gate
  // The int8 prefill GEMMs' x̂ (two digits at most) for the widest input.
  const uint64_t xq = kernels::quantRowWords((uint32_t)std::max({(uint64_t)c.hidden, qd, mixw, inter}), 2);
  const uint64_t per_token =
      (uint64_t)c.hidden * 2 + attnWidth(c) + projw + mixw + inter + prepw + qd + familyWidth(c) + ple + xq;
  const uint64_t per_row = (uint64_t)c.vocab + c.hidden + attnWidth(c) + projw + mixw + inter + prepw +
                           (uint64_t)c.n_heads * 16 * (maxHeadDim(c) + 4) +  // attention partials at most
                           familyWidth(c) + ple;
  const uint64_t rope = c.isGemma4() ? (uint64_t)c.head_dim + c.global_head_dim : (uint64_t)c.rotaryDim();
  // Prefix reuse at its defaults: one context of cached pages, the trash and scratch pages, rows + 1 snapshots.
  const uint64_t reuse = (pagesFor(context) + 2) * pageBytes(c) + (gdn ? (rows + 1) * snapshotBytes(c) : 0);
  return 4 * ((rows + 1) * per_row + (uint64_t)prefill_chunk * per_token + (uint64_t)context * rope) + reuse;
}

uint32_t Forward::rowsThatFit(const ModelConfig& c, uint32_t context, uint64_t weight_bytes, uint64_t budget) {
  const uint32_t chunk = (uint32_t)std::clamp(c.prefill_chunk, 16, 1024);
  for (uint32_t r = kMaxDecodeRows; r >= 1; --r)
    if (weight_bytes + fixedBytes(c, r, context, chunk) + r * slotBytes(c, context) <= budget) return r;
  return 0;
}

// A norm op over `rows` rows (meta[0]: the decode's active-rows word, or the prefill meta): LayerNorm for the
// pre-norms of LayerNorm models, RMSNorm added into `out` for post-norms (add), RMSNorm otherwise.
Result<kernels::RmsNormOp> Forward::familyNorm(const gpu::Buffer& x, const gpu::Buffer& w, const gpu::Buffer* b,
                                               const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t rows,
                                               bool add) const {
  const ModelConfig& c = model_.config;
  kernels::RmsNormOp::Mode m;
  m.layer = c.norm == NormKind::kLayer && !add;
  m.bias = b;
  m.add = add;
  return kernels::RmsNormOp::create(ctx_, x, w, out, meta, c.hidden, c.rms_eps, rows, m);
}

const gpu::Buffer& Forward::ropeOf(int layer) const {
  const ModelConfig& c = model_.config;
  if (c.isGemma4()) return c.windowOf(layer) > 0 ? rope_local_ : rope_;  // sliding / full tables
  return rope_local_.handle() && c.ropeThetaOf(layer) != c.rope_theta ? rope_local_ : rope_;
}

Result<gpu::Buffer> Forward::buffer(uint64_t bytes, const char* label, uint64_t* counter) {
  if (counter) *counter += bytes;
  return ctx_.createBuffer(std::max<uint64_t>(bytes, 16), gpu::BufferKind::kStorage, label);
}

Status Forward::createBuffers() {
  const ModelConfig& c = model_.config;
  const uint64_t B = opts_.max_batch, T = chunk_, H = c.hidden, V = c.vocab;
  const uint64_t qd = maxQd(c), inter = maxInter(c);
  kernels::GdnDims gd = gdnDims(c);
  const uint64_t mixw = std::max<uint64_t>(qd, c.arch == Arch::kQwen3_5 ? gd.outWidth() : 0);
  const uint64_t projw = c.arch == Arch::kQwen3_5 ? gd.projWidth() : 1, prepw = c.arch == Arch::kQwen3_5 ? gd.prepWidth() : 1;
  uint64_t* act = &stats_.activation_bytes;
  const uint64_t tables = (uint64_t)opts_.slots * pps_;  // page-table words after the rows
  EWGPU_ASSIGN(rows_, buffer((B * kRowWords + tables) * 4, "rows", nullptr));
  EWGPU_ASSIGN(rows_tmp_, buffer(B * kRowWords * 4, "rows-scratch", nullptr));
  EWGPU_ASSIGN(active_, buffer(16, "active-rows", nullptr));
  const uint32_t all[4] = {(uint32_t)B, 0, 0, 0};
  ctx_.write(active_, 0, all, sizeof all);
  EWGPU_ASSIGN(params_, buffer(B * kParamWords * 4, "params", nullptr));
  EWGPU_ASSIGN(counts_, buffer((uint64_t)opts_.slots * V * 4, "counts", act));
  EWGPU_ASSIGN(out_, buffer(B * opts_.max_steps * kOutWords * 4, "out", nullptr));
  EWGPU_ASSIGN(logits_, buffer(B * V * 4, "logits", act));
  // The decode GEMVs' outputs keep kL2SinkBytes past their rows (the one-row GEMVs' L2 touches write there).
  const uint64_t sink = kernels::kL2SinkBytes;
  EWGPU_ASSIGN(hidden_, buffer(B * H * 4 + sink, "hidden", act));
  EWGPU_ASSIGN(qkv_, buffer(B * attnWidth(c) * 4 + sink, "qkv", act));
  EWGPU_ASSIGN(proj_, buffer(B * projw * 4 + sink, "proj", act));
  EWGPU_ASSIGN(mix_, buffer(B * mixw * 4, "mix", act));
  EWGPU_ASSIGN(act_, buffer(B * inter * 4 + sink, "act", act));
  EWGPU_ASSIGN(prep_, buffer(B * prepw * 4, "prep", act));
  // Decode attention: enough position ranges that heads × rows × ranges fill ~512 workgroups (at most 32); one
  // range on CPU adapters (SwiftShader runs workgroups on a few threads). EWGPU_ATTN_SPLIT overrides. Ranges
  // shrink with the position (empty ones cost a workgroup that returns), so a wide split costs little early and
  // pays at long context (docs/measurements/h200-run16: 4000 positions, 1B 8 -> 16 ranges 1.09x, 2B 16 -> 32 1.06x).
  attn_split_ = std::clamp<uint32_t>(512 / std::max<uint32_t>(1, c.n_heads * (uint32_t)B), 1, 32);
  if (ctx_.info().cpuAdapter()) attn_split_ = 1;
  if (const char* e = std::getenv("EWGPU_ATTN_SPLIT")) attn_split_ = std::clamp<uint32_t>(std::atoi(e), 1, 64);
  if (c.isGemma4()) attn_split_ = 1;  // attention_combine takes one head dim; gemma4's vary by layer
  // Early in a sequence the ranges are a few positions each, and the merge is a dispatch of its own: up to
  // attn_short_ positions one range per head is recorded instead (recordDecodeStep's max_pos).
  attn_short_ = attn_split_ > 1 ? kAttnShortDefault : 0;
  if (const char* e = std::getenv("EWGPU_ATTN_SHORT")) attn_short_ = attn_split_ > 1 ? (uint32_t)std::atoi(e) : 0;
  if (const char* e = std::getenv("EWGPU_ATTN_PVU")) attn_pvu_ = std::clamp<uint32_t>(std::atoi(e), 1, 8);
  // attention.wgsl's threads per scored position (TPP), at most the subgroup size where subgroups hold them (1
  // elsewhere); per layer, a quarter of its head's vec4 columns (the pipelines below). EWGPU_ATTN_TPP = 1 / 2 / 4 / 8
  // fixes it (a CPU adapter with subgroups takes it too: tests).
  const char* tpp_env = std::getenv("EWGPU_ATTN_TPP");
  const uint32_t tpp_req = tpp_env ? (uint32_t)std::atoi(tpp_env) : 0;
  attn_tpp_fixed_ = !tpp_env ? 0 : tpp_req >= 8 ? 8 : tpp_req >= 4 ? 4 : tpp_req >= 2 ? 2 : 1;
  attn_tpp_cap_ = ctx_.info().subgroups && (!ctx_.info().cpuAdapter() || tpp_env)
                      ? std::clamp<uint32_t>(ctx_.info().subgroup_min_size, 1, 8) : 1;
  if (attn_split_ > 1)
    EWGPU_ASSIGN(attn_part_, buffer(B * c.n_heads * attn_split_ * (maxHeadDim(c) + 4) * 4, "attention-partials", act));
  EWGPU_ASSIGN(prows_, buffer((kRowWords + tables) * 4, "prefill-rows", nullptr));
  {
    std::vector<uint32_t> ident(tables);
    for (uint32_t i = 0; i < tables; ++i) ident[i] = i;  // slot s on pages [s * pps, (s + 1) * pps)
    ctx_.write(rows_, B * kRowWords * 4, ident.data(), tables * 4);
    ctx_.write(prows_, kRowWords * 4, ident.data(), tables * 4);
  }
  EWGPU_ASSIGN(pmeta_, buffer(16, "prefill-meta", nullptr));
  EWGPU_ASSIGN(pids_, buffer(T * 4, "prefill-ids", act));
  EWGPU_ASSIGN(pparams_, buffer(kParamWords * 4, "prefill-params", nullptr));
  EWGPU_ASSIGN(mask_, buffer(B * sampleMaskWords(V) * 4, "token-mask", nullptr));
  EWGPU_ASSIGN(pmask_, buffer(sampleMaskWords(V) * 4, "prefill-token-mask", nullptr));
  EWGPU_ASSIGN(pout_, buffer(kOutWords * 4, "prefill-out", nullptr));
  EWGPU_ASSIGN(plogits_, buffer(V * 4, "prefill-logits", act));
  EWGPU_ASSIGN(phidden_, buffer(T * H * 4, "prefill-hidden", act));
  EWGPU_ASSIGN(pnormed_, buffer(T * H * 4, "prefill-normed", act));
  EWGPU_ASSIGN(pqkv_, buffer(T * attnWidth(c) * 4, "prefill-qkv", act));
  EWGPU_ASSIGN(pproj_, buffer(T * projw * 4, "prefill-proj", act));
  EWGPU_ASSIGN(pq_, buffer(T * qd * 4, "prefill-q", act));
  EWGPU_ASSIGN(pmix_, buffer(T * mixw * 4, "prefill-mix", act));
  EWGPU_ASSIGN(pact_, buffer(T * inter * 4, "prefill-act", act));
  EWGPU_ASSIGN(pprep_, buffer(T * prepw * 4, "prefill-prep", act));
  EWGPU_ASSIGN(plast_, buffer(H * 4, "prefill-last", act));

  // RoPE tables [ctx, R]: cos then sin of each position's angles, computed in double (ropeTable). gemma3's
  // sliding layers have a base of their own, so a second table; gemma4's full layers (rope_) and sliding layers
  // (rope_local_) each their own spec (ropeSpecOf: f32 angles, the full layers' proportional frequencies).
  int g4_full = -1, g4_sliding = -1;
  for (int l = 0; l < c.n_layers && c.isGemma4(); ++l) (c.windowOf(l) > 0 ? g4_sliding : g4_full) = l;
  for (int pass = 0; pass < 2; ++pass) {
    const double theta = pass ? c.rope_local_theta : c.rope_theta;
    ref::RopeSpec spec = ropeSpecOf(c, 0);
    if (c.isGemma4()) {
      const int l = pass ? g4_sliding : g4_full;
      if (l < 0) continue;
      spec = ropeSpecOf(c, l);
    } else {
      if (pass && !(c.rope_local_theta > 0 && c.rope_local_theta != c.rope_theta)) break;
      spec.theta = theta;
    }
    const std::vector<float> table = ropeTable(spec, ctx_len_);
    gpu::Buffer& dst = pass ? rope_local_ : rope_;
    EWGPU_ASSIGN(dst, buffer(table.size() * 4, pass ? "rope-local" : "rope", act));
    ctx_.write(dst, 0, table.data(), table.size() * 4);
  }
  if (familyBuffers(c)) {
    EWGPU_ASSIGN(normed_, buffer(B * H * 4, "normed", act));
    EWGPU_ASSIGN(normed2_, buffer(B * H * 4, "normed-2", act));
    EWGPU_ASSIGN(branch_, buffer(B * H * 4 + sink, "branch", act));
    EWGPU_ASSIGN(pnormed2_, buffer(T * H * 4, "prefill-normed-2", act));
    EWGPU_ASSIGN(pbranch_, buffer(T * H * 4, "prefill-branch", act));
    EWGPU_ASSIGN(plastn_, buffer(H * 4, "prefill-last-normed", act));
    if (c.qk_norm_full) {
      EWGPU_ASSIGN(qkvn_, buffer(B * attnWidth(c) * 4, "qkv-normed", act));
      EWGPU_ASSIGN(pqkvn_, buffer(T * attnWidth(c) * 4, "prefill-qkv-normed", act));
    }
    EWGPU_ASSIGN(one_, buffer(16, "one", nullptr));
    const uint32_t one[4] = {1, 0, 0, 0};
    ctx_.write(one_, 0, one, sizeof one);
  }
  if (pleWidth(c)) {  // gemma4's per-layer inputs
    EWGPU_ASSIGN(pli_, buffer(B * pleWidth(c) * 4, "per-layer-inputs", act));
    EWGPU_ASSIGN(pliproj_, buffer(B * pleWidth(c) * 4, "per-layer-projection", act));
    EWGPU_ASSIGN(pgate_, buffer(B * c.ple_dim * 4, "per-layer-gate", act));
    EWGPU_ASSIGN(ppli_, buffer(T * pleWidth(c) * 4, "prefill-per-layer-inputs", act));
    EWGPU_ASSIGN(ppliproj_, buffer(T * pleWidth(c) * 4, "prefill-per-layer-projection", act));
    EWGPU_ASSIGN(ppgate_, buffer(T * c.ple_dim * 4, "prefill-per-layer-gate", act));
    for (int l = 0; l < c.n_layers; ++l) {
      const float idx[4] = {(float)l, 0, 0, 0};
      gpu::Buffer b;
      EWGPU_ASSIGN(b, buffer(16, "layer-index", nullptr));
      ctx_.write(b, 0, idx, sizeof idx);
      layer_index_.push_back(std::move(b));
    }
  }

  for (int l = 0; l < c.n_layers; ++l) {
    gpu::Buffer kc, vc, cs, st;
    gpu::Buffer sc, ss;
    if (ownsKv(c, l)) {
      // The page pool and the trash page: [pool + 1, HKV, kPageTokens, D] (the layer's HKV and D).
      const uint64_t eb = kv16_ ? 2 : 4;
      uint64_t kv = ((uint64_t)pool_ + 1) * layerPageElems(c, l) * eb;
      EWGPU_ASSIGN(kc, buffer(kv, "k-cache", &stats_.kv_bytes));
      EWGPU_ASSIGN(vc, buffer(kv, "v-cache", &stats_.kv_bytes));
      uint64_t scratch = 0;
      for (int j = 0; j < c.n_layers; ++j)
        if (ownsKv(c, j)) scratch = std::max(scratch, layerPageElems(c, j) * eb);
      if (!page_scratch_.handle()) EWGPU_ASSIGN(page_scratch_, buffer(scratch, "kv-page-scratch", &stats_.kv_bytes));
    } else if (c.isFullAttention(l)) {
      // gemma4's KV-shared layer: no cache, it attends over its source layer's (kvSourceOf).
    } else {
      EWGPU_ASSIGN(cs, buffer(opts_.slots * gd.convStateFloats() * 4, "conv-state", &stats_.state_bytes));
      EWGPU_ASSIGN(st, buffer(opts_.slots * gd.stateFloats() * 4, "gdn-state", &stats_.state_bytes));
      if (snaps_) {
        EWGPU_ASSIGN(sc, buffer(snaps_ * gd.convStateFloats() * 4ull, "conv-state-snapshots", &stats_.state_bytes));
        EWGPU_ASSIGN(ss, buffer(snaps_ * gd.stateFloats() * 4ull, "gdn-state-snapshots", &stats_.state_bytes));
      }
    }
    snap_conv_.push_back(std::move(sc));
    snap_state_.push_back(std::move(ss));
    kc_.push_back(std::move(kc));
    vc_.push_back(std::move(vc));
    conv_state_.push_back(std::move(cs));
    state_.push_back(std::move(st));
  }
  return ctx_.takeError();
}

Status Forward::createDecodeOps() {
  const ModelConfig& c = model_.config;
  const uint32_t B = opts_.max_batch;
  const bool gated = c.arch == Arch::kQwen3_5;
  const kernels::Activations act = ewgpu::decodeActivations(opts_, ctx_.info(), c.arch);
  digits_ = q4Weights(c) && ctx_.info().packed_dot4 ? kernels::activationDigits(act) : 0;
  auto gemvCfg = [&](GemvConfig g) {
    g.act = act;
    g.active = &active_;
    return g;
  };
  mlp_digits_ = q4Weights(c) ? ewgpu::decodeMlpDigits(opts_, ctx_.info(), c.arch) : 0;
  const bool mlp_one = mlp_digits_ == 1;
  auto mlpCfg = [&](GemvConfig g) {
    if (mlp_one) g.act = kernels::Activations::kInt8;
    return g;
  };
  gdn_digits_ = q4Weights(c) ? ewgpu::decodeGdnDigits(opts_, ctx_.info(), c.arch) : 0;
  auto gdnCfg = [&](GemvConfig g) {
    if (gdn_digits_ && gdn_digits_ != digits_)
      g.act = gdn_digits_ == 1 ? kernels::Activations::kInt8 : kernels::Activations::kInt16;
    return g;
  };
  // Embedding: one dispatch per table chunk, ids from rows[b].token.
  const GpuMatrix& E = model_.embed;
  uint32_t start = 0;
  for (size_t ch = 0; ch < E.w.size(); ++ch) {
    for (int pass = 0; pass < 2; ++pass) {  // decode (ids = rows) and prefill (ids = uploaded)
      gpu::Constants k{{"QFMT", (int)E.format}, {"N", E.rows[ch]}, {"H", c.hidden}, {"ROW_START", start},
                       {"ID_STRIDE", pass == 0 ? kRowWords : 1}, {"ID_OFFSET", pass == 0 ? 4 : 0}};
      if (c.embed_scale != 1.0f) k["SCALE"] = c.embed_scale;
      auto kern = ctx_.kernel("embed", k);
      if (!kern) return std::move(kern).error();
      const gpu::Buffer& s = E.s.empty() ? E.w[ch] : E.s[ch];
      auto bg = ctx_.bindGroup(**kern, {{&E.w[ch]}, {&s}, {pass == 0 ? &rows_ : &pids_}, {pass == 0 ? &hidden_ : &phidden_}});
      if (!bg) return std::move(bg).error();
      (pass == 0 ? embed_ : pembed_).emplace_back(*kern, std::move(*bg));
    }
    start += E.rows[ch];
  }
  if (pleWidth(c)) {  // gemma4's per-layer inputs: the shards' rows, the model projection, combined (MODE 0)
    const uint32_t W = (uint32_t)pleWidth(c);
    const std::vector<int> shard_layers = gemma4PleShardLayers(c);
    uint32_t first = 0;  // the shard's first layer
    for (size_t s = 0; s < model_.ple_shards.size(); ++s) {
      const GpuMatrix& S = model_.ple_shards[s];
      uint32_t row0 = 0;
      for (size_t ch = 0; ch < S.w.size(); ++ch) {
        for (int pass = 0; pass < 2; ++pass) {
          gpu::Constants k{{"QFMT", (int)S.format}, {"N", S.rows[ch]}, {"H", S.k}, {"ROW_START", row0},
                           {"ID_STRIDE", pass == 0 ? kRowWords : 1}, {"ID_OFFSET", pass == 0 ? 4 : 0},
                           {"OUT_STRIDE", W}, {"OUT_OFFSET", first * c.ple_dim}};
          auto kern = ctx_.kernel("embed", k);
          if (!kern) return std::move(kern).error();
          const gpu::Buffer& sc = S.s.empty() ? S.w[ch] : S.s[ch];
          auto bg = ctx_.bindGroup(
              **kern, {{&S.w[ch]}, {&sc}, {pass == 0 ? &rows_ : &pids_}, {pass == 0 ? &pli_ : &ppli_}});
          if (!bg) return std::move(bg).error();
          (pass == 0 ? ple_lookup_ : pple_lookup_).push_back({*kern, std::move(*bg), (S.k + 511) / 512});
        }
        row0 += S.rows[ch];
      }
      first += shard_layers[s];
    }
    EWGPU_ASSIGN(ple_model_, kernels::GemvOp::create(ctx_, model_.ple_projection.view(), hidden_, pliproj_,
                                                     gemvCfg({Epilogue::kStore, B})));
    const gpu::Constants pk{{"P", c.ple_dim}, {"L", c.n_layers}, {"H", c.hidden}, {"EPS", c.rms_eps},
                            {"IN_SCALE", (float)(1.0 / std::sqrt((double)c.hidden))},
                            {"OUT_SCALE", (float)(1.0 / std::sqrt(2.0))}};
    for (uint32_t mode = 0; mode < 3; ++mode) {
      gpu::Constants mk = pk;
      mk["MODE"] = mode;
      auto k = ctx_.kernel("per_layer", mk);
      if (!k) return std::move(k).error();
      (mode == 0 ? ple_combine_ : mode == 1 ? ple_mul_ : layer_scale_) = *k;
    }
    const gpu::Buffer& pn = model_.ple_projection_norm;
    auto bg = ctx_.bindGroup(*ple_combine_, {{&pliproj_}, {&pn}, {&pli_}, {&active_}, {&pn}});
    if (!bg) return std::move(bg).error();
    ple_combine_bg_ = std::move(*bg);
    auto pbg = ctx_.bindGroup(*ple_combine_, {{&ppliproj_}, {&pn}, {&ppli_}, {&pmeta_}, {&pn}});
    if (!pbg) return std::move(pbg).error();
    pple_combine_bg_ = std::move(*pbg);
  }
  const bool ln = c.norm == NormKind::kLayer;
  // One-row engines: each projection's dispatch can also pull the next projection's weights into the L2
  // (GemvConfig::l2_next; kernels::gemvL2Next says whether). The views live until the ops are made.
  auto l2 = [&](GemvConfig g, const kernels::LinearWeights* next) {
    if (B == 1) g.l2_next = next;
    return g;
  };
  for (int l = 0; l < c.n_layers; ++l) {
    const GpuLayer& L = model_.layers[l];
    const kernels::LinearWeights o_w = L.o.view(), out_w = L.out_proj.view(), up_w = L.gate_up.view(),
                                 down_w = L.down.view();
    // The first projection of the next layer (its attention's q|k|v or its GDN in-projection).
    std::optional<kernels::LinearWeights> first_next;
    if (l + 1 < c.n_layers) {
      const GpuLayer& N = model_.layers[l + 1];
      first_next = N.full_attention ? N.qkv.view() : N.in_proj.view();
    }
    LayerOps ops;
    ops.full = L.full_attention;
    // The layer's attention shape (gemma4 varies head dim and KV heads by layer; a KV-shared layer reads the cache
    // of its source layer and computes q only).
    const uint32_t D = c.headDimOf(l), HKV = c.kvHeadsOf(l);
    const int src = c.kvSourceOf(l);
    const bool shared = src != l;
    gpu::Constants attn_k{{"D", D}, {"HQ", c.n_heads}, {"HKV", HKV}, {"CTX", ctx_len_},
                          {"GATED", gated ? 1 : 0}, {"PAGED", 1}, {"PAGE", kPageTokens}, {"MAXP", pps_},
                          {"PT", kRowWords}};
    if (c.isGemma4()) {
      attn_k["V_NORM"] = 1;
      if (shared) attn_k["KV_SHARED"] = 1;
    }
    // The input of the layer's first projection: hidden_ through the GEMV's fused RMSNorm (the llama / qwen path),
    // hidden_ as it is (olmo2: no pre-norm), or normed_ from a norm op (LayerNorm; a parallel block's norms run
    // both before the attention, so its MLP reads the layer's input).
    const gpu::Buffer* in_x = &hidden_;
    const gpu::Buffer* in_norm = L.input_norm.handle() ? &L.input_norm : nullptr;
    if (in_norm && (ln || c.parallel_residual)) {
      EWGPU_ASSIGN(ops.n_in, familyNorm(hidden_, L.input_norm, &L.input_norm_b, normed_, active_, B, false));
      in_x = &normed_;
      in_norm = nullptr;
    }
    if (L.full_attention) {
      ops.attn = std::make_unique<AttnOps>();
      AttnOps& a = *ops.attn;
      EWGPU_ASSIGN(a.qkv, kernels::GemvOp::create(ctx_, L.qkv.view(), *in_x, qkv_,
                                                  l2(gemvCfg({Epilogue::kStore, B, in_norm, c.rms_eps}), &o_w)));
      if (c.qk_norm_full) {  // olmo2: q|k|v normed into qkvn_, which the attention reads
        QkvNormOps qn;
        auto k = ctx_.kernel("qkv_norm", {{"QW", c.n_heads * D}, {"KW", HKV * D}, {"EPS", c.rms_eps}});
        if (!k) return std::move(k).error();
        qn.kernel = *k;
        auto bg = ctx_.bindGroup(**k, {{&qkv_}, {&L.qk_norm_full}, {&qkvn_}, {&active_}});
        if (!bg) return std::move(bg).error();
        qn.bg = std::move(*bg);
        auto pbg = ctx_.bindGroup(**k, {{&pqkv_}, {&L.qk_norm_full}, {&pqkvn_}, {&pmeta_}});
        if (!pbg) return std::move(pbg).error();
        qn.pbg = std::move(*pbg);
        a.qkvn = std::move(qn);
      }
      const gpu::Buffer& dqkv = c.qk_norm_full ? qkvn_ : qkv_;   // the attention's q|k|v, decode
      const gpu::Buffer& pqkv = c.qk_norm_full ? pqkvn_ : pqkv_;  // and prefill
      gpu::Constants pk = attn_k;
      pk["R"] = rotaryOf(c, l);
      pk["QK_NORM"] = c.qk_norm ? 1 : 0;
      pk["EPS"] = c.rms_eps;
      pk["PREFILL"] = 1;
      // Defines: an f16 cache (KV16), and head dims past 256 (HEAD512: gemma4's full layers, larger scratch arrays).
      std::vector<std::string> kvdef;
      if (kv16_) kvdef.push_back("KV16");
      if (D > 256) kvdef.push_back("HEAD512");
      auto k = ctx_.kernel("qk_prepare", pk, kvdef);  // prefill only: decode attention does this work itself (FUSED)
      if (!k) return std::move(k).error();
      auto bg = ctx_.bindGroup(**k, {{&pqkv}, {&prows_}, {&ropeOf(l)}, {&L.qk_norm}, {&pq_}, {&kc_[src]}, {&vc_[src]}});
      if (!bg) return std::move(bg).error();
      a.pprep = *k;
      a.pprep_gx = c.n_heads + (shared ? 0 : HKV);
      a.pprep_bg = std::move(*bg);
      for (int pass = 0; pass < 2; ++pass) {
        gpu::Constants ak = pk;
        ak["PREFILL"] = pass;
        ak["PT"] = pass ? kRowWords : B * kRowWords;  // the tables follow the prefill row / the decode rows
        ak["FUSED"] = pass ? 0 : 1;
        ak["SPLIT"] = pass ? 1 : attn_split_;
        ak["PVU"] = attn_pvu_;
        // Decode: a quarter of the head's vec4 columns per thread group (64-wide heads 4 threads, 128 and wider 8),
        // so each thread loads four or more and a subgroup's loads read whole K rows (docs/measurements/h200-run24).
        // The prefill walk (heads over 128 on GPUs) takes the same: H200, the 2B's 256-wide heads, the last 1024-token
        // chunk of 4096, its 6 attention layers 25.3 ms with 8 against 63.4 ms with 1 (docs/measurements/h200-run25).
        ak["TPP"] = std::min(attn_tpp_cap_, attn_tpp_fixed_ ? attn_tpp_fixed_ : D >= 128 ? 8u : D >= 64 ? 4u : 2u);
        ak["SCALE"] = c.attnScale();
        ak["WINDOW"] = c.windowOf(l);
        if (c.attn_softcap > 0) ak["SOFTCAP"] = c.attn_softcap;
        if (c.rope_scaling && c.rope_scaling->llama4_beta > 0) {
          ak["Q_BETA"] = c.rope_scaling->llama4_beta;
          ak["Q_ORIG"] = c.rope_scaling->original_max_position_embeddings;
        }
        // SwiftShader: barriers cost per invocation, use fewer (WG must stay ≥ D / 4: not for HEAD512).
        if (ctx_.info().cpuAdapter() && D <= 256) {
          ak["WG"] = 64;
          ak["RS"] = 8;
        }
        // CPU adapters attend through attention_cpu.wgsl: the same work in plain loops, cheap to compile, and one
        // pipeline for decode and prefill (the same constants for both passes; the grid's z says which).
        // It reads an f32 cache only: an f16 one (EWGPU_KV=f16 on a CPU adapter) goes through attention.wgsl.
        const bool cpu_attn = !kv16_ && kernels::attentionCpuServes(ctx_.info(), attn_split_);
        if (cpu_attn) {
          for (const char* unused : {"PREFILL", "FUSED", "SPLIT", "WG", "RS", "TPP", "PVU"}) ak.erase(unused);
          ak["PT"] = B * kRowWords;
          ak["PT1"] = kRowWords;
        }
        // Opt-in (EWGPU_ATTN_GQA=1), GPUs: attention_gqa.wgsl, one workgroup per KV head for its G query heads. It
        // measured slower than attention.wgsl's workgroup per query head (docs/measurements/h200-run18).
        const uint32_t G = c.n_heads / std::max<uint32_t>(1, HKV);
        const bool gqa = pass == 0 && !cpu_attn && attnGqa() && !c.isGemma4() && G >= 2 && G <= 8 &&
                         c.n_heads % c.n_kv_heads == 0 && c.attn_softcap == 0 &&
                         !(c.rope_scaling && c.rope_scaling->llama4_beta > 0);
        if (gqa) {
          for (const char* unused : {"PREFILL", "FUSED", "TPP", "PVU"}) ak.erase(unused);
          const uint32_t dv = D / 4;
          auto bytes = [&](uint32_t wg) { return (G * dv * 16 + G * wg * 4 + wg * 20 + 64) + 2048u + 2048u; };
          const uint32_t wg = bytes(256) <= ctx_.info().max_compute_workgroup_storage_size ? 256 : 64;
          ak["WG"] = wg;
          ak["RS"] = wg == 256 ? 16 : 8;
          ak["G"] = G;
          ak["QN"] = G * dv;
          ak["PN"] = G * wg;
        }
        // The prefill pass on GPUs, heads up to 128: attention_prefill.wgsl, tiles of the KV group's keys shared by
        // a block of BQ tokens × its G query heads (EWGPU_ATTN_PREFILL=0: attention.wgsl's walk per token and head;
        // EWGPU_ATTN_BQ overrides BQ).
        const bool tiled = pass == 1 && !cpu_attn && attnPrefillTiled() && (D <= 64 || (D <= 128 && D % 8 == 0)) &&
                           c.n_heads % HKV == 0 && G >= 1 && G <= 128;
        if (tiled) {
          const uint32_t lanes = attnPrefillLanes(D);  // the kernel's LANES
          // The lanes add their partial scores by subgroup shuffles where subgroups hold them (EWGPU_ATTN_PSG=0:
          // workgroup memory and a barrier). H200, Qwen3-0.6B (docs/measurements/h200-run25, call e, ABA): 17.7k
          // against 16.9k tok/s at 4096 tokens, 28.5-28.7k against 27.6k at 512.
          const bool sg =
              lanes > 1 && attnPrefillSg() && ctx_.info().subgroups && ctx_.info().subgroup_min_size >= lanes;
          const uint32_t bq = std::clamp<uint32_t>(attnPrefillBq(lanes), 1, std::max<uint32_t>(1, 256 / (G * lanes)));
          gpu::Constants tk{{"D", D}, {"HQ", c.n_heads}, {"HKV", HKV}, {"CTX", ctx_len_}, {"GATED", gated ? 1 : 0},
                            {"PAGED", 1}, {"PAGE", kPageTokens}, {"MAXP", pps_}, {"PT", kRowWords},
                            {"WINDOW", c.windowOf(l)}, {"SCALE", c.attnScale()}, {"BQ", bq},
                            {"BK", attnPrefillBk(D)}, {"SG", sg ? 1 : 0}, {"LANES", lanes}};
          if (c.attn_softcap > 0) tk["SOFTCAP"] = c.attn_softcap;
          if (c.rope_scaling && c.rope_scaling->llama4_beta > 0) {
            tk["Q_BETA"] = c.rope_scaling->llama4_beta;
            tk["Q_ORIG"] = c.rope_scaling->original_max_position_embeddings;
          }
          auto k3 = ctx_.kernel("attention_prefill", tk, kvdef);
          if (!k3) return std::move(k3).error();
          auto bg3 = ctx_.bindGroup(**k3, {{&pq_}, {&prows_}, {&kc_[src]}, {&vc_[src]}, {&pqkv}, {&pmix_}, {&pmeta_}});
          if (!bg3) return std::move(bg3).error();
          a.pattn = *k3;
          a.pattn_bg = std::move(*bg3);
          a.pattn_gx = HKV;
          a.pattn_bq = bq;
          continue;
        }
        const uint32_t gx = cpu_attn ? (c.n_heads + kernels::kAttentionCpuHeads - 1) / kernels::kAttentionCpuHeads
                            : gqa    ? HKV
                                     : c.n_heads;
        (pass ? a.pattn_gx : a.attn_gx) = gx;
        if (pass) a.pattn_gz = cpu_attn ? 2 : 1;
        auto k2 = ctx_.kernel(cpu_attn ? "attention_cpu" : gqa ? "attention_gqa" : "attention", ak, kvdef);
        if (!k2) return std::move(k2).error();
        auto bg2 = ctx_.bindGroup(**k2, {{pass ? &pq_ : &dqkv}, {pass ? &prows_ : &rows_}, {&kc_[src]}, {&vc_[src]},
                                         {pass ? &pqkv : &dqkv},
                                         {pass ? &pmix_ : attn_split_ > 1 ? &attn_part_ : &mix_}, {&ropeOf(l)},
                                         {&L.qk_norm}});
        if (!bg2) return std::move(bg2).error();
        (pass ? a.pattn : a.attn) = *k2;
        (pass ? a.pattn_bg : a.attn_bg) = std::move(*bg2);
        if (pass == 0 && attn_split_ > 1 && attn_short_ > 0 && !cpu_attn && !gqa) {
          ak["SPLIT"] = 1;
          auto k4 = ctx_.kernel("attention", ak, kvdef);
          if (!k4) return std::move(k4).error();
          auto bg4 = ctx_.bindGroup(**k4, {{&dqkv}, {&rows_}, {&kc_[src]}, {&vc_[src]}, {&dqkv}, {&mix_},
                                           {&ropeOf(l)}, {&L.qk_norm}});
          if (!bg4) return std::move(bg4).error();
          a.attn1 = *k4;
          a.attn1_bg = std::move(*bg4);
        }
      }
      // gemma2/3, olmo2: the output is stored, normed and then added to the residual stream.
      const bool post = L.attn_out_norm.handle();
      EWGPU_ASSIGN(a.o, kernels::GemvOp::create(
                            ctx_, L.o.view(), mix_, post ? branch_ : hidden_,
                            l2(gemvCfg({post ? Epilogue::kStore : Epilogue::kResidualAdd, B, nullptr, c.rms_eps,
                                        c.n_heads * D}),
                               &up_w)));
      if (post)
        EWGPU_ASSIGN(ops.n_attn_out, familyNorm(branch_, L.attn_out_norm, nullptr, hidden_, active_, B, true));
    } else {
      ops.gdn = std::make_unique<GdnOps>();
      GdnOps& g = *ops.gdn;
      kernels::GdnDims gd = gdnDims(c);
      EWGPU_ASSIGN(g.in, kernels::GemvOp::create(ctx_, L.in_proj.view(), hidden_, proj_,
                                                 l2(gdnCfg(gemvCfg({Epilogue::kStore, B, &L.input_norm, c.rms_eps})),
                                                    &out_w)));
      EWGPU_ASSIGN(g.conv, kernels::GdnConvOp::create(ctx_, gd, false,
                                                      {{&proj_}, {&L.conv_w}, {&L.a_log}, {&L.dt_bias}, {&rows_},
                                                       {&conv_state_[l]}, {&prep_}}));
      EWGPU_ASSIGN(g.rec, kernels::GdnRecurrentOp::create(ctx_, gd, {{&prep_}, {&proj_}, {&L.gdn_norm}, {&rows_},
                                                                     {&state_[l]}, {&mix_}}));
      EWGPU_ASSIGN(g.out, kernels::GemvOp::create(
                              ctx_, L.out_proj.view(), mix_, hidden_,
                              l2(gdnCfg(gemvCfg({Epilogue::kResidualAdd, B, nullptr, c.rms_eps, gd.outWidth()})),
                                 &up_w)));
    }
    // The MLP's input, as the layer's: fused RMSNorm, as it is (olmo2), the parallel block's norms (normed_ shared
    // with the attention, or normed2_), or a LayerNorm op.
    const gpu::Buffer* up_x = &hidden_;
    const gpu::Buffer* up_norm = L.post_norm.handle() ? &L.post_norm : nullptr;
    if (c.parallel_residual) {
      up_norm = nullptr;
      up_x = &normed_;
      if (!c.shared_norm) {
        EWGPU_ASSIGN(ops.n_mlp, familyNorm(hidden_, L.post_norm, &L.post_norm_b, normed2_, active_, B, false));
        up_x = &normed2_;
      }
    } else if (up_norm && ln) {
      EWGPU_ASSIGN(ops.n_mlp, familyNorm(hidden_, L.post_norm, &L.post_norm_b, normed_, active_, B, false));
      up_x = &normed_;
      up_norm = nullptr;
    }
    EWGPU_ASSIGN(ops.up, kernels::GemvOp::create(ctx_, L.gate_up.view(), *up_x, act_,
                                                 l2(mlpCfg(gemvCfg({mlpEpilogue(c), B, up_norm, c.rms_eps})), &down_w)));
    const bool post = L.mlp_out_norm.handle();
    EWGPU_ASSIGN(ops.down, kernels::GemvOp::create(ctx_, L.down.view(), act_, post ? branch_ : hidden_,
                                                   l2(mlpCfg(gemvCfg({post ? Epilogue::kStore : Epilogue::kResidualAdd, B})),
                                                      first_next ? &*first_next : nullptr)));
    if (post) EWGPU_ASSIGN(ops.n_mlp_out, familyNorm(branch_, L.mlp_out_norm, nullptr, hidden_, active_, B, true));
    if (L.ple_gate.n) {  // gemma4: the per-layer input branch, normed into the residual
      ops.ple = true;
      EWGPU_ASSIGN(ops.ple_gate, kernels::GemvOp::create(ctx_, L.ple_gate.view(), hidden_, pgate_,
                                                         gemvCfg({Epilogue::kGeluTanh, B})));
      auto bg = ctx_.bindGroup(*ple_mul_, {{&pgate_}, {&layer_index_[l]}, {&pli_}, {&active_}, {&layer_index_[l]}});
      if (!bg) return std::move(bg).error();
      ops.ple_mul_bg = std::move(*bg);
      EWGPU_ASSIGN(ops.ple_proj, kernels::GemvOp::create(ctx_, L.ple_proj.view(), pgate_, branch_,
                                                         gemvCfg({Epilogue::kStore, B})));
      EWGPU_ASSIGN(ops.n_ple, familyNorm(branch_, L.ple_norm, nullptr, hidden_, active_, B, true));
    }
    if (L.layer_scalar.handle()) {
      if (!layer_scale_) {
        auto k = ctx_.kernel("per_layer", {{"MODE", 2}, {"P", std::max(c.ple_dim, 1)}, {"L", c.n_layers},
                                           {"H", c.hidden}});
        if (!k) return std::move(k).error();
        layer_scale_ = *k;
      }
      ops.scale = true;
      auto bg = ctx_.bindGroup(*layer_scale_,
                               {{&hidden_}, {&L.layer_scalar}, {&branch_}, {&active_}, {&L.layer_scalar}});
      if (!bg) return std::move(bg).error();
      ops.scale_bg = std::move(*bg);
    }
    layers_.push_back(std::move(ops));
  }
  // The final norm: fused into the lm_head GEMV, or (LayerNorm) a norm op first.
  if (ln) {
    EWGPU_ASSIGN(n_final_, familyNorm(hidden_, model_.final_norm, &model_.final_norm_b, normed_, active_, B, false));
    EWGPU_ASSIGN(pn_final_, familyNorm(plast_, model_.final_norm, &model_.final_norm_b, plastn_, one_, 1, false));
  }
  EWGPU_ASSIGN(lm_head_, kernels::GemvOp::create(ctx_, model_.logitsMatrix().view(), ln ? normed_ : hidden_, logits_,
                                                 gemvCfg({Epilogue::kStore, B, ln ? nullptr : &model_.final_norm,
                                                          c.rms_eps})));
  EWGPU_ASSIGN(plm_head_, kernels::GemvOp::create(ctx_, model_.logitsMatrix().view(), ln ? plastn_ : plast_, plogits_,
                                                  gemvCfg({Epilogue::kStore, 1, ln ? nullptr : &model_.final_norm,
                                                           c.rms_eps})));
  if (c.final_softcap > 0 || c.logit_scale != 1.0) {  // gemma2/4: logits (scaled, then) soft-capped before sampling
    for (int pass = 0; pass < 2; ++pass) {
      const uint32_t count = (pass ? 1u : B) * (uint32_t)c.vocab;
      gpu::Constants sk{{"COUNT", count}, {"CAP", c.final_softcap}};
      if (c.logit_scale != 1.0) sk["SCALE"] = (float)c.logit_scale;
      auto k = ctx_.kernel("softcap", sk);
      if (!k) return std::move(k).error();
      auto bg = ctx_.bindGroup(**k, {{pass ? &plogits_ : &logits_}});
      if (!bg) return std::move(bg).error();
      (pass ? psoftcap_ : softcap_) = *k;
      (pass ? psoftcap_bg_ : softcap_bg_) = std::move(*bg);
    }
  }
  // On CPU adapters the prefill sampler is the decode one (one pipeline fewer, ~3 s of SwiftShader compilation):
  // the prefill row's out_index is always 0, so its out slot is 0 whatever KMAX, and the position it advances is
  // never read (the executor rewrites the prefill row for every chunk; only active, generated, token and finish
  // are copied to the decode row).
  // There the sampler is also sample_cpu.wgsl (sampleCpuServes): the same picks in plain loops.
  const bool one_sampler = ctx_.info().cpuAdapter();
  const bool cpu_sampler = sampleCpuServes(ctx_.info());
  for (int pass = 0; pass < 2; ++pass) {
    const bool prefill = pass && !one_sampler;
    gpu::Constants sk{{"V", c.vocab}, {"KMAX", prefill ? 1 : opts_.max_steps}, {"ADVANCE_POS", prefill ? 0 : 1}};
    if (cpu_sampler) {
      sk["ORDER_WG"] = sampleWorkgroupSize(ctx_.info());
    } else {
      sk["WG"] = sampleWorkgroupSize(ctx_.info());
      sk["UNROLL"] = sampleUnroll();
    }
    const SampleOp::Buffers sb = pass ? SampleOp::Buffers{&plogits_, &pparams_, &counts_, &prows_, &pout_, &pmask_}
                                      : SampleOp::Buffers{&logits_, &params_, &counts_, &rows_, &out_, &mask_};
    auto op = SampleOp::create(ctx_, cpu_sampler, sampleSplit(), sk, sb, pass ? 1 : opts_.max_batch);
    if (!op) return std::move(op).error();
    (pass ? psample_ : sample_) = std::move(*op);
  }
  if (attn_split_ > 1 && c.n_layers > 0) {
    gpu::Constants cc{{"D", c.head_dim}, {"HQ", c.n_heads}, {"HKV", c.n_kv_heads}, {"SPLIT", attn_split_},
                      {"GATED", c.arch == Arch::kQwen3_5 ? 1 : 0}};
    auto k = ctx_.kernel("attention_combine", cc);
    if (!k) return std::move(k).error();
    auto bg = ctx_.bindGroup(**k, {{&attn_part_}, {&qkv_}, {&mix_}});
    if (!bg) return std::move(bg).error();
    combine_ = *k;
    combine_bg_ = std::move(*bg);
  }
  // Dispatches per decode step (for benchmarks), counted by recording one step that is never submitted (cap 0:
  // no flush on the way).
  stats_.decode_dispatches = decodeDispatches(SampleBatch::kSampled, UINT32_MAX);
  return {};
}

uint32_t Forward::decodeDispatches(SampleBatch batch, uint32_t max_pos) const {
  gpu::Recorder counter(ctx_, 0);
  recordDecodeStep(counter, 0, batch, max_pos);
  return (uint32_t)counter.stats().dispatches;
}

// ForwardOptions::activations' auto: in engines of more than one row, one int8 digit for every decode projection
// where that measured within 2e-2 of max |logit| against the transformers fixtures (fixture_test
// TransformersFixtureInt8, docs/kernels.md: 0.25% gemma .. 1.7% gemma3_text, llama 1.1%), and for qwen3_5 with two
// in its GDN projections (decodeGdnDigits: 1.78% against 9.2% with one everywhere); two where it did not (gemma2
// 2.4%, gemma4 17.5%), which then take mlp_digits' split; one-row engines take that split for every family. H100,
// Llama-3.2-1B, steady tok/s against the split (docs/measurements/h100-run36, ABAB): 32-row engine at 32 / 16 streams
// 10,096-10,120 / 6,510-7,178 against 8,812-8,930 / 6,309-6,318; 4-row engine at 4 / 1 streams 2,724-2,749 /
// 958-961 against 2,420-2,431 / 905-920; the one-row engine 1,309-1,376 against 1,375-1,376 (and Qwen3-0.6B
// 1,044-1,052 against 1,074), so no gain there for the accuracy.
kernels::Activations decodeActivations(const ForwardOptions& o, const DeviceInfo& d, Arch arch) {
  const kernels::Activations a = kernels::resolveActivations(o.activations, d);  // EWGPU_GEMV_Q8 where set
  if (o.activations != kernels::Activations::kAuto || std::getenv("EWGPU_GEMV_Q8") || a != kernels::Activations::kInt16)
    return a;
  const bool two = o.max_batch <= 1 || arch == Arch::kGemma2 || arch == Arch::kGemma4;
  return two ? kernels::Activations::kInt16 : kernels::Activations::kInt8;
}

// ForwardOptions::gdn_digits' auto: two digits for qwen3_5's GDN in/out projections where activations' auto gives
// it one (engines of more than one row). On its transformers fixture (SwiftShader, 2026-12-07) each part with one
// digit, the rest as in one-row engines (two, the MLP one: 1.65% of max |logit|): the LM head 1.65%, the attention
// projections 1.64%, both 1.78%, the GDN in-projection 4.7%, its out-projection 3.2%; one everywhere 9.2%. H100,
// Qwen3.5-2B, 32-row engine, steady tok/s against the split (docs/measurements/h100-run37, ABAB): 5,754-5,922
// against 5,441-5,488 at 32 streams, 4,216-4,294 against 4,038-4,042 at 16, 541-542 against 548-549 with one.
uint32_t decodeGdnDigits(const ForwardOptions& o, const DeviceInfo& d, Arch arch) {
  if (!d.packed_dot4) return 0;  // the GEMVs take f32 x without it (as decodeMlpDigits)
  const uint32_t od = kernels::activationDigits(decodeActivations(o, d, arch));
  if (!od) return 0;  // f32 x
  uint32_t m = o.gdn_digits;
  if (!m) {
    if (const char* e = std::getenv("EWGPU_GEMV_GDN_Q8")) m = std::string(e) == "1" ? 1 : 2;
    else m = o.activations == kernels::Activations::kAuto && !std::getenv("EWGPU_GEMV_Q8") && arch == Arch::kQwen3_5 &&
             od == 1 ? 2 : od;
  }
  return m == 1 ? 1 : 2;
}

// ForwardOptions::mlp_digits' auto: one digit for the MLP where the others take two by default, the split that
// measured within 2e-2 of max |logit| against the transformers fixtures (fixture_test TransformersFixtureMixedDecode,
// docs/kernels.md: qwen3_5 1.65%, llama 0.9%); gemma4 measured 6.1% and keeps two. H200, decode at 16 steps per
// submission: Llama-3.2-1B 1281 against 1228 tok/s, Qwen3.5-2B 790 against 771; 32 streams 8.3k against 6.9k and
// 5.3k against 4.6k steady tok/s (docs/measurements/h200-run25).
uint32_t decodeMlpDigits(const ForwardOptions& o, const DeviceInfo& d, Arch arch) {
  if (!d.packed_dot4) return 0;  // the GEMVs take f32 x without it
  const kernels::Activations others = decodeActivations(o, d, arch);
  const uint32_t od = kernels::activationDigits(others);
  uint32_t m = o.mlp_digits;
  if (!m) {
    if (const char* e = std::getenv("EWGPU_GEMV_MLP_Q8")) m = std::string(e) == "1" ? 1 : 2;
    else m = o.activations == kernels::Activations::kAuto && od == 2 && arch != Arch::kGemma4 ? 1 : 2;
  }
  return m == 1 ? 1 : od;
}

// prefill_mlp_digits' auto: one digit for qwen3_5's MLP GEMMs where its others default to two (1.7% of max |logit|
// on its fixture against 6.5% with one digit everywhere; gemma4 measured 9.6% and keeps two). H200, the 2B at 512 /
// 4096 tokens: 11.8k / 9.2k tok/s against 9.6k / 7.8k (docs/measurements/h200-run25).
uint32_t prefillMlpDigits(const ForwardOptions& o, Arch arch, uint32_t others) {
  uint32_t m = o.prefill_mlp_digits;
  if (!m) {
    if (const char* e = std::getenv("EWGPU_PREFILL_MLP_Q8")) m = std::string(e) == "1" ? 1 : 2;
    else m = o.prefill_activations == kernels::Activations::kAuto && others == 2 && arch == Arch::kQwen3_5 ? 1 : 2;
  }
  return others && m == 1 ? 1 : others;
}

Status Forward::createPrefillOps() {
  const ModelConfig& c = model_.config;
  const uint32_t T = chunk_;
  // The q4 GEMMs' x precision (ForwardOptions::prefill_activations), and the x̂ scratch they share.
  using kernels::Activations;
  Activations pact = opts_.prefill_activations;
  if (pact == Activations::kAuto) {
    const char* e = std::getenv("EWGPU_PREFILL_Q8");
    if (e) pact = std::string(e) == "1"   ? Activations::kInt8
                  : std::string(e) == "2" ? Activations::kInt16
                                          : Activations::kF32;
    else if (!ctx_.info().packed_dot4 || ctx_.info().cpuAdapter()) pact = Activations::kF32;
    // Two digits where one measured past 2e-2 of max |logit| against the transformers fixtures (docs/kernels.md,
    // "Int8 prefill GEMM"): qwen3_5 (6.5e-2: the GDN recurrence carries every projection's error through the
    // chunk) and gemma4 (scale-1 attention over RMS-normed q and k).
    else pact = c.arch == Arch::kGemma4 || c.arch == Arch::kQwen3_5 ? Activations::kInt16 : Activations::kInt8;
  }
  pdigits_ = kernels::activationDigits(pact);
  if (!q4Weights(c)) pdigits_ = 0;
  kernels::GemmQ8 q8, q8_mlp;
  if (pdigits_) {
    const kernels::GdnDims gd = gdnDims(c);
    const uint64_t kmax = std::max({(uint64_t)c.hidden, (uint64_t)maxQd(c), (uint64_t)maxInter(c),
                                    c.arch == Arch::kQwen3_5 ? (uint64_t)gd.outWidth() : 0});
    EWGPU_ASSIGN(pxq_, buffer((uint64_t)T * kernels::quantRowWords((uint32_t)kmax, pdigits_) * 4, "prefill-xq",
                              &stats_.activation_bytes));
    q8 = {&pxq_, pdigits_};
    const uint32_t mlp = ewgpu::prefillMlpDigits(opts_, c.arch, pdigits_);
    q8_mlp = {&pxq_, mlp == 1 ? 1u : pdigits_};  // the scratch holds pdigits_ ≥ 1 digits per row
  }
  pmlp_digits_ = pdigits_ ? q8_mlp.digits : 0;
  auto gemm = [&](const kernels::LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y, Epilogue epi,
                  bool mlp = false) {
    return kernels::GemmOp::create(ctx_, w, x, y, pmeta_, epi, T, {}, mlp ? q8_mlp : q8);
  };
  for (int l = 0; l < c.n_layers; ++l) {
    const GpuLayer& L = model_.layers[l];
    LayerOps& ops = layers_[l];
    // Input norm into pnormed_ (olmo2 has none: the projection reads phidden_).
    const bool in_norm = L.input_norm.handle();
    const gpu::Buffer& in_x = in_norm ? pnormed_ : phidden_;
    if (L.full_attention) {
      AttnOps& a = *ops.attn;
      a.pnorm_used = in_norm;
      if (in_norm)
        EWGPU_ASSIGN(a.pnorm, familyNorm(phidden_, L.input_norm, &L.input_norm_b, pnormed_, pmeta_, T, false));
      EWGPU_ASSIGN(a.pqkv, gemm(L.qkv.view(), in_x, pqkv_, Epilogue::kStore));
      const bool post = L.attn_out_norm.handle();
      EWGPU_ASSIGN(a.po, gemm(L.o.view(), pmix_, post ? pbranch_ : phidden_,
                              post ? Epilogue::kStore : Epilogue::kResidualAdd));
      if (post)
        EWGPU_ASSIGN(ops.pn_attn_out, familyNorm(pbranch_, L.attn_out_norm, nullptr, phidden_, pmeta_, T, true));
    } else {
      GdnOps& g = *ops.gdn;
      kernels::GdnDims gd = gdnDims(c);
      EWGPU_ASSIGN(g.pnorm, kernels::RmsNormOp::create(ctx_, phidden_, L.input_norm, pnormed_, pmeta_, c.hidden,
                                                       c.rms_eps, T));
      EWGPU_ASSIGN(g.pin, gemm(L.in_proj.view(), pnormed_, pproj_, Epilogue::kStore));
      EWGPU_ASSIGN(g.pconv, kernels::GdnConvOp::create(ctx_, gd, true,
                                                       {{&pproj_}, {&L.conv_w}, {&L.a_log}, {&L.dt_bias}, {&pmeta_},
                                                        {&conv_state_[l]}, {&pprep_}}));
      EWGPU_ASSIGN(g.pmix, kernels::GdnPrefillOp::create(ctx_, gd, T, {{&pprep_}, {&pproj_}, {&L.gdn_norm}, {&pmeta_},
                                                                       {&state_[l]}, {&pmix_}},
                                                         gdnPrefillAlgo(ctx_.info())));
      EWGPU_ASSIGN(g.pout, gemm(L.out_proj.view(), pmix_, phidden_, Epilogue::kResidualAdd));
    }
    // The MLP's input: pnormed_ from ppost (sequential), phidden_ (olmo2), or a parallel block's norm of the
    // layer's input taken before the attention adds to it (pnormed_ shared, or pnormed2_ from pn_mlp).
    const gpu::Buffer* up_x = &pnormed_;
    ops.ppost_used = false;
    if (c.parallel_residual) {
      if (!c.shared_norm) {
        EWGPU_ASSIGN(ops.pn_mlp, familyNorm(phidden_, L.post_norm, &L.post_norm_b, pnormed2_, pmeta_, T, false));
        up_x = &pnormed2_;
      }
    } else if (L.post_norm.handle()) {
      EWGPU_ASSIGN(ops.ppost, familyNorm(phidden_, L.post_norm, &L.post_norm_b, pnormed_, pmeta_, T, false));
      ops.ppost_used = true;
    } else {
      up_x = &phidden_;
    }
    EWGPU_ASSIGN(ops.pup, gemm(L.gate_up.view(), *up_x, pact_, mlpEpilogue(c), true));
    const bool post = L.mlp_out_norm.handle();
    EWGPU_ASSIGN(ops.pdown, gemm(L.down.view(), pact_, post ? pbranch_ : phidden_,
                                 post ? Epilogue::kStore : Epilogue::kResidualAdd, true));
    if (post) EWGPU_ASSIGN(ops.pn_mlp_out, familyNorm(pbranch_, L.mlp_out_norm, nullptr, phidden_, pmeta_, T, true));
    if (ops.ple) {  // gemma4's per-layer input branch
      EWGPU_ASSIGN(ops.pple_gate, gemm(L.ple_gate.view(), phidden_, ppgate_, Epilogue::kGeluTanh));
      auto bg = ctx_.bindGroup(*ple_mul_, {{&ppgate_}, {&layer_index_[l]}, {&ppli_}, {&pmeta_}, {&layer_index_[l]}});
      if (!bg) return std::move(bg).error();
      ops.pple_mul_bg = std::move(*bg);
      EWGPU_ASSIGN(ops.pple_proj, gemm(L.ple_proj.view(), ppgate_, pbranch_, Epilogue::kStore));
      EWGPU_ASSIGN(ops.pn_ple, familyNorm(pbranch_, L.ple_norm, nullptr, phidden_, pmeta_, T, true));
    }
    if (ops.scale) {
      auto bg = ctx_.bindGroup(*layer_scale_,
                               {{&phidden_}, {&L.layer_scalar}, {&pbranch_}, {&pmeta_}, {&L.layer_scalar}});
      if (!bg) return std::move(bg).error();
      ops.pscale_bg = std::move(*bg);
    }
  }
  if (pleWidth(c))
    EWGPU_ASSIGN(pple_model_, gemm(model_.ple_projection.view(), phidden_, ppliproj_, Epilogue::kStore));
  return {};
}

void Forward::recordDecodeStep(gpu::Recorder& rec, uint32_t rows, SampleBatch batch, uint32_t max_pos) const {
  const ModelConfig& c = model_.config;
  const uint32_t B = rows ? std::min(rows, opts_.max_batch) : opts_.max_batch;
  for (const auto& [k, bg] : embed_) rec.dispatch(*k, bg, B, embedGroupsPerRow(c));
  if (ple_combine_) {  // gemma4's per-layer inputs
    for (const Lookup& p : ple_lookup_) rec.dispatch(*p.kernel, p.bg, B, p.gy);
    ple_model_.record(rec, B);
    rec.dispatch(*ple_combine_, ple_combine_bg_, B, c.n_layers);
  }
  for (const auto& L : layers_) {
    if (L.n_in) L.n_in->record(rec, B);
    if (L.n_mlp && c.parallel_residual) L.n_mlp->record(rec, B);  // the block's input, before the attention adds
    if (L.full) {
      const AttnOps& a = *L.attn;
      a.qkv.record(rec, B);
      if (a.qkvn) rec.dispatch(*a.qkvn->kernel, a.qkvn->bg, B, 3);
      if (a.attn1 && max_pos <= attn_short_) {
        rec.dispatch(*a.attn1, a.attn1_bg, a.attn_gx, B, 1);
      } else {
        rec.dispatch(*a.attn, a.attn_bg, a.attn_gx, B, attn_split_);
        if (attn_split_ > 1) rec.dispatch(*combine_, combine_bg_, c.n_heads, B);
      }
      a.o.record(rec, B);
    } else {
      const GdnOps& g = *L.gdn;
      g.in.record(rec, B);
      g.conv.record(rec, B);
      g.rec.record(rec, B);
      g.out.record(rec, B);
    }
    if (L.n_attn_out) L.n_attn_out->record(rec, B);
    if (L.n_mlp && !c.parallel_residual) L.n_mlp->record(rec, B);
    L.up.record(rec, B);
    L.down.record(rec, B);
    if (L.n_mlp_out) L.n_mlp_out->record(rec, B);
    if (L.ple) {
      L.ple_gate.record(rec, B);
      rec.dispatch(*ple_mul_, L.ple_mul_bg, B);
      L.ple_proj.record(rec, B);
      L.n_ple->record(rec, B);
    }
    if (L.scale) rec.dispatch(*layer_scale_, L.scale_bg, B);
  }
  if (n_final_) n_final_->record(rec, B);
  lm_head_.record(rec, B);
  if (softcap_) rec.dispatch(*softcap_, softcap_bg_, (opts_.max_batch * (uint32_t)c.vocab + 255) / 256);
  sample_->record(rec, B, batch);
}

void Forward::writePageTable(uint32_t slot, const std::vector<uint32_t>& pages) const {
  std::vector<uint32_t> t(pps_, pool_);  // the trash page
  for (size_t i = 0; i < pages.size() && i < pps_; ++i) t[i] = std::min(pages[i], pool_);
  const uint64_t off = (uint64_t)slot * pps_ * 4;
  ctx_.write(rows_, (uint64_t)opts_.max_batch * kRowWords * 4 + off, t.data(), t.size() * 4);
  ctx_.write(prows_, kRowWords * 4ull + off, t.data(), t.size() * 4);
}

void Forward::recordCopyPage(gpu::Recorder& rec, uint32_t from, uint32_t to) const {
  const ModelConfig& c = model_.config;
  if (from == to || from > pool_ || to > pool_) return;
  for (size_t l = 0; l < kc_.size(); ++l) {
    if (!kc_[l].handle()) continue;
    const uint64_t pb = layerPageElems(c, (int)l) * (kv16_ ? 2 : 4);  // the layer's page (gemma4 varies it)
    for (const gpu::Buffer* b : {&kc_[l], &vc_[l]}) {  // WebGPU copies never share a buffer: through the scratch
      rec.copy(*b, from * pb, page_scratch_, 0, pb);
      rec.copy(page_scratch_, 0, *b, to * pb, pb);
    }
  }
}

void Forward::recordSaveState(gpu::Recorder& rec, uint32_t slot, uint32_t snap) const {
  const kernels::GdnDims gd = gdnDims(model_.config);
  const uint64_t cs = gd.convStateFloats() * 4ull, st = gd.stateFloats() * 4ull;
  if (snap >= snaps_ || slot >= opts_.slots) return;
  for (size_t l = 0; l < state_.size(); ++l) {
    if (!snap_state_[l].handle()) continue;
    rec.copy(conv_state_[l], slot * cs, snap_conv_[l], snap * cs, cs);
    rec.copy(state_[l], slot * st, snap_state_[l], snap * st, st);
  }
}

void Forward::recordRestoreState(gpu::Recorder& rec, uint32_t snap, uint32_t slot) const {
  const kernels::GdnDims gd = gdnDims(model_.config);
  const uint64_t cs = gd.convStateFloats() * 4ull, st = gd.stateFloats() * 4ull;
  if (snap >= snaps_ || slot >= opts_.slots) return;
  for (size_t l = 0; l < state_.size(); ++l) {
    if (!snap_state_[l].handle()) continue;
    rec.copy(snap_conv_[l], snap * cs, conv_state_[l], slot * cs, cs);
    rec.copy(snap_state_[l], snap * st, state_[l], slot * st, st);
  }
}

void Forward::recordResetSlot(gpu::Recorder& rec, uint32_t slot) const {
  const kernels::GdnDims gd = gdnDims(model_.config);
  for (size_t l = 0; l < state_.size(); ++l) {
    if (!state_[l].handle()) continue;
    const uint64_t cs = gd.convStateFloats() * 4ull, st = gd.stateFloats() * 4ull;
    rec.clear(conv_state_[l], slot * cs, cs);
    rec.clear(state_[l], slot * st, st);
  }
}

void Forward::recordPrefillChunk(gpu::Recorder& rec, uint32_t tokens, bool last, uint32_t decode_row) const {
  const ModelConfig& c = model_.config;
  for (const auto& [k, bg] : pembed_) rec.dispatch(*k, bg, tokens, embedGroupsPerRow(c));
  if (ple_combine_) {  // gemma4's per-layer inputs
    for (const Lookup& p : pple_lookup_) rec.dispatch(*p.kernel, p.bg, tokens, p.gy);
    pple_model_.record(rec, tokens);
    rec.dispatch(*ple_combine_, pple_combine_bg_, tokens, c.n_layers);
  }
  for (const auto& L : layers_) {
    if (L.full) {
      const AttnOps& a = *L.attn;
      if (a.pnorm_used) a.pnorm.record(rec, tokens);
      if (L.pn_mlp) L.pn_mlp->record(rec, tokens);  // parallel block: the MLP's norm of the layer's input
      a.pqkv.record(rec, tokens);
      if (a.qkvn) rec.dispatch(*a.qkvn->kernel, a.qkvn->pbg, tokens, 3);
      rec.dispatch(*a.pprep, a.pprep_bg, a.pprep_gx, tokens);
      rec.dispatch(*a.pattn, a.pattn_bg, a.pattn_gx, (tokens + a.pattn_bq - 1) / a.pattn_bq, a.pattn_gz);
      a.po.record(rec, tokens);
      if (L.pn_attn_out) L.pn_attn_out->record(rec, tokens);
    } else {
      const GdnOps& g = *L.gdn;
      g.pnorm.record(rec, tokens);
      g.pin.record(rec, tokens);
      g.pconv.record(rec, tokens);
      g.pmix.record(rec, tokens);
      g.pout.record(rec, tokens);
    }
    if (L.ppost_used) L.ppost.record(rec, tokens);
    L.pup.record(rec, tokens);
    L.pdown.record(rec, tokens);
    if (L.pn_mlp_out) L.pn_mlp_out->record(rec, tokens);
    if (L.ple) {
      L.pple_gate.record(rec, tokens);
      rec.dispatch(*ple_mul_, L.pple_mul_bg, tokens);
      L.pple_proj.record(rec, tokens);
      L.pn_ple->record(rec, tokens);
    }
    if (L.scale) rec.dispatch(*layer_scale_, L.pscale_bg, tokens);
  }
  if (!last) return;
  const uint64_t H4 = (uint64_t)c.hidden * 4;
  rec.copy(phidden_, (tokens - 1) * H4, plast_, 0, H4);
  if (pn_final_) pn_final_->record(rec, 1);
  plm_head_.record(rec);
  if (psoftcap_) rec.dispatch(*psoftcap_, psoftcap_bg_, ((uint32_t)c.vocab + 255) / 256);
  psample_->record(rec, 1);
  // The first generated token and the row's counters (active, generated, token; finish) go to the decode row.
  rec.copy(prows_, 2 * 4, rows_, ((uint64_t)decode_row * kRowWords + 2) * 4, 3 * 4);
  rec.copy(prows_, 6 * 4, rows_, ((uint64_t)decode_row * kRowWords + 6) * 4, 4);
}

}  // namespace ewgpu
