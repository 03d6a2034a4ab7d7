// Helpers for the model-layer tests: temp folders, a small synthetic tokenizer.json, JSON file edits.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace ewgpu::test {

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ewgpu_model_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

inline void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline void writeJson(const std::string& path, const nlohmann::json& j) { writeText(path, j.dump(2)); }

// A byte-level BPE tokenizer.json with `n` vocab entries plus chatml and llama-3 style added tokens
// (ids n .. n+5): the writer only needs its size and added tokens.
inline std::string writeSmallTokenizer(const std::string& dir, int n = 250) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int i = 0; i < n; ++i) vocab["t" + std::to_string(i)] = i;
  nlohmann::json added = nlohmann::json::array();
  int id = n;
  for (const char* s :
       {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>"})
    added.push_back({{"id", id++}, {"content", s}, {"special", true}});
  nlohmann::json tok = {{"version", "1.0"},
                        {"added_tokens", added},
                        {"normalizer", nullptr},
                        {"decoder", {{"type", "ByteLevel"}}},
                        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::string path = dir + "/small-tokenizer.json";
  writeText(path, tok.dump());
  return path;
}

inline void copyDir(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

}  // namespace ewgpu::test
