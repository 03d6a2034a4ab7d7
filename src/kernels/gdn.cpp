// Host wrappers of the Gated DeltaNet kernels (gdn_conv.wgsl, gdn_recurrent.wgsl, gdn_chunked.wgsl): shape checks,
// pipeline specialisation, bind groups built once, dispatch grids.
#include "kernels/gdn.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ewgpu::kernels {
namespace {

constexpr uint32_t kConvWg = 128;
constexpr uint32_t kSolveWg = 256;
constexpr uint32_t kStateCols = 32;      // gdn_chunked MODE 1: state columns per workgroup (NB <= 32)
constexpr uint32_t kStateRowGroups = 8;  // gdn_chunked MODE 1: invocations per column (const G)

Error badDims(const std::string& why, const GdnDims& d) {
  return makeError(ErrorCode::kBadRequest, "GDN dims: " + why,
                   {{"nk", d.nk}, {"nv", d.nv}, {"kd", d.kd}, {"vd", d.vd}, {"ks", d.ks}});
}

gpu::Constants shapeConstants(const GdnDims& d) { return {{"NK", d.nk}, {"NV", d.nv}, {"KD", d.kd}, {"VD", d.vd}}; }

constexpr uint32_t kMaxRowsPerInvocation = 64;  // gdn_recurrent's and gdn_scan's MAXR: state rows held in registers
constexpr uint32_t kScanCols = 16;               // gdn_scan: state columns per workgroup

// Invocations per state column: the largest power of two ≤ 8 that divides kd with vd * k within the device's
// workgroup size (more invocations: fewer state rows each, all loads of a step in flight at once).
uint32_t autoKsplit(const GdnDims& d, uint32_t max_invocations) {
  uint32_t k = 1;
  while (k < 8 && d.vd * k * 2 <= max_invocations && d.kd % (k * 2) == 0) k *= 2;
  return k;
}

Result<uint32_t> checkKsplit(const GdnDims& d, uint32_t ksplit, uint32_t max_invocations) {
  if (ksplit == 0) ksplit = autoKsplit(d, max_invocations);
  if (d.kd % ksplit != 0 || d.vd * ksplit > max_invocations || d.kd / ksplit > kMaxRowsPerInvocation) {
    return makeError(ErrorCode::kBadRequest,
                     "GDN ksplit must divide kd with vd*ksplit within the workgroup size and kd/ksplit <= 64",
                     {{"ksplit", ksplit}, {"kd", d.kd}, {"vd", d.vd}, {"max_invocations", max_invocations}});
  }
  return ksplit;
}

}  // namespace

Status GdnDims::validate() const {
  if (nk == 0 || nv == 0 || kd == 0 || vd == 0) return badDims("zero size", *this);
  if (nv % nk != 0) return badDims("nv must be a multiple of nk", *this);
  if (kd > 256 || vd > 256) return badDims("head dims above 256", *this);
  if (ks < 2) return badDims("conv kernel width below 2", *this);
  return {};
}

Result<GdnConvOp> GdnConvOp::create(gpu::Context& ctx, const GdnDims& dims, bool prefill, const Buffers& b) {
  EWGPU_TRY(dims.validate());
  GdnConvOp op;
  op.dims_ = dims;
  op.prefill_ = prefill;
  gpu::Constants c = shapeConstants(dims);
  c["KS"] = dims.ks;
  c["WG"] = kConvWg;
  c["PREFILL"] = prefill ? 1 : 0;
  std::vector<gpu::Binding> bindings = {b.proj, b.conv_w, b.a_log, b.dt_bias, b.info, b.conv_state, b.prep};
  auto k = ctx.kernel("gdn_conv", c);
  if (!k) return std::move(k).error();
  op.conv_ = *k;
  auto bg = ctx.bindGroup(*op.conv_, bindings);
  if (!bg) return std::move(bg).error();
  op.conv_bg_ = std::move(*bg);
  if (prefill) {
    c["STATE_PASS"] = 1;
    auto ks = ctx.kernel("gdn_conv", c);
    if (!ks) return std::move(ks).error();
    op.shift_ = *ks;
    auto sbg = ctx.bindGroup(*op.shift_, bindings);
    if (!sbg) return std::move(sbg).error();
    op.shift_bg_ = std::move(*sbg);
  }
  return op;
}

void GdnConvOp::record(gpu::Recorder& rec, uint32_t rows) const {
  if (rows == 0) return;
  rec.dispatch(*conv_, conv_bg_, 2 * dims_.nk + dims_.nv + 1, rows);
  if (prefill_) rec.dispatch(*shift_, shift_bg_, (dims_.convChannels() + kConvWg - 1) / kConvWg);
}

Result<GdnRecurrentOp> GdnRecurrentOp::create(gpu::Context& ctx, const GdnDims& dims, const GdnMixBuffers& b,
                                              uint32_t ksplit) {
  EWGPU_TRY(dims.validate());
  auto split = checkKsplit(dims, ksplit, ctx.info().max_compute_invocations_per_workgroup);
  if (!split) return std::move(split).error();
  GdnRecurrentOp op;
  op.dims_ = dims;
  gpu::Constants c = shapeConstants(dims);
  c["KSPLIT"] = *split;
  c["WG"] = dims.vd * *split;
  c["EPS"] = dims.eps;
  auto k = ctx.kernel("gdn_recurrent", c);
  if (!k) return std::move(k).error();
  op.kernel_ = *k;
  auto bg = ctx.bindGroup(*op.kernel_, {b.prep, b.proj, b.norm_w, b.info, b.state, b.out});
  if (!bg) return std::move(bg).error();
  op.bg_ = std::move(*bg);
  return op;
}

void GdnRecurrentOp::record(gpu::Recorder& rec, uint32_t batch_rows) const {
  if (batch_rows == 0) return;
  rec.dispatch(*kernel_, bg_, dims_.nv, batch_rows);
}

Result<GdnPrefillOp> GdnPrefillOp::create(gpu::Context& ctx, const GdnDims& dims, uint32_t max_tokens,
                                          const GdnMixBuffers& b, GdnPrefillAlgo algo, uint32_t ksplit) {
  EWGPU_TRY(dims.validate());
  if (max_tokens == 0) return makeError(ErrorCode::kBadRequest, "GDN prefill: max_tokens must be positive");
  GdnPrefillOp op;
  op.dims_ = dims;
  op.algo_ = algo;
  op.max_tokens_ = max_tokens;
  gpu::Constants c = shapeConstants(dims);
  c["EPS"] = dims.eps;
  if (algo == GdnPrefillAlgo::kSequential) {
    auto split = checkKsplit(dims, ksplit, ctx.info().max_compute_invocations_per_workgroup);
    if (!split) return std::move(split).error();
    c["KSPLIT"] = *split;
    c["WG"] = dims.vd * *split;
    c["PREFILL"] = 1;
    auto k = ctx.kernel("gdn_recurrent", c);
    if (!k) return std::move(k).error();
    op.k_[0] = *k;
    auto bg = ctx.bindGroup(*op.k_[0], {b.prep, b.proj, b.norm_w, b.info, b.state, b.out});
    if (!bg) return std::move(bg).error();
    op.bg_[0] = std::move(*bg);
    return op;
  }
  if (algo == GdnPrefillAlgo::kColumns) return createColumns(ctx, std::move(op), b, ksplit);
  const uint64_t chunks = (max_tokens + kChunk - 1) / kChunk;
  auto scratch = ctx.createBuffer(chunks * dims.nv * kChunk * (dims.kd + dims.vd) * 4, gpu::BufferKind::kStorage,
                                  "gdn_chunk_scratch");
  if (!scratch) return std::move(scratch).error();
  op.scratch_ = std::move(*scratch);
  // EWGPU_GDN_NB: state columns per MODE 1 workgroup (A/B; the default kStateCols).
  uint32_t cols = kStateCols;
  if (const char* e = std::getenv("EWGPU_GDN_NB"))
    cols = std::clamp<uint32_t>((uint32_t)std::strtoul(e, nullptr, 10), 1, 32);
  op.state_cols_ = dims.vd < cols ? dims.vd : cols;
  const uint32_t wg[3] = {kSolveWg, op.state_cols_ * kStateRowGroups, dims.vd};
  for (uint32_t mode = 0; mode < 3; ++mode) {
    c["MODE"] = mode;
    c["WG"] = wg[mode];
    c["NB"] = mode == 1 ? op.state_cols_ : kStateCols;
    auto k = ctx.kernel("gdn_chunked", c);
    if (!k) return std::move(k).error();
    op.k_[mode] = *k;
    auto bg = ctx.bindGroup(*op.k_[mode], {b.prep, b.proj, b.norm_w, b.info, b.state, b.out, {&op.scratch_}});
    if (!bg) return std::move(bg).error();
    op.bg_[mode] = std::move(*bg);
  }
  return op;
}

// gdn_scan.wgsl: KSPLIT lanes per column (the largest power of two ≤ 8 and ≤ the smallest subgroup that divides
// kd), CW columns per workgroup (EWGPU_GDN_CW, default kScanCols), then the norm pass.
Result<GdnPrefillOp> GdnPrefillOp::createColumns(gpu::Context& ctx, GdnPrefillOp op, const GdnMixBuffers& b,
                                                 uint32_t ksplit) {
  const GdnDims& d = op.dims_;
  const DeviceInfo& info = ctx.info();
  if (!info.subgroups || info.subgroup_min_size == 0)
    return makeError(ErrorCode::kUnsupported, "GDN column scan needs subgroups", {{"kernel", "gdn_scan"}});
  const uint32_t lanes = std::min<uint32_t>(8, info.subgroup_min_size);
  if (ksplit == 0) {
    ksplit = 1;
    while (ksplit * 2 <= lanes && d.kd % (ksplit * 2) == 0) ksplit *= 2;
  }
  if ((ksplit & (ksplit - 1)) != 0 || ksplit > lanes || d.kd % ksplit != 0 || d.kd / ksplit > kMaxRowsPerInvocation)
    return makeError(ErrorCode::kBadRequest,
                     "GDN column scan: ksplit must be a power of two within the subgroup size, dividing kd with "
                     "kd/ksplit <= 64",
                     {{"ksplit", ksplit}, {"kd", d.kd}, {"subgroup_min_size", info.subgroup_min_size}});
  uint32_t cols = kScanCols;
  if (const char* e = std::getenv("EWGPU_GDN_CW")) cols = std::max<uint32_t>(1, (uint32_t)std::strtoul(e, nullptr, 10));
  cols = std::min({cols, d.vd, info.max_compute_invocations_per_workgroup / ksplit});
  op.state_cols_ = cols;
  gpu::Constants c = shapeConstants(d);
  c["EPS"] = d.eps;
  c["KSPLIT"] = ksplit;
  c["CW"] = cols;
  for (uint32_t mode = 0; mode < 2; ++mode) {
    c["NORM"] = mode;
    c["WG"] = mode == 0 ? cols * ksplit : d.vd;
    auto k = ctx.kernel("gdn_scan", c);
    if (!k) return std::move(k).error();
    op.k_[mode] = *k;
    auto bg = ctx.bindGroup(*op.k_[mode], {b.prep, b.proj, b.norm_w, b.info, b.state, b.out});
    if (!bg) return std::move(bg).error();
    op.bg_[mode] = std::move(*bg);
  }
  return op;
}

void GdnPrefillOp::record(gpu::Recorder& rec, uint32_t tokens) const {
  if (tokens == 0 || tokens > max_tokens_) return;
  if (algo_ == GdnPrefillAlgo::kSequential) {
    rec.dispatch(*k_[0], bg_[0], dims_.nv);
    return;
  }
  if (algo_ == GdnPrefillAlgo::kColumns) {
    rec.dispatch(*k_[0], bg_[0], dims_.nv, (dims_.vd + state_cols_ - 1) / state_cols_);
    rec.dispatch(*k_[1], bg_[1], dims_.nv, tokens);
    return;
  }
  const uint32_t chunks = (tokens + kChunk - 1) / kChunk;
  rec.dispatch(*k_[0], bg_[0], chunks, dims_.nv);
  rec.dispatch(*k_[1], bg_[1], dims_.nv, (dims_.vd + state_cols_ - 1) / state_cols_);
  rec.dispatch(*k_[2], bg_[2], chunks, dims_.nv);
}

}  // namespace ewgpu::kernels
