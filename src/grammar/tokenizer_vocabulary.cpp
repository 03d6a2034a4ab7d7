#include "grammar/tokenizer_vocabulary.h"

#include "tokenizer/decoder.h"

namespace ewgpu::grammar {

std::shared_ptr<const TokenVocabulary> vocabularyOf(const Tokenizer& tok) {
  const Decoder& d = tok.decoder();
  std::vector<std::string> bytes(tok.vocabSize());
  for (int32_t id = 0; id < tok.vocabSize(); ++id) {
    if (!d.known(id) || tok.isSpecial(id)) continue;
    if (d.byteValue(id) >= 0) bytes[id] = std::string(1, (char)d.byteValue(id));
    else bytes[id] = std::string(d.piece(id));
  }
  return TokenVocabulary::build(std::move(bytes));
}

}  // namespace ewgpu::grammar
