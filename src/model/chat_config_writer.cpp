// mlc-chat-config.json writing: model_config fields per architecture (mlc-format.md §1.3), runtime fields,
// conversation template presets (§4.4), and the tokenizer facts the writer needs (vocab size, §6.2 info).
#include <cstdio>
#include <cstdlib>

#include "model/conv_template_presets.h"
#include "model/tiny_model.h"

namespace ewgpu {

namespace {

using json = nlohmann::json;

// The shortest decimal that reads back as the same float (1e-06, not 9.999999974752427e-07).
double shortFloat(float f) {
  char buf[32];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, (double)f);
    double d = std::strtod(buf, nullptr);
    if ((float)d == f) return d;
  }
  return f;
}

json chatmlLike(const std::string& name, const std::string& system, const std::string& assistant, json stopStr,
                json stopIds) {
  return {{"name", name},
          {"system_template", "<|im_start|>system\n{system_message}<|im_end|>\n"},
          {"system_message", system},
          {"system_prefix_token_ids", nullptr},
          {"add_role_after_system_message", true},
          {"roles", {{"user", "<|im_start|>user"}, {"assistant", assistant}}},
          {"role_templates",
           {{"user", "{user_message}"}, {"assistant", "{assistant_message}"}, {"tool", "{tool_message}"}}},
          {"messages", json::array()},
          {"seps", {"<|im_end|>\n"}},
          {"role_content_sep", "\n"},
          {"role_empty_sep", "\n"},
          {"stop_str", stopStr},
          {"stop_token_ids", stopIds},
          {"function_string", ""},
          {"use_function_calling", false}};
}

// MLC's BertConfig fields (bert_model.py) after its __post_init__: context_window_size from HF
// max_position_embeddings, head_dim and prefill_chunk_size filled in.
json bertModelConfigFields(const ModelConfig& c) {
  return {{"vocab_size", c.vocab},
          {"hidden_size", c.hidden},
          {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads},
          {"intermediate_size", c.intermediate},
          {"hidden_act", c.hidden_act.empty() ? std::string("gelu") : c.hidden_act},
          {"layer_norm_eps", shortFloat(c.layer_norm_eps)},
          {"context_window_size", c.context_window},
          {"prefill_chunk_size", c.prefill_chunk},
          {"tensor_parallel_shards", 1},
          {"type_vocab_size", c.type_vocab},
          {"pad_token_id", 0},
          {"position_offset", 0},
          {"head_dim", c.head_dim},
          {"max_batch_size", 4}};
}

// The model_config fields MLC's config classes write for the families beyond llama / qwen (docs/architectures.md),
// on top of the common ones.
void familyFields(const ModelConfig& c, json& m) {
  if (usesLayerNorm(c.arch)) {
    m.erase("rms_norm_eps");
    m[c.arch == Arch::kPhi ? "layer_norm_epsilon" : "layer_norm_eps"] = shortFloat(c.rms_eps);
  }
  m["position_embedding_base"] = c.rope_theta;
  switch (c.arch) {
    case Arch::kGemma:
    case Arch::kGemma2:
    case Arch::kGemma3:
      m["attention_bias"] = false;
      m["hidden_activation"] = "gelu_pytorch_tanh";
      if (c.arch == Arch::kGemma) break;
      m["query_pre_attn_scalar"] = shortFloat((float)(1.0 / (c.attnScale() * c.attnScale())));
      if (c.arch == Arch::kGemma2) {
        m["sliding_window"] = c.layer_window > 0 ? c.layer_window : c.context_window;
        m["attn_logit_softcapping"] = c.attn_softcap > 0 ? json(shortFloat(c.attn_softcap)) : json(nullptr);
        m["final_logit_softcapping"] = c.final_softcap > 0 ? json(shortFloat(c.final_softcap)) : json(nullptr);
      } else {  // gemma3: the text model's fields sit in text_config (model_config.cpp reads both levels)
        m["sliding_window_size"] = c.layer_window > 0 ? c.layer_window : c.context_window;
        m["sliding_window_pattern"] = c.window_pattern;
        m["rope_local_base_freq"] = c.rope_local_theta > 0 ? c.rope_local_theta : 10000.0;
      }
      break;
    case Arch::kPhi3:
    case Arch::kStableLm:
      m["partial_rotary_factor"] = shortFloat(c.partial_rotary_factor);
      if (c.arch == Arch::kStableLm) m["use_qkv_bias"] = c.qkv_bias;
      else m["tie_word_embeddings"] = c.tie_embeddings;
      if (c.rope_scaling && c.rope_scaling->rope_type == "longrope") {
        const RopeScaling& r = *c.rope_scaling;
        m["rope_scaling"] = {{"type", "longrope"}, {"rope_type", "longrope"}, {"short_factor", r.short_factor},
                             {"long_factor", r.long_factor}, {"max_position_embeddings", r.max_position_embeddings},
                             {"original_max_position_embeddings", r.original_max_position_embeddings}};
        m["original_max_position_embeddings"] = r.original_max_position_embeddings;
        m["max_position_embeddings"] = r.max_position_embeddings;
      }
      break;
    case Arch::kOlmo2:
      m["hidden_act"] = "silu";
      m["tie_word_embeddings"] = c.tie_embeddings;
      break;
    case Arch::kGptNeox:
      m["use_parallel_residual"] = c.parallel_residual;
      m["rotary_pct"] = shortFloat(c.partial_rotary_factor);
      m["hidden_act"] = c.mlp == MlpKind::kGelu ? "gelu" : "gelu_new";
      break;
    case Arch::kPhi:
      m["rotary_dim"] = c.rotaryDim();
      break;
    case Arch::kGemma4: {  // MLC's Gemma4TextConfig fields; rope_parameters as transformers spells it
      m["attention_bias"] = false;
      m["hidden_activation"] = "gelu_pytorch_tanh";
      m["sliding_window_size"] = c.layer_window;
      json types = json::array();
      for (int i = 0; i < c.n_layers; ++i) types.push_back(c.windowOf(i) > 0 ? "sliding_attention" : "full_attention");
      m["layer_types"] = types;
      m["global_position_embedding_base"] = c.rope_global_theta;
      m["hidden_size_per_layer_input"] = c.ple_dim;
      m["vocab_size_per_layer_input"] = c.ple_vocab;
      m["num_global_key_value_heads"] = c.global_kv_heads;
      m["global_head_dim"] = c.global_head_dim;
      m["attention_k_eq_v"] = false;
      m["num_kv_shared_layers"] = c.kv_shared_layers;
      m["enable_moe_block"] = false;
      m["use_double_wide_mlp"] = c.double_wide_mlp;
      m["final_logit_softcapping"] = c.final_softcap > 0 ? json(shortFloat(c.final_softcap)) : json(nullptr);
      json full = {{"rope_type", "proportional"}, {"rope_theta", c.rope_global_theta},
                   {"partial_rotary_factor", shortFloat(c.rope_global_partial)}};
      if (c.rope_global_factor != 1.0f) full["factor"] = shortFloat(c.rope_global_factor);
      m["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", c.rope_theta}}},
                              {"full_attention", full}};
      break;
    }
    case Arch::kMinistral3:
      m["tie_word_embeddings"] = c.tie_embeddings;
      m["hidden_act"] = "silu";
      m["sliding_window_size"] = c.sliding_window;
      if (c.rope_scaling && c.rope_scaling->rope_type == "yarn") {
        const RopeScaling& r = *c.rope_scaling;
        m["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", shortFloat(r.factor)},
                                {"beta_fast", shortFloat(r.beta_fast)}, {"beta_slow", shortFloat(r.beta_slow)},
                                {"mscale", shortFloat(r.mscale)}, {"mscale_all_dim", shortFloat(r.mscale_all_dim)},
                                {"llama_4_scaling_beta", shortFloat(r.llama4_beta)},
                                {"original_max_position_embeddings", r.original_max_position_embeddings}};
      }
      break;
    default:
      break;
  }
}

json modelConfigFields(const ModelConfig& c) {
  if (c.arch == Arch::kBert) return bertModelConfigFields(c);
  json m = {{"hidden_size", c.hidden},
            {"intermediate_size", c.intermediate},
            {"num_attention_heads", c.n_heads},
            {"num_hidden_layers", c.n_layers},
            {"num_key_value_heads", c.n_kv_heads},
            {"head_dim", c.head_dim},
            {"rms_norm_eps", shortFloat(c.rms_eps)},
            {"vocab_size", c.vocab},
            {"context_window_size", c.context_window},
            {"prefill_chunk_size", c.prefill_chunk},
            {"tensor_parallel_shards", 1},
            {"max_batch_size", 1}};
  bool attnBias = c.o_bias;  // qwen3/qwen3_5: attention_bias drives both biases
  switch (c.arch) {
    case Arch::kLlama:
      m["tie_word_embeddings"] = c.tie_embeddings;
      m["position_embedding_base"] = c.rope_theta;
      m["pipeline_parallel_stages"] = 1;
      if (c.rope_scaling) {
        const RopeScaling& r = *c.rope_scaling;
        m["rope_scaling"] = {{"rope_type", r.rope_type},
                             {"factor", shortFloat(r.factor)},
                             {"low_freq_factor", shortFloat(r.low_freq_factor)},
                             {"high_freq_factor", shortFloat(r.high_freq_factor)},
                             {"original_max_position_embeddings", r.original_max_position_embeddings}};
      } else {
        m["rope_scaling"] = nullptr;
      }
      break;
    case Arch::kMistral:
      m["position_embedding_base"] = c.rope_theta;
      m["sliding_window_size"] = c.sliding_window;
      m["attention_sink_size"] = 4;
      break;
    case Arch::kQwen2:
    case Arch::kQwen3:
      m["hidden_act"] = "silu";
      m["rope_theta"] = c.rope_theta;
      m["tie_word_embeddings"] = c.tie_embeddings;
      m["dtype"] = "float32";
      if (c.arch == Arch::kQwen3) {
        m["attention_bias"] = attnBias;
        m["weight_block_size"] = nullptr;
      }
      break;
    case Arch::kQwen3_5:
      m["hidden_act"] = "silu";
      m["rope_theta"] = c.rope_theta;
      m["tie_word_embeddings"] = c.tie_embeddings;
      m["attention_bias"] = attnBias;
      m["linear_key_head_dim"] = c.lin_k_dim;
      m["linear_value_head_dim"] = c.lin_v_dim;
      m["linear_num_key_heads"] = c.lin_k_heads;
      m["linear_num_value_heads"] = c.lin_v_heads;
      m["linear_conv_kernel_dim"] = c.lin_conv_kernel;
      m["full_attention_interval"] = c.full_attention_interval;
      m["partial_rotary_factor"] = shortFloat(c.partial_rotary_factor);
      m["dtype"] = "float32";
      break;
    default:
      familyFields(c, m);
      break;
  }
  return m;
}

}  // namespace

json convTemplatePreset(std::string_view name) {
  const std::string qwenSys = "You are a helpful assistant.";
  json qwenStops = {"<|endoftext|>", "<|im_end|>"};
  if (name == "chatml")
    return chatmlLike("chatml",
                      "A conversation between a user and an LLM-based AI assistant. The assistant gives helpful and "
                      "honest answers.",
                      "<|im_start|>assistant", {"<|im_end|>"}, {2});
  if (name == "qwen2") return chatmlLike("qwen2", qwenSys, "<|im_start|>assistant", qwenStops, {151643, 151645});
  if (name == "qwen3") {
    json t = chatmlLike("qwen3", qwenSys, "<|im_start|>assistant", qwenStops, {151643, 151645});
    t["strip_reasoning_in_history"] = true;
    return t;
  }
  if (name == "qwen3_5")
    return chatmlLike("qwen3_5", qwenSys, "<|im_start|>assistant\n<think>", qwenStops, {248046, 248044});
  if (name == "qwen3_5_nothink")
    return chatmlLike("qwen3_5_nothink", qwenSys, "<|im_start|>assistant\n<think>\n\n</think>\n", qwenStops,
                      {248046, 248044});
  if (name == "llama-3") {
    json t = chatmlLike("llama-3", "You are a helpful, respectful and honest assistant.",
                        "<|start_header_id|>assistant", {"<|end_of_text|>", "<|eot_id|>"}, {128001, 128009});
    t["system_template"] = "<|start_header_id|>system<|end_header_id|>\n\n{system_message}<|eot_id|>";
    t["system_prefix_token_ids"] = {128000};
    t["roles"] = {{"user", "<|start_header_id|>user"}, {"assistant", "<|start_header_id|>assistant"}};
    t["seps"] = {"<|eot_id|>"};
    t["role_content_sep"] = "<|end_header_id|>\n\n";
    t["role_empty_sep"] = "<|end_header_id|>\n\n";
    return t;
  }
  return extraConvTemplate(name);  // gemma, phi, stablelm, redpajama, olmo2, ministral3, mistral fine-tunes
}

std::string_view defaultConvTemplateName(Arch a) {
  if (auto t = extraDefaultConvTemplate(archName(a)); !t.empty()) return t;
  switch (a) {
    case Arch::kLlama:
      return "llama-3";
    case Arch::kMistral:
      return "chatml";
    case Arch::kQwen2:
      return "qwen2";
    case Arch::kQwen3:
      return "qwen3";
    case Arch::kQwen3_5:
      return "qwen3_5_nothink";
    case Arch::kBert:
      return "LM";
    default:
      return "chatml";
  }
  return "chatml";
}

json mlcChatConfigJson(const ModelConfig& c) {
  json conv = c.conv_template.is_null() ? convTemplatePreset(defaultConvTemplateName(c.arch)) : c.conv_template;
  // A preset's ids are those of the family's real tokenizer: none may name a row this model's embedding lacks
  // (the loader rejects such a template).
  if (conv.is_object())
    for (const char* k : {"stop_token_ids", "system_prefix_token_ids"})
      if (conv.contains(k) && conv[k].is_array()) {
        json kept = json::array();
        for (const auto& id : conv[k])
          if (id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < c.vocab) kept.push_back(id);
        conv[k] = kept;
      }
  json stops = conv.is_object() ? conv.value("stop_token_ids", json::array()) : json::array();
  json prefix = conv.is_object() ? conv.value("system_prefix_token_ids", json()) : json();
  json doc = {{"version", "0.1.0"},
          {"model_type", c.model_type.empty() ? std::string(archName(c.arch)) : c.model_type},
          {"quantization", quantName(c.quant)},
          {"model_config", modelConfigFields(c)},
          {"vocab_size", c.vocab},
          {"context_window_size", c.context_window},
          {"sliding_window_size", c.sliding_window},
          {"prefill_chunk_size", c.prefill_chunk},
          {"attention_sink_size", c.arch == Arch::kMistral ? 4 : -1},
          {"tensor_parallel_shards", 1},
          {"pipeline_parallel_stages", 1},
          {"active_vocab_size", c.active_vocab > 0 ? c.active_vocab : c.vocab},
          {"temperature", shortFloat(c.temperature)},
          {"presence_penalty", shortFloat(c.presence_penalty)},
          {"frequency_penalty", shortFloat(c.frequency_penalty)},
          {"repetition_penalty", shortFloat(c.repetition_penalty)},
          {"top_p", shortFloat(c.top_p)},
          {"tokenizer_files", c.tokenizer_files.empty() ? json{"tokenizer.json"} : json(c.tokenizer_files)},
          {"tokenizer_info", c.tokenizer_info.is_object() && !c.tokenizer_info.empty()
                                 ? c.tokenizer_info
                                 : json{{"token_postproc_method", "byte_level"},
                                        {"prepend_space_in_encode", false},
                                        {"strip_space_in_decode", false}}},
          {"conv_template", conv},
          {"pad_token_id", 0},
          {"bos_token_id", prefix.is_array() && !prefix.empty() ? prefix[0] : json(1)},
          {"eos_token_id", stops.size() == 1 ? stops[0] : stops},
          {"model_task", "chat"}};
  if (c.arch == Arch::kBert) {
    doc["model_task"] = "embedding";
    doc["embedding_metadata"] = {{"model_type", "encoder"}, {"pooling_strategy", "cls"}, {"normalize", c.embedding_normalize}};
  }
  return doc;
}

}  // namespace ewgpu
