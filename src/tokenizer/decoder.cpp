// Decoder: per-id pieces are built once at load; decode() concatenates them, resolves byte-fallback runs
// and converts the bytes to well-formed UTF-8.
#include "tokenizer/decoder.h"

#include "tokenizer/bpe.h"
#include "tokenizer/utf8.h"

namespace ewgpu {

namespace {
void replaceAll(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t start = 0;
  for (size_t p; (p = s.find(from, start)) != std::string::npos; start = p + from.size()) {
    out.append(s, start, p - start);
    out.append(to);
  }
  if (start == 0) return;
  out.append(s, start, std::string::npos);
  s.swap(out);
}

int parseByteToken(std::string_view t) {  // "<0xAB>" -> 0xAB, else -1
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int v = 0;
  for (char c : t.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else
      return -1;
  }
  return v;
}
}  // namespace

Status Decoder::collect(const nlohmann::json& j, std::vector<Step>& steps) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return makeError(ErrorCode::kBadRequest, "decoder without a type");
  Step s;
  s.type = j["type"];
  if (s.type == "Sequence") {
    for (const auto& sub : j.value("decoders", nlohmann::json::array())) EWGPU_TRY(collect(sub, steps));
    return {};
  }
  if (s.type == "Replace") {
    const auto& pat = j.value("pattern", nlohmann::json::object());
    if (!pat.contains("String") || !pat["String"].is_string())
      return makeError(ErrorCode::kBadRequest, "Replace decoder supports String patterns only");
    s.pattern = pat["String"];
    s.content = j.value("content", "");
  } else if (s.type == "Strip") {
    s.content = j.value("content", " ");
    s.start = j.value("start", 0);
    s.stop = j.value("stop", 0);
    if (s.content.size() != 1) return makeError(ErrorCode::kBadRequest, "Strip decoder content must be one byte");
  } else if (s.type == "Metaspace") {
    s.pattern = j.value("replacement", "\xE2\x96\x81");
    const std::string scheme = j.value("prepend_scheme", j.value("add_prefix_space", true) ? "always" : "never");
    s.start = scheme == "never" ? 0 : 1;
  } else if (s.type != "ByteLevel" && s.type != "ByteFallback" && s.type != "Fuse") {
    return makeError(ErrorCode::kBadRequest, "unsupported decoder type " + s.type, {{"type", s.type}});
  }
  steps.push_back(std::move(s));
  return {};
}

Result<Decoder> Decoder::fromJson(const nlohmann::json& j, const std::vector<std::string>& tokens) {
  Decoder d;
  std::vector<Step> steps;
  if (j.is_null())
    d.joinWithSpace_ = true;
  else
    EWGPU_TRY(collect(j, steps));

  // Whole-text strips: a Strip after Fuse (or after a ByteLevel, which fuses), Metaspace's first-token space.
  bool fused = false;
  for (const auto& s : steps) {
    if (s.type == "Fuse" || s.type == "ByteLevel") fused = true;
    if (s.type == "Strip" && fused) {
      d.stripStart_ = s.start;
      d.stripStop_ = s.stop;
      d.stripChar_ = s.content[0];
    }
    if (s.type == "Metaspace" && s.start) {
      d.stripStart_ = 1;
      d.stripChar_ = ' ';
    }
  }

  const auto& alpha = ByteLevelAlphabet::get();
  d.offsets_.reserve(tokens.size() + 1);
  d.byteValue_.assign(tokens.size(), -1);
  d.offsets_.push_back(0);
  std::string piece, bytes;
  for (size_t id = 0; id < tokens.size(); ++id) {
    piece = tokens[id];
    bool fusedHere = false;
    for (const auto& s : steps) {
      if (s.type == "ByteLevel") {
        if (alpha.decode(piece, bytes)) piece = bytes;  // else: the token's own bytes (added tokens)
        fusedHere = true;
      } else if (s.type == "Replace") {
        replaceAll(piece, s.pattern, s.content);
      } else if (s.type == "Metaspace") {
        replaceAll(piece, s.pattern, " ");
      } else if (s.type == "ByteFallback") {
        const int b = parseByteToken(piece);
        if (b >= 0) {
          d.byteValue_[id] = static_cast<int16_t>(b);
          piece.assign(1, static_cast<char>(b));
        }
      } else if (s.type == "Fuse") {
        fusedHere = true;
      } else if (s.type == "Strip" && !fusedHere) {  // per-token strip before any fusing
        size_t b = 0, e = piece.size();
        for (int k = 0; k < s.start && b < e && piece[b] == s.content[0]; ++k) ++b;
        for (int k = 0; k < s.stop && e > b && piece[e - 1] == s.content[0]; ++k) --e;
        piece = piece.substr(b, e - b);
      }
    }
    d.arena_ += piece;
    d.offsets_.push_back(static_cast<uint32_t>(d.arena_.size()));
  }
  return d;
}

std::string Decoder::decode(std::span<const int32_t> ids) const {
  std::string bytes, run;
  bool firstPiece = true;
  auto flushRun = [&] {
    if (run.empty()) return;
    if (utf8::isValid(run))
      bytes += run;
    else
      for (size_t i = 0; i < run.size(); ++i) bytes += utf8::kReplacement;
    run.clear();
  };
  for (int32_t id : ids) {
    if (!known(id)) continue;
    if (joinWithSpace_ && !firstPiece) bytes += ' ';
    firstPiece = false;
    if (byteValue_[id] >= 0) {
      run += static_cast<char>(byteValue_[id]);
      continue;
    }
    flushRun();
    bytes += piece(id);
  }
  flushRun();
  std::string text = utf8::isValid(bytes) ? std::move(bytes) : utf8::toValidLossy(bytes);
  size_t b = 0, e = text.size();
  for (int k = 0; k < stripStart_ && b < e && text[b] == stripChar_; ++k) ++b;
  for (int k = 0; k < stripStop_ && e > b && text[e - 1] == stripChar_; ++k) --e;
  if (b > 0 || e < text.size()) text = text.substr(b, e - b);
  return text;
}

}  // namespace ewgpu
