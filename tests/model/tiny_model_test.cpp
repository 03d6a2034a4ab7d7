// Tiny folders of every architecture x quantization: written, validated, checksummed, and every weight
// read back equals what the writer quantized from the seeded random weights. Plus the shard cap rule.
#include "model/tiny_model.h"

#include <gtest/gtest.h>

#include "base/half.h"
#include "model/model_folder.h"
#include "model/quantize.h"
#include "model/shard_writer.h"
#include "model_test_util.h"

namespace ewgpu {
namespace {

// What a reader must see for a stored value of dtype `d`.
float storedValue(DType d, float v) {
  return d == DType::kF16 ? halfToFloat(floatToHalf(v)) : bf16ToFloat(floatToBf16(v));
}

using Combo = std::tuple<Arch, Quant>;
class TinyModel : public ::testing::TestWithParam<Combo> {};

TEST_P(TinyModel, WritesValidatesAndLoadsWhatWasQuantized) {
  auto [arch, quant] = GetParam();
  test::TempDir dir;
  TinyModelSpec spec;
  spec.arch = arch;
  spec.quant = quant;
  spec.seed = 1234;
  spec.tokenizer_path = test::writeSmallTokenizer(dir.path(), 300);
  ASSERT_TRUE(writeTinyModel(spec, dir / "m").ok());
  auto f = ModelFolder::open(dir / "m");
  ASSERT_TRUE(f.ok()) << f.error().toString();
  EXPECT_TRUE(f->verifyChecksums().ok());
  const ModelConfig& c = f->config();
  EXPECT_EQ(c.arch, arch);
  EXPECT_EQ(c.quant, quant);
  EXPECT_EQ(c.active_vocab, 306);  // 300 + 6 added tokens
  EXPECT_EQ(c.vocab, 320);         // rounded up to a multiple of 64
  for (const auto& t : f->tensors()) EXPECT_EQ(t.format, "f32-to-bf16") << t.name;

  // The same seeded weights, encoded independently here.
  WeightMap w = randomTinyWeights(c, spec.seed);
  QuantSpec s = quantSpec(quant);
  for (const MatrixSpec& m : expectedMatrices(c)) {
    auto got = loadMatrixF32(*f, m.module, (int)m.rows, (int)m.cols);
    ASSERT_TRUE(got.ok()) << got.error().toString();
    const std::vector<float>& src = w.at(m.module + ".weight");
    std::vector<float> want(src.size());
    if (s.quantized) {
      QuantizedMatrix q = quantizeMatrix(s, src.data(), m.rows, m.cols);
      dequantizeMatrix(s, q.q_weight.data(), q.q_scale.data(), m.rows, m.cols, want.data());
    } else {
      for (size_t i = 0; i < src.size(); ++i) want[i] = storedValue(modelDType(quant), src[i]);
    }
    ASSERT_EQ(*got, want) << m.module;
  }
  for (const ParamSpec& p : expectedParams(c)) {
    if (p.kind != ParamKind::kVector && p.kind != ParamKind::kConv) continue;
    auto got = loadVectorF32(*f, p.name);
    ASSERT_TRUE(got.ok()) << got.error().toString();
    const std::vector<float>& src = w.at(p.name);
    ASSERT_EQ(got->size(), src.size());
    for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ((*got)[i], storedValue(p.dtype, src[i])) << p.name << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchQuant, TinyModel,
                         ::testing::Combine(::testing::Values(Arch::kLlama, Arch::kMistral, Arch::kQwen2, Arch::kQwen3,
                                                              Arch::kQwen3_5),
                                            ::testing::Values(Quant::kQ4F16_1, Quant::kQ4F32_1, Quant::kQ0F16,
                                                              Quant::kQ0F32, Quant::kQ3F16_1)),
                         [](const auto& info) {
                           return std::string(archName(std::get<0>(info.param))) + "_" +
                                  std::string(quantName(std::get<1>(info.param)));
                         });

TEST(TinyModelDetails, Qwen35WeightsFollowTheConventions) {
  TinyModelSpec spec;
  spec.arch = Arch::kQwen3_5;
  ModelConfig c = tinyModelConfig(spec, 300);
  EXPECT_EQ(c.n_layers, 4);
  EXPECT_TRUE(c.isFullAttention(3));
  EXPECT_FALSE(c.isFullAttention(0));
  WeightMap w = randomTinyWeights(c, 5);
  for (float a : w.at("model.layers.0.linear_attn.A_log")) {
    EXPECT_GE(a, 0.0f);
    EXPECT_LE(a, std::log(16.0f));
  }
  // (1+w) norms are stored with the +1 baked in: values near 1, not near 0, and not all equal.
  const auto& n = w.at("model.layers.3.self_attn.q_norm.weight");
  double mean = 0;
  for (float x : n) mean += x / n.size();
  EXPECT_NEAR(mean, 1.0, 0.1);
  EXPECT_NE(n[0], n[1]);
  EXPECT_EQ(w.at("model.layers.0.linear_attn.conv1d_weight").size(), (size_t)c.linearConvDim() * 4);
  // Different seeds, different weights; same seed, same weights.
  EXPECT_NE(randomTinyWeights(c, 6).at("model.embed_tokens.weight"), w.at("model.embed_tokens.weight"));
  EXPECT_EQ(randomTinyWeights(c, 5).at("model.embed_tokens.weight"), w.at("model.embed_tokens.weight"));
}

TEST(TinyModelDetails, TemplateStopIdsFollowTheTokenizer) {
  test::TempDir dir;
  TinyModelSpec spec;
  spec.arch = Arch::kLlama;
  spec.quant = Quant::kQ0F32;
  spec.vocab_from_tokenizer = true;
  spec.tokenizer_path = test::writeSmallTokenizer(dir.path(), 100);
  ASSERT_TRUE(writeTinyModel(spec, dir / "m").ok());
  auto f = ModelFolder::open(dir / "m");
  ASSERT_TRUE(f.ok()) << f.error().toString();
  EXPECT_EQ(f->config().vocab, 106);
  const auto& t = f->config().conv_template;
  EXPECT_EQ(t["name"], "llama-3");
  EXPECT_EQ(t["stop_token_ids"], nlohmann::json({105, 104}));  // <|end_of_text|>, <|eot_id|>
  EXPECT_EQ(t["system_prefix_token_ids"], nlohmann::json({103}));
}

// Cap 1000: A(300) B(300) pend; C(600) >= cap/2 and overflows -> alone; D(450) overflows -> flush A,B;
// E(100) joins D.
TEST(ShardWriter, FollowsTheCapRule) {
  test::TempDir dir;
  ShardWriter w(dir.path(), 1000);
  std::vector<std::pair<std::string, int>> tensors = {{"A", 300}, {"B", 300}, {"C", 600}, {"D", 450}, {"E", 100}};
  for (auto& [name, n] : tensors) {
    std::vector<uint8_t> bytes(n, (uint8_t)name[0]);
    ASSERT_TRUE(w.begin(name, {n}, DType::kU8, n).ok());
    ASSERT_TRUE(w.write(bytes.data(), 100).ok());
    ASSERT_TRUE(w.write(bytes.data() + 100, n - 100).ok());
    ASSERT_TRUE(w.end().ok());
  }
  auto m = w.finish(nlohmann::json::object());
  ASSERT_TRUE(m.ok());
  auto tc = parseTensorCache(*m, "tensor-cache.json");
  ASSERT_TRUE(tc.ok()) << tc.error().toString();
  std::map<std::string, std::pair<std::string, uint64_t>> where;
  for (const auto& t : tc->tensors) where[t.name] = {tc->shards[t.shard].data_path, t.byte_offset};
  EXPECT_EQ(where["A"], std::make_pair(std::string("params_shard_0.bin"), (uint64_t)0));
  EXPECT_EQ(where["B"], std::make_pair(std::string("params_shard_0.bin"), (uint64_t)300));
  EXPECT_EQ(where["C"].second, 0u);
  EXPECT_NE(where["C"].first, where["A"].first);
  EXPECT_EQ(where["D"].second, 0u);
  EXPECT_EQ(where["E"], std::make_pair(where["D"].first, (uint64_t)450));
  EXPECT_NE(where["D"].first, where["A"].first);
  EXPECT_NE(where["D"].first, where["C"].first);
  for (const auto& s : tc->shards) EXPECT_EQ(std::filesystem::file_size(dir / s.data_path), s.nbytes);
  EXPECT_EQ(tc->shards.size(), 3u);
}

TEST(ShardWriter, RejectsShortRecords) {
  test::TempDir dir;
  ShardWriter w(dir.path());
  ASSERT_TRUE(w.begin("x", {4}, DType::kU8, 4).ok());
  uint8_t b[8] = {};
  EXPECT_FALSE(w.write(b, 8).ok());
  ASSERT_TRUE(w.write(b, 3).ok());
  EXPECT_FALSE(w.end().ok());
}

}  // namespace
}  // namespace ewgpu
