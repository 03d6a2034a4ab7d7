// UTF-8 scanning with the "maximal subpart" replacement rule of the Unicode standard (§3.9, U+FFFD
// substitution of maximal subparts), which WHATWG TextDecoder and Rust String::from_utf8_lossy follow.
#include "tokenizer/utf8.h"

namespace ewgpu::utf8 {

namespace {
// Allowed range of the second byte for a given lead byte (the first continuation is the only one with
// a lead-dependent range: it excludes overlongs, surrogates and code points above U+10FFFF).
bool secondByteOk(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}
}  // namespace

size_t sequenceLength(std::string_view s, size_t i, size_t* subpart, bool* incomplete) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  const uint8_t lead = p[i];
  if (incomplete) *incomplete = false;
  if (lead < 0x80) return 1;
  size_t need = 0;
  if (lead >= 0xC2 && lead <= 0xDF)
    need = 2;
  else if (lead >= 0xE0 && lead <= 0xEF)
    need = 3;
  else if (lead >= 0xF0 && lead <= 0xF4)
    need = 4;
  if (need == 0) {  // a continuation byte or a byte that never starts a sequence
    if (subpart) *subpart = 1;
    return 0;
  }
  size_t k = 1;
  for (; k < need; ++k) {
    if (i + k >= n) {  // ran out of input: the sequence may still complete
      if (subpart) *subpart = k;
      if (incomplete) *incomplete = true;
      return 0;
    }
    const uint8_t b = p[i + k];
    const bool ok = (k == 1) ? secondByteOk(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) {
      if (subpart) *subpart = k;
      return 0;
    }
  }
  return need;
}

bool isValid(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = sequenceLength(s, i, nullptr, nullptr);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string toValidLossy(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    size_t sub = 0;
    const size_t len = sequenceLength(s, i, &sub, nullptr);
    if (len) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += kReplacement;
      i += sub;
    }
  }
  return out;
}

size_t completePrefixLength(std::string_view s) {
  // Only the last (at most 3) bytes can belong to an incomplete sequence: find the last lead byte.
  const size_t n = s.size();
  size_t start = n;
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const uint8_t b = static_cast<uint8_t>(s[n - back]);
    if ((b & 0xC0) != 0x80) {
      start = n - back;
      break;
    }
  }
  if (start == n) return n;
  bool incomplete = false;
  size_t sub = 0;
  const size_t len = sequenceLength(s, start, &sub, &incomplete);
  if (len == 0 && incomplete) return start;
  return n;
}

uint32_t decodeAt(std::string_view s, size_t i, size_t* len) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
  const uint8_t b0 = p[0];
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  if (b0 < 0xE0) {
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | (p[1] & 0x3Fu);
  }
  if (b0 < 0xF0) {
    *len = 3;
    return ((b0 & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
  }
  *len = 4;
  return ((b0 & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace ewgpu::utf8
