// The WordPiece `model` of tokenizer.json (BERT): greedy longest-match-first over one pre-tokenized word.
// The first piece is looked up as is, every later piece with `continuing_subword_prefix` ("##") in front.
// A word with no full segmentation, or longer than `max_input_chars_per_word` characters, becomes the single
// unk token (HF tokenizers' WordPiece::tokenize).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tokenizer/bpe.h"

namespace ewgpu {

class WordPieceModel {
 public:
  // `model` is the "model" object of tokenizer.json (type WordPiece).
  static Result<WordPieceModel> fromJson(const nlohmann::json& model);

  // Appends the ids of one word (UTF-8 text) to `out`.
  void tokenizeWord(std::string_view word, std::vector<int32_t>& out) const;

  const std::vector<std::string>& idToToken() const { return idToToken_; }
  const StringIdMap& tokenToId() const { return vocab_; }
  const std::string& prefix() const { return prefix_; }

 private:
  StringIdMap vocab_;
  std::vector<std::string> idToToken_;
  std::string prefix_ = "##";
  int32_t unkId_ = -1;
  size_t maxChars_ = 100;
};

}  // namespace ewgpu
