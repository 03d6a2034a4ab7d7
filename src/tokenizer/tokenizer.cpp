// Tokenizer: loads tokenizer.json into its stages and runs the encode pipeline.
#include "tokenizer/tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/wordpiece.h"

namespace ewgpu {

struct Tokenizer::Impl {
  Normalizer normalizer;
  PreTokenizer preTokenizer;
  BpeModel model;                         // when the model is BPE
  std::optional<WordPieceModel> wordPiece;  // when the model is WordPiece (BERT); `model` is then unused
  std::vector<int32_t> prefixIds, suffixIds;  // post_processor's single-sequence template around the text
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

// INVALID_MODEL_FOLDER {file, field, problem} naming the field of tokenizer.json that is wrong.
Error fieldLoadError(const std::string& file, const std::string& field, const std::string& problem,
                     const std::string& what) {
  return makeError(ErrorCode::kInvalidModelFolder, file + ": " + what,
                   {{"file", file}, {"field", field}, {"problem", problem}});
}

// Scratch buffers reused by every encode on a thread.
struct Workspace {
  std::vector<AddedTokenMatcher::Segment> segments, innerSegments;
  std::string normalized;
  Words words;
};
thread_local Workspace tWorkspace;

Result<std::vector<AddedToken>> parseAddedTokens(const nlohmann::json& j, size_t model_ids) {
  using namespace tokjson;
  std::vector<AddedToken> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return fieldError("added_tokens", "wrong_type", "is not an array");
  // Ids are dense in real files; the bound keeps the id table linear in the file's size.
  const int64_t limit = std::min<int64_t>(1 << 24, (int64_t)model_ids + 2 * (int64_t)j.size() + 65536);
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& t = j[i];
    const std::string path = index("added_tokens", i);
    if (!t.is_object()) return fieldError(path, "wrong_type", "is not an object");
    if (!t.contains("content") || !t["content"].is_string())
      return fieldError(join(path, "content"), "wrong_type", "is missing or not a string");
    if (!t.contains("id")) return fieldError(join(path, "id"), "wrong_type", "is missing");
    AddedToken a;
    int64_t id = 0;
    EWGPU_ASSIGN(id, optInt(t, "id", 0, 0, limit - 1, path));
    a.id = static_cast<int32_t>(id);
    a.content = t["content"];
    if (a.content.empty()) return fieldError(join(path, "content"), "bad_value", "is empty");
    EWGPU_ASSIGN(a.singleWord, optBool(t, "single_word", false, path));
    EWGPU_ASSIGN(a.lstrip, optBool(t, "lstrip", false, path));
    EWGPU_ASSIGN(a.rstrip, optBool(t, "rstrip", false, path));
    EWGPU_ASSIGN(a.special, optBool(t, "special", false, path));
    EWGPU_ASSIGN(a.normalized, optBool(t, "normalized", !a.special, path));
    out.push_back(std::move(a));
  }
  return out;
}

// The post_processor's single-sequence template as the ids before and after the text: TemplateProcessing
// (`single`: SpecialToken items around one Sequence, ids from `special_tokens`), BertProcessing / RobertaProcessing
// (cls ... sep), or either inside a Sequence. Any other processor (ByteLevel) adds no ids.
Status parsePostProcessor(const nlohmann::json& j, std::vector<int32_t>& prefix, std::vector<int32_t>& suffix,
                          const std::string& path = "post_processor") {
  using namespace tokjson;
  if (j.is_null()) return {};
  if (!j.is_object()) return fieldError(path, "wrong_type", "is not an object");
  std::string type;
  EWGPU_ASSIGN(type, optString(j, "type", "", path));
  auto idOf = [&](const nlohmann::json& pair, const std::string& field) -> Result<int32_t> {
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer() || pair[1].get<int64_t>() < 0 ||
        pair[1].get<int64_t>() >= (1 << 24))
      return fieldError(join(path, field), "wrong_type", "is not [token, id]");
    return (int32_t)pair[1].get<int64_t>();
  };
  if (type == "Sequence") {
    auto subs = optArray(j, "processors", path);
    if (!subs) return std::move(subs).error();
    for (size_t i = 0; i < (*subs)->size(); ++i)
      EWGPU_TRY(parsePostProcessor((**subs)[i], prefix, suffix, index(join(path, "processors"), i)));
    return {};
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const nlohmann::json* cls = find(j, "cls");
    const nlohmann::json* sep = find(j, "sep");
    if (!cls || !sep) return fieldError(path, "missing_field", "lacks cls or sep");
    int32_t id = 0;
    EWGPU_ASSIGN(id, idOf(*cls, "cls"));
    prefix = {id};
    EWGPU_ASSIGN(id, idOf(*sep, "sep"));
    suffix = {id};
    return {};
  }
  if (type != "TemplateProcessing") return {};
  auto single = optArray(j, "single", path);
  if (!single) return std::move(single).error();
  const nlohmann::json* specials = find(j, "special_tokens");
  std::vector<int32_t> before, after;
  bool sawSequence = false;
  for (size_t i = 0; i < (*single)->size(); ++i) {
    const nlohmann::json& item = (**single)[i];
    const std::string itemPath = index(join(path, "single"), i);
    if (item.contains("Sequence")) {
      sawSequence = true;
      continue;
    }
    const nlohmann::json* st = find(item, "SpecialToken");
    if (!st || !st->contains("id") || !(*st)["id"].is_string())
      return fieldError(itemPath, "wrong_type", "is neither a Sequence nor a SpecialToken with an id");
    const std::string name = (*st)["id"];
    const nlohmann::json* tok = specials ? find(*specials, name.c_str()) : nullptr;
    const nlohmann::json* ids = tok ? find(*tok, "ids") : nullptr;
    if (!ids || !ids->is_array())
      return fieldError(join(join(path, "special_tokens"), name), "missing_field", "has no ids");
    for (const auto& id : *ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (1 << 24))
        return fieldError(join(join(path, "special_tokens"), name), "bad_value", "holds an id outside [0, 2^24)");
      (sawSequence ? after : before).push_back((int32_t)id.get<int64_t>());
    }
  }
  prefix = std::move(before);
  suffix = std::move(after);
  return {};
}

// A stage's error as INVALID_MODEL_FOLDER {file, field, problem}; the field is the stage when the stage's parser
// named none.
template <class T>
Result<T> tagged(Result<T> r, const std::string& stage) {
  if (r.ok()) return r;
  Error e = std::move(r).error();
  const std::string field = e.detail.contains("field") && e.detail["field"].is_string() ? e.detail["field"].get<std::string>() : stage;
  const std::string problem =
      e.detail.contains("problem") && e.detail["problem"].is_string() ? e.detail["problem"].get<std::string>() : "unsupported";
  const std::string what = e.message.rfind(field, 0) == 0 ? e.message : field + ": " + e.message;
  Error out = fieldLoadError("tokenizer.json", field, problem, what);
  for (const char* k : {"type", "behavior"})
    if (e.detail.contains(k)) out.detail[k] = e.detail[k];
  return out;
}

}  // namespace

Result<Tokenizer> Tokenizer::fromJson(std::string_view text) {
  try {  // the parsers check every type they read; this only keeps a missed one from escaping as an exception
    return fromJsonUnchecked(text);
  } catch (const std::exception& e) {
    return fieldLoadError("tokenizer.json", "", "wrong_type", std::string("a value of unexpected type: ") + e.what());
  }
}

Result<Tokenizer> Tokenizer::fromJsonUnchecked(std::string_view text) {
  const std::string file = "tokenizer.json";
  // model.vocab's entries and model.merges' elements are taken out of the document as they are parsed (BpeModel's
  // Captured): building them as DOM nodes (a std::map of 151k keys for Qwen3) was most of the parse. Depths are
  // nlohmann's: the root's keys at 1, the model object's at 2, vocab entries and merge elements at 3.
  BpeModel::Captured cap;
  std::string root_key, model_key, vocab_key;
  bool in_model = false, in_vocab = false, in_merges = false;
  using Event = nlohmann::json::parse_event_t;
  auto grab = [&](int depth, Event ev, nlohmann::json& parsed) -> bool {
    if (in_vocab && depth == 3) {
      switch (ev) {
        case Event::key: vocab_key = parsed.get<std::string>(); return false;
        case Event::value: cap.vocab.emplace_back(std::move(vocab_key), std::move(parsed)); return false;
        case Event::object_start:
        case Event::array_start: cap.vocab_nested = true; return false;
        default: return false;
      }
    }
    if (in_merges && depth == 3 &&
        (ev == Event::value || ev == Event::array_end || ev == Event::object_end)) {
      cap.merges.push_back(std::move(parsed));
      return false;
    }
    if (depth == 1 && ev == Event::key) root_key = parsed.get<std::string>();
    else if (depth == 1 && ev == Event::object_start && root_key == "model") {
      in_model = true;
      cap = BpeModel::Captured{};  // a repeated "model" key: the last one counts, as in the document
    } else if (depth == 1 && ev == Event::object_end) in_model = false;
    else if (in_model && depth == 2 && ev == Event::key) model_key = parsed.get<std::string>();
    else if (in_model && depth == 2 && ev == Event::object_start && model_key == "vocab") {
      in_vocab = cap.has_vocab = true;
      cap.vocab.clear();
      cap.vocab_nested = false;
    } else if (in_model && depth == 2 && ev == Event::object_end) in_vocab = false;
    else if (in_model && depth == 2 && ev == Event::array_start && model_key == "merges") {
      in_merges = cap.has_merges = true;
      cap.merges = nlohmann::json::array();
    } else if (in_model && depth == 2 && ev == Event::array_end) in_merges = false;
    return true;
  };
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), grab, false);
  if (j.is_discarded()) return fieldLoadError(file, "", "bad_json", "tokenizer.json is not valid JSON");
  if (!j.is_object()) return fieldLoadError(file, "", "wrong_type", "the document is not a JSON object");
  if (!j.contains("model") || j["model"].is_null()) return fieldLoadError(file, "model", "missing_field", "model is missing");

  auto impl = std::make_shared<Impl>();
  static const nlohmann::json kNull;
  auto part = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    return it == j.end() ? kNull : *it;
  };
  auto normalizer = tagged(Normalizer::fromJson(part("normalizer")), "normalizer");
  if (!normalizer.ok()) return std::move(normalizer).error();
  impl->normalizer = std::move(*normalizer);
  auto pre = tagged(PreTokenizer::fromJson(part("pre_tokenizer")), "pre_tokenizer");
  if (!pre.ok()) return std::move(pre).error();
  impl->preTokenizer = std::move(*pre);
  const bool wordPiece = j["model"].is_object() && j["model"].value("type", nlohmann::json()) == "WordPiece";
  if (wordPiece && cap.has_vocab) {  // WordPiece reads the document: put the captured members back
    nlohmann::json v = nlohmann::json::object();
    for (auto& [k, id] : cap.vocab) v[k] = std::move(id);
    if (cap.vocab_nested) v["\u0000nested"] = nlohmann::json::array();
    j["model"]["vocab"] = std::move(v);
  }
  if (wordPiece && cap.has_merges) j["model"]["merges"] = std::move(cap.merges);
  if (wordPiece) {
    auto wp = tagged(WordPieceModel::fromJson(j["model"]), "model");
    if (!wp.ok()) return std::move(wp).error();
    impl->wordPiece = std::move(*wp);
  } else {
    auto model = tagged(BpeModel::fromJson(j["model"], impl->preTokenizer.byteLevel(), &cap), "model");
    if (!model.ok()) return std::move(model).error();
    impl->model = std::move(*model);
  }
  const std::vector<std::string>& modelTokens = wordPiece ? impl->wordPiece->idToToken() : impl->model.idToToken();
  Status post = parsePostProcessor(part("post_processor"), impl->prefixIds, impl->suffixIds);
  if (!post) return tagged(Result<Tokenizer>(std::move(post).error()), "post_processor");
  auto added = tagged(parseAddedTokens(part("added_tokens"), modelTokens.size()), "added_tokens");
  if (!added.ok()) return std::move(added).error();
  impl->added = std::move(*added);

  impl->tokens = modelTokens;
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
  for (const auto* ids : {&impl->prefixIds, &impl->suffixIds})
    for (int32_t id : *ids)
      if (id >= impl->vocabSize)
        return fieldLoadError(file, "post_processor", "bad_value", "post_processor names id " + std::to_string(id) +
                                                                       ", outside the vocabulary");

  auto decoder = tagged(Decoder::fromJson(part("decoder"), impl->tokens), "decoder");
  if (!decoder.ok()) return std::move(decoder).error();
  impl->decoder = std::move(*decoder);

  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

Result<Tokenizer> Tokenizer::fromFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return loadError(path.string(), "file is missing");
  // One read into a string of the file's size (a stream copy of the Qwen3 tokenizer.json, 11 MB, cost ~10% of its
  // parse).
  const uintmax_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  std::string text(ec ? 0 : (size_t)size, '\0');
  if (ec || !in.read(text.data(), (std::streamsize)text.size()) || (size_t)in.gcount() != text.size())
    return loadError(path.string(), "file cannot be read");
  auto t = fromJson(text);
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
  if (wordPiece)
    for (size_t i = 0; i < words.spans.size(); ++i) wordPiece->tokenizeWord(words.word(i), ids);
  else
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

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecialTokens) const {
  std::vector<int32_t> body = encode(text);
  if (!addSpecialTokens || !impl_ || (impl_->prefixIds.empty() && impl_->suffixIds.empty())) return body;
  std::vector<int32_t> ids = impl_->prefixIds;
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), impl_->suffixIds.begin(), impl_->suffixIds.end());
  return ids;
}

std::span<const int32_t> Tokenizer::specialPrefix() const {
  return impl_ ? std::span<const int32_t>(impl_->prefixIds) : std::span<const int32_t>();
}
std::span<const int32_t> Tokenizer::specialSuffix() const {
  return impl_ ? std::span<const int32_t>(impl_->suffixIds) : std::span<const int32_t>();
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  if (!impl_) return {};
  return impl_->decoder.decode(ids);
}

int32_t Tokenizer::vocabSize() const { return impl_ ? impl_->vocabSize : 0; }

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  if (!impl_) return std::nullopt;
  if (auto it = impl_->addedIds.find(token); it != impl_->addedIds.end()) return it->second;
  const auto& v = impl_->wordPiece ? impl_->wordPiece->tokenToId() : impl_->model.tokenToId();
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
