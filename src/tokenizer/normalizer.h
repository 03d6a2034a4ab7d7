// The `normalizer` stage of tokenizer.json: rewrites each piece of input text (the text between added
// tokens) before pre-tokenization. Supported types: NFC, NFD, NFKC, NFKD (libutf8proc), Lowercase,
// Prepend, Replace (String or Regex pattern), Strip, StripAccents, BertNormalizer and Sequence of these; null =
// identity.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tokenizer/regex.h"

namespace ewgpu {

class Normalizer {
 public:
  // `j` is the "normalizer" value of tokenizer.json (may be null). Unsupported types are an Error whose
  // detail names the type.
  static Result<Normalizer> fromJson(const nlohmann::json& j);

  // True when apply() never changes its input (null or an empty Sequence).
  bool isIdentity() const { return steps_.empty(); }

  // Normalized form of well-formed UTF-8 `in`, written to `out` (replaced, not appended).
  void apply(std::string_view in, std::string& out) const;

 private:
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kLowercase, kPrepend, kReplace, kStrip, kStripAccents, kBert };
  struct Step {
    Kind kind;
    std::string text;                  // Prepend: the prefix; Replace: the replacement content
    std::string literal;               // Replace with a {"String": ...} pattern: the literal (empty when regex)
    Regex regex;                       // Replace with a {"Regex": ...} pattern
    bool left = false, right = false;  // Strip
    bool cleanText = false, chineseChars = false, stripAccents = false, lowercase = false;  // BertNormalizer
  };
  static Status addSteps(const nlohmann::json& j, std::vector<Step>& steps, const std::string& path);
  static void applyStep(const Step& s, std::string& text, std::string& scratch);
  std::vector<Step> steps_;
};

}  // namespace ewgpu
