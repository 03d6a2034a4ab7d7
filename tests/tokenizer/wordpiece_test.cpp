// BERT tokenizer stages on a hand-written WordPiece tokenizer.json (tests/fixtures/bert_tokenizer): BertNormalizer,
// BertPreTokenizer, the WordPiece model, the TemplateProcessing post-processor and the WordPiece decoder. Every
// expected id list is derived by hand from that file's vocab (ids listed in the comments).
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace ewgpu {
namespace {

// Vocab of the fixture: 0 [PAD] 1 [UNK] 2 [CLS] 3 [SEP] 4 [MASK] 5 . 6 , 7 ! 8 ? 9 ' 10 - 11 the 12 quick 13 brown
// 14 fox 15 ##es 16 jump 17 ##s 18 ##ed 19 over 20 lazy 21 dog 22 hello 23 world 24 un 25 ##aff 26 ##able 27 cafe
// 28 naive 29 中 30 文 31 a 32 b 33 c 34 ##a 35 ##b 36 ##c 37 s 38 embed 39 ##ding 40 ##dings 41 t 42 don 43 1
// 44 2 45 ##3
Tokenizer bert() {
  auto t = Tokenizer::fromFile(std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/bert_tokenizer/tokenizer.json");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().toString());
  return t.ok() ? std::move(*t) : Tokenizer{};
}

using Ids = std::vector<int32_t>;

TEST(WordPiece, EncodesLowercasedWordsIntoLongestPieces) {
  Tokenizer t = bert();
  EXPECT_EQ(t.vocabSize(), 46);
  EXPECT_EQ(t.encode("Hello, World!"), (Ids{22, 6, 23, 7}));
  EXPECT_EQ(t.encode("The quick brown foxes jumped over the lazy dog."),
            (Ids{11, 12, 13, 14, 15, 16, 18, 19, 11, 20, 21, 5}));
  EXPECT_EQ(t.encode("Unaffable"), (Ids{24, 25, 26}));
  EXPECT_EQ(t.encode("embeddings"), (Ids{38, 40}));  // ##dings beats ##ding + s
  EXPECT_EQ(t.encode("don't"), (Ids{42, 9, 41}));
  EXPECT_EQ(t.encode("13 1 2"), (Ids{43, 45, 43, 44}));
  EXPECT_EQ(t.encode("123"), (Ids{1}));  // "1", then no "##2...": the whole word is [UNK]
}

TEST(WordPiece, UnknownWordsBecomeOneUnk) {
  Tokenizer t = bert();
  EXPECT_EQ(t.encode("xyz"), (Ids{1}));
  EXPECT_EQ(t.encode("fox xyz dog"), (Ids{14, 1, 21}));
  EXPECT_EQ(t.encode("abcq"), (Ids{1}));  // a ##b ##c then no "##q": the partial pieces are dropped
  EXPECT_EQ(t.encode(std::string(101, 'a')), (Ids{1}));  // over max_input_chars_per_word
  Ids hundred(100, 34);
  hundred[0] = 31;
  EXPECT_EQ(t.encode(std::string(100, 'a')), hundred);  // a ##a ##a ... at exactly the limit
}

TEST(WordPiece, BertNormalizerCleansTextStripsAccentsAndSpacesCjk) {
  Tokenizer t = bert();
  EXPECT_EQ(t.encode("Café NAÏVE"), (Ids{27, 28}));
  EXPECT_EQ(t.encode("中文abc"), (Ids{29, 30, 31, 35, 36}));
  EXPECT_EQ(t.encode(std::string("jumps\tover\n\x00the", 15)), (Ids{16, 17, 19, 11}));
  EXPECT_EQ(t.encode("the\xC2\xA0" "dog"), (Ids{11, 21}));  // NBSP is whitespace
  EXPECT_EQ(t.encode("\xE2\x80\x8B" "dog"), (Ids{21}));     // U+200B (Cf) is removed
  EXPECT_EQ(t.encode(""), (Ids{}));
  EXPECT_EQ(t.encode("   "), (Ids{}));
}

TEST(WordPiece, SpecialTokensInTextAndTemplate) {
  Tokenizer t = bert();
  EXPECT_EQ(t.encode("[CLS] hello [SEP]"), (Ids{2, 22, 3}));
  EXPECT_EQ(t.encode("Hello, World!", true), (Ids{2, 22, 6, 23, 7, 3}));
  EXPECT_EQ(t.encode("", true), (Ids{2, 3}));
  EXPECT_EQ(Ids(t.specialPrefix().begin(), t.specialPrefix().end()), (Ids{2}));
  EXPECT_EQ(Ids(t.specialSuffix().begin(), t.specialSuffix().end()), (Ids{3}));
  EXPECT_TRUE(t.isSpecial(2));
  EXPECT_EQ(t.tokenToId("##dings"), 40);
  EXPECT_EQ(t.idToToken(25), "##aff");
}

TEST(WordPiece, DecoderJoinsPiecesAndCleansUpSpaces) {
  Tokenizer t = bert();
  EXPECT_EQ(t.decode(Ids{22, 6, 23, 7}), "hello, world!");
  EXPECT_EQ(t.decode(Ids{24, 25, 26}), "unaffable");
  EXPECT_EQ(t.decode(Ids{2, 38, 40, 3}), "[CLS] embeddings [SEP]");
  EXPECT_EQ(t.decode(Ids{11, 20, 21, 5}), "the lazy dog.");
}

TEST(WordPiece, PostProcessorVariantsAndErrors) {
  const std::string base =
      R"({"pre_tokenizer":{"type":"BertPreTokenizer"},"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"a":3}},)";
  auto bertProc = Tokenizer::fromJson(base + R"("post_processor":{"type":"BertProcessing","cls":["[CLS]",1],"sep":["[SEP]",2]}})");
  ASSERT_TRUE(bertProc.ok()) << bertProc.error().toString();
  EXPECT_EQ(bertProc->encode("a a", true), (Ids{1, 3, 3, 2}));
  EXPECT_EQ(bertProc->encode("a a"), (Ids{3, 3}));
  auto noUnk = Tokenizer::fromJson(R"({"model":{"type":"WordPiece","unk_token":"[X]","vocab":{"a":0}}})");
  ASSERT_FALSE(noUnk.ok());
  EXPECT_EQ(noUnk.error().detail["field"], "model.unk_token");
  auto badTemplate = Tokenizer::fromJson(
      base + R"("post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]"}}],"special_tokens":{}}})");
  ASSERT_FALSE(badTemplate.ok());
  EXPECT_EQ(badTemplate.error().detail["problem"], "missing_field");
  auto outside = Tokenizer::fromJson(base + R"("post_processor":{"type":"BertProcessing","cls":["[CLS]",9],"sep":["[SEP]",2]}})");
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().detail["field"], "post_processor");
}

}  // namespace
}  // namespace ewgpu
