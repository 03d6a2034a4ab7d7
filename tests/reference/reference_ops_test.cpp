// Tests of the CPU reference operations against independent formulations: hand-worked examples, invariants
// (norms preserved, shift invariance, relative-position property) and a second algorithm for the same result
// (chunked GDN vs the recurrence, streamed conv vs one-shot, GQA vs MHA with repeated heads).
#include "model/reference_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace ewgpu::ref {
namespace {

std::vector<float> randomVec(size_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double maxAbsDiff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs((double)a[i] - b[i]));
  return m;
}

double norm2(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += (double)v * v;
  return std::sqrt(s);
}

TEST(RefOps, RmsNormIsScaleInvariantAndUnitRms) {
  std::vector<float> x = randomVec(3 * 16, 1), w(16, 1.0f);
  std::vector<float> y = rmsNorm(x, w, 1e-6f);
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(norm2(std::span(y).subspan(r * 16, 16)) / 4.0, 1.0, 1e-5);  // sqrt(16)=4
  std::vector<float> x3 = x;
  for (float& v : x3) v *= 3.0f;
  EXPECT_LT(maxAbsDiff(rmsNorm(x3, w, 1e-6f), y), 1e-5);
  std::vector<float> w2 = randomVec(16, 2);
  std::vector<float> y2 = rmsNorm(x, w2, 1e-6f);
  for (int i = 0; i < 48; ++i) EXPECT_NEAR(y2[i], y[i] * w2[i % 16], 1e-5);
}

TEST(RefOps, GatedRmsNormMultipliesBySiluOfGate) {
  std::vector<float> o = randomVec(2 * 8, 3), z = randomVec(2 * 8, 4), w = randomVec(8, 5);
  std::vector<float> plain = rmsNorm(o, w, 1e-6f), gated = gatedRmsNorm(o, z, w, 1e-6f);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(gated[i], plain[i] * z[i] / (1.0 + std::exp(-z[i])), 1e-6);
}

TEST(RefOps, L2NormGivesUnitRows) {
  std::vector<float> x = randomVec(4 * 16, 6);
  std::vector<float> y = l2Norm(x, 16);
  for (int r = 0; r < 4; ++r) EXPECT_NEAR(norm2(std::span(y).subspan(r * 16, 16)), 1.0, 1e-5);
  std::vector<float> zero(16, 0.0f);
  for (float v : l2Norm(zero, 16)) EXPECT_EQ(v, 0.0f);  // eps keeps it finite
}

TEST(RefOps, SoftmaxSumsToOneAndIsShiftInvariant) {
  std::vector<float> x = randomVec(50, 7, 5.0f), shifted = x;
  for (float& v : shifted) v += 1000.0f;
  std::vector<float> naive(50);
  double sum = 0;
  for (int i = 0; i < 50; ++i) sum += std::exp((double)x[i]);
  for (int i = 0; i < 50; ++i) naive[i] = (float)(std::exp((double)x[i]) / sum);
  softmax(x);
  softmax(shifted);
  EXPECT_LT(maxAbsDiff(x, naive), 1e-7);
  EXPECT_LT(maxAbsDiff(shifted, naive), 1e-7);
}

TEST(RefOps, LinearHandExample) {
  // W [2, 3], x [2 tokens, 3], b [2].
  std::vector<float> w{1, 2, 3, -1, 0, 2}, x{1, 1, 1, 2, 0, -1}, b{0.5f, -1};
  std::vector<float> y = linear(x, w, 2, 3, b);
  EXPECT_EQ(y, (std::vector<float>{6.5f, 0.0f, -0.5f, -5.0f}));
  EXPECT_EQ(linear(x, w, 2, 3), (std::vector<float>{6.0f, 1.0f, -1.0f, -4.0f}));
  EXPECT_EQ(argmax(y), 0);
}

TEST(RefOps, SwigluMatchesDefinition) {
  std::vector<float> gate{-2, 0, 1.5f}, up{3, 4, -2};
  std::vector<float> y = swiglu(gate, up);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], gate[i] / (1 + std::exp(-gate[i])) * up[i], 1e-6);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(RefOps, RopeHandExample) {
  // head_dim 4, theta 10000: inv_freq = [1, 0.01]; pairs (0,2), (1,3).
  std::vector<float> x{1, 0, 0, 1};
  ropeNeox(x, 4, 4, 1, 10000.0);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-7);
  EXPECT_NEAR(x[2], std::sin(1.0), 1e-7);
  EXPECT_NEAR(x[1], -std::sin(0.01), 1e-7);
  EXPECT_NEAR(x[3], std::cos(0.01), 1e-7);
}

TEST(RefOps, RopePreservesNormsAndPassesTail) {
  const int hd = 32, rot = 8, heads = 3;
  std::vector<float> x = randomVec(heads * hd, 8), y = x;
  ropeNeox(y, hd, rot, 77, 1e4);
  for (int h = 0; h < heads; ++h) {
    EXPECT_NEAR(norm2(std::span(y).subspan(h * hd, hd)), norm2(std::span(x).subspan(h * hd, hd)), 1e-5);
    for (int d = rot; d < hd; ++d) EXPECT_EQ(y[h * hd + d], x[h * hd + d]);
    EXPECT_NE(y[h * hd], x[h * hd]);
  }
}

TEST(RefOps, RopeScoresDependOnlyOnRelativePosition) {
  const int hd = 16;
  std::vector<float> q = randomVec(hd, 9), k = randomVec(hd, 10);
  auto score = [&](int pq, int pk) {
    std::vector<float> a = q, b = k;
    ropeNeox(a, hd, hd, pq, 500.0);
    ropeNeox(b, hd, hd, pk, 500.0);
    double s = 0;
    for (int i = 0; i < hd; ++i) s += (double)a[i] * b[i];
    return s;
  };
  EXPECT_NEAR(score(5, 2), score(105, 102), 1e-4);
  EXPECT_GT(std::fabs(score(5, 2) - score(5, 4)), 1e-3);
}

TEST(RefOps, Llama3ScalingRegions) {
  const Llama3Scaling s{8.0, 1.0, 4.0, 8192};
  const int dim = 128;
  const double theta = 500000.0;
  std::vector<double> plain = ropeInvFreq(dim, theta), scaled = ropeInvFreq(dim, theta, s);
  int kept = 0, divided = 0, blended = 0;
  for (int i = 0; i < dim / 2; ++i) {
    const double wavelen = 2 * std::numbers::pi / plain[i];
    if (wavelen < 8192.0 / 4.0) {
      EXPECT_EQ(scaled[i], plain[i]);
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_NEAR(scaled[i], plain[i] / 8.0, 1e-18);
      ++divided;
    } else {
      EXPECT_GT(scaled[i], plain[i] / 8.0);
      EXPECT_LT(scaled[i], plain[i]);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
  // Hand value in the blend: wavelength 4096 (old_len/wavelen = 2) -> smooth = (2 - 1) / 3.
  const double f = 2 * std::numbers::pi / 4096.0, sm = 1.0 / 3.0;
  // A 4-dim rope has inv_freq[1] = theta^(-1/2); theta = f^-2 makes it f.
  std::vector<double> one = ropeInvFreq(4, std::pow(f, -2.0), s);
  EXPECT_NEAR(one[1], (1 - sm) * f / 8.0 + sm * f, 1e-15);
}

// Naive attention: full score matrix with -inf above the causal diagonal, then softmax() per row.
std::vector<float> naiveAttention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                  int n_new, int nh, int nkv, int hd) {
  const int T = (int)(k.size() / (nkv * hd));
  std::vector<float> out(n_new * nh * hd, 0.0f);
  for (int i = 0; i < n_new; ++i)
    for (int h = 0; h < nh; ++h) {
      const int g = h * nkv / nh;
      std::vector<float> row(T);
      for (int t = 0; t < T; ++t) {
        double s = 0;
        for (int d = 0; d < hd; ++d) s += (double)q[(i * nh + h) * hd + d] * k[(t * nkv + g) * hd + d];
        row[t] = t <= T - n_new + i ? (float)(s / std::sqrt((double)hd)) : -INFINITY;
      }
      softmax(row);
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < hd; ++d) out[(i * nh + h) * hd + d] += row[t] * v[(t * nkv + g) * hd + d];
    }
  return out;
}

TEST(RefOps, AttentionMatchesNaiveSoftmaxFormula) {
  const int nh = 4, nkv = 2, hd = 8, T = 11, n_new = 5;
  std::vector<float> q = randomVec(n_new * nh * hd, 11), k = randomVec(T * nkv * hd, 12), v = randomVec(T * nkv * hd, 13);
  std::vector<float> out = causalAttention(q, k, v, n_new, nh, nkv, hd, 1.0f / std::sqrt((float)hd));
  EXPECT_LT(maxAbsDiff(out, naiveAttention(q, k, v, n_new, nh, nkv, hd)), 1e-5);
}

TEST(RefOps, AttentionGqaEqualsMhaWithRepeatedKv) {
  const int nh = 6, nkv = 2, hd = 4, T = 7, n_new = 7;
  std::vector<float> q = randomVec(n_new * nh * hd, 14), k = randomVec(T * nkv * hd, 15), v = randomVec(T * nkv * hd, 16);
  std::vector<float> k_rep(T * nh * hd), v_rep(T * nh * hd);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < nh; ++h)
      for (int d = 0; d < hd; ++d) {
        k_rep[(t * nh + h) * hd + d] = k[(t * nkv + h / 3) * hd + d];
        v_rep[(t * nh + h) * hd + d] = v[(t * nkv + h / 3) * hd + d];
      }
  const float sc = 0.5f;
  EXPECT_LT(maxAbsDiff(causalAttention(q, k, v, n_new, nh, nkv, hd, sc),
                       causalAttention(q, k_rep, v_rep, n_new, nh, nh, hd, sc)),
            1e-6);
  // The first token sees only itself: its output is its own value row.
  std::vector<float> out = causalAttention(q, k, v, n_new, nh, nkv, hd, sc);
  for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[d], v[d], 1e-6);
}

TEST(RefOps, ConvStreamedEqualsOneShotAndZeroPaddedFormula) {
  const int C = 5, K = 4, n = 9;
  std::vector<float> x = randomVec(n * C, 17), w = randomVec(C * K, 18);
  std::vector<float> state(3 * C, 0.0f);
  std::vector<float> full = causalConv1d(x, C, w, K, state);
  for (int t = 0; t < n; ++t)
    for (int c = 0; c < C; ++c) {
      double acc = 0;
      for (int j = 0; j < K; ++j) {
        const int src = t - (K - 1) + j;
        if (src >= 0) acc += (double)w[c * K + j] * x[src * C + c];
      }
      EXPECT_NEAR(full[t * C + c], acc, 1e-5);
    }
  EXPECT_EQ(std::vector<float>(state.begin(), state.end()), std::vector<float>(x.end() - 3 * C, x.end()));
  // Same result fed as 2 + 1 + 6 tokens.
  std::vector<float> st(3 * C, 0.0f), pieces;
  for (auto [a, b] : {std::pair{0, 2}, {2, 3}, {3, 9}}) {
    std::vector<float> y = causalConv1d(std::span(x).subspan(a * C, (b - a) * C), C, w, K, st);
    pieces.insert(pieces.end(), y.begin(), y.end());
  }
  EXPECT_LT(maxAbsDiff(pieces, full), 1e-6);
  EXPECT_EQ(st, state);
}

TEST(RefOps, GdnGatesMatchDefinitions) {
  std::vector<float> a{0.3f, 25.0f}, b{-1.0f, 2.0f}, alog{0.5f, -0.2f}, dt{0.1f, 1.0f}, g, beta;
  gdnGates(a, b, alog, dt, g, beta);
  EXPECT_NEAR(g[0], -std::exp(0.5) * std::log(1 + std::exp(0.4)), 1e-6);
  EXPECT_NEAR(g[1], -std::exp(-0.2) * 26.0, 1e-4);  // softplus threshold: x itself above 20
  EXPECT_NEAR(beta[0], 1 / (1 + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(beta[1], 1 / (1 + std::exp(-2.0)), 1e-7);
}

struct GdnInputs {
  GdnShape s;
  int n;
  std::vector<float> q, k, v, g, beta, state;
};

GdnInputs randomGdn(int n, GdnShape s, uint32_t seed) {
  GdnInputs in{s, n, l2Norm(randomVec(n * s.hk * s.dk, seed), s.dk), l2Norm(randomVec(n * s.hk * s.dk, seed + 1), s.dk),
               randomVec(n * s.hv * s.dv, seed + 2), {}, {}, randomVec(s.hv * s.dk * s.dv, seed + 3, 0.5f)};
  for (float& x : in.q) x /= std::sqrt((float)s.dk);
  std::vector<float> a = randomVec(n * s.hv, seed + 4), b = randomVec(n * s.hv, seed + 5);
  std::vector<float> alog = randomVec(s.hv, seed + 6, 0.5f), dt = randomVec(s.hv, seed + 7, 0.5f);
  gdnGates(a, b, alog, dt, in.g, in.beta);
  return in;
}

TEST(RefOps, GdnStepMatchesClosedForm) {
  // S_t = alpha (I - beta k k^T) S + beta k v^T;  o = S_t^T q, one value head per key head.
  GdnInputs in = randomGdn(1, {1, 1, 6, 5}, 20);
  const int dk = 6, dv = 5;
  std::vector<float> S0 = in.state;
  std::vector<float> o = gdnRecurrentStep(in.q, in.k, in.v, in.g, in.beta, in.s, in.state);
  const double alpha = std::exp((double)in.g[0]), beta = in.beta[0];
  for (int i = 0; i < dk; ++i)
    for (int n = 0; n < dv; ++n) {
      double s = 0;
      for (int m = 0; m < dk; ++m) s += ((i == m) - beta * in.k[i] * in.k[m]) * S0[m * dv + n];
      EXPECT_NEAR(in.state[i * dv + n], alpha * s + beta * in.k[i] * in.v[n], 1e-5);
    }
  for (int n = 0; n < dv; ++n) {
    double acc = 0;
    for (int i = 0; i < dk; ++i) acc += (double)in.state[i * dv + n] * in.q[i];
    EXPECT_NEAR(o[n], acc, 1e-5);
  }
}

void expectChunkedEqualsRecurrent(int n, GdnShape s, int chunk, uint32_t seed) {
  GdnInputs in = randomGdn(n, s, seed);
  std::vector<float> st_rec = in.state, st_chunk = in.state;
  std::vector<float> o_rec = gdnRecurrent(in.q, in.k, in.v, in.g, in.beta, s, st_rec);
  std::vector<float> o_chunk = gdnChunked(in.q, in.k, in.v, in.g, in.beta, s, st_chunk, chunk);
  double scale = 0;
  for (float x : o_rec) scale = std::max(scale, (double)std::fabs(x));
  EXPECT_GT(scale, 0.1);
  EXPECT_LT(maxAbsDiff(o_chunk, o_rec), 2e-5 * scale) << "n=" << n << " chunk=" << chunk;
  EXPECT_LT(maxAbsDiff(st_chunk, st_rec), 2e-5) << "n=" << n << " chunk=" << chunk;
}

TEST(RefOps, GdnChunkedEqualsRecurrentGva) {
  expectChunkedEqualsRecurrent(150, {2, 4, 16, 8}, 64, 30);  // 64 + 64 + 22, two value heads per key head
  expectChunkedEqualsRecurrent(37, {2, 4, 8, 8}, 16, 40);    // 16 + 16 + 5
  expectChunkedEqualsRecurrent(1, {2, 2, 8, 4}, 64, 50);     // a single partial chunk
}

}  // namespace
}  // namespace ewgpu::ref
