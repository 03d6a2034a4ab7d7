// The GPU engine against HF transformers 5.17: logits recorded by tools/*_transformers_reference.py on the GPU
// machine for tiny random models of every architecture (the families: tools/families_transformers_reference.py) (tests/fixtures/<arch>_tiny/<quant>/reference.json):
// a 131-token prefill must give transformers' logits at position 130, and teacher-forced decode steps
// (the next prompt token written into the row state) transformers' cached-decode logits at 131..149.
#include "kernels/sampling.h"
#include "runtime_test_util.h"

#include "gpu/readback.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>

namespace ewgpu {
namespace {

using testing::gpuContext;
using testing::readFloats;

double maxAbsDiff(const std::vector<float>& a, const nlohmann::json& b) {
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, std::isnan(a[i]) ? 1e9 : std::abs(a[i] - b[i].get<double>()));
  return w;
}

class TransformersFixture : public ::testing::TestWithParam<std::string> {};

// `rel_tol` × max |logit| is the tolerance. The KV cache is f32 unless `kv` says otherwise: the tolerances of the
// f32 and int16 tests are those of an f32 cache, which is what CPU adapters use by default and GPUs do not (f16).
void checkFixture(const std::string& name, kernels::Activations act, double rel_tol,
                  ForwardOptions::Kv kv = ForwardOptions::Kv::kF32,
                  kernels::Activations prefill = kernels::Activations::kF32, uint32_t mlp_digits = 0,
                  uint32_t prefill_mlp_digits = 0, uint32_t gdn_digits = 0) {
  std::string dir = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/" + name;
  std::ifstream in(dir + "/reference.json");
  if (!in) GTEST_SKIP() << "fixture absent: " << dir;
  nlohmann::json ref = nlohmann::json::parse(in);
  auto eng = testing::loadEngine(
      dir, {.max_batch = 1, .slots = 1, .context = 160, .prefill_chunk = 64, .max_steps = 1, .activations = act,
            .kv = kv, .prefill_activations = prefill, .prefill_mlp_digits = prefill_mlp_digits,
            .mlp_digits = mlp_digits, .gdn_digits = gdn_digits});
  ASSERT_TRUE(eng.fwd);
  gpu::Context& ctx = gpuContext();
  const Forward& f = *eng.fwd;
  const uint32_t V = eng.model->config.vocab, n0 = ref["n_prefill"].get<uint32_t>() + 1;
  std::vector<int32_t> prompt = ref["prompt_ids"].get<std::vector<int32_t>>();
  const double tol = rel_tol * ref["max_abs_logit"].get<double>();

  SamplingParams sp;
  sp.temperature = 0;
  uint32_t params[Forward::kParamWords];
  encodeParams(sp, params);
  ctx.write(f.params(), 0, params, sizeof params);
  ctx.write(f.prefillParams(), 0, params, sizeof params);
  std::vector<uint32_t> zero(V, 0);
  ctx.write(f.counts(), 0, zero.data(), V * 4);
  // Prefill the first n0 tokens in chunks of 64.
  for (uint32_t done = 0; done < n0;) {
    uint32_t T = std::min<uint32_t>(64, n0 - done);
    bool last = done + T == n0;
    uint32_t prow[8] = {0, done, 1, 0, 0, 0, 0, 0}, meta[4] = {T, 0, 0, 0};
    ctx.write(f.prefillRows(), 0, prow, sizeof prow);
    ctx.write(f.prefillMeta(), 0, meta, sizeof meta);
    ctx.write(f.prefillIds(), 0, prompt.data() + done, T * 4);
    if (last) {
      uint32_t row[8] = {0, n0, 0, 0, 0, 0, 0, 0};
      ctx.write(f.rows(), 0, row, sizeof row);
    }
    gpu::Recorder rec(ctx);
    f.recordPrefillChunk(rec, T, last, 0);
    ASSERT_TRUE(rec.submit().ok());
    done += T;
  }
  double worst = maxAbsDiff(readFloats(f.prefillLogits(), V), ref["decode_logits"][0]);
  EXPECT_LT(worst, tol) << "prefill logits at position " << n0 - 1;
  // Teacher-forced decode: the next prompt token replaces the sampled one in the row state.
  for (uint32_t i = 1; i < ref["decode_logits"].size(); ++i) {
    uint32_t tok = (uint32_t)prompt[n0 - 1 + i], z = 0, one = 1;
    ctx.write(f.rows(), 4 * 4, &tok, 4);
    ctx.write(f.rows(), 5 * 4, &z, 4);
    ctx.write(f.rows(), 2 * 4, &one, 4);
    gpu::Recorder rec(ctx);
    f.recordDecodeStep(rec);
    ASSERT_TRUE(rec.submit().ok());
    double e = maxAbsDiff(readFloats(f.logits(), V), ref["decode_logits"][i]);
    worst = std::max(worst, e);
    EXPECT_LT(e, tol) << "decode step " << i;
  }
  std::string x = act == kernels::Activations::kF32 ? "" : " " + std::string(kernels::activationsName(act)) + " x";
  if (kv == ForwardOptions::Kv::kF16) x += " f16 KV";
  if (prefill != kernels::Activations::kF32) x += " " + std::string(kernels::activationsName(prefill)) + " prefill x";
  if (f.prefillMlpDigits() != f.prefillDigits()) x += " (prefill MLP int8)";
  if (f.decodeMlpDigits() == 1 && act != kernels::Activations::kInt8) x += " (decode MLP int8)";
  if (f.decodeGdnDigits() == 2 && act == kernels::Activations::kInt8) x += " (decode GDN int16)";
  std::printf("[ fixture ] %s%s: max |Δlogit| %.3g (max |logit| %.3g, tolerance %.3g)\n", name.c_str(), x.c_str(),
              worst, ref["max_abs_logit"].get<double>(), tol);
}

// f32 GPU vs f32 transformers.
TEST_P(TransformersFixture, GpuLogitsMatchTransformers) { checkFixture(GetParam(), kernels::Activations::kF32, 1e-4); }

// The q4 GEMVs with x̂ as two int8 digits per element (kInt16, the default on GPUs).
TEST(TransformersFixtureInt16, GpuLogitsMatchTransformers) {
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  for (const char* f : {"qwen3_5_tiny/q4f16_1", "llama_tiny/q4f16_1", "mistral_tiny/q4f16_1", "qwen2_tiny/q4f16_1",
                        "qwen3_tiny/q4f16_1", "gemma2_tiny/q4f16_1", "gpt_neox_tiny/q4f16_1", "phi_tiny/q4f16_1",
                        "gemma4_tiny/q4f16_1"}) {
    SCOPED_TRACE(f);
    // measured ≤ 2.1e-4 of max |logit| (qwen3_5), 4.4e-4 (gemma4: scale-1 attention), ≤ 5e-5 for the others
    checkFixture(f, kernels::Activations::kInt16, 1e-3);
  }
}

// The q4 GEMVs with x̂ as one int8 digit per element (llama.cpp's q8_1 scheme): the GPUs' decode default for these
// families in engines of more than one row (ForwardOptions::activations kAuto, forward.cpp's decodeActivations),
// held to 2e-2 of max |logit| as the int8 prefill is. H100 2026-12-07: the same figures but gemma3_text's, 1.7%. SwiftShader, 2026-12-03: 0.25% (gemma) .. 1.5% (gemma3_text), llama 1.1%. gemma2 (2.4%) keeps two
// digits outside the MLP and is held here to 3e-2; qwen3_5 (9.2%) and gemma4 (17.5%) are left out: gemma4 keeps
// two, qwen3_5 two in its GDN projections (TransformersFixtureMultiRowDecode below).
TEST(TransformersFixtureInt8, GpuLogitsMatchTransformers) {
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  for (const char* f : {"llama_tiny/q4f16_1", "mistral_tiny/q4f16_1", "qwen2_tiny/q4f16_1", "qwen3_tiny/q4f16_1",
                        "gemma2_tiny/q4f16_1", "gpt_neox_tiny/q4f16_1", "phi_tiny/q4f16_1", "gemma_tiny/q4f16_1",
                        "gemma3_text_tiny/q4f16_1", "phi3_tiny/q4f16_1", "olmo2_tiny/q4f16_1", "stablelm_tiny/q4f16_1",
                        "ministral3_tiny/q4f16_1"}) {
    SCOPED_TRACE(f);
    checkFixture(f, kernels::Activations::kInt8, std::string(f).rfind("gemma2", 0) == 0 ? 3e-2 : 2e-2);
  }
}

// qwen3_5's decode default in engines of more than one row on GPUs (forward.cpp decodeGdnDigits): x̂ as one int8
// digit but in the GDN in/out projections, which keep two; held to 2e-2 of max |logit| like the other one-digit
// defaults. SwiftShader 2026-12-07: 0.0421 = 1.78% (H100 0.0422; one digit everywhere 9.2%, the one-row split
// 1.65%).
TEST(TransformersFixtureMultiRowDecode, Qwen3_5GdnTwoDigits) {
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  checkFixture("qwen3_5_tiny/q4f16_1", kernels::Activations::kInt8, 2e-2, ForwardOptions::Kv::kF32,
               kernels::Activations::kF32, 0, 0, 2);
}

// The f16 KV cache (the default on GPUs) with f32 x: its own tolerance, 2e-3 of max |logit| (measured on the H200
// ≤ 5.3e-4, gemma3_text 5.2e-4 and olmo2 4.3e-4 the largest). CPU adapters default to f32 KV and check the f16 cache
// in the attention tests (Attention.F16KvCache), so this runs on GPUs only: SwiftShader would spend another four
// minutes compiling every fixture's pipelines. gemma4 measured 6.2e-3 there, so it keeps an f32 cache on GPUs too
// (ForwardOptions::Kv::kAuto) and is not held to this tolerance.
TEST_P(TransformersFixture, GpuLogitsWithF16KvCache) {
  if (gpuContext().info().cpuAdapter()) GTEST_SKIP() << "f16 KV is the GPUs' default; CPU adapters test it in attention_test";
  if (GetParam().rfind("gemma4", 0) == 0) GTEST_SKIP() << "gemma4 runs an f32 KV cache (6.2e-3 of max |logit| with f16)";
  checkFixture(GetParam(), kernels::Activations::kF32, 2e-3, ForwardOptions::Kv::kF16);
}

// The prefill GEMMs on the packed dot product (GPUs' default: x as one int8 digit per 32-element group; two for
// qwen3_5 and gemma4), decode with f32 x and an f32 cache, so the figure is the prefill's own: the prompt's K/V, the
// recurrent state and the last prompt token's logits all come from the quantized GEMMs. GPUs only, as the f16 KV
// test (forward_test checks the path on CPU adapters against the CPU reference). Tolerances: int8 2e-2 of max
// |logit| (as the int8 decode GEMVs'; H200: 6.2e-4 gemma .. 1.6e-2 gemma2), int16 2e-3 (H200: ≤ 1.6e-4, gemma4
// 9.7e-4). qwen3_5 measured 6.5e-2 with one digit (the GDN recurrence carries the projections' error through the
// prompt) and gemma4's attention is known to amplify it: both default to two digits, the only setting held here.
TEST_P(TransformersFixture, GpuLogitsWithInt8Prefill) {
  if (gpuContext().info().cpuAdapter()) GTEST_SKIP() << "GPUs' default; CPU adapters check it in forward_test";
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  if (GetParam().find("q4f") == std::string::npos) GTEST_SKIP() << "the int8 prefill is for q4 weights";
  const bool two_digits = GetParam().rfind("gemma4", 0) == 0 || GetParam().rfind("qwen3_5", 0) == 0;
  if (!two_digits)
    checkFixture(GetParam(), kernels::Activations::kF32, 2e-2, ForwardOptions::Kv::kF32, kernels::Activations::kInt8);
  checkFixture(GetParam(), kernels::Activations::kF32, 2e-3, ForwardOptions::Kv::kF32, kernels::Activations::kInt16);
}

// The mixed prefill setting, qwen3_5's default on GPUs (ForwardOptions::prefill_mlp_digits auto,
// EWGPU_PREFILL_MLP_Q8=0 turns it off): its MLP GEMMs with one digit, its GDN and attention projections with two.
// Runs on every adapter with the packed dot product (one family: a few seconds on SwiftShader). Measured 2026-12-03
// on SwiftShader: 3.95e-2 = 1.7% of max |logit| (two digits everywhere 3.4e-4, one everywhere 0.154); gemma4
// measured 0.134 with it (9.6%), so gemma4 keeps two. H200: the 2B's prefill 11.8k against 9.6k tok/s at 512 tokens
// (docs/measurements/h200-run25).
TEST(TransformersFixtureMixedPrefill, Qwen3_5MlpOneDigit) {
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  checkFixture("qwen3_5_tiny/q4f16_1", kernels::Activations::kF32, 2e-2, ForwardOptions::Kv::kF32,
               kernels::Activations::kInt16, 0, 1);
}

// The same split for decode, the GPUs' default in one-row engines for every family but gemma4, and in larger ones
// for qwen3_5 and gemma2 (ForwardOptions::mlp_digits auto, EWGPU_GEMV_MLP_Q8=0 turns it off; the others take one
// digit everywhere there, TransformersFixtureInt8): the MLP's GEMVs with x̂ as one digit, the others with two. SwiftShader
// 2026-12-03: qwen3_5 0.039 = 1.65% of max |logit| against 9.2% with one digit everywhere (TransformersFixtureInt8's
// note); llama 0.9% (1.1% with one digit everywhere); gemma4 6.1%, so it keeps two. docs/kernels.md has every
// family's figure.
TEST(TransformersFixtureMixedDecode, EveryFamilyButGemma4) {
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  for (const char* f : {"qwen3_5_tiny/q4f16_1", "llama_tiny/q4f16_1", "mistral_tiny/q4f16_1", "qwen2_tiny/q4f16_1",
                        "qwen3_tiny/q4f16_1", "gemma2_tiny/q4f16_1", "gpt_neox_tiny/q4f16_1", "phi_tiny/q4f16_1",
                        "gemma_tiny/q4f16_1", "gemma3_text_tiny/q4f16_1", "phi3_tiny/q4f16_1", "olmo2_tiny/q4f16_1",
                        "stablelm_tiny/q4f16_1", "ministral3_tiny/q4f16_1"}) {
    SCOPED_TRACE(f);
    checkFixture(f, kernels::Activations::kInt16, 2e-2, ForwardOptions::Kv::kF32, kernels::Activations::kF32, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, TransformersFixture,
                         ::testing::Values("qwen3_5_tiny/q0f32", "qwen3_5_tiny/q4f16_1", "llama_tiny/q0f32",
                                           "llama_tiny/q4f16_1", "mistral_tiny/q0f32", "mistral_tiny/q4f16_1",
                                           "qwen2_tiny/q0f32", "qwen2_tiny/q4f16_1", "qwen3_tiny/q0f32",
                                           "qwen3_tiny/q4f16_1", "gemma_tiny/q4f16_1", "gemma2_tiny/q0f32",
                                           "gemma2_tiny/q4f16_1", "gemma3_text_tiny/q4f16_1", "phi3_tiny/q4f16_1",
                                           "olmo2_tiny/q4f16_1", "stablelm_tiny/q4f16_1", "gpt_neox_tiny/q4f16_1",
                                           "phi_tiny/q4f16_1", "ministral3_tiny/q0f32", "ministral3_tiny/q4f16_1",
                                           "gemma4_tiny/q0f32", "gemma4_tiny/q4f16_1"),
                         [](const auto& i) {
                           std::string n = i.param;
                           for (auto& ch : n) if (ch == '/') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ewgpu
