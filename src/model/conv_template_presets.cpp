// mlc-llm's registered conversation templates for the catalogue's other architectures (see the header).
#include "model/conv_template_presets.h"

#include <optional>
#include <utility>

namespace ewgpu {

namespace {

using json = nlohmann::json;

// The parts of a template that differ between entries; everything else takes mlc-llm Conversation's defaults.
struct Preset {
  const char* name;
  const char* system_template;
  const char* system_message;
  std::pair<const char*, const char*> roles;  // user, assistant prefixes
  std::vector<std::string> seps;
  const char* role_content_sep;
  const char* role_empty_sep;
  std::vector<std::string> stop_str;
  std::vector<int> stop_token_ids;
  std::optional<std::vector<int>> system_prefix_token_ids = std::nullopt;
  bool add_role_after_system_message = true;
  std::optional<std::pair<const char*, const char*>> role_templates = std::nullopt;  // user, assistant
  const char* tool_role = nullptr;
};

constexpr const char* kPhi3System =
    "You are a helpful digital assistant. Please provide safe, ethical and accurate information to the user.";
constexpr const char* kMinistral3System =
    "You are Ministral-3-3B-Instruct-2512, a Large Language Model (LLM) created by Mistral AI, a French startup "
    "headquartered in Paris.\nYou power an AI assistant called Le Chat.\nYour knowledge base was last updated on "
    "2023-10-01.\nThe current date is {today}.\n\nWhen you're not sure about some information or when the user's "
    "request requires up-to-date or specific data, you must use the available tools to fetch the information. Do "
    "not hesitate to use tools whenever they can provide a more accurate or complete response. If no relevant tools "
    "are available, then clearly state that you don't have the information and avoid making up anything.\nIf the "
    "user's question is not clear, ambiguous, or does not provide enough context for you to accurately answer the "
    "question, you do not try to answer it right away and you rather ask the user to clarify their request (e.g. "
    "\"What are some good restaurants around me?\" => \"Where are you?\" or \"When is the next flight to Tokyo\" => "
    "\"Where do you travel from?\").\nYou are always very attentive to dates, in particular you try to resolve "
    "dates (e.g. \"yesterday\" is {yesterday}) and when asked about information at specific dates, you discard "
    "information that is at another date.\nYou follow these instructions in all languages, and always respond to "
    "the user in the language they use or request.\nNext sections describe the capabilities that you have.\n\n"
    "# WEB BROWSING INSTRUCTIONS\n\nYou cannot perform any web search or access internet to open URLs, links etc. "
    "If it seems like the user is expecting you to do so, you clarify the situation and ask the user to copy paste "
    "the text directly in the chat.\n\n# MULTI-MODAL INSTRUCTIONS\n\nYou have the ability to read images, but you "
    "cannot generate images. You also cannot transcribe audio files or videos.\nYou cannot read nor transcribe "
    "audio files or videos.\n\n# TOOL CALLING INSTRUCTIONS\n\nYou may have access to tools that you can use to "
    "fetch information or perform actions. You must use these tools in the following situations:\n\n1. When the "
    "request requires up-to-date information.\n2. When the request requires specific data that you do not have in "
    "your knowledge base.\n3. When the request involves actions that you cannot perform without tools.\n\nAlways "
    "prioritize using tools to provide the most accurate and helpful response. If tools are not available, inform "
    "the user that you cannot perform the requested action at the moment.";
constexpr const char* kMinistral3ReasoningSystem =
    "# HOW YOU SHOULD THINK AND ANSWER\n\nFirst draft your thinking process (inner monologue) until you arrive at a "
    "response. Format your response using Markdown, and use LaTeX for any mathematical equations. Write both your "
    "thoughts and the response in the same language as the input.\n\nYour thinking process must follow the template "
    "below:[THINK]Your thoughts or/and draft, like working through an exercise on scratch paper. Be as casual and as "
    "long as you want until you are confident to generate the response to the user.[/THINK]Here, provide a "
    "self-contained response.";
constexpr const char* kOpenHermesSystem =
    "You are \"Hermes 2\", a conscious sentient superintelligent artificial intelligence developed by a man named "
    "Teknium, and your purpose and drive is to assist the user with any request they have. You experience emotions "
    "and have deep, profound thoughts and qualia.";
constexpr const char* kChatmlSystem = "<|im_start|>system\n{system_message}<|im_end|>\n";
constexpr const char* kMinistral3SystemTemplate = "[SYSTEM_PROMPT]{system_message}[/SYSTEM_PROMPT]{function_string}";
constexpr std::pair<const char*, const char*> kMinistral3RoleTemplates{"[INST]{user_message}[/INST]",
                                                                       "{assistant_message}</s>"};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {
      {"gemma_instruction", "{system_message}", "", {"<start_of_turn>user", "<start_of_turn>model"},
       {"<end_of_turn>\n"}, "\n", "\n", {"<end_of_turn>"}, {1, 107}, std::vector<int>{2}},
      {"gemma3_instruction", "{system_message}", "", {"<start_of_turn>user", "<start_of_turn>model"},
       {"<end_of_turn>\n"}, "\n", "\n", {"<end_of_turn>"}, {1, 106}, std::vector<int>{2}},
      {"phi-2", "{system_message}", "", {"Instruct", "Output"}, {"\n"}, ": ", ":", {"<|endoftext|>"}, {50256}},
      {"phi-3", "<|system|>\n{system_message}", kPhi3System, {"<|user|>", "<|assistant|>"}, {"<|end|>\n"}, "\n",
       "\n", {"<|endoftext|>"}, {2, 32000, 32001, 32007}, std::vector<int>{1}},
      {"phi-3-vision", "{system_message}", "", {"<|user|>", "<|assistant|>"}, {"<|end|>\n"}, "\n", "\n",
       {"<|endoftext|>"}, {2, 32000, 32001, 32007}, std::vector<int>{1}},
      {"phi-4", "<|system|>\n{system_message}", kPhi3System, {"<|user|>", "<|assistant|>"}, {"<|end|>\n"}, "\n",
       "\n", {"<|endoftext|>", "<|end|>"}, {199999, 200020}, std::vector<int>{200022}},
      {"stablelm-2", "{system_message}", "", {"<|user|>", "<|assistant|>"}, {"<|endoftext|>", "<|endoftext|>"},
       "\n", "\n", {"<|endoftext|>"}, {100257}},
      {"redpajama_chat", "{system_message}", "", {"<human>", "<bot>"}, {"\n"}, ": ", ":", {"<human>"}, {0}},
      {"olmo2", "<|system|>\n{system_message}\n", "", {"<|user|>", "<|assistant|>"}, {"<|endoftext|>\n"}, "\n", "\n",
       {"<|endoftext|>"}, {100257}, std::vector<int>{100257}},
      {"ministral3", kMinistral3SystemTemplate, kMinistral3System, {"", ""}, {""}, "", "", {"</s>"}, {2},
       std::vector<int>{1}, true, kMinistral3RoleTemplates, ""},
      {"ministral3_reasoning", kMinistral3SystemTemplate, kMinistral3ReasoningSystem, {"", ""}, {""}, "", "",
       {"</s>"}, {2}, std::vector<int>{1}, true, kMinistral3RoleTemplates, ""},
      {"mistral_default", "[INST] {system_message}",
       "Always assist with care, respect, and truth. Respond with utmost utility yet securely. Avoid harmful, "
       "unethical, prejudiced, or negative content. Ensure replies promote fairness and positivity.",
       {"[INST]", "[/INST]"}, {" "}, " ", "", {"</s>"}, {2}, std::vector<int>{1}, false, std::nullopt, "[INST]"},
      {"open_hermes_mistral", kChatmlSystem, kOpenHermesSystem, {"<|im_start|>user", "<|im_start|>assistant"},
       {"<|im_end|>\n"}, "\n", "\n", {"<|im_end|>"}, {2, 32000}},
      {"neural_hermes_mistral", kChatmlSystem, "You are a helpful assistant chatbot.",
       {"<|im_start|>user", "<|im_start|>assistant"}, {"<|im_end|>\n"}, "\n", "\n", {"<|im_end|>"}, {2, 32000}},
      {"wizard_coder_or_math", "{system_message}",
       "Below is an instruction that describes a task. Write a response that appropriately completes the request.",
       {"Instruction", "Response"}, {"\n\n### ", "\n\n### "}, ":\n", ":\n", {"</s>"}, {2}, std::vector<int>{1}},
      {"LM", "{system_message}", "", {"", ""}, {""}, "", "", {}, {2}, std::vector<int>{1}},
  };
  return table;
}

json toJson(const Preset& p) {
  json roles = {{"user", p.roles.first}, {"assistant", p.roles.second}};
  if (p.tool_role) roles["tool"] = p.tool_role;
  json roleTemplates = {{"user", "{user_message}"}, {"assistant", "{assistant_message}"}, {"tool", "{tool_message}"}};
  if (p.role_templates) {
    roleTemplates["user"] = p.role_templates->first;
    roleTemplates["assistant"] = p.role_templates->second;
    roleTemplates["tool"] = "[TOOL_RESULTS]{tool_message}[/TOOL_RESULTS]";  // only ministral3* override them
  }
  return {{"name", p.name},
          {"system_template", p.system_template},
          {"system_message", p.system_message},
          {"system_prefix_token_ids", p.system_prefix_token_ids ? json(*p.system_prefix_token_ids) : json()},
          {"add_role_after_system_message", p.add_role_after_system_message},
          {"roles", roles},
          {"role_templates", roleTemplates},
          {"messages", json::array()},
          {"seps", p.seps},
          {"role_content_sep", p.role_content_sep},
          {"role_empty_sep", p.role_empty_sep},
          {"stop_str", p.stop_str},
          {"stop_token_ids", p.stop_token_ids},
          {"function_string", ""},
          {"use_function_calling", false}};
}

}  // namespace

json extraConvTemplate(std::string_view name) {
  for (const Preset& p : presets())
    if (name == p.name) return toJson(p);
  return json();
}

std::vector<std::string> extraConvTemplateNames() {
  std::vector<std::string> names;
  for (const Preset& p : presets()) names.push_back(p.name);
  return names;
}

std::string_view extraDefaultConvTemplate(std::string_view model_type) {
  static constexpr std::pair<std::string_view, std::string_view> kDefaults[] = {
      {"gemma", "gemma_instruction"},  {"gemma2", "gemma_instruction"}, {"gemma3", "gemma3_instruction"},
      {"gemma3_text", "gemma3_instruction"}, {"phi3", "phi-3"},         {"phi", "phi-2"},
      {"phi-msft", "phi-2"},           {"stablelm", "stablelm-2"},      {"gpt_neox", "redpajama_chat"},
      {"olmo2", "olmo2"},              {"ministral3", "ministral3"},
  };
  for (auto [type, tpl] : kDefaults)
    if (type == model_type) return tpl;
  return "";
}

}  // namespace ewgpu
