// The CPU reference against HF transformers on a tiny random Qwen3.5 model (GDN + gated attention, GVA, partial
// RoPE, 150 tokens = 64 + 64 + 22 chunk tokens). The fixtures are written on the GPU machine by
// tools/qwen35_transformers_reference.py: tests/fixtures/qwen3_5_tiny/<quant>/ holds the MLC folder and
// reference.json (transformers logits on the same bf16-rounded / dequantized weights the folder stores).
// Skipped, with a message, while a fixture is absent.
//
// Tolerance: max |reference - transformers| <= 1e-4 * max |logit| for both quantizations, since transformers runs
// in fp32 on exactly the weights the reference dequantizes; only the summation order differs (the architecture
// doc measured ~4e-7 absolute on logits of ~1.5 for an independent fp32 reference).
#include "model/model_folder.h"
#include "model/reference_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace ewgpu {
namespace {

constexpr double kRelativeTolerance = 2e-5;

std::filesystem::path fixtureDir(const std::string& quant) {
  return std::filesystem::path(EWGPU_SOURCE_DIR) / "tests" / "fixtures" / "qwen3_5_tiny" / quant;
}

// Largest |logits row - expected row| over rows; expected is a JSON array of rows.
double maxRowDiff(std::span<const float> logits, int vocab, const nlohmann::json& expected) {
  double m = 0;
  for (size_t r = 0; r < expected.size(); ++r) {
    EXPECT_EQ(expected[r].size(), (size_t)vocab);
    for (int v = 0; v < vocab && v < (int)expected[r].size(); ++v)
      m = std::max(m, std::fabs((double)logits[r * vocab + v] - expected[r][v].get<double>()));
  }
  return m;
}

class Qwen35FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Qwen35FixtureTest, LogitsMatchTransformers) {
  const std::filesystem::path dir = fixtureDir(GetParam());
  const std::filesystem::path json_path = dir / "reference.json";
  if (!std::filesystem::exists(json_path))
    GTEST_SKIP() << json_path << " is absent: generate it on the GPU machine with "
                 << "tools/qwen35_transformers_reference.py (see docs/reference.md)";
  const nlohmann::json ref = nlohmann::json::parse(std::ifstream(json_path), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(ref.is_discarded()) << "bad JSON in " << json_path;
  Result<ModelFolder> folder = ModelFolder::open(dir.string());
  ASSERT_TRUE(folder.ok()) << folder.error().toString();
  Result<ReferenceModel> model = ReferenceModel::load(*folder);
  ASSERT_TRUE(model.ok()) << model.error().toString();
  const int vocab = model->config().vocab;

  const std::vector<int32_t> prompt = ref.at("prompt_ids").get<std::vector<int32_t>>();
  const nlohmann::json& full_last = ref.at("full_logits_last");
  const nlohmann::json& decode = ref.at("decode_logits");
  const int n = (int)prompt.size(), tail = (int)full_last.size();
  ASSERT_GT(n, tail);
  ASSERT_EQ((int)decode.size(), tail);
  const double scale = ref.at("max_abs_logit").get<double>();
  ASSERT_GT(scale, 0.0);

  // One prefill over the whole prompt: the last `tail` rows.
  const std::vector<float> all = model->forward(prompt);
  ASSERT_EQ(all.size(), (size_t)n * vocab);
  const double full_diff = maxRowDiff(std::span(all).last((size_t)tail * vocab), vocab, full_last);

  // Prefill n - tail tokens, then decode the rest one by one.
  model->reset();
  ASSERT_FALSE(model->forward(std::span(prompt).first(n - tail)).empty());
  std::vector<float> steps;
  for (int i = n - tail; i < n; ++i) {
    const std::vector<float> row = model->forward(std::span(prompt).subspan(i, 1));
    steps.insert(steps.end(), row.begin(), row.end());
  }
  const double decode_diff = maxRowDiff(steps, vocab, decode);

  std::cout << "[ fixture ] " << GetParam() << ": max|logit| " << scale << ", full max|d| " << full_diff
            << ", decode max|d| " << decode_diff << " (transformers " << ref.value("transformers", "?") << ", torch "
            << ref.value("torch", "?") << ")\n";
  EXPECT_LE(full_diff, kRelativeTolerance * scale);
  EXPECT_LE(decode_diff, kRelativeTolerance * scale);
}

INSTANTIATE_TEST_SUITE_P(Quants, Qwen35FixtureTest, ::testing::Values("q0f32", "q4f16_1"));

}  // namespace
}  // namespace ewgpu
