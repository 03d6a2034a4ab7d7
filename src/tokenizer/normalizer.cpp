// Normalizer steps. Unicode forms come from libutf8proc; an all-ASCII string is left as is by every
// normalization form, so that common case never reaches utf8proc.
#include "tokenizer/normalizer.h"
#include "tokenizer/json_fields.h"

#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/utf8.h"

namespace ewgpu {

namespace {

bool isAscii(std::string_view s) {
  for (char c : s)
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  return true;
}

void utf8procMap(std::string& text, int options) {
  if (isAscii(text)) return;
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &out, static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n >= 0 && out) text.assign(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  std::free(out);  // on failure (never for well-formed input) the text stays unnormalized
}

// NFC leaves a code point alone when it has no decomposition, a zero combining class and cannot be the
// second half of a composition (Hangul jamo and syllables compose algorithmically: never inert).
bool nfcInert(uint32_t cp) {
  if (cp < 0x80) return true;
  if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xAC00 && cp <= 0xD7A3)) return false;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  return p->combining_class == 0 && p->decomp_seqindex == UINT16_MAX &&
         (p->comb_index == UINT16_MAX || p->comb_index < 0x8000);
}

// A code point before which NFC can cut the text: zero combining class and never a composition second.
bool nfcBoundary(uint32_t cp) {
  if (cp < 0x80) return true;
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;  // jamo V, T
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  return p->combining_class == 0 && (p->comb_index == UINT16_MAX || p->comb_index < 0x8000);
}

// NFC that only hands utf8proc the stretches (between safe boundaries) holding a code point NFC may change.
void nfc(std::string& text, std::string& scratch) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n && static_cast<uint8_t>(text[i]) < 0x80) ++i;
  size_t segStart = 0, copied = 0, len = 0;
  bool dirty = false, changed = false;
  auto flush = [&](size_t end) {
    if (!dirty) return;
    if (!changed) scratch.clear();
    changed = true;
    scratch.append(text, copied, segStart - copied);
    std::string seg = text.substr(segStart, end - segStart);
    utf8procMap(seg, UTF8PROC_COMPOSE);
    scratch += seg;
    copied = end;
  };
  // Everything before the first non-ASCII byte is inert; start at the last boundary before it.
  segStart = i > 0 ? i - 1 : 0;
  for (; i < n; i += len) {
    const uint8_t b = static_cast<uint8_t>(text[i]);
    const uint32_t cp = b < 0x80 ? (len = 1, b) : utf8::decodeAt(text, i, &len);
    if (nfcBoundary(cp)) {
      flush(i);
      segStart = i;
      dirty = false;
    }
    dirty = dirty || !nfcInert(cp);
  }
  flush(n);
  if (!changed) return;
  scratch.append(text, copied, std::string::npos);
  text.swap(scratch);
}

void lowercase(std::string& text, std::string& scratch) {
  scratch.clear();
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      scratch += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = utf8::decodeAt(text, i, &len);
    utf8::append(scratch, static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    i += len;
  }
  text.swap(scratch);
}

bool isWhitespace(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return true;
  if (cp < 0x80) return false;
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ZS || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

void strip(std::string& text, bool left, bool right) {
  size_t b = 0, e = text.size();
  if (left) {
    while (b < e) {
      size_t len = 0;
      if (!isWhitespace(utf8::decodeAt(text, b, &len))) break;
      b += len;
    }
  }
  if (right) {
    while (e > b) {
      size_t s = e - 1;
      while (s > b && (static_cast<uint8_t>(text[s]) & 0xC0) == 0x80) --s;
      size_t len = 0;
      if (!isWhitespace(utf8::decodeAt(text, s, &len))) break;
      e = s;
    }
  }
  text = text.substr(b, e - b);
}

// HF BertNormalizer, in its order: clean_text (drop U+0000, U+FFFD and control characters other than \t \n \r;
// every whitespace becomes a space), CJK ideographs padded with spaces, accents stripped (NFD, then nonspacing
// marks Mn dropped; the text stays decomposed), lowercase.
bool isCjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool isBertControl(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CN ||
         cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS;
}

void bertNormalize(std::string& text, std::string& scratch, bool cleanText, bool chineseChars, bool stripAccents,
                   bool lower) {
  if (cleanText || chineseChars) {
    scratch.clear();
    for (size_t i = 0, len = 0; i < text.size(); i += len) {
      const uint32_t cp = utf8::decodeAt(text, i, &len);
      if (cleanText && (cp == 0 || cp == 0xFFFD || isBertControl(cp))) continue;
      if (cleanText && isWhitespace(cp)) {
        scratch += ' ';
      } else if (chineseChars && isCjk(cp)) {
        scratch += ' ';
        utf8::append(scratch, cp);
        scratch += ' ';
      } else {
        scratch.append(text, i, len);
      }
    }
    text.swap(scratch);
  }
  if (stripAccents && !isAscii(text)) {
    utf8procMap(text, UTF8PROC_DECOMPOSE);
    scratch.clear();
    for (size_t i = 0, len = 0; i < text.size(); i += len) {
      const uint32_t cp = utf8::decodeAt(text, i, &len);
      if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) != UTF8PROC_CATEGORY_MN) scratch.append(text, i, len);
    }
    text.swap(scratch);
  }
  if (lower) lowercase(text, scratch);
}

}  // namespace

Result<Normalizer> Normalizer::fromJson(const nlohmann::json& j) {
  Normalizer n;
  if (j.is_null()) return n;
  EWGPU_TRY(addSteps(j, n.steps_, "normalizer"));
  return n;
}

Status Normalizer::addSteps(const nlohmann::json& j, std::vector<Step>& steps, const std::string& path) {
  using namespace tokjson;
  if (!j.is_object()) return fieldError(path, "wrong_type", "is not an object");
  if (!j.contains("type") || !j["type"].is_string())
    return fieldError(join(path, "type"), "wrong_type", "is missing or not a string");
  const std::string type = j["type"];
  if (type == "Sequence") {
    auto subs = optArray(j, "normalizers", path);
    if (!subs) return std::move(subs).error();
    for (size_t i = 0; i < (*subs)->size(); ++i)
      EWGPU_TRY(addSteps((**subs)[i], steps, index(join(path, "normalizers"), i)));
    return {};
  }
  Step s;
  if (type == "NFC")
    s.kind = Kind::kNfc;
  else if (type == "NFD")
    s.kind = Kind::kNfd;
  else if (type == "NFKC")
    s.kind = Kind::kNfkc;
  else if (type == "NFKD")
    s.kind = Kind::kNfkd;
  else if (type == "Lowercase")
    s.kind = Kind::kLowercase;
  else if (type == "StripAccents")
    s.kind = Kind::kStripAccents;
  else if (type == "BertNormalizer") {
    s.kind = Kind::kBert;
    EWGPU_ASSIGN(s.cleanText, optBool(j, "clean_text", true, path));
    EWGPU_ASSIGN(s.chineseChars, optBool(j, "handle_chinese_chars", true, path));
    EWGPU_ASSIGN(s.lowercase, optBool(j, "lowercase", true, path));
    EWGPU_ASSIGN(s.stripAccents, optBool(j, "strip_accents", s.lowercase, path));  // null: follows lowercase
  }
  else if (type == "Prepend") {
    s.kind = Kind::kPrepend;
    EWGPU_ASSIGN(s.text, optString(j, "prepend", "", path));
  } else if (type == "Strip") {
    s.kind = Kind::kStrip;
    EWGPU_ASSIGN(s.left, optBool(j, "strip_left", true, path));
    EWGPU_ASSIGN(s.right, optBool(j, "strip_right", true, path));
  } else if (type == "Replace") {
    s.kind = Kind::kReplace;
    EWGPU_ASSIGN(s.text, optString(j, "content", "", path));
    const nlohmann::json* pat = find(j, "pattern");
    if (pat && pat->contains("String") && (*pat)["String"].is_string()) {
      s.literal = (*pat)["String"];
      if (s.literal.empty()) return fieldError(join(path, "pattern.String"), "bad_value", "is empty");
    } else if (pat && pat->contains("Regex") && (*pat)["Regex"].is_string()) {
      auto re = Regex::compile((*pat)["Regex"].get<std::string>());
      if (!re.ok()) return fieldError(join(path, "pattern.Regex"), "bad_value", "does not compile: " + re.error().message);
      s.regex = std::move(*re);
    } else {
      return fieldError(join(path, "pattern"), "wrong_type", "is not {\"String\": ...} or {\"Regex\": ...}");
    }
  } else {
    return makeError(ErrorCode::kBadRequest, "unsupported normalizer type " + type,
                     {{"type", type}, {"field", join(path, "type")}, {"problem", "unsupported"}});
  }
  steps.push_back(std::move(s));
  return {};
}

void Normalizer::applyStep(const Step& s, std::string& text, std::string& scratch) {
  switch (s.kind) {
    case Kind::kNfc:
      nfc(text, scratch);
      break;
    case Kind::kNfd:
      utf8procMap(text, UTF8PROC_DECOMPOSE);
      break;
    case Kind::kNfkc:
      utf8procMap(text, UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
      break;
    case Kind::kNfkd:
      utf8procMap(text, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
      break;
    case Kind::kStripAccents:
      utf8procMap(text, UTF8PROC_DECOMPOSE | UTF8PROC_STRIPMARK);
      break;
    case Kind::kLowercase:
      lowercase(text, scratch);
      break;
    case Kind::kBert:
      bertNormalize(text, scratch, s.cleanText, s.chineseChars, s.stripAccents, s.lowercase);
      break;
    case Kind::kStrip:
      strip(text, s.left, s.right);
      break;
    case Kind::kPrepend:
      if (!text.empty()) text.insert(0, s.text);
      break;
    case Kind::kReplace:
      scratch.clear();
      if (!s.literal.empty()) {
        size_t start = 0;
        for (size_t p; (p = text.find(s.literal, start)) != std::string::npos; start = p + s.literal.size()) {
          scratch.append(text, start, p - start);
          scratch += s.text;
        }
        scratch.append(text, start, std::string::npos);
      } else {
        size_t last = 0;
        s.regex.forEachMatch(text, [&](size_t b, size_t e) {
          scratch.append(text, last, b - last);
          scratch += s.text;
          last = e;
        });
        scratch.append(text, last, std::string::npos);
      }
      text.swap(scratch);
      break;
  }
}

void Normalizer::apply(std::string_view in, std::string& out) const {
  out.assign(in.data(), in.size());
  std::string scratch;
  for (const auto& s : steps_) applyStep(s, out, scratch);
}

}  // namespace ewgpu
