// The `pre_tokenizer` stage of tokenizer.json: cuts normalized text into words that BPE sees one at a
// time. Supported: Split (Regex or String pattern; behaviours Removed, Isolated, MergedWithPrevious,
// MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space, use_regex with the GPT-2 pattern),
// Metaspace, Digits, WhitespaceSplit, Whitespace, Punctuation, BertPreTokenizer (whitespace removed, punctuation
// isolated) and Sequence of these; null = one word.
// ByteLevel's byte-to-unicode mapping is not applied here: the BPE model works on raw bytes (bpe.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tokenizer/regex.h"

namespace ewgpu {

// A list of words as byte ranges of `text`, which points either at the caller's string or at `owned`
// (when a step rewrote the content). Reused across calls to avoid allocations.
struct Words {
  struct Span {
    uint32_t begin, end;
  };
  std::string_view text;
  std::vector<Span> spans;
  std::string owned, scratchText;
  std::vector<Span> scratchSpans;
  struct Segment {
    uint32_t begin, end;
    bool isMatch;
  };
  std::vector<Segment> segments;  // one word's regex matches and gaps (Split)
  std::string_view word(size_t i) const { return text.substr(spans[i].begin, spans[i].end - spans[i].begin); }
};

class PreTokenizer {
 public:
  // `j` is the "pre_tokenizer" value of tokenizer.json (may be null).
  static Result<PreTokenizer> fromJson(const nlohmann::json& j);

  // True when a ByteLevel step is present: words are then byte strings for a byte-level BPE.
  bool byteLevel() const { return byteLevel_; }

  // Splits well-formed UTF-8 `text` into `out` (its previous content is discarded). `firstSection` is
  // true for the first text piece of the input (Metaspace prepend_scheme "first").
  void split(std::string_view text, bool firstSection, Words& out) const;

 private:
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  enum class Kind { kSplit, kPrefixSpace, kMetaspace };
  struct Step {
    Kind kind = Kind::kSplit;
    Regex regex;
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
    std::string replacement;  // Metaspace
    int prependScheme = 0;    // Metaspace: 0 always, 1 first, 2 never
  };
  static Result<Behavior> parseBehavior(const nlohmann::json& j, const std::string& path);
  Status addSteps(const nlohmann::json& j, const std::string& path);
  Status addSplit(std::string_view regexSource, Behavior b, bool invert);
  static void applySplit(const Step& s, Words& w);
  static void applyMetaspace(const Step& s, bool firstSection, Words& w);
  static void applyPrefixSpace(Words& w);

  std::vector<Step> steps_;
  bool byteLevel_ = false;
};

}  // namespace ewgpu
