// Test helpers for the reference tests: a 256-token byte-level tokenizer.json (every byte a token, no merges)
// and a fresh temporary directory per tiny model, so tiny folders need no downloaded tokenizer.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace ewgpu::testing_ref {

// The ByteLevel alphabet (mlc-format.md §6.4): printable bytes map to themselves, the other 68 bytes in order to
// U+0100 onwards. Returns the UTF-8 encoding of the character for byte b.
inline std::string byteLevelChar(int b) {
  const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  int cp = b;
  if (!printable) {
    int index = 0;
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
      if (!p) ++index;
    }
    cp = 0x100 + index;
  }
  std::string s;
  if (cp < 0x80) {
    s += (char)cp;
  } else {
    s += (char)(0xC0 | (cp >> 6));
    s += (char)(0x80 | (cp & 0x3F));
  }
  return s;
}

inline nlohmann::json byteLevelTokenizerJson() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byteLevelChar(b)] = b;
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                               {"use_regex", false}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", nullptr},
          {"decoder", byte_level},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
            {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
}

// A new empty directory under the system temp dir.
inline std::filesystem::path freshTempDir(const std::string& tag) {
  std::random_device rd;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ewgpu_ref_" + tag + "_" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string writeByteLevelTokenizer(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "byte_tokenizer.json";
  std::ofstream(path) << byteLevelTokenizerJson().dump();
  return path.string();
}

}  // namespace ewgpu::testing_ref
