#include "kernels/gemv_op.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ewgpu::kernels {

namespace {
constexpr std::pair<Activations, std::string_view> kActivationNames[] = {
    {Activations::kAuto, "auto"}, {Activations::kF32, "f32"}, {Activations::kInt8, "int8"}, {Activations::kInt16, "int16"}};

// gemv.wgsl PREFETCH up to this many workgroups. H200, decode GPU ms per token with it up to 0 / 64 / 128 / 192 /
// every grid (docs/measurements/h200-run27, sweep.txt): Qwen3-0.6B (its projections 64-128 workgroups) 1.11 / 1.09 /
// 1.04 / 1.05 / 1.04; Llama-3.2-1B 0.765 / 0.766 / 0.770 / 0.776 / 0.810; Qwen3.5-2B 1.265 / 1.258 / 1.261 / 1.260 /
// 1.374. Larger grids lose: the prefetched registers cost occupancy where a GEMV has more than one wave.
constexpr uint32_t kPrefetchMaxWorkgroups = 128;

// A tuning knob from the environment (0 when unset): the GEMV sweeps' overrides of the defaults below.
uint32_t knob(const char* name) {
  const char* v = std::getenv(name);
  return v ? (uint32_t)std::strtoul(v, nullptr, 10) : 0;
}
// The same, `fallback` when unset.
uint32_t knobOr(const char* name, uint32_t fallback) { return std::getenv(name) ? knob(name) : fallback; }
// Output columns of a GEMV: N, or N / 2 for SwiGLU (gate and up halves).
uint32_t out_w_of(const LinearWeights& w, const GemvConfig& cfg) {
  return gatedEpilogue(cfg.epi) ? w.N / 2 : w.N;
}
}  // namespace

bool gemvL2Next(const DeviceInfo&) {
  // Opt-in until measured in the engine (docs/kernels.md, "The next projection's weights into the L2").
  const char* e = std::getenv("EWGPU_GEMV_L2");
  return e && std::string(e) == "1";
}

Activations resolveActivations(Activations act, const DeviceInfo& d) {
  if (act != Activations::kAuto) return act;
  if (const char* e = std::getenv("EWGPU_GEMV_Q8"))
    return std::string(e) == "1" ? Activations::kInt8 : std::string(e) == "2" ? Activations::kInt16 : Activations::kF32;
  return d.packed_dot4 && !d.cpuAdapter() ? Activations::kInt16 : Activations::kF32;
}

std::string_view activationsName(Activations a) {
  for (const auto& [v, n] : kActivationNames)
    if (v == a) return n;
  return "?";
}

std::optional<Activations> activationsFromName(std::string_view name) {
  for (const auto& [v, n] : kActivationNames)
    if (n == name) return v;
  return std::nullopt;
}

Result<GemvOp> GemvOp::create(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                              const GemvConfig& cfg) {
  if (cfg.batch < 1 || cfg.batch > kMaxGemvBatch)
    return makeError(ErrorCode::kInternal, "gemv batch must be 1.." + std::to_string(kMaxGemvBatch),
                     {{"batch", cfg.batch}});
  if (cfg.batch > 1 && w.format != WeightFormat::kQ3F16) return createBatched(ctx, w, x, y, cfg);
  if (cfg.batch == 1 && cfg.act != Activations::kInt8 && cfg.act != Activations::kInt16 &&
      linearCpuServes(ctx.info(), w, cfg.epi))
    return createCpu(ctx, w, x, y, cfg);
  if (cfg.batch > 8)
    return makeError(ErrorCode::kBadRequest, "q3f16_1 decodes at most 8 rows at once", {{"batch", cfg.batch}});
  if (gatedEpilogue(cfg.epi) && w.w_chunks.size() != 1)
    return makeError(ErrorCode::kInternal, "SwiGLU gemv needs an unsplit weight", {{"chunks", w.w_chunks.size()}});
  const DeviceInfo& d = ctx.info();
  // EWGPU_GEMV_TPR / _RPT / _KSPLIT override the defaults below (tuning sweeps on a new GPU; bench/h200_run.sh).
  // Rows per thread group: each x value loaded from cache serves RPT weight rows (f32 x is 8x the bytes of
  // q4 weights, so without reuse the kernel is bound by cache bandwidth, not memory). 8 on CPU adapters, where
  // SwiftShader pays per invocation and per staged-x load more than per weight row: the Qwen3-0.6B shape decoded
  // at 1.73 / 1.89 s per token with 8 against 2.87 / 2.57 with 4 (alternating runs on the 2-core VM).
  uint32_t rpt = cfg.rpt ? cfg.rpt : knob("EWGPU_GEMV_RPT");
  if (!rpt) rpt = std::max<uint32_t>(1, (d.cpuAdapter() ? 8u : 4u) / cfg.batch);
  if (2 * rpt * cfg.batch > 32) rpt = std::max<uint32_t>(1, 16 / cfg.batch);
  const uint32_t out_w = gatedEpilogue(cfg.epi) ? w.N / 2 : w.N;
  const bool q4 = w.format == WeightFormat::kQ4F16 || w.format == WeightFormat::kQ4F32;
  const Activations act = resolveActivations(cfg.act, d);
  const uint32_t groups_k = w.K / 32;
  const uint32_t digits = act == Activations::kInt16 ? 2 : 1;
  // The kernel's staged fast path (x in workgroup memory, f32 or int8): q4, one activation row, 4 or 8 rows per
  // thread group, whole groups.
  const bool staged = q4 && cfg.batch == 1 && (rpt == 4 || rpt == 8) && w.K % 32 == 0;
  // int8 / int16 x̂ takes it on a device with the packed dot product.
  bool q8 = act != Activations::kF32 && staged && d.packed_dot4;
  // Threads per row: a subgroup's worth where shuffles can reduce it, else 32 through workgroup memory
  // (SwiftShader's subgroups are 4 wide). With int8 x̂, 8: a workgroup then holds 32 thread groups, so the
  // quantizing prologue serves 2-4x the rows (H200, lm_head: 59 µs at TPR 32, 51 at 16, 46 at 8, 70 at 4).
  uint32_t tpr = cfg.tpr ? cfg.tpr : knob("EWGPU_GEMV_TPR");
  if (!tpr) {
    tpr = d.subgroups ? std::clamp<uint32_t>(d.subgroup_min_size, 4, 32) : 32;
    if (q8 && d.subgroups && d.subgroup_min_size >= 8) tpr = 8;
  }
  bool sg = d.subgroups && tpr <= d.subgroup_min_size;
  // Workgroup memory besides the staged x: red, rinv, part.
  const uint32_t other_wg_bytes = 1024 + 96 + (256 / tpr) * 128;
  // int8 x̂ needs K bytes + 4 per group per digit, and 4 per group.
  q8 = q8 && digits * (w.K + groups_k * 4) + groups_k * 4 + other_wg_bytes <= d.max_compute_workgroup_storage_size;
  // K split across thread groups when there are few rows: more warps in flight for small matrices (an o_proj
  // of 2048 rows would otherwise fill a fraction of a large GPU). Power of two ≤ 8 dividing the groups.
  uint32_t ksplit = cfg.ksplit ? cfg.ksplit : knob("EWGPU_GEMV_KSPLIT");
  if (!ksplit) {
    const uint32_t gpr = (w.K + (w.format == WeightFormat::kQ3F16 ? 39 : 31)) / (w.format == WeightFormat::kQ3F16 ? 40 : 32);
    ksplit = 1;
    // Not on CPU adapters: SwiftShader pays per workgroup (barriers, launch) more than for idle lanes; the
    // Qwen3.5-0.8B in_proj took 382 ms split 8 ways and 43 ms unsplit there.
    if (out_w < 16384 && !d.cpuAdapter())
      // (int8 x̂ is staged per workgroup, so a workgroup keeps ≥ 16 rows there).
      while (ksplit < 8 && ksplit * 2 * tpr <= gpr && ksplit * 2 <= 256 / tpr &&
             (!q8 || 256 / tpr / (ksplit * 2) * rpt >= 16))
        ksplit *= 2;
  }
  // f32 x staged in workgroup memory (the staged path) where the workgroup memory holds it; EWGPU_GEMV_XSH=0 turns
  // it off.
  const uint32_t xsh_len = w.K / 4 + w.K / 32;
  // Staging reads K floats per workgroup: worth it where a workgroup has ≥ 16 rows (x then costs ≤ 1/2 of the
  // weight bytes; down_proj with K split 8 ways, 4 rows a workgroup, ran 15.1 µs staged and 10.6 µs not).
  const uint32_t rows_per_wg = 256 / tpr / ksplit * rpt;
  bool xsh = staged && rows_per_wg >= 16 && xsh_len * 16 + other_wg_bytes <= d.max_compute_workgroup_storage_size;
  if (const char* e = std::getenv("EWGPU_GEMV_XSH")) xsh = xsh && std::string(e) == "1";
  if (q8) xsh = false;  // the int8 staging replaces the f32 one
  const uint32_t y_stride = cfg.y_stride ? cfg.y_stride : out_w;
  const uint32_t x_stride = cfg.x_stride ? cfg.x_stride : w.K;
  // int8 x̂ with 4 rows per thread group: the first group's weights loaded before the prologue (gemv.wgsl
  // PREFETCH) where the grid has at most this many workgroups; EWGPU_GEMV_PREFETCH_WG overrides (0: never).
  uint32_t prefetch_wg = kPrefetchMaxWorkgroups;
  if (const char* e = std::getenv("EWGPU_GEMV_PREFETCH_WG")) prefetch_wg = (uint32_t)std::strtoul(e, nullptr, 10);
  // The next projection's weights into the L2: L2_WG workgroups of 256 threads, each thread touching about
  // EWGPU_GEMV_L2_LOADS (16) 32-byte sectors; EWGPU_GEMV_L2_MB caps the bytes touched (codes and scales alike).
  const LinearWeights* nx = cfg.l2_next;
  const bool l2 = nx && w.w_chunks.size() == 1 && nx->w_chunks.size() == 1 &&
                  y.size() >= (uint64_t)y_stride * cfg.batch * 4 + kL2SinkBytes &&
                  nx->s_chunks.size() == 1 && gemvL2Next(d) &&
                  (nx->format == WeightFormat::kQ4F16 || nx->format == WeightFormat::kQ4F32);
  uint64_t l2_wb = 0, l2_sb = 0;
  uint32_t l2_wg = 0;
  if (l2) {
    l2_wb = nx->w_chunks[0]->size();
    l2_sb = nx->s_chunks[0]->size();
    if (uint32_t mb = knob("EWGPU_GEMV_L2_MB"); mb && l2_wb + l2_sb > (uint64_t)mb << 20) {
      const double f = (double)((uint64_t)mb << 20) / (double)(l2_wb + l2_sb);
      l2_wb = (uint64_t)(l2_wb * f);
      l2_sb = (uint64_t)(l2_sb * f);
    }
    uint32_t loads = knob("EWGPU_GEMV_L2_LOADS");
    if (!loads) loads = 16;
    l2_wg = (uint32_t)std::max<uint64_t>(1, ((l2_wb + l2_sb) / 32 + 256ull * loads - 1) / (256ull * loads));
  }
  GemvOp op;
  uint32_t row0 = 0;
  for (size_t c = 0; c < w.w_chunks.size(); ++c) {
    uint32_t n = w.chunk_rows[c];
    gpu::Constants k{{"QFMT", (int)w.format}, {"N", n}, {"K", w.K}, {"BATCH", cfg.batch}, {"EPI", (int)cfg.epi},
                     {"NORM", cfg.norm ? 1 : 0}, {"HAS_BIAS", w.bias ? 1 : 0}, {"EPS", cfg.eps},
                     {"ROW_OFFSET", row0}, {"Y_STRIDE", y_stride}, {"X_STRIDE", x_stride}, {"TPR", tpr},
                     {"SG_REDUCE", sg ? 1 : 0}, {"RPT", rpt},
                     {"KSPLIT", ksplit}, {"XSH", xsh ? 1 : 0}, {"XSH_LEN", xsh ? xsh_len : 1},
                     {"Q8", q8 ? 1 : 0}, {"Q8_GROUPS", q8 ? groups_k : 1},
                     {"Q8_DIGITS", digits}, {"QSG", q8 ? quantSubgroups(ctx.info()) : 0}};
    const uint32_t wgs = ((gatedEpilogue(cfg.epi) ? n / 2 : n) + rows_per_wg - 1) / rows_per_wg;
    if (q8 && rpt == 4) k["PREFETCH"] = wgs <= prefetch_wg ? 1 : 0;
    const bool touch = l2 && wgs + l2_wg <= 65535;
    if (touch) {
      k["L2_MAIN"] = wgs;
      k["L2_WG"] = l2_wg;
      k["L2_W"] = (uint32_t)(l2_wb / 16);
      k["L2_S"] = (uint32_t)(l2_sb / 16);
      k["L2_SINK"] = (uint32_t)((y.size() - kL2SinkBytes) / 4);
    }
    auto kern = ctx.kernel("gemv", k, touch ? std::vector<std::string>{"L2NEXT"} : std::vector<std::string>{});
    if (!kern) return std::move(kern).error();
    // Unused bindings get any read-only buffer that is not `y`.
    const gpu::Buffer* s = w.s_chunks.empty() ? w.w_chunks[c] : w.s_chunks[c];
    const gpu::Buffer* nb = cfg.norm ? cfg.norm : &x;
    const gpu::Buffer* bb = w.bias ? w.bias : &x;
    std::vector<gpu::Binding> entries{{w.w_chunks[c]}, {s}, {&x}, {&y}, {nb}, {bb}};
    if (touch) {
      entries.push_back({nx->w_chunks[0]});
      entries.push_back({nx->s_chunks[0]});
    }
    auto bg = ctx.bindGroup(**kern, entries);
    if (!bg) return std::move(bg).error();
    Part p;
    p.kernel = *kern;
    p.bg = std::move(*bg);
    if (touch) {  // one row of workgroups: the projection's, then the touching ones
      p.gx = wgs + l2_wg;
      op.l2_wg_ = l2_wg;
    } else {
      p.gx = std::min<uint32_t>(wgs, 65535);
      p.gy = (wgs + p.gx - 1) / p.gx;
    }
    op.parts_.push_back(std::move(p));
    row0 += n;
  }
  return op;
}

Result<GemvOp> GemvOp::createBatched(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x,
                                     const gpu::Buffer& y, const GemvConfig& cfg) {
  if (!cfg.active) return makeError(ErrorCode::kInternal, "a batched gemv needs the active-rows buffer");
  if (w.K % 32) return makeError(ErrorCode::kInternal, "gemv K must be a multiple of 32", {{"K", w.K}});
  const DeviceInfo& d = ctx.info();
  // One tile size for every batch (rows past the active count are skipped): engines of 3, 8 or 32 rows share
  // their pipelines.
  // EWGPU_GEMVB_BT / _TPR / _RPT / _KT / _KSPLIT override the defaults below (tuning sweeps on a new GPU).
  // The tile: 16 rows on CPU adapters; 4 on GPUs, where more workgroups beat more reuse per weight word. H200,
  // Llama-3.2-1B shape, int8 x̂, steady decode at 1 / 8 / 16 / 32 streams: 749 / 3192 / 4760 / 5342 tok/s with 4
  // rows, 572 / 2605 / 4150 / 5416 with 8 (f32 x̂, run 12: 4 rows 336 / 962 / - / 1013 aggregate, 16 rows 86 / 371 /
  // - / 560); docs/measurements/h200-run13/.
  const bool cpu = d.cpuAdapter();
  const bool q4 = w.format == WeightFormat::kQ4F16 || w.format == WeightFormat::kQ4F32;
  // int8 x̂ (gemv_batch.wgsl's Q8 path) for q4 weights where the packed dot product exists, by the same rule as
  // the single-row kernel: kInt16 (two digits) on GPU adapters by default, EWGPU_GEMV_Q8 overriding kAuto.
  const Activations act = resolveActivations(cfg.act, d);
  const bool q8 = q4 && act != Activations::kF32 && d.packed_dot4;
  const uint32_t digits = act == Activations::kInt16 ? 2 : 1;
  if (q8) {  // the small-M GEMM instead, in engines of many rows (gemv_op.h)
    const uint32_t maxn = knob("EWGPU_GEMMQ_MAXN");
    const uint32_t max_rows = maxn ? maxn : kGemmMaxRows;
    bool gemm = cfg.batch >= kGemmMinBatch && w.N <= max_rows;
    if (const char* e = std::getenv("EWGPU_GEMMQ")) gemm = std::string(e) == "1";
    if (cfg.batch_kernel != GemvConfig::BatchKernel::kAuto) gemm = cfg.batch_kernel == GemvConfig::BatchKernel::kGemm;
    if (gemm) {
      GemvOp op;
      op.batch_ = cfg.batch;
      op.batch_tile_ = 4;  // batched(); record() picks the tile
      // gemm_q8 reads x̂ with a group's halves apart (gemv_quant.wgsl's XSPLIT; EWGPU_GEMMQ_XSPLIT=0: not). The
      // sums are the same; a warp's x̂ loads touch half the cache lines. H100, 32-row engines, steady tok/s at 16 / 32
      // streams, Llama-3.2-1B 7,144-7,152 / 10,084-10,101 → 7,252-7,257 / 10,177-10,191, Qwen3.5-2B 4,253-4,265 /
      // 5,911 → 4,276-4,299 / 6,007-6,009 (docs/measurements/h100-run39).
      const bool xsplit =
          cfg.gemm_xsplit >= 0 ? cfg.gemm_xsplit != 0 : knobOr("EWGPU_GEMMQ_XSPLIT", 1) == 1;
      op.xsplit_ = xsplit && !gemmOnTile(w, cfg);
      EWGPU_TRY(op.createQuant(ctx, w, x, cfg, digits));
      EWGPU_TRY(op.addGemm(ctx, w, x, y, cfg, digits));
      return op;
    }
  }
  uint32_t bt = cfg.batch_tile ? cfg.batch_tile : knob("EWGPU_GEMVB_BT");
  if (!bt) bt = cpu ? 16u : 4u;
  if (q8) bt = std::min(bt, 8u);  // the Q8 path's accumulators: 4 weight rows (x 2 for SwiGLU) for each tile row
  // Lanes per row: 8 on GPUs (a warp then covers 4 rows of 32 contiguous bytes each, and a workgroup 32 thread
  // groups, so a staged activation tile serves many weight rows); the subgroup width where it is smaller.
  uint32_t tpr = cfg.tpr ? cfg.tpr : knob("EWGPU_GEMVB_TPR");
  if (!tpr) tpr = d.subgroups ? std::clamp<uint32_t>(d.subgroup_min_size, 4, 8) : 8;
  const bool sg = d.subgroups && tpr <= d.subgroup_min_size;
  const uint32_t halves = gatedEpilogue(cfg.epi) ? 2 : 1;
  // Weight rows per thread group: as many as the 64 accumulators allow, at most 4 (always 4 with int8 x̂).
  uint32_t rpt = cfg.rpt ? cfg.rpt : knob("EWGPU_GEMVB_RPT");
  if (!rpt) rpt = cpu ? std::clamp<uint32_t>(64 / (halves * bt), 1, 4) : 1;
  if (q8) rpt = 4;
  if (!q8 && halves * rpt * bt > 64)
    return makeError(ErrorCode::kInternal, "gemv_batch: too many accumulators", {{"rpt", rpt}, {"batch_tile", bt}});
  // int8 x̂: thread groups split K where a matrix has few rows, so that one active row still spreads over the GPU
  // (a workgroup of 4-row thread groups, 8 lanes each, covers 128 rows: an o_proj of 2048 would be 16 workgroups).
  // Fixed per op, like every tile parameter, so a row's sums never depend on the active count. H200, 1B shape,
  // 8-row tiles, GPU ms per step at 1 / 8 / 32 rows: split 1: 2.28 / 4.78 / 5.91, 2: 1.96 / 3.46 / 5.29,
  // 4: 1.84 / 2.74 / 5.15; 4-row tiles split 4: 1.66 / 2.47 / 5.43, split 8: 1.65 / 2.38 / 6.20.
  uint32_t ksplit = 1;
  if (q8) {
    ksplit = cfg.ksplit ? cfg.ksplit : knob("EWGPU_GEMVB_KSPLIT");
    if (!ksplit) ksplit = !cpu && out_w_of(w, cfg) < 16384 ? 4 : 1;
    if ((256 / tpr) % ksplit)
      return makeError(ErrorCode::kInternal, "gemv_batch: K split must divide the thread groups", {{"ksplit", ksplit}});
  }
  const uint32_t part_bytes = ksplit > 1 ? 2 * (256 / tpr) * bt * 16 : 0;  // the split's partial sums
  // f32 x̂: the K tile, a multiple of 8 · tpr (every lane has a word) with the staged tile within 16 KB, at most K
  // rounded up. (int8 x̂ is read from the quantized rows, not staged.)
  const uint32_t step = 8 * tpr;
  uint32_t kt = std::max<uint32_t>(step, 16384 / (4 * bt) / step * step);
  if (uint32_t k = knob("EWGPU_GEMVB_KT")) kt = std::max<uint32_t>(step, k / step * step);
  kt = std::min(kt, (w.K + step - 1) / step * step);
  const uint32_t staged = (q8 ? 0 : bt * kt * 4) + part_bytes;
  if (staged + 256 * 4 + 128 > d.max_compute_workgroup_storage_size)
    return makeError(ErrorCode::kInternal, "gemv_batch: tile does not fit workgroup memory", {{"kt", kt}});
  const uint32_t out_w = out_w_of(w, cfg);
  const uint32_t y_stride = cfg.y_stride ? cfg.y_stride : out_w;
  const uint32_t x_stride = cfg.x_stride ? cfg.x_stride : w.K;
  const uint32_t rows_per_wg = 256 / tpr / ksplit * rpt;
  GemvOp op;
  op.batch_ = cfg.batch;
  op.batch_tile_ = bt;
  // int8 x̂: gemv_quant.wgsl normalises and quantizes each active row once per step into xq_ (layout there).
  const uint32_t row_u32 = quantRowU32(w.K, digits);
  if (q8) EWGPU_TRY(op.createQuant(ctx, w, x, cfg, digits));
  uint32_t row0 = 0;
  for (size_t c = 0; c < w.w_chunks.size(); ++c) {
    const uint32_t n = w.chunk_rows[c];
    gpu::Constants k{{"QFMT", (int)w.format}, {"N", n}, {"K", w.K}, {"BT", bt}, {"EPI", (int)cfg.epi},
                     {"NORM", cfg.norm ? 1 : 0}, {"HAS_BIAS", w.bias ? 1 : 0}, {"EPS", cfg.eps},
                     {"ROW_OFFSET", row0}, {"Y_STRIDE", y_stride}, {"X_STRIDE", x_stride}, {"TPR", tpr},
                     {"SG_REDUCE", sg ? 1 : 0}, {"RPT", rpt}, {"KT", kt}, {"Q8", q8 ? 1 : 0},
                     {"Q8_DIGITS", digits}, {"Q8_ROW", row_u32}, {"KSPLIT", ksplit}};
    auto kern = ctx.kernel("gemv_batch", k);
    if (!kern) return std::move(kern).error();
    const gpu::Buffer* s = w.s_chunks.empty() ? w.w_chunks[c] : w.s_chunks[c];
    const gpu::Buffer* nb = q8 ? &op.xq_ : cfg.norm ? cfg.norm : &x;
    const gpu::Buffer* bb = w.bias ? w.bias : &x;
    auto bg = ctx.bindGroup(**kern, {{w.w_chunks[c]}, {s}, {&x}, {&y}, {nb}, {bb}, {cfg.active}});
    if (!bg) return std::move(bg).error();
    Part p;
    p.kernel = *kern;
    p.bg = std::move(*bg);
    const uint32_t rows = gatedEpilogue(cfg.epi) ? n / 2 : n;
    p.gy = (rows + rows_per_wg - 1) / rows_per_wg;
    if (p.gy > d.max_compute_workgroups_per_dimension && d.max_compute_workgroups_per_dimension)
      return makeError(ErrorCode::kInternal, "gemv_batch: too many row groups", {{"groups", p.gy}});
    op.parts_.push_back(std::move(p));
    row0 += n;
  }
  return op;
}

uint32_t GemvOp::quantRowU32(uint32_t k, uint32_t digits) { return quantRowWords(k, digits); }

Status GemvOp::createQuant(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const GemvConfig& cfg,
                           uint32_t digits) {
  const uint32_t row_u32 = quantRowU32(w.K, digits);
  auto buf = ctx.createBuffer((uint64_t)cfg.batch * row_u32 * 4, gpu::BufferKind::kStorage, "gemv x̂ int8");
  if (!buf) return std::move(buf).error();
  xq_ = std::move(*buf);
  gpu::Constants qk{{"K", w.K}, {"X_STRIDE", cfg.x_stride ? cfg.x_stride : w.K}, {"NORM", cfg.norm ? 1 : 0},
                    {"EPS", cfg.eps}, {"DIGITS", digits}, {"ROW_U32", row_u32}, {"SG", quantSubgroups(ctx.info())},
                    {"XSPLIT", xsplit_ ? 1 : 0}};
  auto kern = ctx.kernel("gemv_quant", qk);
  if (!kern) return std::move(kern).error();
  auto bg = ctx.bindGroup(**kern, {{&x}, {cfg.norm ? cfg.norm : &x}, {&xq_}, {cfg.active}});
  if (!bg) return std::move(bg).error();
  quant_.kernel = *kern;
  quant_.bg = std::move(*bg);
  return {};
}

// gemm_q8.wgsl (header there): a tile of 4·MB activation rows × 4·NB weight rows, K in KS slices. MB is chosen per
// step (record()), at most the largest whose workgroup (KS · NB · MB threads) has 256.
// KS 16, NB 1: H200, Llama-3.2-1B shape, 32 rows, projections' GPU ms per step with 8 (4 blocks) / 16 / 32 / 64
// slices: 4.97 / 3.77 / 5.54 / 7.75 (fewer slices leave too few threads, more spend it on the reduction); 16 slices
// with two weight blocks 3.93; gemv_batch 4.73 (docs/measurements/h200-run22).
// gemm_q8.wgsl (K-sliced register tiles reading x̂ from global memory) unless the environment asks for
// gemm_q8_wt.wgsl (workgroup-memory tiles): EWGPU_GEMMQ_TILE_ROWS=n for matrices of n weight rows or more,
// EWGPU_GEMMQ_KERNEL=tile / slice for every op (kGemmWideRows in gemv_op.h says what they measured).
bool GemvOp::gemmOnTile(const LinearWeights& w, const GemvConfig& cfg) {
  const uint32_t tile_rows = knob("EWGPU_GEMMQ_TILE_ROWS");
  bool tile = tile_rows && w.N >= tile_rows;
  if (const char* kk = std::getenv("EWGPU_GEMMQ_KERNEL")) {
    if (std::string(kk) == "tile") tile = true;
    if (std::string(kk) == "slice") tile = false;
  }
  if (cfg.gemm_tile >= 0) tile = cfg.gemm_tile != 0;
  return tile;
}

Status GemvOp::addGemm(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                       const GemvConfig& cfg, uint32_t digits) {
  const DeviceInfo& d = ctx.info();
  if (gemmOnTile(w, cfg)) return addGemmTile(ctx, w, x, y, cfg, digits);
  // EWGPU_GEMMQ_KS / _NB override the defaults (tuning sweeps on a new GPU).
  uint32_t ks = cfg.gemm_ks ? cfg.gemm_ks : knob("EWGPU_GEMMQ_KS");
  if (!ks) {
    ks = 16;
    // Sweeps by matrix size: EWGPU_GEMMQ_KS_SMALL / _BIG = s for the matrices of fewer / at least
    // EWGPU_GEMMQ_SMALL_BLOCKS (default 1024) blocks of 4 weight rows.
    const bool small = w.N / 4 < knobOr("EWGPU_GEMMQ_SMALL_BLOCKS", 1024);
    if (uint32_t s = knob(small ? "EWGPU_GEMMQ_KS_SMALL" : "EWGPU_GEMMQ_KS_BIG")) ks = s;
  }
  ks = std::clamp<uint32_t>(ks, 1, 64);
  uint32_t nb = cfg.gemm_nb ? cfg.gemm_nb : knob("EWGPU_GEMMQ_NB");
  if (!nb) nb = 1;
  if (ks * nb > 256)
    return makeError(ErrorCode::kInternal, "gemm_q8: K slices × weight blocks exceed a workgroup", {{"ks", ks}});
  max_tile_ = 0;  // the largest tile (MB = 2^max_tile_) whose workgroup has at most 256 threads
  while (max_tile_ < 3 && ks * nb * (2u << max_tile_) <= std::min<uint32_t>(256, d.max_compute_invocations_per_workgroup))
    ++max_tile_;
  capTile(cfg);
  // The smaller tiles take more weight blocks: NB doubled while the workgroup stays within 128 threads
  // (EWGPU_GEMMQ_WG / cfg.gemm_wg; 0: NB for every tile), so that a step of few active rows still runs workgroups
  // of 128 threads (16 / 32 / 64 at 4 / 8 / 16 rows with NB 1) and a quarter as many of them. NB does not change a
  // row's sums. H100, Llama-3.2-1B, a 32-row engine with one stream: 801-807 → 853-858 tok/s; Qwen3.5-2B 538-540 →
  // 545-548 (docs/measurements/h100-run39).
  const uint32_t wg_want = cfg.gemm_wg >= 0 ? (uint32_t)cfg.gemm_wg : knobOr("EWGPU_GEMMQ_WG", 128);
  const uint32_t wg_cap = std::min<uint32_t>({wg_want, 256, d.max_compute_invocations_per_workgroup});
  auto nbOf = [&](uint32_t mb) {
    uint32_t v = nb;
    while (ks * 2 * v * mb <= wg_cap) v *= 2;
    return v;
  };
  for (uint32_t i = 0; i <= max_tile_; ++i)
    if (ks * nbOf(1u << i) * (1u << i) * 16 * 4 > d.max_compute_workgroup_storage_size)
      return makeError(ErrorCode::kInternal, "gemm_q8: partial sums do not fit workgroup memory", {{"ks", ks}});
  if (gatedEpilogue(cfg.epi) && w.w_chunks.size() != 1)
    return makeError(ErrorCode::kInternal, "SwiGLU gemm needs an unsplit weight", {{"chunks", w.w_chunks.size()}});
  const uint32_t out_w = out_w_of(w, cfg);
  const uint32_t y_stride = cfg.y_stride ? cfg.y_stride : out_w;
  const uint32_t row_u32 = quantRowU32(w.K, digits);
  uint32_t row0 = 0;
  for (size_t c = 0; c < w.w_chunks.size(); ++c) {
    const uint32_t n = w.chunk_rows[c];
    const uint32_t rows_per_block = gatedEpilogue(cfg.epi) ? 2 : 4;
    const uint32_t rows = gatedEpilogue(cfg.epi) ? n / 2 : n;
    std::array<Part, 4> parts;
    for (uint32_t i = 0; i <= max_tile_; ++i) {
      const uint32_t mb = 1u << i, nbt = nbOf(mb);
      const uint32_t gy = (rows + rows_per_block * nbt - 1) / (rows_per_block * nbt);
      if (gy > d.max_compute_workgroups_per_dimension && d.max_compute_workgroups_per_dimension)
        return makeError(ErrorCode::kInternal, "gemm_q8: too many row blocks", {{"blocks", gy}});
      gpu::Constants k{{"QFMT", (int)w.format}, {"N", n}, {"K", w.K}, {"EPI", (int)cfg.epi},
                       {"HAS_BIAS", w.bias ? 1 : 0}, {"ROW_OFFSET", row0}, {"Y_STRIDE", y_stride},
                       {"DIGITS", digits}, {"XQ_ROW", row_u32}, {"MB", mb}, {"NB", nbt}, {"KS", ks},
                       {"WG", ks * nbt * mb}, {"XSPLIT", xsplit_ ? 1 : 0}};
      auto kern = ctx.kernel("gemm_q8", k);
      if (!kern) return std::move(kern).error();
      const gpu::Buffer* s = w.s_chunks.empty() ? w.w_chunks[c] : w.s_chunks[c];
      const gpu::Buffer* bb = w.bias ? w.bias : &x;
      auto bg = ctx.bindGroup(**kern, {{w.w_chunks[c]}, {s}, {&xq_}, {&y}, {&xq_}, {bb}, {cfg.active}});
      if (!bg) return std::move(bg).error();
      parts[i].kernel = *kern;
      parts[i].bg = std::move(*bg);
      parts[i].gx = 4 * mb;  // activation rows per tile
      parts[i].gy = gy;
      parts[i].threads = ks * nbt * mb;
    }
    gemm_parts_.push_back(std::move(parts));
    row0 += n;
  }
  return {};
}

// gemm_q8_wt.wgsl (header there): a tile of 4·MB activation rows × NW weight rows, K in KS slices inside the
// workgroup (MB · NW/4 · KS threads). MB is chosen per step (record()); NW and KS are fixed per op (a row's sums
// depend on KS), KS halved until the 32-row tile's stages fit the device's workgroup memory.
Status GemvOp::addGemmTile(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                           const GemvConfig& cfg, uint32_t digits) {
  const DeviceInfo& d = ctx.info();
  // EWGPU_GEMMW_NW / _KS override the defaults (sweeps).
  // EWGPU_GEMMW_XSM=0: x̂ read from global memory at compute time instead of staged (NW may then be 4 or 8).
  bool xsm = true;
  if (const char* e = std::getenv("EWGPU_GEMMW_XSM")) xsm = std::string(e) != "0";
  if (cfg.gemm_xsm >= 0) xsm = cfg.gemm_xsm != 0;
  // The width: 64 weight rows for wide matrices (H100, 1B shapes at 32 rows, µs at NW 64 / 32 / 16: gate/up 46.0 /
  // 49.2 / 77.5, LM head 488.5 / 702.6 / -), 16 below (o, down: 20.3 and 42.6 at 16, slower wider); h100-run35/36.
  uint32_t nw = cfg.gemm_nw ? cfg.gemm_nw : knob("EWGPU_GEMMW_NW");
  if (!nw) nw = w.N >= kGemmWideRows ? 64 : 16;
  if (nw % (xsm ? 16 : 4) || nw > 64)
    return makeError(ErrorCode::kInternal, "gemm_q8_wt: NW must be a multiple of 16 (4 without staged x̂) up to 64",
                     {{"nw", nw}});
  uint32_t ks = cfg.gemm_ks ? cfg.gemm_ks : knob("EWGPU_GEMMW_KS");
  const bool ks_given = ks != 0;
  if (!ks) ks = std::max<uint32_t>(1, 128 / nw);  // 256 threads at 32 rows
  const uint32_t max_wg = std::min<uint32_t>(256, d.max_compute_invocations_per_workgroup);
  // The weight stage's pad per slice (the kernel's WPAD), and the workgroup memory of a tile (vec4 words as in
  // the kernel's SMEM).
  auto wpad_of = [](uint32_t k) { return k <= 8 ? (8 / k) % 8 : 1u; };
  auto smem = [&](uint32_t mb, uint32_t k) {
    const uint32_t wb = nw / 4, wpad = wpad_of(k);
    const uint32_t stage = (xsm ? k * (digits * 8 * mb + mb) + k * mb : 0) + k * (8 * wb + wpad) + k * wb;
    return 16 * std::max(2 * stage, 4 * mb * wb * k);
  };
  max_tile_ = 0;  // the largest tile (MB = 2^max_tile_) whose workgroup fits
  auto fits = [&](uint32_t mb, uint32_t k) {
    return mb * (nw / 4) * k <= max_wg && smem(mb, k) <= d.max_compute_workgroup_storage_size;
  };
  while (!ks_given && ks > 1 && !fits(8, ks)) ks /= 2;
  if (!fits(1, ks)) return makeError(ErrorCode::kInternal, "gemm_q8_wt: tile does not fit", {{"ks", ks}, {"nw", nw}});
  while (max_tile_ < 3 && fits(2u << max_tile_, ks)) ++max_tile_;
  capTile(cfg);
  if (gatedEpilogue(cfg.epi) && w.w_chunks.size() != 1)
    return makeError(ErrorCode::kInternal, "SwiGLU gemm needs an unsplit weight", {{"chunks", w.w_chunks.size()}});
  const uint32_t out_w = out_w_of(w, cfg);
  const uint32_t y_stride = cfg.y_stride ? cfg.y_stride : out_w;
  const uint32_t row_u32 = quantRowU32(w.K, digits);
  const uint32_t wpad = wpad_of(ks);
  uint32_t row0 = 0;
  for (size_t c = 0; c < w.w_chunks.size(); ++c) {
    const uint32_t n = w.chunk_rows[c];
    const uint32_t gy = (n + nw - 1) / nw;
    if (gy > d.max_compute_workgroups_per_dimension && d.max_compute_workgroups_per_dimension)
      return makeError(ErrorCode::kInternal, "gemm_q8_wt: too many column tiles", {{"tiles", gy}});
    std::array<Part, 4> parts;
    for (uint32_t i = 0; i <= max_tile_; ++i) {
      const uint32_t mb = 1u << i;
      gpu::Constants k{{"QFMT", (int)w.format}, {"N", n}, {"K", w.K}, {"EPI", (int)cfg.epi},
                       {"HAS_BIAS", w.bias ? 1 : 0}, {"ROW_OFFSET", row0}, {"Y_STRIDE", y_stride},
                       {"DIGITS", digits}, {"XQ_ROW", row_u32}, {"XQ_ROWS", cfg.batch}, {"MB", mb}, {"NW", nw},
                       {"KS", ks}, {"WPAD", wpad}, {"WG", mb * (nw / 4) * ks}, {"XSM", xsm ? 1 : 0}};
      auto kern = ctx.kernel("gemm_q8_wt", k);
      if (!kern) return std::move(kern).error();
      const gpu::Buffer* s = w.s_chunks.empty() ? w.w_chunks[c] : w.s_chunks[c];
      const gpu::Buffer* bb = w.bias ? w.bias : &x;
      auto bg = ctx.bindGroup(**kern, {{w.w_chunks[c]}, {s}, {&xq_}, {&y}, {&xq_}, {bb}, {cfg.active}});
      if (!bg) return std::move(bg).error();
      parts[i].kernel = *kern;
      parts[i].bg = std::move(*bg);
      parts[i].gx = 4 * mb;  // activation rows per tile
      parts[i].gy = gy;
      parts[i].threads = mb * (nw / 4) * ks;
    }
    gemm_parts_.push_back(std::move(parts));
    row0 += n;
  }
  return {};
}

// EWGPU_GEMMQ_MAXMB / cfg.gemm_max_mb = 1 / 2 / 4 / 8 cap the largest tile's activation rows at 4 / 8 / 16 / 32
// (sweeps; 32 rows then take several tiles).
void GemvOp::capTile(const GemvConfig& cfg) {
  const uint32_t m = cfg.gemm_max_mb ? cfg.gemm_max_mb : knob("EWGPU_GEMMQ_MAXMB");
  if (m) max_tile_ = std::min<uint32_t>(max_tile_, m >= 8 ? 3 : m >= 4 ? 2 : m >= 2 ? 1 : 0);
}

Result<GemvOp> GemvOp::createCpu(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x,
                                 const gpu::Buffer& y, const GemvConfig& cfg) {
  LinearCpuArgs a;
  a.epi = cfg.epi;
  a.norm = cfg.norm;
  a.eps = cfg.eps;
  a.x_stride = cfg.x_stride;
  a.y_stride = cfg.y_stride;
  std::vector<LinearCpuPart> parts;
  EWGPU_ASSIGN(parts, createLinearCpu(ctx, w, x, y, a));
  GemvOp op;
  for (auto& lp : parts) {
    Part p;
    p.kernel = lp.kernel;
    p.bg = std::move(lp.bg);
    p.gx = lp.gx;
    op.parts_.push_back(std::move(p));
    op.params_.push_back(std::move(lp.params));
  }
  return op;
}

void GemvOp::record(gpu::Recorder& rec, uint32_t rows) const {
  if (!batch_tile_) {
    for (const auto& p : parts_) rec.dispatch(*p.kernel, p.bg, p.gx, p.gy);
    return;
  }
  const uint32_t n = rows ? std::min(rows, batch_) : batch_;
  if (quant_.kernel) rec.dispatch(*quant_.kernel, quant_.bg, n, 1);  // one workgroup per active row
  if (!gemm_parts_.empty()) {
    uint32_t i = 0;  // the smallest tile holding the active rows (4, 8, 16, 32), as many of the largest as needed
    while (i < max_tile_ && gemm_parts_[0][i].gx < n) ++i;
    for (const auto& ps : gemm_parts_) {
      const Part& p = ps[i];
      rec.dispatch(*p.kernel, p.bg, (n + p.gx - 1) / p.gx, p.gy);
    }
    return;
  }
  const uint32_t tiles = (n + batch_tile_ - 1) / batch_tile_;
  for (const auto& p : parts_) rec.dispatch(*p.kernel, p.bg, tiles, p.gy);
}

}  // namespace ewgpu::kernels
