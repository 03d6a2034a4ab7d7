// The conversation templates that mlc-llm registers for the architectures beyond llama/mistral/qwen (gemma,
// phi, stablelm, redpajama, olmo2, ministral3, and the Mistral fine-tunes of WebLLM's catalogue), as the full
// `conv_template` objects gen_config writes into mlc-chat-config.json (mlc-format.md §4.1). One table serves
// both the folder writer (convTemplatePreset) and the tokenizer's legacy-name lookup (ConvTemplate::builtin),
// so a folder whose conv_template is just a name renders the same prompt as one that carries the object.
// Values: mlc-llm python/mlc_llm/conversation_template/{gemma,phi,stablelm,redpajama,olmo2,ministral3,
// ministral3_reasoning,mistral,hermes,wizardlm}.py; docs/mlc-architectures.md lists which model uses which.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ewgpu {

// The full conv_template object of a registered template, or null for a name this table does not hold.
nlohmann::json extraConvTemplate(std::string_view name);

// The names extraConvTemplate knows, in table order.
std::vector<std::string> extraConvTemplateNames();

// The template a folder of this MLC model_type gets when none is given ("" when this table has no default
// for it): gemma/gemma2 -> gemma_instruction, gemma3_text -> gemma3_instruction, phi3 -> phi-3,
// phi/phi-msft -> phi-2, stablelm -> stablelm-2, gpt_neox -> redpajama_chat, olmo2, ministral3.
std::string_view extraDefaultConvTemplate(std::string_view model_type);

}  // namespace ewgpu
