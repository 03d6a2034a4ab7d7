// Group quantization: bit layout pinned by hand-computed words, round trips both ways, q3 packing/padding.
#include "model/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/half.h"

namespace ewgpu {
namespace {

TEST(Quantize, Int4LayoutMatchesHandComputedWords) {
  // max|w| = 0.875 = 7 * 0.125, so scale 0.125 (f16 0x3000) and w/scale are integers.
  std::vector<float> w(32, 0.0f);
  const float first[8] = {0.875f, -0.875f, 0.0f, 0.125f, -0.25f, 0.5f, 0.375f, -0.125f};
  std::copy(first, first + 8, w.begin());
  QuantSpec s = quantSpec(Quant::kQ4F16_1);
  QuantizedMatrix q = quantizeMatrix(s, w.data(), 1, 32);
  ASSERT_EQ(q.q_weight.size(), 4u);
  ASSERT_EQ(q.q_scale.size(), 1u);
  // codes 14,0,7,8,5,11,10,6: element 0 in the lowest nibble.
  EXPECT_EQ(q.q_weight[0], 0x6AB5870Eu);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(q.q_weight[i], 0x77777777u);  // zeros are code 7
  EXPECT_EQ(floatToHalf(q.q_scale[0]), 0x3000);
  EXPECT_EQ(quantCode(s, q.q_weight.data(), 5), 11u);
}

TEST(Quantize, Int3PacksTenCodesPerWordFourWordsPerGroupOf40) {
  QuantSpec s = quantSpec(Quant::kQ3F16_1);
  ASSERT_EQ(s.elems_per_word, 10);
  ASSERT_EQ(s.words_per_group, 4);
  // 50 columns: 2 groups of 40 (8 words per row); elements 50..79 are padding (code 0).
  std::vector<float> w(50, 0.0f);
  const float first[7] = {0.75f, -0.75f, 0.0f, 0.25f, -0.5f, 0.5f, -0.25f};  // scale 0.25
  std::copy(first, first + 7, w.begin());
  w[40] = 0.3f;  // second group: scale 0.1 (rounded to f16), element 40 -> code 6
  QuantizedMatrix q = quantizeMatrix(s, w.data(), 1, 50);
  ASSERT_EQ(q.q_weight.size(), 8u);
  ASSERT_EQ(q.q_scale.size(), 2u);
  EXPECT_EQ(q.q_weight[0], 0x1B6A98C6u);  // codes 6,0,3,4,1,5,2,3,3,3 at 3 bits each, top 2 bits 0
  for (int i = 1; i < 4; ++i) EXPECT_EQ(q.q_weight[i], 0x1B6DB6DBu);  // ten zeros = code 3
  EXPECT_EQ(q.q_weight[4], 0x1B6DB6DEu);                              // code 6 then nine code-3
  for (int i = 5; i < 8; ++i) EXPECT_EQ(q.q_weight[i], 0u) << i;      // padding words
  EXPECT_EQ(q.q_scale[0], 0.25f);
  EXPECT_EQ(floatToHalf(q.q_scale[1]), floatToHalf(0.1f));
}

class QuantizeRoundTrip : public ::testing::TestWithParam<Quant> {};

TEST_P(QuantizeRoundTrip, DecodeOfEncodeIsWithinHalfAStep) {
  QuantSpec s = quantSpec(GetParam());
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int64_t rows = 9, cols = 100;  // 100 is not a multiple of 32 or 40: padded last group
  std::vector<float> w(rows * cols);
  for (float& x : w) x = n(rng) * (rng() % 3 == 0 ? 10.0f : 0.05f);
  QuantizedMatrix q = quantizeMatrix(s, w.data(), rows, cols);
  std::vector<float> d(rows * cols, NAN);
  dequantizeMatrix(s, q.q_weight.data(), q.q_scale.data(), rows, cols, d.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      float scale = q.q_scale[r * quantGroups(s, cols) + k / s.group_size];
      EXPECT_EQ(scale, roundScale(s, scale));  // stored precision
      EXPECT_LE(std::fabs(d[r * cols + k] - w[r * cols + k]), 0.5f * scale * (1 + 1e-5f)) << r << "," << k;
    }
}

TEST_P(QuantizeRoundTrip, EncodeOfDecodeReproducesCodesAndScales) {
  QuantSpec s = quantSpec(GetParam());
  std::mt19937 rng(11);
  const int64_t rows = 6, cols = 130;
  const int64_t groups = quantGroups(s, cols), wpr = quantWordsPerRow(s, cols);
  std::vector<uint32_t> words(rows * wpr, 0);
  std::vector<float> scales(rows * groups);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      scales[r * groups + g] = roundScale(s, std::ldexp(1.0f + (rng() % 1000) / 1000.0f, -(int)(rng() % 12)));
      int64_t k0 = g * s.group_size, k1 = std::min<int64_t>(cols, k0 + s.group_size);
      int64_t extreme = k0 + (int64_t)(rng() % (k1 - k0));  // one code at 0 or 2*max_int fixes the scale
      for (int64_t k = k0; k < k1; ++k) {
        uint32_t code = k == extreme ? (rng() % 2) * 2 * s.max_int : rng() % (2 * s.max_int + 1);
        words[r * wpr + k / s.elems_per_word] |= code << ((k % s.elems_per_word) * s.bits);
      }
    }
  std::vector<float> w(rows * cols);
  dequantizeMatrix(s, words.data(), scales.data(), rows, cols, w.data());
  QuantizedMatrix q = quantizeMatrix(s, w.data(), rows, cols);
  EXPECT_EQ(q.q_weight, words);
  EXPECT_EQ(q.q_scale, scales);
}

INSTANTIATE_TEST_SUITE_P(All, QuantizeRoundTrip, ::testing::Values(Quant::kQ4F16_1, Quant::kQ4F32_1, Quant::kQ3F16_1),
                         [](const auto& info) { return std::string(quantName(info.param)); });

TEST(Quantize, F32ScalesAreBf16Representable) {
  QuantSpec s = quantSpec(Quant::kQ4F32_1);
  EXPECT_TRUE(s.f32_scales);
  float v = roundScale(s, 0.0123456f);
  EXPECT_EQ(floatBits(v) & 0xFFFFu, 0u);
  EXPECT_NEAR(v, 0.0123456f, 0.0123456f / 128);
}

TEST(Quantize, ModelDTypeRoundingRoundsProductsToF16) {
  QuantSpec s = quantSpec(Quant::kQ4F16_1);
  // scale with a full 11-bit significand: 7*scale needs 14 bits, so f16 rounding changes it.
  float scale = halfToFloat(0x2BFF);
  std::vector<uint32_t> words(4, 0x77777777u);
  words[0] = 0x7777770Eu;  // code 14 -> +7*scale
  std::vector<float> exact(32), rounded(32);
  dequantizeMatrix(s, words.data(), &scale, 1, 32, exact.data(), false);
  dequantizeMatrix(s, words.data(), &scale, 1, 32, rounded.data(), true);
  EXPECT_EQ(exact[0], 7.0f * scale);
  EXPECT_EQ(rounded[0], halfToFloat(floatToHalf(7.0f * scale)));
  EXPECT_NE(exact[0], rounded[0]);
}

}  // namespace
}  // namespace ewgpu
