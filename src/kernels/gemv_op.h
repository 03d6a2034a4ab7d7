// Host side of the decode GEMV (src/kernels/gemv.wgsl): one op = one linear layer applied to B activation rows,
// with the fused RMSNorm prologue and residual / SwiGLU epilogues. create() compiles and binds once per weight
// chunk; record() only dispatches.
#pragma once

#include "gpu/context.h"
#include "gpu/recorder.h"
#include "kernels/linear.h"

#include <optional>
#include <string_view>

namespace ewgpu::kernels {

// Precision of x in a q4 GEMV. kInt8: x̂ quantized to int8 per 32-element group (step max|x̂| / 127) and
// multiplied with dot4I8Packed (as llama.cpp's q8_1 activations): far fewer instructions than decoding the codes to
// f32, which bounds the f32 kernel on large GPUs. kInt16: a second int8 digit carries the rounding residual
// (16-bit fixed point per group, error ≤ 1/64516 of the group max), twice the dot products. Both apply where the
// single-row staged fast path does (q4 formats, batch 1); elsewhere x stays f32. kAuto: kInt16 on GPU adapters with
// WGSL's packed dot product, f32 on CPU adapters; EWGPU_GEMV_Q8=0 / 1 / 2 (f32 / int8 / int16) overrides kAuto.
enum class Activations { kAuto, kF32, kInt8, kInt16 };
// "auto", "f32", "int8", "int16" (the CLI's --activations values) and back; nullopt for any other name.
std::string_view activationsName(Activations a);
std::optional<Activations> activationsFromName(std::string_view name);

struct GemvConfig {
  Epilogue epi = Epilogue::kStore;
  uint32_t batch = 1;               // activation rows, 1..8
  const gpu::Buffer* norm = nullptr;  // RMSNorm weight f32 [K] for the prologue, or none
  float eps = 1e-6f;
  uint32_t x_stride = 0, y_stride = 0;  // floats per batch row (0: K and the output width)
  uint32_t tpr = 0;                 // threads per row (0: device default)
  uint32_t rpt = 0;                 // rows per thread group (0: 4 / batch, at least 1)
  uint32_t ksplit = 0;              // thread groups splitting K per row (0: by matrix size)
  Activations act = Activations::kAuto;
};

class GemvOp {
 public:
  static Result<GemvOp> create(gpu::Context& ctx, const LinearWeights& w, const gpu::Buffer& x, const gpu::Buffer& y,
                               const GemvConfig& cfg);
  void record(gpu::Recorder& rec) const;
  uint32_t dispatches() const { return (uint32_t)parts_.size(); }

 private:
  struct Part {
    const gpu::Kernel* kernel = nullptr;
    gpu::BindGroup bg;
    uint32_t gx = 1, gy = 1;
  };
  std::vector<Part> parts_;
};

}  // namespace ewgpu::kernels
