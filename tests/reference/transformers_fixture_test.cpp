// The CPU reference against HF transformers on tiny random models: tests/fixtures/<model>_tiny/<quant>/ holds an
// MLC folder written by `ewgpu convert` and reference.json (transformers fp32 logits on exactly the weights the folder
// stores). qwen3_5: GDN + gated attention, GVA, partial RoPE, 150 tokens = 64 + 64 + 22 chunk tokens
// (tools/qwen35_transformers_reference.py). llama (untied, llama3 rope scaling), mistral, qwen2 (qkv bias), qwen3
// (q/k norms) (tools/llama_family_transformers_reference.py); gemma, gemma2, gemma3_text, phi3, olmo2, stablelm,
// gpt_neox, phi and ministral3 (tools/families_transformers_reference.py, docs/architectures.md); gemma4 (KV-shared
// layers, per-layer inputs, two head dims, proportional RoPE: tools/gemma4_transformers_reference.py). Each compares the last 20 rows of a 150-token forward
// and 20 one-token decodes after a 130-token prefill. Skipped, with a message, while a fixture is absent.
//
// Tolerance: max |reference - transformers| <= 2e-5 * max |logit|. Transformers runs in fp32 on the same weights, so
// only its float32 rounding differs (measured below 3.5e-6 relative; its own full-vs-decode gap is of that size).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "model/model_folder.h"
#include "model/reference_model.h"

namespace ewgpu {
namespace {

constexpr double kRelativeTolerance = 2e-5;

struct Fixture {
  std::string model;  // folder under tests/fixtures
  std::string quant;
};

std::filesystem::path fixtureDir(const Fixture& f) {
  return std::filesystem::path(EWGPU_SOURCE_DIR) / "tests" / "fixtures" / f.model / f.quant;
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

class TransformersFixtureTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(TransformersFixtureTest, LogitsMatchTransformers) {
  const std::filesystem::path dir = fixtureDir(GetParam());
  const std::filesystem::path json_path = dir / "reference.json";
  if (!std::filesystem::exists(json_path))
    GTEST_SKIP() << json_path << " is absent: generate it on the GPU machine with "
                 << "tools/qwen35_transformers_reference.py or tools/llama_family_transformers_reference.py "
                 << "(see docs/reference.md)";
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

  std::cout << "[ fixture ] " << GetParam().model << "/" << GetParam().quant << ": max|logit| " << scale
            << ", full max|d| " << full_diff << ", decode max|d| " << decode_diff << " (transformers "
            << ref.value("transformers", "?") << ", torch " << ref.value("torch", "?") << ")\n";
  EXPECT_LE(full_diff, kRelativeTolerance * scale);
  EXPECT_LE(decode_diff, kRelativeTolerance * scale);
}

std::vector<Fixture> allFixtures() {
  std::vector<Fixture> out;
  for (const char* model : {"qwen3_5_tiny", "llama_tiny", "mistral_tiny", "qwen2_tiny", "qwen3_tiny", "gemma_tiny",
                            "gemma2_tiny", "gemma3_text_tiny", "phi3_tiny", "olmo2_tiny", "stablelm_tiny",
                            "gpt_neox_tiny", "phi_tiny", "ministral3_tiny", "gemma4_tiny"})
    for (const char* quant : {"q0f32", "q4f16_1"}) out.push_back({model, quant});
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryFixture, TransformersFixtureTest, ::testing::ValuesIn(allFixtures()),
                         [](const ::testing::TestParamInfo<Fixture>& i) {
                           return i.param.model + "_" + i.param.quant;
                         });

}  // namespace
}  // namespace ewgpu
