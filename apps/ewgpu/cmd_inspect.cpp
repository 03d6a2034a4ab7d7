// `ewgpu inspect MODEL_DIR`: validates an MLC folder and prints what it holds and what decoding reads.
#include <cstdio>
#include <memory>

#include "command.h"
#include "model/model_folder.h"

namespace ewgpu::cli {
namespace {

std::string templateName(const nlohmann::json& t) {
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("name") && t["name"].is_string()) return t["name"].get<std::string>();
  return "";
}

struct InspectFlags {
  std::string dir;
  bool json = false, md5 = false;
};

int runInspect(const InspectFlags& a) {
  const bool json = a.json;
  auto f = ModelFolder::open(a.dir);
  if (!f.ok()) return reportError(f.error(), json);
  if (a.md5) {
    auto st = f->verifyChecksums();
    if (!st.ok()) return reportError(st.error(), json);
  }
  const ModelConfig& c = f->config();
  WeightTraffic w = weightTraffic(c);
  nlohmann::json out = {{"dir", a.dir},
                        {"model_type", c.model_type},
                        {"architecture", archName(c.arch)},
                        {"quantization", quantName(c.quant)},
                        {"parameters", w.parameters},
                        {"weight_bytes", w.weight_bytes},
                        {"bytes_per_token", w.bytes_per_token},
                        {"lm_head_bytes", w.lm_head_bytes},
                        {"layers", c.n_layers},
                        {"hidden", c.hidden},
                        {"vocab_size", c.vocab},
                        {"active_vocab_size", c.active_vocab},
                        {"context_window", c.context_window},
                        {"sliding_window", c.sliding_window},
                        {"tied_embeddings", c.tie_embeddings},
                        {"template", templateName(c.conv_template)},
                        {"tensors", f->tensors().size()},
                        {"shards", f->cache().shards.size()}};
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s\n", a.dir.c_str());
  std::printf("  architecture      %s (model_type %s), %d layers, hidden %d\n", std::string(archName(c.arch)).c_str(),
              c.model_type.c_str(), c.n_layers, c.hidden);
  std::printf("  quantization      %s\n", std::string(quantName(c.quant)).c_str());
  std::printf("  parameters        %lld (%.3f B)\n", (long long)w.parameters, (double)w.parameters / 1e9);
  std::printf("  weight bytes      %.2f MB in memory, %zu tensors in %zu shards\n", (double)w.weight_bytes / 1e6,
              f->tensors().size(), f->cache().shards.size());
  std::printf("  read per token    %.2f MB (lm_head %.2f MB, %.1f%%)\n", (double)w.bytes_per_token / 1e6,
              (double)w.lm_head_bytes / 1e6, 100.0 * (double)w.lm_head_bytes / (double)w.bytes_per_token);
  std::printf("  vocab             %d (active %d)%s\n", c.vocab, c.active_vocab, c.tie_embeddings ? ", tied" : "");
  std::printf("  context window    %d%s\n", c.context_window,
              c.sliding_window > 0 ? (" (sliding " + std::to_string(c.sliding_window) + ")").c_str() : "");
  std::printf("  template          %s\n", templateName(c.conv_template).c_str());
  return 0;
}

Registration reg{{"inspect", "validate an MLC model folder and print its architecture, size and bytes read per token",
                  [](CLI::App& app) {
                    auto f = std::make_shared<InspectFlags>();
                    app.add_option("MODEL_DIR", f->dir, "an MLC model folder")->required();
                    app.add_flag("--md5", f->md5, "also check every shard's md5 (reads every byte)");
                    addJsonFlag(app, f->json);
                    return [f] { return runInspect(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
