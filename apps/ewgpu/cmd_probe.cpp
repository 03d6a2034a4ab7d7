// ewgpu probe [--json] [--adapter auto|gpu|swiftshader]: what the WebGPU adapter is and can do.
#include "command.h"
#include "gpu/context.h"

#include <cstdio>
#include <memory>
#include <iostream>

namespace ewgpu::cli {
namespace {

std::string gib(uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", (double)b / (1ull << 30));
  return s;
}

struct ProbeFlags {
  bool json = false;
  std::string adapter;
};

int runProbe(const ProbeFlags& f) {
  const bool json = f.json;
  gpu::ContextOptions opts;
  opts.adapter = f.adapter;
  auto ctx = gpu::Context::create(opts);
  if (!ctx) return reportError(ctx.error(), json);
  const DeviceInfo& d = (*ctx)->info();
  if (json) {
    std::cout << d.toJson().dump(2) << "\n";
    return 0;
  }
  std::printf("adapter   %s (%s)\n", d.device.c_str(), d.description.c_str());
  std::printf("vendor    %s  architecture %s  id %04x:%04x\n", d.vendor.c_str(), d.architecture.c_str(), d.vendor_id,
              d.device_id);
  std::printf("backend   %s  type %s  subgroup size %u..%u\n", d.backend.c_str(), d.adapter_type.c_str(),
              d.subgroup_min_size, d.subgroup_max_size);
  std::printf("features  shader-f16 %s, subgroups %s, timestamp-query %s, WGSL packed dot4 %s\n",
              d.shader_f16 ? "yes" : "no", d.subgroups ? "yes" : "no", d.timestamp_query ? "yes" : "no",
              d.packed_dot4 ? "yes" : "no");
  if (!d.experimental)
    std::printf("          subgroup matrices not asked for (EWGPU_EXPERIMENTAL=1 asks Dawn for them)\n");
  else if (!d.subgroup_matrix)
    std::printf("          subgroup matrices: not offered by this adapter\n");
  for (const auto& c : d.subgroup_matrix_configs)
    std::printf("          subgroup matrix %s %ux%ux%u -> %s\n", c.component.c_str(), c.m, c.n, c.k, c.result.c_str());
  std::printf("limits    maxStorageBufferBindingSize %s, maxBufferSize %s, storage buffers/stage %u,\n",
              gib(d.max_storage_buffer_binding_size).c_str(), gib(d.max_buffer_size).c_str(),
              d.max_storage_buffers_per_shader_stage);
  std::printf("          workgroup storage %u B, invocations/workgroup %u, workgroups/dimension %u\n",
              d.max_compute_workgroup_storage_size, d.max_compute_invocations_per_workgroup,
              d.max_compute_workgroups_per_dimension);
  if (d.memory_heaps.empty()) std::printf("memory    heaps not reported\n");
  for (const auto& h : d.memory_heaps)
    std::printf("memory    heap %s, properties 0x%llx%s\n", gib(h.size).c_str(), (unsigned long long)h.properties,
                (h.properties & 1) ? " (device-local)" : "");
  return 0;
}

Registration reg{{"probe", "show the WebGPU adapter: device, backend, features, limits, memory", [](CLI::App& app) {
                    auto f = std::make_shared<ProbeFlags>();
                    addJsonFlag(app, f->json);
                    addAdapterFlag(app, f->adapter);
                    return [f] { return runProbe(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
