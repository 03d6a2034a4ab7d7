// BERT folders (model_type "bert", q0f32): the config fields MLC's BertConfig writes, the parameter names and
// shapes of bert_model.py / bert_loader.py, make-tiny's random folder passing the validator, and the errors.
#include <gtest/gtest.h>

#include <set>

#include "model/expected_params.h"
#include "model/model_folder.h"
#include "model/tiny_model.h"
#include "model_test_util.h"

namespace ewgpu {
namespace {

using json = nlohmann::json;

// mlc-chat-config.json of snowflake-arctic-embed-s as MLC's gen_config writes it (BertConfig fields).
json arcticSmallConfig() {
  json mc = {{"vocab_size", 30522},       {"hidden_size", 384},        {"num_hidden_layers", 12},
             {"num_attention_heads", 12}, {"intermediate_size", 1536}, {"hidden_act", "gelu"},
             {"layer_norm_eps", 1e-12},   {"context_window_size", 512}, {"prefill_chunk_size", 512},
             {"tensor_parallel_shards", 1}, {"head_dim", 32},          {"max_batch_size", 32}};
  return {{"model_type", "bert"}, {"quantization", "q0f32"}, {"model_config", mc}, {"vocab_size", 30522},
          {"context_window_size", 512}, {"prefill_chunk_size", 512}, {"conv_template", "LM"}};
}

TEST(BertConfig, ParsesMlcBertConfigFields) {
  auto c = parseModelConfig(arcticSmallConfig(), "mlc-chat-config.json");
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->arch, Arch::kBert);
  EXPECT_EQ(archName(c->arch), "bert");
  EXPECT_TRUE(c->isEmbedding());
  EXPECT_EQ(c->hidden, 384);
  EXPECT_EQ(c->intermediate, 1536);
  EXPECT_EQ(c->n_layers, 12);
  EXPECT_EQ(c->n_heads, 12);
  EXPECT_EQ(c->n_kv_heads, 12);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->vocab, 30522);
  EXPECT_EQ(c->context_window, 512);
  EXPECT_EQ(c->type_vocab, 2);  // absent: BertConfig's default
  EXPECT_FLOAT_EQ(c->layer_norm_eps, 1e-12f);
  EXPECT_EQ(c->hidden_act, "gelu");
  EXPECT_TRUE(c->embedding_normalize);
}

TEST(BertConfig, FallbacksAndErrorsNameTheField) {
  json j = arcticSmallConfig();
  j["model_config"].erase("context_window_size");
  j.erase("context_window_size");
  j["model_config"]["max_position_embeddings"] = 256;
  j["model_config"]["type_vocab_size"] = 1;
  j["embedding_metadata"] = {{"model_type", "encoder"}, {"pooling_strategy", "cls"}, {"normalize", false}};
  auto c = parseModelConfig(j, "mlc-chat-config.json");
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->context_window, 256);
  EXPECT_EQ(c->type_vocab, 1);
  EXPECT_FALSE(c->embedding_normalize);

  auto expectField = [](json doc, const std::string& field, const std::string& problem) {
    auto r = parseModelConfig(doc, "mlc-chat-config.json");
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidModelFolder);
    EXPECT_EQ(r.error().detail["field"], field) << r.error().toString();
    EXPECT_EQ(r.error().detail["problem"], problem) << r.error().toString();
  };
  json bad = arcticSmallConfig();
  bad["model_config"]["hidden_act"] = "relu";
  expectField(bad, "hidden_act", "unsupported");
  bad = arcticSmallConfig();
  bad["quantization"] = "q4f16_1";
  expectField(bad, "quantization", "unsupported");
  bad = arcticSmallConfig();
  bad["model_config"].erase("layer_norm_eps");
  expectField(bad, "layer_norm_eps", "missing_field");
  bad = arcticSmallConfig();
  bad["model_config"]["head_dim"] = 16;
  expectField(bad, "head_dim", "bad_value");
  bad = arcticSmallConfig();
  bad["embedding_metadata"] = {{"pooling_strategy", "mean"}};
  expectField(bad, "embedding_metadata.pooling_strategy", "unsupported");
}

TEST(BertLayout, NamesAndShapesOfMlcBertModel) {
  auto c = parseModelConfig(arcticSmallConfig(), "mlc-chat-config.json");
  ASSERT_TRUE(c.ok());
  std::vector<ParamSpec> ps = expectedParams(*c);
  ASSERT_EQ(ps.size(), 5u + 12u * 12u);  // 5 embedding tensors, 12 per layer (6 weights + 6 biases)
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& p : ps) {
    EXPECT_EQ(p.dtype, DType::kF32) << p.name;
    shapes[p.name] = p.shape;
  }
  using S = std::vector<int64_t>;
  EXPECT_EQ(shapes["embeddings.word_embeddings.weight"], (S{30522, 384}));
  EXPECT_EQ(shapes["embeddings.position_embeddings.weight"], (S{512, 384}));
  EXPECT_EQ(shapes["embeddings.token_type_embeddings.weight"], (S{2, 384}));
  EXPECT_EQ(shapes["embeddings.LayerNorm.weight"], (S{384}));
  EXPECT_EQ(shapes["embeddings.LayerNorm.bias"], (S{384}));
  const std::string l = "encoder.layer.11.";
  EXPECT_EQ(shapes[l + "attention.self.qkv.weight"], (S{1152, 384}));
  EXPECT_EQ(shapes[l + "attention.self.qkv.bias"], (S{1152}));
  EXPECT_EQ(shapes[l + "attention.output.dense.weight"], (S{384, 384}));
  EXPECT_EQ(shapes[l + "attention.output.dense.bias"], (S{384}));
  EXPECT_EQ(shapes[l + "attention.output.LayerNorm.weight"], (S{384}));
  EXPECT_EQ(shapes[l + "attention.output.LayerNorm.bias"], (S{384}));
  EXPECT_EQ(shapes[l + "intermediate.dense.weight"], (S{1536, 384}));
  EXPECT_EQ(shapes[l + "intermediate.dense.bias"], (S{1536}));
  EXPECT_EQ(shapes[l + "output.dense.weight"], (S{384, 1536}));
  EXPECT_EQ(shapes[l + "output.dense.bias"], (S{384}));
  EXPECT_EQ(shapes[l + "output.LayerNorm.weight"], (S{384}));
  EXPECT_EQ(shapes[l + "output.LayerNorm.bias"], (S{384}));
  // transformers counts 33,360,000 for the BertModel of this shape, of which the pooler (unused by MLC, not
  // converted) holds 384 * 384 + 384 = 147,840.
  EXPECT_EQ(parameterCount(*c), 33360000 - 147840);
}

TEST(BertLayout, TinyFolderValidatesAndMissingTensorsAreNamed) {
  test::TempDir dir;
  TinyModelSpec spec;
  spec.arch = Arch::kBert;
  spec.quant = Quant::kQ0F32;
  spec.tokenizer_path = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/bert_tokenizer/tokenizer.json";
  ASSERT_TRUE(writeTinyModel(spec, dir.path()).ok());
  auto folder = ModelFolder::open(dir.path());
  ASSERT_TRUE(folder.ok()) << folder.error().toString();
  const ModelConfig& c = folder->config();
  EXPECT_EQ(c.arch, Arch::kBert);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.context_window, 512);
  json cfg = test::readJson(dir / "mlc-chat-config.json");
  EXPECT_EQ(cfg["model_task"], "embedding");
  EXPECT_EQ(cfg["embedding_metadata"]["pooling_strategy"], "cls");
  EXPECT_EQ(cfg["model_config"]["layer_norm_eps"], 1e-12);
  EXPECT_EQ(cfg["model_config"]["type_vocab_size"], 2);
  EXPECT_EQ(cfg["conv_template"]["name"], "LM");

  // Drop one record from the manifest: the validator names it.
  json manifest = test::readJson(dir / "tensor-cache.json");
  auto& recs = manifest["records"][0]["records"];
  for (size_t i = 0; i < recs.size(); ++i)
    if (recs[i]["name"] == "encoder.layer.1.intermediate.dense.bias") {
      recs.erase(i);
      break;
    }
  test::writeJson(dir / "tensor-cache.json", manifest);
  auto bad = ModelFolder::open(dir.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().detail["problem"], "missing_tensor");
  EXPECT_EQ(bad.error().detail["tensor"], "encoder.layer.1.intermediate.dense.bias");
}

}  // namespace
}  // namespace ewgpu
