// Wall-clock intervals for timings and load stages.
#pragma once

#include <chrono>

namespace ewgpu {

// Milliseconds from t0 to now on the steady clock.
inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ewgpu
