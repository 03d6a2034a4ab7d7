// Pre-tokenizer steps. Every step maps a list of words to a new list; splitting steps only produce new
// byte ranges over the same text, the content-changing ones (ByteLevel prefix space, Metaspace) write a
// new buffer. The split behaviours follow HF tokenizers' SplitDelimiterBehavior.
#include "tokenizer/pretokenizer.h"
#include "tokenizer/json_fields.h"

namespace ewgpu {

namespace {
// The GPT-2 word pattern that ByteLevel applies when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// HF Punctuation: ASCII punctuation or a Unicode P* character, each isolated by default.
constexpr std::string_view kPunctuationPattern = R"([\p{P}!-/:-@\[-`{-~])";

std::string escapeLiteral(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

Result<PreTokenizer::Behavior> PreTokenizer::parseBehavior(const nlohmann::json& j, const std::string& path) {
  auto b = tokjson::optString(j, "behavior", "Isolated", path);
  if (!b) return std::move(b).error();
  if (*b == "Removed") return Behavior::kRemoved;
  if (*b == "Isolated") return Behavior::kIsolated;
  if (*b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (*b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (*b == "Contiguous") return Behavior::kContiguous;
  return makeError(ErrorCode::kBadRequest, "unsupported split behavior " + *b,
                   {{"behavior", *b}, {"field", tokjson::join(path, "behavior")}, {"problem", "unsupported"}});
}

Result<PreTokenizer> PreTokenizer::fromJson(const nlohmann::json& j) {
  PreTokenizer p;
  if (!j.is_null()) EWGPU_TRY(p.addSteps(j, "pre_tokenizer"));
  return p;
}

Status PreTokenizer::addSplit(std::string_view regexSource, Behavior b, bool invert) {
  auto re = Regex::compile(regexSource);
  if (!re.ok()) return std::move(re).error();
  Step s;
  s.kind = Kind::kSplit;
  s.regex = std::move(*re);
  s.behavior = b;
  s.invert = invert;
  steps_.push_back(std::move(s));
  return {};
}

Status PreTokenizer::addSteps(const nlohmann::json& j, const std::string& path) {
  using namespace tokjson;
  if (!j.is_object()) return fieldError(path, "wrong_type", "is not an object");
  if (!j.contains("type") || !j["type"].is_string())
    return fieldError(join(path, "type"), "wrong_type", "is missing or not a string");
  const std::string type = j["type"];
  if (type == "Sequence") {
    auto subs = optArray(j, "pretokenizers", path);
    if (!subs) return std::move(subs).error();
    for (size_t i = 0; i < (*subs)->size(); ++i) EWGPU_TRY(addSteps((**subs)[i], index(join(path, "pretokenizers"), i)));
    return {};
  }
  if (type == "Split") {
    auto b = parseBehavior(j, path);
    if (!b.ok()) return std::move(b).error();
    const nlohmann::json* pat = find(j, "pattern");
    std::string source;
    if (pat && pat->contains("Regex") && (*pat)["Regex"].is_string())
      source = (*pat)["Regex"];
    else if (pat && pat->contains("String") && (*pat)["String"].is_string())
      source = escapeLiteral((*pat)["String"].get<std::string>());
    else
      return fieldError(join(path, "pattern"), "wrong_type", "is not {\"String\": ...} or {\"Regex\": ...}");
    bool invert = false;
    EWGPU_ASSIGN(invert, optBool(j, "invert", false, path));
    Status st = addSplit(source, *b, invert);
    if (!st) return fieldError(join(path, "pattern"), "bad_value", "does not compile: " + st.error().message);
    return {};
  }
  if (type == "ByteLevel") {
    byteLevel_ = true;
    bool prefix = false, regex = true;
    EWGPU_ASSIGN(prefix, optBool(j, "add_prefix_space", false, path));
    EWGPU_ASSIGN(regex, optBool(j, "use_regex", true, path));
    if (prefix) steps_.push_back(Step{Kind::kPrefixSpace});
    if (regex) return addSplit(kGpt2Pattern, Behavior::kIsolated, false);
    return {};
  }
  if (type == "Metaspace") {
    Step s;
    s.kind = Kind::kMetaspace;
    EWGPU_ASSIGN(s.replacement, optString(j, "replacement", "\xE2\x96\x81", path));
    if (s.replacement.empty()) return fieldError(join(path, "replacement"), "bad_value", "is empty");
    bool add_prefix = true, split = true;
    EWGPU_ASSIGN(add_prefix, optBool(j, "add_prefix_space", true, path));
    std::string scheme;
    EWGPU_ASSIGN(scheme, optString(j, "prepend_scheme", add_prefix ? "always" : "never", path));
    s.prependScheme = scheme == "first" ? 1 : scheme == "never" ? 2 : 0;
    EWGPU_ASSIGN(split, optBool(j, "split", true, path));
    steps_.push_back(std::move(s));
    if (split) return addSplit(escapeLiteral(steps_.back().replacement), Behavior::kMergedWithNext, false);
    return {};
  }
  if (type == "Digits") {
    bool individual = false;
    EWGPU_ASSIGN(individual, optBool(j, "individual_digits", false, path));
    return addSplit(individual ? R"(\p{N})" : R"(\p{N}+)", Behavior::kIsolated, false);
  }
  if (type == "BertPreTokenizer") {  // whitespace removed, then every punctuation character on its own
    EWGPU_TRY(addSplit(R"(\s+)", Behavior::kRemoved, false));
    return addSplit(kPunctuationPattern, Behavior::kIsolated, false);
  }
  if (type == "WhitespaceSplit") return addSplit(R"(\s+)", Behavior::kRemoved, false);
  if (type == "Whitespace") return addSplit(R"(\w+|[^\w\s]+)", Behavior::kRemoved, true);
  if (type == "Punctuation") {
    auto b = parseBehavior(j, path);
    if (!b.ok()) return std::move(b).error();
    return addSplit(kPunctuationPattern, *b, false);
  }
  return makeError(ErrorCode::kBadRequest, "unsupported pre_tokenizer type " + type,
                   {{"type", type}, {"field", join(path, "type")}, {"problem", "unsupported"}});
}

void PreTokenizer::applySplit(const Step& s, Words& w) {
  w.scratchSpans.clear();
  for (const auto& span : w.spans) {
    const std::string_view word = w.text.substr(span.begin, span.end - span.begin);
    auto& seg = w.segments;
    seg.clear();
    uint32_t last = 0;
    s.regex.forEachMatch(word, [&](size_t b, size_t e) {
      if (b > last) seg.push_back({last, static_cast<uint32_t>(b), s.invert});
      seg.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), !s.invert});
      last = static_cast<uint32_t>(e);
    });
    if (last < word.size()) seg.push_back({last, static_cast<uint32_t>(word.size()), s.invert});

    // Apply the behaviour to this word's segments (output offsets are relative to the word).
    const size_t first = w.scratchSpans.size();
    auto& out = w.scratchSpans;
    bool previousMatch = false;
    switch (s.behavior) {
      case Behavior::kRemoved:
        for (const auto& g : seg)
          if (!g.isMatch) out.push_back({g.begin, g.end});
        break;
      case Behavior::kIsolated:
        for (const auto& g : seg) out.push_back({g.begin, g.end});
        break;
      case Behavior::kMergedWithPrevious:
        for (const auto& g : seg) {
          if (g.isMatch && !previousMatch && out.size() > first)
            out.back().end = g.end;
          else
            out.push_back({g.begin, g.end});
          previousMatch = g.isMatch;
        }
        break;
      case Behavior::kContiguous:
        for (size_t i = 0; i < seg.size(); ++i) {
          if (i > 0 && seg[i].isMatch == previousMatch)
            out.back().end = seg[i].end;
          else
            out.push_back({seg[i].begin, seg[i].end});
          previousMatch = seg[i].isMatch;
        }
        break;
      case Behavior::kMergedWithNext: {
        // A match not followed by another match joins the segment after it.
        uint32_t pendingStart = UINT32_MAX;
        for (size_t i = 0; i < seg.size(); ++i) {
          const bool nextIsPlain = i + 1 < seg.size() && !seg[i + 1].isMatch;
          if (seg[i].isMatch && nextIsPlain) {
            pendingStart = seg[i].begin;
            continue;
          }
          out.push_back({pendingStart != UINT32_MAX ? pendingStart : seg[i].begin, seg[i].end});
          pendingStart = UINT32_MAX;
        }
        break;
      }
    }
    // Make offsets absolute; drop empty words.
    size_t keep = first;
    for (size_t i = first; i < out.size(); ++i) {
      if (out[i].end == out[i].begin) continue;
      out[keep++] = {out[i].begin + span.begin, out[i].end + span.begin};
    }
    out.resize(keep);
  }
  w.spans.swap(w.scratchSpans);
}

void PreTokenizer::applyPrefixSpace(Words& w) {
  w.scratchText.clear();
  w.scratchSpans.clear();
  for (size_t i = 0; i < w.spans.size(); ++i) {
    const std::string_view word = w.word(i);
    const auto b = static_cast<uint32_t>(w.scratchText.size());
    if (word.empty() || word[0] != ' ') w.scratchText += ' ';
    w.scratchText.append(word);
    w.scratchSpans.push_back({b, static_cast<uint32_t>(w.scratchText.size())});
  }
  w.owned.swap(w.scratchText);
  w.text = w.owned;
  w.spans.swap(w.scratchSpans);
}

void PreTokenizer::applyMetaspace(const Step& s, bool firstSection, Words& w) {
  w.scratchText.clear();
  w.scratchSpans.clear();
  for (size_t i = 0; i < w.spans.size(); ++i) {
    const std::string_view word = w.word(i);
    const auto b = static_cast<uint32_t>(w.scratchText.size());
    const bool prepend = s.prependScheme == 0 || (s.prependScheme == 1 && firstSection && i == 0);
    if (prepend && word.substr(0, 1) != " " && word.substr(0, s.replacement.size()) != s.replacement)
      w.scratchText += s.replacement;
    for (char c : word) {
      if (c == ' ')
        w.scratchText += s.replacement;
      else
        w.scratchText += c;
    }
    w.scratchSpans.push_back({b, static_cast<uint32_t>(w.scratchText.size())});
  }
  w.owned.swap(w.scratchText);
  w.text = w.owned;
  w.spans.swap(w.scratchSpans);
}

void PreTokenizer::split(std::string_view text, bool firstSection, Words& out) const {
  out.text = text;
  out.spans.clear();
  if (!text.empty()) out.spans.push_back({0, static_cast<uint32_t>(text.size())});
  for (const auto& s : steps_) {
    switch (s.kind) {
      case Kind::kSplit:
        applySplit(s, out);
        break;
      case Kind::kPrefixSpace:
        applyPrefixSpace(out);
        break;
      case Kind::kMetaspace:
        applyMetaspace(s, firstSection, out);
        break;
    }
  }
}

}  // namespace ewgpu
