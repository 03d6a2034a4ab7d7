// Tests of the prefill GEMM (gemm.wgsl through GemmOp) and RMSNorm (rmsnorm.wgsl through RmsNormOp) against CPU
// references in double. Weights are random codes and random scales written straight into the packed formats of
// KERNELS.md (q3 padding codes are random too: the kernel must ignore them); outputs are poisoned with NaN, and
// rows past T must stay poisoned. Tolerance: |gpu - ref| <= 1e-4 * (sum_k |x_k w_k| + |bias| + |residual|) (f32).
// GemmBench.* prints GFLOP/s when EWGPU_GEMM_BENCH is set (1: the SwiftShader shape; "full": H200 shapes).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../gpu/gpu_test_util.h"
#include "base/half.h"
#include "gpu/readback.h"
#include "kernels/linear.h"

namespace ewgpu::kernels {
namespace {

using gpu::testing::sharedContext;
constexpr uint32_t kNaN = 0x7FC00000u;

bool isQ3(WeightFormat f) { return f == WeightFormat::kQ3F16; }
bool isQ4(WeightFormat f) { return f == WeightFormat::kQ4F16 || f == WeightFormat::kQ4F32; }

// A random weight W [N, K] in logical form: codes and scales (quantized formats) or values (q0), plus the
// dequantized matrix the reference uses.
struct HostWeight {
  WeightFormat fmt;
  uint32_t N = 0, K = 0, groups = 0, group = 0, kpad = 0;
  std::vector<uint32_t> codes;  // [N, kpad] (q4/q3)
  std::vector<float> scales;    // [N, groups] (already rounded to f16 where stored as f16)
  std::vector<float> values;    // [N, K] (q0; rounded to f16 for q0f16)
  std::vector<double> deq;      // [N, K]
};

HostWeight randomWeight(WeightFormat fmt, uint32_t N, uint32_t K, std::mt19937& rng) {
  HostWeight h{fmt, N, K};
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  h.deq.assign((size_t)N * K, 0.0);
  if (isQ4(fmt) || isQ3(fmt)) {
    h.group = isQ3(fmt) ? 40 : 32;
    h.groups = (K + h.group - 1) / h.group;
    h.kpad = h.groups * h.group;
    uint32_t levels = isQ3(fmt) ? 8 : 16, zero = isQ3(fmt) ? 3 : 7;
    h.codes.resize((size_t)N * h.kpad);
    for (auto& c : h.codes) c = rng() % levels;  // padding codes too: they must be ignored
    h.scales.resize((size_t)N * h.groups);
    for (auto& s : h.scales) {
      float v = u(rng) * 0.1f;
      s = fmt == WeightFormat::kQ4F32 ? v : halfToFloat(floatToHalf(v));
    }
    for (uint32_t n = 0; n < N; ++n)
      for (uint32_t k = 0; k < K; ++k)
        h.deq[(size_t)n * K + k] =
            ((double)h.codes[(size_t)n * h.kpad + k] - zero) * h.scales[(size_t)n * h.groups + k / h.group];
  } else {
    h.values.resize((size_t)N * K);
    for (auto& v : h.values) v = fmt == WeightFormat::kQ0F16 ? halfToFloat(floatToHalf(u(rng))) : u(rng);
    for (size_t i = 0; i < h.values.size(); ++i) h.deq[i] = h.values[i];
  }
  return h;
}

void pushHalves(std::vector<uint32_t>& out, const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); i += 2) {
    uint32_t lo = floatToHalf(v[i]), hi = i + 1 < v.size() ? floatToHalf(v[i + 1]) : 0;
    out.push_back(lo | (hi << 16));
  }
}

// Packs rows [r0, r0 + rows) into the GPU formats: weight words and scale words (KERNELS.md).
void pack(const HostWeight& h, uint32_t r0, uint32_t rows, std::vector<uint32_t>& w, std::vector<uint32_t>& s) {
  w.clear();
  s.clear();
  if (isQ4(h.fmt) || isQ3(h.fmt)) {
    uint32_t per = isQ4(h.fmt) ? 8 : 10, bits = isQ4(h.fmt) ? 4 : 3;
    for (uint32_t n = r0; n < r0 + rows; ++n)
      for (uint32_t k = 0; k < h.kpad; k += per) {
        uint32_t word = 0;
        for (uint32_t e = 0; e < per; ++e) word |= h.codes[(size_t)n * h.kpad + k + e] << (bits * e);
        w.push_back(word);
      }
    std::vector<float> sc(h.scales.begin() + (size_t)r0 * h.groups, h.scales.begin() + (size_t)(r0 + rows) * h.groups);
    if (h.fmt == WeightFormat::kQ4F32) {
      for (float v : sc) s.push_back(floatBits(v));
    } else {
      pushHalves(s, sc);
    }
  } else {
    std::vector<float> vals(h.values.begin() + (size_t)r0 * h.K, h.values.begin() + (size_t)(r0 + rows) * h.K);
    if (h.fmt == WeightFormat::kQ0F16) {
      pushHalves(w, vals);
    } else {
      for (float v : vals) w.push_back(floatBits(v));
    }
  }
}

gpu::Buffer upload(gpu::Context& ctx, const void* data, size_t bytes, const char* label) {
  auto b = ctx.createBuffer(std::max<size_t>(bytes, 16), gpu::BufferKind::kStorage, label);
  EXPECT_TRUE(b.ok()) << b.error().toString();
  if (bytes) ctx.write(*b, 0, data, bytes);
  return std::move(*b);
}

std::vector<float> readFloats(gpu::Context& ctx, const gpu::Buffer& buf, size_t count) {
  auto rb = gpu::Readback::create(ctx, count * 4);
  EXPECT_TRUE(rb.ok());
  gpu::Recorder rec(ctx);
  rb->record(rec, buf, 0, count * 4);
  EXPECT_TRUE(rec.submit().ok());
  rb->requestMap(ctx);
  EXPECT_TRUE(rb->wait(ctx).ok());
  std::vector<float> out(count);
  std::memcpy(out.data(), rb->data().data(), count * 4);
  rb->unmap();
  return out;
}

struct Case {
  WeightFormat fmt;
  Epilogue epi;
  bool bias;
  uint32_t T, N, K;
  uint32_t split;  // rows of the first chunk (0: one chunk)
  GemmTiling tiling;
  uint32_t digits = 0;  // the int8 path (GemmQ8) with 1 or 2 digits; 0: gemm.wgsl
  uint32_t q8_tile = 64;  // its tokens per tile
};

std::string describe(const Case& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "qfmt=%d epi=%d bias=%d T=%u N=%u K=%u split=%u tile=%ux%u stages=%u digits=%u q8 tile %u",
                (int)c.fmt, (int)c.epi, c.bias, c.T, c.N, c.K, c.split, c.tiling.tile_t, c.tiling.tile_n,
                c.tiling.stages, c.digits, c.q8_tile);
  return buf;
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }
double geluErf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double geluTanh(double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

void runCase(const Case& c) {
  SCOPED_TRACE(describe(c));
  gpu::Context& ctx = sharedContext();
  std::mt19937 rng(1234 + c.T * 7 + c.N * 13 + c.K * 17 + (int)c.fmt * 3 + (int)c.epi * 5 + c.bias);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  HostWeight h = randomWeight(c.fmt, c.N, c.K, rng);
  const uint32_t max_tokens = c.T + 3;  // rows T..T+2 are dispatched but must stay untouched
  bool swiglu = gatedEpilogue(c.epi);
  uint32_t cols = swiglu ? c.N / 2 : c.N;

  std::vector<float> x((size_t)max_tokens * c.K), bias(c.N), y0((size_t)max_tokens * cols);
  for (auto& v : x) v = u(rng);
  for (auto& v : bias) v = u(rng);
  for (auto& v : y0) v = c.epi == Epilogue::kResidualAdd ? u(rng) : bitsFloat(kNaN);
  for (size_t i = (size_t)c.T * cols; i < y0.size(); ++i) y0[i] = bitsFloat(kNaN);

  std::vector<uint32_t> rows = c.split ? std::vector<uint32_t>{c.split, c.N - c.split} : std::vector<uint32_t>{c.N};
  std::vector<gpu::Buffer> wbufs, sbufs;
  uint32_t r0 = 0;
  for (uint32_t r : rows) {
    std::vector<uint32_t> w, s;
    pack(h, r0, r, w, s);
    wbufs.push_back(upload(ctx, w.data(), w.size() * 4, "w"));
    sbufs.push_back(upload(ctx, s.data(), s.size() * 4, "s"));
    r0 += r;
  }
  gpu::Buffer xb = upload(ctx, x.data(), x.size() * 4, "x");
  gpu::Buffer yb = upload(ctx, y0.data(), y0.size() * 4, "y");
  gpu::Buffer bb = upload(ctx, bias.data(), bias.size() * 4, "bias");
  uint32_t meta[4] = {c.T, 0, 0, 0};
  gpu::Buffer mb = upload(ctx, meta, sizeof meta, "meta");

  LinearWeights lw;
  for (size_t i = 0; i < rows.size(); ++i) {
    lw.w_chunks.push_back(&wbufs[i]);
    if (isQ4(c.fmt) || isQ3(c.fmt)) lw.s_chunks.push_back(&sbufs[i]);
  }
  lw.chunk_rows = rows;
  lw.N = c.N;
  lw.K = c.K;
  lw.format = c.fmt;
  lw.bias = c.bias ? &bb : nullptr;
  // The int8 path's x̂ scratch, poisoned: every row below T must be written by the quantizer.
  const uint32_t row_words = c.digits ? quantRowWords(c.K, c.digits) : 0;
  std::vector<uint32_t> xq0((size_t)max_tokens * row_words + 4, kNaN);
  gpu::Buffer xqb = upload(ctx, xq0.data(), xq0.size() * 4, "xq");
  auto op = GemmOp::create(ctx, lw, xb, yb, mb, c.epi, max_tokens, c.tiling, {c.digits ? &xqb : nullptr, c.digits, c.q8_tile});
  ASSERT_TRUE(op.ok()) << op.error().toString();
  EXPECT_EQ(op->int8(), c.digits > 0);
  gpu::Recorder rec(ctx);
  op->record(rec, max_tokens);
  ASSERT_TRUE(rec.submit().ok());
  std::vector<float> y = readFloats(ctx, yb, y0.size());
  ASSERT_TRUE(ctx.takeError().ok());
  // With int8 x the reference multiplies the GPU's own x̂ (exactly as stored: digits and steps), after checking that
  // x̂ is x within half a step of the last digit (step = max |x| / 127 over the group).
  if (c.digits) {
    std::vector<float> xqf = readFloats(ctx, xqb, xq0.size());
    const uint32_t G = c.K / 32;
    for (uint32_t t = 0; t < c.T; ++t) {
      const uint32_t* row = reinterpret_cast<const uint32_t*>(xqf.data()) + (size_t)t * row_words;
      for (uint32_t g = 0; g < G; ++g) {
        const float step = bitsFloat(row[c.digits * G * 9 + g]);
        double amax = 0;
        for (uint32_t k = 0; k < 32; ++k) amax = std::max(amax, (double)std::abs(x[(size_t)t * c.K + 32 * g + k]));
        ASSERT_NEAR(step, amax / 127, 1e-6 * amax) << "t=" << t << " g=" << g;
        for (uint32_t k = 0; k < 32; ++k) {
          // Element k of the group: word 2m (k = 8m + 2i) or 2m + 1 (k = 8m + 2i + 1), byte i.
          const uint32_t m = k / 8, i = (k % 8) / 2, word = 2 * m + k % 2;
          double v = 0;
          for (uint32_t e = 0; e < c.digits; ++e)
            v += (double)(int8_t)(row[(e * G + g) * 8 + word] >> (8 * i)) / (e ? 254.0 : 1.0);
          v *= step;
          const double want = x[(size_t)t * c.K + 32 * g + k];
          ASSERT_LE(std::abs(v - want), step * (c.digits == 2 ? 0.5 / 254 : 0.5) * (1 + 1e-5) + 1e-7)
              << "x̂ t=" << t << " k=" << 32 * g + k;
          x[(size_t)t * c.K + 32 * g + k] = (float)v;  // the reference below multiplies x̂
        }
      }
    }
  }

  int bad = 0;
  for (uint32_t t = 0; t < max_tokens; ++t) {
    for (uint32_t o = 0; o < cols; ++o) {
      float got = y[(size_t)t * cols + o];
      if (t >= c.T) {
        if (floatBits(got) != kNaN && ++bad <= 5) ADD_FAILURE() << "row past T written: t=" << t << " col=" << o;
        continue;
      }
      // dot(x[t], W[n]) in double and the magnitude sum |x w| of its terms.
      auto dot = [&](uint32_t n, double& mag) {
        double acc = 0;
        mag = 0;
        for (uint32_t k = 0; k < c.K; ++k) {
          double p = (double)x[(size_t)t * c.K + k] * h.deq[(size_t)n * c.K + k];
          acc += p;
          mag += std::abs(p);
        }
        return acc;
      };
      double ref, tol;
      if (swiglu) {
        uint32_t I = c.N / 2;
        double mg, mu;
        double g = dot(o, mg) + (c.bias ? bias[o] : 0), up = dot(I + o, mu) + (c.bias ? bias[I + o] : 0);
        if (c.bias) mg += std::abs(bias[o]), mu += std::abs(bias[I + o]);
        const double act = c.epi == Epilogue::kGeGlu ? geluTanh(g) : silu(g);
        ref = act * up;
        tol = 1e-4 * (1.1 * mg * std::abs(up) + std::abs(act) * mu) + 1e-30;
      } else {
        double mag;
        ref = dot(o, mag);
        if (c.bias) ref += bias[o], mag += std::abs(bias[o]);
        if (c.epi == Epilogue::kResidualAdd) {
          double r = y0[(size_t)t * cols + o];
          ref += r;
          mag += std::abs(r);
        }
        tol = 1e-4 * mag + 1e-30;
        if (c.epi == Epilogue::kGelu || c.epi == Epilogue::kGeluTanh) {  // |gelu'| ≤ 1.13; erf's own error 1.5e-7
          ref = c.epi == Epilogue::kGelu ? geluErf(ref) : geluTanh(ref);
          tol = 1.13 * tol + 2e-7 * std::abs(ref) + 1e-6;
        }
      }
      if (!(std::abs(got - ref) <= tol) && ++bad <= 5)
        ADD_FAILURE() << "t=" << t << " col=" << o << " got " << got << " want " << ref << " tol " << tol;
    }
  }
  EXPECT_EQ(bad, 0);
}

const WeightFormat kFormats[] = {WeightFormat::kQ4F16, WeightFormat::kQ4F32, WeightFormat::kQ0F16, WeightFormat::kQ0F32,
                                 WeightFormat::kQ3F16};

// Every format x epilogue x bias, with T cycling through 1, 7, 65, N off the tile size, two chunks for the
// plain epilogues with bias, and K multiples of 32 (q4, q0) or 80 / 120 / 96 (q3; 96 pads its last group of 40).
// The GELU / GeGLU epilogues (gemma, gpt_neox, phi) on the q4 and q0 formats.
TEST(Gemm, EveryFormatEpilogueAndBiasMatchesTheReference) {
  const uint32_t Ts[] = {1, 7, 65};
  int i = 0;
  for (WeightFormat f : kFormats) {
    for (Epilogue e : {Epilogue::kStore, Epilogue::kResidualAdd, Epilogue::kSwiGlu, Epilogue::kGeGlu, Epilogue::kGelu,
                       Epilogue::kGeluTanh}) {
      const bool family = e == Epilogue::kGeGlu || e == Epilogue::kGelu || e == Epilogue::kGeluTanh;
      if (family && (isQ3(f) || f == WeightFormat::kQ4F32)) continue;
      for (bool b : {false, true}) {
        uint32_t T = Ts[i % 3];
        uint32_t K = isQ3(f) ? (uint32_t[]){80, 120, 96}[i % 3] : (uint32_t[]){96, 64, 160}[i % 3];
        uint32_t N = gatedEpilogue(e) ? 2 * 37 : 72 + 8 * (i % 4);
        uint32_t split = gatedEpilogue(e) || !b ? 0 : 40;  // two chunks where bias[ROW_OFFSET + n] matters
        runCase({f, e, b, T, N, K, split, {}});
        ++i;
      }
    }
  }
}

TEST(Gemm, OddTokenCountsAndSingleChunk) {
  for (uint32_t T : {1u, 7u, 65u, 130u})
    runCase({WeightFormat::kQ4F16, Epilogue::kStore, true, T, 100, 64, 0, {64, 64, T % 2 ? 1u : 2u}});
}

TEST(Gemm, LargerTilesEveryFormat) {
  int i = 0;
  for (WeightFormat f : kFormats) {
    GemmTiling tiling{i % 2 ? 64u : 128u, 128u};
    uint32_t K = isQ3(f) ? 120 : 64;
    runCase({f, Epilogue::kStore, false, 130, 200, K, 136, tiling});
    runCase({f, Epilogue::kSwiGlu, true, 65, 2 * 70, K, 0, tiling});
    runCase({f, Epilogue::kResidualAdd, true, 7, 96, K, 0, {128, 64, 1}});
    ++i;
  }
}

// The int8 path (gemm_q8_tile.wgsl after gemv_quant.wgsl) on the q4 formats: every epilogue, bias, T around the
// 64-token tile, N off the 64-row tile, two chunks, one and two digits, tiles of 64 and 128 tokens. The reference is in double over the GPU's
// own x̂ (checked against x above), so the tolerance is the f32 one.
TEST(Gemm, Int8PathMatchesTheReference) {
  int i = 0;
  for (WeightFormat f : {WeightFormat::kQ4F16, WeightFormat::kQ4F32}) {
    for (Epilogue e : {Epilogue::kStore, Epilogue::kResidualAdd, Epilogue::kSwiGlu, Epilogue::kGeGlu, Epilogue::kGelu}) {
      if (f == WeightFormat::kQ4F32 && (e == Epilogue::kGeGlu || e == Epilogue::kGelu)) continue;
      const bool b = i % 2 == 1;
      const uint32_t T = (uint32_t[]){1, 65, 7, 130}[i % 4];
      const uint32_t K = (uint32_t[]){96, 64, 160}[i % 3];
      const uint32_t N = gatedEpilogue(e) ? 2 * 37 : 72 + 8 * (i % 4);
      const uint32_t split = !gatedEpilogue(e) && b ? 40 : 0;
      runCase({f, e, b, T, N, K, split, {}, 1u + i % 2, i % 3 == 2 ? 128u : 64u});
      ++i;
    }
  }
  runCase({WeightFormat::kQ4F16, Epilogue::kResidualAdd, false, 200, 100, 64, 0, {}, 1, 128});  // two 128-token tiles
}

TEST(Gemm, RejectsBadShapes) {
  gpu::Context& ctx = sharedContext();
  std::vector<uint32_t> z(1024, 0);
  gpu::Buffer w = upload(ctx, z.data(), z.size() * 4, "w"), s = upload(ctx, z.data(), 64, "s");
  gpu::Buffer x = upload(ctx, z.data(), z.size() * 4, "x"), y = upload(ctx, z.data(), z.size() * 4, "y");
  gpu::Buffer m = upload(ctx, z.data(), 16, "meta");
  LinearWeights lw{{&w}, {&s}, {16}, 16, 48, WeightFormat::kQ4F16, nullptr};
  auto r = GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 4);  // K = 48: not a multiple of 32
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kBadRequest);
  lw.K = 64;
  lw.chunk_rows = {15};  // does not sum to N
  EXPECT_FALSE(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 4).ok());
  lw.chunk_rows = {16};
  EXPECT_FALSE(GemmOp::create(ctx, lw, x, x, m, Epilogue::kStore, 4).ok());     // y aliases x
  EXPECT_FALSE(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 1000).ok());  // x too small
  EXPECT_TRUE(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 4).ok());
  // The int8 path: its scratch checked too, and x / y as on the f32 path.
  gpu::Buffer xq = upload(ctx, z.data(), 4 * quantRowWords(64, 1) * 4, "xq");
  auto code = [&](const Result<GemmOp>& r) { return r.ok() ? ErrorCode::kInternal : r.error().code; };  // ok: wrong
  EXPECT_EQ(code(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 8, {}, {&xq, 1})), ErrorCode::kBadRequest);
  EXPECT_EQ(code(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 4, {}, {&xq, 3})), ErrorCode::kBadRequest);
  EXPECT_EQ(code(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 4, {}, {&xq, 1, 96})), ErrorCode::kBadRequest);
  EXPECT_EQ(code(GemmOp::create(ctx, lw, xq, y, m, Epilogue::kStore, 4, {}, {&xq, 1})), ErrorCode::kBadRequest);
  EXPECT_EQ(code(GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 1000, {}, {&xq, 1})), ErrorCode::kBadRequest);
  auto ok = GemmOp::create(ctx, lw, x, y, m, Epilogue::kStore, 4, {}, {&xq, 1});
  ASSERT_TRUE(ok.ok()) << ok.error().toString();
  EXPECT_TRUE(ok->int8());
}

TEST(RmsNorm, MatchesTheReference) {
  gpu::Context& ctx = sharedContext();
  for (uint32_t H : {64u, 1000u, 2048u}) {
    for (uint32_t T : {1u, 5u}) {
      SCOPED_TRACE("H=" + std::to_string(H) + " T=" + std::to_string(T));
      std::mt19937 rng(H * 31 + T);
      std::uniform_real_distribution<float> u(-2.f, 2.f);
      const uint32_t max_tokens = T + 2;
      std::vector<float> x((size_t)max_tokens * H), w(H), out((size_t)max_tokens * H, bitsFloat(kNaN));
      for (auto& v : x) v = u(rng);
      for (auto& v : w) v = u(rng);
      uint32_t meta[4] = {T, 0, 0, 0};
      gpu::Buffer xb = upload(ctx, x.data(), x.size() * 4, "x"), wb = upload(ctx, w.data(), w.size() * 4, "w");
      gpu::Buffer ob = upload(ctx, out.data(), out.size() * 4, "out"), mb = upload(ctx, meta, 16, "meta");
      const float eps = 1e-5f;
      auto op = RmsNormOp::create(ctx, xb, wb, ob, mb, H, eps, max_tokens);
      ASSERT_TRUE(op.ok()) << op.error().toString();
      gpu::Recorder rec(ctx);
      op->record(rec, max_tokens);
      ASSERT_TRUE(rec.submit().ok());
      std::vector<float> got = readFloats(ctx, ob, out.size());
      int bad = 0;
      for (uint32_t t = 0; t < max_tokens; ++t) {
        double ss = 0;
        for (uint32_t i = 0; i < H; ++i) ss += (double)x[(size_t)t * H + i] * x[(size_t)t * H + i];
        double r = 1.0 / std::sqrt(ss / H + eps);
        for (uint32_t i = 0; i < H; ++i) {
          float g = got[(size_t)t * H + i];
          if (t >= T) {
            if (floatBits(g) != kNaN) ++bad;
            continue;
          }
          double ref = x[(size_t)t * H + i] * r * w[i];
          if (!(std::abs(g - ref) <= 1e-5 * (std::abs(ref) + 1e-3)) && ++bad <= 5)
            ADD_FAILURE() << "t=" << t << " i=" << i << " got " << g << " want " << ref;
        }
      }
      EXPECT_EQ(bad, 0);
    }
  }
}

// ---- throughput (prints, never asserts timing) ----

struct BenchShape {
  uint32_t T, N, K;
  WeightFormat fmt;
  GemmTiling tiling;
  uint32_t digits = 0;  // the int8 path (the quantizer's dispatch included in the time)
  uint32_t q8_tile = 64;
};

void benchOne(const BenchShape& b) {
  gpu::Context& ctx = sharedContext();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  uint64_t wbytes = weightBytes(b.fmt, b.N, b.K), sbytes = scaleBytes(b.fmt, b.N, b.K);
  std::vector<uint32_t> w(wbytes / 4), s(std::max<uint64_t>(sbytes / 4, 1));
  bool dense_f32 = b.fmt == WeightFormat::kQ0F32, halves = b.fmt == WeightFormat::kQ0F16;
  for (auto& v : w)
    v = dense_f32 ? floatBits(u(rng)) : halves ? floatToHalf(u(rng)) | (uint32_t)floatToHalf(u(rng)) << 16 : rng();
  for (auto& v : s)
    v = b.fmt == WeightFormat::kQ4F32 ? floatBits(u(rng) * 0.1f)
                                      : floatToHalf(u(rng) * 0.1f) | (uint32_t)floatToHalf(u(rng) * 0.1f) << 16;
  std::vector<float> x((size_t)b.T * b.K);
  for (auto& v : x) v = u(rng);
  gpu::Buffer wb = upload(ctx, w.data(), wbytes, "w"), sb = upload(ctx, s.data(), s.size() * 4, "s");
  gpu::Buffer xb = upload(ctx, x.data(), x.size() * 4, "x");
  auto yb = ctx.createBuffer((uint64_t)b.T * b.N * 4, gpu::BufferKind::kStorage, "y");
  ASSERT_TRUE(yb.ok());
  uint32_t meta[4] = {b.T, 0, 0, 0};
  gpu::Buffer mb = upload(ctx, meta, 16, "meta");
  LinearWeights lw{{&wb}, {}, {b.N}, b.N, b.K, b.fmt, nullptr};
  if (sbytes) lw.s_chunks = {&sb};
  auto xqb = ctx.createBuffer((uint64_t)b.T * quantRowWords(b.K, 2) * 4, gpu::BufferKind::kStorage, "xq");
  ASSERT_TRUE(xqb.ok());
  auto op = GemmOp::create(ctx, lw, xb, *yb, mb, Epilogue::kStore, b.T, b.tiling, {b.digits ? &*xqb : nullptr, b.digits, b.q8_tile});
  ASSERT_TRUE(op.ok()) << op.error().toString();
  auto timer = gpu::Timer::create(ctx);
  ASSERT_TRUE(timer.ok());
  bool gpu_time = (*timer)->available();
  // Warm-up, then `reps` dispatches in one pass.
  {
    gpu::Recorder rec(ctx);
    op->record(rec, b.T);
    ASSERT_TRUE(rec.submit().ok());
    ASSERT_TRUE(ctx.finish().ok());
  }
  double one = 0;
  {
    auto t0 = std::chrono::steady_clock::now();
    gpu::Recorder rec(ctx);
    op->record(rec, b.T);
    ASSERT_TRUE(rec.submit().ok());
    ASSERT_TRUE(ctx.finish().ok());
    one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  int reps = std::max(1, std::min(200, (int)(0.5 / std::max(one, 1e-6))));
  gpu::Recorder rec(ctx);
  if (gpu_time) rec.setTimer(timer->get());
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) op->record(rec, b.T);
  if (gpu_time) (*timer)->resolve(rec);
  ASSERT_TRUE(rec.submit().ok());
  ASSERT_TRUE(ctx.finish().ok());
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (gpu_time) {
    auto ns = (*timer)->readTotalNs(ctx);
    if (ns.ok() && *ns > 0) sec = *ns * 1e-9;
  }
  double per = sec / reps;
  char tile[32];
  if (b.digits) std::snprintf(tile, sizeof tile, "int8 %ud tile %u", b.digits, b.q8_tile);
  else std::snprintf(tile, sizeof tile, "tile=%3ux%-3u st=%u", b.tiling.tile_t, b.tiling.tile_n, b.tiling.stages);
  std::printf("gemm %-6s T=%-5u N=%-6u K=%-6u %-18s %9.3f ms  %9.1f GFLOP/s  (%s, %d reps)\n",
              (const char*[]){"q4f16", "q4f32", "q0f16", "q0f32", "q3f16"}[(int)b.fmt], b.T, b.N, b.K, tile,
              per * 1e3, op->flops(b.T) / per * 1e-9,
              gpu_time ? "gpu timestamps" : "wall clock", reps);
  std::fflush(stdout);
}

TEST(GemmBench, PrintsThroughput) {
  const char* mode = std::getenv("EWGPU_GEMM_BENCH");
  if (!mode)
    GTEST_SKIP() << "set EWGPU_GEMM_BENCH=1 (64x1024x1024 q4), =full (prefill shapes x tilings) or =int8 (f32 vs int8)";
  std::printf("adapter: %s\n", sharedContext().info().toJson().dump().c_str());
  const GemmTiling tilings[] = {{64, 64, 2}, {64, 64, 1}, {64, 128, 2}, {128, 64, 2}, {128, 128, 2}, {128, 128, 1}};
  const uint32_t shapes[][3] = {{512, 2048, 8192}, {512, 8192, 2048}, {512, 4096, 4096}, {512, 1024, 1024}};
  // "int8": the q4f16_1 shapes through the f32 GEMM's default tiling and the int8 path with one and two digits.
  if (std::string(mode) == "int8") {
    const uint32_t int8_shapes[][3] = {{512, 2048, 8192}, {512, 16384, 2048}, {512, 2048, 2048}, {512, 3072, 2048},
                                       {2048, 16384, 2048}, {128, 16384, 2048}, {32, 16384, 2048}};
    for (auto& sh : int8_shapes)
      for (uint32_t v = 0; v < 5; ++v)  // f32, then int8 1 / 2 digits at 64 and 128 tokens a tile
        benchOne({sh[0], sh[1], sh[2], WeightFormat::kQ4F16, {64, 64, 0}, (v + 1) / 2, v && v % 2 == 0 ? 128u : 64u});
    return;
  }
  if (std::string(mode) != "full") {
    benchOne({64, 1024, 1024, WeightFormat::kQ4F16, {64, 64, 2}});
    return;
  }
  for (auto& sh : shapes)
    for (WeightFormat f : {WeightFormat::kQ4F16, WeightFormat::kQ0F32, WeightFormat::kQ3F16})
      for (GemmTiling t : tilings) benchOne({sh[0], sh[1], sh[2], f, t});
}

}  // namespace
}  // namespace ewgpu::kernels
