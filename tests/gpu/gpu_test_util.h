// Shared fixture for GPU tests: one Context per test binary (SwiftShader here, any adapter elsewhere).
#pragma once

#include "gpu/context.h"

#include <gtest/gtest.h>

namespace ewgpu::gpu::testing {

inline Context& sharedContext() {
  static std::unique_ptr<Context> ctx = [] {
    auto c = Context::create();
    if (!c) {
      ADD_FAILURE() << c.error().toString();
      return std::unique_ptr<Context>();
    }
    return std::move(*c);
  }();
  if (!ctx) std::abort();  // a test binary without a device cannot continue
  return *ctx;
}

}  // namespace ewgpu::gpu::testing
