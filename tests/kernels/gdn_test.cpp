// Gated DeltaNet kernels (gdn_conv, gdn_recurrent, gdn_chunked) against a double-precision CPU reference written
// here from qwen3_5-architecture.md §6: conv + prep (decode and prefill, continuation), decode recurrence over
// several steps with a batch of rows in different slots (one inactive), prefill (chunked and sequential) of
// T = 1, 5, 64, 150 tokens from zero and non-zero states, and a prefill-then-decode pipeline.
// GVA throughout (nk = 2, nv = 4). Tolerance: f32 kernels vs double, 1e-4 of the largest magnitude.
#include "kernels/gdn.h"

#include <cmath>

#include "kernel_test_util.h"

namespace ewgpu::kernels {
namespace {

using namespace testing;

constexpr double kTol = 1e-4;

// ---- CPU reference ----------------------------------------------------------------------------------------

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

// Conv + SiLU + split + L2 norms + gates for `T` consecutive tokens of one sequence.
// proj [T, projWidth]; w [C, ks]; cstate [C, ks-1] in/out. Returns prep [T, prepWidth].
std::vector<double> refConvPrep(const GdnDims& d, const float* proj, uint32_t T, const std::vector<float>& w,
                                const std::vector<float>& a_log, const std::vector<float>& dt_bias,
                                std::vector<double>& cstate) {
  const uint32_t C = d.convChannels(), P = d.projWidth(), W = d.prepWidth(), h = d.ks - 1;
  std::vector<double> prep((size_t)T * W);
  for (uint32_t t = 0; t < T; ++t) {
    double* row = &prep[(size_t)t * W];
    for (uint32_t c = 0; c < C; ++c) {
      double acc = w[c * d.ks + h] * (double)proj[(size_t)t * P + c];
      for (uint32_t j = 0; j < h; ++j) acc += w[c * d.ks + j] * cstate[c * h + j];
      row[c] = acc * sigmoid(acc);
      for (uint32_t j = 0; j + 1 < h; ++j) cstate[c * h + j] = cstate[c * h + j + 1];
      cstate[c * h + h - 1] = proj[(size_t)t * P + c];
    }
    for (uint32_t head = 0; head < 2 * d.nk; ++head) {
      double ss = 0;
      for (uint32_t i = 0; i < d.kd; ++i) ss += row[head * d.kd + i] * row[head * d.kd + i];
      double f = 1.0 / std::sqrt(ss + 1e-6) * (head < d.nk ? 1.0 / std::sqrt((double)d.kd) : 1.0);
      for (uint32_t i = 0; i < d.kd; ++i) row[head * d.kd + i] *= f;
    }
    for (uint32_t j = 0; j < d.nv; ++j) {
      const float* pr = proj + (size_t)t * P + C + d.nv * d.vd;
      row[C + j] = sigmoid(pr[j]);
      row[C + d.nv + j] = -std::exp((double)a_log[j]) * softplus((double)pr[d.nv + j] + dt_bias[j]);
    }
  }
  return prep;
}

// One recurrence step + gated norm for one token. prep row [prepWidth]; z [nv*vd]; S [nv, kd, vd] in/out;
// out [nv*vd].
void refStep(const GdnDims& d, const float* prep, const float* z, const std::vector<float>& norm_w, double* S,
             double* out) {
  const uint32_t C = d.convChannels();
  for (uint32_t j = 0; j < d.nv; ++j) {
    const uint32_t kh = j / (d.nv / d.nk);
    const float* q = prep + kh * d.kd;
    const float* k = prep + (d.nk + kh) * d.kd;
    const float* v = prep + 2 * d.nk * d.kd + j * d.vd;
    const double beta = prep[C + j], alpha = std::exp((double)prep[C + d.nv + j]);
    double* s = S + (size_t)j * d.kd * d.vd;
    std::vector<double> o(d.vd, 0.0);
    for (uint32_t n = 0; n < d.vd; ++n) {
      double m = 0;
      for (uint32_t i = 0; i < d.kd; ++i) {
        s[i * d.vd + n] *= alpha;
        m += s[i * d.vd + n] * k[i];
      }
      const double delta = beta * (v[n] - m);
      for (uint32_t i = 0; i < d.kd; ++i) {
        s[i * d.vd + n] += k[i] * delta;
        o[n] += s[i * d.vd + n] * q[i];
      }
    }
    double ss = 0;
    for (double x : o) ss += x * x;
    const double r = 1.0 / std::sqrt(ss / d.vd + d.eps);
    for (uint32_t n = 0; n < d.vd; ++n) {
      const double zz = z[j * d.vd + n];
      out[j * d.vd + n] = norm_w[n] * o[n] * r * zz * sigmoid(zz);
    }
  }
}

// download() after waiting for the queue with the long finish() timeout: Readback::wait gives up after 1 s of
// GPU time, which a loaded 2-core machine running SwiftShader can exceed.
template <class T>
std::vector<T> fetch(const gpu::Buffer& b, size_t n) {
  Status done = ctx().finish();
  EXPECT_TRUE(done.ok()) << done.error().toString();
  return download<T>(b, n);
}

// ---- random inputs ----------------------------------------------------------------------------------------

std::vector<float> randn(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Prepared rows as the conv kernel writes them: q/k L2-normalised (q scaled), v, beta in (0,1), g <= 0.
std::vector<float> randomPrep(const GdnDims& d, uint32_t rows, std::mt19937& rng) {
  const uint32_t C = d.convChannels(), W = d.prepWidth();
  std::vector<float> p = randn((size_t)rows * W, rng);
  std::uniform_real_distribution<float> u01(0.f, 1.f);
  for (uint32_t t = 0; t < rows; ++t) {
    float* row = &p[(size_t)t * W];
    for (uint32_t h = 0; h < 2 * d.nk; ++h) {
      double ss = 0;
      for (uint32_t i = 0; i < d.kd; ++i) ss += (double)row[h * d.kd + i] * row[h * d.kd + i];
      const double f = 1.0 / std::sqrt(ss + 1e-6) * (h < d.nk ? 1.0 / std::sqrt((double)d.kd) : 1.0);
      for (uint32_t i = 0; i < d.kd; ++i) row[h * d.kd + i] = (float)(row[h * d.kd + i] * f);
    }
    for (uint32_t j = 0; j < d.nv; ++j) {
      row[C + j] = u01(rng);
      // mostly mild decay, sometimes strong (exercises underflow of exp(Γ) inside a chunk)
      row[C + d.nv + j] = u01(rng) < 0.1f ? -8.f * u01(rng) : -0.3f * u01(rng);
    }
  }
  return p;
}

std::vector<uint32_t> rowsBuffer(const std::vector<uint32_t>& slots, const std::vector<uint32_t>& active) {
  std::vector<uint32_t> r(slots.size() * 8, 0);
  for (size_t b = 0; b < slots.size(); ++b) {
    r[b * 8 + 0] = slots[b];
    r[b * 8 + 1] = 17;  // pos: unused by these kernels
    r[b * 8 + 2] = active[b];
  }
  return r;
}

std::vector<double> toDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

struct Weights {
  std::vector<float> conv_w, a_log, dt_bias, norm_w;
};

Weights randomWeights(const GdnDims& d, std::mt19937& rng) {
  Weights w;
  w.conv_w = randn((size_t)d.convChannels() * d.ks, rng, 0.5f);
  std::uniform_real_distribution<float> ua(std::log(0.01f), std::log(16.f));
  w.a_log.resize(d.nv);
  for (auto& x : w.a_log) x = ua(rng);
  w.dt_bias = randn(d.nv, rng);
  w.norm_w = randn(d.vd, rng, 0.3f);
  for (auto& x : w.norm_w) x += 1.0f;
  return w;
}

TEST(GdnDims, RejectsShapesTheKernelsCannotRun) {
  EXPECT_TRUE(GdnDims({.nk = 2, .nv = 4, .kd = 16, .vd = 16}).validate().ok());
  for (GdnDims d :
       {GdnDims{.nk = 3, .nv = 4, .kd = 16, .vd = 16}, GdnDims{.nk = 2, .nv = 4, .kd = 512, .vd = 16},
        GdnDims{.nk = 2, .nv = 4, .kd = 16, .vd = 16, .ks = 1}, GdnDims{.nk = 0, .nv = 4, .kd = 16, .vd = 16}}) {
    Status s = d.validate();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::kBadRequest);
  }
  gpu::Buffer any = upload(std::vector<float>(16, 0.f));
  auto op = GdnRecurrentOp::create(ctx(), {.nk = 2, .nv = 4, .kd = 16, .vd = 16},
                                   {{&any}, {&any}, {&any}, {&any}, {&any}, {&any}}, /*ksplit=*/3);
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.error().code, ErrorCode::kBadRequest);
}

// ---- conv + prep ------------------------------------------------------------------------------------------

TEST(GdnConv, DecodeBatchWithSlotsAndAnInactiveRow) {
  const GdnDims d{.nk = 2, .nv = 4, .kd = 16, .vd = 16};
  std::mt19937 rng(11);
  const uint32_t B = 3, slots = 4, C = d.convChannels();
  Weights w = randomWeights(d, rng);
  std::vector<float> proj = randn((size_t)B * d.projWidth(), rng, 2.0f);
  proj[(size_t)0 * d.projWidth() + C + d.nv * d.vd + d.nv] = 30.f;  // a + dt_bias above the softplus threshold
  std::vector<float> cstate = randn(slots * d.convStateFloats(), rng);
  const std::vector<uint32_t> slot = {2, 0, 3}, active = {1, 0, 1};
  gpu::Buffer bproj = upload(proj), bw = upload(w.conv_w), bal = upload(w.a_log), bdt = upload(w.dt_bias);
  gpu::Buffer brows = upload(rowsBuffer(slot, active)), bcs = upload(cstate);
  gpu::Buffer bprep = poisoned((size_t)B * d.prepWidth());
  auto op = GdnConvOp::create(ctx(), d, false, {{&bproj}, {&bw}, {&bal}, {&bdt}, {&brows}, {&bcs}, {&bprep}});
  ASSERT_TRUE(op.ok()) << op.error().toString();
  gpu::Recorder rec(ctx());
  op->record(rec, B);
  ASSERT_TRUE(rec.submit().ok());

  std::vector<double> want_state = toDouble(cstate), want_prep;
  std::vector<float> got_prep = fetch<float>(bprep, (size_t)B * d.prepWidth()), got_active;
  for (uint32_t b = 0; b < B; ++b) {
    if (!active[b]) continue;
    std::vector<double> st(want_state.begin() + slot[b] * d.convStateFloats(),
                           want_state.begin() + (slot[b] + 1) * d.convStateFloats());
    auto p = refConvPrep(d, &proj[(size_t)b * d.projWidth()], 1, w.conv_w, w.a_log, w.dt_bias, st);
    std::copy(st.begin(), st.end(), want_state.begin() + slot[b] * d.convStateFloats());
    want_prep.insert(want_prep.end(), p.begin(), p.end());
    got_active.insert(got_active.end(), got_prep.begin() + (size_t)b * d.prepWidth(),
                      got_prep.begin() + (size_t)(b + 1) * d.prepWidth());
  }
  expectClose(got_active, want_prep, kTol, "prep");
  // Slot 0 belongs to the inactive row and slot 1 to nobody: both must be bit-identical to the input.
  std::vector<float> got_state = fetch<float>(bcs, cstate.size());
  expectClose(got_state, want_state, 1e-6, "conv state");
  for (uint32_t s : {0u, 1u})
    for (uint64_t i = 0; i < d.convStateFloats(); ++i)
      ASSERT_EQ(got_state[s * d.convStateFloats() + i], cstate[s * d.convStateFloats() + i]) << "slot " << s;
}

void runConvPrefill(uint32_t T, bool fresh, uint32_t seed) {
  const GdnDims d{.nk = 2, .nv = 4, .kd = 16, .vd = 16};
  std::mt19937 rng(seed);
  const uint32_t slots = 3, slot = 1;
  Weights w = randomWeights(d, rng);
  std::vector<float> proj = randn((size_t)T * d.projWidth(), rng, 2.0f);
  std::vector<float> cstate = randn(slots * d.convStateFloats(), rng);
  if (fresh)
    std::fill(cstate.begin() + slot * d.convStateFloats(), cstate.begin() + (slot + 1) * d.convStateFloats(), 0.f);
  std::vector<uint32_t> meta = {T, slot, 0, 0};
  gpu::Buffer bproj = upload(proj), bw = upload(w.conv_w), bal = upload(w.a_log), bdt = upload(w.dt_bias);
  gpu::Buffer bmeta = upload(meta), bcs = upload(cstate), bprep = poisoned((size_t)T * d.prepWidth());
  auto op = GdnConvOp::create(ctx(), d, true, {{&bproj}, {&bw}, {&bal}, {&bdt}, {&bmeta}, {&bcs}, {&bprep}});
  ASSERT_TRUE(op.ok()) << op.error().toString();
  EXPECT_EQ(op->dispatchCount(), 2u);
  gpu::Recorder rec(ctx());
  op->record(rec, T);
  ASSERT_TRUE(rec.submit().ok());

  std::vector<double> want_state = toDouble(cstate);
  std::vector<double> st(want_state.begin() + slot * d.convStateFloats(),
                         want_state.begin() + (slot + 1) * d.convStateFloats());
  auto want_prep = refConvPrep(d, proj.data(), T, w.conv_w, w.a_log, w.dt_bias, st);
  std::copy(st.begin(), st.end(), want_state.begin() + slot * d.convStateFloats());
  expectClose(fetch<float>(bprep, want_prep.size()), want_prep, kTol, "prep");
  expectClose(fetch<float>(bcs, cstate.size()), want_state, 1e-6, "conv state");
}

TEST(GdnConv, PrefillOneToken) { runConvPrefill(1, false, 21); }
TEST(GdnConv, PrefillTwoTokensFresh) { runConvPrefill(2, true, 22); }
TEST(GdnConv, PrefillContinuation) { runConvPrefill(5, false, 23); }
TEST(GdnConv, PrefillLong) { runConvPrefill(70, false, 24); }

// ---- decode recurrence ------------------------------------------------------------------------------------

void runDecode(const GdnDims& d, uint32_t ksplit, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t B = 3, slots = 4, steps = 4;
  Weights w = randomWeights(d, rng);
  std::vector<float> state = randn(slots * d.stateFloats(), rng, 0.5f);
  const std::vector<uint32_t> slot = {3, 0, 1};
  gpu::Buffer bstate = upload(state), bnw = upload(w.norm_w);
  gpu::Buffer brows = upload(rowsBuffer(slot, {1, 1, 1}));
  gpu::Buffer bprep = poisoned((size_t)B * d.prepWidth()), bproj = poisoned((size_t)B * d.projWidth());
  gpu::Buffer bout = poisoned((size_t)B * d.outWidth());
  auto op = GdnRecurrentOp::create(ctx(), d, {{&bprep}, {&bproj}, {&bnw}, {&brows}, {&bstate}, {&bout}}, ksplit);
  ASSERT_TRUE(op.ok()) << op.error().toString();
  std::vector<double> want_state = toDouble(state);
  for (uint32_t step = 0; step < steps; ++step) {
    // Step 2 leaves row 1 inactive: its slot (0) must not move.
    std::vector<uint32_t> active = {1, step == 2 ? 0u : 1u, 1};
    std::vector<float> prep = randomPrep(d, B, rng), proj = randn((size_t)B * d.projWidth(), rng);
    ctx().write(bprep, 0, prep.data(), prep.size() * 4);
    ctx().write(bproj, 0, proj.data(), proj.size() * 4);
    auto rows = rowsBuffer(slot, active);
    ctx().write(brows, 0, rows.data(), rows.size() * 4);
    std::vector<uint32_t> poison((size_t)B * d.outWidth(), 0x7FC00000u);
    ctx().write(bout, 0, poison.data(), poison.size() * 4);
    gpu::Recorder rec(ctx());
    op->record(rec, B);
    ASSERT_TRUE(rec.submit().ok());
    std::vector<double> want_out;
    std::vector<float> got_out = fetch<float>(bout, (size_t)B * d.outWidth()), got_active;
    for (uint32_t b = 0; b < B; ++b) {
      if (!active[b]) continue;
      std::vector<double> o(d.outWidth());
      refStep(d, &prep[(size_t)b * d.prepWidth()], &proj[(size_t)b * d.projWidth() + d.convChannels()], w.norm_w,
              &want_state[slot[b] * d.stateFloats()], o.data());
      want_out.insert(want_out.end(), o.begin(), o.end());
      got_active.insert(got_active.end(), got_out.begin() + (size_t)b * d.outWidth(),
                        got_out.begin() + (size_t)(b + 1) * d.outWidth());
    }
    expectClose(got_active, want_out, kTol, "decode out");
    std::vector<float> got_state = fetch<float>(bstate, state.size());
    expectClose(got_state, want_state, kTol, "decode state");
    for (uint64_t i = 0; i < d.stateFloats(); ++i)  // slot 2 is nobody's
      ASSERT_EQ(got_state[2 * d.stateFloats() + i], state[2 * d.stateFloats() + i]);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) return;
  }
}

TEST(GdnRecurrent, DecodeStepsGvaAutoSplit) { runDecode({.nk = 2, .nv = 4, .kd = 16, .vd = 16}, 0, 31); }
TEST(GdnRecurrent, DecodeStepsGvaOneInvocationPerColumn) { runDecode({.nk = 2, .nv = 4, .kd = 16, .vd = 16}, 1, 32); }
TEST(GdnRecurrent, DecodeStepsOddDims) { runDecode({.nk = 1, .nv = 3, .kd = 24, .vd = 20}, 0, 33); }
TEST(GdnRecurrent, DecodeStepsHeadDim128) { runDecode({.nk = 2, .nv = 4, .kd = 128, .vd = 128}, 0, 34); }

// ---- prefill ----------------------------------------------------------------------------------------------

void runPrefill(const GdnDims& d, GdnPrefillAlgo algo, uint32_t T, bool fresh, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t slots = 3, slot = 2, max_tokens = 160;
  Weights w = randomWeights(d, rng);
  std::vector<float> state = randn(slots * d.stateFloats(), rng, 0.5f);
  if (fresh) std::fill(state.begin() + slot * d.stateFloats(), state.begin() + (slot + 1) * d.stateFloats(), 0.f);
  std::vector<float> prep = randomPrep(d, T, rng), proj = randn((size_t)T * d.projWidth(), rng);
  std::vector<uint32_t> meta = {T, slot, 0, 0};
  gpu::Buffer bstate = upload(state), bnw = upload(w.norm_w), bmeta = upload(meta);
  gpu::Buffer bprep = upload(prep), bproj = upload(proj), bout = poisoned((size_t)max_tokens * d.outWidth());
  auto op =
      GdnPrefillOp::create(ctx(), d, max_tokens, {{&bprep}, {&bproj}, {&bnw}, {&bmeta}, {&bstate}, {&bout}}, algo);
  ASSERT_TRUE(op.ok()) << op.error().toString();
  gpu::Recorder rec(ctx());
  op->record(rec, T);
  ASSERT_TRUE(rec.submit().ok());

  std::vector<double> want_state = toDouble(state), want_out((size_t)T * d.outWidth());
  for (uint32_t t = 0; t < T; ++t)
    refStep(d, &prep[(size_t)t * d.prepWidth()], &proj[(size_t)t * d.projWidth() + d.convChannels()], w.norm_w,
            &want_state[slot * d.stateFloats()], &want_out[(size_t)t * d.outWidth()]);
  expectClose(fetch<float>(bout, want_out.size()), want_out, kTol, "prefill out");
  expectClose(fetch<float>(bstate, state.size()), want_state, kTol, "prefill state");
}

const GdnDims kSmall{.nk = 2, .nv = 4, .kd = 16, .vd = 16};

TEST(GdnPrefill, ChunkedT1) { runPrefill(kSmall, GdnPrefillAlgo::kChunked, 1, false, 41); }
TEST(GdnPrefill, ChunkedT5Fresh) { runPrefill(kSmall, GdnPrefillAlgo::kChunked, 5, true, 42); }
TEST(GdnPrefill, ChunkedT64) { runPrefill(kSmall, GdnPrefillAlgo::kChunked, 64, false, 43); }
TEST(GdnPrefill, ChunkedT150Fresh) { runPrefill(kSmall, GdnPrefillAlgo::kChunked, 150, true, 44); }
TEST(GdnPrefill, ChunkedT150Continuation) { runPrefill(kSmall, GdnPrefillAlgo::kChunked, 150, false, 45); }
TEST(GdnPrefill, ChunkedOddDims) {
  runPrefill({.nk = 1, .nv = 3, .kd = 24, .vd = 40}, GdnPrefillAlgo::kChunked, 99, false, 46);
}
TEST(GdnPrefill, ChunkedHeadDim128) {
  runPrefill({.nk = 2, .nv = 4, .kd = 128, .vd = 128}, GdnPrefillAlgo::kChunked, 150, false, 47);
}
TEST(GdnPrefill, SequentialT1) { runPrefill(kSmall, GdnPrefillAlgo::kSequential, 1, false, 51); }
TEST(GdnPrefill, SequentialT5) { runPrefill(kSmall, GdnPrefillAlgo::kSequential, 5, true, 52); }
TEST(GdnPrefill, SequentialT64) { runPrefill(kSmall, GdnPrefillAlgo::kSequential, 64, false, 53); }
TEST(GdnPrefill, SequentialT150) { runPrefill(kSmall, GdnPrefillAlgo::kSequential, 150, false, 54); }
// The column scan (GPUs with subgroups): columns past the last (vd 20 and 40 against 16 per workgroup), a state
// column per lane (kd 24), the 2B's head dims.
TEST(GdnPrefill, ColumnsT1) { runPrefill(kSmall, GdnPrefillAlgo::kColumns, 1, false, 61); }
TEST(GdnPrefill, ColumnsT5Fresh) { runPrefill(kSmall, GdnPrefillAlgo::kColumns, 5, true, 62); }
TEST(GdnPrefill, ColumnsT150) { runPrefill(kSmall, GdnPrefillAlgo::kColumns, 150, false, 63); }
TEST(GdnPrefill, ColumnsOddDims) {
  runPrefill({.nk = 1, .nv = 3, .kd = 24, .vd = 40}, GdnPrefillAlgo::kColumns, 99, false, 64);
  runPrefill({.nk = 1, .nv = 3, .kd = 24, .vd = 20}, GdnPrefillAlgo::kColumns, 7, true, 65);
}
TEST(GdnPrefill, ColumnsHeadDim128) {
  runPrefill({.nk = 2, .nv = 4, .kd = 128, .vd = 128}, GdnPrefillAlgo::kColumns, 150, false, 66);
}

// ---- the whole mixer: conv prefill + chunked prefill, then conv decode + recurrent decode ----------------------

TEST(GdnMixer, PrefillThenDecodeMatchesTheRecurrence) {
  const GdnDims d{.nk = 2, .nv = 4, .kd = 16, .vd = 16};
  std::mt19937 rng(61);
  const uint32_t T = 70, slots = 2, slot = 1, max_rows = 80, decode_steps = 3;
  Weights w = randomWeights(d, rng);
  gpu::Buffer bw = upload(w.conv_w), bal = upload(w.a_log), bdt = upload(w.dt_bias), bnw = upload(w.norm_w);
  gpu::Buffer bcs = upload(std::vector<float>(slots * d.convStateFloats(), 0.f));
  gpu::Buffer bst = upload(std::vector<float>(slots * d.stateFloats(), 0.f));
  gpu::Buffer bproj = poisoned((size_t)max_rows * d.projWidth()), bprep = poisoned((size_t)max_rows * d.prepWidth());
  gpu::Buffer bout = poisoned((size_t)max_rows * d.outWidth());
  gpu::Buffer bmeta = upload(std::vector<uint32_t>{T, slot, 0, 0}), brows = upload(rowsBuffer({slot}, {1}));
  auto conv_p = GdnConvOp::create(ctx(), d, true, {{&bproj}, {&bw}, {&bal}, {&bdt}, {&bmeta}, {&bcs}, {&bprep}});
  auto conv_d = GdnConvOp::create(ctx(), d, false, {{&bproj}, {&bw}, {&bal}, {&bdt}, {&brows}, {&bcs}, {&bprep}});
  auto pre = GdnPrefillOp::create(ctx(), d, max_rows, {{&bprep}, {&bproj}, {&bnw}, {&bmeta}, {&bst}, {&bout}});
  auto dec = GdnRecurrentOp::create(ctx(), d, {{&bprep}, {&bproj}, {&bnw}, {&brows}, {&bst}, {&bout}});
  ASSERT_TRUE(conv_p.ok() && conv_d.ok() && pre.ok() && dec.ok());

  std::vector<double> cst(d.convStateFloats(), 0.0), st(d.stateFloats(), 0.0);
  auto reference = [&](const std::vector<float>& proj, uint32_t n) {
    auto prep = refConvPrep(d, proj.data(), n, w.conv_w, w.a_log, w.dt_bias, cst);
    std::vector<float> prepf(prep.begin(), prep.end());
    std::vector<double> out((size_t)n * d.outWidth());
    for (uint32_t t = 0; t < n; ++t)
      refStep(d, &prepf[(size_t)t * d.prepWidth()], &proj[(size_t)t * d.projWidth() + d.convChannels()], w.norm_w,
              st.data(), &out[(size_t)t * d.outWidth()]);
    return out;
  };
  std::vector<float> proj = randn((size_t)T * d.projWidth(), rng);
  ctx().write(bproj, 0, proj.data(), proj.size() * 4);
  gpu::Recorder rec(ctx());
  conv_p->record(rec, T);
  pre->record(rec, T);
  ASSERT_TRUE(rec.submit().ok());
  // prep passes through f32 on the GPU, so the comparison is looser than a single kernel's.
  expectClose(fetch<float>(bout, (size_t)T * d.outWidth()), reference(proj, T), 1e-3, "prefill out");
  for (uint32_t s = 0; s < decode_steps; ++s) {
    proj = randn(d.projWidth(), rng);
    ctx().write(bproj, 0, proj.data(), proj.size() * 4);
    conv_d->record(rec, 1);
    dec->record(rec, 1);
    ASSERT_TRUE(rec.submit().ok());
    expectClose(fetch<float>(bout, d.outWidth()), reference(proj, 1), 1e-3, "decode out");
  }
  std::vector<float> got_st = fetch<float>(bst, slots * d.stateFloats());
  expectClose(std::vector<float>(got_st.begin() + slot * d.stateFloats(), got_st.end()), st, 1e-3, "state");
}

}  // namespace
}  // namespace ewgpu::kernels
