// `ewgpu convert HF_DIR OUT_DIR`: a HF checkpoint (config.json + safetensors) -> an MLC folder, used to run
// the engine against transformers on the same weights.
#include <cstdio>

#include "command.h"
#include "model/hf_convert.h"
#include "model/model_folder.h"

namespace ewgpu::cli {
namespace {

int runConvert(const Args& a) {
  bool json = hasFlag(a, "--json");
  auto pos = positionals(a, {"--quant", "--tokenizer"});
  auto tokenizer = flagValue(a, "--tokenizer");
  if (pos.size() != 2 || !tokenizer)
    return reportError(
        makeError(ErrorCode::kBadRequest, "usage: convert HF_DIR OUT_DIR --tokenizer PATH [--quant q0f32|q4f16_1|...]"),
        json);
  auto quant = quantFromName(flagValue(a, "--quant").value_or("q0f32"));
  if (!quant) return reportError(makeError(ErrorCode::kBadRequest, "unknown --quant"), json);
  auto st = convertHfFolder(pos[0], pos[1], *quant, *tokenizer);
  if (!st.ok()) return reportError(st.error(), json);
  auto f = ModelFolder::open(pos[1]);
  if (!f.ok()) return reportError(f.error(), json);
  std::printf("converted %s -> %s (%s, %s, %lld parameters)\n", pos[0].c_str(), pos[1].c_str(),
              std::string(archName(f->config().arch)).c_str(), std::string(quantName(*quant)).c_str(),
              (long long)parameterCount(f->config()));
  return 0;
}

Registration reg{{"convert", "convert HF_DIR OUT_DIR --tokenizer PATH [--quant q0f32|q4f16_1]",
                  "convert a HF safetensors checkpoint into an MLC model folder", runConvert}};

}  // namespace
}  // namespace ewgpu::cli
