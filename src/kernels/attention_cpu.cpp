#include "kernels/attention_cpu.h"

#include <cstdlib>
#include <string>

namespace ewgpu::kernels {

bool attentionCpuServes(const DeviceInfo& d, uint32_t split) {
  if (const char* e = std::getenv("EWGPU_ATTN_CPU"); e && std::string(e) == "0") return false;
  return d.cpuAdapter() && split == 1;
}

}  // namespace ewgpu::kernels
