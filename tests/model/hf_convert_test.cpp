// HF -> MLC conversion: a random HF checkpoint written as safetensors, converted, and read back through
// ModelFolder; fused rows, +1 norms, renamed conv weight and both name prefixes are checked value by value.
#include "model/hf_convert.h"

#include <gtest/gtest.h>

#include <random>

#include "base/half.h"
#include "model/model_folder.h"
#include "model/quantize.h"
#include "model/safetensors.h"
#include "model_test_util.h"

namespace ewgpu {
namespace {

using Tensors = std::map<std::string, std::vector<float>>;
using Shapes = std::map<std::string, std::vector<int64_t>>;

struct HfModel {
  Tensors t;
  Shapes s;
  std::mt19937 rng{3};
  void add(const std::string& name, std::vector<int64_t> shape, float mean = 0.0f, float sd = 0.05f) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::normal_distribution<float> dist(mean, sd);
    std::vector<float>& v = t[name];
    v.resize(n);
    for (float& x : v) x = dist(rng);
    s[name] = shape;
  }
};

// Qwen3.5 text model: 2 layers, layer 1 full attention (layer_types), GVA 2 key / 4 value heads.
nlohmann::json qwen35HfConfig() {
  return {{"model_type", "qwen3_5_text"},
          {"vocab_size", 128},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 32},
          {"linear_num_key_heads", 2},
          {"linear_num_value_heads", 4},
          {"linear_key_head_dim", 16},
          {"linear_value_head_dim", 16},
          {"linear_conv_kernel_dim", 4},
          {"rms_norm_eps", 1e-6},
          {"tie_word_embeddings", true},
          {"max_position_embeddings", 1024},
          {"layer_types", {"linear_attention", "full_attention"}},
          {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000.0}, {"partial_rotary_factor", 0.25}}}};
}

HfModel qwen35HfWeights(const std::string& prefix) {
  HfModel m;
  const int H = 64, I = 96, V = 128;
  m.add(prefix + "embed_tokens.weight", {V, H});
  m.add(prefix + "norm.weight", {H}, 0.0f, 0.3f);
  for (int i = 0; i < 2; ++i) {
    std::string p = prefix + "layers." + std::to_string(i) + ".";
    m.add(p + "input_layernorm.weight", {H}, 0.0f, 0.3f);
    m.add(p + "post_attention_layernorm.weight", {H}, 0.0f, 0.3f);
    m.add(p + "mlp.gate_proj.weight", {I, H});
    m.add(p + "mlp.up_proj.weight", {I, H});
    m.add(p + "mlp.down_proj.weight", {H, I});
  }
  std::string la = prefix + "layers.0.linear_attn.";
  m.add(la + "in_proj_qkv.weight", {2 * 32 + 64, H});
  m.add(la + "in_proj_z.weight", {64, H});
  m.add(la + "in_proj_a.weight", {4, H});
  m.add(la + "in_proj_b.weight", {4, H});
  m.add(la + "conv1d.weight", {128, 1, 4}, 0.0f, 0.3f);
  m.add(la + "A_log", {4}, 1.0f, 0.5f);
  m.add(la + "dt_bias", {4}, 1.0f, 0.3f);
  m.add(la + "norm.weight", {16}, 1.0f, 0.3f);
  m.add(la + "out_proj.weight", {H, 64});
  std::string sa = prefix + "layers.1.self_attn.";
  m.add(sa + "q_proj.weight", {4 * 2 * 32, H});
  m.add(sa + "k_proj.weight", {2 * 32, H});
  m.add(sa + "v_proj.weight", {2 * 32, H});
  m.add(sa + "o_proj.weight", {H, 4 * 32});
  m.add(sa + "q_norm.weight", {32}, 0.0f, 0.3f);
  m.add(sa + "k_norm.weight", {32}, 0.0f, 0.3f);
  m.add("mtp.layers.0.fc.weight", {4, 4});  // ignored
  return m;
}

std::vector<float> bf16(const std::vector<float>& v, float add = 0.0f) {
  std::vector<float> o;
  for (float x : v) o.push_back(bf16ToFloat(floatToBf16(x + add)));
  return o;
}

std::vector<float> cat(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> o;
  for (auto* p : parts) o.insert(o.end(), p->begin(), p->end());
  return o;
}

class HfConvert : public ::testing::TestWithParam<std::string> {};

TEST_P(HfConvert, Qwen35ToQ0F32KeepsEveryValue) {
  const std::string prefix = GetParam();
  test::TempDir dir;
  std::filesystem::create_directories(dir / "hf");
  test::writeJson(dir / "hf/config.json", qwen35HfConfig());
  HfModel m = qwen35HfWeights(prefix);
  ASSERT_TRUE(writeSafetensorsF32(dir / "hf/model.safetensors", m.t, m.s).ok());
  std::string tok = test::writeSmallTokenizer(dir.path(), 100);
  auto st = convertHfFolder(dir / "hf", dir / "mlc", Quant::kQ0F32, tok);
  ASSERT_TRUE(st.ok()) << st.error().toString();
  auto f = ModelFolder::open(dir / "mlc");
  ASSERT_TRUE(f.ok()) << f.error().toString();
  const ModelConfig& c = f->config();
  EXPECT_EQ(c.arch, Arch::kQwen3_5);
  EXPECT_EQ(c.full_attention_interval, 2);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.lin_v_heads, 4);
  auto hf = [&](const std::string& n) { return m.t.at(prefix + n); };

  auto cattn = loadMatrixF32(*f, "model.layers.1.self_attn.c_attn", 4 * 64 + 2 * 64, 64);
  ASSERT_TRUE(cattn.ok()) << cattn.error().toString();
  auto q = hf("layers.1.self_attn.q_proj.weight"), k = hf("layers.1.self_attn.k_proj.weight"),
       v = hf("layers.1.self_attn.v_proj.weight");
  EXPECT_EQ(*cattn, bf16(cat({&q, &k, &v})));  // q (per-head query|gate rows as in HF), then k, then v
  auto gateUp = loadMatrixF32(*f, "model.layers.0.mlp.gate_up_proj", 192, 64);
  ASSERT_TRUE(gateUp.ok());
  auto g = hf("layers.0.mlp.gate_proj.weight"), u = hf("layers.0.mlp.up_proj.weight");
  EXPECT_EQ(*gateUp, bf16(cat({&g, &u})));
  // (1+w) norms hold w+1; the gated norm stays w.
  EXPECT_EQ(*loadVectorF32(*f, "model.layers.0.input_layernorm.weight"),
            bf16(hf("layers.0.input_layernorm.weight"), 1));
  EXPECT_EQ(*loadVectorF32(*f, "model.norm.weight"), bf16(hf("norm.weight"), 1));
  EXPECT_EQ(*loadVectorF32(*f, "model.layers.1.self_attn.q_norm.weight"),
            bf16(hf("layers.1.self_attn.q_norm.weight"), 1));
  EXPECT_EQ(*loadVectorF32(*f, "model.layers.0.linear_attn.norm.weight"), bf16(hf("layers.0.linear_attn.norm.weight")));
  EXPECT_EQ(*loadVectorF32(*f, "model.layers.0.linear_attn.conv1d_weight"),
            bf16(hf("layers.0.linear_attn.conv1d.weight")));
  EXPECT_EQ(*loadVectorF32(*f, "model.layers.0.linear_attn.A_log"), bf16(hf("layers.0.linear_attn.A_log")));
  EXPECT_EQ(f->find("model.layers.0.linear_attn.A_log")->dtype, DType::kF32);
  EXPECT_EQ(f->find("lm_head.weight"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Prefixes, HfConvert, ::testing::Values("model.", "model.language_model."),
                         [](const auto& info) { return info.param == "model." ? "model" : "language_model"; });

TEST(HfConvertLlama, Q4F16FusesQkvAndQuantizes) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "hf");
  test::writeJson(dir / "hf/config.json", {{"model_type", "llama"},
                                           {"vocab_size", 100},
                                           {"hidden_size", 64},
                                           {"intermediate_size", 128},
                                           {"num_hidden_layers", 1},
                                           {"num_attention_heads", 4},
                                           {"num_key_value_heads", 2},
                                           {"rms_norm_eps", 1e-5},
                                           {"rope_theta", 500000.0},
                                           {"tie_word_embeddings", false},
                                           {"rope_scaling",
                                            {{"rope_type", "llama3"},
                                             {"factor", 32.0},
                                             {"low_freq_factor", 1.0},
                                             {"high_freq_factor", 4.0},
                                             {"original_max_position_embeddings", 8192}}}});
  HfModel m;
  m.add("model.embed_tokens.weight", {100, 64});
  m.add("lm_head.weight", {100, 64});
  m.add("model.norm.weight", {64}, 1.0f);
  m.add("model.layers.0.input_layernorm.weight", {64}, 1.0f);
  m.add("model.layers.0.post_attention_layernorm.weight", {64}, 1.0f);
  for (const char* n : {"q_proj", "o_proj"}) m.add(std::string("model.layers.0.self_attn.") + n + ".weight", {64, 64});
  for (const char* n : {"k_proj", "v_proj"}) m.add(std::string("model.layers.0.self_attn.") + n + ".weight", {32, 64});
  for (const char* n : {"gate_proj", "up_proj"}) m.add(std::string("model.layers.0.mlp.") + n + ".weight", {128, 64});
  m.add("model.layers.0.mlp.down_proj.weight", {64, 128});
  ASSERT_TRUE(writeSafetensorsF32(dir / "hf/model.safetensors", m.t, m.s).ok());
  std::string tok = test::writeSmallTokenizer(dir.path(), 90);
  auto st = convertHfFolder(dir / "hf", dir / "mlc", Quant::kQ4F16_1, tok);
  ASSERT_TRUE(st.ok()) << st.error().toString();
  auto f = ModelFolder::open(dir / "mlc");
  ASSERT_TRUE(f.ok()) << f.error().toString();
  ASSERT_TRUE(f->config().rope_scaling.has_value());
  EXPECT_EQ(f->config().rope_scaling->factor, 32.0f);
  auto got = loadMatrixF32(*f, "model.layers.0.self_attn.qkv_proj", 128, 64);
  ASSERT_TRUE(got.ok());
  auto& q = m.t["model.layers.0.self_attn.q_proj.weight"];
  auto& k = m.t["model.layers.0.self_attn.k_proj.weight"];
  auto& v = m.t["model.layers.0.self_attn.v_proj.weight"];
  std::vector<float> fused = cat({&q, &k, &v}), want(fused.size());
  QuantSpec s = quantSpec(Quant::kQ4F16_1);
  QuantizedMatrix qm = quantizeMatrix(s, fused.data(), 128, 64);
  dequantizeMatrix(s, qm.q_weight.data(), qm.q_scale.data(), 128, 64, want.data());
  EXPECT_EQ(*got, want);
  EXPECT_NE(f->find("lm_head.q_weight"), nullptr);
}

TEST(HfConvertErrors, MissingTensorAndBadConfig) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "hf");
  test::writeJson(dir / "hf/config.json", qwen35HfConfig());
  HfModel m = qwen35HfWeights("model.");
  m.t.erase("model.layers.1.self_attn.k_proj.weight");
  ASSERT_TRUE(writeSafetensorsF32(dir / "hf/model.safetensors", m.t, m.s).ok());
  std::string tok = test::writeSmallTokenizer(dir.path(), 100);
  auto st = convertHfFolder(dir / "hf", dir / "mlc", Quant::kQ0F32, tok);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().detail["problem"], "missing_tensor");
  EXPECT_EQ(st.error().detail["tensor"], "model.layers.1.self_attn.k_proj.weight");

  auto cfg = qwen35HfConfig();
  cfg["rope_parameters"]["rope_type"] = "yarn";  // a scaling the engine does not implement is refused, not dropped
  EXPECT_FALSE(modelConfigFromHf(cfg, Quant::kQ0F32).ok());
  cfg = qwen35HfConfig();
  cfg.erase("hidden_size");
  auto c = modelConfigFromHf(cfg, Quant::kQ0F32);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().detail["file"], "config.json");
  EXPECT_EQ(c.error().detail["field"], "hidden_size");
  cfg = qwen35HfConfig();
  cfg["layer_types"] = {"full_attention", "linear_attention"};
  EXPECT_FALSE(modelConfigFromHf(cfg, Quant::kQ0F32).ok());

  test::writeText(dir / "bad.safetensors", std::string("\x40\0\0\0\0\0\0\0{\"x\":", 13));
  auto r = readSafetensorsF32(dir / "bad.safetensors");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidModelFolder);
}

// transformers 5 puts Llama 3's rope scaling inside rope_parameters (with rope_theta); the converter carries it into
// the MLC config's rope_scaling, and a transformers-4 top-level rope_scaling still wins.
TEST(HfConvertLlama, RopeScalingInsideRopeParameters) {
  nlohmann::json cfg = {{"model_type", "llama"},    {"vocab_size", 100},      {"hidden_size", 64},
                        {"intermediate_size", 128}, {"num_hidden_layers", 1}, {"num_attention_heads", 4},
                        {"num_key_value_heads", 2}, {"rms_norm_eps", 1e-5},   {"tie_word_embeddings", false},
                        {"rope_parameters",
                         {{"rope_type", "llama3"},
                          {"rope_theta", 500000.0},
                          {"factor", 32.0},
                          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 8192}}}};
  auto c = modelConfigFromHf(cfg, Quant::kQ4F16_1);
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->rope_theta, 500000.0);
  ASSERT_TRUE(c->rope_scaling.has_value());
  EXPECT_EQ(c->rope_scaling->rope_type, "llama3");
  EXPECT_EQ(c->rope_scaling->factor, 32.0f);
  EXPECT_EQ(c->rope_scaling->high_freq_factor, 4.0f);
  EXPECT_EQ(c->rope_scaling->original_max_position_embeddings, 8192);
  cfg["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  c = modelConfigFromHf(cfg, Quant::kQ4F16_1);
  ASSERT_TRUE(c.ok()) << c.error().toString();
  EXPECT_EQ(c->rope_scaling->factor, 8.0f);
}

}  // namespace
}  // namespace ewgpu
