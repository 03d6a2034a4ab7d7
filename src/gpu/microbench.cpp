#include "gpu/microbench.h"

#include "base/clock.h"
#include "gpu/recorder.h"
#include "gpu/upload.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ewgpu::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Runs `record` once into a fresh recorder with timestamps and returns {gpu_ms, wall_ms}.
template <class F>
Result<std::pair<double, double>> timed(Context& ctx, Timer* timer, F&& record) {
  Recorder rec(ctx, 0);
  if (timer && timer->available()) rec.setTimer(timer);
  auto t0 = Clock::now();
  record(rec);
  if (timer) timer->resolve(rec);
  EWGPU_TRY(rec.submit());
  EWGPU_TRY(ctx.finish());
  double wall = msSince(t0);
  double gpu = 0;
  if (timer && timer->available()) {
    auto ns = timer->readTotalNs(ctx);
    if (!ns) return std::move(ns).error();
    gpu = (double)*ns / 1e6;
  }
  return std::make_pair(gpu, wall);
}

}  // namespace

nlohmann::json MicrobenchResult::toJson() const {
  nlohmann::json bw = nlohmann::json::array();
  for (const auto& p : bandwidth)
    bw.push_back({{"workgroups", p.workgroups}, {"gpu_ms", p.gpu_ms}, {"wall_ms", p.wall_ms}, {"GBps", p.gbps}});
  return {{"submit_wait_us", submit_wait_us},   {"read_bytes", read_bytes},
          {"bandwidth", bw},                    {"best_GBps", best_gbps},
          {"dispatch_in_pass_us", dispatch_in_pass_us}, {"dispatch_pass_each_us", dispatch_pass_each_us},
          {"encode_us", encode_us},             {"timestamps", timestamps}};
}

Result<MicrobenchResult> runMicrobench(Context& ctx, const MicrobenchOptions& opts) {
  MicrobenchResult r;
  auto timer_r = Timer::create(ctx, 2048);
  if (!timer_r) return std::move(timer_r).error();
  Timer* timer = timer_r->get();
  r.timestamps = timer->available();

  // 1. Idle submit + wait: a command buffer holding one 4-byte clear.
  {
    auto tiny = ctx.createBuffer(4, BufferKind::kStorage, "bench-tiny");
    if (!tiny) return std::move(tiny).error();
    std::vector<double> v;
    for (uint32_t i = 0; i < 50; ++i) {
      Recorder rec(ctx, 0);
      auto t0 = Clock::now();
      rec.clear(*tiny, 0, 4);
      EWGPU_TRY(rec.submit());
      EWGPU_TRY(ctx.finish());
      v.push_back(msSince(t0) * 1000);
    }
    r.submit_wait_us = median(v);
  }

  // 2. Streaming read, swept over workgroup counts.
  bool cpu = ctx.info().cpuAdapter();
  uint64_t bytes = opts.read_bytes ? opts.read_bytes : (cpu ? (64ull << 20) : (1ull << 30));
  bytes = std::min<uint64_t>(bytes, ctx.limits().maxStorageBufferBindingSize) & ~uint64_t(15);
  r.read_bytes = bytes;
  auto src = ctx.createBuffer(bytes, BufferKind::kStorage, "bench-src");
  if (!src) return std::move(src).error();
  {
    std::vector<uint32_t> pattern(1 << 16);  // non-zero data (zeros can read faster than real data)
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = (uint32_t)(i * 2654435761u);
    for (uint64_t off = 0; off < bytes; off += pattern.size() * 4)
      ctx.write(*src, off, pattern.data(), std::min<uint64_t>(pattern.size() * 4, bytes - off));
  }
  std::vector<uint32_t> sweep = opts.workgroups;
  if (sweep.empty()) sweep = cpu ? std::vector<uint32_t>{4, 16, 64} : std::vector<uint32_t>{132, 528, 1056, 2112, 4224, 8448, 16896};
  uint32_t max_wg = *std::max_element(sweep.begin(), sweep.end());
  auto sink = ctx.createBuffer((uint64_t)max_wg * 256 * 4, BufferKind::kStorage, "bench-sink");
  if (!sink) return std::move(sink).error();
  auto k = ctx.kernel("bench_stream_read", {{"WG", 256}});
  if (!k) return std::move(k).error();
  auto bg = ctx.bindGroup(**k, {{&*src}, {&*sink}});
  if (!bg) return std::move(bg).error();
  for (uint32_t wg : sweep) {
    wg = std::min(wg, ctx.limits().maxComputeWorkgroupsPerDimension);
    std::vector<double> g, w;
    for (uint32_t rep = 0; rep < opts.repeats + 1; ++rep) {
      auto t = timed(ctx, timer, [&](Recorder& rec) { rec.dispatch(**k, *bg, wg); });
      if (!t) return std::move(t).error();
      if (rep == 0) continue;  // warm-up
      g.push_back(t->first);
      w.push_back(t->second);
    }
    BandwidthPoint p{wg, median(g), median(w), 0};
    double ms = p.gpu_ms > 0 ? p.gpu_ms : p.wall_ms;
    p.gbps = (double)bytes / (ms * 1e6);
    r.best_gbps = std::max(r.best_gbps, p.gbps);
    r.bandwidth.push_back(p);
  }
  src->reset();

  // 3. Dependent dispatches: in one pass, and one pass each.
  auto dk = ctx.kernel("bench_dependent");
  if (!dk) return std::move(dk).error();
  auto counter = ctx.createBuffer(4, BufferKind::kStorage, "bench-counter");
  if (!counter) return std::move(counter).error();
  auto scratch = ctx.createBuffer(4, BufferKind::kStorage, "bench-scratch");
  if (!scratch) return std::move(scratch).error();
  auto dbg = ctx.bindGroup(**dk, {{&*counter}});
  if (!dbg) return std::move(dbg).error();
  const uint32_t n = std::min<uint32_t>(opts.dispatches, 2000);  // one pass each must fit the query set
  for (int mode = 0; mode < 2; ++mode) {
    std::vector<double> per;
    for (uint32_t rep = 0; rep < opts.repeats + 1; ++rep) {
      auto t = timed(ctx, timer, [&](Recorder& rec) {
        for (uint32_t i = 0; i < n; ++i) {
          rec.dispatch(**dk, *dbg, 1);
          if (mode == 1) rec.copy(*counter, 0, *scratch, 0, 4);  // a copy ends the pass
        }
      });
      if (!t) return std::move(t).error();
      if (rep == 0) continue;
      double ms = t->first > 0 ? t->first : t->second;
      per.push_back(ms * 1000 / n);
    }
    (mode == 0 ? r.dispatch_in_pass_us : r.dispatch_pass_each_us) = median(per);
  }

  // 4. CPU encode cost per dispatch.
  {
    std::vector<double> per;
    for (uint32_t rep = 0; rep < opts.repeats; ++rep) {
      Recorder rec(ctx, 0);
      auto t0 = Clock::now();
      for (uint32_t i = 0; i < n; ++i) rec.dispatch(**dk, *dbg, 1);
      per.push_back(msSince(t0) * 1000 / n);
      EWGPU_TRY(rec.submit());
    }
    EWGPU_TRY(ctx.finish());
    r.encode_us = median(per);
  }
  return r;
}

Result<std::vector<UploadPoint>> runUploadBench(Context& ctx, uint64_t bytes, uint32_t threads) {
  constexpr uint64_t kBuf = 64ull << 20, kRing = 16ull << 20;
  bytes = std::max<uint64_t>(kBuf, bytes / kBuf * kBuf);
  const size_t nbuf = (size_t)(bytes / kBuf);
  std::vector<uint8_t> src(bytes);
  for (size_t i = 0; i < src.size(); i += 4) {
    const uint32_t v = (uint32_t)(i * 2654435761u);
    std::memcpy(&src[i], &v, 4);
  }
  threads = std::max<uint32_t>(1, threads);
  std::vector<UploadPoint> out;
  auto run = [&](const std::string& method, const auto& body) -> Status {
    double ms = 0;
    for (int rep = 0; rep < 2; ++rep) {
      std::vector<Buffer> dst;
      const auto t0 = Clock::now();
      EWGPU_TRY(body(dst));
      EWGPU_TRY(ctx.finish());
      ms = msSince(t0);
    }
    out.push_back({method, ms, (double)bytes / (ms * 1e6)});
    return {};
  };
  auto queued = [&](uint64_t piece) {
    return [&, piece](std::vector<Buffer>& dst) -> Status {
      for (size_t b = 0; b < nbuf; ++b) {
        auto buf = ctx.createBuffer(kBuf, BufferKind::kStorage, "upload-bench");
        if (!buf) return std::move(buf).error();
        for (uint64_t o = 0; o < kBuf; o += piece) ctx.write(*buf, o, src.data() + b * kBuf + o, piece);
        dst.push_back(std::move(*buf));
      }
      return {};
    };
  };
  auto mapped = [&](uint32_t t) {
    return [&, t](std::vector<Buffer>& dst) -> Status {
      std::vector<uint8_t*> ptr(nbuf);
      for (size_t b = 0; b < nbuf; ++b) {
        auto buf = ctx.createMapped(kBuf, BufferKind::kStorage, "upload-bench", &ptr[b]);
        if (!buf) return std::move(buf).error();
        dst.push_back(std::move(*buf));
      }
      std::vector<HostCopy> copies;
      for (size_t b = 0; b < nbuf; ++b) copies.push_back({src.data() + b * kBuf, ptr[b], (size_t)kBuf});
      copyPieces(copies, t);
      for (auto& b : dst) ctx.unmap(b);
      return {};
    };
  };
  auto ring = [&](uint32_t t) {
    return [&, t](std::vector<Buffer>& dst) -> Status {
      std::vector<UploadRange> ranges;
      for (size_t b = 0; b < nbuf; ++b) {
        auto buf = ctx.createBuffer(kBuf, BufferKind::kStorage, "upload-bench");
        if (!buf) return std::move(buf).error();
        ranges.push_back({src.data() + b * kBuf, buf->handle(), 0, kBuf});
        dst.push_back(std::move(*buf));
      }
      RingOptions o;
      o.threads = t;
      return uploadThroughRing(ctx, ranges, o);
    };
  };
  EWGPU_TRY(run("queue writes, 8 MiB pieces", queued(8ull << 20)));
  EWGPU_TRY(run("queue writes, 1 MiB pieces", queued(1ull << 20)));
  EWGPU_TRY(run("mapped at creation, 1 thread", mapped(1)));
  EWGPU_TRY(run("mapped at creation, " + std::to_string(threads) + " threads", mapped(threads)));
  EWGPU_TRY(run("staging ring 4 x 16 MiB, 1 thread", ring(1)));
  EWGPU_TRY(run("staging ring 4 x 16 MiB, 4 threads", ring(4)));
  EWGPU_TRY(run("staging ring, " + std::to_string(threads) + " threads", ring(threads)));
  return out;
}

}  // namespace ewgpu::gpu
