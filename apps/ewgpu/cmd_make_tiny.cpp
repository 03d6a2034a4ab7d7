// `ewgpu make-tiny`: writes a random MLC model folder (tiny dims for tests, or a real model's shape for
// GPU benchmarks) with a given tokenizer.json.
#include <chrono>
#include <cstdio>

#include "command.h"
#include "model/model_folder.h"
#include "model/tiny_model.h"

namespace ewgpu::cli {
namespace {

// Integer flag into `out`; false (and a message) when present but not a number.
bool intFlag(const Args& a, const std::string& name, int& out) {
  auto v = flagValue(a, name);
  if (!v) return true;
  try {
    out = std::stoi(*v);
    return true;
  } catch (...) {
    std::fprintf(stderr, "error: %s needs an integer, got '%s'\n", name.c_str(), v->c_str());
    return false;
  }
}

int runMakeTiny(const Args& a) {
  bool json = hasFlag(a, "--json");
  const std::vector<std::string> valued = {"--arch",     "--quant", "--tokenizer",    "--seed",  "--hidden",
                                           "--layers",   "--shape", "--intermediate", "--heads", "--kv-heads",
                                           "--head-dim", "--vocab", "--template"};
  auto pos = positionals(a, valued);
  auto tokenizer = flagValue(a, "--tokenizer");
  if (pos.size() != 1 || !tokenizer)
    return reportError(makeError(ErrorCode::kBadRequest, "usage: make-tiny OUT_DIR --tokenizer PATH [...]"), json);
  TinyModelSpec spec;
  spec.tokenizer_path = *tokenizer;
  if (auto s = flagValue(a, "--shape")) {
    auto st = applyShapePreset(spec, *s);
    if (!st.ok()) return reportError(st.error(), json);
  }
  if (auto v = flagValue(a, "--arch")) {
    auto arch = archFromName(*v);
    if (!arch) return reportError(makeError(ErrorCode::kBadRequest, "unknown --arch " + *v), json);
    if (!spec.shape.empty() && *arch != spec.arch)
      return reportError(makeError(ErrorCode::kBadRequest, "--arch contradicts --shape"), json);
    spec.arch = *arch;
  }
  if (auto v = flagValue(a, "--quant")) {
    auto q = quantFromName(*v);
    if (!q) return reportError(makeError(ErrorCode::kBadRequest, "unknown --quant " + *v), json);
    spec.quant = *q;
  }
  int seed = 1;
  if (!intFlag(a, "--seed", seed) || !intFlag(a, "--hidden", spec.hidden) || !intFlag(a, "--layers", spec.n_layers) ||
      !intFlag(a, "--intermediate", spec.intermediate) || !intFlag(a, "--heads", spec.n_heads) ||
      !intFlag(a, "--kv-heads", spec.n_kv_heads) || !intFlag(a, "--head-dim", spec.head_dim) ||
      !intFlag(a, "--vocab", spec.vocab))
    return 2;
  spec.seed = (uint64_t)seed;
  spec.vocab_from_tokenizer = hasFlag(a, "--vocab-from-tokenizer");
  if (hasFlag(a, "--untied")) spec.tie_embeddings = false;
  if (auto t = flagValue(a, "--template")) spec.conv_template = *t;
  auto t0 = std::chrono::steady_clock::now();
  auto st = writeTinyModel(spec, pos[0]);
  if (!st.ok()) return reportError(st.error(), json);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto folder = ModelFolder::open(pos[0]);  // the written folder must validate
  if (!folder.ok()) return reportError(folder.error(), json);
  WeightTraffic w = weightTraffic(folder->config());
  if (json) {
    std::printf("%s\n", nlohmann::json{{"dir", pos[0]},
                                       {"arch", archName(spec.arch)},
                                       {"quant", quantName(spec.quant)},
                                       {"parameters", w.parameters},
                                       {"weight_bytes", w.weight_bytes},
                                       {"seconds", secs}}
                            .dump()
                            .c_str());
  } else {
    std::printf("wrote %s: %s %s, %lld parameters, %.1f MB of weights in %.2f s\n", pos[0].c_str(),
                std::string(archName(spec.arch)).c_str(), std::string(quantName(spec.quant)).c_str(),
                (long long)w.parameters, (double)w.weight_bytes / 1e6, secs);
  }
  return 0;
}

Registration reg{{"make-tiny", "make-tiny OUT_DIR --tokenizer PATH [--arch A] [--quant Q] [--shape S] [--seed N] [...]",
                  "write a random MLC model folder (tiny test dims or a real model's shape)", runMakeTiny}};

}  // namespace
}  // namespace ewgpu::cli
