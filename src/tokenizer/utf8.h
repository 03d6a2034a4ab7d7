// Small UTF-8 helpers shared by the tokenizer stages: validity scanning with the WHATWG / Rust
// `from_utf8_lossy` replacement rule (each maximal ill-formed subpart becomes one U+FFFD), code point
// decoding and encoding. Everything works on bytes; no locale, no allocation unless a string is returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ewgpu::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence starting at s[i] (1..4), or 0 when s[i..] starts an ill-formed
// subpart. `*subpart` (when 0 is returned) receives the length of that maximal ill-formed subpart
// (>= 1); when the input ends inside a sequence that could still complete, `*incomplete` is set.
size_t sequenceLength(std::string_view s, size_t i, size_t* subpart, bool* incomplete);

// True when `s` is entirely well-formed UTF-8.
bool isValid(std::string_view s);

// `s` with every maximal ill-formed subpart replaced by U+FFFD (identical to TextDecoder / from_utf8_lossy).
std::string toValidLossy(std::string_view s);

// Length of the longest prefix of `s` that does not end inside an incomplete (but still completable)
// sequence. Ill-formed subparts that can no longer complete count as part of the prefix.
size_t completePrefixLength(std::string_view s);

// Byte length of the UTF-8 sequence whose lead byte is `lead` (1 for continuation/invalid bytes).
inline size_t leadLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

// Decodes the code point at s[i] of well-formed text; advances *len to its byte length.
uint32_t decodeAt(std::string_view s, size_t i, size_t* len);

// Appends code point `cp` as UTF-8.
void append(std::string& out, uint32_t cp);

}  // namespace ewgpu::utf8
