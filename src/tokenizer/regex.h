// A compiled PCRE2 pattern (UTF + UCP, JIT when available) used by the Split pre-tokenizer and the
// Replace normalizer. tokenizer.json patterns are written for Oniguruma; PCRE2 accepts the constructs the
// real files use: \p{..} classes, (?i:...) groups and look-aheads such as (?!\S).
// Thread-safe for matching: every forEachMatch call owns its own match data.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"

namespace ewgpu {

class Regex {
 public:
  // A compile failure is an Error whose message says why; loaders wrap it into their own typed error.
  static Result<Regex> compile(std::string_view pattern);
  // A pattern that matches `literal` exactly (for {"String": ...} patterns).
  static Result<Regex> literal(std::string_view literal);

  // Calls fn(begin, end) for every non-overlapping match in `text` (byte offsets), left to right.
  // `text` must be well-formed UTF-8. An empty match advances by one character.
  template <class Fn>
  void forEachMatch(std::string_view text, Fn&& fn) const {
    MatchCursor c(*this, text);
    size_t b, e;
    while (c.next(&b, &e)) fn(b, e);
  }

 private:
  struct Code;
  class MatchCursor {
   public:
    MatchCursor(const Regex& re, std::string_view text);
    ~MatchCursor();
    bool next(size_t* begin, size_t* end);

   private:
    const Regex& re_;
    std::string_view text_;
    void* matchData_ = nullptr;
    size_t pos_ = 0;
  };
  std::shared_ptr<Code> code_;
};

}  // namespace ewgpu
