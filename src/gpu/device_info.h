// What a WebGPU adapter is and can do, as plain data: the only part of the GPU layer that other layers
// (store: device fit; CLI: probe) see without touching webgpu.h. Filled by gpu::probeAdapter (device.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ewgpu {

struct MemoryHeap {
  uint64_t size = 0;
  uint64_t properties = 0;  // WGPUHeapProperty bits: 1 DeviceLocal, 2 HostVisible, 4 HostCoherent, ...
};

// One shape the adapter's subgroup matrices take: a left matrix of M × K `component` elements times a right one
// of K × N gives an M × N `result` matrix (Dawn's AdapterPropertiesSubgroupMatrixConfigs).
struct SubgroupMatrixConfig {
  std::string component, result;  // "f16", "f32", "u32", "i32"
  uint32_t m = 0, n = 0, k = 0;
};

struct DeviceInfo {
  std::string vendor, architecture, device, description;
  std::string backend;       // "vulkan", "metal", "d3d12", "null", ...
  std::string adapter_type;  // "discrete-gpu", "integrated-gpu", "cpu", "unknown"
  // A CPU adapter (SwiftShader): kernels there prefer fewer workgroups and barriers over parallelism.
  bool cpuAdapter() const { return adapter_type == "cpu"; }
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t subgroup_min_size = 0, subgroup_max_size = 0;
  bool shader_f16 = false;
  bool subgroups = false;
  bool timestamp_query = false;
  // WGSL dot4I8Packed / pack4xI8 (language feature packed_4x8_integer_dot_product; native on GPUs with
  // VK_KHR_shader_integer_dot_product, polyfilled elsewhere).
  bool packed_dot4 = false;
  // Dawn's experimental features were allowed (ContextOptions::experimental), and of them the subgroup
  // matrices (WGSL chromium_experimental_subgroup_matrix) were offered and enabled, with these shapes.
  bool experimental = false;
  bool subgroup_matrix = false;
  std::vector<SubgroupMatrixConfig> subgroup_matrix_configs;
  std::string toggles;       // Dawn device toggles enabled on request (ContextOptions::toggles)
  // Limits the engine depends on (the adapter's maxima; the device is created with them).
  uint64_t max_storage_buffer_binding_size = 0;
  uint64_t max_buffer_size = 0;
  uint32_t max_storage_buffers_per_shader_stage = 0;
  uint32_t max_compute_workgroup_storage_size = 0;
  uint32_t max_compute_invocations_per_workgroup = 0;
  uint32_t max_compute_workgroups_per_dimension = 0;
  std::vector<MemoryHeap> memory_heaps;  // empty where the adapter does not report them

  // Sum of device-local heaps (0 when unknown).
  uint64_t deviceLocalBytes() const {
    uint64_t s = 0;
    for (const auto& h : memory_heaps)
      if (h.properties & 1u) s += h.size;
    return s;
  }
  nlohmann::json toJson() const;
};

}  // namespace ewgpu
