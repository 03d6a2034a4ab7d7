// Decode GEMV against a double-precision CPU reference: every weight format × epilogue × norm prologue × batch.
#include "kernel_test_util.h"
#include "kernels/gemv_op.h"

#include <cmath>
#include <cstring>
#include <functional>

namespace ewgpu::kernels {
namespace {

using namespace testing;

// With int8 x̂ each element is off by at most half its group's step max|x̂| / 127 (/ 254 more with a second
// digit), so output r of a plain projection is off by at most Σ_k |W[r, k]| · step(k) / 2. q8Steps(): step(k) for
// one activation row x̂ (digits 0: f32, no step).
std::vector<double> q8Steps(const std::vector<double>& xh, uint32_t digits) {
  std::vector<double> step(xh.size(), 0.0);
  if (!digits) return step;
  for (size_t k = 0; k < xh.size(); ++k) step[k / 32 * 32] = std::max(step[k / 32 * 32], std::abs(xh[k]) / 127);
  for (size_t k = 0; k < xh.size(); ++k) step[k] = step[k / 32 * 32] / (digits == 2 ? 254 : 1);
  return step;
}

double q8RowBound(const PackedWeights& pw, uint32_t r, const std::vector<double>& step) {
  double e = 0;
  for (size_t k = 0; k < step.size(); ++k) e += std::abs((double)pw.deq[r * step.size() + k]) * step[k] / 2;
  return e;
}

// SwiGLU's output bound from its halves' (|silu'| ≤ 1.1): |Δ(silu(g)·u)| ≤ 1.1·Eg·(|u| + Eu) + |silu(g)|·Eu.
// Epilogue codes (kernels/linear.h): 2 SwiGLU and 5 GeGLU are gated; 3 / 4 GELU (erf / tanh) after the bias.
bool gatedEpi(uint32_t e) { return e == 2 || e == 5; }
double geluTanh(double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }
double gateAct(uint32_t e, double g) { return e == 5 ? geluTanh(g) : g / (1 + std::exp(-g)); }
double plainAct(uint32_t e, double v) {
  if (e == 3) return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  return e == 4 ? geluTanh(v) : v;
}

double swigluBound(double g, double u, double eg, double eu) {
  return 1.1 * eg * (std::abs(u) + eu) + std::abs(g / (1 + std::exp(-g))) * eu;
}

// Every element within its quantization bound plus the f32 accumulation's own tolerance; returns the worst error
// relative to max |want| and the mean of error / bound.
std::pair<double, double> expectWithinQ8(const std::vector<float>& got, const std::vector<double>& want,
                                         const std::vector<double>& bound, uint32_t k) {
  double scale = 1e-6, worst = 0, mean_ratio = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_FALSE(std::isnan(got[i])) << "element " << i << " not written";
    double err = std::abs(got[i] - want[i]), tol = bound[i] + 2e-5 * std::sqrt((double)k / 64) * scale;
    EXPECT_LE(err, tol) << "element " << i << " got " << got[i] << " want " << want[i];
    worst = std::max(worst, err / scale);
    if (bound[i] > 0) mean_ratio += err / bound[i] / (double)got.size();
  }
  return {worst, mean_ratio};
}

struct Case {
  int qfmt;
  uint32_t n, k, batch, epi;
  bool norm, bias;
  uint32_t tpr = 32;
  bool sg = false;  // subgroup-shuffle reduction (needs tpr <= subgroup size)
  uint32_t rpt = 1;  // rows per thread group
  uint32_t ksplit = 1;  // thread groups splitting K
  bool xsh = false;     // x staged in workgroup memory (q4, batch 1, rpt 4 or 8)
  uint32_t q8 = 0;      // x̂ staged as this many int8 digits per element, a scale per 32 (q4, batch 1, rpt 4 or 8)
  bool qsg = false;     // with q8: x̂ quantized a quarter group per thread with shuffles (subgroups of ≥ 4)
};

void runCase(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  PackedWeights pw = randomWeights(c.qfmt, c.n, c.k, rng);
  std::vector<float> x((size_t)c.batch * c.k), nw(c.k), bias(c.n), y0;
  for (auto& v : x) v = nd(rng);
  for (auto& v : nw) v = 1.0f + 0.3f * nd(rng);
  for (auto& v : bias) v = nd(rng);
  const uint32_t out_w = gatedEpi(c.epi) ? c.n / 2 : c.n;
  const uint32_t y_stride = out_w + 3;  // exercise the stride
  y0.assign((size_t)c.batch * y_stride, 0.f);
  for (auto& v : y0) v = nd(rng);

  std::vector<double> want(y0.begin(), y0.end());
  std::vector<double> bound(want.size(), 0.0);  // the int8 x̂ error bound of each output
  for (uint32_t b = 0; b < c.batch; ++b) {
    std::vector<double> xh(c.k);
    double ss = 0;
    for (uint32_t k = 0; k < c.k; ++k) ss += (double)x[b * c.k + k] * x[b * c.k + k];
    double rinv = 1.0 / std::sqrt(ss / c.k + 1e-6);
    for (uint32_t k = 0; k < c.k; ++k) xh[k] = c.norm ? x[b * c.k + k] * rinv * nw[k] : x[b * c.k + k];
    const std::vector<double> step = q8Steps(xh, c.q8);
    auto rowdot = [&](uint32_t r) {
      double a = 0;
      for (uint32_t k = 0; k < c.k; ++k) a += (double)pw.deq[(size_t)r * c.k + k] * xh[k];
      return a;
    };
    for (uint32_t r = 0; r < out_w; ++r) {
      double& o = want[b * y_stride + r];
      if (gatedEpi(c.epi)) {
        double g = rowdot(r), u = rowdot(r + c.n / 2);
        o = gateAct(c.epi, g) * u;
        bound[b * y_stride + r] = swigluBound(g, u, q8RowBound(pw, r, step), q8RowBound(pw, r + c.n / 2, step));
      } else {
        bound[b * y_stride + r] = q8RowBound(pw, r, step);
        double v = rowdot(r) + (c.bias ? bias[r] : 0.0);
        o = c.epi == 1 ? o + v : plainAct(c.epi, v);
      }
    }
  }

  gpu::Context& g = ctx();
  gpu::Constants k{{"QFMT", c.qfmt}, {"N", c.n}, {"K", c.k}, {"BATCH", c.batch}, {"EPI", c.epi},
                   {"NORM", c.norm ? 1 : 0}, {"HAS_BIAS", c.bias ? 1 : 0}, {"Y_STRIDE", y_stride}, {"TPR", c.tpr},
                   {"SG_REDUCE", c.sg ? 1 : 0}, {"RPT", c.rpt}, {"KSPLIT", c.ksplit},
                   {"XSH", c.xsh ? 1 : 0}, {"XSH_LEN", c.xsh ? c.k / 4 + c.k / 32 : 1},
                   {"Q8", c.q8 ? 1 : 0}, {"Q8_GROUPS", c.q8 ? c.k / 32 : 1}, {"Q8_DIGITS", std::max(c.q8, 1u)},
                   {"QSG", c.qsg ? 1 : 0}};
  auto kern = g.kernel("gemv", k);
  ASSERT_TRUE(kern.ok()) << kern.error().toString();
  auto bw = upload(pw.w), bs = upload(pw.s), bx = upload(x), bn = upload(nw), bb = upload(bias);
  std::vector<float> ystart = y0;
  if (c.epi != 1)  // outputs that are overwritten start poisoned (padding columns keep y0)
    for (uint32_t b = 0; b < c.batch; ++b)
      for (uint32_t r = 0; r < out_w; ++r) ystart[b * y_stride + r] = std::nanf("");
  auto by = upload(ystart);
  auto bg = g.bindGroup(**kern, {{&bw}, {&bs}, {&bx}, {&by}, {&bn}, {&bb}});
  ASSERT_TRUE(bg.ok()) << bg.error().toString();
  gpu::Recorder rec(g);
  uint32_t rows_per_wg = 256 / c.tpr / c.ksplit * c.rpt;
  rec.dispatch(**kern, *bg, (out_w + rows_per_wg - 1) / rows_per_wg);
  ASSERT_TRUE(rec.submit().ok());
  auto got = download<float>(by, y0.size());
  // f32 accumulation over K terms: relative to the output scale.
  if (!c.q8) {
    expectClose(got, want, 2e-5 * std::sqrt((double)c.k / 64), "gemv");
    return;
  }
  auto [worst, mean_ratio] = expectWithinQ8(got, want, bound, c.k);
  // One digit: rounding errors of independent elements mostly cancel, far inside the worst-case bound on average.
  // (With two the bound is 254x smaller and the f32 accumulation's own rounding is of its size.)
  if (c.q8 == 1) {
    EXPECT_LT(mean_ratio, 0.2);
  }
  std::printf("[ q8 ] %u digit(s) n %u k %u epi %u: worst error %.2e of max |y|, mean error / bound %.3f\n", c.q8,
              c.n, c.k, c.epi, worst, mean_ratio);
}

TEST(Gemv, EveryFormatAndEpilogue) {
  uint32_t seed = 100;
  for (int q : {0, 1, 2, 3, 4})
    for (uint32_t epi : {0u, 1u, 2u}) {
      uint32_t k = q == 4 ? 120 : 96;
      SCOPED_TRACE("qfmt " + std::to_string(q) + " epi " + std::to_string(epi));
      runCase({q, 34, k, 1, epi, false, epi == 0}, seed++);
      runCase({q, 34, k, 3, epi, true, false}, seed++);
    }
}

TEST(Gemv, LargerShapesAndLaneCounts) {
  runCase({0, 1000, 1024, 1, 0, true, false}, 7);
  runCase({0, 130, 2048, 2, 1, false, false, 8}, 8);
  runCase({1, 66, 512, 8, 2, true, false, 16}, 9);
  runCase({4, 50, 400, 4, 0, true, false, 4}, 10);
}

TEST(Gemv, SeveralRowsPerThreadGroupReuseX) {
  for (int q : {0, 1, 2, 4}) {
    SCOPED_TRACE("qfmt " + std::to_string(q));
    uint32_t k = q == 4 ? 120 : 256;
    runCase({q, 301, k, 1, 0, true, true, 32, false, 4}, 20 + q);   // rows not a multiple of 4
    runCase({q, 130, k, 2, 2, false, false, 32, false, 4}, 30 + q);  // SwiGLU, batch 2
    runCase({q, 67, k, 4, 1, true, false, 16, false, 2}, 40 + q);    // residual, batch 4
  }
}

TEST(Gemv, SplitKAcrossThreadGroups) {
  for (int q : {0, 3, 4}) {
    SCOPED_TRACE("qfmt " + std::to_string(q));
    uint32_t k = q == 4 ? 400 : 1024;
    runCase({q, 45, k, 1, 1, true, false, 32, false, 4, 8}, 50 + q);   // 8 groups per row
    runCase({q, 90, k, 2, 2, false, false, 16, false, 2, 4}, 60 + q);  // SwiGLU
    runCase({q, 33, k, 1, 0, false, true, 32, false, 1, 2}, 70 + q);
  }
}

// The q4 fast path (one activation row, 4 or 8 rows per thread group) with x from registers or from workgroup
// memory, every epilogue, with and without the norm prologue, split K, row counts that leave a partial group.
TEST(Gemv, FastPathRowsPerGroupAndStagedX) {
  uint32_t seed = 200;
  for (int q : {0, 1})
    for (uint32_t rpt : {4u, 8u}) {
      if (q == 1 && rpt == 8) continue;  // q4f32_1 differs only in the scale load
      for (bool xsh : {false, true})
        for (uint32_t epi : {0u, 1u, 2u}) {
          SCOPED_TRACE("qfmt " + std::to_string(q) + " rpt " + std::to_string(rpt) + " xsh " + std::to_string(xsh) +
                       " epi " + std::to_string(epi));
          runCase({q, 2 * 83, 512, 1, epi, epi != 1, epi == 0, 32, false, rpt, 1, xsh}, seed++);
          runCase({q, 2 * 45, 1024, 1, epi, true, false, 16, false, rpt, 4, xsh}, seed++);
        }
    }
}

// int8 x̂ with one and two digits (Q8): every epilogue, norm and not, 4 and 8 rows per group, split K, a partial
// last row group, a K of many groups; each output within the quantization bound of the exact result.
TEST(Gemv, Int8Activations) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  uint32_t seed = 300;
  for (uint32_t digits : {1u, 2u})
    for (int q : {0, 1})
      for (uint32_t rpt : {4u, 8u})
        for (uint32_t epi : {0u, 1u, 2u}) {
          if (q == 1 && rpt == 8) continue;  // q4f32_1 differs only in the scale load
          SCOPED_TRACE("digits " + std::to_string(digits) + " qfmt " + std::to_string(q) + " rpt " +
                       std::to_string(rpt) + " epi " + std::to_string(epi));
          runCase({q, 2 * 83, 512, 1, epi, epi != 1, epi == 0, 32, false, rpt, 1, false, digits}, seed++);
          runCase({q, 2 * 45, 1024, 1, epi, true, false, 16, false, rpt, 4, false, digits}, seed++);
        }
  runCase({0, 64, 4096, 1, 1, false, false, 32, false, 4, 2, false, 2}, seed++);
  // 8 lanes per row and K split 8 ways (the GPU default for int8 x̂), SwiGLU with the norm prologue.
  runCase({0, 2 * 70, 2048, 1, 2, true, false, 8, false, 4, 8, false, 2}, seed++);
  if (ctx().info().subgroups && ctx().info().subgroup_min_size >= 8)
    runCase({0, 2 * 70, 2048, 1, 2, true, false, 8, true, 4, 8, false, 2}, seed++);
  // x̂ quantized a quarter group per thread (QSG, the default where subgroups hold 4 or more): K of fewer quarters
  // than threads (512: 64), of exactly 256 (2048) and of several passes (4096), one and two digits, every epilogue.
  if (ctx().info().subgroups && ctx().info().subgroup_min_size >= 4) {
    for (uint32_t digits : {1u, 2u})
      for (uint32_t epi : {0u, 1u, 2u}) {
        SCOPED_TRACE("QSG digits " + std::to_string(digits) + " epi " + std::to_string(epi));
        Case c{0, 2 * 83, 512, 1, epi, epi != 1, epi == 0, 32, false, 4, 1, false, digits};
        c.qsg = true;
        runCase(c, seed++);
      }
    Case c{0, 2 * 70, 2048, 1, 2, true, false, 8, false, 4, 8, false, 2};
    c.qsg = true;
    runCase(c, seed++);
    Case d{0, 64, 4096, 1, 1, true, false, 32, false, 8, 2, false, 1};
    d.qsg = true;
    runCase(d, seed++);
  }
}

TEST(Gemv, SubgroupShuffleReduction) {
  gpu::Context& g = ctx();
  if (!g.info().subgroups) GTEST_SKIP() << "no subgroups";
  uint32_t tpr = std::min<uint32_t>(g.info().subgroup_min_size, 32);
  runCase({0, 77, 256, 2, 0, true, false, tpr, true}, 11);
  runCase({0, 40, 256, 1, 2, false, false, tpr, true}, 12);
}


// The batched GEMV (gemv_batch.wgsl through GemvOp, batch > 1): every format it takes × epilogue, the norm
// prologue, bias, strides, K not a multiple of the K tile, more rows than one batch tile, and fewer active rows
// than the op holds. Rows past the active count must stay untouched (poisoned), and a row's output must be
// bit-identical whatever the number of active rows (a sequence's logits cannot depend on its neighbours).
struct BatchCase {
  int qfmt;
  uint32_t n, k, batch, epi;
  bool norm, bias;
  std::vector<uint32_t> active;  // active-row counts to run, each compared with the reference
  uint32_t tile = 0;             // batch tile (0: the op's default)
  uint32_t q8 = 0;               // int8 x̂ digits (q4 formats; 0: f32 x̂)
  uint32_t ksplit = 0;           // with int8 x̂: thread groups splitting K (0: the op's default)
  bool gemm = false;             // with int8 x̂: gemm_q8.wgsl instead of gemv_batch.wgsl
  int gemm_tile = -1;            // 1 gemm_q8_wt, 0 gemm_q8 (the K-sliced kernel); -1 the op's default
  uint32_t gemm_ks = 0;          // the GEMM's K slices (0: the op's default)
  uint32_t gemm_nw = 0;          // gemm_q8_wt's weight rows per tile (0: the op's default)
  int gemm_xsm = -1;             // gemm_q8_wt: x̂ staged (1) or read from global memory (0); -1 the default
  uint32_t gemm_nb = 0;          // gemm_q8: threads of weight blocks per workgroup (0: the op's default)
  uint32_t gemm_max_mb = 0;      // the largest tile's blocks of 4 activation rows (0: the op's default)
  int gemm_xsplit = -1;          // gemm_q8: x̂ in gemv_quant.wgsl's XSPLIT layout (1) or not (0); -1 the default
  int gemm_wg = -1;              // gemm_q8: smaller tiles' weight blocks doubled up to this many threads (0: never;
                                 // -1 the default)
};

// `outs`, when given, receives each active count's output rows.
void runBatchCase(const BatchCase& c, uint32_t seed, std::vector<std::vector<float>>* outs_out = nullptr) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  PackedWeights pw = randomWeights(c.qfmt, c.n, c.k, rng);
  const uint32_t x_stride = c.k + 4;  // exercise the stride
  const uint32_t out_w = gatedEpi(c.epi) ? c.n / 2 : c.n, y_stride = out_w + 3;
  std::vector<float> x((size_t)c.batch * x_stride), nw(c.k), bias(c.n), y0((size_t)c.batch * y_stride);
  for (auto& v : x) v = nd(rng);
  for (auto& v : nw) v = 1.0f + 0.3f * nd(rng);
  for (auto& v : bias) v = nd(rng);
  for (auto& v : y0) v = nd(rng);
  std::vector<double> want(y0.begin(), y0.end()), bound(want.size(), 0.0);
  for (uint32_t b = 0; b < c.batch; ++b) {
    double ss = 0;
    for (uint32_t k = 0; k < c.k; ++k) ss += (double)x[b * x_stride + k] * x[b * x_stride + k];
    const double rinv = 1.0 / std::sqrt(ss / c.k + 1e-6);
    std::vector<double> xh(c.k);
    for (uint32_t k = 0; k < c.k; ++k) xh[k] = c.norm ? x[b * x_stride + k] * rinv * nw[k] : x[b * x_stride + k];
    const std::vector<double> step = q8Steps(xh, c.q8);
    auto rowdot = [&](uint32_t r) {
      double a = 0;
      for (uint32_t k = 0; k < c.k; ++k) a += (double)pw.deq[(size_t)r * c.k + k] * xh[k];
      return a;
    };
    for (uint32_t r = 0; r < out_w; ++r) {
      double& o = want[b * y_stride + r];
      if (gatedEpi(c.epi)) {
        double g = rowdot(r), u = rowdot(r + c.n / 2);
        o = gateAct(c.epi, g) * u;
        bound[b * y_stride + r] = swigluBound(g, u, q8RowBound(pw, r, step), q8RowBound(pw, r + c.n / 2, step));
      } else {
        double v = rowdot(r) + (c.bias ? bias[r] : 0.0);
        o = c.epi == 1 ? o + v : plainAct(c.epi, v);
        bound[b * y_stride + r] = q8RowBound(pw, r, step);
      }
    }
  }
  gpu::Context& g = ctx();
  auto bw = upload(pw.w), bs = upload(pw.s), bx = upload(x), bn = upload(nw), bb = upload(bias);
  auto bactive = upload(std::vector<uint32_t>{0, 0, 0, 0}, "active");
  LinearWeights lw;
  lw.w_chunks = {&bw};
  if (c.qfmt <= 1) lw.s_chunks = {&bs};
  lw.chunk_rows = {c.n};
  lw.N = c.n;
  lw.K = c.k;
  lw.format = (WeightFormat)c.qfmt;
  lw.bias = c.bias ? &bb : nullptr;
  std::vector<std::vector<float>> outs;
  for (uint32_t active : c.active) {
    SCOPED_TRACE("active rows " + std::to_string(active));
    std::vector<float> ystart = y0;
    for (uint32_t b = 0; b < c.batch; ++b)
      for (uint32_t r = 0; r < out_w; ++r)
        if (c.epi != 1 || b >= active) ystart[b * y_stride + r] = std::nanf("");
    auto by = upload(ystart);
    GemvConfig cfg{(Epilogue)c.epi, c.batch, c.norm ? &bn : nullptr, 1e-6f, x_stride, y_stride};
    cfg.active = &bactive;
    cfg.batch_tile = c.tile;
    cfg.act = c.q8 == 2 ? Activations::kInt16 : c.q8 == 1 ? Activations::kInt8 : Activations::kF32;
    cfg.ksplit = c.ksplit;
    cfg.batch_kernel = c.gemm ? GemvConfig::BatchKernel::kGemm : GemvConfig::BatchKernel::kGemv;
    cfg.gemm_tile = c.gemm_tile;
    cfg.gemm_ks = c.gemm_ks;
    cfg.gemm_nw = c.gemm_nw;
    cfg.gemm_xsm = c.gemm_xsm;
    cfg.gemm_nb = c.gemm_nb;
    cfg.gemm_max_mb = c.gemm_max_mb;
    cfg.gemm_xsplit = c.gemm_xsplit;
    cfg.gemm_wg = c.gemm_wg;
    auto op = GemvOp::create(g, lw, bx, by, cfg);
    ASSERT_TRUE(op.ok()) << op.error().toString();
    ASSERT_EQ(op->batched(), c.batch > 1);
    ASSERT_EQ(op->gemm(), c.gemm);
    if (c.gemm && c.gemm_tile >= 0) {
      ASSERT_EQ(op->gemmKernel(), c.gemm_tile ? "gemm_q8_wt" : "gemm_q8");
    }
    if (c.gemm && c.gemm_tile == 0 && c.gemm_xsplit >= 0) { ASSERT_EQ(op->xsplit(), c.gemm_xsplit == 1); }
    uint32_t words[4] = {active, 0, 0, 0};
    g.write(bactive, 0, words, sizeof words);
    gpu::Recorder rec(g);
    op->record(rec, active);
    ASSERT_TRUE(rec.submit().ok());
    auto got = download<float>(by, y0.size());
    std::vector<float> got_active(got.begin(), got.begin() + (size_t)active * y_stride);
    std::vector<double> want_active(want.begin(), want.begin() + (size_t)active * y_stride);
    for (uint32_t b = 0; b < active; ++b)  // padding columns are never written: they keep y0
      for (uint32_t r = out_w; r < y_stride; ++r) want_active[b * y_stride + r] = y0[b * y_stride + r];
    if (c.q8) {
      std::vector<double> bound_active(bound.begin(), bound.begin() + (size_t)active * y_stride);
      auto [worst, mean_ratio] = expectWithinQ8(got_active, want_active, bound_active, c.k);
      if (c.q8 == 1) {
        EXPECT_LT(mean_ratio, 0.2);
      }
      std::printf("[ q8 %s ] %u digit(s) n %u k %u epi %u active %u: worst error %.2e of max |y|, mean error / bound "
                  "%.3f\n", c.gemm ? "gemm" : "batch", c.q8, c.n, c.k, c.epi, active, worst, mean_ratio);
    } else {
      expectClose(got_active, want_active, 2e-5 * std::sqrt((double)c.k / 64), "gemv_batch");
    }
    for (size_t i = (size_t)active * y_stride; i < got.size(); ++i) {
      if (i % y_stride < out_w) { ASSERT_TRUE(std::isnan(got[i])) << "inactive row written at " << i; }
    }
    outs.push_back(std::move(got));
  }
  for (size_t a = 1; a < outs.size(); ++a) {
    const uint32_t common = std::min(c.active[a], c.active[0]);
    for (size_t i = 0; i < (size_t)common * y_stride; ++i) {
      ASSERT_EQ(floatBits(outs[a][i]), floatBits(outs[0][i]))
          << "row " << i / y_stride << " differs between " << c.active[0] << " and " << c.active[a] << " active rows";
    }
  }
  if (outs_out) *outs_out = std::move(outs);
}

TEST(GemvBatch, EveryFormatEpilogueAndActiveCount) {
  uint32_t seed = 400;
  for (int q : {0, 1, 2, 3})
    for (uint32_t epi : {0u, 1u, 2u}) {
      SCOPED_TRACE("qfmt " + std::to_string(q) + " epi " + std::to_string(epi));
      runBatchCase({q, 2 * 37, 96, 3, epi, epi != 1, epi == 0, {3, 1, 2}}, seed++);
    }
}

// One row through GemvOp: gemv.wgsl on GPUs, linear_cpu.wgsl (one pipeline for every layer) on CPU adapters for
// q4 weights: every epilogue, the norm prologue, bias, strides.
TEST(GemvOp, SingleRowEveryEpilogue) {
  uint32_t seed = 600;
  for (int q : {0, 1, 2})
    for (uint32_t epi : {0u, 1u, 2u}) {
      SCOPED_TRACE("qfmt " + std::to_string(q) + " epi " + std::to_string(epi));
      runBatchCase({q, 2 * 37, 96, 1, epi, epi != 1, epi == 0, {1}}, seed++);
      runBatchCase({q, 2 * 70, 544, 1, epi, true, epi != 2, {1}}, seed++);
    }
}

// GemvConfig::l2_next: the workgroups appended to a one-row GEMV touch the next projection's codes and scales and
// leave this one's outputs bit for bit as they were (gemv.wgsl's int8 x̂ path), writing the touched words into
// y's spare bytes; the size cap (EWGPU_GEMV_L2_MB) takes fewer workgroups, and a y without spare bytes none.
TEST(GemvOp, L2NextKeepsTheBits) {
  std::mt19937 rng(901);
  std::normal_distribution<float> nd;
  const uint32_t n = 2 * 96, k = 1024, nn = 3072;
  PackedWeights pw = randomWeights(0, n, k, rng), pn = randomWeights(0, nn, k, rng);
  std::vector<float> x(k), nw(k);
  for (auto& v : x) v = nd(rng);
  for (auto& v : nw) v = 1.0f + 0.3f * nd(rng);
  gpu::Context& g = ctx();
  if (!g.info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product (one row then takes linear_cpu.wgsl here)";
  auto bw = upload(pw.w), bs = upload(pw.s), bx = upload(x), bn = upload(nw);
  auto nw_ = upload(pn.w), ns = upload(pn.s);
  LinearWeights lw{{&bw}, {&bs}, {n}, n, k, WeightFormat::kQ4F16, nullptr};
  LinearWeights next{{&nw_}, {&ns}, {nn}, nn, k, WeightFormat::kQ4F16, nullptr};
  const uint32_t spare = (uint32_t)(kL2SinkBytes / 4);
  setenv("EWGPU_GEMV_L2", "1", 1);
  for (uint32_t epi : {0u, 1u, 2u}) {
    SCOPED_TRACE("epi " + std::to_string(epi));
    const uint32_t out_w = epi == 2 ? n / 2 : n;
    std::vector<std::vector<float>> outs;
    uint32_t full_wg = 0;
    for (int mode = 0; mode < 4; ++mode) {  // without, with, with a 1 MB cap, with but no spare bytes in y
      if (mode == 2) setenv("EWGPU_GEMV_L2_MB", "1", 1);
      std::vector<float> ystart(out_w + (mode == 3 ? 0 : spare), 0.f);
      for (uint32_t r = 0; r < out_w; ++r) ystart[r] = epi == 1 ? 0.5f : std::nanf("");
      auto by = upload(ystart);
      GemvConfig cfg{(Epilogue)epi, 1, epi == 1 ? nullptr : &bn, 1e-6f};
      cfg.act = Activations::kInt8;
      cfg.rpt = 4;
      if (mode > 0) cfg.l2_next = &next;
      auto op = GemvOp::create(g, lw, bx, by, cfg);
      unsetenv("EWGPU_GEMV_L2_MB");
      ASSERT_TRUE(op.ok()) << op.error().toString();
      // The next weights: 3072 × 1024 q4 = 1.5 MB of codes and 192 KB of scales, 16 sectors a thread.
      if (mode == 0 || mode == 3) { EXPECT_EQ(op->l2Workgroups(), 0u); }
      if (mode == 1) {
        full_wg = op->l2Workgroups();
        EXPECT_EQ(full_wg, (uint32_t)(((nw_.size() + ns.size()) / 32 + 4095) / 4096));
      }
      if (mode == 2) {
        EXPECT_GT(op->l2Workgroups(), 0u);
        EXPECT_LT(op->l2Workgroups(), full_wg);
      }
      gpu::Recorder rec(g);
      op->record(rec);
      ASSERT_TRUE(rec.submit().ok());
      auto got = download<float>(by, ystart.size());
      if (mode == 1 || mode == 2) {
        uint32_t written = 0;
        for (uint32_t i = out_w; i < got.size(); ++i) written += floatBits(got[i]) != 0;
        EXPECT_GT(written, spare / 2) << "the appended workgroups wrote no spare words";
      }
      got.resize(out_w);
      outs.push_back(std::move(got));
    }
    for (uint32_t r = 0; r < out_w; ++r) {
      ASSERT_FALSE(std::isnan(outs[0][r])) << "output " << r << " not written";
      for (int m = 1; m < 4; ++m)
        ASSERT_EQ(floatBits(outs[m][r]), floatBits(outs[0][r])) << "output " << r << " mode " << m;
    }
  }
  unsetenv("EWGPU_GEMV_L2");
}

// The GELU / GeGLU epilogues (gemma, gpt_neox, phi) through gemv.wgsl and GemvOp (one row: gemv.wgsl or, on CPU
// adapters, linear_cpu.wgsl; three rows: gemv_batch.wgsl), with the norm prologue and bias.
TEST(GemvOp, GeluAndGeGluEpilogues) {
  uint32_t seed = 700;
  for (int q : {0, 2})
    for (uint32_t epi : {3u, 4u, 5u}) {
      SCOPED_TRACE("qfmt " + std::to_string(q) + " epi " + std::to_string(epi));
      runCase({q, 34, 96, 1, epi, true, epi != 5}, seed++);
      runBatchCase({q, 2 * 37, 96, 1, epi, true, epi != 5, {1}}, seed++);
      runBatchCase({q, 2 * 37, 96, 3, epi, false, epi != 5, {3, 2}}, seed++);
    }
}

// 32 rows in tiles of 16 and of 8 (two and four tiles), a K of several K tiles with a partial last one (544 = 2
// tiles of 256 + 32 on SwiftShader), active counts that leave a partial tile.
TEST(GemvBatch, ThirtyTwoRowsInTiles) {
  runBatchCase({0, 2 * 70, 544, 32, 2, true, false, {32, 17, 5}}, 500);
  runBatchCase({0, 150, 544, 32, 0, true, true, {32, 9}, 8}, 501);
  runBatchCase({3, 40, 128, 32, 1, false, false, {31, 1}}, 502);
}

// int8 x̂ (Q8) in the batched kernel: one and two digits, every epilogue, norm and bias, a K of several K tiles
// with a partial last one, a row count that leaves a partial group of 4, 32 rows in tiles of 8 and active counts
// that leave partial tiles. Each output within the quantization bound, and bit-identical across active counts.
TEST(GemvBatch, Int8Activations) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  uint32_t seed = 600;
  for (uint32_t digits : {1u, 2u})
    for (int q : {0, 1})
      for (uint32_t epi : {0u, 1u, 2u}) {
        if (q == 1 && epi != 0) continue;  // q4f32_1 differs only in the scale load
        SCOPED_TRACE("digits " + std::to_string(digits) + " qfmt " + std::to_string(q) + " epi " + std::to_string(epi));
        runBatchCase({q, 2 * 37, 512, 3, epi, epi != 1, epi == 0, {3, 1, 2}, 0, digits}, seed++);
      }
  runBatchCase({0, 2 * 70, 1088, 32, 2, true, false, {32, 17, 5}, 8, 2}, seed++);
  runBatchCase({0, 150, 1088, 32, 0, true, true, {32, 9}, 4, 2}, seed++);
  // K split across 4 thread groups (the GPU default for matrices under 16384 rows), every epilogue.
  for (uint32_t epi : {0u, 1u, 2u}) runBatchCase({0, 2 * 45, 1088, 8, epi, epi != 1, epi == 0, {8, 3}, 4, 2, 4}, seed++);
}

// The small-M GEMMs (gemm_q8.wgsl, the default, and gemm_q8_wt.wgsl, EWGPU_GEMMQ_KERNEL=tile: the batched int8-x̂
// projections of engines of kGemmMinBatch rows or more), each: one and two digits, both q4 formats, every epilogue,
// norm and bias; 32 rows with active counts that take each tile (4, 8, 16, 32 rows: the tile is chosen per step) and
// leave partial ones; row counts that leave partial weight tiles, a K whose slices get unequal group counts (34
// groups in 16 slices). Then each kernel's other slice counts and gemm_q8_wt's other tile widths and x̂ from global
// memory. Each output within the quantization bound, and bit-identical across active counts, so across tiles.
TEST(GemvBatch, SmallMGemm) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  uint32_t seed = 900;
  for (int tile : {0, 1})
    for (uint32_t digits : {1u, 2u})
      for (int q : {0, 1})
        for (uint32_t epi : {0u, 1u, 2u}) {
          if (q == 1 && (epi != 0 || digits == 1)) continue;  // q4f32_1 differs only in the scale load
          if (digits == 1 && epi != 0) continue;  // the digits meet the epilogues in the same code
          SCOPED_TRACE(std::string(tile ? "gemm_q8_wt" : "gemm_q8") + " digits " + std::to_string(digits) + " qfmt " +
                       std::to_string(q) + " epi " + std::to_string(epi));
          BatchCase c{q, epi == 2 ? 2u * 37 : 150u, 1088, 32, epi, epi != 1, epi == 0, {32, 17, 12, 5, 1}, 0, digits};
          c.gemm = true;
          c.gemm_tile = tile;
          runBatchCase(c, seed++);
        }
  for (int tile : {0, 1})
    for (uint32_t epi : {3u, 5u}) {  // GELU after the bias (4, tanh, differs only in activation.wgsl), GeGLU
      BatchCase c{0, 2 * 21, 256, 8, epi, true, epi != 5, {8, 3}, 0, 2};
      c.gemm = true;
      c.gemm_tile = tile;
      runBatchCase(c, seed++);
    }
  // Other K slice counts: gemm_q8 8 (its default is 16); gemm_q8_wt 1 (every group in one thread) and 16 (on CPU
  // adapters the largest tile that fits then has 4 rows, so 32 rows take 8 tiles).
  for (auto [tile, ks] : {std::pair{0, 8u}, std::pair{1, 1u}, std::pair{1, 16u}}) {
    SCOPED_TRACE(std::string(tile ? "gemm_q8_wt" : "gemm_q8") + " K slices " + std::to_string(ks));
    BatchCase c{0, 70, 544, 32, 0, true, true, {32, 9, 2}, 0, 2};
    c.gemm = true;
    c.gemm_tile = tile;
    c.gemm_ks = ks;
    runBatchCase(c, seed++);
  }
  // gemm_q8_wt, x̂ read from global memory at compute time (the staged path's arithmetic on other loads), with
  // 4-row tiles and 32 K slices too.
  for (uint32_t nw : {4u, 16u}) {
    SCOPED_TRACE("x̂ from global memory, weight rows per tile " + std::to_string(nw));
    BatchCase c{0, 2 * 37, 1088, 32, 2, true, false, {32, 17, 5}, 0, nw == 4 ? 1u : 2u};
    c.gemm = true;
    c.gemm_tile = 1;
    c.gemm_nw = nw;
    c.gemm_xsm = 0;
    c.gemm_ks = nw == 4 ? 32 : 0;
    runBatchCase(c, seed++);
  }
  // gemm_q8_wt's wider column tiles (32, 64 weight rows; 74 and 150 rows leave partial tiles). 64 is its default
  // for wide matrices (kGemmWideRows): the MLP's gate/up, SwiGLU with one digit in engines.
  for (uint32_t nw : {32u, 64u}) {
    SCOPED_TRACE("weight rows per tile " + std::to_string(nw));
    BatchCase c = nw == 32 ? BatchCase{0, 2u * 37, 1088, 32, 2, true, false, {32, 17, 3}, 0, 2}
                           : BatchCase{0, 2u * 75, 1088, 32, 2, true, false, {32, 17, 3}, 0, 1};
    c.gemm = true;
    c.gemm_tile = 1;
    c.gemm_nw = nw;
    runBatchCase(c, seed++);
  }
}

// runBatchCase's outputs of two ops over the same case, one vector per active count: every element bit-identical.
void expectSameBits(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                    const std::vector<uint32_t>& active) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t a = 0; a < got.size(); ++a) {
    ASSERT_EQ(got[a].size(), want[a].size());
    for (size_t i = 0; i < got[a].size(); ++i)
      ASSERT_EQ(floatBits(got[a][i]), floatBits(want[a][i])) << "active " << active[a] << " element " << i;
  }
}

// gemm_q8.wgsl's weight blocks per workgroup (NB 2, and NB doubled in the smaller tiles up to 128 / 256 threads:
// GemvConfig::gemm_wg) and tiles capped below 32 rows (so that 32 active rows take several): each output within the
// quantization bound, and every row bit-identical to the op with neither (one weight block per workgroup in every
// tile, the largest tile) at each active count, as the kernel's header says a step may rely on.
// Row counts that leave a partial last weight tile; SwiGLU, the residual, bias; one and two digits.
TEST(GemvBatch, GemmTilesKeepTheBits) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  uint32_t seed = 950;
  for (uint32_t epi : {0u, 1u, 2u}) {
    const uint32_t digits = epi == 1 ? 2 : 1;
    BatchCase base{0, epi == 2 ? 2u * 45 : 150u, 1088, 32, epi, epi != 1, epi == 0, {32, 17, 5, 1}, 0, digits};
    base.gemm = true;
    base.gemm_tile = 0;
    base.gemm_wg = 0;
    std::vector<std::vector<float>> want;
    {
      SCOPED_TRACE("epi " + std::to_string(epi) + " one weight block per workgroup");
      runBatchCase(base, seed, &want);
    }
    ASSERT_EQ(want.size(), base.active.size());
    struct Variant { uint32_t nb, max_mb; int wg; };
    for (auto [nb, max_mb, wg] : {Variant{2, 0, 0}, Variant{1, 2, 0}, Variant{2, 1, 0}, Variant{1, 0, -1},
                                  Variant{1, 0, 256}, Variant{2, 2, 128}}) {
      SCOPED_TRACE("epi " + std::to_string(epi) + " NB " + std::to_string(nb) + " largest tile " +
                   std::to_string(max_mb) + " threads up to " + std::to_string(wg));
      BatchCase c = base;
      c.gemm_nb = nb;
      c.gemm_max_mb = max_mb;
      c.gemm_wg = wg;
      std::vector<std::vector<float>> got;
      runBatchCase(c, seed, &got);
      ASSERT_NO_FATAL_FAILURE(expectSameBits(got, want, base.active));
    }
    ++seed;
  }
}

// gemm_q8 with x̂ in gemv_quant.wgsl's XSPLIT layout (GemvConfig::gemm_xsplit: a group's two halves apart, so a warp's
// loads of consecutive groups are contiguous) sums the same products in the same order: every output bit-identical
// to the default layout's, for one and two digits, plain, residual and gated epilogues, at 32, 17 and 1 active rows.
TEST(GemvBatch, XSplitLayoutKeepsTheBits) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  uint32_t seed = 970;
  for (uint32_t epi : {0u, 1u, 2u})
    for (uint32_t digits : {1u, 2u}) {
      SCOPED_TRACE("epi " + std::to_string(epi) + " digits " + std::to_string(digits));
      BatchCase c{0, epi == 2 ? 2u * 45 : 150u, 1088, 32, epi, epi != 1, epi == 0, {32, 17, 1}, 0, digits};
      c.gemm = true;
      c.gemm_tile = 0;
      std::vector<std::vector<float>> want, got;
      c.gemm_xsplit = 0;
      runBatchCase(c, seed, &want);
      c.gemm_xsplit = 1;
      runBatchCase(c, seed, &got);
      ASSERT_NO_FATAL_FAILURE(expectSameBits(got, want, c.active));
      ++seed;
    }
}

// gemv_quant.wgsl's subgroup path (SG: a thread per quarter group, shuffles among the 4) against the workgroup-memory
// path: without the norm the rows' words are identical (the same expressions); with it only the RMS's summation order
// differs, so each step agrees to float rounding and each element's x̂ (digits × step) to one unit of the last digit.
// K of fewer quarters than threads (96), of several passes (2080 = 260 quarters) and of exactly one (2048).
TEST(GemvQuant, SubgroupPathMatchesTheWorkgroupPath) {
  gpu::Context& g = ctx();
  if (!g.info().subgroups || g.info().subgroup_min_size < 4) GTEST_SKIP() << "needs subgroups of at least 4";
  std::mt19937 rng(31);
  std::normal_distribution<float> nd;
  const uint32_t rows = 3;
  for (uint32_t k : {96u, 2048u, 2080u})
    for (uint32_t digits : {1u, 2u})
      for (bool norm : {false, true}) {
        SCOPED_TRACE("K " + std::to_string(k) + " digits " + std::to_string(digits) + (norm ? " norm" : ""));
        std::vector<float> x((size_t)rows * k), nw(k);
        for (auto& v : x) v = nd(rng) * (1.0f + 3.0f * (rng() % 7 == 0));
        for (auto& v : nw) v = 1.0f + 0.3f * nd(rng);
        const uint32_t row_u32 = quantRowWords(k, digits), G = k / 32;
        auto bx = upload(x), bn = upload(nw), bm = upload(std::vector<uint32_t>{rows, 0, 0, 0}, "meta");
        std::vector<std::vector<uint32_t>> out;
        for (int sg : {0, 1}) {
          auto kern = g.kernel("gemv_quant", {{"K", k}, {"X_STRIDE", k}, {"NORM", norm ? 1 : 0}, {"EPS", 1e-6f},
                                              {"DIGITS", digits}, {"ROW_U32", row_u32}, {"SG", sg}});
          ASSERT_TRUE(kern.ok()) << kern.error().toString();
          auto bq = upload(std::vector<uint32_t>((size_t)rows * row_u32, 0xdeadbeefu), "q");
          auto bg = g.bindGroup(**kern, {{&bx}, {&bn}, {&bq}, {&bm}});
          ASSERT_TRUE(bg.ok());
          gpu::Recorder rec(g);
          rec.dispatch(**kern, *bg, rows);
          ASSERT_TRUE(rec.submit().ok());
          out.push_back(download<uint32_t>(bq, (size_t)rows * row_u32));
        }
        if (!norm) {
          for (size_t i = 0; i < out[0].size(); ++i) ASSERT_EQ(out[0][i], out[1][i]) << "word " << i;
          continue;
        }
        // Element j of group gr of digit e: word 2m + (j % 2) of the group (m = j / 8), byte (j % 8) / 2.
        auto digit = [&](const std::vector<uint32_t>& q, uint32_t b, uint32_t e, uint32_t gr, uint32_t j) {
          const uint32_t w = q[b * row_u32 + (e * G + gr) * 8 + 2 * (j / 8) + j % 2];
          return (double)(int8_t)(w >> (8 * ((j % 8) / 2)));
        };
        for (uint32_t b = 0; b < rows; ++b)
          for (uint32_t gr = 0; gr < G; ++gr) {
            float s0, s1;
            std::memcpy(&s0, &out[0][b * row_u32 + digits * G * 9 + gr], 4);
            std::memcpy(&s1, &out[1][b * row_u32 + digits * G * 9 + gr], 4);
            ASSERT_NEAR(s0, s1, 1e-5 * std::abs(s0)) << "row " << b << " group " << gr;
            for (uint32_t j = 0; j < 32; ++j) {
              double v0 = 0, v1 = 0;
              for (uint32_t e = 0; e < digits; ++e) {
                const double unit = e ? 1.0 / 254 : 1.0;
                v0 += digit(out[0], b, e, gr, j) * unit * s0;
                v1 += digit(out[1], b, e, gr, j) * unit * s1;
              }
              ASSERT_NEAR(v0, v1, 1.01 * s0 / (digits == 2 ? 254 : 1) + 1e-5 * std::abs(v0)) << "element " << gr * 32 + j;
            }
          }
      }
}

// The kernel choice of a batched op over `n` q4f16_1 weight rows (K 32, codes 8, scales 1) and `batch` activation
// rows with `act` x̂ and GemvConfig::gemm_tile `gemm_tile`, as the kernel-choice tests read it: batched(), gemm() and
// gemmKernel(); nullopt (and a test failure) where the op is not created.
struct KernelChoice {
  bool batched = false, gemm = false;
  std::string kernel;
  bool xsplit = false;
  std::array<uint32_t, 4> threads{};  // gemmThreads(0 .. 3)
};
std::optional<KernelChoice> kernelChoice(uint32_t n, uint32_t batch, Activations act, int gemm_tile = -1,
                                         const std::function<void(GemvConfig&)>& tweak = {}) {
  std::vector<uint32_t> w((size_t)n * 32 / 8, 0x88888888u), s((size_t)n / 2 + 1, 0x3c003c00u);
  std::vector<float> x((size_t)batch * 32, 1.0f), y((size_t)batch * n, 0.f);
  auto bw = upload(w), bs = upload(s), bx = upload(x), by = upload(y);
  auto bactive = upload(std::vector<uint32_t>{batch, 0, 0, 0}, "active");
  LinearWeights lw;
  lw.w_chunks = {&bw};
  lw.s_chunks = {&bs};
  lw.chunk_rows = {n};
  lw.N = n;
  lw.K = 32;
  lw.format = WeightFormat::kQ4F16;
  GemvConfig cfg{Epilogue::kStore, batch, nullptr, 1e-6f, 0, 0};
  cfg.active = &bactive;
  cfg.act = act;
  cfg.gemm_tile = gemm_tile;
  if (tweak) tweak(cfg);
  auto op = GemvOp::create(ctx(), lw, bx, by, cfg);
  if (!op.ok()) {
    ADD_FAILURE() << op.error().toString();
    return std::nullopt;
  }
  KernelChoice kc{op->batched(), op->gemm(), op->gemmKernel(), op->xsplit()};
  for (uint32_t i = 0; i < 4; ++i) kc.threads[i] = op->gemmThreads(i);
  return kc;
}

// gemm_q8's defaults in a 32-row engine: x̂ in the XSPLIT layout, and every tile's workgroup of 128 threads (16 K
// slices × 8 / 4 / 2 / 1 weight blocks × 1 / 2 / 4 / 8 blocks of 4 activation rows); GemvConfig::gemm_wg 0 gives
// NB 1 in every tile (16 / 32 / 64 / 128 threads), 256 doubles them up to 256 threads in every tile; gemm_xsplit 0
// turns the layout off; gemm_q8_wt never takes it. (XSplitLayoutKeepsTheBits and GemmTilesKeepTheBits check the
// results.)
TEST(GemvBatch, GemmWorkgroupsAndLayout) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  for (const char* e : {"EWGPU_GEMMQ_KERNEL", "EWGPU_GEMMQ_TILE_ROWS", "EWGPU_GEMMQ_WG", "EWGPU_GEMMQ_XSPLIT",
                        "EWGPU_GEMMQ_KS", "EWGPU_GEMMQ_NB", "EWGPU_GEMMQ_MAXMB"})
    if (std::getenv(e)) GTEST_SKIP() << e << " set";
  using T = std::array<uint32_t, 4>;
  auto c = kernelChoice(128, 32, Activations::kInt8, 0);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->xsplit);
  EXPECT_EQ(c->threads, (T{128, 128, 128, 128}));
  c = kernelChoice(128, 32, Activations::kInt8, 0, [](GemvConfig& g) { g.gemm_wg = 0; });
  ASSERT_TRUE(c);
  EXPECT_EQ(c->threads, (T{16, 32, 64, 128}));
  c = kernelChoice(128, 32, Activations::kInt8, 0, [](GemvConfig& g) { g.gemm_wg = 256; });
  ASSERT_TRUE(c);
  EXPECT_EQ(c->threads, (T{256, 256, 256, 256}));
  c = kernelChoice(128, 32, Activations::kInt8, 0, [](GemvConfig& g) { g.gemm_xsplit = 0; });
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->xsplit);
  c = kernelChoice(128, 32, Activations::kInt8, 1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kernel, "gemm_q8_wt");
  EXPECT_FALSE(c->xsplit);
}

// Which kernel a batched op of an engine takes by itself (GemvConfig::BatchKernel::kAuto): gemv_batch.wgsl under
// kGemmMinBatch rows; gemm_q8.wgsl from there, except for matrices of more than kGemmMaxRows weight rows (LM heads).
TEST(GemvBatch, KernelChoiceByRowsAndWidth) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  for (uint32_t n : {128u, kGemmMaxRows + 4})
    for (uint32_t batch : {kGemmMinBatch - 1, kGemmMinBatch}) {
      SCOPED_TRACE("rows " + std::to_string(n) + " batch " + std::to_string(batch));
      const auto c = kernelChoice(n, batch, Activations::kInt16);
      ASSERT_TRUE(c);
      EXPECT_TRUE(c->batched);
      EXPECT_EQ(c->gemm, batch >= kGemmMinBatch && n <= kGemmMaxRows);
    }
}

// Which GEMM a 32-row engine's op takes: gemm_q8.wgsl by default; gemm_q8_wt.wgsl for matrices of at least
// EWGPU_GEMMQ_TILE_ROWS weight rows where that is set; GemvConfig::gemm_tile overrides both. The results of both
// kernels are checked in SmallMGemm.
TEST(GemvBatch, GemmKernelChoice) {
  if (!ctx().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  if (std::getenv("EWGPU_GEMMQ_KERNEL") || std::getenv("EWGPU_GEMMQ_TILE_ROWS")) GTEST_SKIP() << "kernel forced";
  const uint32_t bound = 96;
  for (bool env : {false, true})
    for (uint32_t n : {bound - 4, bound})
      for (int forced : {-1, 0, 1}) {
        SCOPED_TRACE("rows " + std::to_string(n) + " gemm_tile " + std::to_string(forced) +
                     (env ? " EWGPU_GEMMQ_TILE_ROWS 96" : ""));
        if (env) setenv("EWGPU_GEMMQ_TILE_ROWS", std::to_string(bound).c_str(), 1);
        const auto c = kernelChoice(n, kGemmMinBatch, Activations::kInt8, forced);
        unsetenv("EWGPU_GEMMQ_TILE_ROWS");
        ASSERT_TRUE(c);
        ASSERT_TRUE(c->gemm);
        const bool tile = forced >= 0 ? forced == 1 : env && n >= bound;
        EXPECT_EQ(c->kernel, tile ? "gemm_q8_wt" : "gemm_q8");
      }
}

// Not a test: the batched projections' GPU time on shapes of real models, for tuning (skipped unless
// EWGPU_GEMVB_BENCH is set; GPU timestamps). Per shape, active-row count and variant (gemv_batch.wgsl; gemm_q8.wgsl
// at 16 K slices, its default, at 8 and 32, with two weight blocks per workgroup, with tiles of at most 8 rows;
// gemm_q8_wt.wgsl at its default width): µs per call of the quantizer and the projection together and the int8
// TOP/s that is (2 · N · K · rows), all variants of a shape in one process, one after the other. The weights are
// read as a decode step reads them, from memory rather than from the L2 cache: each op is built over several copies
// of its matrix, 160 MB in all (at most 64 copies), and the calls take the copies in turn, back to back in one pass
// (a matrix repeated in place is served from the 50 MB L2 after its first call: so measured, two weight blocks per
// gemm_q8 thread looked faster on small matrices, which a running engine did not show, docs/measurements/h100-run37;
// and a pass per call adds the pass's own cost to each). EWGPU_GEMVB_BENCH=2 runs the Qwen3.5-2B shapes too,
// =smoke two small shapes (the bench's code on any adapter).
TEST(GemvBatchBench, ModelShapes) {
  const char* mode = std::getenv("EWGPU_GEMVB_BENCH");
  if (!mode) GTEST_SKIP() << "set EWGPU_GEMVB_BENCH=1 to run";
  gpu::Context& g = ctx();
  if (!g.info().packed_dot4 || !g.info().timestamp_query) GTEST_SKIP() << "needs the packed dot product and timestamps";
  struct Shape { const char* name; uint32_t n, k, epi, digits; };
  // The digits each shape takes in a 32-row engine (forward.cpp decodeActivations and decodeGdnDigits: one
  // everywhere for Llama-3.2-1B; for Qwen3.5-2B one but in the GDN projections).
  std::vector<Shape> shapes = {{"1B qkv", 3072, 2048, 0, 1}, {"1B o", 2048, 2048, 1, 1},
                               {"1B gate_up", 16384, 2048, 2, 1}, {"1B down", 2048, 8192, 1, 1},
                               {"1B lm_head", 128256, 2048, 0, 1}};
  if (std::string(mode) == "smoke")  // the bench's own code on any adapter (8.5 minutes on SwiftShader)
    shapes = {{"smoke", 256, 512, 0, 1}, {"smoke swiglu", 256, 512, 2, 2}};
  if (std::string(mode) == "2")
    shapes.insert(shapes.end(), {{"2B gate_up", 12288, 2048, 2, 1}, {"2B down", 2048, 6144, 1, 1},
                                 {"2B gdn_in", 8224, 2048, 0, 2}, {"2B gdn_out", 2048, 2048, 1, 2},
                                 {"2B qkv", 5120, 2048, 0, 1}, {"2B o", 2048, 4096, 1, 1},
                                 {"2B lm_head", 248320, 2048, 0, 1}, {"2B lm_head", 248320, 2048, 0, 2}});
  // kernel 0 gemv_batch, 1 gemm_q8, 2 gemm_q8_wt; the GEMM's K slices, weight blocks per workgroup and largest
  // tile's blocks of 4 rows (0: the op's defaults).
  struct Variant { const char* name; int kernel; uint32_t ks, nb, max_mb; };
  const std::vector<Variant> variants = {{"gemv_batch", 0, 0, 0, 0},   {"gemm_q8", 1, 0, 0, 0},
                                         {"gemm_q8 ks8", 1, 8, 0, 0},  {"gemm_q8 ks32", 1, 32, 0, 0},
                                         {"gemm_q8 nb2", 1, 0, 2, 0},  {"gemm_q8 tile8", 1, 0, 0, 2},
                                         {"gemm_q8_wt", 2, 0, 0, 0}};
  std::mt19937 rng(5);
  const uint32_t batch = 32, rounds = 3;  // the first round of calls is not counted
  for (const Shape& sh : shapes) {
    std::vector<uint32_t> w((size_t)sh.n * sh.k / 8), s((size_t)sh.n * sh.k / 64);
    for (auto& v : w) v = rng();
    for (auto& v : s) v = 0x1c001c00u;  // two f16 0.0039
    const double bytes = 4.0 * ((double)w.size() + (double)s.size());
    const uint32_t copies = std::clamp<uint32_t>((uint32_t)std::ceil(160e6 / bytes), 1, 64);
    std::vector<float> x((size_t)batch * sh.k), nw(sh.k, 1.0f), y((size_t)batch * (sh.epi == 2 ? sh.n / 2 : sh.n), 0.f);
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    std::vector<gpu::Buffer> bw, bs;
    for (uint32_t c = 0; c < copies; ++c) {
      bw.push_back(upload(w));
      bs.push_back(upload(s));
    }
    auto bx = upload(x), bn = upload(nw), by = upload(y);
    auto bactive = upload(std::vector<uint32_t>{batch, 0, 0, 0}, "active");
    std::vector<LinearWeights> lws(copies);
    for (uint32_t c = 0; c < copies; ++c) {
      lws[c].w_chunks = {&bw[c]};
      lws[c].s_chunks = {&bs[c]};
      lws[c].chunk_rows = {sh.n};
      lws[c].N = sh.n;
      lws[c].K = sh.k;
      lws[c].format = WeightFormat::kQ4F16;
    }
    for (const Variant& v : variants) {
      GemvConfig cfg{(Epilogue)sh.epi, batch, sh.epi != 1 ? &bn : nullptr, 1e-6f, 0, 0};
      cfg.active = &bactive;
      cfg.act = sh.digits == 2 ? Activations::kInt16 : Activations::kInt8;
      cfg.batch_kernel = v.kernel ? GemvConfig::BatchKernel::kGemm : GemvConfig::BatchKernel::kGemv;
      cfg.gemm_tile = v.kernel == 2 ? 1 : 0;
      cfg.gemm_ks = v.ks;
      cfg.gemm_nb = v.nb;
      cfg.gemm_max_mb = v.max_mb;
      std::vector<GemvOp> ops;
      for (uint32_t c = 0; c < copies; ++c) {
        auto op = GemvOp::create(g, lws[c], bx, by, cfg);
        ASSERT_TRUE(op.ok()) << op.error().toString();
        ops.push_back(std::move(*op));
      }
      for (uint32_t rows : {1u, 8u, 16u, 32u}) {
        uint32_t words[4] = {rows, 0, 0, 0};
        g.write(bactive, 0, words, sizeof words);
        {  // a first round, not timed
          gpu::Recorder warm(g, 0);
          for (const GemvOp& op : ops) op.record(warm, rows);
          ASSERT_TRUE(warm.submit().ok());
        }
        auto timer = gpu::Timer::create(g, 4);
        ASSERT_TRUE(timer.ok());
        gpu::Recorder rec(g, 0);  // one pass, the calls back to back as in a decode step
        rec.setTimer(timer->get());
        for (uint32_t r = 1; r < rounds; ++r)
          for (const GemvOp& op : ops) op.record(rec, rows);
        (*timer)->resolve(rec);
        ASSERT_TRUE(rec.submit().ok());
        ASSERT_TRUE(g.finish().ok());
        auto ns = (*timer)->readTotalNs(g);
        ASSERT_TRUE(ns.ok());
        const double us = (double)*ns / ((double)(rounds - 1) * copies) / 1e3;
        std::printf("[ bench ] %-12s %-13s rows %2u digits %u: quantizer + projection %7.1f us  %5.1f TOP/s\n",
                    sh.name, v.name, rows, sh.digits, us, 2.0 * sh.n * sh.k * rows / (us * 1e-6) / 1e12);
      }
    }
  }
}

}  // namespace
}  // namespace ewgpu::kernels
