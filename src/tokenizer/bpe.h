// The BPE `model` of tokenizer.json: vocab {token -> id}, ranked merges, and the merge loop that turns
// one pre-tokenized word into ids.
//
// Two symbol alphabets:
//  - byte-level (GPT-2 family: Qwen, Llama-3, DeepSeek, gpt-4o): vocab strings are written in the
//    byte-to-unicode alphabet (bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to themselves, the other 68 bytes
//    to U+0100.. in order). At load time every token is mapped back to its raw bytes, so a word's initial
//    symbols are simply its bytes and no per-call remapping happens.
//  - character-level (SentencePiece-style: Llama-2, Gemma): initial symbols are UTF-8 characters; an
//    unknown character becomes <0xXX> byte tokens (byte_fallback) or the unk token (fuse_unk merges runs).
// Merges are stored as a hash of (left id, right id) -> (rank, merged id); lower rank merges first,
// ties go to the leftmost pair (as HF tokenizers). A per-word cache skips the merge loop for words seen
// before.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"

namespace ewgpu {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// The GPT-2 byte <-> unicode alphabet.
struct ByteLevelAlphabet {
  std::array<uint32_t, 256> byteToCodepoint;  // byte -> code point
  std::array<int16_t, 324> codepointToByte;   // code point (< 324) -> byte, -1 when none
  // Raw bytes of a token written in the alphabet; false when a character is outside it.
  bool decode(std::string_view token, std::string& bytes) const;
  static const ByteLevelAlphabet& get();
};

// Open-addressing hash from a (left, right) id pair to its merge.
class MergeTable {
 public:
  struct Merge {
    int32_t rank, id;
  };
  void reserve(size_t n);
  void insert(int32_t left, int32_t right, Merge m);
  const Merge* find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &values_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t pack(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  static size_t hash(uint64_t k) {  // splitmix64 finalizer: ids are small and dense, so mix all bits
    k ^= k >> 30;
    k *= 0xBF58476D1CE4E5B9ull;
    k ^= k >> 27;
    k *= 0x94D049BB133111EBull;
    return size_t(k ^ (k >> 31));
  }
  std::vector<uint64_t> keys_{kEmpty};
  std::vector<Merge> values_{Merge{}};
  size_t mask_ = 0, size_ = 0;
};

class BpeModel {
 public:
  // The two large members of a "model" object, kept out of the parsed document (Tokenizer::fromJson captures them
  // while parsing: a DOM object of 151k keys is most of a Qwen3 tokenizer.json's parse). vocab: the entries in file
  // order (a later duplicate key wins, as in the DOM); vocab_nested: a value that is an object or array (an error).
  struct Captured {
    bool has_vocab = false, has_merges = false, vocab_nested = false;
    std::vector<std::pair<std::string, nlohmann::json>> vocab;
    nlohmann::json merges = nlohmann::json::array();
  };
  // `model` is the "model" object of tokenizer.json (type BPE); `byteLevel` comes from the pre-tokenizer. With
  // `captured`, its vocab and merges come from there instead of `model`.
  static Result<BpeModel> fromJson(const nlohmann::json& model, bool byteLevel, const Captured* captured = nullptr);

  // Appends the ids of one word (raw bytes when byte-level, else UTF-8 text) to `out`.
  void tokenizeWord(std::string_view word, std::vector<int32_t>& out) const;

  // id -> vocab string as written in tokenizer.json; empty when the id is not in the model vocab.
  const std::vector<std::string>& idToToken() const { return idToToken_; }
  const StringIdMap& tokenToId() const { return vocab_; }
  bool byteLevel() const { return byteLevel_; }

 private:
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // -1 at the ends; a merged-away symbol has id -1
  };
  Status loadMerges(const nlohmann::json& merges);
  void collectCharPairs();
  void initialSymbols(std::string_view word, std::vector<Symbol>& syms) const;
  void mergeSmall(std::vector<Symbol>& syms) const;
  void mergeHeap(std::vector<Symbol>& syms) const;
  void runMerges(std::string_view word, std::vector<int32_t>& out) const;
  void tokenizeCached(std::string_view word, std::vector<int32_t>& out) const;
  bool canJoin(uint32_t leftCp, uint32_t rightCp) const {
    return charPairs_.find(static_cast<int32_t>(leftCp), static_cast<int32_t>(rightCp)) != nullptr;
  }

  StringIdMap vocab_;      // token string (as in the JSON) -> id
  StringIdMap byteVocab_;  // byte-level only: raw bytes -> id
  std::vector<std::string> idToToken_;
  MergeTable merges_;
  // Character-level only: every pair of code points that sits side by side inside some vocab token. A word
  // boundary between two characters that never do can never be crossed by a merge, so long words (whole
  // sentences in SentencePiece-style files) are cut there and the pieces go through the word cache.
  MergeTable charPairs_;
  std::array<int32_t, 256> byteIds_{};      // byte-level: id of each single byte; -1 if missing
  std::array<int32_t, 256> fallbackIds_{};  // byte_fallback: id of <0xXX>; -1 if missing
  int32_t unkId_ = -1;
  bool byteLevel_ = false, byteFallback_ = false, fuseUnk_ = false, ignoreMerges_ = false;
  bool unksFuse_ = false;  // fuse_unk can apply: an unknown character may become unk

  // Word cache: word -> [offset, count) into cacheIds_. Guarded by cacheMutex_; cleared when full.
  struct Cache {
    std::mutex mutex;
    std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>> index;
    std::vector<int32_t> ids;
  };
  std::unique_ptr<Cache> cache_ = std::make_unique<Cache>();
};

}  // namespace ewgpu
