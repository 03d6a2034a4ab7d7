// Tiny random models (real tokenizer, every architecture and quantization) loaded into a GPU Forward, and the
// CPU reference of the same folder.
#pragma once

#include "gpu/context.h"
#include "gpu/readback.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"
#include "model/reference_model.h"
#include "model/tiny_model.h"
#include "runtime/forward.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace ewgpu::testing {

inline gpu::Context& gpuContext() {
  static std::unique_ptr<gpu::Context> c = [] {
    auto r = gpu::Context::create();
    if (!r) {
      ADD_FAILURE() << r.error().toString();
      std::abort();
    }
    return std::move(*r);
  }();
  return *c;
}

// Reads n floats of a GPU buffer (blocking; tests only). Zeros and a test failure if the readback fails.
inline std::vector<float> readFloats(const gpu::Buffer& b, size_t n) {
  auto rb = gpu::Readback::create(gpuContext(), n * 4);
  gpu::Recorder rec(gpuContext());
  rb->record(rec, b, 0, n * 4);
  EXPECT_TRUE(rec.submit().ok());
  rb->requestMap(gpuContext());
  Status w = rb->wait(gpuContext());
  EXPECT_TRUE(w.ok()) << w.error().toString();
  std::vector<float> v(n);
  if (w.ok()) std::memcpy(v.data(), rb->data().data(), n * 4);
  rb->unmap();
  return v;
}

// A real byte-level BPE tokenizer.json with 256 tokens (written by tools/qwen35_transformers_reference.py for the
// fixtures): tiny models get a 256-row vocabulary, which keeps SwiftShader runs short.
inline std::string tokenizerPath() {
  return std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/qwen3_5_tiny/q0f32/tokenizer.json";
}

// Writes (once per process) a tiny folder for arch × quant and returns its path.
inline std::string tinyFolder(Arch arch, Quant quant, uint64_t seed = 11) {
  std::string dir = ::testing::TempDir() + "/ewgpu-tiny-" + std::string(archName(arch)) + "-" +
                    std::string(quantName(quant)) + "-" + std::to_string(seed);
  if (!std::filesystem::exists(dir + "/mlc-chat-config.json")) {
    TinyModelSpec spec;
    spec.arch = arch;
    spec.quant = quant;
    spec.seed = seed;
    spec.tokenizer_path = tokenizerPath();
    Status s = writeTinyModel(spec, dir);
    EXPECT_TRUE(s.ok()) << s.error().toString();
  }
  return dir;
}

struct Engine {
  ModelFolder folder;
  std::unique_ptr<GpuModel> model;
  std::unique_ptr<Forward> fwd;
};

// The prefill GEMMs keep f32 x unless `fo` names another precision: the tests' tolerances against the references
// are those of f32 x (on GPUs ForwardOptions' kAuto would quantize it; forward_test checks that path on its own).
inline Engine loadEngine(const std::string& dir, ForwardOptions fo, uint64_t max_chunk_bytes = 256 << 10) {
  if (fo.prefill_activations == kernels::Activations::kAuto) fo.prefill_activations = kernels::Activations::kF32;
  auto f = ModelFolder::open(dir);
  EXPECT_TRUE(f.ok()) << f.error().toString();
  Engine e{std::move(*f), nullptr, nullptr};
  auto m = uploadModel(gpuContext(), e.folder, {max_chunk_bytes});
  EXPECT_TRUE(m.ok()) << m.error().toString();
  e.model = std::move(*m);
  auto fw = Forward::create(gpuContext(), *e.model, fo);
  EXPECT_TRUE(fw.ok()) << fw.error().toString();
  e.fwd = std::move(*fw);
  return e;
}

}  // namespace ewgpu::testing
