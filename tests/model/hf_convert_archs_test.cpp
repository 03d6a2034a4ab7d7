// HF -> MLC facts of the catalogue's other decoder architectures (src/model/hf_convert_archs.h): the
// mlc-chat-config fields MLC's Config classes write for the catalogue models' own HF configs (values from
// mlc-llm's model_preset.py), the HF source of every MLC tensor name of docs/mlc-architectures.md, and the
// transforms on real numbers. Expected values are written out by hand from the mlc-llm sources.
#include "model/hf_convert_archs.h"

#include <gtest/gtest.h>

namespace ewgpu {
namespace {

using json = nlohmann::json;

json chatConfigOk(const json& hf, Quant q = Quant::kQ4F16_1) {
  auto r = otherDecoderChatConfig(hf, q);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().toString());
  return r.ok() ? *r : json();
}

// Fields of gemma-2b-it's config.json that MLC reads.
json gemma2bHf() {
  return {{"model_type", "gemma"},         {"architectures", {"GemmaForCausalLM"}},
          {"attention_bias", false},       {"head_dim", 256},
          {"hidden_act", "gelu"},          {"hidden_size", 2048},
          {"intermediate_size", 16384},    {"max_position_embeddings", 8192},
          {"num_attention_heads", 8},      {"num_hidden_layers", 18},
          {"num_key_value_heads", 1},      {"rms_norm_eps", 1e-6},
          {"rope_theta", 10000.0},         {"vocab_size", 256000}};
}

TEST(HfConvertArchs, GemmaModelConfig) {
  const json j = chatConfigOk(gemma2bHf());
  EXPECT_EQ(j["model_type"], "gemma");
  EXPECT_EQ(j["quantization"], "q4f16_1");
  EXPECT_EQ(j["context_window_size"], 8192);
  EXPECT_EQ(j["sliding_window_size"], -1);
  EXPECT_EQ(j["prefill_chunk_size"], 8192);
  const json expected = {{"hidden_size", 2048},          {"intermediate_size", 16384}, {"attention_bias", false},
                         {"num_attention_heads", 8},     {"num_key_value_heads", 1},   {"head_dim", 256},
                         {"num_hidden_layers", 18},      {"rms_norm_eps", 1e-6},       {"vocab_size", 256000},
                         {"hidden_activation", "gelu"},  {"position_embedding_base", 10000.0},
                         {"context_window_size", 8192},  {"prefill_chunk_size", 8192}, {"tensor_parallel_shards", 1},
                         {"max_batch_size", 1}};
  EXPECT_EQ(j["model_config"], expected) << j["model_config"].dump();
  auto bias = gemma2bHf();
  bias["attention_bias"] = true;
  auto r = otherDecoderChatConfig(bias, Quant::kQ4F16_1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().detail["field"], "attention_bias");
  auto relu = gemma2bHf();
  relu["hidden_act"] = "relu";
  EXPECT_EQ(otherDecoderChatConfig(relu, Quant::kQ4F16_1).error().detail["problem"], "unsupported");
  auto noLen = gemma2bHf();
  noLen.erase("max_position_embeddings");
  EXPECT_EQ(otherDecoderChatConfig(noLen, Quant::kQ4F16_1).error().detail["problem"], "missing_field");
}

// gemma-2-2b-it: the context window is the 4096 sliding window, and the prefill chunk follows it on
// __post_init__'s second run (8192 -> 4096).
TEST(HfConvertArchs, Gemma2ContextIsTheSlidingWindow) {
  json hf = gemma2bHf();
  hf.update({{"model_type", "gemma2"},          {"hidden_activation", "gelu_pytorch_tanh"},
             {"hidden_size", 2304},             {"intermediate_size", 9216},
             {"num_key_value_heads", 4},        {"num_hidden_layers", 26},
             {"attn_logit_softcapping", 50.0},  {"final_logit_softcapping", 30.0},
             {"query_pre_attn_scalar", 256},    {"sliding_window", 4096}});
  const json j = chatConfigOk(hf, Quant::kQ4F32_1);
  EXPECT_EQ(j["model_type"], "gemma2");
  EXPECT_EQ(j["quantization"], "q4f32_1");
  EXPECT_EQ(j["context_window_size"], 4096);
  EXPECT_EQ(j["sliding_window_size"], -1);
  EXPECT_EQ(j["prefill_chunk_size"], 4096);
  const json& mc = j["model_config"];
  EXPECT_EQ(mc["hidden_activation"], "gelu_pytorch_tanh");
  EXPECT_EQ(mc["attn_logit_softcapping"], 50.0);
  EXPECT_EQ(mc["final_logit_softcapping"], 30.0);
  EXPECT_EQ(mc["query_pre_attn_scalar"], 256);
  EXPECT_EQ(mc["sliding_window"], 4096);
  EXPECT_EQ(mc["context_window_size"], 4096);
  EXPECT_FALSE(mc.contains("sliding_window_size"));
}

// gemma3-1b-it (model_preset gemma3_1b_it): nested text_config; context = max(512, 8192).
TEST(HfConvertArchs, Gemma3TextNestedConfig) {
  const json hf = {{"architectures", {"Gemma3ForCausalLM"}},
                   {"attention_bias", false},
                   {"attn_logit_softcapping", nullptr},
                   {"final_logit_softcapping", nullptr},
                   {"head_dim", 256},
                   {"hidden_activation", "gelu_pytorch_tanh"},
                   {"hidden_size", 1152},
                   {"intermediate_size", 6912},
                   {"max_position_embeddings", 32768},
                   {"model_type", "gemma3_text"},
                   {"num_attention_heads", 4},
                   {"num_hidden_layers", 26},
                   {"num_key_value_heads", 1},
                   {"query_pre_attn_scalar", 256},
                   {"rms_norm_eps", 1e-6},
                   {"rope_local_base_freq", 10000},
                   {"rope_scaling", nullptr},
                   {"rope_theta", 1000000},
                   {"sliding_window", 512},
                   {"sliding_window_pattern", 6},
                   {"vocab_size", 262144}};
  const json j = chatConfigOk(hf);
  EXPECT_EQ(j["model_type"], "gemma3_text");
  EXPECT_EQ(j["context_window_size"], 8192);
  EXPECT_EQ(j["sliding_window_size"], 512);
  EXPECT_EQ(j["prefill_chunk_size"], 8192);
  const json text = {{"hidden_size", 1152},
                     {"intermediate_size", 6912},
                     {"num_hidden_layers", 26},
                     {"attention_bias", false},
                     {"num_attention_heads", 4},
                     {"num_key_value_heads", 1},
                     {"head_dim", 256},
                     {"rms_norm_eps", 1e-6},
                     {"hidden_activation", "gelu_pytorch_tanh"},
                     {"position_embedding_base", 1000000},
                     {"rope_local_base_freq", 10000.0},
                     {"rope_scaling", nullptr},
                     {"sliding_window_pattern", 6},
                     {"context_window_size", 8192},
                     {"prefill_chunk_size", 8192},
                     {"query_pre_attn_scalar", 256},
                     {"sliding_window_size", 512}};
  const json expected = {{"text_config", text},         {"vocab_size", 262144},         {"tensor_parallel_shards", 1},
                         {"max_batch_size", 1},         {"context_window_size", 8192}, {"sliding_window_size", 512},
                         {"prefill_chunk_size", 8192}, {"is_text_model", true}};
  EXPECT_EQ(j["model_config"], expected) << j["model_config"].dump();
  // The multimodal spelling: model_type gemma3 with a text_config; vocab_size takes MLC's default.
  json vl = {{"model_type", "gemma3"}, {"text_config", hf}};
  vl["text_config"].erase("vocab_size");
  const json v = chatConfigOk(vl);
  EXPECT_EQ(v["model_type"], "gemma3_text");
  EXPECT_EQ(v["model_config"]["is_text_model"], false);
  EXPECT_EQ(v["model_config"]["vocab_size"], 262208);
}

// Phi-3.5-mini (longrope) and Phi-4-mini (partial rotary 0.75, tied).
TEST(HfConvertArchs, Phi3LongropeAndTiedPhi4) {
  json hf = {{"model_type", "phi3"},
             {"hidden_size", 3072},
             {"vocab_size", 32064},
             {"num_hidden_layers", 32},
             {"num_attention_heads", 32},
             {"num_key_value_heads", 32},
             {"intermediate_size", 8192},
             {"rms_norm_eps", 1e-5},
             {"max_position_embeddings", 131072},
             {"original_max_position_embeddings", 4096},
             {"rope_theta", 10000.0},
             {"rope_scaling", {{"long_factor", {1.0, 2.0}}, {"short_factor", {1.0, 1.5}}, {"type", "longrope"}}},
             {"tie_word_embeddings", false}};
  json j = chatConfigOk(hf);
  EXPECT_EQ(j["model_type"], "phi3");
  EXPECT_EQ(j["context_window_size"], 131072);
  EXPECT_EQ(j["prefill_chunk_size"], 8192);
  const json& mc = j["model_config"];
  EXPECT_EQ(mc["model_type"], "phi3");
  EXPECT_EQ(mc["head_dim"], 96);
  EXPECT_EQ(mc["position_embedding_base"], 10000.0);
  EXPECT_EQ(mc["partial_rotary_factor"], 1.0);
  EXPECT_EQ(mc["tie_word_embeddings"], false);
  EXPECT_EQ(mc["original_max_position_embeddings"], 4096);
  const json rs = {{"long_factor", {1.0, 2.0}},       {"short_factor", {1.0, 1.5}},
                   {"type", "longrope"},              {"rope_type", "longrope"},
                   {"max_position_embeddings", 131072}, {"original_max_position_embeddings", 4096}};
  EXPECT_EQ(mc["rope_scaling"], rs);
  hf["rope_scaling"]["type"] = "su";  // the old name of longrope
  EXPECT_EQ(chatConfigOk(hf)["model_config"]["rope_scaling"]["rope_type"], "longrope");
  hf["rope_scaling"]["type"] = "linear";
  EXPECT_EQ(otherDecoderChatConfig(hf, Quant::kQ4F16_1).error().detail["field"], "rope_scaling");
  hf["rope_scaling"] = {{"factor", 2.0}};  // no type: dropped
  EXPECT_TRUE(chatConfigOk(hf)["model_config"]["rope_scaling"].is_null());

  json phi4 = hf;
  phi4.update({{"num_attention_heads", 24}, {"num_key_value_heads", 8}, {"vocab_size", 200064},
               {"partial_rotary_factor", 0.75}, {"tie_word_embeddings", true}});
  const json p = chatConfigOk(phi4)["model_config"];
  EXPECT_EQ(p["head_dim"], 128);
  EXPECT_EQ(p["num_key_value_heads"], 8);
  EXPECT_EQ(p["partial_rotary_factor"], 0.75);
  EXPECT_EQ(p["tie_word_embeddings"], true);
}

TEST(HfConvertArchs, Olmo2StablelmGptNeoxConfigs) {
  const json olmo = chatConfigOk({{"model_type", "olmo2"},       {"hidden_act", "silu"},
                                  {"hidden_size", 4096},         {"intermediate_size", 11008},
                                  {"max_position_embeddings", 4096}, {"num_attention_heads", 32},
                                  {"num_hidden_layers", 32},     {"num_key_value_heads", 32},
                                  {"rms_norm_eps", 1e-6},        {"rope_theta", 500000.0},
                                  {"tie_word_embeddings", false}, {"vocab_size", 100352}});
  const json olmoMc = {{"vocab_size", 100352},          {"hidden_size", 4096},
                       {"num_attention_heads", 32},     {"intermediate_size", 11008},
                       {"hidden_act", "silu"},          {"num_hidden_layers", 32},
                       {"num_key_value_heads", 32},     {"head_dim", 128},
                       {"position_embedding_base", 500000.0}, {"rope_scaling", nullptr},
                       {"rms_norm_eps", 1e-6},          {"tie_word_embeddings", false},
                       {"context_window_size", 4096},   {"prefill_chunk_size", 4096},
                       {"tensor_parallel_shards", 1},   {"pipeline_parallel_stages", 1},
                       {"max_batch_size", 1}};
  EXPECT_EQ(olmo["model_config"], olmoMc) << olmo["model_config"].dump();

  const json slm = chatConfigOk({{"model_type", "stablelm"},         {"hidden_act", "silu"},
                                 {"hidden_size", 2048},              {"intermediate_size", 5632},
                                 {"max_position_embeddings", 4096},  {"layer_norm_eps", 1e-5},
                                 {"num_attention_heads", 32},        {"num_hidden_layers", 24},
                                 {"num_key_value_heads", 32},        {"partial_rotary_factor", 0.25},
                                 {"rope_theta", 10000},              {"use_qkv_bias", true},
                                 {"vocab_size", 100352}});
  const json slmMc = {{"vocab_size", 100352},        {"hidden_size", 2048},     {"num_hidden_layers", 24},
                      {"num_attention_heads", 32},   {"num_key_value_heads", 32}, {"layer_norm_eps", 1e-5},
                      {"partial_rotary_factor", 0.25}, {"rope_theta", 10000},   {"intermediate_size", 5632},
                      {"use_qkv_bias", true},        {"head_dim", 64},          {"context_window_size", 4096},
                      {"prefill_chunk_size", 4096},  {"tensor_parallel_shards", 1}, {"max_batch_size", 1}};
  EXPECT_EQ(slm["model_config"], slmMc) << slm["model_config"].dump();

  const json neox = chatConfigOk({{"model_type", "gpt_neox"},         {"hidden_act", "gelu"},
                                  {"hidden_size", 2560},              {"intermediate_size", 10240},
                                  {"layer_norm_eps", 1e-5},           {"max_position_embeddings", 2048},
                                  {"num_attention_heads", 32},        {"num_hidden_layers", 32},
                                  {"rotary_emb_base", 10000},         {"rotary_pct", 1.0},
                                  {"use_parallel_residual", false},   {"vocab_size", 50432}});
  const json neoxMc = {{"use_parallel_residual", false}, {"hidden_size", 2560},  {"intermediate_size", 10240},
                       {"num_attention_heads", 32},      {"num_hidden_layers", 32}, {"layer_norm_eps", 1e-5},
                       {"vocab_size", 50432},            {"rotary_pct", 1.0},   {"position_embedding_base", 10000},
                       {"context_window_size", 2048},    {"head_dim", 80},      {"prefill_chunk_size", 2048},
                       {"tensor_parallel_shards", 1},    {"ffn_out_dtype", "float32"}, {"max_batch_size", 1}};
  EXPECT_EQ(neox["model_config"], neoxMc) << neox["model_config"].dump();
  EXPECT_EQ(neox["context_window_size"], 2048);
}

TEST(HfConvertArchs, PhiAndLegacyPhiMsftConfigs) {
  // transformers' phi-2: Phi1Config fields, model_type "phi".
  const json phi = chatConfigOk({{"model_type", "phi"},           {"hidden_size", 2560},
                                 {"intermediate_size", 10240},   {"layer_norm_eps", 1e-5},
                                 {"max_position_embeddings", 2048}, {"num_attention_heads", 32},
                                 {"num_hidden_layers", 32},      {"num_key_value_heads", 32},
                                 {"partial_rotary_factor", 0.4}, {"rope_theta", 10000.0},
                                 {"vocab_size", 51200}});
  EXPECT_EQ(phi["model_type"], "phi");
  const json phiMc = {{"vocab_size", 51200},          {"hidden_size", 2560},       {"num_hidden_layers", 32},
                      {"num_attention_heads", 32},    {"layer_norm_eps", 1e-5},    {"position_embedding_base", 10000.0},
                      {"partial_rotary_factor", 0.4}, {"intermediate_size", 10240}, {"num_key_value_heads", 32},
                      {"context_window_size", 2048},  {"prefill_chunk_size", 2048}, {"head_dim", 80},
                      {"tensor_parallel_shards", 1},  {"max_batch_size", 1}};
  EXPECT_EQ(phi["model_config"], phiMc) << phi["model_config"].dump();
  // The legacy remote-code phi-2 (model_preset "phi-2"): PhiConfig fields, n_inner/n_head_kv derived.
  const json msft = chatConfigOk({{"model_type", "phi-msft"}, {"layer_norm_epsilon", 1e-5}, {"n_embd", 2560},
                                  {"n_head", 32},             {"n_head_kv", nullptr},       {"n_inner", nullptr},
                                  {"n_layer", 32},            {"n_positions", 2048},        {"rotary_dim", 32},
                                  {"vocab_size", 51200}});
  EXPECT_EQ(msft["model_type"], "phi-msft");
  const json msftMc = {{"model_type", "phi-msft"},   {"vocab_size", 51200},        {"n_positions", 2048},
                       {"n_embd", 2560},             {"n_layer", 32},              {"n_head", 32},
                       {"rotary_dim", 32},           {"position_embedding_base", 10000},
                       {"layer_norm_epsilon", 1e-5}, {"context_window_size", 2048}, {"prefill_chunk_size", 2048},
                       {"n_head_kv", 32},            {"n_inner", 10240},           {"head_dim", 80},
                       {"tensor_parallel_shards", 1}};
  EXPECT_EQ(msft["model_config"], msftMc) << msft["model_config"].dump();
}

// Ministral-3-3B-2512 (model_preset ministral3_3b_2512): text_config merged over the top level, rope_theta
// taken out of rope_parameters, no sliding window.
TEST(HfConvertArchs, Ministral3MergesTextConfig) {
  const json rope = {{"beta_fast", 32.0},     {"beta_slow", 1.0},         {"factor", 16.0},
                     {"llama_4_scaling_beta", 0.1}, {"mscale", 1.0},      {"mscale_all_dim", 1.0},
                     {"original_max_position_embeddings", 16384}, {"rope_theta", 1000000.0},
                     {"rope_type", "yarn"},   {"type", "yarn"}};
  const json hf = {{"architectures", {"Mistral3ForConditionalGeneration"}},
                   {"dtype", "bfloat16"},
                   {"model_type", "mistral3"},
                   {"text_config",
                    {{"head_dim", 128},          {"hidden_act", "silu"},          {"hidden_size", 3072},
                     {"intermediate_size", 9216}, {"max_position_embeddings", 262144}, {"model_type", "ministral3"},
                     {"num_attention_heads", 32}, {"num_hidden_layers", 26},     {"num_key_value_heads", 8},
                     {"rms_norm_eps", 1e-5},     {"rope_parameters", rope},       {"sliding_window", nullptr},
                     {"tie_word_embeddings", true}, {"vocab_size", 131072}}},
                   {"vision_config", {{"model_type", "pixtral"}}}};
  const json j = chatConfigOk(hf);
  EXPECT_EQ(j["model_type"], "ministral3");
  EXPECT_EQ(j["context_window_size"], 262144);
  EXPECT_EQ(j["sliding_window_size"], -1);
  EXPECT_EQ(j["prefill_chunk_size"], 8192);
  json ropeOut = rope;
  ropeOut.erase("rope_theta");
  const json mc = {{"hidden_size", 3072},        {"intermediate_size", 9216},    {"num_attention_heads", 32},
                   {"num_hidden_layers", 26},    {"rms_norm_eps", 1e-5},         {"vocab_size", 131072},
                   {"attention_sink_size", 0},   {"context_window_size", 262144}, {"dtype", "bfloat16"},
                   {"head_dim", 128},            {"hidden_act", "silu"},         {"max_batch_size", 1},
                   {"num_key_value_heads", 8},   {"position_embedding_base", 1000000.0},
                   {"prefill_chunk_size", 8192}, {"rope_parameters", ropeOut},   {"sliding_window_size", -1},
                   {"tensor_parallel_shards", 1}, {"tie_word_embeddings", true}, {"weight_block_size", nullptr},
                   {"modules_to_not_convert", json::array()}};
  EXPECT_EQ(j["model_config"], mc) << j["model_config"].dump();
  json fp8 = hf;
  fp8["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "static"}};
  EXPECT_EQ(otherDecoderChatConfig(fp8, Quant::kQ4F16_1).error().detail["field"], "quantization_config");
}

TEST(HfConvertArchs, ModelTypesItMaps) {
  EXPECT_EQ(otherDecoderModelType({{"model_type", "llama"}}), "");
  EXPECT_EQ(otherDecoderModelType({{"model_type", "mistral3"}}), "");  // a Mistral 3 without a ministral3 text model
  EXPECT_EQ(otherDecoderModelType({{"model_type", "phi-msft"}}), "phi-msft");
  EXPECT_TRUE(isOtherDecoderType("gpt_neox"));
  EXPECT_FALSE(isOtherDecoderType("qwen3"));
  auto wrong = otherDecoderChatConfig({{"model_type", "olmo2"}, {"vocab_size", "many"}, {"hidden_size", 64},
                                       {"num_attention_heads", 4}, {"intermediate_size", 96}, {"hidden_act", "silu"},
                                       {"num_hidden_layers", 2}, {"max_position_embeddings", 64}},
                                      Quant::kQ4F16_1);
  // vocab_size is passed through (the model config parser checks its type); a computed field of the wrong
  // type is an error, never a throw.
  EXPECT_TRUE(wrong.ok());
  auto bad = otherDecoderChatConfig({{"model_type", "olmo2"}, {"vocab_size", 10}, {"hidden_size", "wide"},
                                     {"num_attention_heads", 4}, {"intermediate_size", 96}, {"hidden_act", "silu"},
                                     {"num_hidden_layers", 2}, {"max_position_embeddings", 64}},
                                    Quant::kQ4F16_1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().detail["problem"], "wrong_type");
}

ModelConfig configOf(const std::string& type, int heads = 2, int head_dim = 2) {
  ModelConfig c;
  c.model_type = type;
  c.n_heads = heads;
  c.head_dim = head_dim;
  return c;
}

using T = HfSource::Transform;
struct NameCase {
  std::string mlc;
  std::vector<std::string> hf;
  T transform = T::kConcatRows;
};

void expectSources(const std::string& type, const std::vector<NameCase>& cases) {
  const ModelConfig c = configOf(type);
  for (const auto& k : cases) {
    const HfSource s = hfSourceOf(c, k.mlc);
    EXPECT_EQ(s.names, k.hf) << type << " " << k.mlc;
    EXPECT_EQ((int)s.transform, (int)k.transform) << type << " " << k.mlc;
  }
}

// Every tensor name of docs/mlc-architectures.md, layer 3, mapped to its HF tensors.
TEST(HfConvertArchs, SourcesOfEveryMlcName) {
  const std::string L = "model.layers.3.";
  expectSources("gemma", {{"model.embed_tokens.weight", {"model.embed_tokens.weight"}},
                          {"model.layers.3.input_layernorm.weight", {L + "input_layernorm.weight"}, T::kPlusOne},
                          {"model.layers.3.self_attn.qkv_proj.weight",
                           {L + "self_attn.q_proj.weight", L + "self_attn.k_proj.weight", L + "self_attn.v_proj.weight"}},
                          {"model.layers.3.self_attn.o_proj.weight", {L + "self_attn.o_proj.weight"}},
                          {"model.layers.3.post_attention_layernorm.weight", {L + "post_attention_layernorm.weight"},
                           T::kPlusOne},
                          {"model.layers.3.mlp.gate_up_proj.weight", {L + "mlp.gate_proj.weight", L + "mlp.up_proj.weight"}},
                          {"model.layers.3.mlp.down_proj.weight", {L + "mlp.down_proj.weight"}},
                          {"model.norm.weight", {"model.norm.weight"}, T::kPlusOne}});
  expectSources("gemma2", {{"model.layers.3.pre_feedforward_layernorm.weight", {L + "pre_feedforward_layernorm.weight"},
                            T::kPlusOne},
                           {"model.layers.3.post_feedforward_layernorm.weight",
                            {L + "post_feedforward_layernorm.weight"}, T::kPlusOne},
                           {"model.norm.weight", {"model.norm.weight"}, T::kPlusOne}});
  const std::string G = "language_model.model.layers.3.";
  expectSources("gemma3_text",
                {{"language_model.model.embed_tokens.weight", {"model.embed_tokens.weight"}},
                 {G + "input_layernorm.weight", {L + "input_layernorm.weight"}, T::kPlusOne},
                 {G + "self_attn.q_proj.weight", {L + "self_attn.q_proj.weight"}},
                 {G + "self_attn.k_proj.weight", {L + "self_attn.k_proj.weight"}},
                 {G + "self_attn.v_proj.weight", {L + "self_attn.v_proj.weight"}},
                 {G + "self_attn.q_norm.weight", {L + "self_attn.q_norm.weight"}, T::kPlusOne},
                 {G + "self_attn.k_norm.weight", {L + "self_attn.k_norm.weight"}, T::kPlusOne},
                 {G + "self_attn.o_proj.weight", {L + "self_attn.o_proj.weight"}},
                 {G + "post_attention_layernorm.weight", {L + "post_attention_layernorm.weight"}, T::kPlusOne},
                 {G + "pre_feedforward_layernorm.weight", {L + "pre_feedforward_layernorm.weight"}, T::kPlusOne},
                 {G + "mlp.gate_up_proj.weight", {L + "mlp.gate_proj.weight", L + "mlp.up_proj.weight"}},
                 {G + "mlp.down_proj.weight", {L + "mlp.down_proj.weight"}},
                 {G + "post_feedforward_layernorm.weight", {L + "post_feedforward_layernorm.weight"},
                  T::kPlusOne},
                 {"language_model.model.norm.weight", {"model.norm.weight"}, T::kPlusOne}});
  expectSources("phi3", {{"transformer.embd.weight", {"model.embed_tokens.weight"}},
                         {"transformer.h.3.ln.weight", {L + "input_layernorm.weight"}},
                         {"transformer.h.3.mixer.qkv_proj.weight", {L + "self_attn.qkv_proj.weight"}},
                         {"transformer.h.3.mixer.out_proj.weight", {L + "self_attn.o_proj.weight"}},
                         {"transformer.h.3.post_attention_layernorm.weight", {L + "post_attention_layernorm.weight"}},
                         {"transformer.h.3.mlp.gate_up_proj.weight", {L + "mlp.gate_up_proj.weight"}},
                         {"transformer.h.3.mlp.down_proj.weight", {L + "mlp.down_proj.weight"}},
                         {"transformer.norm.weight", {"model.norm.weight"}},
                         {"lm_head.weight", {"lm_head.weight"}}});
  expectSources("olmo2", {{"model.layers.3.self_attn.qkv_proj.weight",
                           {L + "self_attn.q_proj.weight", L + "self_attn.k_proj.weight", L + "self_attn.v_proj.weight"}},
                          {"model.layers.3.self_attn.q_norm.weight", {L + "self_attn.q_norm.weight"}},
                          {"model.layers.3.self_attn.k_norm.weight", {L + "self_attn.k_norm.weight"}},
                          {"model.layers.3.post_feedforward_layernorm.weight", {L + "post_feedforward_layernorm.weight"}},
                          {"lm_head.weight", {"lm_head.weight"}}});
  expectSources("stablelm", {{"model.layers.3.input_layernorm.bias", {L + "input_layernorm.bias"}},
                             {"model.layers.3.self_attn.qkv_proj.bias",
                              {L + "self_attn.q_proj.bias", L + "self_attn.k_proj.bias", L + "self_attn.v_proj.bias"}},
                             {"model.norm.bias", {"model.norm.bias"}}});
  const std::string N = "gpt_neox.layers.3.";
  expectSources("gpt_neox", {{"gpt_neox.embed_in.weight", {"gpt_neox.embed_in.weight"}},
                             {N + "attention.query_key_value.weight", {N + "attention.query_key_value.weight"},
                              T::kNeoxQkvOrder},
                             {N + "attention.query_key_value.bias", {N + "attention.query_key_value.bias"},
                              T::kNeoxQkvOrder},
                             {N + "attention.dense.bias", {N + "attention.dense.bias"}},
                             {N + "mlp.dense_h_to_4h.bias", {N + "mlp.dense_h_to_4h.bias"}},
                             {"gpt_neox.final_layer_norm.weight", {"gpt_neox.final_layer_norm.weight"}},
                             {"embed_out.weight", {"embed_out.weight"}}});
  expectSources("phi-msft", {{"transformer.embd.weight", {"transformer.embd.wte.weight"}},
                             {"transformer.h.3.mixer.Wqkv.weight", {"transformer.h.3.mixer.Wqkv.weight"}},
                             {"lm_head.linear.bias", {"lm_head.linear.bias"}}});
  expectSources("phi", {{"transformer.embd.weight", {"model.embed_tokens.weight"}},
                        {"transformer.h.3.ln.weight", {L + "input_layernorm.weight"}},
                        {"transformer.h.3.ln.bias", {L + "input_layernorm.bias"}},
                        {"transformer.h.3.mixer.Wqkv.weight",
                         {L + "self_attn.q_proj.weight", L + "self_attn.k_proj.weight", L + "self_attn.v_proj.weight"}},
                        {"transformer.h.3.mixer.Wqkv.bias",
                         {L + "self_attn.q_proj.bias", L + "self_attn.k_proj.bias", L + "self_attn.v_proj.bias"}},
                        {"transformer.h.3.mixer.out_proj.weight", {L + "self_attn.dense.weight"}},
                        {"transformer.h.3.mixer.out_proj.bias", {L + "self_attn.dense.bias"}},
                        {"transformer.h.3.mlp.fc1.weight", {L + "mlp.fc1.weight"}},
                        {"transformer.h.3.mlp.fc2.bias", {L + "mlp.fc2.bias"}},
                        {"lm_head.ln.weight", {"model.final_layernorm.weight"}},
                        {"lm_head.ln.bias", {"model.final_layernorm.bias"}},
                        {"lm_head.linear.weight", {"lm_head.weight"}},
                        {"lm_head.linear.bias", {"lm_head.bias"}}});
  expectSources("ministral3", {{"model.embed_tokens.weight", {"model.embed_tokens.weight"}},
                               {"model.layers.3.mlp.gate_up_proj.weight",
                                {L + "mlp.gate_proj.weight", L + "mlp.up_proj.weight"}},
                               {"lm_head.weight", {"lm_head.weight"}}});
}

TEST(HfConvertArchs, VisionLanguageNamesBecomeTextModelNames) {
  EXPECT_EQ(textModelTensorName("language_model.model.layers.0.self_attn.q_proj.weight"),
            "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(textModelTensorName("model.language_model.norm.weight"), "model.norm.weight");
  EXPECT_EQ(textModelTensorName("language_model.lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(textModelTensorName("vision_tower.transformer.layers.0.attention.q_proj.weight"), "");
  EXPECT_EQ(textModelTensorName("multi_modal_projector.linear_1.weight"), "");
  EXPECT_EQ(textModelTensorName("gpt_neox.embed_in.weight"), "gpt_neox.embed_in.weight");
}

TEST(HfConvertArchs, TransformsOnValues) {
  // Row concatenation and +1.
  const std::vector<float> a{1, 2}, b{3}, c{-1.5f, 0};
  auto cat = applyHfSource({{"a", "b", "c"}}, {&a, &b, &c}, 0, 0);
  ASSERT_TRUE(cat.ok());
  EXPECT_EQ(*cat, (std::vector<float>{1, 2, 3, -1.5f, 0}));
  auto plus = applyHfSource({{"n"}, T::kPlusOne}, {&c}, 0, 0);
  EXPECT_EQ(*plus, (std::vector<float>{-0.5f, 1}));
  // GPT-NeoX: 2 heads of head_dim 2, 3 columns. HF row r = head*6 + part*2 + e holds the value 100*r + col.
  std::vector<float> w(12 * 3);
  for (int r = 0; r < 12; ++r)
    for (int col = 0; col < 3; ++col) w[r * 3 + col] = 100.0f * r + col;
  auto neox = applyHfSource({{"qkv"}, T::kNeoxQkvOrder}, {&w}, 2, 2);
  ASSERT_TRUE(neox.ok());
  // MLC rows: q of head 0 (HF rows 0,1), q of head 1 (6,7), k0 (2,3), k1 (8,9), v0 (4,5), v1 (10,11).
  const int order[12] = {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11};
  for (int r = 0; r < 12; ++r)
    for (int col = 0; col < 3; ++col) EXPECT_EQ((*neox)[r * 3 + col], 100.0f * order[r] + col) << r << "," << col;
  // The bias (one column) the same way.
  std::vector<float> bias(12);
  for (int r = 0; r < 12; ++r) bias[r] = (float)r;
  auto nb = applyHfSource({{"qkv.bias"}, T::kNeoxQkvOrder}, {&bias}, 2, 2);
  for (int r = 0; r < 12; ++r) EXPECT_EQ((*nb)[r], (float)order[r]);
  // A size that is not 3 x heads x head_dim rows is an error.
  std::vector<float> odd(10);
  auto bad = applyHfSource({{"qkv"}, T::kNeoxQkvOrder}, {&odd}, 2, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().detail["problem"], "bad_shape");
}

}  // namespace
}  // namespace ewgpu
