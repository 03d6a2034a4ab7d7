// PCRE2 wrapper: compile once (UTF | UCP, JIT), match many times without re-checking UTF validity
// (the tokenizer makes its input well-formed before any regex sees it).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

namespace ewgpu {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() {
    if (code) pcre2_code_free(code);
  }
};

Result<Regex> Regex::compile(std::string_view pattern) {
  int err = 0;
  PCRE2_SIZE errOffset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &err, &errOffset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return makeError(ErrorCode::kBadRequest, "regex does not compile: " + std::string(reinterpret_cast<char*>(msg)),
                     {{"pattern", std::string(pattern)}, {"offset", errOffset}});
  }
  Regex r;
  r.code_ = std::make_shared<Code>();
  r.code_->code = code;
  r.code_->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return r;
}

Result<Regex> Regex::literal(std::string_view literal) {
  std::string quoted = "\\Q";
  // \E inside the literal would end the quoting early: split it out.
  size_t start = 0;
  for (size_t p; (p = literal.find("\\E", start)) != std::string_view::npos; start = p + 2) {
    quoted.append(literal.substr(start, p - start));
    quoted += "\\E\\\\E\\Q";
  }
  quoted.append(literal.substr(start));
  quoted += "\\E";
  return compile(quoted);
}

namespace {
// One match-data block per thread, reused by every cursor: only the whole match (ovector pair 0) is read,
// so one pair is enough for any pattern. Nested cursors are safe too: next() reads the ovector right after
// its own match and keeps its position in the cursor.
pcre2_match_data* threadMatchData() {
  struct Holder {
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    ~Holder() { pcre2_match_data_free(md); }
  };
  thread_local Holder h;
  return h.md;
}
}  // namespace

Regex::MatchCursor::MatchCursor(const Regex& re, std::string_view text) : re_(re), text_(text) {
  matchData_ = threadMatchData();
}

Regex::MatchCursor::~MatchCursor() = default;

bool Regex::MatchCursor::next(size_t* begin, size_t* end) {
  auto* md = static_cast<pcre2_match_data*>(matchData_);
  if (!md) return false;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text_.data());
  while (pos_ <= text_.size()) {
    int rc = re_.code_->jit
                 ? pcre2_jit_match(re_.code_->code, subject, text_.size(), pos_, 0, md, nullptr)
                 : pcre2_match(re_.code_->code, subject, text_.size(), pos_, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) return false;  // no (further) match, or a matching limit: treat as no match
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e == b) {  // empty match: skip one character and look again
      if (b >= text_.size()) return false;
      size_t step = 1;
      while (b + step < text_.size() && (static_cast<uint8_t>(text_[b + step]) & 0xC0) == 0x80) ++step;
      pos_ = b + step;
      continue;
    }
    pos_ = e;
    *begin = b;
    *end = e;
    return true;
  }
  return false;
}

}  // namespace ewgpu
