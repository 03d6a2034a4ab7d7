// `ewgpu show ID|FOLDER`: what a model is, as Ollama's `show`: its configuration (architecture, parameters,
// context, quantization), conversation template, size, source and cache state. Reads only the store and the
// folder's mlc-chat-config.json (no GPU, no network); a catalogue id that is not pulled shows the catalogue's facts.
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "model/expected_params.h"
#include "model/model_config.h"
#include "store/model_store.h"
#include "terminal.h"
#include "tokenizer/conv_template.h"

namespace ewgpu::cli {
namespace {

struct ShowFlags {
  std::string model, cache_dir;
  bool json = false;
};

bool isDir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int64_t fileBytes(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
}

nlohmann::json configJson(const ModelConfig& c) {
  const WeightTraffic w = weightTraffic(c);
  return {{"model_type", c.model_type},
          {"architecture", archName(c.arch)},
          {"quantization", quantName(c.quant)},
          {"parameters", w.parameters},
          {"weight_bytes", w.weight_bytes},
          {"layers", c.n_layers},
          {"hidden", c.hidden},
          {"heads", c.n_heads},
          {"kv_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"vocab_size", c.vocab},
          {"context_window", c.context_window},
          {"sliding_window", c.sliding_window},
          {"prefill_chunk", c.prefill_chunk},
          {"tied_embeddings", c.tie_embeddings},
          {"sampling",
           {{"temperature", c.temperature},
            {"top_p", c.top_p},
            {"presence_penalty", c.presence_penalty},
            {"frequency_penalty", c.frequency_penalty},
            {"repetition_penalty", c.repetition_penalty}}}};
}

nlohmann::json templateJson(const nlohmann::json& raw, const ConvTemplate& t) {
  nlohmann::json j = {{"name", t.name()},
                      {"stop_str", t.stopStrings()},
                      {"stop_token_ids", t.stopTokenIds()},
                      {"system_prefix_token_ids", t.systemPrefixTokenIds()}};
  std::vector<ChatMessage> sample = {{"system", "{system}"}, {"user", "{prompt}"}};
  if (auto r = t.render(sample)) j["rendered"] = *r;  // the prompt shape of one system + user turn
  if (raw.is_string()) j["builtin"] = raw;
  return j;
}

void printSection(const char* title, const std::vector<std::pair<std::string, std::string>>& rows) {
  std::printf("  %s\n", title);
  for (const auto& [k, v] : rows) std::printf("    %-20s %s\n", k.c_str(), v.c_str());
  std::printf("\n");
}

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

int runShow(const ShowFlags& f) {
  const bool json = f.json;
  StoreOptions so;
  so.cache_dir = f.cache_dir;
  auto store = ModelStore::open(so);
  if (!store) return reportError(store.error(), json);

  nlohmann::json out = {{"id", f.model}};
  std::string dir;
  if (isDir(f.model)) {
    dir = f.model;
    out["source"] = "folder";
    out["location"] = f.model;
    out["state"] = "folder";
  } else {
    auto rec = (*store)->record(f.model);
    if (!rec) {
      auto r = (*store)->resolve(f.model);  // the better error for a path that is not there
      return reportError(r ? rec.error() : r.error(), json);
    }
    dir = rec->dir;
    out["source"] = sourceKindName(rec->source);
    out["location"] = rec->source == SourceKind::kLocal ? rec->local_path : rec->url;
    out["dir"] = rec->dir;
    auto state = (*store)->cacheState(f.model);
    out["state"] = state ? std::string(cacheStateName(*state)) : "absent";

    int64_t on_disk = 0, total = 0;
    for (const auto& file : rec->files) {
      int64_t have = fileBytes(rec->dir + "/" + file.name);
      if (have < 0) have = std::max<int64_t>(0, fileBytes(rec->dir + "/" + file.name + ".part"));
      on_disk += have;
      total += std::max<int64_t>(0, file.size >= 0 ? file.size : have);
    }
    out["bytes_on_disk"] = on_disk;
    out["bytes_total"] = total;
    if (const CatalogEntry* e = findPrebuilt(f.model))
      out["catalogue"] = {{"arch", e->arch},
                          {"quantization", e->quantization},
                          {"vram_required_MB", e->vram_required_mb},
                          {"model_type", e->webllm_model_type}};
  }

  // The configuration, when the folder has it (a pull fetches it first).
  std::optional<ModelConfig> cfg;
  const std::string cfg_path = dir + "/mlc-chat-config.json";
  if (fileBytes(cfg_path) >= 0) {
    auto c = loadModelConfig(cfg_path);
    if (!c) return reportError(c.error(), json);
    cfg = std::move(*c);
    out["config"] = configJson(*cfg);
    if (!cfg->conv_template.is_null()) {
      auto t = ConvTemplate::fromJson(cfg->conv_template);
      if (!t) return reportError(t.error(), json);
      out["template"] = templateJson(cfg->conv_template, *t);
    }
  } else if (out["source"] == "folder") {
    return reportError(makeError(ErrorCode::kInvalidModelFolder, "no mlc-chat-config.json in " + dir,
                                 {{"file", "mlc-chat-config.json"}, {"problem", "missing"}}),
                       json);
  }

  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (cfg) {
    const auto& c = out["config"];
    char params[32];
    std::snprintf(params, sizeof params, "%.2fB", (double)c["parameters"].get<int64_t>() / 1e9);
    printSection("Model", {{"architecture", c["architecture"].get<std::string>() + " (model_type " +
                                                c["model_type"].get<std::string>() + ")"},
                           {"parameters", params},
                           {"context length", std::to_string(cfg->context_window)},
                           {"embedding length", std::to_string(cfg->hidden)},
                           {"layers", std::to_string(cfg->n_layers)},
                           {"vocabulary", std::to_string(cfg->vocab)},
                           {"quantization", c["quantization"].get<std::string>()},
                           {"weights", humanBytes((double)c["weight_bytes"].get<uint64_t>())}});
    printSection("Parameters", {{"temperature", std::to_string(cfg->temperature)},
                                {"top_p", std::to_string(cfg->top_p)},
                                {"repetition_penalty", std::to_string(cfg->repetition_penalty)}});
  } else if (out.contains("catalogue")) {
    const auto& k = out["catalogue"];
    printSection("Model (from the catalogue; pull for its configuration)",
                 {{"architecture", k["arch"].get<std::string>()},
                  {"quantization", k["quantization"].get<std::string>()},
                  {"vram required", std::to_string((int)k["vram_required_MB"].get<double>()) + " MB"}});
  }
  if (out.contains("template")) {
    const auto& t = out["template"];
    printSection("Template", {{"name", t["name"].get<std::string>()},
                              {"stop strings", t["stop_str"].dump()},
                              {"stop token ids", t["stop_token_ids"].dump()},
                              {"prompt", t.contains("rendered") ? quoted(t["rendered"].get<std::string>()) : "-"}});
  }
  std::vector<std::pair<std::string, std::string>> store_rows = {{"source", out["source"].get<std::string>()},
                                                                 {"location", out["location"].get<std::string>()},
                                                                 {"state", out["state"].get<std::string>()}};
  if (out.contains("bytes_total"))
    store_rows.push_back({"size", humanBytes((double)out["bytes_on_disk"].get<int64_t>()) + " of " +
                                      humanBytes((double)out["bytes_total"].get<int64_t>()) + " on disk"});
  if (out.contains("dir")) store_rows.push_back({"folder", out["dir"].get<std::string>()});
  printSection("Store", store_rows);
  return 0;
}

Registration reg{{"show", "a model's configuration, template, size, quantization, source and state", [](CLI::App& app) {
                    auto f = std::make_shared<ShowFlags>();
                    app.add_option("MODEL", f->model, "a store id, a catalogue id or a model folder")->required();
                    addCacheDirFlag(app, f->cache_dir);
                    addJsonFlag(app, f->json);
                    return [f] { return runShow(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
