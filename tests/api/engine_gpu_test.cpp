// Every architecture's tiny transformers fixture through the public Engine on the GPU (SwiftShader in CI):
// greedy text and token ids equal the CPU reference's greedy continuation, alone and with a second sequence
// decoding in the same forward; the sliding-window folder (context_window_size -1) runs prompts of every
// length, including ones shorter than 4 tokens and longer than a chunk.
#include "ewgpu/engine.h"
#include "gpu/context.h"
#include "model/model_folder.h"
#include "model/reference_model.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace ewgpu {
namespace {

std::string fixture(const std::string& arch) {
  return std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/" + arch + "_tiny/q4f16_1";
}

// Greedy ids of the CPU reference after `prompt`, stopping after a stop id (included) or n tokens.
std::vector<int32_t> referenceGreedy(const std::string& dir, const std::vector<int32_t>& prompt, int n,
                                     const std::vector<int32_t>& stops) {
  auto folder = ModelFolder::open(dir);
  EXPECT_TRUE(folder.ok());
  auto ref = ReferenceModel::load(*folder);
  EXPECT_TRUE(ref.ok());
  std::vector<int32_t> out;
  std::vector<float> logits = ref->forward(prompt);  // [tokens, vocab]
  const size_t V = (size_t)ref->config().vocab;
  for (int i = 0; i < n; ++i) {
    const auto last = logits.end() - (ptrdiff_t)V;
    int32_t best = (int32_t)(std::max_element(last, logits.end()) - last);
    out.push_back(best);
    if (std::find(stops.begin(), stops.end(), best) != stops.end()) break;
    logits = ref->forward(std::span<const int32_t>(&best, 1));
  }
  return out;
}

CompletionRequest greedy(const std::string& prompt, uint32_t n) {
  CompletionRequest r;
  r.prompt = prompt;
  r.max_tokens = n;
  r.temperature = 0;
  r.logprobs = true;
  r.repetition_penalty = 1;
  r.presence_penalty = 0;
  r.frequency_penalty = 0;
  return r;
}

std::vector<int32_t> ids(const CompletionResult& r) {
  std::vector<int32_t> v;
  for (const auto& t : r.logprobs) v.push_back(t.id);
  return v;
}

// r's greedy ids (at least one) are the first ids of the CPU reference's greedy continuation of prompt on dir.
void expectReferencePrefix(const std::string& dir, const std::string& prompt, int n, const CompletionResult& r) {
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok());
  std::vector<int32_t> ref = referenceGreedy(dir, tok->encode(prompt), n, {});
  std::vector<int32_t> g = ids(r);
  ASSERT_FALSE(g.empty());
  ASSERT_LE(g.size(), ref.size());
  EXPECT_EQ(g, std::vector<int32_t>(ref.begin(), ref.begin() + g.size()));
}

class EngineOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineOnGpu, GreedyMatchesTheReferenceAloneAndBatched) {
  const std::string dir = fixture(GetParam());
  auto e = Engine::create({.rows = 2, .decode_steps = 4, .max_steps = 8});
  ASSERT_TRUE(e.ok());
  auto info = (*e)->load(dir)->wait();
  ASSERT_TRUE(info.ok()) << info.error().toString();
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok());
  auto folder = ModelFolder::open(dir);
  ASSERT_TRUE(folder.ok());
  std::vector<int32_t> stops;
  if (!folder->config().conv_template.is_null())
    if (auto conv = ConvTemplate::fromJson(folder->config().conv_template); conv.ok()) stops = conv->stopTokenIds();

  const std::vector<std::string> prompts = {"Once upon a time, in a land far away", "ab"};
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) want.push_back(referenceGreedy(dir, tok->encode(p), 12, stops));

  // Alone.
  auto alone = (*e)->complete(greedy(prompts[0], 12));
  ASSERT_TRUE(alone.ok()) << alone.error().toString();
  const CompletionResult& a = (*alone)->wait();
  ASSERT_EQ(a.outcome, Outcome::kCompleted) << (a.error ? a.error->toString() : "");
  std::vector<int32_t> got = ids(a);
  if (a.finish_reason == "stop") got.push_back(want[0][got.size()]);  // the stop id itself is not shown
  EXPECT_EQ(got, want[0]);
  EXPECT_EQ(a.text, tok->decode(ids(a)));

  EXPECT_EQ(a.usage.cached_tokens, 0u);

  // Two sequences in one forward: each gives what it gives alone. The first repeats the first prompt: with prefix
  // reuse its full 16-token pages come from the run alone (attention-only models; the hybrid resumes only from an
  // exact snapshot, and the one it took holds the generated tokens too), and its tokens are the same.
  auto h0 = (*e)->complete(greedy(prompts[0], 12));
  auto h1 = (*e)->complete(greedy(prompts[1], 12));
  ASSERT_TRUE(h0.ok() && h1.ok());
  const CompletionResult& r0 = (*h0)->wait();
  const CompletionResult& r1 = (*h1)->wait();
  EXPECT_EQ(ids(r0), ids(a));
  const uint32_t n0 = (uint32_t)tok->encode(prompts[0]).size();
  EXPECT_EQ(r0.usage.cached_tokens, GetParam() == "qwen3_5" ? 0u : (n0 - 1) / 16 * 16) << n0 << " prompt tokens";
  EXPECT_EQ(r1.usage.cached_tokens, 0u);
  std::vector<int32_t> got1 = ids(r1);
  if (r1.finish_reason == "stop") got1.push_back(want[1][got1.size()]);
  EXPECT_EQ(got1, want[1]);
  EXPECT_GT(r0.timings.decode_tok_s, 0);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, EngineOnGpu,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "qwen3_5"));

// The load's GPU half (device, weights, pipelines) runs while the loader thread parses the tokenizer and the
// template: a good folder reports every stage, its weights written through the staging ring while the pipelines
// compile (upload_ring); a folder whose tokenizer.json is broken fails with the tokenizer's own error once the GPU
// half is done, and frees what it built: the engine then loads the good folder under the same id and decodes it.
TEST(EngineOnGpuLoad, ParseOverlapsTheGpuHalfAndItsFailureEndsOnlyThatLoad) {
  const std::string good = fixture("llama");
  const std::string bad = ::testing::TempDir() + "/ewgpu-bad-tokenizer";
  std::filesystem::remove_all(bad);
  std::filesystem::copy(good, bad);
  {
    std::ofstream t(bad + "/tokenizer.json", std::ios::trunc);
    t << "{\"model\": {\"type\": \"BPE\", \"vocab\": 7}}";
  }
  auto want = Tokenizer::fromFile(bad + "/tokenizer.json");
  ASSERT_FALSE(want.ok());
  auto e = Engine::create({.rows = 1, .decode_steps = 4, .max_steps = 8});
  ASSERT_TRUE(e.ok());
  LoadOptions lo;
  lo.id = "m";
  auto failed = (*e)->load(bad, lo)->wait();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, want.error().code);
  EXPECT_EQ(failed.error().message, want.error().message);
  EXPECT_TRUE((*e)->resident().empty());

  auto info = (*e)->load(good, lo)->wait();
  ASSERT_TRUE(info.ok()) << info.error().toString();
  for (const char* stage : {"parse", "device", "upload", "upload_ring", "pipelines", "pipelines_shader_modules",
                            "warmup"})
    EXPECT_TRUE(info->load_ms_by_stage.contains(stage)) << stage << " in " << info->load_ms_by_stage.dump();
  CompletionRequest r = greedy("Once upon a time", 6);
  r.model = "m";
  auto h = (*e)->complete(r);
  ASSERT_TRUE(h.ok()) << h.error().toString();
  const CompletionResult& got = (*h)->wait();
  ASSERT_EQ(got.outcome, Outcome::kCompleted) << (got.error ? got.error->toString() : "");
  expectReferencePrefix(good, "Once upon a time", 6, got);
  std::filesystem::remove_all(bad);
}

// A lost device fails what was in flight and only that; the engine loads again. Two streams decode in one forward
// and a third waits for a row when the device is lost at a decode submission (gpu::loseDeviceAtNextSubmit, set
// from the first stream's first chunk): all three end kFailed with DEVICE_LOST, the model is unloaded with reason
// device.lost and a device.lost event, a new request is NO_MODEL; then the same folder loads again on a new device
// and its greedy ids equal the CPU reference's.
TEST(EngineOnGpuDevice, ALostDeviceFailsWhatWasInFlightAndTheEngineLoadsAgain) {
  const std::string dir = fixture("llama");
  auto e = Engine::create({.rows = 2, .decode_steps = 4, .max_steps = 8});
  ASSERT_TRUE(e.ok());
  std::mutex mu;
  std::vector<EngineEvent> events;
  auto unsubscribe = (*e)->subscribe([&](const EngineEvent& ev) {
    std::lock_guard<std::mutex> lk(mu);
    events.push_back(ev);
  });
  LoadOptions lo;
  lo.id = "m";
  auto info = (*e)->load(dir, lo)->wait();
  ASSERT_TRUE(info.ok()) << info.error().toString();

  std::atomic<bool> armed{false};
  auto first = (*e)->complete(greedy("Once upon a time", 400), [&](const Chunk&) {
    if (!armed.exchange(true)) gpu::loseDeviceAtNextSubmit();
  });
  auto second = (*e)->complete(greedy("ab", 400));
  auto third = (*e)->complete(greedy("a third one waits for a row", 400));
  ASSERT_TRUE(first.ok() && second.ok() && third.ok());
  for (const CompletionHandle* h : {&*first, &*second, &*third}) {
    const CompletionResult* r = (*h)->result->waitFor(60000);
    ASSERT_NE(r, nullptr) << "a job did not end within 60 s of the loss";
    EXPECT_EQ(r->outcome, Outcome::kFailed);
    ASSERT_TRUE(r->error.has_value());
    EXPECT_EQ(r->error->code, ErrorCode::kDeviceLost) << r->error->toString();
    EXPECT_LT(r->usage.completion_tokens, 400u);
  }
  EXPECT_TRUE(armed.load());
  EXPECT_TRUE((*e)->resident().empty());
  auto none = (*e)->complete(greedy("after", 2));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNoModel);
  {
    std::lock_guard<std::mutex> lk(mu);
    const auto lost = std::find_if(events.begin(), events.end(), [](const EngineEvent& ev) { return ev.type == "device.lost"; });
    ASSERT_NE(lost, events.end());
    EXPECT_EQ(lost->data["error"]["code"], "DEVICE_LOST");
    EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const EngineEvent& ev) {
      return ev.type == "model.unloaded" && ev.data.value("model", "") == "m" && ev.data.value("reason", "") == "device.lost";
    }));
  }
  unsubscribe();

  auto again = (*e)->load(dir, lo)->wait();
  ASSERT_TRUE(again.ok()) << again.error().toString();
  auto h = (*e)->complete(greedy("Once upon a time", 8));
  ASSERT_TRUE(h.ok()) << h.error().toString();
  const CompletionResult& r = (*h)->wait();
  ASSERT_EQ(r.outcome, Outcome::kCompleted) << (r.error ? r.error->toString() : "");
  expectReferencePrefix(dir, "Once upon a time", 8, r);
}

// The defect of issue 11: a folder whose context_window_size is -1 (a sliding window) ran with a context of 1
// in Forward, and prefill chunks shorter than 4 tokens were sent as 4 (out-of-bounds writes with the clamps
// off). The context is now the sliding window, one number for Forward and the executor.
TEST(EngineOnGpuSlidingWindow, PromptsOfAnyLengthRunOnAFolderWithoutAContextWindow) {
  const std::string dir = fixture("mistral");
  auto folder = ModelFolder::open(dir);
  ASSERT_TRUE(folder.ok());
  ASSERT_EQ(folder->config().context_window, -1);
  ASSERT_GT(folder->config().sliding_window, 0);
  auto e = Engine::create({.rows = 1, .decode_steps = 4, .max_steps = 8});
  ASSERT_TRUE(e.ok());
  auto info = (*e)->load(dir)->wait();
  ASSERT_TRUE(info.ok()) << info.error().toString();
  EXPECT_EQ(info->context_window, (uint32_t)folder->config().sliding_window);
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  for (const std::string& p : std::vector<std::string>{"a", "abc", "abcde", std::string(28, 'x') + "yz", std::string(300, 'q')}) {
    auto h = (*e)->complete(greedy(p, 6));
    ASSERT_TRUE(h.ok()) << h.error().toString();
    const CompletionResult& r = (*h)->wait();
    ASSERT_EQ(r.outcome, Outcome::kCompleted) << p.size() << ": " << (r.error ? r.error->toString() : "");
    std::vector<int32_t> want = referenceGreedy(dir, tok->encode(p), 6, {});
    std::vector<int32_t> got = ids(r);
    ASSERT_LE(got.size(), want.size());
    EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + got.size())) << "prompt of " << p.size();
  }
}

}  // namespace
}  // namespace ewgpu

namespace ewgpu {
namespace {

// probe, canRun, recommendModels and estimateSpeed through the engine (they need the adapter).
TEST(EngineOnGpuDevice, ProbeCanRunRecommendAndEstimateSpeed) {
  auto e = Engine::create({.cache_dir = ::testing::TempDir() + "/ewgpu-engine-gpu-cache", .rows = 1});
  ASSERT_TRUE(e.ok());
  auto dev = (*e)->probe();
  ASSERT_TRUE(dev.ok()) << dev.error().toString();
  EXPECT_FALSE(dev->device.empty());
  EXPECT_GT(dev->max_storage_buffer_binding_size, 0u);
  auto fit = (*e)->canRun("Qwen3-0.6B-q4f16_1-MLC");
  ASSERT_TRUE(fit.ok()) << fit.error().toString();
  EXPECT_EQ((*e)->canRun("no-such-model").error().code, ErrorCode::kUnknownModel);
  auto rec = (*e)->recommendModels({.limit = 3});
  ASSERT_TRUE(rec.ok()) << rec.error().toString();
  EXPECT_LE(rec->size(), 3u);
  // Before anything decoded: projected from the weight bytes; after: measured.
  auto projected = (*e)->estimateSpeed("Llama-3.2-1B-Instruct-q4f16_1-MLC");
  ASSERT_TRUE(projected.ok()) << projected.error().toString();
  EXPECT_EQ(projected->source, "projected");
  EXPECT_GT(projected->tok_s, 0);
  ASSERT_TRUE((*e)->load(fixture("llama"), {.id = "llama-tiny"})->wait().ok());
  auto before = (*e)->estimateSpeed("llama-tiny");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->source, "projected");
  ASSERT_EQ((*e)->complete(greedy("Hello there", 8)).value()->wait().outcome, Outcome::kCompleted);
  auto after = (*e)->estimateSpeed();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->source, "measured");
  EXPECT_GT(after->tok_s, 0);
  EXPECT_FALSE((*e)->tokenText("llama-tiny", 65).empty());
}

}  // namespace
}  // namespace ewgpu
