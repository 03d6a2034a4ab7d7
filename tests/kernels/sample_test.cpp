// Tests of the GPU sampler (src/kernels/sample.wgsl) against the CPU reference (src/kernels/sampling.cpp):
// greedy, penalties and logit_bias, temperature/top-k/top-p draws token for token, exact thresholds on peaked
// and nearly uniform 151936-token rows, frequencies of a small distribution, stop ids and max_tokens, row
// state across K steps in one submission, logprobs and top-n. Outputs are poisoned first; inputs are random.
// The kernel is the device's production sampler: sample_cpu.wgsl on CPU adapters (sample_wgsl_test runs the same
// cases with EWGPU_SAMPLE_CPU=0), sample.wgsl elsewhere; SampleCpuKernel compares the two on the same rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "../gpu/gpu_test_util.h"
#include "gpu/readback.h"
#include "gpu/recorder.h"
#include "kernels/sampling.h"

namespace ewgpu {
namespace {

using gpu::Buffer;
using gpu::BufferKind;
using gpu::Context;
using gpu::testing::sharedContext;
using RowState = std::array<uint32_t, kSampleRowWords>;

constexpr uint32_t kQwenVocab = 151936;
constexpr uint32_t kSmallVocab = 1003;  // odd, not a multiple of the workgroup
constexpr uint32_t kEarlyWord = 1 + 3 * kSampleBins;  // sample.wgsl CTR_EARLY: phase 1's count of an early top-k list
constexpr uint32_t kKmax = 8;           // out ring steps of every test specialisation (SwiftShader compiles
                                        // each specialisation for seconds: the tests share a few)

Buffer makeBuffer(Context& ctx, size_t bytes, const char* label) {
  auto b = ctx.createBuffer((bytes + 3) / 4 * 4, BufferKind::kStorage, label);
  EXPECT_TRUE(b.ok()) << b.error().toString();
  return std::move(*b);
}

std::vector<uint32_t> readWords(Context& ctx, const Buffer& buf, size_t words) {
  auto rb = gpu::Readback::create(ctx, words * 4);
  EXPECT_TRUE(rb.ok());
  gpu::Recorder rec(ctx);
  rb->record(rec, buf, 0, words * 4);
  EXPECT_TRUE(rec.submit().ok());
  rb->requestMap(ctx);
  Status st = rb->wait(ctx);
  EXPECT_TRUE(st.ok()) << st.error().toString();
  std::vector<uint32_t> v(words);
  if (!st.ok()) return v;
  std::memcpy(v.data(), rb->data().data(), words * 4);
  rb->unmap();
  return v;
}

// The five buffers of one sampler specialisation, plus `steps` [K, B, V]: the logits each step starts from
// (copied into `logits` before each dispatch, standing in for the forward pass). K <= kKmax.
struct Rig {
  uint32_t B = 0, V = 0, K = 0;
  Buffer logits, steps, params, counts, rows, out, mask;  // mask: [B, ceil(V/32)], all zero unless a test sets it
  std::optional<SampleOp> op;
  std::vector<float> step_logits;  // host copy of `steps`
  std::vector<uint32_t> counts_host;
  SampleBatch batch = SampleBatch::kSampled;  // what runSteps records (SampleOp::record)

  std::span<const float> stepRow(uint32_t k, uint32_t b) const {
    return std::span<const float>(step_logits).subspan((size_t(k) * B + b) * V, V);
  }
};

// Which kernel a rig runs: the device's production sampler (sample_cpu.wgsl on CPU adapters unless
// EWGPU_SAMPLE_CPU=0, sample.wgsl elsewhere), or one of the two by name. Tests that pin sample.wgsl's own constants
// (WG, UNROLL) run kStandard: sample.wgsl split over workgroups unless EWGPU_SAMPLE_SPLIT=0 (sampleSplit), as in
// production. kWhole is sample.wgsl in one dispatch per step (PHASE 0).
// kSplit is sample.wgsl split whatever the environment says.
enum class Sampler { kProduction, kStandard, kWhole, kSplit, kCpu };

// WRITE_STATS is on in every test specialisation (rows[b*8+7] = survivors), so they share pipelines.
Rig makeRig(uint32_t B, uint32_t V, uint32_t K, bool advance = true, gpu::Constants extra = {},
            Sampler which = Sampler::kProduction) {
  Context& ctx = sharedContext();
  if (which == Sampler::kProduction) which = sampleCpuServes(ctx.info()) ? Sampler::kCpu : Sampler::kStandard;
  Rig r;
  r.B = B, r.V = V, r.K = K;
  r.logits = makeBuffer(ctx, size_t(B) * V * 4, "logits");
  r.steps = makeBuffer(ctx, size_t(K) * B * V * 4, "steps");
  r.params = makeBuffer(ctx, size_t(B) * kSampleParamWords * 4, "params");
  r.counts = makeBuffer(ctx, size_t(B) * V * 4, "counts");
  r.rows = makeBuffer(ctx, size_t(B) * kSampleRowWords * 4, "rows");
  r.out = makeBuffer(ctx, size_t(B) * kKmax * kSampleOutWords * 4, "out");
  r.mask = makeBuffer(ctx, size_t(B) * sampleMaskWords(V) * 4, "mask");
  // The production workgroup size for this device (1024 on large GPUs, 256 on SwiftShader) and unroll, unless
  // `extra` sets them.
  gpu::Constants constants{{"V", V}, {"KMAX", kKmax}, {"ADVANCE_POS", advance ? 1 : 0}, {"WRITE_STATS", 1}};
  if (which == Sampler::kCpu) {
    constants["ORDER_WG"] = sampleWorkgroupSize(ctx.info());  // the summation order of the standard rig's sampler
  } else {
    constants["WG"] = sampleWorkgroupSize(ctx.info());
    constants["UNROLL"] = sampleUnroll();
    // SwiftShader's compile time grows with the histogram's workgroup memory (~1 s for the default 8 copies), so
    // the small-vocabulary specialisations use 2 copies; the 151936 ones keep the production default.
    if (V != kQwenVocab) constants["HIST_COPIES"] = 2;
  }
  for (const auto& [name, value] : extra) constants[name] = value;
  const bool split = which == Sampler::kSplit || (which == Sampler::kStandard && sampleSplit());
  auto op = SampleOp::create(ctx, which == Sampler::kCpu, split, constants,
                             {&r.logits, &r.params, &r.counts, &r.rows, &r.out, &r.mask}, B);
  EXPECT_TRUE(op.ok()) << op.error().toString();
  if (op.ok()) r.op = std::move(*op);
  std::vector<uint32_t> poison(size_t(B) * kKmax * kSampleOutWords, 0x7FC00000u);
  ctx.write(r.out, 0, poison.data(), poison.size() * 4);
  r.counts_host.assign(size_t(B) * V, 0);
  return r;
}

void upload(Rig& r, const std::vector<SamplingParams>& params, const std::vector<RowState>& rows) {
  Context& ctx = sharedContext();
  std::vector<uint32_t> pw(size_t(r.B) * kSampleParamWords);
  for (uint32_t b = 0; b < r.B; ++b) encodeParams(params[b], &pw[size_t(b) * kSampleParamWords]);
  ctx.write(r.params, 0, pw.data(), pw.size() * 4);
  std::vector<uint32_t> rw;
  for (const RowState& s : rows) rw.insert(rw.end(), s.begin(), s.end());
  ctx.write(r.rows, 0, rw.data(), rw.size() * 4);
  ctx.write(r.counts, 0, r.counts_host.data(), r.counts_host.size() * 4);
  ASSERT_EQ(r.step_logits.size(), size_t(r.K) * r.B * r.V);
  ctx.write(r.steps, 0, r.step_logits.data(), r.step_logits.size() * 4);
}

// `n` decode steps in one submission: copy step k's logits, dispatch B workgroups.
void runSteps(Rig& r, uint32_t n) {
  ASSERT_TRUE(r.op);
  Context& ctx = sharedContext();
  gpu::Recorder rec(ctx);
  const uint64_t row_bytes = uint64_t(r.B) * r.V * 4;
  for (uint32_t k = 0; k < n; ++k) {
    rec.copy(r.steps, k * row_bytes, r.logits, 0, row_bytes);
    r.op->record(rec, r.B, r.batch);
  }
  Status st = rec.submit();
  ASSERT_TRUE(st.ok()) << st.error().toString();
  st = ctx.finish();
  ASSERT_TRUE(st.ok()) << st.error().toString();
  st = ctx.takeError();
  ASSERT_TRUE(st.ok()) << st.error().toString();
}

RowState freshRow(uint32_t slot, uint32_t pos) { return {slot, pos, 1, 0, 0, 0, 0, 0}; }

// Decisions closer than this may legitimately differ between the GPU's f32 exp/log and the CPU's double
// (docs/sampling.md); with random inputs they practically never are that close.
constexpr double kScoreGapTolerance = 1e-4;    // Gumbel score units
constexpr double kTopPMarginTolerance = 1e-7;  // fraction of the probability mass (~215 of 2^31 units)

bool closeCall(const SampleReference& ref) {
  return ref.score_gap < kScoreGapTolerance || ref.top_p_margin < kTopPMarginTolerance;
}

// The CPU model of one step for one row: the reference draw plus the row/counts update the kernel performs.
// Where the GPU decided a close call the other way (`gpu`), the model follows the GPU's token.
std::optional<SampleReference> simulateStep(RowState& row, std::vector<uint32_t>& counts, uint32_t V,
                                            std::span<const float> logits, const SamplingParams& p, bool advance,
                                            const SampleOut* gpu = nullptr) {
  if (row[kRowActive] == 0) {
    ++row[kRowOutIndex];
    return std::nullopt;
  }
  std::span<uint32_t> slot(counts.data() + size_t(row[kRowSlot]) * V, V);
  SampleReference ref = sampleReferenceFull(logits, p, slot, row[kRowGenerated]);
  const int32_t token = gpu && gpu->active && gpu->token != ref.token && closeCall(ref) ? gpu->token : ref.token;
  uint32_t& c = slot[token];
  c = (c & kCountPromptBit) | ((c + 1) & ~kCountPromptBit);
  ++row[kRowGenerated];
  row[kRowToken] = token;
  if (advance) ++row[kRowPos];
  ++row[kRowOutIndex];
  uint32_t finish = 0;
  for (int32_t s : p.stop_token_ids)
    if (s == token) finish = 1;
  if (finish == 0 && row[kRowGenerated] >= p.max_tokens) finish = 2;
  row[kRowFinish] = finish;
  row[kRowActive] = finish ? 0 : 1;
  return ref;
}

SampleOut outAt(const std::vector<uint32_t>& out, const Rig& r, uint32_t b, uint32_t k) {
  return decodeOut(&out[(size_t(b) * kKmax + k % kKmax) * kSampleOutWords]);
}

void expectMatches(const SampleOut& got, const SampleReference& ref, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_TRUE(got.active);
  if (got.token != ref.token && closeCall(ref)) {
    std::printf("[ sample ] %s: a close call decided otherwise (score gap %.3g, top-p margin %.3g)\n", where.c_str(),
                ref.score_gap, ref.top_p_margin);
    return;
  }
  EXPECT_EQ(got.token, ref.token);
  EXPECT_NEAR(got.logprob, ref.logprob, 1e-4);
  ASSERT_EQ(got.top.size(), ref.top.size());
  for (size_t j = 0; j < ref.top.size(); ++j) {
    EXPECT_EQ(got.top[j].id, ref.top[j].id) << "top entry " << j;
    EXPECT_NEAR(got.top[j].logprob, ref.top[j].logprob, 1e-4) << "top entry " << j;
  }
}

std::vector<float> randomLogits(std::mt19937& rng, size_t n, float sigma) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Runs `steps` steps of a rig on the GPU and in the CPU model and compares every out entry and the rows.
// Returns the CPU references (per step, per row; nullopt = inactive).
std::vector<std::vector<std::optional<SampleReference>>> runAndCompare(Rig& r, const std::vector<SamplingParams>& p,
                                                                       std::vector<RowState> rows, uint32_t steps,
                                                                       bool advance = true) {
  upload(r, p, rows);
  runSteps(r, steps);
  Context& ctx = sharedContext();
  auto out = readWords(ctx, r.out, size_t(r.B) * kKmax * kSampleOutWords);
  std::vector<std::vector<std::optional<SampleReference>>> refs(steps);
  for (uint32_t k = 0; k < steps; ++k) {
    for (uint32_t b = 0; b < r.B; ++b) {
      const std::string where = "step " + std::to_string(k) + " row " + std::to_string(b);
      SampleOut got = outAt(out, r, b, k);
      refs[k].push_back(simulateStep(rows[b], r.counts_host, r.V, r.stepRow(k, b), p[b], advance, &got));
      if (refs[k][b]) {
        expectMatches(got, *refs[k][b], where);
      } else {
        EXPECT_FALSE(got.active) << where;
        EXPECT_EQ(got.top.size(), 0u) << where;
      }
    }
  }
  auto got_rows = readWords(ctx, r.rows, size_t(r.B) * kSampleRowWords);
  for (uint32_t b = 0; b < r.B; ++b)
    for (uint32_t w = 0; w < kRowStats; ++w)
      EXPECT_EQ(got_rows[b * kSampleRowWords + w], rows[b][w]) << "row " << b << " word " << w;
  EXPECT_EQ(readWords(ctx, r.counts, r.counts_host.size()), r.counts_host);
  return refs;
}

// ---------------------------------------------------------------- CPU-side API

TEST(SamplingParams, ValidateRejectsOutOfRangeValues) {
  SamplingParams ok;
  ok.max_tokens = 16;
  EXPECT_TRUE(ok.validate(1000).ok());
  auto bad = [&](auto mutate, const char* field) {
    SamplingParams p = ok;
    mutate(p);
    Status s = p.validate(1000);
    ASSERT_FALSE(s.ok()) << field;
    EXPECT_EQ(s.error().code, ErrorCode::kBadRequest);
    EXPECT_EQ(s.error().detail.value("field", ""), field);
  };
  bad([](SamplingParams& p) { p.temperature = -0.1f; }, "temperature");
  bad([](SamplingParams& p) { p.temperature = NAN; }, "temperature");
  bad([](SamplingParams& p) { p.top_p = 0; }, "top_p");
  bad([](SamplingParams& p) { p.top_p = 1.01f; }, "top_p");
  bad([](SamplingParams& p) { p.repetition_penalty = 0; }, "repetition_penalty");
  bad([](SamplingParams& p) { p.presence_penalty = 2.5f; }, "presence_penalty");
  bad([](SamplingParams& p) { p.frequency_penalty = -2.5f; }, "frequency_penalty");
  bad([](SamplingParams& p) { p.max_tokens = 0; }, "max_tokens");
  bad([](SamplingParams& p) { p.stop_token_ids.assign(9, 1); }, "stop_token_ids");
  bad([](SamplingParams& p) { p.stop_token_ids = {1000}; }, "stop_token_ids");
  bad([](SamplingParams& p) { p.logprobs = true, p.n_logprobs = 21; }, "top_logprobs");
  bad([](SamplingParams& p) { p.n_logprobs = 3; }, "top_logprobs");
  bad([](SamplingParams& p) { p.logit_bias.assign(17, {1, 1.0f}); }, "logit_bias");
  bad([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }, "logit_bias");
  bad([](SamplingParams& p) { p.logit_bias = {{5, 100.5f}}; }, "logit_bias");
}

TEST(SamplingParams, EncodeAndDecodeFollowTheWordLayout) {
  SamplingParams p;
  p.temperature = 0.7f, p.top_p = 0.9f, p.top_k = 40, p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.5f, p.frequency_penalty = -0.25f, p.seed = 0x1234567890abcdefull, p.max_tokens = 99;
  p.stop_token_ids = {7, 8, 9}, p.n_logprobs = 4, p.logprobs = true, p.logit_bias = {{3, -1.5f}, {11, 2.0f}};
  std::vector<uint32_t> w(kSampleParamWords, 0xDEADBEEFu);
  encodeParams(p, w.data());
  EXPECT_EQ(std::bit_cast<float>(w[0]), 0.7f);
  EXPECT_EQ(std::bit_cast<float>(w[1]), 0.9f);
  EXPECT_EQ(w[2], 40u);
  EXPECT_EQ(std::bit_cast<float>(w[5]), -0.25f);
  EXPECT_EQ(w[6], 0x90abcdefu);
  EXPECT_EQ(w[7], 0x12345678u);
  EXPECT_EQ(w[8], 99u);
  EXPECT_EQ(w[9], 3u);
  EXPECT_EQ(w[12], 9u);
  EXPECT_EQ(w[13], 0u);
  EXPECT_EQ(w[18], 4u);
  EXPECT_EQ(w[19], 2u);
  EXPECT_EQ(w[22], 11u);
  EXPECT_EQ(std::bit_cast<float>(w[23]), 2.0f);
  EXPECT_EQ(w[52], 1u);
  EXPECT_EQ(w[63], 0u);

  std::vector<uint32_t> o(kSampleOutWords, 0);
  o[0] = 42, o[1] = std::bit_cast<uint32_t>(-0.5f), o[2] = 2, o[3] = 42, o[4] = std::bit_cast<uint32_t>(-0.5f);
  o[5] = 7, o[6] = std::bit_cast<uint32_t>(-2.0f), o[43] = 1;
  SampleOut d = decodeOut(o.data());
  EXPECT_TRUE(d.active);
  EXPECT_EQ(d.token, 42);
  ASSERT_EQ(d.top.size(), 2u);
  EXPECT_EQ(d.top[1].id, 7);
  EXPECT_EQ(d.top[1].logprob, -2.0f);
  EXPECT_EQ(d.finish, SampleFinish::kStop);
  o[0] = kSampleInactive;
  EXPECT_FALSE(decodeOut(o.data()).active);
}

TEST(SamplingReference, ExpDrawsAreExponential) {
  // Mean 1, and the small values (which decide Gumbel-max winners) at the right rate.
  double sum = 0;
  int small = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double e = sampleExpDraw(77, 3, i);
    ASSERT_GT(e, 0.0);
    sum += e;
    small += e < 1e-3;
  }
  EXPECT_NEAR(sum / n, 1.0, 0.01);
  EXPECT_NEAR(small, n * (1 - std::exp(-1e-3)), 4 * std::sqrt(n * 1e-3));
  EXPECT_NE(sampleExpDraw(77, 3, 5), sampleExpDraw(77, 4, 5));
  EXPECT_NE(sampleExpDraw(77, 3, 5), sampleExpDraw(78, 3, 5));
  EXPECT_NE(sampleExpDraw(77, 3, 5), sampleExpDraw(77ull | (1ull << 40), 3, 5));
}

// ---------------------------------------------------------------- GPU

TEST(SampleKernel, GreedyArgmaxOnRandomLogits) {
  for (uint32_t V : {kQwenVocab, kSmallVocab}) {
    SCOPED_TRACE("V=" + std::to_string(V));
    std::mt19937 rng(V);
    Rig r = makeRig(2, V, 1);
    r.step_logits = randomLogits(rng, size_t(2) * V, 3.0f);
    r.step_logits[V + 700] = r.step_logits[V + 300] = 20.0f;  // row 1: a tie -> the lower id
    std::vector<SamplingParams> p(2);
    p[0].temperature = 0, p[0].logprobs = true;
    p[1].temperature = 0, p[1].logprobs = true, p[1].n_logprobs = 5;
    auto refs = runAndCompare(r, p, {freshRow(0, 17), freshRow(1, 3)}, 1);
    EXPECT_EQ(refs[0][1]->token, 300);
  }
}

TEST(SampleKernel, PenaltiesAndLogitBiasChangeTheArgmax) {
  const uint32_t V = kSmallVocab, B = 4;
  std::mt19937 rng(5);
  Rig r = makeRig(B, V, 1);
  r.step_logits.resize(size_t(B) * V);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : r.step_logits) x = u(rng);
  // Noise in the counts of every slot: prompt bits and generated counts on random tokens.
  for (uint32_t i = 0; i < B * V; ++i) {
    const uint32_t roll = rng() % 10;
    if (roll == 0) r.counts_host[i] = kCountPromptBit;
    if (roll == 1) r.counts_host[i] = 1 + rng() % 3;
  }
  auto L = [&](uint32_t b, uint32_t i) -> float& { return r.step_logits[size_t(b) * V + i]; };
  auto C = [&](uint32_t b, uint32_t i) -> uint32_t& { return r.counts_host[size_t(b) * V + i]; };
  std::vector<SamplingParams> p(B);
  for (auto& q : p) q.temperature = 0;
  // Row 0, repetition 2 (HF): 5 -> 2.5 loses to 4; a negative logit gets more negative.
  L(0, 10) = 5, C(0, 10) = 1, L(0, 20) = 4, C(0, 20) = 0, L(0, 30) = -0.5f, C(0, 30) = kCountPromptBit;
  p[0].repetition_penalty = 2;
  // Row 1, presence 2 on generated tokens only: 7 -> 5 loses to the prompt-only 6.
  L(1, 10) = 7, C(1, 10) = 1, L(1, 30) = 6, C(1, 30) = kCountPromptBit;
  p[1].presence_penalty = 2;
  // Row 2, frequency 0.5 x 3 occurrences (+ prompt bit): 6 -> 4.5 loses to 5.
  L(2, 10) = 6, C(2, 10) = kCountPromptBit | 3, L(2, 20) = 5, C(2, 20) = 0;
  p[2].frequency_penalty = 0.5f;
  // Row 3, logit_bias: -100 on the argmax, +3 on a low token.
  L(3, 10) = 9, L(3, 400) = -0.9f;
  p[3].logit_bias = {{10, -100.0f}, {400, 3.0f}};
  auto refs = runAndCompare(r, p, {freshRow(0, 0), freshRow(1, 0), freshRow(2, 0), freshRow(3, 0)}, 1);
  EXPECT_EQ(refs[0][0]->token, 20);
  EXPECT_EQ(refs[0][1]->token, 30);
  EXPECT_EQ(refs[0][2]->token, 20);
  EXPECT_EQ(refs[0][3]->token, 400);
  EXPECT_FLOAT_EQ(refs[0][0]->processed[30], -1.0f);
  // The processed logits are left in place; compare them all with the reference.
  auto got = readWords(sharedContext(), r.logits, size_t(B) * V);
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t i = 0; i < V; ++i)
      ASSERT_NEAR(std::bit_cast<float>(got[size_t(b) * V + i]), refs[0][b]->processed[i], 1e-6f)
          << "row " << b << " token " << i;
}

// K steps in one submission with fresh logits per step; temperature, top-k, top-p and penalties per row.
TEST(SampleKernel, TemperatureDrawsMatchTheReferenceTokenForToken) {
  struct Case {
    uint32_t V, K, rounds;
  };
  for (Case c : {Case{kSmallVocab, 6, 4}, Case{kQwenVocab, 3, 1}}) {
    SCOPED_TRACE("V=" + std::to_string(c.V));
    for (uint32_t round = 0; round < c.rounds; ++round) {
      std::mt19937 rng(100 + round);
      Rig r = makeRig(3, c.V, c.K);
      r.step_logits = randomLogits(rng, size_t(c.K) * 3 * c.V, 2.0f);
      std::vector<SamplingParams> p(3);
      p[0].temperature = 0.7f, p[0].seed = rng();
      p[1].temperature = 1.0f, p[1].repetition_penalty = 1.3f, p[1].presence_penalty = 0.5f;
      p[1].frequency_penalty = 0.3f, p[1].seed = uint64_t(rng()) << 32 | rng(), p[1].logprobs = true;
      p[2].temperature = 1.5f, p[2].top_k = 50, p[2].top_p = 0.9f, p[2].seed = rng();
      for (uint32_t i = 0; i < c.V; i += 7) r.counts_host[size_t(1) * c.V + i] = kCountPromptBit;
      runAndCompare(r, p, {freshRow(2, 10), freshRow(1, 0), freshRow(0, 5)}, c.K);
    }
  }
}

// The survivor count of top-k / top-p (rows[b*8+7] under WRITE_STATS) equals the reference's exactly.
TEST(SampleKernel, TopKAndTopPThresholdsAreExact) {
  const uint32_t V = kQwenVocab, B = 5;
  std::mt19937 rng(9);
  Rig r = makeRig(B, V, 1);
  std::vector<float> peaked = randomLogits(rng, V, 2.0f);
  for (int j = 0; j < 20; ++j) peaked[rng() % V] += 12.0f;            // a few dominant tokens
  std::vector<float> flat = randomLogits(rng, size_t(4) * V, 0.02f);  // like a random-weight model
  r.step_logits = peaked;
  r.step_logits.insert(r.step_logits.end(), flat.begin(), flat.end());
  std::vector<SamplingParams> p(B);
  for (auto& q : p) q.seed = rng();
  p[0].top_p = 0.95f;  // peaked
  p[1].top_p = 0.95f;  // nearly uniform
  p[2].top_k = 1000;   // nearly uniform
  p[3].top_k = 20000, p[3].top_p = 0.5f, p[3].temperature = 0.8f;
  p[4].top_p = 0.3f, p[4].temperature = 0.05f;  // nearly uniform, sharpened
  std::vector<RowState> rows;
  for (uint32_t b = 0; b < B; ++b) rows.push_back(freshRow(b, 0));
  auto refs = runAndCompare(r, p, rows, 1);
  auto got_rows = readWords(sharedContext(), r.rows, size_t(B) * kSampleRowWords);
  for (uint32_t b = 0; b < B; ++b) {
    const SampleReference& ref = *refs[0][b];
    std::printf("[ sample ] row %u: %u survivors of %u (top-p margin %.3g of the mass)\n", b, ref.survivors, V,
                ref.top_p_margin);
    if (ref.top_p_margin >= kTopPMarginTolerance) {
      EXPECT_EQ(got_rows[b * kSampleRowWords + kRowStats], ref.survivors) << "row " << b;
    }
  }
  EXPECT_LT(refs[0][0]->survivors, 40u);
  EXPECT_GT(refs[0][1]->survivors, V / 2);
  EXPECT_GE(refs[0][2]->survivors, 1000u);
}

TEST(SampleKernel, TopKKeepsAllTiesAtTheThreshold) {
  const uint32_t V = kSmallVocab;
  std::mt19937 rng(4);
  Rig r = makeRig(1, V, 1);
  r.step_logits = randomLogits(rng, V, 1.0f);
  for (uint32_t i = 0; i < 9; ++i) r.step_logits[i * 31] = 10.0f + i;  // 9 largest
  for (uint32_t i : {5u, 77u, 200u}) r.step_logits[i] = 9.5f;          // 10th..12th, tied
  std::vector<SamplingParams> p(1);
  p[0].top_k = 10, p[0].seed = 3;
  auto refs = runAndCompare(r, p, {freshRow(0, 0)}, 1);
  EXPECT_EQ(refs[0][0]->survivors, 12u);
  EXPECT_EQ(readWords(sharedContext(), r.rows, kSampleRowWords)[kRowStats], 12u);
}

// 2000 draws per setting: 50 rows (seeds) x 40 steps, in 5 submissions of 8 steps. WG = 64 here (SwiftShader's
// cost grows with the invocations of a workgroup, not with V = 5), which also covers the WG override.
TEST(SampleKernel, DrawFrequenciesFollowTheDistribution) {
  const uint32_t V = 5, B = 100, K = kKmax, kSubmissions = 5;
  const double probs[V] = {0.4, 0.25, 0.2, 0.1, 0.05};
  Rig r = makeRig(B, V, K, true, {{"WG", 64}}, Sampler::kStandard);
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t i = 0; i < V; ++i) r.step_logits.push_back(std::log(probs[i]) + 1.7f);
  std::vector<SamplingParams> p(B);
  std::vector<RowState> rows;
  for (uint32_t b = 0; b < B; ++b) {
    p[b].seed = 1000 + b;
    if (b % 2) p[b].top_p = 0.6f;  // keeps {0, 1}: 0.4 + 0.25 >= 0.6
    rows.push_back(freshRow(b, 0));
  }
  upload(r, p, rows);
  std::array<std::array<int, V>, 2> hits{};
  for (uint32_t sub = 0; sub < kSubmissions; ++sub) {
    if (sub > 0) {  // the host resets out_index per submission
      auto rw = readWords(sharedContext(), r.rows, size_t(B) * kSampleRowWords);
      for (uint32_t b = 0; b < B; ++b) {
        ASSERT_EQ(rw[b * kSampleRowWords + kRowOutIndex], K);
        ASSERT_EQ(rw[b * kSampleRowWords + kRowGenerated], sub * K);
        rw[b * kSampleRowWords + kRowOutIndex] = 0;
      }
      sharedContext().write(r.rows, 0, rw.data(), rw.size() * 4);
    }
    runSteps(r, K);
    auto out = readWords(sharedContext(), r.out, size_t(B) * kKmax * kSampleOutWords);
    const std::vector<uint32_t> no_counts(V, 0);
    for (uint32_t b = 0; b < B; ++b)
      for (uint32_t k = 0; k < K; ++k) {
        SampleOut o = outAt(out, r, b, k);
        ASSERT_TRUE(o.active);
        ASSERT_GE(o.token, 0);
        ASSERT_LT(o.token, int(V));
        ++hits[b % 2][o.token];
        const SampleReference ref = sampleReferenceFull(r.stepRow(k, b), p[b], no_counts, sub * K + k);
        ASSERT_TRUE(o.token == ref.token || closeCall(ref)) << b << " " << k;
      }
  }
  const double n = 2000;
  const double kept[V] = {0.4 / 0.65, 0.25 / 0.65, 0, 0, 0};
  for (uint32_t i = 0; i < V; ++i) {
    std::printf("[ sample ] token %u: %4d draws (expected %6.1f), top_p 0.6: %4d (expected %6.1f)\n", i, hits[0][i],
                n * probs[i], hits[1][i], n * kept[i]);
    EXPECT_NEAR(hits[0][i], n * probs[i], 4 * std::sqrt(n * probs[i] * (1 - probs[i]))) << "token " << i;
    EXPECT_NEAR(hits[1][i], n * kept[i], 4 * std::sqrt(n * kept[i] * (1 - kept[i])) + 1e-9) << "top-p token " << i;
  }
}

TEST(SampleKernel, StopIdsAndMaxTokensFinishRowsAcrossStepsInOneSubmission) {
  const uint32_t V = kSmallVocab, B = 3, K = 6;
  for (bool advance : {true, false}) {
    SCOPED_TRACE(advance ? "ADVANCE_POS" : "no ADVANCE_POS");
    std::mt19937 rng(11);
    Rig r = makeRig(B, V, K, advance);
    r.step_logits = randomLogits(rng, size_t(K) * B * V, 1.0f);
    const uint32_t forced[K] = {3, 7, 9, 5, 11, 13};  // argmax of every row at step k
    for (uint32_t k = 0; k < K; ++k)
      for (uint32_t b = 0; b < B; ++b) r.step_logits[(size_t(k) * B + b) * V + forced[k]] = 8.0f;
    std::vector<SamplingParams> p(B);
    for (auto& q : p) q.temperature = 0;
    p[0].stop_token_ids = {5, 9};  // stops at step 2 (token 9)
    p[1].max_tokens = 4;           // length after step 3
    p[2].stop_token_ids = {200};   // never
    auto refs = runAndCompare(r, p, {freshRow(0, 40), freshRow(1, 7), freshRow(2, 0)}, K, advance);
    auto out = readWords(sharedContext(), r.out, size_t(B) * kKmax * kSampleOutWords);
    EXPECT_EQ(outAt(out, r, 0, 2).finish, SampleFinish::kStop);
    EXPECT_EQ(outAt(out, r, 0, 1).finish, SampleFinish::kNone);
    EXPECT_FALSE(outAt(out, r, 0, 3).active);
    EXPECT_EQ(outAt(out, r, 1, 3).finish, SampleFinish::kLength);
    EXPECT_FALSE(outAt(out, r, 1, 4).active);
    EXPECT_EQ(outAt(out, r, 2, 5).token, 13);
    auto rw = readWords(sharedContext(), r.rows, size_t(B) * kSampleRowWords);
    EXPECT_EQ(rw[kRowPos], advance ? 43u : 40u);
    EXPECT_EQ(rw[kRowGenerated], 3u);
    EXPECT_EQ(rw[kRowToken], 9u);
    EXPECT_EQ(rw[kRowOutIndex], K);
    EXPECT_EQ(rw[kRowActive], 0u);
    EXPECT_EQ(rw[kSampleRowWords + kRowGenerated], 4u);
    EXPECT_EQ(rw[2 * kSampleRowWords + kRowPos], advance ? K : 0u);
  }
}

// Structured output: a row with token_mask samples only tokens its mask row allows (greedy: the argmax over them;
// temperature 1: never a masked one, and top logprobs renormalised over them), then pauses; a row without
// token_mask ignores its mask row (all zero here) and matches the reference step for step.
TEST(SampleKernel, TokenMaskRestrictsGrammarRowsOnly) {
  const uint32_t V = kSmallVocab, B = 3, K = 3, W = sampleMaskWords(V);
  std::mt19937 rng(23);
  Rig r = makeRig(B, V, K);
  r.step_logits = randomLogits(rng, size_t(K) * B * V, 3.0f);
  std::vector<uint32_t> mask(size_t(B) * W, 0);
  std::vector<int32_t> allowed;
  for (uint32_t i = 0; i < V; ++i)
    if (rng() % 7 == 0) allowed.push_back((int32_t)i);
  for (uint32_t b = 0; b < 2; ++b)
    for (int32_t i : allowed) mask[b * W + i / 32] |= 1u << (i % 32);
  sharedContext().write(r.mask, 0, mask.data(), mask.size() * 4);
  std::vector<SamplingParams> p(B);
  p[0].temperature = 0, p[0].token_mask = true;
  p[1].temperature = 1, p[1].token_mask = true, p[1].logprobs = true, p[1].n_logprobs = 3, p[1].seed = 5;
  p[2].temperature = 0;  // no grammar: its all-zero mask row must not matter
  upload(r, p, {freshRow(0, 4), freshRow(1, 4), freshRow(2, 4)});
  runSteps(r, K);
  auto out = readWords(sharedContext(), r.out, size_t(B) * kKmax * kSampleOutWords);
  std::vector<float> row0(r.stepRow(0, 0).begin(), r.stepRow(0, 0).end());
  int32_t best = allowed[0];
  for (int32_t i : allowed)
    if (row0[i] > row0[best]) best = i;
  SampleOut g = outAt(out, r, 0, 0);
  EXPECT_EQ(g.token, best);
  SampleOut t = outAt(out, r, 1, 0);
  ASSERT_TRUE(t.active);
  EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), t.token)) << t.token;
  ASSERT_EQ(t.top.size(), 3u);
  for (const auto& x : t.top) EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), x.id)) << x.id;
  for (uint32_t b = 0; b < 2; ++b) {  // paused after one token: later steps of the submission emit nothing
    EXPECT_EQ(outAt(out, r, b, 0).finish, SampleFinish::kNone);
    EXPECT_FALSE(outAt(out, r, b, 1).active);
    EXPECT_FALSE(outAt(out, r, b, 2).active);
  }
  auto rw = readWords(sharedContext(), r.rows, size_t(B) * kSampleRowWords);
  EXPECT_EQ(rw[kRowActive], 0u);
  EXPECT_EQ(rw[kRowFinish], 0u);
  EXPECT_EQ(rw[kRowGenerated], 1u);
  EXPECT_EQ(rw[kRowPos], 5u);
  EXPECT_EQ(rw[kRowToken], (uint32_t)best);
  for (uint32_t k = 0; k < K; ++k) {  // the unmasked row: plain argmax every step
    std::vector<float> l(r.stepRow(k, 2).begin(), r.stepRow(k, 2).end());
    EXPECT_EQ(outAt(out, r, 2, k).token, (int32_t)(std::max_element(l.begin(), l.end()) - l.begin()));
  }
}

TEST(SampleKernel, LogprobsAndTopNMatchTheReference) {
  for (uint32_t V : {kQwenVocab, kSmallVocab}) {
    SCOPED_TRACE("V=" + std::to_string(V));
    std::mt19937 rng(V + 1);
    Rig r = makeRig(2, V, 1);
    r.step_logits = randomLogits(rng, size_t(2) * V, 4.0f);
    std::vector<SamplingParams> p(2);
    p[0].temperature = 0.9f, p[0].logprobs = true, p[0].n_logprobs = 20, p[0].seed = 5;
    p[1].temperature = 0, p[1].logprobs = true, p[1].n_logprobs = 7, p[1].repetition_penalty = 1.2f;
    for (uint32_t i = 0; i < V; i += 3) r.counts_host[V + i] = 1;
    runAndCompare(r, p, {freshRow(0, 0), freshRow(1, 0)}, 1);
  }
}

TEST(SampleKernel, TopNBreaksTiesByLowestId) {
  const uint32_t V = kSmallVocab;
  Rig r = makeRig(2, V, 1);
  r.step_logits.assign(size_t(2) * V, 0.0f);
  // Row 0: 3 larger values, the other 1000 tied (more than the kernel's tie buffer: the fallback path).
  for (uint32_t i : {250u, 5u, 120u}) r.step_logits[i] = 1.0f + i * 1e-3f;
  // Row 1: random values, 30 tokens tied at the 15th place (within the tie buffer).
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-3.0f, 0.0f);
  for (uint32_t i = 0; i < V; ++i) r.step_logits[V + i] = u(rng);
  for (uint32_t i = 0; i < 14; ++i) r.step_logits[V + 10 * i + 3] = 5.0f + i;
  for (uint32_t i = 0; i < 30; ++i) r.step_logits[V + 9 * i + 1] = 2.0f;
  std::vector<SamplingParams> p(2);
  for (auto& q : p) q.temperature = 0, q.logprobs = true, q.n_logprobs = 20;
  auto refs = runAndCompare(r, p, {freshRow(0, 0), freshRow(1, 0)}, 1);
  const auto& top = refs[0][0]->top;
  ASSERT_EQ(top.size(), 20u);
  EXPECT_EQ(top[0].id, 250);
  EXPECT_EQ(top[3].id, 0);
  EXPECT_EQ(top[19].id, 17);  // 0..17 without 5
}

// The full-row loops load UNROLL logits per invocation at once (8 in production, which every other test uses).
// Other depths visit the same tokens in other groupings, with last rounds of different lengths (V = 1003 with 256
// invocations: depth 3 covers 768 tokens a round and ends on 235, depth 1 ends on 235 too after three whole
// rounds): greedy with top-n logprobs, penalties, temperature with top-k and top-p all still match the reference.
TEST(SampleKernel, EveryUnrollDepthMatchesTheReference) {
  for (uint32_t unroll : {1u, 3u}) {
    for (uint32_t V : {kSmallVocab, kQwenVocab}) {
      SCOPED_TRACE("UNROLL=" + std::to_string(unroll) + " V=" + std::to_string(V));
      std::mt19937 rng(V + unroll);
      // One dispatch per step: the split step runs the same loops, and its pipelines at each depth would only add
      // SwiftShader compile time (the split step itself is checked by SampleSplit and under sample_wgsl_test).
      Rig r = makeRig(3, V, 2, true, {{"UNROLL", unroll}}, Sampler::kWhole);
      r.step_logits = randomLogits(rng, size_t(2) * 3 * V, 2.0f);
      std::vector<SamplingParams> p(3);
      p[0].temperature = 0, p[0].logprobs = true, p[0].n_logprobs = 20;
      p[1].temperature = 0.8f, p[1].repetition_penalty = 1.3f, p[1].frequency_penalty = 0.4f, p[1].seed = rng();
      p[2].temperature = 1.2f, p[2].top_k = 40, p[2].top_p = 0.7f, p[2].seed = rng(), p[2].logprobs = true;
      for (uint32_t i = 0; i < V; i += 5) r.counts_host[size_t(1) * V + i] = kCountPromptBit | (i % 3);
      runAndCompare(r, p, {freshRow(0, 0), freshRow(1, 4), freshRow(2, 9)}, 2);
    }
  }
}

// Cost of one step at V = 151936 (a printout, not an assertion): kKmax steps in one submission, wall clock per
// step (copy + dispatch, submit and wait amortised) and GPU time per step from pass timestamps when available.
// On another adapter: sample_test --gtest_filter=SampleKernel.ReportsDispatchCost
TEST(SampleKernel, ReportsDispatchCost) {
  const uint32_t V = kQwenVocab, K = kKmax;
  std::mt19937 rng(1);
  Rig r = makeRig(1, V, K);
  // A nearly uniform row (top-p keeps most of the vocabulary, in one bin of the split sampler's histogram), a
  // random-weight model's row (standard deviation 1: top-p 0.95 at T 0.6 keeps about half the vocabulary), and a
  // peaked one (standard deviation 3, a few dozen tokens within a few nats of the top, as a trained model's often are).
  const std::vector<float> flat = randomLogits(rng, V, 0.02f), peaked = randomLogits(rng, V, 3.0f),
                           wide = randomLogits(rng, V, 1.0f);
  struct Setting {
    const char* name;
    SamplingParams p;
    bool peaked = false;
    bool wide = false;
    SampleBatch batch = SampleBatch::kSampled;  // as the executor records a batch of rows like this one
  };
  std::vector<Setting> settings(8);
  settings[0].name = "greedy", settings[0].p.temperature = 0, settings[0].batch = SampleBatch::kArgmax;
  settings[7].name = "greedy, one dispatch", settings[7].p.temperature = 0, settings[7].batch = SampleBatch::kGreedy;
  settings[1].name = "temperature 1", settings[1].p.temperature = 1;
  settings[2].name = "top_p 0.95", settings[2].p.top_p = 0.95f;
  settings[3].name = "top_k 50, top_p 0.95, 20 logprobs", settings[3].p.top_k = 50, settings[3].p.top_p = 0.95f;
  settings[3].p.logprobs = true, settings[3].p.n_logprobs = 20;
  settings[4].name = "T 0.6, top_p 0.95, peaked", settings[4].p.temperature = 0.6f, settings[4].p.top_p = 0.95f;
  settings[4].peaked = true;
  settings[5].name = "T 0.7, top_p 0.8, top_k 20, peaked", settings[5].p.temperature = 0.7f;
  settings[5].p.top_p = 0.8f, settings[5].p.top_k = 20, settings[5].peaked = true;
  settings[6].name = "T 0.6, top_p 0.95, sigma 1", settings[6].p.temperature = 0.6f, settings[6].p.top_p = 0.95f;
  settings[6].wide = true;
  // As the executor records a one-row batch (sampleRowBatch: top-k 20 takes phases 1, 4 and 5), except the greedy
  // row with logprobs' one dispatch, here without them.
  for (size_t i = 0; i + 1 < settings.size(); ++i) settings[i].batch = sampleRowBatch(settings[i].p, V);
  auto timer = gpu::Timer::create(sharedContext());
  ASSERT_TRUE(timer.ok());
  for (auto& s : settings) {
    r.step_logits.clear();
    const std::vector<float>& row = s.peaked ? peaked : s.wide ? wide : flat;
    for (uint32_t k = 0; k < K; ++k) r.step_logits.insert(r.step_logits.end(), row.begin(), row.end());
    r.batch = s.batch;
    upload(r, {s.p}, {freshRow(0, 0)});
    runSteps(r, 1);  // warm-up
    upload(r, {s.p}, {freshRow(0, 0)});
    Context& ctx = sharedContext();
    gpu::Recorder rec(ctx);
    if ((*timer)->available()) rec.setTimer(timer->get());
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t k = 0; k < K; ++k) {
      rec.copy(r.steps, uint64_t(k) * V * 4, r.logits, 0, uint64_t(V) * 4);
      r.op->record(rec, 1, s.batch);
    }
    if ((*timer)->available()) (*timer)->resolve(rec);
    ASSERT_TRUE(rec.submit().ok());
    ASSERT_TRUE(ctx.finish().ok());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double gpu_ms = -1;
    if ((*timer)->available()) {
      auto ns = (*timer)->readTotalNs(ctx);
      if (ns.ok()) gpu_ms = *ns / 1e6;
    }
    std::printf("[ sample ] V=%u %-34s wall %8.3f ms/step, gpu %8.3f ms/step (%s)\n", V, s.name, ms / K, gpu_ms / K,
                ctx.info().description.c_str());
  }
}

// The same inputs into two rigs of the same geometry, then K steps in one submission each.
void runBoth(Rig& a, Rig& b, const std::vector<float>& logits, const std::vector<uint32_t>& counts,
             const std::vector<uint32_t>& mask, const std::vector<SamplingParams>& p,
             const std::vector<RowState>& rows, uint32_t K) {
  for (Rig* r : {&a, &b}) {
    r->step_logits = logits;
    r->counts_host = counts;
    sharedContext().write(r->mask, 0, mask.data(), mask.size() * 4);
    upload(*r, p, rows);
    runSteps(*r, K);
  }
}

// Row state (survivor counts included), counts and processed logits equal, word for word.
void expectSameState(const Rig& a, const Rig& b) {
  Context& ctx = sharedContext();
  const size_t rows = size_t(a.B) * kSampleRowWords, cells = size_t(a.B) * a.V;
  EXPECT_EQ(readWords(ctx, a.rows, rows), readWords(ctx, b.rows, rows));
  EXPECT_EQ(readWords(ctx, a.counts, cells), readWords(ctx, b.counts, cells));
  EXPECT_EQ(readWords(ctx, a.logits, cells), readWords(ctx, b.logits, cells));
}

// Two rigs' K steps alike: per row and step the same activity, token and finish reason, logprobs within 1e-5 (the
// split step adds its normalisers per chunk), and the same state after (expectSameState). Returns b's out ring.
std::vector<uint32_t> expectSameSteps(const Rig& a, const Rig& b, uint32_t K) {
  Context& ctx = sharedContext();
  const size_t out_words = size_t(a.B) * kKmax * kSampleOutWords;
  const auto out_a = readWords(ctx, a.out, out_words), out_b = readWords(ctx, b.out, out_words);
  for (uint32_t r = 0; r < a.B; ++r)
    for (uint32_t k = 0; k < K; ++k) {
      SCOPED_TRACE("row " + std::to_string(r) + " step " + std::to_string(k));
      const SampleOut x = outAt(out_a, a, r, k), y = outAt(out_b, b, r, k);
      EXPECT_EQ(y.active, x.active);
      EXPECT_EQ(y.token, x.token);
      EXPECT_EQ(y.finish, x.finish);
      EXPECT_NEAR(y.logprob, x.logprob, 1e-5);
    }
  expectSameState(b, a);
  return out_b;
}

// sample_cpu.wgsl (CPU adapters) against sample.wgsl on the same inputs: K steps in one submission of rows with
// greedy + top-n logprobs, temperature with every penalty, top-k + top-p + logprobs, a sharpened top-p on nearly
// uniform logits (many close masses), logit_bias with stop ids, a grammar mask, an inactive row and max_tokens.
// Same tokens, top ids, row state, counts and processed logits, bit for bit: the CPU kernel adds its normalisers in
// sample.wgsl's order. Logprobs within 1e-6 (they are identical on SwiftShader).
void expectSamePicks(uint32_t V, uint32_t K, uint32_t seed) {
  SCOPED_TRACE("V=" + std::to_string(V));
  const uint32_t B = 8, W = sampleMaskWords(V);
  std::mt19937 rng(seed);
  Rig std_rig = makeRig(B, V, K, true, {}, Sampler::kWhole);
  Rig cpu_rig = makeRig(B, V, K, true, {}, Sampler::kCpu);
  std::vector<float> logits = randomLogits(rng, size_t(K) * B * V, 2.0f);
  for (uint32_t k = 0; k < K; ++k) {  // row 5: nearly uniform (a random-weight model's row)
    for (uint32_t i = 0; i < V; ++i) logits[(size_t(k) * B + 5) * V + i] *= 0.01f;
  }
  std::vector<uint32_t> counts(size_t(B) * V, 0);
  for (uint32_t i = 0; i < B * V; ++i) {
    const uint32_t roll = rng() % 9;
    if (roll == 0) counts[i] = kCountPromptBit;
    if (roll == 1) counts[i] = 1 + rng() % 4;
    if (roll == 2) counts[i] = kCountPromptBit | (1 + rng() % 2);
  }
  std::vector<uint32_t> mask(size_t(B) * W, 0);
  for (uint32_t i = 0; i < V; ++i)
    if (rng() % 5 == 0) mask[6 * W + i / 32] |= 1u << (i % 32);
  std::vector<SamplingParams> p(B);
  p[0].temperature = 0, p[0].logprobs = true, p[0].n_logprobs = 20;
  p[1].temperature = 0.8f, p[1].repetition_penalty = 1.3f, p[1].presence_penalty = 0.7f;
  p[1].frequency_penalty = 0.4f, p[1].seed = rng(), p[1].logprobs = true, p[1].n_logprobs = 3;
  p[2].temperature = 1.2f, p[2].top_k = 40, p[2].top_p = 0.9f, p[2].seed = uint64_t(rng()) << 32 | rng();
  p[2].logprobs = true, p[2].n_logprobs = 5;
  p[3].temperature = 1.0f, p[3].top_k = V / 3, p[3].seed = rng(), p[3].repetition_penalty = 0.8f;
  p[4].temperature = 0.9f, p[4].seed = rng(), p[4].logit_bias = {{7, 100.0f}, {11, 8.0f}, {7, -1.0f}};
  p[4].stop_token_ids = {11, 3}, p[4].max_tokens = 100;
  p[5].temperature = 0.05f, p[5].top_p = 0.3f, p[5].seed = rng(), p[5].logprobs = true;
  p[6].temperature = 1.0f, p[6].token_mask = true, p[6].seed = rng(), p[6].logprobs = true, p[6].n_logprobs = 4;
  p[7].temperature = 0.7f, p[7].top_p = 0.95f, p[7].seed = rng(), p[7].max_tokens = 2;
  std::vector<RowState> rows;
  for (uint32_t b = 0; b < B; ++b) rows.push_back(freshRow(b, 3 * b));
  rows[3][kRowActive] = 0;  // inactive from the start: marks every step, keeps its state
  rows[3][kRowFinish] = 1;
  rows[1][kRowGenerated] = 17;  // a later hash counter
  runBoth(std_rig, cpu_rig, logits, counts, mask, p, rows, K);
  Context& ctx = sharedContext();
  const size_t out_words = size_t(B) * kKmax * kSampleOutWords;
  auto out_std = readWords(ctx, std_rig.out, out_words), out_cpu = readWords(ctx, cpu_rig.out, out_words);
  uint32_t sampled = 0;
  for (uint32_t b = 0; b < B; ++b)
    for (uint32_t k = 0; k < K; ++k) {
      SCOPED_TRACE("row " + std::to_string(b) + " step " + std::to_string(k));
      const SampleOut a = outAt(out_std, std_rig, b, k), c = outAt(out_cpu, cpu_rig, b, k);
      ASSERT_EQ(c.active, a.active);
      EXPECT_EQ(c.token, a.token);
      EXPECT_EQ(c.finish, a.finish);
      EXPECT_NEAR(c.logprob, a.logprob, 1e-6);
      ASSERT_EQ(c.top.size(), a.top.size());
      for (size_t j = 0; j < a.top.size(); ++j) {
        EXPECT_EQ(c.top[j].id, a.top[j].id) << "top entry " << j;
        EXPECT_NEAR(c.top[j].logprob, a.top[j].logprob, 1e-6) << "top entry " << j;
      }
      sampled += a.active ? 1 : 0;
    }
  EXPECT_GT(sampled, B * K / 2);  // most rows sampled at most steps (row 3 never, row 7 twice, row 6 once)
  expectSameState(cpu_rig, std_rig);
}

// sample.wgsl split over workgroups (PHASE 1..5) against the same kernel in one dispatch per step, K steps of 8
// rows: greedy, temperature alone with every penalty, top-k + top-p, top-p on peaked logits (a short candidate
// list), top-p on nearly uniform logits and a top-k of V / 3 (more candidates than CAP at the Qwen vocabulary: the
// whole-vocabulary finish), a grammar mask with top-p, logit_bias with top-p and stop ids. Same tokens, finish
// reasons, top-n ids, row state (survivor counts included), counts and processed logits; logprobs within 1e-5
// (the split step adds its normalisers per chunk). The candidate counters show which rows took the list.
// whole_wg: the one dispatch's workgroup size, when not the production one (the split phases keep theirs).
void expectSplitMatchesWhole(uint32_t V, uint32_t K, uint32_t seed, uint32_t whole_wg = 0) {
  SCOPED_TRACE("V=" + std::to_string(V) + " whole WG=" + std::to_string(whole_wg));
  const uint32_t B = 9, W = sampleMaskWords(V);
  std::mt19937 rng(seed);
  gpu::Constants whole_c;
  if (whole_wg > 0) whole_c["WG"] = whole_wg;
  Rig whole = makeRig(B, V, K, true, whole_c, Sampler::kWhole);
  Rig split = makeRig(B, V, K, true, {}, Sampler::kSplit);
  ASSERT_TRUE(whole.op && split.op);
  ASSERT_TRUE(split.op->split());
  split.op->setSampledSplitRows(B);  // the five phases whatever production's row limit (kSampleSampledSplitRows)
  std::vector<float> logits = randomLogits(rng, size_t(K) * B * V, 2.0f);
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t i = 0; i < V; ++i) {
      logits[(size_t(k) * B + 3) * V + i] *= 4.0f;   // row 3: peaked
      logits[(size_t(k) * B + 4) * V + i] *= 0.5f;   // row 4: flat (a random-weight model's row: sigma 1)
      logits[(size_t(k) * B + 8) * V + i] *= 0.01f;  // row 8: nearly uniform
    }
  std::vector<uint32_t> counts(size_t(B) * V, 0);
  for (uint32_t i = 0; i < B * V; ++i) {
    const uint32_t roll = rng() % 9;
    if (roll == 0) counts[i] = kCountPromptBit;
    if (roll == 1) counts[i] = 1 + rng() % 4;
  }
  std::vector<uint32_t> mask(size_t(B) * W, 0);
  for (uint32_t i = 0; i < V; ++i)
    if (rng() % 5 == 0) mask[6 * W + i / 32] |= 1u << (i % 32);
  std::vector<SamplingParams> p(B);
  p[0].temperature = 0, p[0].logprobs = true;
  p[1].temperature = 0.8f, p[1].repetition_penalty = 1.3f, p[1].presence_penalty = 0.7f;
  p[1].frequency_penalty = 0.4f, p[1].seed = rng(), p[1].logprobs = true;
  p[2].temperature = 1.2f, p[2].top_k = 40, p[2].top_p = 0.9f, p[2].seed = rng(), p[2].logprobs = true;
  p[3].temperature = 0.6f, p[3].top_p = 0.95f, p[3].seed = rng(), p[3].logprobs = true;
  p[4].temperature = 0.6f, p[4].top_p = 0.95f, p[4].seed = rng();
  p[5].temperature = 1.0f, p[5].top_k = V / 3, p[5].seed = rng(), p[5].repetition_penalty = 0.8f;
  p[6].temperature = 0.5f, p[6].top_p = 0.8f, p[6].token_mask = true, p[6].seed = rng();
  p[7].temperature = 0.9f, p[7].top_p = 0.5f, p[7].seed = rng(), p[7].logit_bias = {{7, 100.0f}, {11, 8.0f}};
  p[7].stop_token_ids = {11, 3};
  p[8].temperature = 0.6f, p[8].top_p = 0.95f, p[8].seed = rng();
  std::vector<RowState> rows;
  for (uint32_t b = 0; b < B; ++b) rows.push_back(freshRow(b, 3 * b));
  runBoth(whole, split, logits, counts, mask, p, rows, K);
  Context& ctx = sharedContext();
  expectSameSteps(whole, split, K);
  // The last step's candidate counts: rows 2, 3, 4, 6 and 7 drew from a list. Row 4 keeps about 60% of the vocabulary
  // at top-p 0.95, but its list holds only the bins around the cut. At the Qwen vocabulary rows 5 (top-k V / 3) and
  // 8 (every token in one bin) had more candidates than the list holds and took the whole-vocabulary finish.
  const auto ctr = readWords(ctx, split.op->candidates(), size_t(B) * kSampleCtrStride);
  std::vector<uint32_t> cand(B);
  for (uint32_t b = 0; b < B; ++b) cand[b] = ctr[size_t(b) * kSampleCtrStride];
  for (uint32_t b : {2u, 3u, 4u, 6u, 7u}) {
    EXPECT_GE(cand[b], 1u) << "row " << b;
    EXPECT_LE(cand[b], kSampleCap) << "row " << b;
  }
  if (V > 4 * kSampleCap) {
    EXPECT_GT(cand[5], kSampleCap);
    EXPECT_GT(cand[8], kSampleCap);
  }
  // Row 4's survivors (WRITE_STATS) are most of the vocabulary, far more than its list: the tokens above the list
  // are counted in.
  const auto rows_s = readWords(ctx, split.rows, size_t(B) * kSampleRowWords);
  if (V > 4 * kSampleCap) {
    EXPECT_GT(rows_s[4 * kSampleRowWords + 7], 4 * kSampleCap);
  }
  // Row 2 (top-k 40) had its list written by phase 1, whose counter phase 4 leaves at zero between steps.
  for (uint32_t b = 0; b < B; ++b) EXPECT_EQ(ctr[size_t(b) * kSampleCtrStride + kEarlyWord], 0u) << "row " << b;
}

// sample.wgsl's reductions by subgroup shuffles in this run's rigs (sampleSubgroupReduce).
bool sgReduce() {
  const DeviceInfo& d = sharedContext().info();
  return sampleSubgroupReduce(d, sampleWorkgroupSize(d)) > 0;
}

// The split-against-whole tests pin both rigs' kernels, so the run under sample_wgsl_test (EWGPU_SAMPLE_CPU=0) would
// repeat sample_test's, unless it also sets EWGPU_SAMPLE_SG (the reductions by subgroup shuffles, off on CPU
// adapters by default).
bool repeatsSampleTest() {
  const char* e = std::getenv("EWGPU_SAMPLE_CPU");
  return e && std::string(e) == "0" && !std::getenv("EWGPU_SAMPLE_SG");
}

// A greedy batch without logprobs (SampleBatch::kArgmax) takes the split step's phases 1 and 4 only: the chunks'
// maxima, then each row's finish from them. Against the one dispatch, K steps of rows that reach every greedy
// path: a tie for the max in two chunks (lowest id wins), every penalty on a slot with prompt and generated counts, a
// logit_bias with a stop id (finished at step 0, then inactive), a grammar mask (pauses after its token), a
// max_tokens of 2, a row inactive from the start. Same tokens, finish reasons, row state, counts and processed
// logits, word for word.
void expectArgmaxMatchesWhole(uint32_t V, uint32_t K, uint32_t seed) {
  SCOPED_TRACE("V=" + std::to_string(V));
  const uint32_t B = 6, W = sampleMaskWords(V);
  std::mt19937 rng(seed);
  Rig whole = makeRig(B, V, K, true, {}, Sampler::kWhole);
  Rig split = makeRig(B, V, K, true, {}, Sampler::kSplit);
  ASSERT_TRUE(whole.op && split.op);
  ASSERT_TRUE(split.op->split());
  split.batch = SampleBatch::kArgmax;
  split.op->setArgmaxSplitRows(B);  // production takes phases 1 and 4 for fewer rows (kSampleArgmaxSplitRows)
  split.op->setSampledSplitRows(B);
  EXPECT_EQ(split.op->dispatches(B, SampleBatch::kArgmax), 2u);
  EXPECT_EQ(split.op->dispatches(B + 1, SampleBatch::kArgmax), 1u);
  EXPECT_EQ(split.op->dispatches(B, SampleBatch::kSampled), 5u);
  EXPECT_EQ(split.op->dispatches(B + 1, SampleBatch::kSampled), 1u);
  EXPECT_EQ(split.op->dispatches(B, SampleBatch::kGreedy), 1u);
  EXPECT_EQ(whole.op->dispatches(B, SampleBatch::kSampled), 1u);
  std::vector<float> logits = randomLogits(rng, size_t(K) * B * V, 2.0f);
  const uint32_t tie_lo = 7, tie_hi = V - 5;  // different chunks at the Qwen vocabulary
  for (uint32_t k = 0; k < K; ++k) logits[size_t(k) * B * V + tie_lo] = logits[size_t(k) * B * V + tie_hi] = 50.0f;
  std::vector<uint32_t> counts(size_t(B) * V, 0);
  for (uint32_t i = V; i < 2 * V; ++i) {  // row 1's slot: a prompt and some generated tokens
    const uint32_t roll = rng() % 6;
    if (roll == 0) counts[i] = kCountPromptBit;
    if (roll == 1) counts[i] = 1 + rng() % 4;
  }
  std::vector<uint32_t> mask(size_t(B) * W, 0);
  for (uint32_t i = 0; i < V; ++i)
    if (rng() % 7 == 0) mask[3 * W + i / 32] |= 1u << (i % 32);
  std::vector<SamplingParams> p(B);
  for (auto& q : p) q.temperature = 0;
  p[1].repetition_penalty = 1.3f, p[1].presence_penalty = 0.5f, p[1].frequency_penalty = 0.4f;
  p[2].logit_bias = {{5, 100.0f}}, p[2].stop_token_ids = {5};
  p[3].token_mask = true;
  p[4].max_tokens = 2;
  std::vector<RowState> rows;
  for (uint32_t b = 0; b < B; ++b) rows.push_back(freshRow(b, 2 * b));
  rows[5][2] = 0;  // inactive
  runBoth(whole, split, logits, counts, mask, p, rows, K);
  const std::vector<uint32_t> out_s = expectSameSteps(whole, split, K);
  // The paths were taken: the tie went to the lower id, the stop id finished row 2 at once, row 3 paused after
  // one token, row 4 ran out of tokens at its second, row 5 never sampled.
  EXPECT_EQ(outAt(out_s, split, 0, 0).token, (int32_t)tie_lo);
  EXPECT_EQ(outAt(out_s, split, 2, 0).token, 5);
  EXPECT_EQ(outAt(out_s, split, 2, 0).finish, SampleFinish::kStop);
  EXPECT_FALSE(outAt(out_s, split, 2, 1).active);
  EXPECT_TRUE(outAt(out_s, split, 3, 0).active);
  EXPECT_FALSE(outAt(out_s, split, 3, 1).active);
  EXPECT_EQ(outAt(out_s, split, 4, 1).finish, SampleFinish::kLength);
  EXPECT_FALSE(outAt(out_s, split, 5, 0).active);
}

// A batch whose sampling rows are all top-k without logprobs (SampleBatch::kSampledTopK) takes phases 1, 4 and 5:
// phase 1 lists each chunk's tokens at or above its own k-th key (sample.wgsl's early_k). Against the one dispatch,
// K steps of: greedy; the model card's T 0.7 / top-p 0.8 / top-k 20; top-k 50 with every penalty; a top-k whose
// logit_bias picks a stop id (finished at step 0); max_tokens 2; an inactive row; and a top-k over equal logits, where
// every chunk lists all of its tokens (ties at its k-th key): past CAP at the Qwen vocabulary, so the row takes the
// whole-vocabulary finish (phase 5's, or phase 6's with `phase6`: phases 4 and 5 in one dispatch). Same tokens,
// finish reasons, row state (survivor counts included), counts and processed logits; the early counters are zero
// after the steps.
void expectTopKBatchMatchesWhole(uint32_t V, uint32_t K, uint32_t seed, bool phase6) {
  SCOPED_TRACE("V=" + std::to_string(V) + (phase6 ? " phase 6" : " phases 4, 5"));
  const uint32_t B = 7;
  std::mt19937 rng(seed);
  Rig whole = makeRig(B, V, K, true, {}, Sampler::kWhole);
  Rig split = makeRig(B, V, K, true, {}, Sampler::kSplit);
  ASSERT_TRUE(whole.op && split.op);
  ASSERT_TRUE(split.op->split());
  split.op->setSampledSplitRows(B);
  split.batch = SampleBatch::kSampledTopK;
  ASSERT_TRUE(split.op->setTopKPhase6(sharedContext(), phase6).ok());
  EXPECT_EQ(split.op->dispatches(B, SampleBatch::kSampledTopK), phase6 ? 2u : 3u);
  EXPECT_EQ(split.op->dispatches(B + 1, SampleBatch::kSampledTopK), 1u);
  std::vector<float> logits = randomLogits(rng, size_t(K) * B * V, 2.0f);
  for (uint32_t k = 0; k < K; ++k)
    for (uint32_t i = 0; i < V; ++i) logits[(size_t(k) * B + 6) * V + i] = 1.5f;  // row 6: every logit equal
  std::vector<uint32_t> counts(size_t(B) * V, 0);
  for (uint32_t i = 2 * V; i < 3 * V; ++i) {  // row 2's slot: a prompt and some generated tokens
    const uint32_t roll = rng() % 6;
    if (roll == 0) counts[i] = kCountPromptBit;
    if (roll == 1) counts[i] = 1 + rng() % 4;
  }
  const std::vector<uint32_t> mask(size_t(B) * sampleMaskWords(V), 0);
  std::vector<SamplingParams> p(B);
  p[0].temperature = 0;
  p[1].temperature = 0.7f, p[1].top_p = 0.8f, p[1].top_k = 20, p[1].seed = rng();
  p[2].temperature = 1.0f, p[2].top_k = 50, p[2].repetition_penalty = 1.3f, p[2].presence_penalty = 0.5f;
  p[2].frequency_penalty = 0.4f, p[2].seed = rng();
  p[3].temperature = 0.9f, p[3].top_k = 5, p[3].logit_bias = {{7, 100.0f}}, p[3].stop_token_ids = {7};
  p[3].seed = rng();
  p[4].temperature = 0.8f, p[4].top_k = 40, p[4].top_p = 0.9f, p[4].max_tokens = 2, p[4].seed = rng();
  p[5].temperature = 1.0f, p[5].top_k = 20;
  p[6].temperature = 1.0f, p[6].top_k = 30, p[6].seed = rng();
  SampleBatch joined = SampleBatch::kArgmax;
  for (const SamplingParams& q : p) joined = sampleBatchJoin(joined, sampleRowBatch(q, V));
  EXPECT_EQ(joined, SampleBatch::kSampledTopK);
  std::vector<RowState> rows;
  for (uint32_t b = 0; b < B; ++b) rows.push_back(freshRow(b, 2 * b));
  rows[5][kRowActive] = 0;
  runBoth(whole, split, logits, counts, mask, p, rows, K);
  const std::vector<uint32_t> out_s = expectSameSteps(whole, split, K);
  EXPECT_EQ(outAt(out_s, split, 3, 0).token, 7);
  EXPECT_EQ(outAt(out_s, split, 3, 0).finish, SampleFinish::kStop);
  EXPECT_EQ(outAt(out_s, split, 4, 1).finish, SampleFinish::kLength);
  EXPECT_FALSE(outAt(out_s, split, 5, 0).active);
  // The last step's lists: each chunk's k tokens at least (every chunk holds more than k); row 6's ties listed every
  // token, past CAP at the Qwen vocabulary.
  const uint32_t chunks = (V + kSampleChunk - 1) / kSampleChunk;
  const auto ctr = readWords(sharedContext(), split.op->candidates(), size_t(B) * kSampleCtrStride);
  EXPECT_GE(ctr[1 * kSampleCtrStride], 20u * chunks);
  EXPECT_LE(ctr[1 * kSampleCtrStride], kSampleCap);
  EXPECT_GE(ctr[2 * kSampleCtrStride], 50u * chunks);
  EXPECT_EQ(ctr[6 * kSampleCtrStride], V);
  for (uint32_t b = 0; b < B; ++b) EXPECT_EQ(ctr[size_t(b) * kSampleCtrStride + kEarlyWord], 0u) << "row " << b;
}

TEST(SampleSplit, TopKBatchSameStepsAsOneDispatch) {
  if (repeatsSampleTest()) GTEST_SKIP() << "run by sample_test";
  expectTopKBatchMatchesWhole(kSmallVocab, 3, 61, false);
  expectTopKBatchMatchesWhole(kQwenVocab, 2, 62, false);
  expectTopKBatchMatchesWhole(kSmallVocab, 3, 63, true);
  expectTopKBatchMatchesWhole(kQwenVocab, 2, 64, true);
}

// What a row asks of the sampler, and a batch of rows (the executor's join).
TEST(SampleSplit, RowBatchAndJoin) {
  const uint32_t V = kQwenVocab;  // 75 chunks: an early top-k is at most 4096 / 75 = 54
  SamplingParams greedy, greedy_lp, topk, topk_lp, topk_big, topk_mask, topp, temp;
  greedy.temperature = 0;
  greedy_lp.temperature = 0, greedy_lp.logprobs = true;
  topk.top_k = 20;
  topk_lp.top_k = 20, topk_lp.n_logprobs = 3, topk_lp.logprobs = true;
  topk_big.top_k = 55;
  topk_mask.top_k = 20, topk_mask.token_mask = true;
  topp.top_p = 0.9f;
  EXPECT_EQ(sampleRowBatch(greedy, V), SampleBatch::kArgmax);
  EXPECT_EQ(sampleRowBatch(greedy_lp, V), SampleBatch::kGreedy);
  EXPECT_EQ(sampleRowBatch(topk, V), SampleBatch::kSampledTopK);
  EXPECT_EQ(sampleRowBatch(topk, 1003), SampleBatch::kSampledTopK);
  EXPECT_EQ(sampleRowBatch(topk_lp, V), SampleBatch::kSampled);
  EXPECT_EQ(sampleRowBatch(topk_big, V), SampleBatch::kSampled);
  EXPECT_EQ(sampleRowBatch(topk_big, 100000), SampleBatch::kSampledTopK);  // 49 chunks
  EXPECT_EQ(sampleRowBatch(topk_mask, V), SampleBatch::kSampled);
  EXPECT_EQ(sampleRowBatch(topp, V), SampleBatch::kSampled);
  EXPECT_EQ(sampleRowBatch(temp, V), SampleBatch::kSampled);
  EXPECT_EQ(sampleBatchJoin(SampleBatch::kArgmax, SampleBatch::kSampledTopK), SampleBatch::kSampledTopK);
  EXPECT_EQ(sampleBatchJoin(SampleBatch::kSampledTopK, SampleBatch::kArgmax), SampleBatch::kSampledTopK);
  EXPECT_EQ(sampleBatchJoin(SampleBatch::kGreedy, SampleBatch::kSampledTopK), SampleBatch::kSampled);
  EXPECT_EQ(sampleBatchJoin(SampleBatch::kSampled, SampleBatch::kSampledTopK), SampleBatch::kSampled);
  EXPECT_EQ(sampleBatchJoin(SampleBatch::kArgmax, SampleBatch::kGreedy), SampleBatch::kGreedy);
  EXPECT_EQ(sampleBatchJoin(SampleBatch::kArgmax, SampleBatch::kArgmax), SampleBatch::kArgmax);
}

TEST(SampleSplit, ArgmaxBatchSameStepsAsOneDispatch) {
  if (repeatsSampleTest()) GTEST_SKIP() << "run by sample_test";
  expectArgmaxMatchesWhole(kSmallVocab, 3, 51);
  expectArgmaxMatchesWhole(kQwenVocab, 3, 52);
}

TEST(SampleSplit, SameStepsAsOneDispatch) {
  if (repeatsSampleTest()) GTEST_SKIP() << "run by sample_test";
  expectSplitMatchesWhole(kSmallVocab, 3, 41);
  expectSplitMatchesWhole(kQwenVocab, 2, 42);
}

// The split phases run on at most kSampleSplitWg threads, the one dispatch on sampleWorkgroupSize's (1024 on large
// GPUs): the picks do not depend on either. Here the one dispatch has four times the split phases' threads.
TEST(SampleSplit, FewerThreadsThanTheOneDispatchSameSteps) {
  if (repeatsSampleTest()) GTEST_SKIP() << "run by sample_test";
  EXPECT_EQ(sampleSplitWorkgroupSize(1024), kSampleSplitWg);
  EXPECT_EQ(sampleSplitWorkgroupSize(64), 64u);
  const uint32_t split_wg = sampleSplitWorkgroupSize(sampleWorkgroupSize(sharedContext().info()));
  const uint32_t whole_wg = 4 * split_wg;
  if (whole_wg > sharedContext().info().max_compute_invocations_per_workgroup)
    GTEST_SKIP() << "the device allows fewer than " << whole_wg << " threads";
  expectSplitMatchesWhole(kSmallVocab, 3, 43, whole_wg);
}

// Only on CPU adapters, the only ones that run sample_cpu.wgsl: the bit-exact comparison relies on both kernels
// compiling each f32 expression alike, which a GPU compiler contracting a * b + c differently in the two need not.
TEST(SampleCpuKernel, SamePicksAsSampleWgsl) {
  if (!sharedContext().info().cpuAdapter()) GTEST_SKIP() << "sample_cpu.wgsl runs on CPU adapters only";
  if (sgReduce()) GTEST_SKIP() << "EWGPU_SAMPLE_SG: sample.wgsl's sums are not in sample_cpu.wgsl's order";
  expectSamePicks(kSmallVocab, 4, 31);
  expectSamePicks(4096, 3, 32);  // the default model's vocabulary
}

TEST(SampleCpuKernel, SamePicksAsSampleWgslAtQwenVocab) {
  if (!sharedContext().info().cpuAdapter()) GTEST_SKIP() << "sample_cpu.wgsl runs on CPU adapters only";
  if (sgReduce()) GTEST_SKIP() << "EWGPU_SAMPLE_SG: sample.wgsl's sums are not in sample_cpu.wgsl's order";
  expectSamePicks(kQwenVocab, 1, 33);
}

}  // namespace
}  // namespace ewgpu
