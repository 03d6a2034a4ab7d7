#include "kernels/linear_cpu.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace ewgpu::kernels {

namespace {
// The largest matrix linear_cpu takes (weights). Its plain loops decode at a fraction of gemv.wgsl's tuned speed
// on big matrices (a Qwen3-0.6B-shaped folder cut to 2 layers, 32768-token vocabulary: 1.39 s of CPU time per
// token, against ~0.2 s expected from gemv.wgsl), where the model's decode outweighs compiling 9 pipelines; small
// models, where compilation is most of the start-up, fit (the default model's largest, lm_head, is 2^20).
constexpr uint64_t kMaxWeights = 1ull << 21;
}  // namespace

bool linearCpuServes(const DeviceInfo& d, const LinearWeights& w, Epilogue epi) {
  if (!d.cpuAdapter() || (uint64_t)w.N * w.K > kMaxWeights) return false;
  if (const char* e = std::getenv("EWGPU_LINEAR_CPU"); e && std::string(e) == "0") return false;
  const bool q4 = w.format == WeightFormat::kQ4F16 || w.format == WeightFormat::kQ4F32;
  return q4 && w.K % 32 == 0 && !(gatedEpilogue(epi) && (w.bias || w.w_chunks.size() != 1));
}

Result<std::vector<LinearCpuPart>> createLinearCpu(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x,
                                                   const gpu::Buffer& y, const LinearCpuArgs& a) {
  if (!linearCpuServes(ctx.info(), w, a.epi))
    return makeError(ErrorCode::kInternal, "linear_cpu does not serve this layer", {{"format", (int)w.format}});
  if ((a.tokens == 0) != (a.meta != nullptr) || (a.norm && a.tokens != 1))
    return makeError(ErrorCode::kInternal, "linear_cpu: tokens 0 needs meta, and the norm prologue one token");
  const bool swiglu = gatedEpilogue(a.epi);
  const uint32_t out_w = swiglu ? w.N / 2 : w.N;
  const uint32_t y_stride = a.y_stride ? a.y_stride : out_w;
  const uint32_t x_stride = a.x_stride ? a.x_stride : w.K;
  auto kern = ctx.kernel("linear_cpu", {{"QFMT", (int)w.format}});
  if (!kern) return std::move(kern).error();
  std::vector<LinearCpuPart> parts;
  uint32_t row0 = 0;
  for (size_t c = 0; c < w.w_chunks.size(); ++c) {
    const uint32_t n = w.chunk_rows[c];
    if (n == 0) continue;
    LinearCpuPart p;
    p.kernel = *kern;
    // linear_cpu.wgsl's Params, 12 words.
    uint32_t words[12] = {n, w.K, (uint32_t)a.epi, a.norm ? 1u : 0u, w.bias ? 1u : 0u, 0, row0, y_stride, x_stride,
                          a.tokens, 0, 0};
    std::memcpy(&words[5], &a.eps, 4);
    EWGPU_ASSIGN(p.params, ctx.createBuffer(sizeof words, gpu::BufferKind::kUniform, "linear-cpu-params"));
    ctx.write(p.params, 0, words, sizeof words);
    // Unused bindings get any read-only buffer that is not `y`.
    const gpu::Buffer* s = w.s_chunks.empty() ? w.w_chunks[c] : w.s_chunks[c];
    auto bg = ctx.bindGroup(**kern, {{w.w_chunks[c]}, {s}, {&x}, {&y}, {a.norm ? a.norm : &x},
                                     {w.bias ? w.bias : &x}, {a.meta ? a.meta : &x}, {&p.params}});
    if (!bg) return std::move(bg).error();
    p.bg = std::move(*bg);
    const uint32_t rows = swiglu ? n / 2 : n;
    p.gx = (rows + 63) / 64;  // linear_cpu.wgsl WG
    parts.push_back(std::move(p));
    row0 += n;
  }
  return parts;
}

}  // namespace ewgpu::kernels
