// Test helpers for the store: temporary folders, tiny MLC model folders written by hand, and the loopback
// fake hub (fake_hub.py) run as a child process.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/md5.h"
#include "model/tiny_model.h"
#include "store/cache_files.h"
#include "store/model_store.h"

extern char** environ;

namespace ewgpu::test {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ewgpu-store-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline void writeFile(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A minimal valid MLC folder: mlc-chat-config.json, tensor-cache.json (one uint32 tensor per shard, md5sum
// when `with_md5`), params_shard_<i>.bin of random bytes with the given sizes (multiples of 4), tokenizer.json.
inline void writeTinyMlcFolder(const std::string& dir, const std::vector<size_t>& shard_sizes, uint32_t seed,
                               bool with_md5 = true, const std::string& arch = "qwen2") {
  std::mt19937 rng(seed);
  nlohmann::json records = nlohmann::json::array();
  for (size_t i = 0; i < shard_sizes.size(); ++i) {
    std::string bytes(shard_sizes[i], '\0');
    for (auto& c : bytes) c = (char)(rng() & 0xFF);
    std::string name = "params_shard_" + std::to_string(i) + ".bin";
    writeFile(dir + "/" + name, bytes);
    size_t rows = 4, cols = shard_sizes[i] / 4 / rows;
    nlohmann::json shard = {{"dataPath", name},
                            {"format", "raw-shard"},
                            {"nbytes", shard_sizes[i]},
                            {"records",
                             {{{"name", "w" + std::to_string(i)},
                               {"shape", {rows, cols}},
                               {"dtype", "uint32"},
                               {"format", "f32-to-bf16"},
                               {"nbytes", shard_sizes[i]},
                               {"byteOffset", 0}}}}};
    if (with_md5) shard["md5sum"] = md5Hex({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    records.push_back(shard);
  }
  writeFile(dir + "/tensor-cache.json",
            nlohmann::json{{"metadata", {{"ParamSize", shard_sizes.size()}}}, {"records", records}}.dump(4));
  writeFile(dir + "/mlc-chat-config.json", nlohmann::json{{"model_type", arch},
                                                          {"quantization", "q4f16_1"},
                                                          {"vocab_size", 16},
                                                          {"tokenizer_files", {"tokenizer.json"}},
                                                          {"seed", seed}}
                                               .dump(2));
  writeFile(dir + "/tokenizer.json",
            nlohmann::json{{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}}}, {"seed", seed}}.dump());
}

// A small byte-level BPE tokenizer.json (`n` single-token entries plus a few special tokens) at `path`.
inline void writeSmallTokenizer(const std::string& path, int n = 200) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int i = 0; i < n; ++i) vocab["tok" + std::to_string(i)] = i;
  nlohmann::json added = nlohmann::json::array();
  int id = n;
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>"})
    added.push_back({{"id", id++}, {"content", s}, {"special", true}});
  writeFile(path, nlohmann::json{{"version", "1.0"},
                                 {"added_tokens", added},
                                 {"decoder", {{"type", "ByteLevel"}}},
                                 {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}}
                      .dump());
}

// A folder the model layer's validator accepts: writeTinyModel (random weights) for `arch`.
inline void writeValidTinyModel(const std::string& dir, uint64_t seed, Arch arch = Arch::kQwen2) {
  std::string tok = dir + ".tokenizer.json";
  writeSmallTokenizer(tok);
  TinyModelSpec spec;
  spec.arch = arch;
  spec.seed = seed;
  spec.tokenizer_path = tok;
  auto st = writeTinyModel(spec, dir);
  ASSERT_TRUE(st.ok()) << st.error().toString();
  fs::remove(tok);
}

// Number of files the store keeps for a folder: config, manifest, shards, tokenizer files.
inline size_t folderFileCount(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

// The loopback hub serving `root` (fake_hub.py); killed on destruction.
class FakeHub {
 public:
  explicit FakeHub(const std::string& root)
      : control_(root + "/../hub-control.json"), log_(root + "/../hub-log.jsonl") {
    std::string script = std::string(EWGPU_SOURCE_DIR) + "/tests/store/fake_hub.py";
    int out[2];
    EXPECT_EQ(::pipe(out), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<std::string> args = {"python3", script, "--root", root, "--control", control_, "--log", log_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawnp(&pid_, "python3", &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    std::string line;
    char c;
    while (line.size() < 16 && ::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    port_ = std::atoi(line.c_str());
    EXPECT_GT(port_, 0) << "fake_hub.py did not start";
  }
  ~FakeHub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string origin() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string repoUrl(const std::string& repo) const { return origin() + "/" + repo + "/resolve/main/"; }
  void setRules(const nlohmann::json& rules) { writeFile(control_, nlohmann::json{{"rules", rules}}.dump()); }
  std::vector<nlohmann::json> log() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  void clearLog() { std::remove(log_.c_str()); }

 private:
  std::string control_, log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// Store options for tests: a fresh cache, fast backoff, short stall timeout.
inline StoreOptions testStoreOptions(const std::string& cache_dir) {
  StoreOptions o;
  o.cache_dir = cache_dir;
  o.download.backoff_initial_ms = 10;
  o.download.backoff_max_ms = 50;
  o.download.stall_timeout_s = 1;
  o.download.connect_timeout_s = 2;
  o.download.max_attempts = 4;
  return o;
}

inline std::unique_ptr<ModelStore> openStore(const StoreOptions& o) {
  auto s = ModelStore::open(o);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().toString());
  return s.ok() ? std::move(*s) : nullptr;
}

// True when every file of `src` is byte-identical in `dst`.
inline bool sameFolder(const std::string& src, const std::string& dst) {
  for (const auto& e : fs::directory_iterator(src))
    if (readFile(e.path().string()) != readFile(dst + "/" + e.path().filename().string())) return false;
  return true;
}

}  // namespace ewgpu::test
