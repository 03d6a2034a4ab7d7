// Helpers for kernel tests: random packed weights in every MLC format with their CPU dequantisation,
// buffer upload/readback, NaN poisoning.
#pragma once

#include "base/half.h"
#include "gpu/context.h"
#include "gpu/readback.h"
#include "gpu/recorder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace ewgpu::kernels::testing {

inline gpu::Context& ctx() {
  static std::unique_ptr<gpu::Context> c = [] {
    auto r = gpu::Context::create();
    if (!r) {
      ADD_FAILURE() << r.error().toString();
      std::abort();
    }
    return std::move(*r);
  }();
  return *c;
}

inline gpu::Buffer upload(const void* data, size_t bytes, const char* label = "test") {
  auto b = ctx().createBuffer(std::max<size_t>(bytes, 16), gpu::BufferKind::kStorage, label);
  EXPECT_TRUE(b.ok());
  if (bytes) ctx().write(*b, 0, data, bytes);
  return std::move(*b);
}
template <class T>
gpu::Buffer upload(const std::vector<T>& v, const char* label = "test") {
  return upload(v.data(), v.size() * sizeof(T), label);
}

// A buffer of `n` u32 filled with a NaN pattern.
inline gpu::Buffer poisoned(size_t n_words, const char* label = "out") {
  std::vector<uint32_t> p(std::max<size_t>(n_words, 4), 0x7FC00000u);
  return upload(p, label);
}

template <class T>
std::vector<T> download(const gpu::Buffer& b, size_t n) {
  auto rb = gpu::Readback::create(ctx(), n * sizeof(T));
  gpu::Recorder rec(ctx());
  rb->record(rec, b, 0, n * sizeof(T));
  Status st = rec.submit();
  EXPECT_TRUE(st.ok()) << st.error().toString();
  rb->requestMap(ctx());
  st = rb->wait(ctx());
  EXPECT_TRUE(st.ok()) << st.error().toString();
  std::vector<T> out(n);
  if (!st.ok()) return std::vector<T>(n, T{});
  std::memcpy(out.data(), rb->data().data(), n * sizeof(T));
  rb->unmap();
  return out;
}

// Random weights of shape [n, k] in format `qfmt` (KERNELS.md), packed as the GPU reads them, and the exact
// dequantised values the kernel must use.
struct PackedWeights {
  std::vector<uint32_t> w, s;
  std::vector<float> deq;  // [n, k]
};

inline PackedWeights randomWeights(int qfmt, uint32_t n, uint32_t k, std::mt19937& rng) {
  PackedWeights p;
  p.deq.assign((size_t)n * k, 0.f);
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  std::normal_distribution<float> nd(0.f, 0.5f);
  if (qfmt == 0 || qfmt == 1 || qfmt == 4) {
    const uint32_t g = qfmt == 4 ? 40 : 32, bits = qfmt == 4 ? 3 : 4, per = qfmt == 4 ? 10 : 8;
    const uint32_t maxq = qfmt == 4 ? 6 : 14, zero = qfmt == 4 ? 3 : 7;
    const uint32_t groups = (k + g - 1) / g, words = groups * 4;
    p.w.assign((size_t)n * words, 0);
    std::vector<float> scales((size_t)n * groups);
    for (auto& sc : scales) sc = qfmt == 1 ? sd(rng) : halfToFloat(floatToHalf(sd(rng)));
    for (uint32_t r = 0; r < n; ++r)
      for (uint32_t kk = 0; kk < groups * g; ++kk) {
        uint32_t code = kk < k ? rng() % (maxq + 1) : 0;
        p.w[(size_t)r * words + kk / per] |= code << (bits * (kk % per));
        if (kk < k) p.deq[(size_t)r * k + kk] = ((float)code - (float)zero) * scales[(size_t)r * groups + kk / g];
      }
    if (qfmt == 1) {
      for (float sc : scales) p.s.push_back(floatBits(sc));
    } else {
      p.s.assign((scales.size() + 1) / 2, 0);
      for (size_t i = 0; i < scales.size(); ++i) p.s[i / 2] |= (uint32_t)floatToHalf(scales[i]) << (16 * (i % 2));
    }
  } else if (qfmt == 2) {
    p.w.assign((size_t)n * k / 2, 0);
    for (size_t i = 0; i < (size_t)n * k; ++i) {
      uint16_t h = floatToHalf(nd(rng) * 0.1f);
      p.deq[i] = halfToFloat(h);
      p.w[i / 2] |= (uint32_t)h << (16 * (i % 2));
    }
    p.s = {0, 0, 0, 0};
  } else {
    for (size_t i = 0; i < (size_t)n * k; ++i) {
      p.deq[i] = nd(rng) * 0.1f;
      p.w.push_back(floatBits(p.deq[i]));
    }
    p.s = {0, 0, 0, 0};
  }
  return p;
}

inline void expectClose(const std::vector<float>& got, const std::vector<double>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 1e-6;
  for (double v : want) scale = std::max(scale, std::abs(v));
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << ": element " << i << " not written (NaN)";
    double e = std::abs((double)got[i] - want[i]) / scale;
    if (e > worst) { worst = e; worst_i = i; }
  }
  EXPECT_LE(worst, rel) << what << ": worst normalised error at " << worst_i << " got " << got[worst_i] << " want "
                        << want[worst_i];
}

}  // namespace ewgpu::kernels::testing
