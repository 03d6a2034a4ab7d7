// `ewgpu convert HF_DIR OUT_DIR`: a HF checkpoint (config.json + safetensors) -> an MLC folder, used to run
// the engine against transformers on the same weights.
#include <cstdio>
#include <memory>

#include "command.h"
#include "model/hf_convert.h"
#include "model/model_folder.h"

namespace ewgpu::cli {
namespace {

struct ConvertFlags {
  std::string hf_dir, out_dir, tokenizer, quant = "q0f32";
  bool json = false;
};

int runConvert(const ConvertFlags& a) {
  const bool json = a.json;
  auto quant = quantFromName(a.quant);  // checked by CLI11 (IsMember)
  auto st = convertHfFolder(a.hf_dir, a.out_dir, *quant, a.tokenizer);
  if (!st.ok()) return reportError(st.error(), json);
  auto f = ModelFolder::open(a.out_dir);
  if (!f.ok()) return reportError(f.error(), json);
  if (json) {
    std::printf("%s\n", nlohmann::json{{"dir", a.out_dir},
                                       {"arch", archName(f->config().arch)},
                                       {"quant", quantName(*quant)},
                                       {"parameters", parameterCount(f->config())}}
                            .dump()
                            .c_str());
    return 0;
  }
  std::printf("converted %s -> %s (%s, %s, %lld parameters)\n", a.hf_dir.c_str(), a.out_dir.c_str(),
              std::string(archName(f->config().arch)).c_str(), std::string(quantName(*quant)).c_str(),
              (long long)parameterCount(f->config()));
  return 0;
}

Registration reg{{"convert", "convert a HF safetensors checkpoint into an MLC model folder", [](CLI::App& app) {
                    auto f = std::make_shared<ConvertFlags>();
                    app.add_option("HF_DIR", f->hf_dir, "folder with config.json and *.safetensors")->required();
                    app.add_option("OUT_DIR", f->out_dir, "the MLC folder to write")->required();
                    app.add_option("--tokenizer", f->tokenizer, "the tokenizer.json to copy")->required();
                    app.add_option("--quant", f->quant, "quantization of the output")
                        ->check(CLI::IsMember({"q0f32", "q0f16", "q4f16_1", "q4f32_1", "q3f16_1"}));
                    addJsonFlag(app, f->json);
                    return [f] { return runConvert(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
