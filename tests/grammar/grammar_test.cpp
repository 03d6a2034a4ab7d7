// The structured-output grammar layer: the JSON Schema compiler (what it accepts, what it rejects and how it
// names the keyword), the byte-level matcher (documents in and out of the language, UTF-8 and \u escapes,
// completion), and the token-level mask (tokens that split JSON lexemes; the mask equals a brute-force check of
// every token; a random walk through the mask always yields a document that parses).
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/tokenizer_vocabulary.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace ewgpu::grammar {
namespace {

using json = nlohmann::json;

std::shared_ptr<const CompiledGrammar> compiled(const json& schema, std::vector<std::string> vocab = {}) {
  auto g = compileJsonSchema(schema, "schema");
  EXPECT_TRUE(g) << (g ? "" : g.error().message);
  auto c = std::make_shared<CompiledGrammar>();
  c->grammar = g ? std::move(*g) : jsonObjectGrammar();
  if (!vocab.empty()) c->vocab = TokenVocabulary::build(std::move(vocab));
  return c;
}

// True when the whole of `doc` is a complete document of the schema.
bool accepts(const std::shared_ptr<const CompiledGrammar>& c, std::string_view doc) {
  Matcher m(c);
  return m.acceptBytes(doc) && m.canEnd();
}

std::vector<std::string> byteVocab() {  // the tiny fixtures' shape: one token per byte
  std::vector<std::string> v;
  for (int c = 0; c < 256; ++c) v.push_back(std::string(1, (char)c));
  return v;
}

TEST(JsonSchemaCompiler, RejectsUnsupportedKeywordsByName) {
  struct Case {
    json schema;
    std::string keyword, path;
  };
  const std::vector<Case> cases = {
      {{{"type", "string"}, {"pattern", "^a+$"}}, "pattern", "/pattern"},
      {{{"type", "integer"}, {"minimum", 3}}, "minimum", "/minimum"},
      {{{"oneOf", json::array({{{"type", "string"}}, {{"type", "null"}}})}}, "oneOf", "/oneOf"},
      {{{"allOf", json::array({{{"type", "string"}}})}}, "allOf", "/allOf"},
      {{{"not", {{"type", "string"}}}}, "not", "/not"},
      {{{"type", "object"}, {"properties", {{"a", {{"type", "number"}, {"multipleOf", 2}}}}}}, "multipleOf",
       "/properties/a/multipleOf"},
      {{{"type", "array"}, {"uniqueItems", true}}, "uniqueItems", "/uniqueItems"},
      {{{"type", "object"}, {"patternProperties", json::object()}}, "patternProperties", "/patternProperties"},
      {{{"type", "string"}, {"format", "email"}}, "format", "/format"},
      {{{"type", "array"}, {"items", json::array({{{"type", "string"}}})}}, "items", "/items"},
      {{{"type", "array"}, {"maxItems", 100000}}, "maxItems", "/maxItems"},
      {{{"$ref", "https://example.com/s.json"}}, "$ref", "/$ref"},
      {{{"type", "strin"}}, "type", "/type"},
  };
  for (const auto& c : cases) {
    auto g = compileJsonSchema(c.schema, "response_format.json_schema.schema");
    ASSERT_FALSE(g) << c.schema.dump();
    EXPECT_EQ(g.error().code, ErrorCode::kBadRequest);
    EXPECT_EQ(g.error().detail.value("keyword", ""), c.keyword) << c.schema.dump();
    EXPECT_EQ(g.error().detail.value("path", ""), c.path) << c.schema.dump();
    EXPECT_EQ(g.error().detail.value("field", ""), "response_format.json_schema.schema");
    EXPECT_NE(g.error().message.find(c.keyword), std::string::npos) << g.error().message;
  }
  auto g = compileJsonSchema(false, "s");
  EXPECT_FALSE(g);
  g = compileJsonSchema({{"type", "object"}, {"properties", {{"a", true}}}, {"required", {"b"}}}, "s");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().detail.value("keyword", ""), "required");
}

TEST(JsonSchemaCompiler, SelfReferenceWithoutContentIsRejectedQuickly) {
  for (const json& s : {json{{"$ref", "#"}}, json{{"anyOf", {{{"$ref", "#"}}, {{"$ref", "#"}}, {{"$ref", "#"}}}}}}) {
    auto g = compileJsonSchema(s, "schema");
    ASSERT_FALSE(g) << s.dump();
    EXPECT_NE(g.error().message.find("accepts no document"), std::string::npos);
  }
  auto c = compiled({{"anyOf", {{{"type", "null"}}, {{"type", "array"}, {"items", {{"$ref", "#"}}}}}}});
  EXPECT_TRUE(accepts(c, "[[null],[[]],null]"));
  EXPECT_FALSE(accepts(c, "[1]"));
}

TEST(JsonSchemaCompiler, AnnotationsAreAccepted) {
  auto g = compileJsonSchema({{"title", "T"}, {"description", "d"}, {"$schema", "x"}, {"type", "null"},
                              {"default", nullptr}, {"examples", json::array()}},
                             "s");
  EXPECT_TRUE(g);
}

TEST(JsonMatcher, ObjectWithRequiredAndOptionalProperties) {
  auto c = compiled({{"type", "object"},
                     {"properties",
                      {{"age", {{"type", "integer"}}}, {"name", {{"type", "string"}}}, {"ok", {{"type", "boolean"}}}}},
                     {"required", {"name"}}});
  EXPECT_TRUE(accepts(c, R"({"name":"bo"})"));
  EXPECT_TRUE(accepts(c, R"({"age":-12,"name":"x","ok":true})"));
  EXPECT_TRUE(accepts(c, R"({ "age" : 0 , "name" : "" })"));
  EXPECT_TRUE(accepts(c, "{\n  \"name\": \"a\",\n  \"ok\": false\n}"));
  EXPECT_FALSE(accepts(c, "{\t\"name\":\"a\"}"));       // whitespace: one space, or a newline and spaces
  EXPECT_FALSE(accepts(c, "{  \"name\":\"a\"}"));
  EXPECT_FALSE(accepts(c, R"({})"));                      // name is required
  EXPECT_FALSE(accepts(c, R"({"name":"a",})"));           // trailing comma
  EXPECT_FALSE(accepts(c, R"({"age":01,"name":"a"})"));   // leading zero
  EXPECT_FALSE(accepts(c, R"({"age":1.5,"name":"a"})"));  // not an integer
  EXPECT_FALSE(accepts(c, R"({"name":"a","x":1})"));      // no additional properties
  EXPECT_FALSE(accepts(c, R"({"name":"a")"));             // incomplete
  Matcher m(c);
  ASSERT_TRUE(m.acceptBytes(R"({"name":"a"})"));
  EXPECT_TRUE(m.mustEnd());  // nothing may follow a complete object
}

TEST(JsonMatcher, StringsUnicodeAndEscapes) {
  auto c = compiled({{"type", "string"}, {"maxLength", 3}});
  EXPECT_TRUE(accepts(c, R"("\u00e9")"));
  EXPECT_TRUE(accepts(c, R"("\uD83D\uDE00")"));  // a surrogate pair: two escapes, two characters
  EXPECT_TRUE(accepts(c, "\"\xc3\xa9t\xe2\x82\xac\""));  // é t €: three characters, six bytes
  EXPECT_FALSE(accepts(c, "\"abcd\""));  // four characters
  EXPECT_TRUE(accepts(c, R"("\n\"\\")"));
  EXPECT_FALSE(accepts(c, R"("\u00g9")"));
  EXPECT_FALSE(accepts(c, R"("\x")"));
  EXPECT_FALSE(accepts(c, "\"\xff\""));      // not UTF-8
  EXPECT_FALSE(accepts(c, "\"\xc0\x80\""));  // overlong
  EXPECT_FALSE(accepts(c, "\"\xed\xa0\x80\""));  // a UTF-8-encoded surrogate
  EXPECT_FALSE(accepts(c, "\"a\nb\""));     // a raw control character
  auto lo = compiled({{"type", "string"}, {"minLength", 2}});
  EXPECT_FALSE(accepts(lo, "\"a\""));
  EXPECT_TRUE(accepts(lo, "\"ab\""));
}

TEST(JsonMatcher, NumbersEnumsConstAnyOfArraysFormats) {
  auto num = compiled({{"type", "number"}});
  for (const char* ok : {"0", "-0.5", "12e-3", "1E+20", "3.25"}) EXPECT_TRUE(accepts(num, ok)) << ok;
  for (const char* no : {"01", ".5", "1.", "+1", "1e", "--1", "1e999"}) EXPECT_FALSE(accepts(num, no)) << no;
  Matcher m(num);
  ASSERT_TRUE(m.acceptBytes("12"));
  EXPECT_TRUE(m.canEnd());
  EXPECT_FALSE(m.mustEnd());  // more digits may follow

  auto e = compiled({{"enum", {"red", 3, nullptr, json::array({1})}}});
  for (const char* ok : {"\"red\"", "3", "null", "[1]"}) EXPECT_TRUE(accepts(e, ok)) << ok;
  EXPECT_FALSE(accepts(e, "\"blue\""));
  auto k = compiled({{"const", {{"a", 1}}}});
  EXPECT_TRUE(accepts(k, R"({"a":1})"));
  EXPECT_FALSE(accepts(k, R"({"a":2})"));
  auto any = compiled({{"anyOf", {{{"type", "integer"}}, {{"type", "string"}, {"maxLength", 1}}}}});
  EXPECT_TRUE(accepts(any, "7"));
  EXPECT_TRUE(accepts(any, "\"x\""));
  EXPECT_FALSE(accepts(any, "\"xy\""));
  auto arr = compiled({{"type", "array"}, {"items", {{"type", "boolean"}}}, {"minItems", 1}, {"maxItems", 2}});
  EXPECT_FALSE(accepts(arr, "[]"));
  EXPECT_TRUE(accepts(arr, "[true]"));
  EXPECT_TRUE(accepts(arr, "[ true , false ]"));
  EXPECT_FALSE(accepts(arr, "[true,false,true]"));
  auto types = compiled({{"type", {"string", "null"}}});
  EXPECT_TRUE(accepts(types, "null"));
  EXPECT_TRUE(accepts(types, "\"\""));
  EXPECT_FALSE(accepts(types, "0"));
  auto date = compiled({{"type", "string"}, {"format", "date-time"}});
  EXPECT_TRUE(accepts(date, "\"2026-12-01T13:05:00Z\""));
  EXPECT_TRUE(accepts(date, "\"2026-12-01T13:05:00+01:00\""));
  EXPECT_FALSE(accepts(date, "\"2026-13-01T13:05:00Z\""));
  auto uuid = compiled({{"type", "string"}, {"format", "uuid"}});
  EXPECT_TRUE(accepts(uuid, "\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_FALSE(accepts(uuid, "\"123e4567e89b12d3a456426614174000\""));
}

TEST(JsonMatcher, RefsRecursionAndAdditionalProperties) {
  json tree = {{"$defs",
                {{"node",
                  {{"type", "object"},
                   {"properties", {{"kids", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}}}}}}}},
               {"$ref", "#/$defs/node"}};
  auto c = compiled(tree);
  EXPECT_TRUE(accepts(c, R"({"kids":[{"kids":[]},{}]})"));
  EXPECT_FALSE(accepts(c, R"({"kids":[1]})"));
  auto map = compiled({{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}});
  EXPECT_TRUE(accepts(map, R"({"a":1,"b":2})"));
  EXPECT_TRUE(accepts(map, "{}"));
  EXPECT_FALSE(accepts(map, R"({"a":"x"})"));
  auto obj = std::make_shared<CompiledGrammar>();
  obj->grammar = jsonObjectGrammar();
  EXPECT_TRUE(accepts(obj, R"({"a":[1,{"b":null}],"c":"\u0041"})"));
  EXPECT_FALSE(accepts(obj, "[1]"));  // json_object: the document is an object
}

// Tokens that cut JSON lexemes in odd places: the matcher works on bytes, so any split is fine.
TEST(TokenMatcher, TokensThatSplitJsonLexemes) {
  std::vector<std::string> vocab = {"{\"", "na", "me\":", "\"\\u00", "e9", "\"}", "\"", "}", " ", "\xc3", "\xa9",
                                    "\"na", "me\": \"", "x\"}"};
  auto c = compiled({{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}, {"required", {"name"}}},
                    vocab);
  auto feed = [&](std::initializer_list<int> ids) {
    Matcher m(c);
    for (int id : ids)
      if (!m.acceptToken(id)) return false;
    return m.mustEnd();
  };
  EXPECT_TRUE(feed({0, 1, 2, 3, 4, 5}));       // {"  na  me":  "\u00  e9  "}
  EXPECT_TRUE(feed({0, 1, 2, 6, 9, 10, 5}));   // é split across two byte tokens
  EXPECT_TRUE(feed({0, 1, 12, 13}));           // {"  na  me": "  x"}
  EXPECT_FALSE(feed({0, 1, 2, 6, 10, 9, 5}));  // continuation byte before the lead byte
  Matcher m(c);
  ASSERT_TRUE(m.acceptToken(0));
  std::vector<uint32_t> mask(1);
  m.fillMask(mask, {});
  EXPECT_EQ(mask[0], 1u << 1);  // only "na" continues the one property name
}

// The mask equals a brute-force check of every token, along random walks that follow the mask.
TEST(TokenMatcher, MaskEqualsBruteForceAlongRandomWalks) {
  std::vector<std::string> vocab = byteVocab();
  for (const char* t : {"{\"", "\":", "\",\"", "true", "false", "null", "\"}", "12", ".5", "e-", "\\u", "00",
                        "\xc3\xa9", "  ", "\n", "[{", "}]", "\"a", "ab", "},{"})
    vocab.push_back(t);
  vocab.push_back("");  // an id a grammar never allows (a special token)
  const int32_t stop = (int32_t)vocab.size() - 1;
  const std::vector<json> schemas = {
      {{"type", "object"},
       {"properties",
        {{"a", {{"type", "string"}, {"maxLength", 4}}},
         {"b", {{"type", "array"}, {"items", {{"type", "number"}}}, {"maxItems", 3}}},
         {"c", {{"enum", {"x", "y"}}}}}},
       {"required", {"a", "c"}}},
      {{"type", "array"}, {"items", {{"anyOf", {{{"type", "null"}}, {{"type", "boolean"}}}}}}, {"maxItems", 4}},
      {{"type", "integer"}},
  };
  std::mt19937 rng(7);
  for (const auto& s : schemas) {
    auto c = compiled(s, vocab);
    for (int walk = 0; walk < 8; ++walk) {
      Matcher m(c);
      std::string text;
      bool ended = false;
      for (int step = 0; step < 60 && !ended; ++step) {
        std::vector<uint32_t> mask((vocab.size() + 31) / 32);
        const std::vector<int32_t> stops = {stop};
        m.fillMask(mask, stops);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < (int32_t)vocab.size(); ++id) {
          const bool bit = (mask[id >> 5] >> (id & 31)) & 1;
          // Brute force: each token's bytes stepped one by one from the current state.
          const bool brute = id == stop ? m.canEnd() : !vocab[id].empty() && m.allows(vocab[id]);
          ASSERT_EQ(bit, brute) << s.dump() << " after " << text << " token " << id;
          if (bit) allowed.push_back(id);
        }
        ASSERT_FALSE(allowed.empty()) << text;
        const int32_t pick = allowed[rng() % allowed.size()];
        if (pick == stop || m.mustEnd()) {
          ended = true;
          break;
        }
        ASSERT_TRUE(m.acceptToken(pick));
        text += vocab[pick];
        ended = m.mustEnd();
      }
      if (ended) {
        EXPECT_TRUE(json::accept(text)) << text;
      }
    }
  }
}

TEST(TokenMatcher, MaskCacheHitsInsideAnUnboundedString) {
  auto c = compiled({{"type", "string"}}, byteVocab());
  Matcher m(c);
  std::vector<uint32_t> mask(8);
  ASSERT_TRUE(m.acceptBytes("\""));
  for (int i = 0; i < 10; ++i) {
    m.fillMask(mask, {});
    EXPECT_TRUE((mask['a' >> 5] >> ('a' & 31)) & 1);
    EXPECT_TRUE((mask['"' >> 5] >> ('"' & 31)) & 1);
    EXPECT_FALSE((mask['\n' >> 5] >> ('\n' & 31)) & 1);
    ASSERT_TRUE(m.acceptBytes("a"));
  }
  EXPECT_EQ(m.stats().masks, 10u);
  EXPECT_EQ(m.stats().mask_cache_hits, 9u);  // the state after each character is the same stack set
}

TEST(TokenVocabularyOfTokenizer, ByteLevelFixtureHasOneByteTokens) {
  auto tok = Tokenizer::fromFile(std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/qwen3_tiny/q0f32/tokenizer.json");
  ASSERT_TRUE(tok) << tok.error().message;
  auto v = vocabularyOf(*tok);
  ASSERT_EQ(v->size(), (uint32_t)tok->vocabSize());
  std::set<std::string> seen;
  for (uint32_t id = 0; id < v->size(); ++id) seen.insert(v->bytes((int32_t)id));
  EXPECT_TRUE(seen.count("{"));
  EXPECT_TRUE(seen.count("\""));
  EXPECT_TRUE(seen.count(std::string(1, (char)0xc3)));
}

}  // namespace
}  // namespace ewgpu::grammar
