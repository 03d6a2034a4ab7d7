// The `decoder` stage of tokenizer.json: ids -> text, with skip_special_tokens = false (added tokens come
// out verbatim). Supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, WordPiece and Sequence; null
// joins tokens with spaces as HF does.
//
// Everything that depends on one token only is precomputed per id into a byte "piece": the ByteLevel
// alphabet mapped back to bytes, Replace/Metaspace substitutions, and for ByteFallback the byte value of
// a <0xXX> token. What remains per call: runs of byte-fallback tokens (a run that is not valid UTF-8 as a
// whole becomes one U+FFFD per byte, as HF), the final lossy UTF-8 conversion (maximal subparts -> U+FFFD)
// and the leading/trailing Strip of the fused text.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace ewgpu {

class Decoder {
 public:
  // `tokens[id]` is the token string of each id (vocab string or added-token content; empty if unused).
  static Result<Decoder> fromJson(const nlohmann::json& j, const std::vector<std::string>& tokens);

  // Text of `ids`; ids outside the vocabulary are skipped.
  std::string decode(std::span<const int32_t> ids) const;

  // Per-id piece: its bytes and, for a byte-fallback token, its byte value (else -1).
  std::string_view piece(int32_t id) const { return {arena_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]}; }
  int byteValue(int32_t id) const { return byteValue_[id]; }
  bool known(int32_t id) const { return id >= 0 && static_cast<size_t>(id) + 1 < offsets_.size(); }

  // Leading characters `stripChar` removed from the start of the whole text (at most `stripStart`).
  int stripStart() const { return stripStart_; }
  char stripChar() const { return stripChar_; }
  bool joinWithSpace() const { return joinWithSpace_; }

 private:
  struct Step {
    std::string type;
    std::string pattern, content;  // Replace / Metaspace
    int start = 0, stop = 0;       // Strip
  };
  static Status collect(const nlohmann::json& j, std::vector<Step>& steps, const std::string& path);
  std::string arena_;
  std::vector<uint32_t> offsets_;  // [vocab + 1] into arena_
  std::vector<int16_t> byteValue_;
  int stripStart_ = 0, stripStop_ = 0;
  char stripChar_ = ' ';
  bool joinWithSpace_ = false;
};

}  // namespace ewgpu
