// Whole-model invariants of the CPU reference on random tiny folders of every architecture x quantization:
// prefill == prefill + decode, split prefill == one prefill, chunked == recurrent GDN prefill, cached greedy ==
// uncached greedy, determinism, finiteness, shapes. (Agreement with transformers: qwen35_fixture_test.cpp.)
#include "model/model_folder.h"
#include "model/reference_model.h"
#include "model/reference_ops.h"
#include "model/tiny_model.h"
#include "tiny_folder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

namespace ewgpu {
namespace {

struct Case {
  Arch arch;
  Quant quant;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(archName(info.param.arch)) + "_" + std::string(quantName(info.param.quant));
}

class TinyReferenceTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = testing_ref::freshTempDir("model");
    TinyModelSpec spec;
    spec.arch = GetParam().arch;
    spec.quant = GetParam().quant;
    spec.tokenizer_path = testing_ref::writeByteLevelTokenizer(dir_);
    spec.seed = 7;
    spec.tie_embeddings = spec.arch != Arch::kLlama;  // llama covers the separate lm_head path
    const std::string folder_dir = (dir_ / "folder").string();
    Status written = writeTinyModel(spec, folder_dir);
    ASSERT_TRUE(written.ok()) << written.error().toString();
    Result<ModelFolder> folder = ModelFolder::open(folder_dir);
    ASSERT_TRUE(folder.ok()) << folder.error().toString();
    folder_.emplace(std::move(folder).value());
    // Long enough for two GDN chunks (64 + rest) on qwen3_5.
    n_ = spec.arch == Arch::kQwen3_5 ? 70 : 11;
    std::mt19937 rng(3);
    std::uniform_int_distribution<int32_t> tok(0, folder_->config().vocab - 1);
    for (int i = 0; i < n_; ++i) tokens_.push_back(tok(rng));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ReferenceModel load() {
    Result<ReferenceModel> m = ReferenceModel::load(*folder_);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().toString());
    return std::move(m).value();
  }
  int vocab() const { return folder_->config().vocab; }

  std::filesystem::path dir_;
  std::optional<ModelFolder> folder_;
  int n_ = 0;
  std::vector<int32_t> tokens_;
};

double maxAbs(std::span<const float> x) {
  double m = 0;
  for (float v : x) m = std::max(m, (double)std::fabs(v));
  return m;
}

// max |a - b| / max |b|
double relDiff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs((double)a[i] - b[i]));
  return m / std::max(maxAbs(b), 1e-30);
}

TEST_P(TinyReferenceTest, LogitsAreFiniteVariedAndShaped) {
  ReferenceModel m = load();
  const std::vector<float> logits = m.forward(tokens_);
  ASSERT_EQ(logits.size(), (size_t)n_ * vocab());
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  const auto last = std::span(logits).last(vocab()), first = std::span(logits).first(vocab());
  EXPECT_GT(*std::max_element(last.begin(), last.end()) - *std::min_element(last.begin(), last.end()), 1e-3);
  EXPECT_GT(relDiff(first, last), 1e-3);  // different positions and tokens give different logits
  EXPECT_EQ(m.position(), n_);
  const ModelConfig& c = m.config();
  ASSERT_EQ(m.layerOutputs().size(), (size_t)c.n_layers);
  for (const auto& layer : m.layerOutputs()) EXPECT_EQ(layer.size(), (size_t)n_ * c.hidden);
  EXPECT_EQ(m.finalHidden().size(), (size_t)n_ * c.hidden);
  // The logits are the final hidden states times the lm_head: one row recomputed through the embedding when tied.
  if (c.tie_embeddings) {
    Result<std::vector<float>> embed = loadMatrixF32(*folder_, "model.embed_tokens", c.vocab, c.hidden);
    ASSERT_TRUE(embed.ok());
    const auto h = std::span(m.finalHidden()).last(c.hidden);
    EXPECT_LT(relDiff(ref::logits(h, *embed, c.vocab, c.hidden), last), 1e-6);
  }
}

TEST_P(TinyReferenceTest, PrefillThenDecodeEqualsFullPrefill) {
  ReferenceModel full = load(), split = load();
  const std::vector<float> all = full.forward(tokens_);
  const std::vector<float> head = split.forward(std::span(tokens_).first(n_ - 1));
  const std::vector<float> last = split.forward(std::span(tokens_).last(1));
  EXPECT_EQ(split.position(), n_);
  EXPECT_LT(relDiff(last, std::span(all).last(vocab())), 1e-5);
  EXPECT_LT(relDiff(head, std::span(all).first((size_t)(n_ - 1) * vocab())), 1e-5);  // causal
}

TEST_P(TinyReferenceTest, PiecewisePrefillEqualsOnePrefill) {
  ReferenceModel one = load(), pieces = load();
  const std::vector<float> all = one.forward(tokens_);
  std::vector<float> joined;
  const int cuts[] = {0, 2, 3, n_ - 4, n_};  // 2 tokens, 1 token, a long middle piece, 4 tokens
  for (int i = 0; i + 1 < 5; ++i) {
    const std::vector<float> part = pieces.forward(std::span(tokens_).subspan(cuts[i], cuts[i + 1] - cuts[i]));
    joined.insert(joined.end(), part.begin(), part.end());
  }
  EXPECT_LT(relDiff(joined, all), 1e-5);
}

TEST_P(TinyReferenceTest, DeterministicAcrossResetAndReload) {
  ReferenceModel a = load(), b = load();
  const std::vector<float> first = a.forward(tokens_);
  a.reset();
  EXPECT_EQ(a.position(), 0);
  EXPECT_EQ(a.forward(tokens_), first);
  EXPECT_EQ(b.forward(tokens_), first);
}

TEST_P(TinyReferenceTest, RecurrentPrefillEqualsChunkedPrefill) {
  ReferenceModel chunked = load(), recurrent = load();
  recurrent.setGdnPrefill(ReferenceModel::GdnPrefill::kRecurrent);
  EXPECT_LT(relDiff(recurrent.forward(tokens_), chunked.forward(tokens_)), 1e-5);
}

TEST_P(TinyReferenceTest, CachedGreedyEqualsUncachedGreedy) {
  ReferenceModel cached = load(), fresh = load();
  const std::vector<int32_t> prompt(tokens_.begin(), tokens_.begin() + 5);
  const std::vector<int32_t> generated = greedyGenerate(cached, prompt, 6);
  ASSERT_EQ(generated.size(), 6u);
  EXPECT_EQ(cached.position(), 5 + 5);  // the last generated token is not fed back
  std::vector<int32_t> seq = prompt;
  for (int i = 0; i < 6; ++i) {
    fresh.reset();
    const std::vector<float> logits = fresh.forward(seq);
    const int32_t next = ref::argmax(std::span(logits).last(vocab()));
    EXPECT_EQ(next, generated[i]) << "step " << i;
    seq.push_back(next);
  }
}

TEST_P(TinyReferenceTest, RejectsOutOfRangeTokensWithoutSideEffects) {
  ReferenceModel m = load();
  const int32_t bad[] = {1, vocab()};
  EXPECT_TRUE(m.forward(bad).empty());
  const int32_t negative[] = {-1};
  EXPECT_TRUE(m.forward(negative).empty());
  EXPECT_TRUE(m.forward({}).empty());
  EXPECT_EQ(m.position(), 0);
  ReferenceModel fresh = load();
  EXPECT_EQ(m.forward(tokens_), fresh.forward(tokens_));
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (Arch a : {Arch::kLlama, Arch::kMistral, Arch::kQwen2, Arch::kQwen3, Arch::kQwen3_5})
    for (Quant q : {Quant::kQ4F16_1, Quant::kQ4F32_1, Quant::kQ0F16}) cases.push_back({a, q});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryArchAndQuant, TinyReferenceTest, ::testing::ValuesIn(allCases()), caseName);

}  // namespace
}  // namespace ewgpu
