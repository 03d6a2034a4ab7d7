// modelFilesFromFolder: the file list of an MLC model folder, read from its two JSON manifests (model_store.h).
#include <fstream>
#include <set>
#include <sstream>

#include "store/cache_files.h"
#include "store/model_store.h"

namespace ewgpu {
namespace {

Error folderError(const std::string& dir, const std::string& msg, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json d = {{"path", dir}};
  d.update(extra);
  return makeError(ErrorCode::kInvalidModelFolder, msg, d);
}

// A plain file name: no separators, not "." or "..", only [A-Za-z0-9._-].
bool safeFileName(const std::string& n) {
  if (n.empty() || n == "." || n == ".." || n.size() > 200) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return false;
  return true;
}

Result<nlohmann::json> readJson(const std::string& dir, const std::string& name) {
  std::ifstream in(dir + "/" + name, std::ios::binary);
  if (!in) return folderError(dir, name + " is missing", {{"missing", name}});
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return folderError(dir, name + " is not a JSON object", {{"file", name}});
  return j;
}

}  // namespace

Result<std::vector<StoreFile>> modelFilesFromFolder(const std::string& dir) {
  auto config = readJson(dir, "mlc-chat-config.json");
  if (!config) return std::move(config).error();
  std::string manifest_name = fileSize(dir + "/tensor-cache.json") >= 0 ? "tensor-cache.json" : "ndarray-cache.json";
  if (fileSize(dir + "/" + manifest_name) < 0)
    return folderError(dir, "tensor-cache.json (or ndarray-cache.json) is missing", {{"missing", "tensor-cache.json"}});
  auto manifest = readJson(dir, manifest_name);
  if (!manifest) return std::move(manifest).error();

  std::vector<StoreFile> files = {{"mlc-chat-config.json", fileSize(dir + "/mlc-chat-config.json"), ""},
                                  {manifest_name, fileSize(dir + "/" + manifest_name), ""}};
  std::set<std::string> seen = {files[0].name, files[1].name};
  const auto& records = (*manifest)["records"];
  if (!records.is_array() || records.empty()) return folderError(dir, manifest_name + " has no records");
  for (const auto& r : records) {
    if (!r.is_object() || !r.contains("dataPath") || !r["dataPath"].is_string() || !r.contains("nbytes") ||
        !r["nbytes"].is_number_integer() || r["nbytes"].get<int64_t>() < 0)
      return folderError(dir, manifest_name + ": a shard lacks dataPath/nbytes");
    std::string name = r["dataPath"].get<std::string>();
    if (!safeFileName(name)) return folderError(dir, "unsafe shard name: " + name, {{"file", name}});
    std::string md5 = r.contains("md5sum") && r["md5sum"].is_string() ? r["md5sum"].get<std::string>() : "";
    if (seen.insert(name).second) files.push_back({name, r["nbytes"].get<int64_t>(), md5});
  }
  std::vector<std::string> tokenizer = {"tokenizer.json"};
  if (config->contains("tokenizer_files") && (*config)["tokenizer_files"].is_array() &&
      !(*config)["tokenizer_files"].empty()) {
    tokenizer.clear();
    for (const auto& t : (*config)["tokenizer_files"])
      if (t.is_string()) tokenizer.push_back(t.get<std::string>());
  }
  for (const auto& t : tokenizer) {
    if (!safeFileName(t)) return folderError(dir, "unsafe tokenizer file name: " + t, {{"file", t}});
    if (seen.insert(t).second) files.push_back({t, fileSize(dir + "/" + t), ""});
  }
  return files;
}

}  // namespace ewgpu
