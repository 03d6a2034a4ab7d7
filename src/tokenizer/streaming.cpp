// StreamingDetokenizer: decode() one id at a time. Byte-level pieces go through a pending byte buffer
// whose complete prefix is emitted; byte-fallback tokens collect in a run that is emitted once it is valid
// UTF-8, or as one U+FFFD per byte once it can no longer become valid (as HF's ByteFallback decoder).
#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ewgpu {

namespace {
std::string replacementRun(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += utf8::kReplacement;
  return s;
}

// True when `run` contains an ill-formed subpart that more bytes cannot repair.
bool runIsDead(std::string_view run) {
  const size_t prefix = utf8::completePrefixLength(run);
  return !utf8::isValid(run.substr(0, prefix));
}
}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer)
    : tokenizer_(tokenizer), stripLeft_(tokenizer.decoder().stripStart()) {}

std::string StreamingDetokenizer::emit(std::string text) {
  const char c = tokenizer_.decoder().stripChar();
  size_t b = 0;
  while (stripLeft_ > 0 && b < text.size()) {
    if (text[b] == c) {
      ++b;
      --stripLeft_;
    } else {
      stripLeft_ = 0;
    }
  }
  if (b) text.erase(0, b);
  return text;
}

std::string StreamingDetokenizer::push(int32_t id) {
  const Decoder& d = tokenizer_.decoder();
  if (!d.known(id)) return {};
  std::string out;
  if (d.joinWithSpace() && pushedAny_) out += ' ';
  pushedAny_ = true;
  const int byte = d.byteValue(id);
  if (byte >= 0) {
    run_ += static_cast<char>(byte);
    if (utf8::isValid(run_)) {
      out += run_;
      run_.clear();
    } else if (runIsDead(run_)) {
      out += replacementRun(run_.size());
      run_.clear();
    }
    return emit(std::move(out));
  }
  if (!run_.empty()) {  // an unfinished run ends here: HF replaces each of its bytes
    out += replacementRun(run_.size());
    run_.clear();
  }
  pending_ += d.piece(id);
  const size_t complete = utf8::completePrefixLength(pending_);
  const std::string_view ready(pending_.data(), complete);
  out += utf8::isValid(ready) ? std::string(ready) : utf8::toValidLossy(ready);
  pending_.erase(0, complete);
  return emit(std::move(out));
}

std::string StreamingDetokenizer::flush() {
  std::string out = replacementRun(run_.size());
  out += utf8::toValidLossy(pending_);
  run_.clear();
  pending_.clear();
  std::string text = emit(std::move(out));
  stripLeft_ = tokenizer_.decoder().stripStart();
  pushedAny_ = false;
  return text;
}

}  // namespace ewgpu
