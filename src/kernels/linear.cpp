// GemmOp / RmsNormOp: shape checks, pipeline specialisation and bind groups built once (see linear.h).
#include "kernels/linear.h"
#include "kernels/linear_cpu.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace ewgpu::kernels {
namespace {

bool isQ3(WeightFormat f) { return f == WeightFormat::kQ3F16; }
bool isQ4(WeightFormat f) { return f == WeightFormat::kQ4F16 || f == WeightFormat::kQ4F32; }
uint32_t ceilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

Error badRequest(std::string message, nlohmann::json detail = nlohmann::json::object()) {
  return makeError(ErrorCode::kBadRequest, "gemm: " + std::move(message), std::move(detail));
}

Status checkSize(const gpu::Buffer* b, uint64_t need, const char* what) {
  if (!b || !*b) return badRequest(std::string(what) + " buffer missing", {{"buffer", what}});
  if (b->size() < need)
    return badRequest(std::string(what) + " buffer too small", {{"buffer", what}, {"size", b->size()}, {"need", need}});
  return {};
}

Status checkShapes(const LinearWeights& wt, Epilogue epi, GemmTiling tiling) {
  int f = (int)wt.format;
  if (f < 0 || f > 4) return badRequest("unknown weight format", {{"qfmt", f}});
  if (wt.N == 0 || wt.K == 0) return badRequest("empty weight", {{"N", wt.N}, {"K", wt.K}});
  if (isQ3(wt.format) ? wt.K % 4 != 0 : wt.K % 32 != 0)
    return badRequest("K must be a multiple of 32 (q4, q0) or 4 (q3)", {{"K", wt.K}, {"qfmt", f}});
  if (wt.w_chunks.empty() || wt.w_chunks.size() != wt.chunk_rows.size())
    return badRequest("w_chunks and chunk_rows must be non-empty and the same length");
  bool quant = isQ4(wt.format) || isQ3(wt.format);
  if (quant && wt.s_chunks.size() != wt.w_chunks.size()) return badRequest("one scale buffer per weight chunk");
  uint64_t rows = 0;
  for (uint32_t r : wt.chunk_rows) rows += r;
  if (rows != wt.N) return badRequest("chunk_rows must sum to N", {{"sum", rows}, {"N", wt.N}});
  if (gatedEpilogue(epi) && (wt.w_chunks.size() != 1 || wt.N % 2 != 0))
    return badRequest("SwiGLU needs one chunk of 2I rows", {{"chunks", wt.w_chunks.size()}, {"N", wt.N}});
  auto okTile = [](uint32_t t) { return t == 64 || t == 128; };
  if (!okTile(tiling.tile_t) || !okTile(tiling.tile_n))
    return badRequest("tiles must be 64 or 128", {{"tile_t", tiling.tile_t}, {"tile_n", tiling.tile_n}});
  if (tiling.stages > 2) return badRequest("stages must be 0, 1 or 2", {{"stages", tiling.stages}});
  return {};
}

}  // namespace

uint64_t weightBytes(WeightFormat f, uint32_t rows, uint32_t K) {
  uint64_t words_per_row = 0;
  switch (f) {
    case WeightFormat::kQ4F16:
    case WeightFormat::kQ4F32:
      words_per_row = K / 8;
      break;
    case WeightFormat::kQ0F16:
      words_per_row = K / 2;
      break;
    case WeightFormat::kQ0F32:
      words_per_row = K;
      break;
    case WeightFormat::kQ3F16:
      words_per_row = 4ull * ceilDiv(K, 40);
      break;
  }
  return words_per_row * rows * 4;
}

uint32_t quantRowWords(uint32_t K, uint32_t digits) {
  const uint32_t groups = K / 32;
  return (digits * groups * 9 + groups + 3) / 4 * 4;
}

int quantSubgroups(const DeviceInfo& d) {
  const char* e = std::getenv("EWGPU_QUANT_SG");
  if (e && std::string(e) == "0") return 0;
  return d.subgroups && d.subgroup_min_size >= 4 ? 1 : 0;
}

uint64_t scaleBytes(WeightFormat f, uint32_t rows, uint32_t K) {
  uint64_t scales = isQ3(f) ? (uint64_t)ceilDiv(K, 40) * rows : isQ4(f) ? (uint64_t)K / 32 * rows : 0;
  return f == WeightFormat::kQ4F32 ? scales * 4 : (scales * 2 + 3) / 4 * 4;
}

GemmOp GemmOp::shell(uint32_t tile_t, uint32_t max_tokens, const LinearWeights& wt) {
  GemmOp op;
  op.tile_t_ = tile_t;
  op.max_tokens_ = max_tokens;
  op.n_ = wt.N;
  op.k_ = wt.K;
  return op;
}

Result<GemmOp> GemmOp::create(gpu::Context& ctx, const LinearWeights& wt, const gpu::Buffer& x, const gpu::Buffer& y,
                              const gpu::Buffer& meta, Epilogue epi, uint32_t max_tokens, GemmTiling tiling,
                              GemmQ8 q8) {
  EWGPU_TRY(checkShapes(wt, epi, tiling));
  bool swiglu = gatedEpilogue(epi);
  uint32_t y_cols = swiglu ? wt.N / 2 : wt.N;
  EWGPU_TRY(checkSize(&x, (uint64_t)max_tokens * wt.K * 4, "x"));
  EWGPU_TRY(checkSize(&y, (uint64_t)max_tokens * y_cols * 4, "y"));
  EWGPU_TRY(checkSize(&meta, 4, "meta"));
  if (wt.bias) EWGPU_TRY(checkSize(wt.bias, (uint64_t)wt.N * 4, "bias"));
  if (&x == &y || &meta == &y || wt.bias == &y) return badRequest("y must not alias x, meta or bias");
  if (q8.xq && isQ4(wt.format)) return createInt8(ctx, wt, x, y, meta, epi, max_tokens, q8);

  const WGPULimits& lim = ctx.limits();
  uint32_t hg = isQ3(wt.format) ? 20 : 16;
  uint64_t stage_bytes = (uint64_t)(tiling.tile_t + tiling.tile_n) * hg * 4;
  uint32_t stages = tiling.stages ? tiling.stages : stage_bytes * 2 <= lim.maxComputeWorkgroupStorageSize ? 2 : 1;
  if (stages * stage_bytes > lim.maxComputeWorkgroupStorageSize)
    return badRequest("tile needs more workgroup memory than the device has",
                      {{"bytes", stages * stage_bytes}, {"limit", lim.maxComputeWorkgroupStorageSize}});
  uint32_t cols_per_tile = swiglu ? tiling.tile_n / 2 : tiling.tile_n;
  if (ceilDiv(std::max(max_tokens, 1u), tiling.tile_t) > lim.maxComputeWorkgroupsPerDimension)
    return badRequest("max_tokens too large for one dispatch", {{"max_tokens", max_tokens}});

  const bool default_tiling = tiling.tile_t == 64 && tiling.tile_n == 64 && tiling.stages == 0;
  if (default_tiling && linearCpuServes(ctx.info(), wt, epi)) {
    LinearCpuArgs a;
    a.epi = epi;
    a.tokens = 0;
    a.meta = &meta;
    std::vector<LinearCpuPart> parts;
    EWGPU_ASSIGN(parts, createLinearCpu(ctx, wt, x, y, a));
    if (ceilDiv(std::max(max_tokens, 1u), kLinearCpuTokens) > lim.maxComputeWorkgroupsPerDimension)
      return badRequest("max_tokens too large for one dispatch", {{"max_tokens", max_tokens}});
    GemmOp op = shell(kLinearCpuTokens, max_tokens, wt);
    for (auto& lp : parts) {
      Part part;
      part.kernel = lp.kernel;
      part.bind_group = std::move(lp.bg);
      part.groups_x = lp.gx;
      part.params = std::move(lp.params);
      op.parts_.push_back(std::move(part));
    }
    return op;
  }

  GemmOp op = shell(tiling.tile_t, max_tokens, wt);
  uint32_t row_offset = 0;
  for (size_t c = 0; c < wt.w_chunks.size(); ++c) {
    uint32_t rows = wt.chunk_rows[c];
    const gpu::Buffer* w = wt.w_chunks[c];
    const gpu::Buffer* s = wt.s_chunks.empty() ? w : wt.s_chunks[c];
    EWGPU_TRY(checkSize(w, weightBytes(wt.format, rows, wt.K), "w"));
    EWGPU_TRY(checkSize(s, scaleBytes(wt.format, rows, wt.K), "s"));
    if (w == &y || s == &y) return badRequest("y must not alias the weights");
    if (rows == 0) continue;
    Part part;
    part.groups_x = ceilDiv(swiglu ? rows / 2 : rows, cols_per_tile);
    if (part.groups_x > lim.maxComputeWorkgroupsPerDimension)
      return badRequest("weight chunk has too many rows for one dispatch", {{"rows", rows}});
    gpu::Constants k{{"N", rows},
                     {"K", wt.K},
                     {"QFMT", (int)wt.format},
                     {"EPI", (int)epi},
                     {"HAS_BIAS", wt.bias ? 1 : 0},
                     {"ROW_OFFSET", row_offset},
                     {"Y_STRIDE", y_cols},
                     {"X_STRIDE", wt.K},
                     {"TILE_T", tiling.tile_t},
                     {"TILE_N", tiling.tile_n},
                     {"STAGES", stages}};
    auto kernel = ctx.kernel("gemm", k);
    if (!kernel) return std::move(kernel).error();
    part.kernel = *kernel;
    const gpu::Buffer* bias = wt.bias ? wt.bias : &meta;  // unused slot: any buffer that is not y
    auto bg = ctx.bindGroup(*part.kernel, {{w}, {s}, {&x}, {&y}, {bias}, {&meta}});
    if (!bg) return std::move(bg).error();
    part.bind_group = std::move(*bg);
    op.parts_.push_back(std::move(part));
    row_offset += rows;
  }
  return op;
}

// gemm_q8_tile.wgsl (header there): x quantized per token by gemv_quant.wgsl into the shared scratch, then tiles of
// 64 or 128 tokens × 64 weight rows on dot4I8Packed.
Result<GemmOp> GemmOp::createInt8(gpu::Context& ctx, const LinearWeights& wt, const gpu::Buffer& x,
                                  const gpu::Buffer& y, const gpu::Buffer& meta, Epilogue epi, uint32_t max_tokens,
                                  GemmQ8 q8) {
  if (q8.digits != 1 && q8.digits != 2) return badRequest("int8 digits must be 1 or 2", {{"digits", q8.digits}});
  uint32_t tile_t = q8.tile_t;
  if (!tile_t) {
    const char* e = std::getenv("EWGPU_PREFILL_TILE");
    tile_t = e ? (uint32_t)std::strtoul(e, nullptr, 10) : 64;
  }
  if (tile_t != 64 && tile_t != 128) return badRequest("int8 tiles take 64 or 128 tokens", {{"tile_t", tile_t}});
  const bool gated = gatedEpilogue(epi);
  const uint32_t y_cols = gated ? wt.N / 2 : wt.N;
  const uint32_t row_words = quantRowWords(wt.K, q8.digits);
  EWGPU_TRY(checkSize(q8.xq, (uint64_t)max_tokens * row_words * 4, "xq"));
  if (q8.xq == &y || q8.xq == &x || q8.xq == &meta || q8.xq == wt.bias)
    return badRequest("xq must not alias x, y, meta or bias");
  const WGPULimits& lim = ctx.limits();
  if (max_tokens > lim.maxComputeWorkgroupsPerDimension)
    return badRequest("max_tokens too large for one dispatch", {{"max_tokens", max_tokens}});
  GemmOp op = shell(tile_t, max_tokens, wt);
  {
    auto kern = ctx.kernel("gemv_quant", {{"K", wt.K}, {"X_STRIDE", wt.K}, {"NORM", 0}, {"DIGITS", q8.digits},
                                          {"ROW_U32", row_words}, {"SG", quantSubgroups(ctx.info())}});
    if (!kern) return std::move(kern).error();
    op.quant_.kernel = *kern;
    auto bg = ctx.bindGroup(*op.quant_.kernel, {{&x}, {&x}, {q8.xq}, {&meta}});
    if (!bg) return std::move(bg).error();
    op.quant_.bind_group = std::move(*bg);
  }
  uint32_t row_offset = 0;
  for (size_t c = 0; c < wt.w_chunks.size(); ++c) {
    const uint32_t rows = wt.chunk_rows[c];
    const gpu::Buffer* w = wt.w_chunks[c];
    const gpu::Buffer* s = wt.s_chunks[c];
    EWGPU_TRY(checkSize(w, weightBytes(wt.format, rows, wt.K), "w"));
    EWGPU_TRY(checkSize(s, scaleBytes(wt.format, rows, wt.K), "s"));
    if (w == &y || s == &y) return badRequest("y must not alias the weights");
    if (rows == 0) continue;
    Part part;
    part.groups_x = gated ? ceilDiv(rows / 2, 32) : ceilDiv(rows, 64);
    if (part.groups_x > lim.maxComputeWorkgroupsPerDimension)
      return badRequest("weight chunk has too many rows for one dispatch", {{"rows", rows}});
    gpu::Constants k{{"QFMT", (int)wt.format}, {"N", rows},           {"K", wt.K},
                     {"EPI", (int)epi},        {"HAS_BIAS", wt.bias ? 1 : 0}, {"ROW_OFFSET", row_offset},
                     {"Y_STRIDE", y_cols},     {"DIGITS", q8.digits}, {"XQ_ROW", row_words},
                     {"XQ_ROWS", max_tokens},  {"TILE_T", tile_t}};
    auto kernel = ctx.kernel("gemm_q8_tile", k);
    if (!kernel) return std::move(kernel).error();
    part.kernel = *kernel;
    const gpu::Buffer* bias = wt.bias ? wt.bias : &meta;  // unused slot: any buffer that is not y
    auto bg = ctx.bindGroup(*part.kernel, {{w}, {s}, {q8.xq}, {&y}, {q8.xq}, {bias}, {&meta}});
    if (!bg) return std::move(bg).error();
    part.bind_group = std::move(*bg);
    op.parts_.push_back(std::move(part));
    row_offset += rows;
  }
  return op;
}

void GemmOp::record(gpu::Recorder& rec, uint32_t tokens) const {
  tokens = std::min(tokens, max_tokens_);
  if (tokens == 0) return;
  if (quant_.kernel) rec.dispatch(*quant_.kernel, quant_.bind_group, tokens);  // one workgroup per token
  uint32_t groups_y = ceilDiv(tokens, tile_t_);
  for (const Part& p : parts_) rec.dispatch(*p.kernel, p.bind_group, p.groups_x, groups_y);
}

Result<RmsNormOp> RmsNormOp::create(gpu::Context& ctx, const gpu::Buffer& x, const gpu::Buffer& weight,
                                    const gpu::Buffer& out, const gpu::Buffer& meta, uint32_t H, float eps,
                                    uint32_t max_tokens, const Mode& mode) {
  if (H == 0) return makeError(ErrorCode::kBadRequest, "rmsnorm: H must be positive");
  if (mode.layer && (!mode.bias || mode.bias->size() < (uint64_t)H * 4 || mode.bias == &out))
    return makeError(ErrorCode::kBadRequest, "rmsnorm: a LayerNorm needs a bias of H floats apart from out",
                     {{"H", H}});
  uint64_t row_bytes = (uint64_t)H * 4;
  if (x.size() < max_tokens * row_bytes || out.size() < max_tokens * row_bytes || weight.size() < row_bytes ||
      meta.size() < 4)
    return makeError(
        ErrorCode::kBadRequest, "rmsnorm: buffer too small",
        {{"x", x.size()}, {"out", out.size()}, {"weight", weight.size()}, {"H", H}, {"max_tokens", max_tokens}});
  if (&x == &out || &weight == &out || &meta == &out)
    return makeError(ErrorCode::kBadRequest, "rmsnorm: out must not alias x, weight or meta");
  if (max_tokens > ctx.limits().maxComputeWorkgroupsPerDimension)
    return makeError(ErrorCode::kBadRequest, "rmsnorm: max_tokens too large for one dispatch",
                     {{"max_tokens", max_tokens}});
  RmsNormOp op;
  auto kernel = ctx.kernel("rmsnorm", {{"H", H}, {"EPS", eps}, {"LAYER", mode.layer ? 1 : 0}, {"ADD", mode.add ? 1 : 0}});
  if (!kernel) return std::move(kernel).error();
  op.kernel_ = *kernel;
  auto bg = ctx.bindGroup(*op.kernel_, {{&x}, {&weight}, {&out}, {&meta}, {mode.layer ? mode.bias : &weight}});
  if (!bg) return std::move(bg).error();
  op.bind_group_ = std::move(*bg);
  op.max_tokens_ = max_tokens;
  return op;
}

void RmsNormOp::record(gpu::Recorder& rec, uint32_t tokens) const {
  tokens = std::min(tokens, max_tokens_);
  if (tokens > 0) rec.dispatch(*kernel_, bind_group_, tokens);
}

}  // namespace ewgpu::kernels
