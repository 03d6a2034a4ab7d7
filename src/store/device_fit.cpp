// canRun / recommendModels: fitting models to an adapter before download (rules in device_fit.h).
#include "store/device_fit.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "model/model_config.h"

namespace ewgpu {
namespace {

constexpr double kMB = 1024.0 * 1024.0;

nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nlohmann::json();
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

nlohmann::json issuesJson(const std::vector<FitIssue>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& i : v) a.push_back({{"code", i.code}, {"message", i.message}});
  return a;
}

std::string mb(double v) { return std::to_string((long long)std::llround(v)) + " MB"; }

void checkTensors(const ModelFacts& f, const DeviceInfo& dev, FitReport& r) {
  uint64_t limit = dev.max_storage_buffer_binding_size;
  if (f.largest_row_bytes > limit) {
    r.blockers.push_back({"tensor_row_too_large", "one row of a tensor is " + std::to_string(f.largest_row_bytes) +
                                                      " bytes, above maxStorageBufferBindingSize " +
                                                      std::to_string(limit) + "; rows are never split"});
  } else if (f.largest_tensor_bytes > limit) {
    r.warnings.push_back({f.tensor_sizes_exact ? "tensor_split" : "buffer_estimate",
                          "the largest tensor (" + std::to_string(f.largest_tensor_bytes) +
                              " bytes) exceeds maxStorageBufferBindingSize " + std::to_string(limit) +
                              "; the engine splits it across bindings by rows"});
  }
}

void checkMemory(const ModelFacts& f, const DeviceInfo& dev, FitReport& r) {
  double have = (double)dev.deviceLocalBytes() / kMB;
  double need = f.vram_required_mb > 0 ? f.vram_required_mb : f.weights_mb;
  if (need <= 0) return;
  if (have <= 0) {
    r.warnings.push_back({"memory_unknown", "the adapter reports no device-local memory; needs ~" + mb(need)});
  } else if (need > have) {
    r.blockers.push_back({"vram", "needs ~" + mb(need) + ", the device has " + mb(have)});
  } else if (need > 0.9 * have) {
    r.warnings.push_back({"vram_tight", "needs ~" + mb(need) + " of the device's " + mb(have)});
  }
}

}  // namespace

nlohmann::json FitReport::toJson() const {
  return {{"ok", ok}, {"blockers", issuesJson(blockers)}, {"warnings", issuesJson(warnings)}};
}

bool isSupportedArch(const std::string& a) { return archRunnable(a); }

std::span<const ArchGap> notYetRunnableArchs() {
  static constexpr ArchGap kGaps[] = {
      {"phi3_v", "a vision-language model: image input is not implemented"},
  };
  return kGaps;
}

namespace {

std::string archBlocker(const std::string& arch) {
  std::string why = "is not implemented";
  for (const ArchGap& g : notYetRunnableArchs())
    if (g.arch == arch) why = std::string(g.reason);
  std::string runnable;
  for (const auto& n : runnableArchNames()) runnable += (runnable.empty() ? "" : ", ") + n;
  return "architecture " + arch + ": " + why + " (this engine runs " + runnable + ")";
}

}  // namespace

std::string notRunnableReason(const CatalogEntry& e) {
  if (!isSupportedArch(e.arch)) return archBlocker(e.arch);
  if (!e.webllm_model_type.empty() && e.webllm_model_type != "LLM") {  // bert: embeddings.create, not chat
    const bool vowel = std::string("aeiouAEIOU").find(e.webllm_model_type[0]) != std::string::npos;
    return std::string(vowel ? "an " : "a ") + e.webllm_model_type + " model (" + e.arch + "), not a text LLM";
  }
  return "";
}

ModelFacts factsFromCatalog(const CatalogEntry& e) {
  ModelFacts f;
  f.id = e.model_id;
  f.arch = e.arch;
  f.quantization = e.quantization;
  f.webllm_model_type = e.webllm_model_type.empty() ? "LLM" : e.webllm_model_type;
  f.vram_required_mb = e.vram_required_mb;
  f.required_features = e.required_features;
  f.largest_tensor_bytes = e.buffer_size_required_bytes;
  return f;
}

void addFactsFromFolder(const std::string& dir, ModelFacts& f) {
  auto config = readJsonFile(dir + "/mlc-chat-config.json");
  if (config.is_object()) {
    if (config.contains("model_type") && config["model_type"].is_string()) f.arch = config["model_type"];
    if (config.contains("quantization") && config["quantization"].is_string()) f.quantization = config["quantization"];
  }
  auto manifest = readJsonFile(dir + "/tensor-cache.json");
  if (!manifest.is_object()) manifest = readJsonFile(dir + "/ndarray-cache.json");
  if (!manifest.is_object() || !manifest["records"].is_array()) return;
  f.largest_tensor_bytes = f.largest_row_bytes = 0;
  f.weights_mb = 0;
  for (const auto& shard : manifest["records"]) {
    f.weights_mb += shard.value("nbytes", 0.0) / kMB;
    if (!shard.contains("records") || !shard["records"].is_array()) continue;
    for (const auto& t : shard["records"]) {
      uint64_t n = t.value("nbytes", (uint64_t)0);
      uint64_t rows = t.contains("shape") && t["shape"].is_array() && !t["shape"].empty() && t["shape"][0].is_number()
                          ? std::max<uint64_t>(1, t["shape"][0].get<uint64_t>())
                          : 1;
      f.largest_tensor_bytes = std::max(f.largest_tensor_bytes, n);
      f.largest_row_bytes = std::max(f.largest_row_bytes, (n + rows - 1) / rows);
    }
  }
  f.tensor_sizes_exact = true;
}

FitReport checkFit(const ModelFacts& f, const DeviceInfo& dev) {
  FitReport r;
  if (f.arch.empty())
    r.warnings.push_back({"arch_unknown", "architecture unknown until mlc-chat-config.json is fetched"});
  else if (!isSupportedArch(f.arch))
    r.blockers.push_back({"unsupported_arch", archBlocker(f.arch)});
  if (f.webllm_model_type != "LLM")
    r.blockers.push_back({"not_text_llm", "a " + f.webllm_model_type + " model, not a text LLM"});
  if (dev.max_storage_buffer_binding_size == 0) {
    r.warnings.push_back({"device_unknown", "device limits unknown: tensor sizes and memory were not checked"});
  } else {
    checkTensors(f, dev, r);
    checkMemory(f, dev, r);
  }
  bool wants_f16 =
      std::find(f.required_features.begin(), f.required_features.end(), "shader-f16") != f.required_features.end();
  if (wants_f16 && !dev.shader_f16 && dev.max_storage_buffer_binding_size != 0)
    r.warnings.push_back({"shader_f16", "no shader-f16 on this adapter: runs with f32 arithmetic, possibly slower"});
  r.ok = r.blockers.empty();
  return r;
}

double paramsFromId(const std::string& id) {
  static const std::regex re(R"((?:^|[-_])(\d+(?:\.\d+)?)([BbMm])(?=[-_]|$))");
  std::smatch m;
  if (!std::regex_search(id, m, re)) return 0;
  double v = std::stod(m[1].str());
  return (m[2] == "M" || m[2] == "m") ? v / 1000.0 : v;
}

double bitsPerWeight(const std::string& q) {
  if (q.rfind("q4f16", 0) == 0 || q.rfind("q4bf16", 0) == 0) return 4.5;  // 4-bit + one f16 scale per 32
  if (q.rfind("q4f32", 0) == 0) return 5.0;                               // 4-bit + one f32 scale per 32
  if (q.rfind("q3f16", 0) == 0) return 3.5;
  if (q == "q0f32") return 32;
  return 16;  // q0f16, q0bf16, unknown
}

nlohmann::json Recommendation::toJson() const {
  return {{"model_id", entry->model_id}, {"arch", entry->arch},    {"quantization", entry->quantization},
          {"params_b", params_b},        {"weight_mb", weight_mb}, {"vram_required_MB", entry->vram_required_mb},
          {"fit", fit.toJson()}};
}

Result<std::vector<Recommendation>> recommendModels(const DeviceInfo& dev, const RecommendOptions& o) {
  if (o.prefer != "quality" && o.prefer != "speed")
    return makeError(ErrorCode::kBadRequest, "prefer must be quality or speed", {{"prefer", o.prefer}});
  double budget = o.max_vram_mb.value_or((double)dev.deviceLocalBytes() / kMB);  // 0: no budget known
  std::vector<Recommendation> out;
  for (const auto& e : prebuiltCatalog()) {
    if (!notRunnableReason(e).empty()) continue;  // only runnable entries are recommended
    if (budget > 0 && e.vram_required_mb > budget) continue;
    Recommendation r;
    r.entry = &e;
    r.fit = checkFit(factsFromCatalog(e), dev);
    if (!r.fit.ok) continue;
    double bits = bitsPerWeight(e.quantization);
    r.params_b = paramsFromId(e.model_id);
    if (r.params_b <= 0) r.params_b = e.vram_required_mb * kMB * 8 / bits / 1e9;  // upper bound from vram
    r.weight_mb = r.params_b * 1e9 * bits / 8 / kMB;
    out.push_back(std::move(r));
  }
  auto quality = [](const Recommendation& a, const Recommendation& b) {
    if (a.params_b != b.params_b) return a.params_b > b.params_b;
    double ba = bitsPerWeight(a.entry->quantization), bb = bitsPerWeight(b.entry->quantization);
    if (ba != bb) return ba > bb;
    return a.entry->model_id < b.entry->model_id;
  };
  auto speed = [](const Recommendation& a, const Recommendation& b) {
    if (a.weight_mb != b.weight_mb) return a.weight_mb < b.weight_mb;
    return a.entry->model_id < b.entry->model_id;
  };
  if (o.prefer == "speed")
    std::stable_sort(out.begin(), out.end(), speed);
  else
    std::stable_sort(out.begin(), out.end(), quality);
  if (out.size() > o.limit) out.resize(o.limit);
  return out;
}

}  // namespace ewgpu
