// The encoder (BERT) kernels against the CPU reference on fresh random inputs, outputs poisoned with NaN first:
// encoder_embed (word + position + type-0 rows of a packed batch) and encoder_attention (bidirectional attention
// inside each packed sequence, none across: each sequence equals ref::bidirectionalAttention of it alone).
#include "kernels/encoder_ops.h"

#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "model/reference_encoder.h"

namespace ewgpu::kernels {
namespace {

using namespace testing;

// The per-token table of a packed batch: (id, position, sequence start, sequence length).
std::vector<uint32_t> tokenTable(const std::vector<std::vector<uint32_t>>& seqs) {
  std::vector<uint32_t> t;
  uint32_t start = 0;
  for (const auto& s : seqs) {
    for (uint32_t i = 0; i < s.size(); ++i) t.insert(t.end(), {s[i], i, start, (uint32_t)s.size()});
    start += (uint32_t)s.size();
  }
  return t;
}

TEST(EncoderKernels, EmbedAddsWordPositionAndTypeRows) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  const uint32_t V = 40, P = 24, H = 96;
  std::vector<float> word(V * H), pos(P * H), type(2 * H);
  for (auto* v : {&word, &pos, &type})
    for (float& x : *v) x = nd(rng);
  std::vector<std::vector<uint32_t>> seqs = {{3, 39, 0, 7}, {12}, {5, 5, 6}};
  std::vector<uint32_t> toks = tokenTable(seqs);
  const uint32_t T = (uint32_t)toks.size() / 4, maxT = 16;
  toks.resize(maxT * 4, 0);
  gpu::Buffer tb = upload(toks), wb = upload(word), pb = upload(pos), yb = upload(type), out = poisoned(maxT * H);
  std::vector<uint32_t> meta = {T, 0, 0, 0};
  gpu::Buffer mb = upload(meta);
  auto op = EncoderEmbedOp::create(ctx(), tb, wb, pb, yb, out, mb, H, maxT);
  ASSERT_TRUE(op.ok()) << op.error().toString();
  gpu::Recorder rec(ctx());
  op->record(rec, T);
  ASSERT_TRUE(rec.submit().ok());
  std::vector<float> got = download<float>(out, T * H);
  std::vector<double> want(T * H);
  for (uint32_t t = 0; t < T; ++t)
    for (uint32_t i = 0; i < H; ++i)
      want[t * H + i] = (double)word[toks[t * 4] * H + i] + pos[toks[t * 4 + 1] * H + i] + type[i];
  expectClose(got, want, 1e-6, "encoder_embed");
}

TEST(EncoderKernels, AttentionStaysInsideEachPackedSequence) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (uint32_t D : {16u, 32u, 64u}) {
    const uint32_t heads = 3, W = heads * D;
    std::vector<std::vector<uint32_t>> seqs = {std::vector<uint32_t>(5), std::vector<uint32_t>(1), std::vector<uint32_t>(19)};
    std::vector<uint32_t> toks = tokenTable(seqs);
    const uint32_t T = (uint32_t)toks.size() / 4;
    std::vector<float> qkv(T * 3 * W);
    for (float& x : qkv) x = nd(rng);
    gpu::Buffer tb = upload(toks), qb = upload(qkv), out = poisoned(T * W);
    std::vector<uint32_t> meta = {T, 0, 0, 0};
    gpu::Buffer mb = upload(meta);
    auto op = EncoderAttentionOp::create(ctx(), tb, qb, out, mb, heads, D, T);
    ASSERT_TRUE(op.ok()) << op.error().toString();
    gpu::Recorder rec(ctx());
    op->record(rec, T);
    ASSERT_TRUE(rec.submit().ok());
    std::vector<float> got = download<float>(out, T * W);
    std::vector<double> want;
    uint32_t start = 0;
    for (const auto& s : seqs) {
      const uint32_t n = (uint32_t)s.size();
      std::vector<float> q(n * W), k(n * W), v(n * W);
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t e = 0; e < W; ++e) {
          q[i * W + e] = qkv[(start + i) * 3 * W + e];
          k[i * W + e] = qkv[(start + i) * 3 * W + W + e];
          v[i * W + e] = qkv[(start + i) * 3 * W + 2 * W + e];
        }
      for (float x : ref::bidirectionalAttention(q, k, v, (int)n, (int)heads, (int)D)) want.push_back(x);
      start += n;
    }
    expectClose(got, want, 1e-5, ("encoder_attention D=" + std::to_string(D)).c_str());
  }
}

}  // namespace
}  // namespace ewgpu::kernels
