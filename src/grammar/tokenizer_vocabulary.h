// The grammar's view of a tokenizer: the bytes each id decodes to on its own (grammar/vocabulary.h). Special
// tokens (end of text, chat markers) decode to their literal text but are never part of a document: they get no
// bytes, so a grammar never allows them (a row's stop ids are allowed separately, where the document may end).
#pragma once

#include "grammar/vocabulary.h"
#include "tokenizer/tokenizer.h"

#include <memory>

namespace ewgpu::grammar {

std::shared_ptr<const TokenVocabulary> vocabularyOf(const Tokenizer& tok);

}  // namespace ewgpu::grammar
