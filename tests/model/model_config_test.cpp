// mlc-chat-config.json parsing, the expected parameter lists against documented real shapes/counts, and
// per-token weight traffic.
#include "model/model_config.h"

#include <gtest/gtest.h>

#include <functional>

#include "model/expected_params.h"
#include "model/tiny_model.h"
#include "runtime/local_engine.h"
#include "tokenizer/conv_template.h"

namespace ewgpu {
namespace {

nlohmann::json qwen3Config() {
  return {{"model_type", "qwen3"},
          {"quantization", "q4f16_1"},
          {"vocab_size", 151936},
          {"context_window_size", 40960},
          {"prefill_chunk_size", 2048},
          {"active_vocab_size", 151669},
          {"temperature", 0.6},
          {"top_p", 0.95},
          {"conv_template", {{"name", "qwen3"}}},
          {"model_config",
           {{"hidden_size", 1024},
            {"intermediate_size", 3072},
            {"num_attention_heads", 16},
            {"num_hidden_layers", 28},
            {"num_key_value_heads", 8},
            {"head_dim", 128},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 1000000},
            {"vocab_size", 151936},
            {"tie_word_embeddings", true},
            {"attention_bias", false}}}};
}

nlohmann::json qwen35Config(int hidden, int intermediate) {
  return {{"model_type", "qwen3_5_text"},
          {"quantization", "q4f16_1"},
          {"vocab_size", 248320},
          {"context_window_size", 262144},
          {"model_config",
           {{"hidden_size", hidden},
            {"intermediate_size", intermediate},
            {"num_attention_heads", 8},
            {"num_hidden_layers", 24},
            {"num_key_value_heads", 2},
            {"rms_norm_eps", 1e-6},
            {"tie_word_embeddings", true},
            {"linear_key_head_dim", 128},
            {"linear_value_head_dim", 128},
            {"linear_num_key_heads", 16},
            {"linear_num_value_heads", 16}}}};
}

const ParamSpec* findParam(const std::vector<ParamSpec>& v, const std::string& name) {
  for (const auto& p : v)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(ModelConfig, ParsesQwen3) {
  auto c = parseModelConfig(qwen3Config(), "mlc-chat-config.json");
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->arch, Arch::kQwen3);
  EXPECT_EQ(c->quant, Quant::kQ4F16_1);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_TRUE(c->tie_embeddings);
  EXPECT_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->active_vocab, 151669);
  EXPECT_FLOAT_EQ(c->temperature, 0.6f);
  EXPECT_EQ(c->context_window, 40960);
  EXPECT_TRUE(c->isFullAttention(5));
  EXPECT_EQ(c->rotaryDim(), 128);
}

TEST(ModelConfig, Qwen35DefaultsAndLayerTypes) {
  auto c = parseModelConfig(qwen35Config(1024, 3584), "mlc-chat-config.json");
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->arch, Arch::kQwen3_5);
  EXPECT_EQ(c->model_type, "qwen3_5_text");
  EXPECT_EQ(c->head_dim, 256);  // documented default
  EXPECT_EQ(c->rope_theta, 1e7);
  EXPECT_EQ(c->lin_conv_kernel, 4);
  EXPECT_EQ(c->rotaryDim(), 64);
  std::vector<int> full;
  for (int i = 0; i < c->n_layers; ++i)
    if (c->isFullAttention(i)) full.push_back(i);
  EXPECT_EQ(full, (std::vector<int>{3, 7, 11, 15, 19, 23}));
}

// The seed model card's defaults (Qwen3.8-2B-q4f16_1-MLC): when the folder says context 4096, temperature 0.6,
// top_p 0.95 and conv_template qwen3_5_nothink, generation uses them, with the template's stop ids 248046, 248044.
TEST(ModelConfig, SeedModelCardDefaultsReachSampling) {
  nlohmann::json j = qwen35Config(2048, 6144);
  j["context_window_size"] = 4096;
  j["temperature"] = 0.6;
  j["top_p"] = 0.95;
  j["conv_template"] = convTemplatePreset("qwen3_5_nothink");
  auto c = parseModelConfig(j, "mlc-chat-config.json");
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->context_window, 4096);
  auto conv = ConvTemplate::fromJson(j["conv_template"]);
  ASSERT_TRUE(conv.ok()) << conv.error().toString();
  EXPECT_EQ(conv->name(), "qwen3_5_nothink");
  SamplingParams p = defaultSampling(*c, &*conv);
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{248046, 248044}));
}

TEST(ModelConfig, MissingFieldsNameTheField) {
  struct Case {
    nlohmann::json j;
    std::string field;
  };
  std::vector<Case> cases;
  auto a = qwen3Config();
  a["model_config"].erase("hidden_size");
  cases.push_back({a, "hidden_size"});
  auto b = qwen3Config();
  b["model_config"].erase("rms_norm_eps");
  cases.push_back({b, "rms_norm_eps"});
  auto d = qwen3Config();
  d.erase("quantization");
  cases.push_back({d, "quantization"});
  auto e = qwen35Config(1024, 3584);
  e["model_config"].erase("linear_num_value_heads");
  cases.push_back({e, "linear_num_value_heads"});
  auto f = qwen3Config();
  f["model_config"].erase("vocab_size");
  f.erase("vocab_size");
  cases.push_back({f, "vocab_size"});
  for (const Case& k : cases) {
    auto r = parseModelConfig(k.j, "mlc-chat-config.json");
    ASSERT_FALSE(r.ok()) << k.field;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidModelFolder);
    EXPECT_EQ(r.error().detail["file"], "mlc-chat-config.json");
    EXPECT_EQ(r.error().detail["field"], k.field);
    EXPECT_EQ(r.error().detail["problem"], "missing_field");
  }
}

TEST(ModelConfig, RejectsWrongTypesAndUnknownNames) {
  auto a = qwen3Config();
  a["model_config"]["hidden_size"] = "big";
  auto r = parseModelConfig(a, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().detail["problem"], "wrong_type");
  auto b = qwen3Config();
  b["model_type"] = "gpt2";
  r = parseModelConfig(b, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().detail["field"], "model_type");
  EXPECT_EQ(r.error().detail["problem"], "unsupported");
  auto t = qwen3Config();
  t["model_config"]["rope_scaling"] = {{"type", 5}};  // a nested value of the wrong type: an error, not a throw
  r = parseModelConfig(t, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidModelFolder);
  auto c = qwen3Config();
  c["model_config"]["num_key_value_heads"] = 5;  // does not divide 16
  r = parseModelConfig(c, "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().detail["field"], "num_key_value_heads");
}

// Issue 18: every field the engine reads is type- and range-checked, in model_config and at the top level alike,
// and the error names the file, the field (where it sits) and the problem.
TEST(ModelConfig, EveryReadFieldIsCheckedWhereverItSits) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string field, problem;
  };
  const std::vector<Case> cases = {
      // The finding: a top-level value of the wrong type hid behind a good model_config one.
      {[](auto& j) { j["context_window_size"] = "big"; }, "context_window_size", "wrong_type"},
      {[](auto& j) { j["model_config"]["context_window_size"] = "big"; }, "model_config.context_window_size", "wrong_type"},
      {[](auto& j) { j["context_window_size"] = 0; }, "context_window_size", "bad_value"},
      {[](auto& j) { j["prefill_chunk_size"] = -5; }, "prefill_chunk_size", "bad_value"},
      {[](auto& j) { j["sliding_window_size"] = 1.5; }, "sliding_window_size", "wrong_type"},
      {[](auto& j) { j["vocab_size"] = 1ll << 40; }, "vocab_size", "bad_value"},
      {[](auto& j) { j["model_config"]["hidden_size"] = -1024; }, "model_config.hidden_size", "bad_value"},
      {[](auto& j) { j["model_config"]["head_dim"] = true; }, "model_config.head_dim", "wrong_type"},
      {[](auto& j) { j["model_config"]["rms_norm_eps"] = 0; }, "model_config.rms_norm_eps", "bad_value"},
      {[](auto& j) { j["model_config"]["rope_theta"] = "1e6"; }, "model_config.rope_theta", "wrong_type"},
      {[](auto& j) { j["model_config"]["tie_word_embeddings"] = 1; }, "model_config.tie_word_embeddings", "wrong_type"},
      {[](auto& j) { j["temperature"] = -1; }, "temperature", "bad_value"},
      {[](auto& j) { j["top_p"] = 0; }, "top_p", "bad_value"},
      {[](auto& j) { j["repetition_penalty"] = "1"; }, "repetition_penalty", "wrong_type"},
      {[](auto& j) { j["presence_penalty"] = 1e300; }, "presence_penalty", "bad_value"},
      {[](auto& j) { j["tokenizer_info"] = "byte_level"; }, "tokenizer_info", "wrong_type"},
      {[](auto& j) { j["model_type"] = 3; }, "model_type", "wrong_type"},
      {[](auto& j) { j["model_config"] = "x"; }, "model_config", "wrong_type"},
      {[](auto& j) { j["model_config"]["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", "8"}}; },
       "rope_scaling.factor", "wrong_type"},
      {[](auto& j) {
         j["model_config"]["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8}, {"low_freq_factor", 1},
                                              {"high_freq_factor", 4}, {"original_max_position_embeddings", 1e300}};
       },
       "rope_scaling.original_max_position_embeddings", "wrong_type"},
      {[](auto& j) { j["conv_template"] = {{"stop_token_ids", {151645, "x"}}}; }, "conv_template.stop_token_ids",
       "wrong_type"},
      {[](auto& j) { j["conv_template"] = {{"system_prefix_token_ids", {151936}}}; },
       "conv_template.system_prefix_token_ids", "outside_vocabulary"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = qwen3Config();
    c.edit(j);
    auto r = parseModelConfig(j, "mlc-chat-config.json");
    ASSERT_FALSE(r.ok()) << j.dump();
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidModelFolder);
    EXPECT_EQ(r.error().detail["file"], "mlc-chat-config.json");
    EXPECT_EQ(r.error().detail["field"], c.field) << r.error().toString();
    EXPECT_EQ(r.error().detail["problem"], c.problem) << r.error().toString();
  }
  nlohmann::json ok = qwen3Config();
  ok["context_window_size"] = -1;  // -1: no window (a sliding window instead) stays valid
  ok["sliding_window_size"] = 4096;
  ok["model_config"].erase("context_window_size");
  EXPECT_TRUE(parseModelConfig(ok, "mlc-chat-config.json").ok());
}

// A template id outside the vocabulary fails at load (legacy names included), before any GPU work.
TEST(ModelConfig, TemplateIdsOutsideTheVocabularyAreRejected) {
  auto conv = ConvTemplate::builtin("llama-3");
  ASSERT_TRUE(conv.ok());
  Status st = checkTemplateIds(*conv, 256);  // the llama tiny fixture's vocabulary before its fix
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidModelFolder);
  EXPECT_EQ(st.error().detail["field"], "conv_template.system_prefix_token_ids");
  EXPECT_EQ(st.error().detail["id"], 128000);
  EXPECT_TRUE(checkTemplateIds(*conv, 128256).ok());
}

TEST(ModelConfig, WriterOutputParsesBackForEveryArch) {
  for (Arch arch : {Arch::kLlama, Arch::kMistral, Arch::kQwen2, Arch::kQwen3, Arch::kQwen3_5}) {
    TinyModelSpec spec;
    spec.arch = arch;
    spec.quant = Quant::kQ4F32_1;
    ModelConfig c = tinyModelConfig(spec, 1000);
    auto back = parseModelConfig(mlcChatConfigJson(c), "mlc-chat-config.json");
    ASSERT_TRUE(back.ok()) << back.error().toString();
    EXPECT_EQ(back->arch, c.arch);
    EXPECT_EQ(back->quant, c.quant);
    EXPECT_EQ(back->hidden, c.hidden);
    EXPECT_EQ(back->n_layers, c.n_layers);
    EXPECT_EQ(back->head_dim, c.head_dim);
    EXPECT_EQ(back->vocab, c.vocab);
    EXPECT_EQ(back->active_vocab, 1000);
    EXPECT_EQ(back->rms_eps, c.rms_eps);
    EXPECT_EQ(back->rope_theta, c.rope_theta);
    EXPECT_EQ(back->tie_embeddings, c.tie_embeddings);
    EXPECT_EQ(back->qkv_bias, c.qkv_bias);
    EXPECT_EQ(back->qk_norm, c.qk_norm);
    EXPECT_EQ(back->lin_v_heads, c.lin_v_heads);
    EXPECT_EQ(back->full_attention_interval, c.full_attention_interval);
    EXPECT_EQ(back->rope_scaling.has_value(), c.rope_scaling.has_value());
    EXPECT_EQ(expectedParams(*back).size(), expectedParams(c).size());
    EXPECT_TRUE(back->conv_template.is_object());
  }
}

// Shapes from the layer-0 lists of mlc-format.md §3.5.
TEST(ExpectedParams, Qwen3_0_6BLayerZeroShapes) {
  auto c = parseModelConfig(qwen3Config(), "m");
  ASSERT_TRUE(c.ok());
  auto p = expectedParams(*c);
  auto shape = [&](const std::string& n) {
    const ParamSpec* s = findParam(p, n);
    return s ? s->shape : std::vector<int64_t>{};
  };
  EXPECT_EQ(shape("model.embed_tokens.q_weight"), (std::vector<int64_t>{151936, 128}));
  EXPECT_EQ(shape("model.embed_tokens.q_scale"), (std::vector<int64_t>{151936, 32}));
  EXPECT_EQ(shape("model.layers.0.self_attn.c_attn.q_weight"), (std::vector<int64_t>{4096, 128}));
  EXPECT_EQ(shape("model.layers.0.self_attn.o_proj.q_weight"), (std::vector<int64_t>{1024, 256}));
  EXPECT_EQ(shape("model.layers.0.mlp.down_proj.q_scale"), (std::vector<int64_t>{1024, 96}));
  EXPECT_EQ(shape("model.layers.0.self_attn.q_norm.weight"), (std::vector<int64_t>{128}));
  EXPECT_EQ(findParam(p, "lm_head.q_weight"), nullptr);  // tied
  EXPECT_EQ(findParam(p, "model.layers.0.self_attn.c_attn.bias"), nullptr);
}

TEST(ExpectedParams, Qwen35_0_8BLayerShapesAndDtypes) {
  auto c = parseModelConfig(qwen35Config(1024, 3584), "m");
  ASSERT_TRUE(c.ok());
  auto p = expectedParams(*c);
  const ParamSpec* qkv = findParam(p, "model.layers.0.linear_attn.in_proj_qkv.q_weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{6144, 128}));
  const ParamSpec* conv = findParam(p, "model.layers.0.linear_attn.conv1d_weight");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->shape, (std::vector<int64_t>{6144, 1, 4}));
  EXPECT_EQ(conv->dtype, DType::kF16);
  const ParamSpec* alog = findParam(p, "model.layers.0.linear_attn.A_log");
  ASSERT_NE(alog, nullptr);
  EXPECT_EQ(alog->dtype, DType::kF32);
  const ParamSpec* cattn = findParam(p, "model.layers.3.self_attn.c_attn.q_weight");
  ASSERT_NE(cattn, nullptr);
  EXPECT_EQ(cattn->shape, (std::vector<int64_t>{5120, 128}));
  EXPECT_EQ(findParam(p, "model.layers.3.linear_attn.A_log"), nullptr);
  EXPECT_EQ(findParam(p, "model.layers.0.self_attn.c_attn.q_weight"), nullptr);
}

// Parameter totals confirmed with transformers on the meta device (qwen3_5-architecture.md §11).
TEST(ExpectedParams, Qwen35ParameterCountsMatchTransformers) {
  auto small = parseModelConfig(qwen35Config(1024, 3584), "m");
  auto big = parseModelConfig(qwen35Config(2048, 6144), "m");
  ASSERT_TRUE(small.ok() && big.ok());
  EXPECT_EQ(parameterCount(*small), 752393024);
  EXPECT_EQ(parameterCount(*big), 1881825088);
}

TEST(ExpectedParams, TrafficCountsTiedHeadFullyAndOneEmbeddingRow) {
  auto c = parseModelConfig(qwen35Config(2048, 6144), "m");
  ASSERT_TRUE(c.ok());
  WeightTraffic t = weightTraffic(*c);
  // Embedding q4f16_1: 248320 rows x (256 words*4 + 64 scales*2) bytes = 286.06 MB (§11).
  const uint64_t embBytes = 248320ull * (256 * 4 + 64 * 2);
  EXPECT_EQ(t.lm_head_bytes, embBytes);
  EXPECT_EQ(t.bytes_per_token, t.weight_bytes + embBytes / 248320);
  EXPECT_NEAR((double)t.bytes_per_token / 1e6, 1059.3, 1.0);
  ModelConfig untied = *c;
  untied.tie_embeddings = false;
  WeightTraffic u = weightTraffic(untied);
  EXPECT_EQ(u.weight_bytes, t.weight_bytes + embBytes);
  EXPECT_EQ(u.bytes_per_token, t.bytes_per_token);  // lm_head read fully, embedding one row, either way
}

}  // namespace
}  // namespace ewgpu
