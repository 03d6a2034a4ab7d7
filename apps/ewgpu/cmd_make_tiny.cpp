// `ewgpu make-tiny`: writes a random MLC model folder (tiny dims for tests, or a real model's shape for
// GPU benchmarks) with a given tokenizer.json.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>

#include "command.h"
#include "model/conv_template_presets.h"
#include "model/model_folder.h"
#include "model/tiny_model.h"

namespace ewgpu::cli {
namespace {

struct MakeTinyFlags {
  std::string out_dir, tokenizer, shape, arch, quant, conv_template;
  std::optional<int> hidden, layers, intermediate, heads, kv_heads, head_dim, vocab;
  uint64_t seed = 1;
  bool vocab_from_tokenizer = false, untied = false, json = false;
};

int runMakeTiny(const MakeTinyFlags& a) {
  const bool json = a.json;
  TinyModelSpec spec;
  spec.tokenizer_path = a.tokenizer;
  if (!a.shape.empty()) {
    auto st = applyShapePreset(spec, a.shape);
    if (!st.ok()) return reportError(st.error(), json);
  }
  if (!a.arch.empty()) {
    auto arch = archFromName(a.arch);  // checked by CLI11 (IsMember)
    if (!spec.shape.empty() && *arch != spec.arch) return usageError("--arch contradicts --shape " + a.shape, json);
    spec.arch = *arch;
  }
  if (!a.quant.empty()) spec.quant = *quantFromName(a.quant);
  else if (spec.arch == Arch::kBert) spec.quant = Quant::kQ0F32;  // the only format bert folders come in
  for (auto [flag, field] : {std::pair{&a.hidden, &spec.hidden}, {&a.layers, &spec.n_layers},
                             {&a.intermediate, &spec.intermediate}, {&a.heads, &spec.n_heads},
                             {&a.kv_heads, &spec.n_kv_heads}, {&a.head_dim, &spec.head_dim}, {&a.vocab, &spec.vocab}})
    if (*flag) *field = **flag;
  spec.seed = a.seed;
  spec.vocab_from_tokenizer = a.vocab_from_tokenizer;
  if (a.untied) spec.tie_embeddings = false;
  spec.conv_template = a.conv_template;
  const std::string& out_dir = a.out_dir;
  auto t0 = std::chrono::steady_clock::now();
  auto st = writeTinyModel(spec, out_dir);
  if (!st.ok()) return reportError(st.error(), json);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto folder = ModelFolder::open(out_dir);  // the written folder must validate
  if (!folder.ok()) return reportError(folder.error(), json);
  WeightTraffic w = weightTraffic(folder->config());
  if (json) {
    std::printf("%s\n", nlohmann::json{{"dir", out_dir},
                                       {"arch", archName(spec.arch)},
                                       {"quant", quantName(spec.quant)},
                                       {"parameters", w.parameters},
                                       {"weight_bytes", w.weight_bytes},
                                       {"seconds", secs}}
                            .dump()
                            .c_str());
  } else {
    std::printf("wrote %s: %s %s, %lld parameters, %.1f MB of weights in %.2f s\n", out_dir.c_str(),
                std::string(archName(spec.arch)).c_str(), std::string(quantName(spec.quant)).c_str(),
                (long long)w.parameters, (double)w.weight_bytes / 1e6, secs);
  }
  return 0;
}

Registration reg{
    {"make-tiny", "write a random MLC model folder (tiny test dims or a real model's shape)", [](CLI::App& app) {
       auto f = std::make_shared<MakeTinyFlags>();
       app.add_option("OUT_DIR", f->out_dir, "the folder to write")->required();
       app.add_option("--tokenizer", f->tokenizer, "the tokenizer.json to copy (sets the vocabulary)")->required();
       app.add_option("--arch", f->arch, "architecture (default llama, or the shape's)")
           ->check(CLI::IsMember([] {
             std::vector<std::string> names = knownArchNames();  // every architecture the model layer knows
             names.push_back("qwen3_5_text");
             return names;
           }()));
       app.add_option("--quant", f->quant, "quantization (default q4f16_1; q0f32 for bert)")
           ->check(CLI::IsMember({"q0f32", "q0f16", "q4f16_1", "q4f32_1", "q3f16_1"}));
       app.add_option("--shape", f->shape, "real dimensions of a model (random weights)")
           ->check(CLI::IsMember(shapePresetNames()));
       app.add_option("--seed", f->seed, "seed of the random weights")->check(bounded<uint64_t>(0, UINT64_MAX));
       const auto dim = bounded(1, 1 << 20);
       app.add_option("--hidden", f->hidden, "hidden size (default 64)")->check(dim);
       app.add_option("--layers", f->layers, "layers (default 2, 4 for qwen3_5)")->check(bounded(1, 1024));
       app.add_option("--intermediate", f->intermediate, "MLP width (default 128)")->check(dim);
       app.add_option("--heads", f->heads, "attention heads (default 4)")->check(bounded(1, 1024));
       app.add_option("--kv-heads", f->kv_heads, "key/value heads (default 2)")->check(bounded(1, 1024));
       app.add_option("--head-dim", f->head_dim, "head dimension (default 16, 32 for qwen3_5)")->check(bounded(2, 1024));
       app.add_option("--vocab", f->vocab, "embedding rows (default: the tokenizer's size rounded up to 64)")
           ->check(bounded(1, 1 << 24));
       app.add_flag("--vocab-from-tokenizer", f->vocab_from_tokenizer, "embedding rows = the tokenizer's size exactly");
       app.add_flag("--untied", f->untied, "write a separate lm_head");
       app.add_option("--template", f->conv_template, "conversation template preset (default: the family's)")
           ->check(CLI::IsMember([] {
             std::vector<std::string> names = {"chatml", "qwen2", "qwen3", "qwen3_5", "qwen3_5_nothink", "llama-3"};
             for (auto& n : extraConvTemplateNames()) names.push_back(n);  // gemma_instruction, phi-3, ...
             return names;
           }()));
       addJsonFlag(app, f->json);
       return [f] { return runMakeTiny(*f); };
     }}};

}  // namespace
}  // namespace ewgpu::cli
