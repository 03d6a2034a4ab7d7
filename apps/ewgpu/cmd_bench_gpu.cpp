// ewgpu bench gpu [--json] [--bytes N] [--adapter ...]: the seed's WebGPU micro-benchmarks, natively.
#include "command.h"
#include "gpu/microbench.h"

#include <cstdio>
#include <memory>
#include <iostream>

namespace ewgpu::cli {
namespace {

struct BenchGpuFlags {
  bool json = false;
  std::string adapter;
  std::optional<uint64_t> bytes;
  std::optional<uint64_t> upload;
  uint32_t threads = 8;
};

int runUpload(gpu::Context& ctx, const BenchGpuFlags& f) {
  auto r = gpu::runUploadBench(ctx, *f.upload, f.threads);
  if (!r) return reportError(r.error(), f.json);
  if (f.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& p : *r) j.push_back({{"method", p.method}, {"ms", p.ms}, {"GBps", p.gbps}});
    std::cout << nlohmann::json{{"device", ctx.info().device}, {"upload", j}}.dump(2) << "\n";
    return 0;
  }
  std::printf("upload of %.0f MiB from host memory into 64 MiB storage buffers (second of two runs)\n",
              (double)*f.upload / 1048576.0);
  for (const auto& p : *r) std::printf("  %-36s %9.1f ms %7.2f GB/s\n", p.method.c_str(), p.ms, p.gbps);
  return 0;
}

int runBenchGpu(const BenchGpuFlags& f) {
  const bool json = f.json;
  gpu::ContextOptions copts;
  copts.adapter = f.adapter;
  auto ctx = gpu::Context::create(copts);
  if (!ctx) return reportError(ctx.error(), json);
  if (f.upload) return runUpload(**ctx, f);
  gpu::MicrobenchOptions o;
  if (f.bytes) o.read_bytes = *f.bytes;
  auto r = gpu::runMicrobench(**ctx, o);
  if (!r) return reportError(r.error(), json);
  const DeviceInfo& d = (*ctx)->info();
  if (json) {
    nlohmann::json j = r->toJson();
    j["device"] = d.device;
    j["backend"] = d.backend;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("device: %s (%s), timestamps %s\n\n", d.device.c_str(), d.backend.c_str(), r->timestamps ? "yes" : "no");
  std::printf("%-44s %12.2f us\n", "idle submit + wait (median)", r->submit_wait_us);
  std::printf("\nstreaming read of %.0f MiB, vec4 loads, 256 threads/workgroup\n", r->read_bytes / 1048576.0);
  std::printf("  %10s %10s %10s %10s\n", "workgroups", "gpu ms", "wall ms", "GB/s");
  for (const auto& p : r->bandwidth)
    std::printf("  %10u %10.3f %10.3f %10.1f\n", p.workgroups, p.gpu_ms, p.wall_ms, p.gbps);
  std::printf("  best %.1f GB/s\n\n", r->best_gbps);
  std::printf("%-44s %12.3f us\n", "GPU per dependent dispatch, one pass", r->dispatch_in_pass_us);
  std::printf("%-44s %12.3f us  (%.1fx)\n", "GPU per dependent dispatch, one pass each", r->dispatch_pass_each_us,
              r->dispatch_in_pass_us > 0 ? r->dispatch_pass_each_us / r->dispatch_in_pass_us : 0.0);
  std::printf("%-44s %12.3f us\n", "CPU encode per dispatch", r->encode_us);
  return 0;
}

Registration reg{{"bench gpu", "WebGPU micro-benchmarks: submit latency, read bandwidth, dispatch and encode cost",
                  [](CLI::App& app) {
                    auto f = std::make_shared<BenchGpuFlags>();
                    addJsonFlag(app, f->json);
                    addAdapterFlag(app, f->adapter);
                    app.add_option("--bytes", f->bytes, "bytes of the streaming-read test (default: per adapter)")
                        ->check(bounded<uint64_t>(1 << 20, 1ull << 34));
                    app.add_option("--upload", f->upload,
                                   "instead: host-to-GPU upload of this many bytes by each method")
                        ->check(bounded<uint64_t>(64ull << 20, 1ull << 34));
                    app.add_option("--threads", f->threads, "host threads of the parallel upload (default 8)")
                        ->check(bounded<uint32_t>(1, 64));
                    return [f] { return runBenchGpu(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
