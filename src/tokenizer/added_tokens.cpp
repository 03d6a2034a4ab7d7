// Leftmost-longest added-token matching with HF's lstrip / rstrip / single_word rules.
#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include "tokenizer/utf8.h"

namespace ewgpu {

namespace {
bool isWhitespaceCp(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return true;
  if (cp < 0x80) return false;
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ZS || cp == 0x85 || cp == 0x2028 ||
         cp == 0x2029;
}

// Letters, digits (Unicode alphanumeric) and '_' count as word characters for single_word.
bool isWordCp(uint32_t cp) {
  if (cp == '_') return true;
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

size_t previousCharStart(std::string_view s, size_t pos) {
  size_t p = pos - 1;
  while (p > 0 && (static_cast<uint8_t>(s[p]) & 0xC0) == 0x80) --p;
  return p;
}
}  // namespace

void AddedTokenMatcher::add(const AddedToken& token) {
  if (token.content.empty()) return;
  int32_t node = 0;
  for (char c : token.content) {
    const uint64_t key = (uint64_t(uint32_t(node)) << 8) | static_cast<uint8_t>(c);
    auto it = edges_.find(key);
    if (it == edges_.end()) {
      nodes_.push_back(Node{});
      it = edges_.emplace(key, static_cast<int32_t>(nodes_.size() - 1)).first;
    }
    node = it->second;
  }
  if (nodes_[node].token >= 0) return;  // duplicate content: the first one wins
  nodes_[node].token = static_cast<int32_t>(tokens_.size());
  tokens_.push_back(token);
  firstByte_[static_cast<uint8_t>(token.content[0])] = true;
}

int32_t AddedTokenMatcher::longestAt(std::string_view text, size_t pos, size_t* len) const {
  int32_t node = 0, best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find((uint64_t(uint32_t(node)) << 8) | static_cast<uint8_t>(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    if (nodes_[node].token >= 0) {
      best = nodes_[node].token;
      *len = i + 1 - pos;
    }
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  out.clear();
  size_t textStart = 0;  // start of the plain text not yet emitted
  size_t i = 0;
  const auto n = text.size();
  while (i < n) {
    if (!firstByte_[static_cast<uint8_t>(text[i])]) {
      ++i;
      continue;
    }
    size_t len = 0;
    const int32_t t = longestAt(text, i, &len);
    if (t < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = tokens_[t];
    size_t b = i, e = i + len, cpLen = 0;
    if (tok.singleWord) {
      const bool leftOk = b == 0 || !isWordCp(utf8::decodeAt(text, previousCharStart(text, b), &cpLen));
      const bool rightOk = e == n || !isWordCp(utf8::decodeAt(text, e, &cpLen));
      if (!leftOk || !rightOk) {
        i = e;
        continue;
      }
    }
    if (tok.lstrip) {
      while (b > textStart) {
        const size_t p = previousCharStart(text, b);
        if (!isWhitespaceCp(utf8::decodeAt(text, p, &cpLen))) break;
        b = p;
      }
    }
    if (tok.rstrip) {
      while (e < n) {
        if (!isWhitespaceCp(utf8::decodeAt(text, e, &cpLen))) break;
        e += cpLen;
      }
    }
    if (b > textStart) out.push_back({static_cast<uint32_t>(textStart), static_cast<uint32_t>(b), -1});
    out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), tok.id});
    textStart = i = e;
  }
  if (textStart < n) out.push_back({static_cast<uint32_t>(textStart), static_cast<uint32_t>(n), -1});
}

}  // namespace ewgpu
