// WordPiece: vocab load and the greedy longest-match loop.
#include "tokenizer/wordpiece.h"

#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace ewgpu {

Result<WordPieceModel> WordPieceModel::fromJson(const nlohmann::json& model) {
  using namespace tokjson;
  WordPieceModel m;
  const nlohmann::json* vocab = find(model, "vocab");
  if (!vocab || !vocab->is_object()) return fieldError("model.vocab", "wrong_type", "is missing or not an object");
  constexpr int64_t kMaxId = 1 << 24;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it->is_number_integer()) return fieldError("model.vocab", "wrong_type", "holds a non-integer id");
    const bool negative = !it->is_number_unsigned() && it->get<int64_t>() < 0;
    if (negative || it->get<uint64_t>() >= (uint64_t)kMaxId)
      return fieldError("model.vocab", "bad_value", "holds an id outside [0, 2^24)");
    const int32_t id = (int32_t)it->get<int64_t>();
    if (m.idToToken_.size() <= (size_t)id) m.idToToken_.resize(id + 1);
    m.idToToken_[id] = it.key();
    m.vocab_.emplace(it.key(), id);
  }
  EWGPU_ASSIGN(m.prefix_, optString(model, "continuing_subword_prefix", "##", "model"));
  int64_t maxChars = 100;
  EWGPU_ASSIGN(maxChars, optInt(model, "max_input_chars_per_word", 100, 1, 1 << 20, "model"));
  m.maxChars_ = (size_t)maxChars;
  std::string unk;
  EWGPU_ASSIGN(unk, optString(model, "unk_token", "[UNK]", "model"));
  auto u = m.vocab_.find(unk);
  if (u == m.vocab_.end()) return fieldError("model.unk_token", "bad_value", "is not in the vocab");
  m.unkId_ = u->second;
  return m;
}

void WordPieceModel::tokenizeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  // Character boundaries (byte offsets), so pieces never cut a UTF-8 sequence.
  std::vector<size_t> bounds;
  for (size_t i = 0, len = 0; i < word.size(); i += len) {
    bounds.push_back(i);
    utf8::decodeAt(word, i, &len);
  }
  bounds.push_back(word.size());
  const size_t nchars = bounds.size() - 1;
  if (nchars > maxChars_) {
    out.push_back(unkId_);
    return;
  }
  const size_t mark = out.size();
  std::string piece;
  for (size_t start = 0; start < nchars;) {
    int32_t found = -1;
    size_t end = nchars;
    for (; end > start; --end) {
      piece.clear();
      if (start > 0) piece = prefix_;
      piece.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if (auto it = vocab_.find(piece); it != vocab_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // no segmentation: the whole word is unknown
      out.resize(mark);
      out.push_back(unkId_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

}  // namespace ewgpu
