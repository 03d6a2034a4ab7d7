// Tokenizer: a HF-tokenizers `tokenizer.json` (BPE model, or WordPiece for BERT) used the way MLC-LLM and WebLLM
// use it: encode with add_special_tokens = false for chat (no BOS/EOS added; special-token text in the input
// still becomes its id), decode with skip_special_tokens = false. Embedding inputs are encoded with
// add_special_tokens = true: the post_processor's single-sequence template ([CLS] ... [SEP]) around the ids.
//
// encode: bytes -> (invalid UTF-8 replaced by U+FFFD, maximal subparts) -> split on added tokens ->
//         normalizer -> pre-tokenizer -> BPE per word -> ids.
// decode: ids -> per-token pieces -> byte-fallback runs -> lossy UTF-8 -> strip.
// The object is cheap to copy (shared immutable state) and safe to use from several threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace ewgpu {

class Decoder;

class Tokenizer {
 public:
  // Errors: INVALID_MODEL_FOLDER with detail {file, problem} (missing/unreadable file) or {file, field, problem}
  // naming the field that is wrong ("bad_json", "wrong_type", "missing_field", "bad_value", "unsupported": an
  // unsupported model/normalizer/pre-tokenizer/decoder type; a regex that does not compile is "bad_value").
  static Result<Tokenizer> fromFile(const std::filesystem::path& path);
  static Result<Tokenizer> fromJson(std::string_view json);

  std::vector<int32_t> encode(std::string_view text) const;
  // With addSpecialTokens, the post_processor's ids before and after (TemplateProcessing `single`,
  // BertProcessing); the same as encode(text) for a tokenizer without such a post_processor.
  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens) const;
  std::span<const int32_t> specialPrefix() const;  // those ids before the text ([CLS]); may be empty
  std::span<const int32_t> specialSuffix() const;  // and after it ([SEP])
  std::string decode(std::span<const int32_t> ids) const;

  // One more than the largest id of the model vocab and the added tokens.
  int32_t vocabSize() const;
  // Id of a vocab string (as written in tokenizer.json, e.g. "Ġhello") or of an added token's content.
  std::optional<int32_t> tokenToId(std::string_view token) const;
  // The vocab string / added-token content of an id; empty for an id that names no token.
  std::string idToToken(int32_t id) const;
  // True for added tokens flagged "special".
  bool isSpecial(int32_t id) const;

  const Decoder& decoder() const;

 private:
  static Result<Tokenizer> fromJsonUnchecked(std::string_view json);
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Incremental decode for streaming generation: feed ids one at a time and get the text they add.
// Never returns part of a UTF-8 character: an incomplete sequence is held until it completes; bytes that
// can no longer form a character come out as U+FFFD (as decode() does). The concatenation of all push()
// results and flush() equals decode(all ids), except for byte-fallback runs that are valid as a prefix
// but invalid as a whole (HF turns the whole run into U+FFFDs; streaming has already emitted the prefix)
// and a trailing Strip decoder (not used by the supported families).
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer);
  std::string push(int32_t id);
  std::string flush();  // the held bytes, as U+FFFD; resets the stream

 private:
  std::string emit(std::string text);
  Tokenizer tokenizer_;
  std::string pending_;     // byte-level bytes not yet emitted (an incomplete UTF-8 tail)
  std::string run_;         // byte-fallback bytes not yet emitted
  int stripLeft_ = 0;       // leading strip characters still to remove
  bool pushedAny_ = false;  // a known id was pushed (decoders that join tokens with spaces)
};

}  // namespace ewgpu
