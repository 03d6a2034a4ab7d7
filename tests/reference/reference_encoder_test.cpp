// The BERT encoder's CPU reference: its ops against hand-computed values, and the whole encoder's properties on a
// tiny random bert folder (bidirectional attention, CLS pooling, L2 normalisation, rejected inputs).
#include "model/reference_encoder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/model_folder.h"
#include "model/tiny_model.h"
#include "../model/model_test_util.h"

namespace ewgpu {
namespace {

TEST(ReferenceEncoderOps, LayerNormGeluAttentionByHand) {
  std::vector<float> x = {1, 2, 3, 4, -2, 0, 0, 2}, w = {1, 2, 1, 1}, b = {0, 0, 0.5f, 0};
  auto y = ref::layerNormRows(x, w, b, 0.0f);
  const float s = 1.0f / std::sqrt(1.25f);  // row 0: mean 2.5, variance 1.25
  EXPECT_NEAR(y[0], -1.5f * s, 1e-6);
  EXPECT_NEAR(y[1], 2 * -0.5f * s, 1e-6);
  EXPECT_NEAR(y[2], 0.5f * s + 0.5f, 1e-6);
  EXPECT_NEAR(y[4], -2.0f / std::sqrt(2.0f), 1e-6);  // row 1: mean 0, variance 2

  std::vector<float> g = {1, -1, 0, 3};
  ref::geluErfInPlace(g);
  EXPECT_NEAR(g[0], 0.8413447f, 1e-6);
  EXPECT_NEAR(g[1], -0.1586553f, 1e-6);
  EXPECT_EQ(g[2], 0.0f);
  EXPECT_NEAR(g[3], 2.9959502f, 1e-6);

  // One head of dim 2, two tokens: token 0 also attends to token 1 (no causal mask).
  std::vector<float> q = {1, 0, 0, 1}, k = {1, 0, 0, 2}, v = {1, 2, 3, 4};
  auto a = ref::bidirectionalAttention(q, k, v, 2, 1, 2);
  const double s0 = 1 / std::sqrt(2.0);  // token 0 scores: 1*s, 0
  const double p00 = std::exp(s0) / (std::exp(s0) + 1), p01 = 1 - p00;
  EXPECT_NEAR(a[0], p00 * 1 + p01 * 3, 1e-6);
  EXPECT_NEAR(a[1], p00 * 2 + p01 * 4, 1e-6);
  const double p11 = std::exp(2 * s0) / (std::exp(2 * s0) + 1);  // token 1 scores: 0, 2*s
  EXPECT_NEAR(a[2], (1 - p11) * 1 + p11 * 3, 1e-6);
}

class ReferenceEncoderTiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    TinyModelSpec spec;
    spec.arch = Arch::kBert;
    spec.quant = Quant::kQ0F32;
    spec.seed = 3;
    spec.tokenizer_path = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/bert_tokenizer/tokenizer.json";
    ASSERT_TRUE(writeTinyModel(spec, dir_->path()).ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static test::TempDir* dir_;
};
test::TempDir* ReferenceEncoderTiny::dir_ = nullptr;

TEST_F(ReferenceEncoderTiny, ClsPoolingIsNormalisedAndSeesTheWholeSequence) {
  auto folder = ModelFolder::open(dir_->path());
  ASSERT_TRUE(folder.ok()) << folder.error().toString();
  auto enc = ReferenceEncoder::load(*folder);
  ASSERT_TRUE(enc.ok()) << enc.error().toString();
  const int H = enc->config().hidden;
  std::vector<int32_t> a = {2, 22, 6, 23, 7, 3}, b = {2, 22, 6, 23, 8, 3};
  auto ha = enc->hiddenStates(a);
  ASSERT_EQ(ha.size(), a.size() * H);
  // Every row is a LayerNorm output with weight ~1 and bias ~0: mean near 0, spread near 1.
  double mean = 0;
  for (int e = 0; e < H; ++e) mean += ha[e];
  EXPECT_LT(std::fabs(mean / H), 0.1);
  auto ea = enc->embed(a), eb = enc->embed(b);
  ASSERT_EQ(ea.size(), (size_t)H);
  double norm = 0, diff = 0, dot = 0;
  for (int e = 0; e < H; ++e) {
    norm += (double)ea[e] * ea[e];
    diff = std::max(diff, (double)std::fabs(ea[e] - eb[e]));
    dot += (double)ha[e] * ea[e];
  }
  EXPECT_NEAR(norm, 1.0, 1e-5);
  EXPECT_GT(diff, 1e-4);  // changing token 4 moves the [CLS] row: attention is bidirectional
  double rowNorm = 0;
  for (int e = 0; e < H; ++e) rowNorm += (double)ha[e] * ha[e];
  EXPECT_NEAR(dot, std::sqrt(rowNorm), 1e-4);  // embed = hiddenStates row 0 / |row 0|
  // Deterministic.
  EXPECT_EQ(enc->embed(a), ea);
  EXPECT_TRUE(enc->embed(std::vector<int32_t>{}).empty());
  EXPECT_EQ(enc->config().vocab, 64);  // the 46-token tokenizer rounded up to 64 rows
  EXPECT_TRUE(enc->embed(std::vector<int32_t>{2, 64}).empty());
  EXPECT_TRUE(enc->embed(std::vector<int32_t>(513, 5)).empty());  // past the 512 position embeddings
  EXPECT_EQ(enc->embed(std::vector<int32_t>(512, 5)).size(), (size_t)H);
}

}  // namespace
}  // namespace ewgpu
