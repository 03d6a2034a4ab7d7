#include "gpu/device_info.h"

namespace ewgpu {

nlohmann::json DeviceInfo::toJson() const {
  nlohmann::json heaps = nlohmann::json::array();
  for (const auto& h : memory_heaps) heaps.push_back({{"size", h.size}, {"properties", h.properties}});
  nlohmann::json sgm = nlohmann::json::array();
  for (const auto& c : subgroup_matrix_configs)
    sgm.push_back({{"component", c.component}, {"result", c.result}, {"M", c.m}, {"N", c.n}, {"K", c.k}});
  return {
      {"adapter",
       {{"vendor", vendor}, {"architecture", architecture}, {"device", device}, {"description", description},
        {"backend", backend}, {"type", adapter_type}, {"vendor_id", vendor_id}, {"device_id", device_id},
        {"subgroup_min_size", subgroup_min_size}, {"subgroup_max_size", subgroup_max_size}}},
      {"features", {{"shader-f16", shader_f16}, {"subgroups", subgroups}, {"timestamp-query", timestamp_query},
                    {"packed-dot4", packed_dot4}, {"experimental", experimental},
                    {"subgroup-matrix", subgroup_matrix}}},
      {"subgroup_matrix_configs", sgm},
      {"limits",
       {{"maxStorageBufferBindingSize", max_storage_buffer_binding_size}, {"maxBufferSize", max_buffer_size},
        {"maxStorageBuffersPerShaderStage", max_storage_buffers_per_shader_stage},
        {"maxComputeWorkgroupStorageSize", max_compute_workgroup_storage_size},
        {"maxComputeInvocationsPerWorkgroup", max_compute_invocations_per_workgroup},
        {"maxComputeWorkgroupsPerDimension", max_compute_workgroups_per_dimension}}},
      {"memory_heaps", heaps},
      {"toggles", toggles},
  };
}

}  // namespace ewgpu
