// BPE model: loading (vocab, merges in "a b" or ["a","b"] form, byte alphabet) and the merge loop.
// Short words use a linear scan for the best pair; long words (SentencePiece-style files send whole
// sentences as one word) use a min-heap of candidate merges over a linked list of symbols.
#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace ewgpu {

namespace {
constexpr size_t kSmallWord = 24;       // symbols; at or below this the linear scan is faster
constexpr size_t kMaxCachedWord = 128;  // bytes; longer words rarely repeat
constexpr size_t kMaxCacheEntries = 1 << 18;

Error modelError(const std::string& field, const std::string& problem, const std::string& what) {
  return tokjson::fieldError(field, problem, what);
}
}  // namespace

const ByteLevelAlphabet& ByteLevelAlphabet::get() {
  static const ByteLevelAlphabet a = [] {
    ByteLevelAlphabet r;
    r.codepointToByte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      r.byteToCodepoint[b] = printable ? b : next++;
      r.codepointToByte[r.byteToCodepoint[b]] = static_cast<int16_t>(b);
    }
    return r;
  }();
  return a;
}

bool ByteLevelAlphabet::decode(std::string_view token, std::string& bytes) const {
  bytes.clear();
  for (size_t i = 0; i < token.size();) {
    size_t len = 0;
    const uint32_t cp = utf8::decodeAt(token, i, &len);
    i += len;
    if (cp >= codepointToByte.size() || codepointToByte[cp] < 0) return false;
    bytes += static_cast<char>(codepointToByte[cp]);
  }
  return true;
}

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  keys_.assign(cap, kEmpty);
  values_.assign(cap, Merge{});
  mask_ = cap - 1;
  size_ = 0;
}

void MergeTable::insert(int32_t left, int32_t right, Merge m) {
  const uint64_t key = pack(left, right);
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    if (keys_[i] == key) return;  // keep the first (lowest) rank of a duplicated merge
    if (keys_[i] == kEmpty) {
      keys_[i] = key;
      values_[i] = m;
      ++size_;
      return;
    }
  }
}

Result<BpeModel> BpeModel::fromJson(const nlohmann::json& model, bool byteLevel, const Captured* captured) {
  using namespace tokjson;
  if (!model.is_object()) return modelError("model", "wrong_type", "is not an object");
  auto type = optString(model, "type", "BPE", "model");
  if (!type) return std::move(type).error();
  if (*type != "BPE") return modelError("model.type", "unsupported", "is " + *type + " (only BPE models are supported)");
  if (!model.contains("vocab") || !model["vocab"].is_object())
    return modelError("model.vocab", "wrong_type", "is missing or not an object");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto v = optString(model, key, "", "model");
    if (!v) return std::move(v).error();
    if (!v->empty()) return modelError(join("model", key), "unsupported", "is not supported");
  }
  if (auto d = find(model, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
    return modelError("model.dropout", "unsupported", "is not supported");
  BpeModel m;
  m.byteLevel_ = byteLevel;
  EWGPU_ASSIGN(m.byteFallback_, optBool(model, "byte_fallback", false, "model"));
  EWGPU_ASSIGN(m.fuseUnk_, optBool(model, "fuse_unk", false, "model"));
  EWGPU_ASSIGN(m.ignoreMerges_, optBool(model, "ignore_merges", false, "model"));

  const bool cap = captured && captured->has_vocab;
  if (cap && captured->vocab_nested) return modelError("model.vocab", "wrong_type", "has a non-integer id");
  const auto& vocab = model["vocab"];
  const size_t entries = cap ? captured->vocab.size() : vocab.size();
  m.vocab_.reserve(entries);
  // Ids are dense in real files; the bound keeps the id table linear in the file's size.
  const uint64_t limit = std::min<uint64_t>(1u << 24, 2 * (uint64_t)entries + 65536);
  auto add = [&](const std::string& key, const nlohmann::json& value) -> Status {
    if (!value.is_number_integer()) return modelError("model.vocab", "wrong_type", "has a non-integer id");
    const bool negative = !value.is_number_unsigned() && value.get<int64_t>() < 0;
    if (negative || value.get<uint64_t>() >= limit)
      return modelError("model.vocab", "bad_value",
                        "has id " + value.dump() + ", outside [0, " + std::to_string(limit) + ")");
    const int64_t id = value.get<int64_t>();
    if (!m.vocab_.emplace(key, static_cast<int32_t>(id)).second) return {};  // an earlier duplicate (captured)
    if (m.idToToken_.size() <= static_cast<size_t>(id)) m.idToToken_.resize(id + 1);
    m.idToToken_[id] = key;
    return {};
  };
  if (cap) {
    for (auto it = captured->vocab.rbegin(); it != captured->vocab.rend(); ++it) EWGPU_TRY(add(it->first, it->second));
  } else {
    for (auto it = vocab.begin(); it != vocab.end(); ++it) EWGPU_TRY(add(it.key(), it.value()));
  }
  std::string unk;
  EWGPU_ASSIGN(unk, optString(model, "unk_token", "", "model"));
  if (!unk.empty()) {
    auto u = m.vocab_.find(unk);
    if (u != m.vocab_.end()) m.unkId_ = u->second;
  }
  m.byteIds_.fill(-1);
  m.fallbackIds_.fill(-1);
  if (byteLevel) {
    const auto& alpha = ByteLevelAlphabet::get();
    std::string bytes;
    m.byteVocab_.reserve(m.vocab_.size());
    for (const auto& [tok, id] : m.vocab_) {
      if (alpha.decode(tok, bytes)) m.byteVocab_.emplace(bytes, id);
    }
    for (int b = 0; b < 256; ++b) {
      auto it = m.byteVocab_.find(std::string(1, static_cast<char>(b)));
      if (it != m.byteVocab_.end()) m.byteIds_[b] = it->second;
    }
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = m.vocab_.find(std::string_view(name));
    if (it != m.vocab_.end()) m.fallbackIds_[b] = it->second;
  }
  if (captured && captured->has_merges) {
    EWGPU_TRY(m.loadMerges(captured->merges));
  } else {
    auto merges = optArray(model, "merges", "model");
    if (!merges) return std::move(merges).error();
    EWGPU_TRY(m.loadMerges(**merges));
  }
  if (!byteLevel) m.collectCharPairs();
  // Unknown characters become (fusable) unk only when some byte has no <0xXX> token to fall back to.
  bool allFallback = m.byteFallback_;
  for (int32_t id : m.fallbackIds_) allFallback = allFallback && id >= 0;
  m.unksFuse_ = m.fuseUnk_ && m.unkId_ >= 0 && !allFallback;
  return m;
}

Status BpeModel::loadMerges(const nlohmann::json& merges) {
  if (!merges.is_array()) return modelError("model.merges", "wrong_type", "is not an array");
  merges_.reserve(merges.size());
  std::string joined;
  int32_t rank = 0;
  for (const auto& mj : merges) {
    std::string_view a, b;
    std::string s;
    if (mj.is_string()) {
      s = mj.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos)
        return modelError(tokjson::index("model.merges", (size_t)rank), "bad_value", "has no space: " + s);
      a = std::string_view(s).substr(0, sp);
      b = std::string_view(s).substr(sp + 1);
      const size_t sp2 = b.find(' ');
      if (sp2 != std::string_view::npos) b = b.substr(0, sp2);
    } else if (mj.is_array() && mj.size() == 2 && mj[0].is_string() && mj[1].is_string()) {
      a = mj[0].get_ref<const std::string&>();
      b = mj[1].get_ref<const std::string&>();
    } else {
      return modelError(tokjson::index("model.merges", (size_t)rank), "wrong_type", "is neither \"a b\" nor [a, b]");
    }
    joined.assign(a);
    joined.append(b);
    auto ia = vocab_.find(a), ib = vocab_.find(b), ij = vocab_.find(joined);
    // A merge whose parts or result are missing from the vocab can never apply: skip it.
    if (ia != vocab_.end() && ib != vocab_.end() && ij != vocab_.end())
      merges_.insert(ia->second, ib->second, {rank, ij->second});
    ++rank;
  }
  return {};
}

void BpeModel::collectCharPairs() {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const auto& tok : idToToken_) {
    uint32_t prev = 0;
    for (size_t i = 0; i < tok.size();) {
      size_t len = 0;
      const uint32_t cp = utf8::decodeAt(tok, i, &len);
      if (i > 0) pairs.emplace_back(prev, cp);
      prev = cp;
      i += len;
    }
  }
  charPairs_.reserve(pairs.size());
  for (const auto& [a, b] : pairs) charPairs_.insert(static_cast<int32_t>(a), static_cast<int32_t>(b), {0, 0});
}

void BpeModel::initialSymbols(std::string_view word, std::vector<Symbol>& syms) const {
  syms.clear();
  auto push = [&](int32_t id) {
    const auto n = static_cast<int32_t>(syms.size());
    syms.push_back({id, n - 1, n + 1});
  };
  if (byteLevel_) {
    for (char c : word) {
      const int32_t id = byteIds_[static_cast<uint8_t>(c)];
      if (id >= 0)
        push(id);
      else if (unkId_ >= 0)
        push(unkId_);
    }
  } else {
    bool lastWasUnk = false;
    for (size_t i = 0; i < word.size();) {
      const size_t len = std::min(utf8::leadLength(static_cast<uint8_t>(word[i])), word.size() - i);
      const std::string_view ch = word.substr(i, len);
      i += len;
      auto it = vocab_.find(ch);
      if (it != vocab_.end()) {
        push(it->second);
        lastWasUnk = false;
        continue;
      }
      bool allBytes = byteFallback_;
      for (char c : ch) allBytes = allBytes && fallbackIds_[static_cast<uint8_t>(c)] >= 0;
      if (allBytes) {
        for (char c : ch) push(fallbackIds_[static_cast<uint8_t>(c)]);
        lastWasUnk = false;
      } else if (unkId_ >= 0) {
        if (!(fuseUnk_ && lastWasUnk)) push(unkId_);
        lastWasUnk = true;
      }
    }
  }
  if (!syms.empty()) syms.back().next = -1;
}

void BpeModel::mergeSmall(std::vector<Symbol>& syms) const {
  // Symbols stay contiguous here: merging erases the right symbol.
  for (;;) {
    int32_t bestRank = INT32_MAX, bestId = -1;
    size_t bestPos = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      const auto* m = merges_.find(syms[i].id, syms[i + 1].id);
      if (m && m->rank < bestRank) {
        bestRank = m->rank;
        bestId = m->id;
        bestPos = i;
      }
    }
    if (bestId < 0) return;
    syms[bestPos].id = bestId;
    syms.erase(syms.begin() + static_cast<long>(bestPos) + 1);
  }
}

void BpeModel::mergeHeap(std::vector<Symbol>& syms) const {
  struct Candidate {
    int32_t rank, pos, id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t pos) {
    const int32_t next = syms[pos].next;
    if (next < 0) return;
    if (const auto* m = merges_.find(syms[pos].id, syms[next].id)) heap.push({m->rank, pos, m->id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = syms[c.pos];
    if (left.id < 0 || left.next < 0) continue;
    Symbol& right = syms[left.next];
    const auto* m = merges_.find(left.id, right.id);
    if (!m || m->id != c.id) continue;  // stale: one side changed since this candidate was queued
    left.id = c.id;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = c.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  size_t keep = 0;
  for (int32_t i = 0; i >= 0 && i < static_cast<int32_t>(syms.size()); i = syms[i].next) syms[keep++].id = syms[i].id;
  syms.resize(keep);
}

void BpeModel::runMerges(std::string_view word, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> syms;
  initialSymbols(word, syms);
  if (syms.size() <= kSmallWord)
    mergeSmall(syms);
  else
    mergeHeap(syms);
  for (const auto& s : syms) out.push_back(s.id);
}

void BpeModel::tokenizeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignoreMerges_) {
    const auto& whole = byteLevel_ ? byteVocab_ : vocab_;
    auto it = whole.find(word);
    if (it != whole.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (byteLevel_ || word.size() <= kMaxCachedWord / 4) {
    tokenizeCached(word, out);
    return;
  }
  // Cut the word where no merge can ever join the characters on both sides (when unks can fuse, only
  // between two known characters: a run of unknown ones must stay together to become one unk).
  auto known = [&](size_t b, size_t n) { return vocab_.find(word.substr(b, n)) != vocab_.end(); };
  size_t start = 0, prevStart = 0, len = 0;
  uint32_t prev = utf8::decodeAt(word, 0, &len);
  size_t prevLen = len;
  for (size_t i = len; i < word.size(); i += len) {
    const uint32_t cp = utf8::decodeAt(word, i, &len);
    if (!canJoin(prev, cp) && (!unksFuse_ || (known(prevStart, prevLen) && known(i, len)))) {
      tokenizeCached(word.substr(start, i - start), out);
      start = i;
    }
    prev = cp;
    prevStart = i;
    prevLen = len;
  }
  tokenizeCached(word.substr(start), out);
}

void BpeModel::tokenizeCached(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxCachedWord) {
    runMerges(word, out);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto it = cache_->index.find(word);
    if (it != cache_->index.end()) {
      const auto [off, n] = it->second;
      out.insert(out.end(), cache_->ids.begin() + off, cache_->ids.begin() + off + n);
      return;
    }
  }
  const size_t start = out.size();
  runMerges(word, out);
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->index.size() >= kMaxCacheEntries) {
    cache_->index.clear();
    cache_->ids.clear();
  }
  const auto off = static_cast<uint32_t>(cache_->ids.size());
  cache_->ids.insert(cache_->ids.end(), out.begin() + static_cast<long>(start), out.end());
  cache_->index.emplace(std::string(word), std::make_pair(off, static_cast<uint32_t>(out.size() - start)));
}

}  // namespace ewgpu
