// Benchmark of the Gated DeltaNet kernels at one layer of Qwen3.5-0.8B/2B (nk = nv = 16, kd = vd = 128, ks = 4):
// decode (conv + recurrent step) for batches of 1/4/16 rows, and prefill (conv + chunked, conv + sequential) for
// several prompt lengths. Prints GPU time per call from timestamps (wall time when timestamps are unavailable),
// best of `repeats`. Usage: gdn_bench [--tokens 64,512,2048] [--repeats 5] [--nv 16]
// (EWGPU_ADAPTER=gpu for the hardware adapter). Not a test: it asserts nothing.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/recorder.h"
#include "kernels/gdn.h"

using namespace ewgpu;

namespace {

struct Timing {
  double ms = 0;
  bool gpu = false;
};

// Best time of `repeats` runs of `record` (each run: one recorder, one pass, one submit).
Timing best(gpu::Context& ctx, gpu::Timer* timer, int repeats, const std::function<void(gpu::Recorder&)>& record) {
  Timing t{1e30, timer && timer->available()};
  for (int r = 0; r < repeats; ++r) {
    gpu::Recorder rec(ctx);
    if (t.gpu) rec.setTimer(timer);
    auto t0 = std::chrono::steady_clock::now();
    record(rec);
    if (t.gpu) timer->resolve(rec);
    Status st = rec.submit();
    if (st.ok()) st = ctx.finish();
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.error().toString().c_str());
      std::exit(1);
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (t.gpu) {
      auto ns = timer->readTotalNs(ctx);
      if (ns.ok()) ms = (double)*ns / 1e6;
    }
    t.ms = std::min(t.ms, ms);
  }
  return t;
}

gpu::Buffer randomBuffer(gpu::Context& ctx, size_t floats, std::mt19937& rng, float scale) {
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(std::max<size_t>(floats, 4));
  for (auto& x : v) x = nd(rng);
  auto b = ctx.createBuffer(v.size() * 4, gpu::BufferKind::kStorage, "bench");
  if (!b.ok()) {
    std::fprintf(stderr, "%s\n", b.error().toString().c_str());
    std::exit(1);
  }
  ctx.write(*b, 0, v.data(), v.size() * 4);
  return std::move(*b);
}

template <class T>
T check(Result<T> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.error().toString().c_str());
    std::exit(1);
  }
  return std::move(*r);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> tokens = {64, 512, 2048};
  int repeats = 5;
  kernels::GdnDims d{.nk = 16, .nv = 16, .kd = 128, .vd = 128};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) {
      tokens.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string s; std::getline(ss, s, ',');) tokens.push_back((uint32_t)std::stoul(s));
    } else if (!std::strcmp(argv[i], "--repeats")) {
      repeats = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--nv")) {
      d.nv = (uint32_t)std::atoi(argv[i + 1]);
    }
  }
  auto ctx = check(gpu::Context::create());
  auto timer = gpu::Timer::create(*ctx);
  gpu::Timer* tm = timer.ok() ? timer->get() : nullptr;
  std::printf("adapter: %s (%s)\n", ctx->info().description.c_str(), ctx->info().architecture.c_str());
  std::printf("dims: nk %u nv %u kd %u vd %u ks %u\n", d.nk, d.nv, d.kd, d.vd, d.ks);

  uint32_t max_rows = 16;
  for (uint32_t t : tokens) max_rows = std::max(max_rows, t);
  const uint32_t slots = 16;
  std::mt19937 rng(1);
  gpu::Buffer proj = randomBuffer(*ctx, (size_t)max_rows * d.projWidth(), rng, 1.f);
  gpu::Buffer conv_w = randomBuffer(*ctx, (size_t)d.convChannels() * d.ks, rng, 0.5f);
  gpu::Buffer a_log = randomBuffer(*ctx, d.nv, rng, 0.5f), dt_bias = randomBuffer(*ctx, d.nv, rng, 1.f);
  gpu::Buffer norm_w = randomBuffer(*ctx, d.vd, rng, 1.f);
  gpu::Buffer cstate = randomBuffer(*ctx, slots * d.convStateFloats(), rng, 1.f);
  gpu::Buffer state = randomBuffer(*ctx, slots * d.stateFloats(), rng, 0.1f);
  gpu::Buffer prep = randomBuffer(*ctx, (size_t)max_rows * d.prepWidth(), rng, 1.f);
  gpu::Buffer out = randomBuffer(*ctx, (size_t)max_rows * d.outWidth(), rng, 1.f);
  std::vector<uint32_t> rows_v(16 * 8, 0);
  for (uint32_t b = 0; b < 16; ++b) rows_v[b * 8] = b, rows_v[b * 8 + 2] = 1;
  gpu::Buffer rows = check(ctx->createBuffer(rows_v.size() * 4, gpu::BufferKind::kStorage, "rows"));
  ctx->write(rows, 0, rows_v.data(), rows_v.size() * 4);
  gpu::Buffer meta = check(ctx->createBuffer(16, gpu::BufferKind::kStorage, "meta"));

  auto conv_d = check(kernels::GdnConvOp::create(
      *ctx, d, false, {{&proj}, {&conv_w}, {&a_log}, {&dt_bias}, {&rows}, {&cstate}, {&prep}}));
  auto conv_p = check(kernels::GdnConvOp::create(
      *ctx, d, true, {{&proj}, {&conv_w}, {&a_log}, {&dt_bias}, {&meta}, {&cstate}, {&prep}}));
  auto rec_d =
      check(kernels::GdnRecurrentOp::create(*ctx, d, {{&prep}, {&proj}, {&norm_w}, {&rows}, {&state}, {&out}}));
  auto chunked = check(kernels::GdnPrefillOp::create(
      *ctx, d, max_rows, {{&prep}, {&proj}, {&norm_w}, {&meta}, {&state}, {&out}}, kernels::GdnPrefillAlgo::kChunked));
  auto seq =
      check(kernels::GdnPrefillOp::create(*ctx, d, max_rows, {{&prep}, {&proj}, {&norm_w}, {&meta}, {&state}, {&out}},
                                          kernels::GdnPrefillAlgo::kSequential));
  auto cols_op = kernels::GdnPrefillOp::create(*ctx, d, max_rows, {{&prep}, {&proj}, {&norm_w}, {&meta}, {&state}, {&out}},
                                               kernels::GdnPrefillAlgo::kColumns);
  if (!cols_op.ok()) std::printf("column scan: %s\n", cols_op.error().toString().c_str());

  const char* unit = tm && tm->available() ? "GPU ms" : "wall ms";
  std::printf("\ndecode (one layer, per step; 20 steps per pass on a GPU)\n%-6s %12s %12s %12s\n", "rows", "conv",
              "recurrent", "both");
  const bool cpu = ctx->info().adapter_type == "cpu";
  for (uint32_t b : {1u, 4u, 16u}) {
    const int n = cpu ? 1 : 20;  // SwiftShader: one step (a 30 s queue wait would not cover 20)
    Timing c = best(*ctx, tm, repeats, [&](gpu::Recorder& r) {
      for (int i = 0; i < n; ++i) conv_d.record(r, b);
    });
    Timing s = best(*ctx, tm, repeats, [&](gpu::Recorder& r) {
      for (int i = 0; i < n; ++i) rec_d.record(r, b);
    });
    Timing both = best(*ctx, tm, repeats, [&](gpu::Recorder& r) {
      for (int i = 0; i < n; ++i) {
        conv_d.record(r, b);
        rec_d.record(r, b);
      }
    });
    std::printf("%-6u %12.4f %12.4f %12.4f   (%s)\n", b, c.ms / n, s.ms / n, both.ms / n, unit);
  }
  std::printf("\nprefill (one layer, one sequence)\n%-8s %12s %12s %12s %12s %14s %12s %12s\n", "tokens", "conv",
              "chunked", "sequential", "columns", "chunked tok/s", "seq/chunked", "cols/seq");
  for (uint32_t t : tokens) {
    uint32_t m[4] = {t, 0, 0, 0};
    ctx->write(meta, 0, m, 16);
    Timing c = best(*ctx, tm, repeats, [&](gpu::Recorder& r) { conv_p.record(r, t); });
    Timing ch = best(*ctx, tm, repeats, [&](gpu::Recorder& r) { chunked.record(r, t); });
    Timing sq = best(*ctx, tm, repeats, [&](gpu::Recorder& r) { seq.record(r, t); });
    Timing co{};
    if (cols_op.ok()) co = best(*ctx, tm, repeats, [&](gpu::Recorder& r) { cols_op->record(r, t); });
    std::printf("%-8u %12.4f %12.4f %12.4f %12.4f %14.0f %12.2f %12.2f   (%s)\n", t, c.ms, ch.ms, sq.ms, co.ms,
                t / (ch.ms / 1e3), sq.ms / ch.ms, cols_op.ok() ? co.ms / sq.ms : 0.0, unit);
  }
  return 0;
}
