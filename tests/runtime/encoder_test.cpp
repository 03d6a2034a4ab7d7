// The GPU encoder (BERT) against its CPU reference on a tiny random bert folder: the whole last hidden state of one
// sequence, the [CLS] vectors of a packed batch (each equal to that sequence run alone: no leak between packed
// sequences), normalisation, a batch split over several submissions, and rejected inputs; EncodeJob stepped
// without a wait (as the browser host steps it) equal to run().
#include "runtime/encoder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/reference_encoder.h"
#include "runtime_test_util.h"
#include "../model/model_test_util.h"

namespace ewgpu {
namespace {

// As forward_test's logits: max |GPU - CPU| within this fraction of max |CPU| (f32 everywhere, summation order
// differs).
constexpr double kTol = 2e-4;

double relErr(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  EXPECT_EQ(gpu.size(), cpu.size());
  double maxAbs = 0, maxDiff = 0;
  for (size_t i = 0; i < std::min(gpu.size(), cpu.size()); ++i) {
    maxAbs = std::max(maxAbs, (double)std::fabs(cpu[i]));
    maxDiff = std::max(maxDiff, (double)std::fabs(gpu[i] - cpu[i]));
  }
  return maxDiff / std::max(maxAbs, 1e-30);
}

class EncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    TinyModelSpec spec;
    spec.arch = Arch::kBert;
    spec.quant = Quant::kQ0F32;
    spec.seed = 11;
    spec.tokenizer_path = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/bert_tokenizer/tokenizer.json";
    ASSERT_TRUE(writeTinyModel(spec, dir_->path()).ok());
    auto f = ModelFolder::open(dir_->path());
    ASSERT_TRUE(f.ok()) << f.error().toString();
    folder_ = new ModelFolder(std::move(*f));
  }
  static void TearDownTestSuite() {
    delete folder_;
    delete dir_;
  }
  static test::TempDir* dir_;
  static ModelFolder* folder_;
};
test::TempDir* EncoderTest::dir_ = nullptr;
ModelFolder* EncoderTest::folder_ = nullptr;

TEST_F(EncoderTest, HiddenStatesAndPackedBatchMatchTheReference) {
  auto ref = ReferenceEncoder::load(*folder_);
  ASSERT_TRUE(ref.ok()) << ref.error().toString();
  auto enc = Encoder::create(testing::gpuContext(), *folder_, {.max_tokens = 64});
  ASSERT_TRUE(enc.ok()) << enc.error().toString();
  Encoder& e = **enc;
  const int H = ref->config().hidden;

  std::vector<int32_t> one = {2, 11, 12, 13, 14, 15, 16, 18, 19, 11, 20, 21, 5, 3};
  auto h = e.hiddenStates(one);
  ASSERT_TRUE(h.ok()) << h.error().toString();
  const double errHidden = relErr(*h, ref->hiddenStates(one));
  EXPECT_LT(errHidden, kTol);

  // Three sequences of different lengths packed into one submission (14 + 6 + 1 tokens).
  std::vector<std::vector<int32_t>> batch = {one, {2, 22, 6, 23, 7, 3}, {2}};
  auto v = e.run(batch, false);
  ASSERT_TRUE(v.ok()) << v.error().toString();
  ASSERT_EQ(v->size(), 3u);
  double errBatch = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    std::vector<float> cls = ref->hiddenStates(batch[s]);
    cls.resize(H);
    errBatch = std::max(errBatch, relErr((*v)[s], cls));
  }
  EXPECT_LT(errBatch, kTol);

  // Normalised, and split over submissions (64-token buffers: 5 x 30 tokens need 3 of them).
  std::vector<std::vector<int32_t>> many(5, std::vector<int32_t>(30, 11));
  for (size_t s = 0; s < many.size(); ++s) many[s][1] = (int32_t)(20 + s);
  auto n = e.run(many, true);
  ASSERT_TRUE(n.ok()) << n.error().toString();
  double errNorm = 0;
  for (size_t s = 0; s < many.size(); ++s) {
    double ss = 0;
    for (float x : (*n)[s]) ss += (double)x * x;
    EXPECT_NEAR(ss, 1.0, 1e-5);
    errNorm = std::max(errNorm, relErr((*n)[s], ref->embed(many[s])));
  }
  EXPECT_LT(errNorm, kTol);
  std::printf("encoder vs reference: hidden %.2e, packed batch %.2e, normalised %.2e (of max |value|)\n", errHidden,
              errBatch, errNorm);
}

TEST_F(EncoderTest, RejectsBadInputsWithoutSubmitting) {
  auto enc = Encoder::create(testing::gpuContext(), *folder_, {.max_tokens = 32});
  ASSERT_TRUE(enc.ok()) << enc.error().toString();
  Encoder& e = **enc;
  std::vector<std::vector<int32_t>> bad = {{2, 64}};  // vocab is 64 rows
  EXPECT_EQ(e.submit(bad).error().code, ErrorCode::kBadRequest);
  bad = {{}};
  EXPECT_EQ(e.submit(bad).error().code, ErrorCode::kBadRequest);
  bad = {std::vector<int32_t>(33, 5)};  // more than the 32-token buffers
  EXPECT_EQ(e.submit(bad).error().code, ErrorCode::kBadRequest);
  EXPECT_FALSE(e.pending());
  auto ok = e.run(std::vector<std::vector<int32_t>>{{2, 3}}, true);
  ASSERT_TRUE(ok.ok()) << ok.error().toString();
  EXPECT_EQ((*ok)[0].size(), 64u);
}

// The browser host's way: advance() after processEvents(), never a wait. Five 30-token sequences in 64-token
// buffers are three submissions; the vectors equal run()'s bit for bit (same kernels, same batches).
TEST_F(EncoderTest, EncodeJobSteppedWithoutWaitingEqualsRun) {
  gpu::Context& ctx = testing::gpuContext();
  auto enc = Encoder::create(ctx, *folder_, {.max_tokens = 64});
  ASSERT_TRUE(enc.ok()) << enc.error().toString();
  Encoder& e = **enc;
  std::vector<std::vector<int32_t>> many(5, std::vector<int32_t>(30, 12));
  for (size_t s = 0; s < many.size(); ++s) many[s][2] = (int32_t)(30 + s);
  auto want = e.run(many, true);
  ASSERT_TRUE(want.ok()) << want.error().toString();

  EncodeJob job(many, true);
  int not_done = 0;
  while (!job.advance(e)) {
    ASSERT_TRUE(e.submitted());  // false from advance() means a batch is in flight
    ASSERT_LT(++not_done, 100000000);
    ctx.processEvents();
  }
  EXPECT_GE(not_done, 3);  // at least once per submission
  EXPECT_TRUE(job.finished());
  EXPECT_FALSE(e.submitted());
  auto got = job.take();
  ASSERT_TRUE(got.ok()) << got.error().toString();
  ASSERT_EQ(got->size(), many.size());
  for (size_t s = 0; s < many.size(); ++s) EXPECT_EQ((*got)[s], (*want)[s]) << "sequence " << s;

  // A sequence the encoder rejects ends the job with that error, and the encoder takes the next job.
  EncodeJob bad({{2, 64}}, true);
  EXPECT_TRUE(bad.advance(e));
  EXPECT_EQ(bad.take().error().code, ErrorCode::kBadRequest);
  EncodeJob next({{2, 3}}, true);
  while (!next.advance(e)) ctx.processEvents();
  EXPECT_TRUE(next.take().ok());
}

}  // namespace
}  // namespace ewgpu
