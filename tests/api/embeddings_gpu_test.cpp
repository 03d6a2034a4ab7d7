// engine.embeddings.create on the GPU (SwiftShader in CI) with a tiny random bert folder: OpenAI's response shape, the
// vectors against the CPU reference (tokenized with [CLS] ... [SEP]), token-id inputs, base64, usage, and the
// typed errors naming the field, including a chat model asked for embeddings and an embedding model asked to chat.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ewgpu/engine.h"
#include "model/model_folder.h"
#include "model/reference_encoder.h"
#include "model/tiny_model.h"
#include "tokenizer/tokenizer.h"
#include "../model/model_test_util.h"

namespace ewgpu {
namespace {

using json = nlohmann::json;

// A tiny random bert folder (make-tiny's), written once for the suite.
std::string bertDir() {
  static test::TempDir* dir = [] {
    auto* d = new test::TempDir();
    TinyModelSpec spec;
    spec.arch = Arch::kBert;
    spec.quant = Quant::kQ0F32;
    spec.tokenizer_path = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/bert_tokenizer/tokenizer.json";
    EXPECT_TRUE(writeTinyModel(spec, d->path()).ok());
    return d;
  }();
  return dir->path();
}
const std::string kChat = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/llama_tiny/q4f16_1";

std::vector<float> decodeBase64Floats(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    const uint32_t n = val(s[i]) << 18 | val(s[i + 1]) << 12 | std::max(0, val(s[i + 2])) << 6 | std::max(0, val(s[i + 3]));
    b.push_back(n >> 16);
    if (s[i + 2] != '=') b.push_back(n >> 8 & 255);
    if (s[i + 3] != '=') b.push_back(n & 255);
  }
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

class EmbeddingsApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto e = Engine::create({});
    ASSERT_TRUE(e.ok()) << e.error().toString();
    engine_ = e->release();
    auto b = engine_->load(bertDir(), {.id = "bert", .keep_resident = true})->wait();
    ASSERT_TRUE(b.ok()) << b.error().toString();
    EXPECT_EQ(b->model_type, "bert");
    auto c = engine_->load(kChat, {.id = "chat", .keep_resident = true})->wait();
    ASSERT_TRUE(c.ok()) << c.error().toString();
  }
  static void TearDownTestSuite() { delete engine_; }
  static Engine* engine_;
};
Engine* EmbeddingsApi::engine_ = nullptr;

TEST_F(EmbeddingsApi, VectorsMatchTheReferenceInOpenAIShape) {
  auto folder = ModelFolder::open(bertDir());
  ASSERT_TRUE(folder.ok());
  auto ref = ReferenceEncoder::load(*folder);
  ASSERT_TRUE(ref.ok());
  auto tok = Tokenizer::fromFile(bertDir() + "/tokenizer.json");
  ASSERT_TRUE(tok.ok());
  const std::vector<std::string> texts = {"Hello, World!", "The lazy dog.", "embeddings"};
  auto h = engine_->embeddings.create({{"model", "bert"}, {"input", texts}});
  ASSERT_TRUE(h.ok()) << h.error().toString();
  const json& r = (*h)->wait();
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "bert");
  ASSERT_EQ(r["data"].size(), 3u);
  uint64_t tokens = 0;
  double maxErr = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const json& d = r["data"][i];
    EXPECT_EQ(d["object"], "embedding");
    EXPECT_EQ(d["index"], i);
    std::vector<int32_t> ids = tok->encode(texts[i], true);
    EXPECT_EQ(ids.front(), 2);  // [CLS]
    EXPECT_EQ(ids.back(), 3);   // [SEP]
    tokens += ids.size();
    std::vector<float> want = ref->embed(ids), got = d["embedding"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) maxErr = std::max(maxErr, (double)std::fabs(got[k] - want[k]));
  }
  EXPECT_LT(maxErr, 2e-4);  // unit vectors: absolute = relative to max |value| <= 1
  EXPECT_EQ(r["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(r["usage"]["total_tokens"], tokens);

  // Token ids as given, one list and a list of lists; base64 carries the same floats.
  auto ids = engine_->embeddings.create({{"input", json::array({2, 22, 6, 23, 7, 3})}, {"model", "bert"}});
  ASSERT_TRUE(ids.ok());
  const json& ri = (*ids)->wait();
  EXPECT_EQ(ri["data"][0]["embedding"], r["data"][0]["embedding"]);
  EXPECT_EQ(ri["usage"]["prompt_tokens"], 6);
  auto b64 = engine_->embeddings.create(
      {{"input", json::array({json::array({2, 22, 6, 23, 7, 3})})}, {"model", "bert"}, {"encoding_format", "base64"}});
  ASSERT_TRUE(b64.ok());
  const json& rb = (*b64)->wait();
  ASSERT_TRUE(rb["data"][0]["embedding"].is_string());
  EXPECT_EQ(decodeBase64Floats(rb["data"][0]["embedding"]), r["data"][0]["embedding"].get<std::vector<float>>());
}

TEST_F(EmbeddingsApi, ErrorsNameTheField) {
  auto expect = [&](const json& body, ErrorCode code, const std::string& field) {
    auto h = engine_->embeddings.create(body);
    ASSERT_FALSE(h.ok()) << body.dump();
    EXPECT_EQ(h.error().code, code) << h.error().toString();
    EXPECT_EQ(h.error().detail.value("field", ""), field) << h.error().toString();
  };
  expect({{"model", "bert"}}, ErrorCode::kBadRequest, "input");
  expect({{"model", "bert"}, {"input", ""}}, ErrorCode::kBadRequest, "input");
  expect({{"model", "bert"}, {"input", json::array()}}, ErrorCode::kBadRequest, "input");
  expect({{"model", "bert"}, {"input", json::array({"a", ""})}}, ErrorCode::kBadRequest, "input[1]");
  expect({{"model", "bert"}, {"input", json::array({json::array({2, 99})})}}, ErrorCode::kBadRequest, "input[0]");
  expect({{"model", "bert"}, {"input", std::vector<int>(513, 5)}}, ErrorCode::kContextTooLong, "input");
  expect({{"model", "bert"}, {"input", "a"}, {"encoding_format", "int8"}}, ErrorCode::kBadRequest, "encoding_format");
  expect({{"model", "bert"}, {"input", "a"}, {"dimensions", 8}}, ErrorCode::kBadRequest, "dimensions");
  expect({{"model", "bert"}, {"input", "a"}, {"temperature", 1}}, ErrorCode::kBadRequest, "temperature");
  expect({{"model", "nope"}, {"input", "a"}}, ErrorCode::kUnknownModel, "model");
  expect({{"model", "chat"}, {"input", "hello"}}, ErrorCode::kBadRequest, "model");  // a chat model

  // An embedding model asked to chat.
  auto chat = engine_->chat.completions.create({{"model", "bert"}, {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}});
  ASSERT_FALSE(chat.ok());
  EXPECT_EQ(chat.error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(chat.error().detail["field"], "model");
  CompletionRequest req;
  req.model = "bert";
  req.prompt = "hi";
  auto job = engine_->complete(req);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().detail["field"], "model");

  // The embedding model is listed as resident and ready.
  bool listed = false;
  for (const auto& m : engine_->state().models) listed |= m.id == "bert" && m.status == "ready";
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace ewgpu
