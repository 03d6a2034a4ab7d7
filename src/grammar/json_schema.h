// JSON output constraints compiled to byte grammars (grammar/grammar.h):
//   - jsonObjectGrammar(): any JSON object (OpenAI's response_format json_object);
//   - compileJsonSchema(): the documents a JSON Schema accepts, or a subset of them (docs/structured-output.md
//     lists the keywords and what each compiles to). A keyword the compiler does not implement is BAD_REQUEST
//     naming it and where it is (detail {field, keyword, path}); it is never skipped, because skipping a
//     constraint would let through output the schema rejects. Annotations (title, description, default, ...)
//     constrain nothing and are accepted.
// Subsets chosen on purpose (every output still validates against the schema):
//   - whitespace between lexemes is nothing, one space, or a newline and up to 16 spaces (no tabs, no CR);
//   - numbers have at most 16 integer digits, 16 fraction digits and 2 exponent digits (so they stay finite
//     doubles: 3 exponent digits let 1e999 through, which JSON.parse reads as Infinity, not a number);
//   - properties come in the order of the schema object's keys (nlohmann::json keeps them sorted by name),
//     each at most once; with `properties` and no `additionalProperties`, no other property is written.
#pragma once

#include "base/error.h"
#include "grammar/grammar.h"

#include <nlohmann/json.hpp>
#include <string>

namespace ewgpu::grammar {

Grammar jsonObjectGrammar();
// `field` names the schema in error details (e.g. "response_format.json_schema.schema").
Result<Grammar> compileJsonSchema(const nlohmann::json& schema, const std::string& field);

}  // namespace ewgpu::grammar
