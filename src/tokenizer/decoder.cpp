// Decoder: per-id pieces are built once at load; decode() concatenates them, resolves byte-fallback runs
// and converts the bytes to well-formed UTF-8.
#include "tokenizer/decoder.h"

#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"
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

// HF WordPiece decoder, per token: a continuation ("##ing") loses its prefix, any other token gets a space in
// front (the whole text's first space is stripped afterwards, see stripStart_); then, with cleanup, the
// tokenization-space cleanup (" ." -> ".", " n't" -> "n't", ...). Differs from HF only for a continuation as the
// very first token, which HF leaves with its prefix.
void wordPiecePiece(std::string& piece, const std::string& prefix, bool cleanup) {
  if (!prefix.empty() && piece.rfind(prefix, 0) == 0)
    piece.erase(0, prefix.size());
  else
    piece.insert(0, 1, ' ');
  if (!cleanup) return;
  constexpr std::pair<std::string_view, std::string_view> kCleanup[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},     {" ' ", "'"},    {" n't", "n't"},
      {" 'm", "'m"},   {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (auto [from, to] : kCleanup) replaceAll(piece, from, to);
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

Status Decoder::collect(const nlohmann::json& j, std::vector<Step>& steps, const std::string& path) {
  using namespace tokjson;
  if (!j.is_object()) return fieldError(path, "wrong_type", "is not an object");
  if (!j.contains("type") || !j["type"].is_string())
    return fieldError(join(path, "type"), "wrong_type", "is missing or not a string");
  Step s;
  s.type = j["type"];
  if (s.type == "Sequence") {
    auto subs = optArray(j, "decoders", path);
    if (!subs) return std::move(subs).error();
    for (size_t i = 0; i < (*subs)->size(); ++i) EWGPU_TRY(collect((**subs)[i], steps, index(join(path, "decoders"), i)));
    return {};
  }
  if (s.type == "Replace") {
    const nlohmann::json* pat = find(j, "pattern");
    if (!pat || !pat->contains("String") || !(*pat)["String"].is_string())
      return fieldError(join(path, "pattern"), "unsupported", "is not {\"String\": ...} (Replace decoders take String patterns only)");
    s.pattern = (*pat)["String"];
    EWGPU_ASSIGN(s.content, optString(j, "content", "", path));
  } else if (s.type == "Strip") {
    EWGPU_ASSIGN(s.content, optString(j, "content", " ", path));
    int64_t v = 0;
    EWGPU_ASSIGN(v, optInt(j, "start", 0, 0, 1 << 20, path));
    s.start = (int)v;
    EWGPU_ASSIGN(v, optInt(j, "stop", 0, 0, 1 << 20, path));
    s.stop = (int)v;
    if (s.content.size() != 1) return fieldError(join(path, "content"), "bad_value", "is not one byte");
  } else if (s.type == "Metaspace") {
    EWGPU_ASSIGN(s.pattern, optString(j, "replacement", "\xE2\x96\x81", path));
    bool add_prefix = true;
    EWGPU_ASSIGN(add_prefix, optBool(j, "add_prefix_space", true, path));
    std::string scheme;
    EWGPU_ASSIGN(scheme, optString(j, "prepend_scheme", add_prefix ? "always" : "never", path));
    s.start = scheme == "never" ? 0 : 1;
  } else if (s.type == "WordPiece") {
    EWGPU_ASSIGN(s.pattern, optString(j, "prefix", "##", path));
    bool cleanup = true;
    EWGPU_ASSIGN(cleanup, optBool(j, "cleanup", true, path));
    s.start = cleanup ? 1 : 0;
  } else if (s.type != "ByteLevel" && s.type != "ByteFallback" && s.type != "Fuse") {
    return makeError(ErrorCode::kBadRequest, "unsupported decoder type " + s.type,
                     {{"type", s.type}, {"field", join(path, "type")}, {"problem", "unsupported"}});
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
    EWGPU_TRY(collect(j, steps, "decoder"));

  // Whole-text strips: a Strip after Fuse (or after a ByteLevel, which fuses), Metaspace's first-token space.
  bool fused = false;
  for (const auto& s : steps) {
    if (s.type == "Fuse" || s.type == "ByteLevel") fused = true;
    if (s.type == "Strip" && fused) {
      d.stripStart_ = s.start;
      d.stripStop_ = s.stop;
      d.stripChar_ = s.content[0];
    }
    if ((s.type == "Metaspace" && s.start) || s.type == "WordPiece") {
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
      } else if (s.type == "WordPiece") {
        wordPiecePiece(piece, s.pattern, s.start != 0);
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
