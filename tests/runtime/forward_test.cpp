// The GPU forward pass against the CPU reference on tiny random models of every architecture and the three
// quantizations the issue names: prefill logits (in chunks), step-by-step decode logits, and greedy generation
// through the Generator with K = 1, 2 and 15 decode steps per submission (tokens identical to the reference).
#include "runtime/generator.h"
#include "runtime_test_util.h"

#include "gpu/readback.h"

#include <cmath>
#include <cstring>

namespace ewgpu {
namespace {

using testing::gpuContext;
using testing::readFloats;

// max |a - b| / max |b|
double normErr(const std::vector<float>& a, std::span<const float> b) {
  double scale = 1e-9, worst = 0;
  for (float v : b) scale = std::max(scale, (double)std::abs(v));
  for (size_t i = 0; i < b.size(); ++i) {
    if (std::isnan(a[i])) return 1e9;
    worst = std::max(worst, std::abs((double)a[i] - b[i]));
  }
  return worst / scale;
}

struct Param {
  Arch arch;
  Quant quant;
};

class ForwardVsReference : public ::testing::TestWithParam<Param> {};

std::vector<int32_t> promptIds(int n, int vocab) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((i * 7919 + 13) % vocab);
  return p;
}

// Tolerance on logits, relative to max |logit|: f32 arithmetic over different summation orders.
constexpr double kLogitTol = 2e-4;

TEST_P(ForwardVsReference, PrefillAndDecodeLogitsMatch) {
  const Param p = GetParam();
  std::string dir = testing::tinyFolder(p.arch, p.quant);
  auto eng = testing::loadEngine(dir, {.max_batch = 1, .slots = 1, .context = 128, .prefill_chunk = 32, .max_steps = 16});
  ASSERT_TRUE(eng.fwd);
  auto ref = ReferenceModel::load(eng.folder);
  ASSERT_TRUE(ref.ok()) << ref.error().toString();
  const int V = eng.model->config.vocab;
  Generator gen(gpuContext(), *eng.fwd, nullptr, 1);
  // The logits buffer is read after the run: no decode submission may run past the last token.
  ASSERT_TRUE(gen.setPipelineDepth(1).ok());
  // Greedy, so the decode inputs are the argmax of the logits we compare.
  GenerationRequest req;
  req.prompt = promptIds(45, V);  // two prefill chunks: 32 + 13
  req.sampling.temperature = 0;
  req.sampling.max_tokens = 6;
  std::vector<int32_t> got_tokens;
  ASSERT_TRUE(gen.submit(req, {nullptr, [&](const GenerationResult& r) { got_tokens = r.tokens; }}).ok());
  // Drive the state machine by hand so the logits can be read after the prefill and after each decode step.
  std::vector<float> want = ref->forward(req.prompt);
  std::span<const float> last(want.data() + (size_t)(req.prompt.size() - 1) * V, V);
  while (gen.step() && gen.stats().readbacks == 0) gpuContext().processEvents();
  double e = normErr(readFloats(eng.fwd->prefillLogits(), V), last);
  EXPECT_LT(e, kLogitTol) << "prefill logits";
  ASSERT_TRUE(gen.runToCompletion().ok());
  ASSERT_EQ(got_tokens.size(), 6u);
  // Decode: the reference continues with the GPU's tokens; compare the final step's logits.
  std::vector<float> dec;
  for (size_t i = 0; i + 1 < got_tokens.size(); ++i) dec = ref->forward(std::span<const int32_t>(&got_tokens[i], 1));
  double ed = normErr(readFloats(eng.fwd->logits(), V), dec);
  EXPECT_LT(ed, kLogitTol) << "decode logits after 5 steps";
}

TEST_P(ForwardVsReference, GreedyTokensIdenticalForEveryK) {
  const Param p = GetParam();
  std::string dir = testing::tinyFolder(p.arch, p.quant);
  auto eng = testing::loadEngine(dir, {.max_batch = 1, .slots = 1, .context = 128, .prefill_chunk = 64, .max_steps = 16});
  ASSERT_TRUE(eng.fwd);
  auto ref = ReferenceModel::load(eng.folder);
  ASSERT_TRUE(ref.ok());
  auto prompt = promptIds(20, eng.model->config.vocab);
  auto want = greedyGenerate(*ref, prompt, 18);
  for (uint32_t k : {1u, 2u, 15u}) {
    Generator gen(gpuContext(), *eng.fwd, nullptr, k);
    GenerationRequest req;
    req.prompt = prompt;
    req.sampling.temperature = 0;
    req.sampling.max_tokens = 18;
    GenerationResult res;
    ASSERT_TRUE(gen.submit(req, {nullptr, [&](const GenerationResult& r) { res = r; }}).ok());
    ASSERT_TRUE(gen.runToCompletion().ok());
    EXPECT_EQ(res.finish_reason, "length");
    EXPECT_EQ(res.tokens, want) << "K = " << k;
  }
}

std::string name(const ::testing::TestParamInfo<Param>& i) {
  return std::string(archName(i.param.arch)) + "_" + std::string(quantName(i.param.quant));
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, ForwardVsReference,
                         ::testing::Values(Param{Arch::kLlama, Quant::kQ4F16_1}, Param{Arch::kLlama, Quant::kQ4F32_1},
                                           Param{Arch::kLlama, Quant::kQ0F16}, Param{Arch::kMistral, Quant::kQ4F16_1},
                                           Param{Arch::kMistral, Quant::kQ4F32_1}, Param{Arch::kMistral, Quant::kQ0F16},
                                           Param{Arch::kQwen2, Quant::kQ4F16_1}, Param{Arch::kQwen2, Quant::kQ4F32_1},
                                           Param{Arch::kQwen2, Quant::kQ0F16}, Param{Arch::kQwen3, Quant::kQ4F16_1},
                                           Param{Arch::kQwen3, Quant::kQ4F32_1}, Param{Arch::kQwen3, Quant::kQ0F16},
                                           Param{Arch::kQwen3_5, Quant::kQ4F16_1},
                                           Param{Arch::kQwen3_5, Quant::kQ4F32_1},
                                           Param{Arch::kQwen3_5, Quant::kQ0F16}),
                         name);

}  // namespace
}  // namespace ewgpu
