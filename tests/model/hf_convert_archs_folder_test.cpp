// ewgpu convert end to end for the catalogue's other decoders: a tiny random HF checkpoint per architecture,
// written as safetensors, converted to q0f32 and read back through ModelFolder (the parameter layout of
// expectedParams). Each MLC tensor is compared with the HF values it must come from, computed here by hand
// from docs/mlc-architectures.md (row concatenations, Gemma's +1, GPT-NeoX's per-head qkv reorder).
#include <gtest/gtest.h>

#include <random>

#include "base/half.h"
#include "model/expected_params.h"
#include "model/hf_convert.h"
#include "model/model_folder.h"
#include "model/safetensors.h"
#include "model_test_util.h"

namespace ewgpu {
namespace {

using json = nlohmann::json;
using Vec = std::vector<float>;

constexpr int kH = 16, kHq = 2, kHkv = 1, kD = 8, kI = 24, kV = 40, kL = 2;

struct Checkpoint {
  std::map<std::string, Vec> t;
  std::map<std::string, std::vector<int64_t>> s;
  std::mt19937 rng{11};
  void add(const std::string& name, std::vector<int64_t> shape, float mean = 0.0f, float sd = 0.1f) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::normal_distribution<float> dist(mean, sd);
    Vec& v = t[name];
    v.resize(n);
    for (float& x : v) x = dist(rng);
    s[name] = shape;
  }
  const Vec& operator[](const std::string& n) const { return t.at(n); }
};

Vec bf16(const Vec& v, float add = 0.0f) {
  Vec o;
  for (float x : v) o.push_back(bf16ToFloat(floatToBf16(x + add)));
  return o;
}

Vec cat(std::initializer_list<const Vec*> parts) {
  Vec o;
  for (auto* p : parts) o.insert(o.end(), p->begin(), p->end());
  return o;
}

// Converts `hf` (config.json + model.safetensors) to q0f32 and opens the result.
struct Converted {
  test::TempDir dir;
  std::optional<ModelFolder> folder;
  json chat;  // the written mlc-chat-config.json
};

std::unique_ptr<Converted> convert(const json& config, const Checkpoint& ck) {
  auto out = std::make_unique<Converted>();
  std::filesystem::create_directories(out->dir / "hf");
  test::writeJson(out->dir / "hf/config.json", config);
  EXPECT_TRUE(writeSafetensorsF32(out->dir / "hf/model.safetensors", ck.t, ck.s).ok());
  const std::string tok = test::writeSmallTokenizer(out->dir.path(), 30);
  auto st = convertHfFolder(out->dir / "hf", out->dir / "mlc", Quant::kQ0F32, tok);
  EXPECT_TRUE(st.ok()) << st.error().toString();
  if (!st.ok()) return out;
  auto f = ModelFolder::open(out->dir / "mlc");
  EXPECT_TRUE(f.ok()) << f.error().toString();
  if (f.ok()) out->folder.emplace(std::move(*f));
  out->chat = test::readJson(out->dir / "mlc/mlc-chat-config.json");
  return out;
}

Vec matrix(const ModelFolder& f, const std::string& module, int rows, int cols) {
  auto m = loadMatrixF32(f, module, rows, cols);
  EXPECT_TRUE(m.ok()) << module << ": " << (m.ok() ? "" : m.error().toString());
  return m.ok() ? *m : Vec{};
}

Vec vec(const ModelFolder& f, const std::string& name) {
  auto v = loadVectorF32(f, name);
  EXPECT_TRUE(v.ok()) << name << ": " << (v.ok() ? "" : v.error().toString());
  return v.ok() ? *v : Vec{};
}

// HF llama-style layer tensors (q/k/v/o, gate/up/down) with the given norm names, under `prefix`.
void addLlamaLayers(Checkpoint& ck, const std::string& prefix, std::initializer_list<const char*> norms,
                    bool qkvBias = false, int qk_norm = 0) {
  for (int i = 0; i < kL; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    for (const char* n : norms) ck.add(p + n + ".weight", {kH}, 0.0f, 0.3f);
    ck.add(p + "self_attn.q_proj.weight", {kHq * kD, kH});
    ck.add(p + "self_attn.k_proj.weight", {kHkv * kD, kH});
    ck.add(p + "self_attn.v_proj.weight", {kHkv * kD, kH});
    if (qkvBias)
      for (auto [n, rows] : {std::pair{"q", kHq * kD}, {"k", kHkv * kD}, {"v", kHkv * kD}})
        ck.add(p + "self_attn." + n + "_proj.bias", {rows});
    if (qk_norm) {
      ck.add(p + "self_attn.q_norm.weight", {qk_norm == 1 ? kD : kHq * kD}, 0.0f, 0.3f);
      ck.add(p + "self_attn.k_norm.weight", {qk_norm == 1 ? kD : kHkv * kD}, 0.0f, 0.3f);
    }
    ck.add(p + "self_attn.o_proj.weight", {kH, kHq * kD});
    ck.add(p + "mlp.gate_proj.weight", {kI, kH});
    ck.add(p + "mlp.up_proj.weight", {kI, kH});
    ck.add(p + "mlp.down_proj.weight", {kH, kI});
    ck.add(p + "self_attn.rotary_emb.inv_freq", {kD / 2});  // dropped
  }
  ck.add(prefix + "embed_tokens.weight", {kV, kH});
  ck.add(prefix + "norm.weight", {kH}, 0.0f, 0.3f);
}

json dims() {
  return {{"hidden_size", kH},       {"intermediate_size", kI}, {"num_attention_heads", kHq},
          {"num_key_value_heads", kHkv}, {"head_dim", kD},       {"num_hidden_layers", kL},
          {"vocab_size", kV},        {"max_position_embeddings", 256}};
}

void expectFusedQkv(const ModelFolder& f, const Checkpoint& ck, const std::string& mlc, const std::string& hfLayer) {
  EXPECT_EQ(matrix(f, mlc, (kHq + 2 * kHkv) * kD, kH),
            bf16(cat({&ck[hfLayer + "self_attn.q_proj.weight"], &ck[hfLayer + "self_attn.k_proj.weight"],
                      &ck[hfLayer + "self_attn.v_proj.weight"]})))
      << mlc;
}

void expectGateUp(const ModelFolder& f, const Checkpoint& ck, const std::string& mlc, const std::string& hfLayer) {
  EXPECT_EQ(matrix(f, mlc, 2 * kI, kH),
            bf16(cat({&ck[hfLayer + "mlp.gate_proj.weight"], &ck[hfLayer + "mlp.up_proj.weight"]})))
      << mlc;
}

TEST(HfConvertArchsFolder, GemmaAndGemma2AddOneToTheirNorms) {
  for (const char* type : {"gemma", "gemma2"}) {
    SCOPED_TRACE(type);
    const bool g2 = std::string(type) == "gemma2";
    json cfg = dims();
    cfg.update({{"model_type", type}, {"attention_bias", false}, {"hidden_activation", "gelu_pytorch_tanh"},
                {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}});
    if (g2) cfg.update({{"sliding_window", 128}, {"query_pre_attn_scalar", 8}, {"final_logit_softcapping", 30.0},
                        {"attn_logit_softcapping", 50.0}});
    Checkpoint ck;
    if (g2)
      addLlamaLayers(ck, "model.", {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                    "post_feedforward_layernorm"});
    else
      addLlamaLayers(ck, "model.", {"input_layernorm", "post_attention_layernorm"});
    auto c = convert(cfg, ck);
    ASSERT_TRUE(c->folder);
    const ModelFolder& f = *c->folder;
    EXPECT_EQ(f.config().model_type, type);
    EXPECT_EQ(matrix(f, "model.embed_tokens", kV, kH), bf16(ck["model.embed_tokens.weight"]));
    expectFusedQkv(f, ck, "model.layers.1.self_attn.qkv_proj", "model.layers.1.");
    expectGateUp(f, ck, "model.layers.0.mlp.gate_up_proj", "model.layers.0.");
    EXPECT_EQ(matrix(f, "model.layers.1.self_attn.o_proj", kH, kHq * kD), bf16(ck["model.layers.1.self_attn.o_proj.weight"]));
    EXPECT_EQ(vec(f, "model.layers.1.input_layernorm.weight"), bf16(ck["model.layers.1.input_layernorm.weight"], 1));
    EXPECT_EQ(vec(f, "model.layers.0.post_attention_layernorm.weight"),
              bf16(ck["model.layers.0.post_attention_layernorm.weight"], 1));
    EXPECT_EQ(vec(f, "model.norm.weight"), bf16(ck["model.norm.weight"], 1));
    if (g2) {
      EXPECT_EQ(vec(f, "model.layers.1.pre_feedforward_layernorm.weight"),
                bf16(ck["model.layers.1.pre_feedforward_layernorm.weight"], 1));
      EXPECT_EQ(vec(f, "model.layers.1.post_feedforward_layernorm.weight"),
                bf16(ck["model.layers.1.post_feedforward_layernorm.weight"], 1));
      EXPECT_EQ(c->chat["context_window_size"], 128);  // MLC: the sliding window
      EXPECT_EQ(c->chat["model_config"]["final_logit_softcapping"], 30.0);
    }
    EXPECT_EQ(f.find("lm_head.weight"), nullptr);  // tied
    EXPECT_EQ(c->chat["conv_template"]["name"], "gemma_instruction");
    EXPECT_EQ(c->chat["model_config"]["hidden_activation"], "gelu_pytorch_tanh");
  }
}

TEST(HfConvertArchsFolder, Gemma3KeepsQkvSeparateUnderLanguageModel) {
  json cfg = dims();
  cfg.update({{"model_type", "gemma3_text"}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000}, {"rope_scaling", nullptr},
              {"sliding_window", 64}, {"query_pre_attn_scalar", 8}, {"hidden_activation", "gelu_pytorch_tanh"}});
  Checkpoint ck;
  addLlamaLayers(ck, "model.", {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                "post_feedforward_layernorm"},
                 false, 1);
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  const std::string L = "language_model.model.layers.1.";
  EXPECT_EQ(matrix(f, "language_model.model.embed_tokens", kV, kH), bf16(ck["model.embed_tokens.weight"]));
  EXPECT_EQ(matrix(f, L + "self_attn.q_proj", kHq * kD, kH), bf16(ck["model.layers.1.self_attn.q_proj.weight"]));
  EXPECT_EQ(matrix(f, L + "self_attn.k_proj", kHkv * kD, kH), bf16(ck["model.layers.1.self_attn.k_proj.weight"]));
  EXPECT_EQ(matrix(f, L + "self_attn.v_proj", kHkv * kD, kH), bf16(ck["model.layers.1.self_attn.v_proj.weight"]));
  EXPECT_EQ(vec(f, L + "self_attn.q_norm.weight"), bf16(ck["model.layers.1.self_attn.q_norm.weight"], 1));
  EXPECT_EQ(vec(f, L + "self_attn.k_norm.weight"), bf16(ck["model.layers.1.self_attn.k_norm.weight"], 1));
  EXPECT_EQ(vec(f, L + "post_feedforward_layernorm.weight"),
            bf16(ck["model.layers.1.post_feedforward_layernorm.weight"], 1));
  expectGateUp(f, ck, L + "mlp.gate_up_proj", "model.layers.1.");
  EXPECT_EQ(vec(f, "language_model.model.norm.weight"), bf16(ck["model.norm.weight"], 1));
  EXPECT_EQ(c->chat["model_config"]["text_config"]["sliding_window_size"], 64);
  EXPECT_EQ(c->chat["conv_template"]["name"], "gemma3_instruction");
}

TEST(HfConvertArchsFolder, Phi3RenamesItsFusedCheckpoint) {
  json cfg = dims();
  cfg.update({{"model_type", "phi3"}, {"rms_norm_eps", 1e-5}, {"tie_word_embeddings", false}});
  cfg.erase("head_dim");
  cfg["num_key_value_heads"] = kHkv;
  Checkpoint ck;
  const int hd = kH / kHq;
  for (int i = 0; i < kL; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    ck.add(p + "input_layernorm.weight", {kH}, 1.0f);
    ck.add(p + "post_attention_layernorm.weight", {kH}, 1.0f);
    ck.add(p + "self_attn.qkv_proj.weight", {(kHq + 2 * kHkv) * hd, kH});
    ck.add(p + "self_attn.o_proj.weight", {kH, kHq * hd});
    ck.add(p + "mlp.gate_up_proj.weight", {2 * kI, kH});
    ck.add(p + "mlp.down_proj.weight", {kH, kI});
  }
  ck.add("model.embed_tokens.weight", {kV, kH});
  ck.add("model.norm.weight", {kH}, 1.0f);
  ck.add("lm_head.weight", {kV, kH});
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  EXPECT_EQ(matrix(f, "transformer.embd", kV, kH), bf16(ck["model.embed_tokens.weight"]));
  EXPECT_EQ(matrix(f, "transformer.h.1.mixer.qkv_proj", (kHq + 2 * kHkv) * hd, kH),
            bf16(ck["model.layers.1.self_attn.qkv_proj.weight"]));
  EXPECT_EQ(matrix(f, "transformer.h.1.mixer.out_proj", kH, kHq * hd), bf16(ck["model.layers.1.self_attn.o_proj.weight"]));
  EXPECT_EQ(matrix(f, "transformer.h.0.mlp.gate_up_proj", 2 * kI, kH), bf16(ck["model.layers.0.mlp.gate_up_proj.weight"]));
  EXPECT_EQ(vec(f, "transformer.h.0.ln.weight"), bf16(ck["model.layers.0.input_layernorm.weight"]));
  EXPECT_EQ(vec(f, "transformer.h.0.post_attention_layernorm.weight"),
            bf16(ck["model.layers.0.post_attention_layernorm.weight"]));
  EXPECT_EQ(vec(f, "transformer.norm.weight"), bf16(ck["model.norm.weight"]));
  EXPECT_EQ(matrix(f, "lm_head", kV, kH), bf16(ck["lm_head.weight"]));
  EXPECT_EQ(c->chat["conv_template"]["name"], "phi-3");
}

TEST(HfConvertArchsFolder, Olmo2HasFullWidthQkNormsAndNoInputNorm) {
  json cfg = dims();
  cfg.update({{"model_type", "olmo2"}, {"hidden_act", "silu"}, {"rms_norm_eps", 1e-6}, {"rope_theta", 500000.0},
              {"tie_word_embeddings", false}});
  Checkpoint ck;
  addLlamaLayers(ck, "model.", {"post_attention_layernorm", "post_feedforward_layernorm"}, false, 2);
  ck.add("lm_head.weight", {kV, kH});
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  expectFusedQkv(f, ck, "model.layers.0.self_attn.qkv_proj", "model.layers.0.");
  EXPECT_EQ(vec(f, "model.layers.1.self_attn.q_norm.weight"), bf16(ck["model.layers.1.self_attn.q_norm.weight"]));
  EXPECT_EQ(vec(f, "model.layers.1.self_attn.k_norm.weight"), bf16(ck["model.layers.1.self_attn.k_norm.weight"]));
  EXPECT_EQ(vec(f, "model.layers.1.post_feedforward_layernorm.weight"),
            bf16(ck["model.layers.1.post_feedforward_layernorm.weight"]));
  EXPECT_EQ(f.find("model.layers.0.input_layernorm.weight"), nullptr);
  EXPECT_EQ(matrix(f, "lm_head", kV, kH), bf16(ck["lm_head.weight"]));
  EXPECT_EQ(c->chat["conv_template"]["name"], "olmo2");
}

TEST(HfConvertArchsFolder, StablelmFusesTheQkvBiasAndKeepsNormBiases) {
  json cfg = dims();
  cfg.erase("head_dim");
  cfg.update({{"model_type", "stablelm"}, {"layer_norm_eps", 1e-5}, {"partial_rotary_factor", 0.25},
              {"rope_theta", 10000}, {"use_qkv_bias", true}, {"num_key_value_heads", kHkv}});
  Checkpoint ck;
  const int hd = kH / kHq;
  for (int i = 0; i < kL; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
      ck.add(p + n + ".weight", {kH}, 1.0f);
      ck.add(p + n + ".bias", {kH});
    }
    ck.add(p + "self_attn.q_proj.weight", {kHq * hd, kH});
    ck.add(p + "self_attn.k_proj.weight", {kHkv * hd, kH});
    ck.add(p + "self_attn.v_proj.weight", {kHkv * hd, kH});
    ck.add(p + "self_attn.q_proj.bias", {kHq * hd});
    ck.add(p + "self_attn.k_proj.bias", {kHkv * hd});
    ck.add(p + "self_attn.v_proj.bias", {kHkv * hd});
    ck.add(p + "self_attn.o_proj.weight", {kH, kHq * hd});
    ck.add(p + "mlp.gate_proj.weight", {kI, kH});
    ck.add(p + "mlp.up_proj.weight", {kI, kH});
    ck.add(p + "mlp.down_proj.weight", {kH, kI});
  }
  ck.add("model.embed_tokens.weight", {kV, kH});
  ck.add("model.norm.weight", {kH}, 1.0f);
  ck.add("model.norm.bias", {kH});
  ck.add("lm_head.weight", {kV, kH});
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  const std::string p = "model.layers.1.self_attn.";
  EXPECT_EQ(vec(f, p + "qkv_proj.bias"),
            bf16(cat({&ck[p + "q_proj.bias"], &ck[p + "k_proj.bias"], &ck[p + "v_proj.bias"]})));
  EXPECT_EQ(vec(f, "model.layers.0.input_layernorm.bias"), bf16(ck["model.layers.0.input_layernorm.bias"]));
  EXPECT_EQ(vec(f, "model.layers.0.post_attention_layernorm.weight"),
            bf16(ck["model.layers.0.post_attention_layernorm.weight"]));
  EXPECT_EQ(vec(f, "model.norm.bias"), bf16(ck["model.norm.bias"]));
  EXPECT_EQ(c->chat["conv_template"]["name"], "stablelm-2");
}

TEST(HfConvertArchsFolder, GptNeoxReordersTheInterleavedQkv) {
  json cfg = {{"model_type", "gpt_neox"},     {"hidden_size", kH},        {"intermediate_size", kI},
              {"num_attention_heads", kHq},   {"num_hidden_layers", kL},  {"layer_norm_eps", 1e-5},
              {"vocab_size", kV},             {"rotary_pct", 0.5},        {"use_parallel_residual", false},
              {"max_position_embeddings", 256}, {"hidden_act", "gelu"}};
  Checkpoint ck;
  const int hd = kH / kHq;
  for (int i = 0; i < kL; ++i) {
    const std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
      ck.add(p + n + ".weight", {kH}, 1.0f);
      ck.add(p + n + ".bias", {kH});
    }
    ck.add(p + "attention.query_key_value.weight", {3 * kH, kH});
    ck.add(p + "attention.query_key_value.bias", {3 * kH});
    ck.add(p + "attention.dense.weight", {kH, kH});
    ck.add(p + "attention.dense.bias", {kH});
    ck.add(p + "attention.bias", {1, 1, 8, 8});  // the causal mask buffer: dropped
    ck.add(p + "attention.rotary_emb.inv_freq", {hd / 4});
    ck.add(p + "mlp.dense_h_to_4h.weight", {kI, kH});
    ck.add(p + "mlp.dense_h_to_4h.bias", {kI});
    ck.add(p + "mlp.dense_4h_to_h.weight", {kH, kI});
    ck.add(p + "mlp.dense_4h_to_h.bias", {kH});
  }
  ck.add("gpt_neox.embed_in.weight", {kV, kH});
  ck.add("gpt_neox.final_layer_norm.weight", {kH}, 1.0f);
  ck.add("gpt_neox.final_layer_norm.bias", {kH});
  ck.add("embed_out.weight", {kV, kH});
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  const std::string p = "gpt_neox.layers.1.attention.";
  // HF rows per head j: [q_j; k_j; v_j] (hd each) -> MLC [q_0 q_1; k_0 k_1; v_0 v_1].
  const Vec& w = ck[p + "query_key_value.weight"];
  const Vec& b = ck[p + "query_key_value.bias"];
  Vec wantW, wantB;
  for (int part = 0; part < 3; ++part)
    for (int j = 0; j < kHq; ++j)
      for (int e = 0; e < hd; ++e) {
        const int hfRow = j * 3 * hd + part * hd + e;
        wantW.insert(wantW.end(), w.begin() + hfRow * kH, w.begin() + (hfRow + 1) * kH);
        wantB.push_back(b[hfRow]);
      }
  EXPECT_EQ(matrix(f, p + "query_key_value", 3 * kH, kH), bf16(wantW));
  EXPECT_EQ(vec(f, p + "query_key_value.bias"), bf16(wantB));
  EXPECT_EQ(vec(f, p + "dense.bias"), bf16(ck[p + "dense.bias"]));
  EXPECT_EQ(vec(f, "gpt_neox.layers.0.mlp.dense_h_to_4h.bias"), bf16(ck["gpt_neox.layers.0.mlp.dense_h_to_4h.bias"]));
  EXPECT_EQ(vec(f, "gpt_neox.final_layer_norm.bias"), bf16(ck["gpt_neox.final_layer_norm.bias"]));
  EXPECT_EQ(matrix(f, "embed_out", kV, kH), bf16(ck["embed_out.weight"]));
  EXPECT_EQ(c->chat["conv_template"]["name"], "redpajama_chat");
  EXPECT_EQ(c->chat["model_config"]["ffn_out_dtype"], "float32");
}

TEST(HfConvertArchsFolder, PhiFusesQkvWithBiasesAndRenamesTheHead) {
  json cfg = {{"model_type", "phi"},          {"hidden_size", kH},          {"intermediate_size", kI},
              {"num_attention_heads", kHq},   {"num_key_value_heads", kHq}, {"num_hidden_layers", kL},
              {"layer_norm_eps", 1e-5},       {"vocab_size", kV},           {"partial_rotary_factor", 0.5},
              {"max_position_embeddings", 256}, {"hidden_act", "gelu_new"}};
  Checkpoint ck;
  for (int i = 0; i < kL; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    ck.add(p + "input_layernorm.weight", {kH}, 1.0f);
    ck.add(p + "input_layernorm.bias", {kH});
    for (const char* n : {"q_proj", "k_proj", "v_proj", "dense"}) {
      ck.add(p + "self_attn." + n + ".weight", {kH, kH});
      ck.add(p + "self_attn." + n + ".bias", {kH});
    }
    ck.add(p + "mlp.fc1.weight", {kI, kH});
    ck.add(p + "mlp.fc1.bias", {kI});
    ck.add(p + "mlp.fc2.weight", {kH, kI});
    ck.add(p + "mlp.fc2.bias", {kH});
  }
  ck.add("model.embed_tokens.weight", {kV, kH});
  ck.add("model.final_layernorm.weight", {kH}, 1.0f);
  ck.add("model.final_layernorm.bias", {kH});
  ck.add("lm_head.weight", {kV, kH});
  ck.add("lm_head.bias", {kV});
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  const std::string a = "model.layers.1.self_attn.";
  EXPECT_EQ(matrix(f, "transformer.h.1.mixer.Wqkv", 3 * kH, kH),
            bf16(cat({&ck[a + "q_proj.weight"], &ck[a + "k_proj.weight"], &ck[a + "v_proj.weight"]})));
  EXPECT_EQ(vec(f, "transformer.h.1.mixer.Wqkv.bias"),
            bf16(cat({&ck[a + "q_proj.bias"], &ck[a + "k_proj.bias"], &ck[a + "v_proj.bias"]})));
  EXPECT_EQ(matrix(f, "transformer.h.1.mixer.out_proj", kH, kH), bf16(ck[a + "dense.weight"]));
  EXPECT_EQ(vec(f, "transformer.h.1.mixer.out_proj.bias"), bf16(ck[a + "dense.bias"]));
  EXPECT_EQ(vec(f, "transformer.h.0.ln.bias"), bf16(ck["model.layers.0.input_layernorm.bias"]));
  EXPECT_EQ(vec(f, "transformer.h.0.mlp.fc1.bias"), bf16(ck["model.layers.0.mlp.fc1.bias"]));
  EXPECT_EQ(matrix(f, "transformer.embd", kV, kH), bf16(ck["model.embed_tokens.weight"]));
  EXPECT_EQ(vec(f, "lm_head.ln.weight"), bf16(ck["model.final_layernorm.weight"]));
  EXPECT_EQ(vec(f, "lm_head.ln.bias"), bf16(ck["model.final_layernorm.bias"]));
  EXPECT_EQ(matrix(f, "lm_head.linear", kV, kH), bf16(ck["lm_head.weight"]));
  EXPECT_EQ(vec(f, "lm_head.linear.bias"), bf16(ck["lm_head.bias"]));
  EXPECT_EQ(c->chat["conv_template"]["name"], "phi-2");
}

TEST(HfConvertArchsFolder, Ministral3FromItsVisionLanguageCheckpoint) {
  json text = dims();
  text.update({{"model_type", "ministral3"}, {"rms_norm_eps", 1e-5}, {"hidden_act", "silu"},
               {"rope_parameters", {{"rope_type", "yarn"}, {"type", "yarn"}, {"factor", 4.0},
                                    {"original_max_position_embeddings", 64}, {"beta_fast", 32.0},
                                    {"beta_slow", 1.0}, {"mscale", 1.0}, {"mscale_all_dim", 1.0},
                                    {"rope_theta", 1000000.0}}},
               {"sliding_window", nullptr}, {"tie_word_embeddings", true}});
  const json cfg = {{"model_type", "mistral3"}, {"text_config", text}, {"vision_config", {{"model_type", "pixtral"}}}};
  Checkpoint ck;
  addLlamaLayers(ck, "language_model.model.", {"input_layernorm", "post_attention_layernorm"});
  ck.add("vision_tower.transformer.layers.0.attention.q_proj.weight", {4, 4});  // dropped
  ck.add("multi_modal_projector.linear_1.weight", {4, 4});                      // dropped
  auto c = convert(cfg, ck);
  ASSERT_TRUE(c->folder);
  const ModelFolder& f = *c->folder;
  expectFusedQkv(f, ck, "model.layers.1.self_attn.qkv_proj", "language_model.model.layers.1.");
  expectGateUp(f, ck, "model.layers.0.mlp.gate_up_proj", "language_model.model.layers.0.");
  EXPECT_EQ(matrix(f, "model.embed_tokens", kV, kH), bf16(ck["language_model.model.embed_tokens.weight"]));
  EXPECT_EQ(vec(f, "model.norm.weight"), bf16(ck["language_model.model.norm.weight"]));
  EXPECT_EQ(f.find("lm_head.weight"), nullptr);
  EXPECT_EQ(c->chat["model_config"]["position_embedding_base"], 1000000.0);
  EXPECT_FALSE(c->chat["model_config"]["rope_parameters"].contains("rope_theta"));
  EXPECT_EQ(c->chat["conv_template"]["name"], "ministral3");
}

TEST(HfConvertArchsFolder, MissingTensorNamesTheHfName) {
  json cfg = dims();
  cfg.update({{"model_type", "gemma"}, {"attention_bias", false}, {"hidden_act", "gelu"}, {"rms_norm_eps", 1e-6}});
  Checkpoint ck;
  addLlamaLayers(ck, "model.", {"input_layernorm", "post_attention_layernorm"});
  ck.t.erase("model.layers.1.self_attn.k_proj.weight");
  ck.s.erase("model.layers.1.self_attn.k_proj.weight");
  test::TempDir dir;
  std::filesystem::create_directories(dir / "hf");
  test::writeJson(dir / "hf/config.json", cfg);
  ASSERT_TRUE(writeSafetensorsF32(dir / "hf/model.safetensors", ck.t, ck.s).ok());
  auto st = convertHfFolder(dir / "hf", dir / "mlc", Quant::kQ0F32, test::writeSmallTokenizer(dir.path(), 30));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().detail["problem"], "missing_tensor");
  EXPECT_EQ(st.error().detail["tensor"], "model.layers.1.self_attn.k_proj.weight");
}

}  // namespace
}  // namespace ewgpu
