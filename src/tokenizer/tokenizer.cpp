// Tokenizer: loads tokenizer.json into its stages and runs the encode pipeline.
#include "tokenizer/tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace ewgpu {

struct Tokenizer::Impl {
  Normalizer normalizer;
  PreTokenizer preTokenizer;
  BpeModel model;
  Decoder decoder;
  AddedTokenMatcher rawAdded;         // added tokens with normalized = false, matched on the input
  AddedTokenMatcher normalizedAdded;  // normalized = true, matched on normalized text
  std::vector<AddedToken> added;
  StringIdMap addedIds;             // content -> id
  std::vector<std::string> tokens;  // id -> vocab string or added content
  std::vector<bool> special;        // id -> special added token
  int32_t vocabSize = 0;

  void encodeText(std::string_view text, bool firstSection, std::vector<int32_t>& ids) const;
  void encodeNormalized(std::string_view text, bool firstSection, std::vector<int32_t>& ids) const;
};

namespace {

Error loadError(const std::string& file, std::string problem) {
  return makeError(ErrorCode::kInvalidModelFolder, "tokenizer: " + problem, {{"file", file}, {"problem", problem}});
}

// Scratch buffers reused by every encode on a thread.
struct Workspace {
  std::vector<AddedTokenMatcher::Segment> segments, innerSegments;
  std::string normalized;
  Words words;
};
thread_local Workspace tWorkspace;

Result<std::vector<AddedToken>> parseAddedTokens(const nlohmann::json& j) {
  std::vector<AddedToken> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return makeError(ErrorCode::kBadRequest, "added_tokens is not an array");
  for (const auto& t : j) {
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
        !t["content"].is_string())
      return makeError(ErrorCode::kBadRequest, "added_tokens entry without id/content");
    AddedToken a;
    a.id = t["id"].get<int32_t>();
    if (a.id < 0 || a.id > (1 << 24)) return makeError(ErrorCode::kBadRequest, "added_tokens id out of range");
    a.content = t["content"];
    a.singleWord = t.value("single_word", false);
    a.lstrip = t.value("lstrip", false);
    a.rstrip = t.value("rstrip", false);
    a.normalized = t.value("normalized", !t.value("special", false));
    a.special = t.value("special", false);
    out.push_back(std::move(a));
  }
  return out;
}

template <class T>
Result<T> tagged(Result<T> r, const std::string& stage) {
  if (r.ok()) return r;
  Error e = std::move(r).error();
  return loadError("tokenizer.json", stage + ": " + e.message);
}

}  // namespace

Result<Tokenizer> Tokenizer::fromJson(std::string_view text) {
  const std::string file = "tokenizer.json";
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return loadError(file, "not valid JSON");
  if (!j.contains("model")) return loadError(file, "no model object");

  auto impl = std::make_shared<Impl>();
  auto normalizer = tagged(Normalizer::fromJson(j.value("normalizer", nlohmann::json())), "normalizer");
  if (!normalizer.ok()) return std::move(normalizer).error();
  impl->normalizer = std::move(*normalizer);
  auto pre = tagged(PreTokenizer::fromJson(j.value("pre_tokenizer", nlohmann::json())), "pre_tokenizer");
  if (!pre.ok()) return std::move(pre).error();
  impl->preTokenizer = std::move(*pre);
  auto model = tagged(BpeModel::fromJson(j["model"], impl->preTokenizer.byteLevel()), "model");
  if (!model.ok()) return std::move(model).error();
  impl->model = std::move(*model);
  auto added = tagged(parseAddedTokens(j.value("added_tokens", nlohmann::json())), "added_tokens");
  if (!added.ok()) return std::move(added).error();
  impl->added = std::move(*added);

  impl->tokens = impl->model.idToToken();
  for (const auto& a : impl->added) {
    if (impl->tokens.size() <= static_cast<size_t>(a.id)) impl->tokens.resize(a.id + 1);
    impl->tokens[a.id] = a.content;
    impl->addedIds.emplace(a.content, a.id);
    if (a.normalized && !impl->normalizer.isIdentity()) {
      AddedToken n = a;
      impl->normalizer.apply(a.content, n.content);
      impl->normalizedAdded.add(n);
    } else {
      impl->rawAdded.add(a);
    }
  }
  impl->vocabSize = static_cast<int32_t>(impl->tokens.size());
  impl->special.assign(impl->tokens.size(), false);
  for (const auto& a : impl->added) impl->special[a.id] = a.special;

  auto decoder = tagged(Decoder::fromJson(j.value("decoder", nlohmann::json()), impl->tokens), "decoder");
  if (!decoder.ok()) return std::move(decoder).error();
  impl->decoder = std::move(*decoder);

  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

Result<Tokenizer> Tokenizer::fromFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return loadError(path.string(), "file is missing");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return loadError(path.string(), "file cannot be read");
  auto t = fromJson(ss.str());
  if (!t.ok()) {
    Error e = std::move(t).error();
    e.detail["file"] = path.string();
    return e;
  }
  return t;
}

void Tokenizer::Impl::encodeNormalized(std::string_view text, bool firstSection, std::vector<int32_t>& ids) const {
  Words& words = tWorkspace.words;
  preTokenizer.split(text, firstSection, words);
  for (size_t i = 0; i < words.spans.size(); ++i) model.tokenizeWord(words.word(i), ids);
}

void Tokenizer::Impl::encodeText(std::string_view text, bool firstSection, std::vector<int32_t>& ids) const {
  std::string_view normalized = text;
  std::string local;  // normalized text must outlive the pre-tokenizer words
  if (!normalizer.isIdentity()) {
    normalizer.apply(text, local);
    normalized = local;
  }
  if (normalized.empty()) return;
  if (normalizedAdded.empty()) {
    encodeNormalized(normalized, firstSection, ids);
    return;
  }
  std::vector<AddedTokenMatcher::Segment> segs;
  normalizedAdded.split(normalized, segs);
  for (const auto& s : segs) {
    if (s.tokenId >= 0)
      ids.push_back(s.tokenId);
    else
      encodeNormalized(normalized.substr(s.begin, s.end - s.begin), firstSection && s.begin == 0, ids);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  if (!impl_ || text.empty()) return ids;
  ids.reserve(text.size() / 3 + 4);
  std::string lossy;
  if (!utf8::isValid(text)) {
    lossy = utf8::toValidLossy(text);
    text = lossy;
  }
  auto segs = std::move(tWorkspace.segments);  // moved out: encodeText may reuse the workspace
  if (impl_->rawAdded.empty())
    segs.assign(1, {0, static_cast<uint32_t>(text.size()), -1});
  else
    impl_->rawAdded.split(text, segs);
  for (const auto& s : segs) {
    if (s.tokenId >= 0)
      ids.push_back(s.tokenId);
    else
      impl_->encodeText(text.substr(s.begin, s.end - s.begin), s.begin == 0, ids);
  }
  tWorkspace.segments = std::move(segs);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  if (!impl_) return {};
  return impl_->decoder.decode(ids);
}

int32_t Tokenizer::vocabSize() const { return impl_ ? impl_->vocabSize : 0; }

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  if (!impl_) return std::nullopt;
  if (auto it = impl_->addedIds.find(token); it != impl_->addedIds.end()) return it->second;
  const auto& v = impl_->model.tokenToId();
  if (auto it = v.find(token); it != v.end()) return it->second;
  return std::nullopt;
}

std::string Tokenizer::idToToken(int32_t id) const {
  if (!impl_ || id < 0 || id >= impl_->vocabSize) return {};
  return impl_->tokens[id];
}

bool Tokenizer::isSpecial(int32_t id) const { return impl_ && id >= 0 && id < impl_->vocabSize && impl_->special[id]; }

const Decoder& Tokenizer::decoder() const { return impl_->decoder; }

}  // namespace ewgpu
