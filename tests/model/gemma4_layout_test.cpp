// gemma4's folder layout (docs/mlc-architectures.md "gemma4"): the model config of an MLC folder (nested
// text_config, mlc-llm fa7cf711) and of a HF checkpoint (transformers 5.17), the per-layer shape it implies
// (head dims, KV sharing, double-wide MLPs) and the tensor list the validator expects, E2B's real one included.
#include <gtest/gtest.h>

#include <map>

#include "model/expected_params.h"
#include "model/hf_convert_archs.h"
#include "model/model_config.h"
#include "model/tiny_model.h"

namespace ewgpu {
namespace {

using json = nlohmann::json;

json e2bLayerTypes() {
  json t = json::array();
  for (int i = 0; i < 35; ++i) t.push_back((i + 1) % 5 == 0 ? "full_attention" : "sliding_attention");
  return t;
}

// The text config of google/gemma-4-E2B-it (mlc-llm fa7cf711 model_preset.py gemma4_e2b_it).
json e2bHfTextConfig() {
  return {{"model_type", "gemma4_text"}, {"hidden_size", 1536}, {"intermediate_size", 6144},
          {"num_hidden_layers", 35}, {"vocab_size", 262144}, {"num_attention_heads", 8},
          {"num_key_value_heads", 1}, {"head_dim", 256}, {"global_head_dim", 512}, {"rms_norm_eps", 1e-6},
          {"hidden_activation", "gelu_pytorch_tanh"}, {"max_position_embeddings", 131072}, {"sliding_window", 512},
          {"layer_types", e2bLayerTypes()}, {"hidden_size_per_layer_input", 256},
          {"vocab_size_per_layer_input", 262144}, {"num_kv_shared_layers", 20}, {"use_double_wide_mlp", true},
          {"final_logit_softcapping", 30.0}, {"attention_k_eq_v", false}, {"enable_moe_block", false},
          {"rope_parameters",
           {{"full_attention", {{"rope_theta", 1e6}, {"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}}},
            {"sliding_attention", {{"rope_theta", 10000.0}, {"rope_type", "default"}}}}}};
}

ModelConfig e2bConfig(Quant q = Quant::kQ4F16_1) {
  json hf = {{"model_type", "gemma4"}, {"text_config", e2bHfTextConfig()}};
  auto j = otherDecoderChatConfig(hf, q);
  EXPECT_TRUE(j.ok()) << j.error().toString();
  auto c = parseModelConfig(*j, "mlc-chat-config.json");
  EXPECT_TRUE(c.ok()) << c.error().toString();
  return *c;
}

TEST(Gemma4Layout, E2BConfigFromTheHfConfig) {
  const ModelConfig c = e2bConfig();
  EXPECT_EQ(c.arch, Arch::kGemma4);
  EXPECT_EQ(c.model_type, "gemma4");
  EXPECT_TRUE(archRunnable("gemma4"));
  EXPECT_EQ(c.hidden, 1536);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.global_head_dim, 512);
  EXPECT_EQ(c.kv_shared_layers, 20);
  EXPECT_EQ(c.ple_dim, 256);
  EXPECT_EQ(c.ple_vocab, 262144);
  EXPECT_EQ(c.layer_window, 512);
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_DOUBLE_EQ(c.attnScale(), 1.0);
  EXPECT_DOUBLE_EQ(c.logit_scale, 1.0 / std::sqrt(1536.0));
  EXPECT_EQ(c.embed_scale, 1.0f);
  EXPECT_DOUBLE_EQ(c.ropeThetaOf(0), 10000.0);
  EXPECT_DOUBLE_EQ(c.ropeThetaOf(4), 1e6);
  EXPECT_FLOAT_EQ(c.rope_global_partial, 0.25f);
  EXPECT_EQ(c.windowOf(3), 512);
  EXPECT_EQ(c.windowOf(4), 0);
  EXPECT_EQ(c.headDimOf(3), 256);
  EXPECT_EQ(c.headDimOf(4), 512);
  // Layers 15..34 share: the last non-shared sliding layer is 13, the last full one 14.
  EXPECT_EQ(c.kvSourceOf(14), 14);
  EXPECT_EQ(c.kvSourceOf(15), 13);
  EXPECT_EQ(c.kvSourceOf(19), 14);
  EXPECT_EQ(c.kvSourceOf(34), 14);
  EXPECT_EQ(c.intermediateOf(14), 6144);
  EXPECT_EQ(c.intermediateOf(15), 12288);
  EXPECT_EQ(c.contextLength(), 131072u);
}

TEST(Gemma4Layout, E2BTensorList) {
  const ModelConfig c = e2bConfig();
  // 262144 x 35 x 256 / 2 bytes of q4 = 1.09 GiB: three shards of 12, 12 and 11 layers.
  EXPECT_EQ(gemma4PleShardLayers(c), (std::vector<int>{12, 12, 11}));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ParamSpec& p : expectedParams(c)) shapes[p.name] = p.shape;
  auto shape = [&](const std::string& n) {
    EXPECT_TRUE(shapes.count(n)) << n;
    return shapes[n];
  };
  EXPECT_EQ(shape("model.embed_tokens.q_weight"), (std::vector<int64_t>{262144, 1536 / 8}));
  EXPECT_EQ(shape("model.embed_tokens_per_layer.shards.0.q_weight"), (std::vector<int64_t>{262144, 12 * 256 / 8}));
  EXPECT_EQ(shape("model.embed_tokens_per_layer.shards.2.q_scale"), (std::vector<int64_t>{262144, 11 * 256 / 32}));
  EXPECT_FALSE(shapes.count("model.embed_tokens_per_layer.shards.3.q_weight"));
  EXPECT_EQ(shape("model.per_layer_model_projection.q_weight"), (std::vector<int64_t>{35 * 256, 1536 / 8}));
  EXPECT_EQ(shape("model.per_layer_projection_norm.weight"), (std::vector<int64_t>{256}));
  EXPECT_EQ(shape("model.norm.weight"), (std::vector<int64_t>{1536}));
  // A sliding layer, a full one, and a KV-shared full one (its unused k/v are stored, its MLP is double-wide).
  EXPECT_EQ(shape("model.layers.0.self_attn.q_proj.q_weight"), (std::vector<int64_t>{8 * 256, 1536 / 8}));
  EXPECT_EQ(shape("model.layers.0.self_attn.k_norm.weight"), (std::vector<int64_t>{256}));
  EXPECT_EQ(shape("model.layers.4.self_attn.q_proj.q_weight"), (std::vector<int64_t>{8 * 512, 1536 / 8}));
  EXPECT_EQ(shape("model.layers.4.self_attn.o_proj.q_weight"), (std::vector<int64_t>{1536, 8 * 512 / 8}));
  EXPECT_EQ(shape("model.layers.34.self_attn.k_proj.q_weight"), (std::vector<int64_t>{512, 1536 / 8}));
  EXPECT_EQ(shape("model.layers.34.self_attn.v_proj.q_weight"), (std::vector<int64_t>{512, 1536 / 8}));
  EXPECT_EQ(shape("model.layers.34.self_attn.q_norm.weight"), (std::vector<int64_t>{512}));
  EXPECT_EQ(shape("model.layers.34.mlp.gate_up_proj.q_weight"), (std::vector<int64_t>{2 * 12288, 1536 / 8}));
  EXPECT_EQ(shape("model.layers.34.mlp.down_proj.q_weight"), (std::vector<int64_t>{1536, 12288 / 8}));
  EXPECT_EQ(shape("model.layers.14.mlp.down_proj.q_weight"), (std::vector<int64_t>{1536, 6144 / 8}));
  EXPECT_EQ(shape("model.layers.7.per_layer_input_gate.q_weight"), (std::vector<int64_t>{256, 1536 / 8}));
  EXPECT_EQ(shape("model.layers.7.per_layer_projection.q_weight"), (std::vector<int64_t>{1536, 256 / 8}));
  EXPECT_EQ(shape("model.layers.7.post_per_layer_input_norm.weight"), (std::vector<int64_t>{1536}));
  EXPECT_EQ(shape("model.layers.7.layer_scalar"), (std::vector<int64_t>{2}));
  EXPECT_EQ(shape("model.layers.7.pre_feedforward_layernorm.weight"), (std::vector<int64_t>{1536}));
  EXPECT_FALSE(shapes.count("lm_head.q_weight"));  // tied
  // Per layer 8 matrices (q_weight + q_scale) and 8 vectors; embed, 3 shards, projection, its norm, final norm.
  EXPECT_EQ(expectedParams(c).size(), (size_t)(2 + 3 * 2 + 2 + 1 + 1 + 35 * (8 * 2 + 8)));
  // A token reads one row of each per-layer shard, not the shards whole.
  const WeightTraffic t = weightTraffic(c);
  EXPECT_LT(t.bytes_per_token, t.weight_bytes - 1000000000ull);
}

TEST(Gemma4Layout, Transformers517TextConfigWithPerLayerConfig) {
  // transformers 5.17 saves the full layers' head dim in per_layer_config instead of global_head_dim.
  json hf = e2bHfTextConfig();
  hf.erase("global_head_dim");
  hf["per_layer_config"] = json::object();
  for (int i = 4; i < 35; i += 5) hf["per_layer_config"][std::to_string(i)] = {{"head_dim", 512}};
  auto j = otherDecoderChatConfig(hf, Quant::kQ4F32_1);
  ASSERT_TRUE(j.ok()) << j.error().toString();
  EXPECT_EQ((*j)["model_config"]["text_config"]["global_head_dim"], 512);
  EXPECT_EQ((*j)["model_config"]["is_text_model"], true);
  auto c = parseModelConfig(*j, "mlc-chat-config.json");
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->global_head_dim, 512);
  EXPECT_EQ(c->quant, Quant::kQ4F32_1);
}

TEST(Gemma4Layout, RejectsWhatIsNotImplemented) {
  for (const char* k : {"attention_k_eq_v", "enable_moe_block"}) {
    json hf = e2bHfTextConfig();
    hf[k] = true;
    auto j = otherDecoderChatConfig(hf, Quant::kQ4F16_1);
    ASSERT_FALSE(j.ok()) << k;
    EXPECT_EQ(j.error().detail["field"], k);
  }
  // A shared full layer with no earlier full layer to share the KV of.
  json hf = e2bHfTextConfig();
  hf["num_kv_shared_layers"] = 31;
  auto j = otherDecoderChatConfig(hf, Quant::kQ4F16_1);
  ASSERT_TRUE(j.ok());
  auto c = parseModelConfig(*j, "mlc-chat-config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().detail["field"], "num_kv_shared_layers");
}

TEST(Gemma4Layout, SourcesFoldTheScalesSplitTheShardsAndFillTheSharedKv) {
  const ModelConfig c = e2bConfig();
  const HfSource emb = hfSourceOf(c, "model.embed_tokens.weight");
  EXPECT_DOUBLE_EQ(emb.scale, std::sqrt(1536.0));
  const HfSource s1 = hfSourceOf(c, "model.embed_tokens_per_layer.shards.1.weight");
  EXPECT_EQ(s1.names, std::vector<std::string>{"model.embed_tokens_per_layer.weight"});
  EXPECT_DOUBLE_EQ(s1.scale, 16.0);
  EXPECT_EQ(s1.col_first, 12 * 256);
  EXPECT_EQ(s1.col_count, 12 * 256);
  EXPECT_EQ(s1.col_total, 35 * 256);
  EXPECT_EQ(hfSourceOf(c, "model.layers.3.mlp.gate_up_proj.weight").names,
            (std::vector<std::string>{"model.layers.3.mlp.gate_proj.weight", "model.layers.3.mlp.up_proj.weight"}));
  EXPECT_EQ(hfSourceOf(c, "model.layers.3.layer_scalar").pad_to, 2);
  EXPECT_EQ(hfSourceOf(c, "model.layers.30.self_attn.k_proj.weight").fill_if_missing, HfSource::Fill::kZeros);
  EXPECT_EQ(hfSourceOf(c, "model.layers.30.self_attn.k_norm.weight").fill_if_missing, HfSource::Fill::kOnes);
  EXPECT_EQ(hfSourceOf(c, "model.layers.30.self_attn.q_norm.weight").fill_if_missing, HfSource::Fill::kNone);
  // Columns, scale and padding on values: rows of 4 columns, the middle two, times 2.
  HfSource s{{"x"}};
  s.col_first = 1;
  s.col_count = 2;
  s.col_total = 4;
  s.scale = 2.0;
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  auto v = applyHfSource(s, {&x}, 0, 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<float>{2, 4, 10, 12}));
  HfSource pad{{"y"}};
  pad.pad_to = 2;
  const std::vector<float> one = {0.75f};
  EXPECT_EQ(*applyHfSource(pad, {&one}, 0, 0), (std::vector<float>{0.75f, 0.0f}));
}

// make-tiny --arch gemma4: 5 layers s s f s f, the last two sharing layers 1 and 2, read back by the parser.
TEST(Gemma4Layout, TinyWriterConfigReadsBack) {
  TinyModelSpec spec;
  spec.arch = Arch::kGemma4;
  spec.quant = Quant::kQ4F16_1;
  const ModelConfig c = tinyModelConfig(spec, 256);
  auto back = parseModelConfig(mlcChatConfigJson(c), "mlc-chat-config.json");
  ASSERT_TRUE(back.ok()) << back.error().toString();
  EXPECT_EQ(back->arch, Arch::kGemma4);
  EXPECT_EQ(back->n_layers, 5);
  EXPECT_EQ(back->layer_full, (std::vector<bool>{false, false, true, false, true}));
  EXPECT_EQ(back->kvSourceOf(3), 1);
  EXPECT_EQ(back->kvSourceOf(4), 2);
  EXPECT_EQ(back->global_head_dim, 2 * back->head_dim);
  EXPECT_EQ(back->ple_dim, 32);
  EXPECT_EQ(back->intermediateOf(4), 2 * back->intermediate);
  EXPECT_EQ(back->layer_window, 24);
  EXPECT_FLOAT_EQ(back->final_softcap, 1.5f);
  EXPECT_DOUBLE_EQ(back->rope_global_theta, 1e6);
  EXPECT_FLOAT_EQ(back->rope_global_partial, 0.25f);
  EXPECT_EQ(expectedParams(*back).size(), expectedParams(c).size());
  EXPECT_EQ(gemma4PleShardLayers(*back), std::vector<int>{5});
}

}  // namespace
}  // namespace ewgpu
