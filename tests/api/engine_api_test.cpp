// The public Engine with a fake backend (EngineOptions::backend_factory): no GPU, real threads. Model folders
// are parsed for real (the qwen3_5 tiny fixture's config, tokenizer and template).
#include "api/prepare.h"
#include "ewgpu/engine.h"
#include "fake_backend.h"
#include "model/model_folder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

namespace ewgpu {
namespace {

using json = nlohmann::json;

std::string fixture() { return std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/qwen3_5_tiny/q4f16_1"; }

std::unique_ptr<Engine> fakeEngine(uint32_t rows = 2, uint32_t context = 4096, double share = 0.5) {
  EngineOptions o;
  o.rows = rows;
  o.task_share = share;
  o.cache_dir = ::testing::TempDir() + "/ewgpu-api-cache";
  o.backend_factory = [rows, context](const std::string&, const ModelConfig&, const Tokenizer&)
      -> Result<std::unique_ptr<RowBackend>> { return std::unique_ptr<RowBackend>(new test::FakeBackend(rows, context)); };
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok());
  return std::move(*e);
}

std::unique_ptr<Engine> loadedEngine(uint32_t rows = 2, uint32_t context = 4096, double share = 0.5) {
  auto e = fakeEngine(rows, context, share);
  const auto& info = e->load(fixture(), {.id = "tiny"})->wait();
  EXPECT_TRUE(info.ok()) << info.error().toString();
  return e;
}

CompletionRequest user(const std::string& text, uint32_t max_tokens = 4) {
  CompletionRequest r;
  r.messages = {{"user", text}};
  r.max_tokens = max_tokens;
  return r;
}

const CompletionResult& waitOrFail(const CompletionHandle& h) {
  const CompletionResult* r = h->result->waitFor(20000);
  if (!r) {
    ADD_FAILURE() << "job " << h->id << " did not end within 20 s";
    std::abort();
  }
  return *r;
}

TEST(EngineApi, LoadsAFolderAndCompletesWithStreaming) {
  auto e = fakeEngine();
  auto loaded = e->load(fixture(), {.id = "tiny", .keep_resident = true})->wait();
  ASSERT_TRUE(loaded.ok()) << loaded.error().toString();
  EXPECT_EQ(loaded->id, "tiny");
  EXPECT_EQ(loaded->model_type, "qwen3_5");
  EXPECT_EQ(e->resident(), std::vector<std::string>{"tiny"});
  EXPECT_EQ(e->current(), "tiny");
  std::string streamed;
  std::mutex mu;
  auto h = e->complete(user("Hello", 5), [&](const Chunk& c) {
    std::lock_guard<std::mutex> lk(mu);
    streamed += c.delta;
  });
  ASSERT_TRUE(h.ok()) << h.error().toString();
  const CompletionResult& r = waitOrFail(*h);
  EXPECT_EQ(r.outcome, Outcome::kCompleted);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.text, "0 1 2 3 4 ");
  EXPECT_EQ(streamed, r.text);  // every chunk was delivered before the result
  EXPECT_EQ(r.usage.completion_tokens, 5u);
  EXPECT_GT(r.usage.prompt_tokens, 5u);  // the template's tokens around "Hello"
  EXPECT_GT(r.started_at_ms, 0);
  EXPECT_GE(r.finished_at_ms, r.started_at_ms);
  EXPECT_EQ(r.model, "tiny");
}

// Progress callbacks run on the callback thread; the handle completes only after the last of them (a slow
// callback widens the window the server's streamed load once lost its progress frames in).
TEST(EngineApi, EveryProgressCallbackRunsBeforeTheLoadCompletes) {
  auto e = fakeEngine();
  std::mutex mu;
  std::vector<std::string> stages;
  LoadOptions lo;
  lo.id = "tiny";
  lo.progress = [&](const LoadProgress& p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lk(mu);
    stages.push_back(p.stage);
  };
  ASSERT_TRUE(e->load(fixture(), lo)->wait().ok());
  {
    std::lock_guard<std::mutex> lk(mu);
    ASSERT_GE(stages.size(), 3u);
    EXPECT_EQ(stages.front(), "resolve");
    EXPECT_EQ(stages.back(), "ready");
    stages.clear();
  }
  lo.id = "broken";
  EXPECT_FALSE(e->load("/no/such/dir", lo)->wait().ok());
  std::lock_guard<std::mutex> lk(mu);
  EXPECT_EQ(stages, std::vector<std::string>{"resolve"});
}

TEST(EngineApi, ErrorsAreTypedAndNameTheField) {
  auto e = fakeEngine();
  auto none = e->complete(user("hi"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNoModel);
  auto missing = e->load("/no/such/dir")->wait();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kIo);
  EXPECT_NE(missing.error().message.find("no such model folder"), std::string::npos);
  ASSERT_TRUE(e->load(fixture(), {.id = "tiny"})->wait().ok());

  CompletionRequest other = user("hi");
  other.model = "elsewhere";
  auto unknown = e->complete(other);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnknownModel);
  EXPECT_EQ(unknown.error().detail["field"], "model");

  CompletionRequest both = user("hi");
  both.prompt = "raw";
  EXPECT_EQ(e->complete(both).error().detail["field"], "prompt");
  CompletionRequest empty;
  EXPECT_EQ(e->complete(empty).error().detail["field"], "messages");
  CompletionRequest role = user("hi");
  role.messages[0].role = "wizard";
  EXPECT_EQ(e->complete(role).error().detail["field"], "messages[0].role");
  CompletionRequest temp = user("hi");
  temp.temperature = -1;
  EXPECT_EQ(e->complete(temp).error().code, ErrorCode::kBadRequest);
  CompletionRequest zero = user("hi");
  zero.max_tokens = 0;
  EXPECT_EQ(e->complete(zero).error().detail["field"], "max_tokens");
  CompletionRequest bias = user("hi");
  bias.logit_bias = {{999999, 1.0f}};
  EXPECT_EQ(e->complete(bias).error().code, ErrorCode::kBadRequest);
  CompletionRequest stop = user("hi");
  stop.stop = {""};
  EXPECT_EQ(e->complete(stop).error().detail["field"], "stop");
}

TEST(EngineApi, APromptOverTheContextWindowIsContextTooLong) {
  auto e = loadedEngine(2, /*context=*/64);
  auto r = e->complete(user(std::string(300, 'a')));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kContextTooLong);
  EXPECT_EQ(r.error().detail["context_window"], 64);
  // max_tokens past the window is clamped, not an error: the job ends with "length" at the window.
  CompletionRequest raw;
  raw.prompt = "a";
  raw.max_tokens = 100000;
  auto ok = e->complete(raw);
  ASSERT_TRUE(ok.ok()) << ok.error().toString();
  const auto& res = waitOrFail(*ok);
  EXPECT_EQ(res.finish_reason, "length");
  EXPECT_EQ(res.usage.prompt_tokens + res.usage.completion_tokens, 64u);
}

TEST(EngineApi, CallbacksMayCallBackIntoTheEngine) {
  auto e = loadedEngine();
  std::atomic<int> chunks{0};
  std::atomic<bool> fired{false};
  auto follow = std::make_shared<Pending<uint64_t>>();
  // A subscriber that submits a new job from inside the callback of the first job's end.
  auto unsubscribe = e->subscribe([&e, &fired, follow](const EngineEvent& ev) {
    if (ev.type != "job.finished" || fired.exchange(true)) return;
    auto next = e->complete(user("second", 2));
    follow->set(next.ok() ? (*next)->id : 0);
  });
  auto h = e->complete(user("first", 3), [&](const Chunk&) {
    ++chunks;
    (void)e->state();  // the engine's locks are not held here
    (void)e->features();
    EXPECT_EQ(e->cancel("no-such-session"), 0u);
  });
  ASSERT_TRUE(h.ok());
  waitOrFail(*h);
  const uint64_t* next = follow->waitFor(10000);
  ASSERT_NE(next, nullptr);
  EXPECT_GT(*next, (*h)->id);
  EXPECT_EQ(chunks.load(), 3);
  unsubscribe();
}

TEST(EngineApi, ManyThreadsSubmittingAtOnceLoseNothing) {
  auto e = loadedEngine(4);
  constexpr int kThreads = 8, kPerThread = 40;
  std::mutex mu;
  std::map<uint64_t, int> done;
  std::vector<CompletionHandle> handles;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kPerThread; ++i) {
        CompletionRequest r = user("t" + std::to_string(t) + " i" + std::to_string(i), 1 + rng() % 6);
        r.priority = (Priority)(rng() % 3);
        if (rng() % 4 == 0) r.session = "s" + std::to_string(rng() % 3);
        r.preemptible = rng() % 3 == 0;
        auto h = e->complete(r);
        ASSERT_TRUE(h.ok()) << h.error().toString();
        std::lock_guard<std::mutex> lk(mu);
        handles.push_back(*h);
        if (rng() % 10 == 0) e->cancel((*h)->id);
      }
    });
  for (auto& t : ts) t.join();
  ASSERT_EQ(handles.size(), (size_t)kThreads * kPerThread);
  std::map<Outcome, int> outcomes;
  std::set<uint64_t> ids;
  for (const auto& h : handles) {
    const CompletionResult& r = waitOrFail(h);
    EXPECT_EQ(r.id, h->id);
    ids.insert(r.id);
    ++outcomes[r.outcome];
    if (r.outcome == Outcome::kCompleted) { EXPECT_FALSE(r.text.empty()); }
    EXPECT_NE(r.outcome, Outcome::kFailed) << r.error->toString();
  }
  EXPECT_EQ(ids.size(), handles.size());  // no duplicate ids, one result each
  EngineState st = e->state();
  EXPECT_EQ(st.completed + st.cancelled + st.preempted + st.superseded + st.failed, handles.size());
  EXPECT_EQ(st.running, 0u);
  EXPECT_EQ(st.queued[0] + st.queued[1] + st.queued[2], 0u);
  EXPECT_EQ((uint64_t)outcomes[Outcome::kCompleted], st.completed);
}

TEST(EngineApi, ABatchIsOneTaskWithResultsInOrder) {
  auto e = loadedEngine(4, 4096, 0.5);
  std::vector<CompletionRequest> reqs;
  for (int i = 0; i < 10; ++i) reqs.push_back(user("item " + std::to_string(i), 2 + i % 3));
  std::atomic<int> items{0};
  auto b = e->batch(reqs, [&](const CompletionResult&) { ++items; });
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->ids.size(), 10u);
  const auto* results = (*b)->results->waitFor(20000);
  ASSERT_NE(results, nullptr);
  ASSERT_EQ(results->size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ((*results)[i].index, i);
    EXPECT_EQ((*results)[i].outcome, Outcome::kCompleted);
    EXPECT_LE((*results)[i].started_at_ms, (*results)[i].finished_at_ms);
  }
  EXPECT_EQ(items.load(), 10);
  std::vector<CompletionRequest> bad = {user("ok"), user("")};
  bad[1].messages.clear();
  auto rejected = e->batch(bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().detail["index"], 1);
}

TEST(EngineApi, SupersessionAndCancelThroughTheApi) {
  auto e = loadedEngine(1);
  CompletionRequest a = user("a", 100000);
  a.session = "ghost";
  auto ha = e->complete(a);
  ASSERT_TRUE(ha.ok());
  CompletionRequest b = user("b", 3);
  b.session = "ghost";
  auto hb = e->complete(b);
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ(waitOrFail(*ha).outcome, Outcome::kSuperseded);
  EXPECT_EQ(waitOrFail(*hb).outcome, Outcome::kCompleted);
  auto hc = e->complete(user("c", 100000));
  ASSERT_TRUE(hc.ok());
  EXPECT_EQ(e->cancel("job-" + std::to_string((*hc)->id)), 1u);
  EXPECT_EQ(waitOrFail(*hc).outcome, Outcome::kCancelled);
}

// A superseding submit finishes the older job on the caller's thread while the driver may be between a step and
// handing that step's token chunks over: the finish chunk must still come last (the server's SSE stream ends with
// it). The window is narrow, so four threads repeat it on their own sessions; CI's nginx test first caught the
// reorder through the proxy.
TEST(EngineApi, ASupersededStreamEndsWithItsFinishChunk) {
  auto e = loadedEngine(4);
  const json msgs = {{{"role", "user"}, {"content", "hi"}}};
  std::atomic<int> bad{0};
  std::string first_bad;
  std::mutex bad_mu;
  auto run = [&](int t) {
    const std::string session = "s" + std::to_string(t);
    for (int i = 0; i < 500 && bad.load() == 0; ++i) {
      std::mutex mu;
      std::vector<json> chunks;
      std::atomic<int> contents{0};
      auto a = e->chat.completions.create(
          {{"messages", msgs}, {"max_tokens", 100000}, {"stream", true}, {"session", session}}, [&](const json& c) {
            std::lock_guard<std::mutex> lk(mu);
            chunks.push_back(c);
            if (c["choices"][0]["delta"].contains("content")) contents++;
          });
      ASSERT_TRUE(a.ok()) << a.error().toString();
      while (contents.load() < 1 + i % 3) std::this_thread::yield();  // supersede while it streams
      auto b = e->chat.completions.create({{"messages", msgs}, {"max_tokens", 1}, {"session", session}});
      ASSERT_TRUE(b.ok()) << b.error().toString();
      const json* ra = (*a)->response->waitFor(20000);
      ASSERT_NE(ra, nullptr);
      // b ends on a later driver step, whose callbacks are queued after everything a's job handed over.
      ASSERT_NE((*b)->response->waitFor(20000), nullptr);
      std::lock_guard<std::mutex> lk(mu);
      std::string text;
      for (const auto& c : chunks)
        if (c["choices"][0]["delta"].contains("content")) text += c["choices"][0]["delta"]["content"].get<std::string>();
      const bool ok = !chunks.empty() && chunks.back().value("ewgpu", json::object()).value("outcome", "") == "superseded" &&
                      chunks.back()["choices"][0]["finish_reason"] == "abort" &&
                      text == (*ra)["choices"][0]["message"]["content"];
      if (!ok && bad++ == 0) {
        std::lock_guard<std::mutex> bl(bad_mu);
        first_bad = session + " iteration " + std::to_string(i) + ": last chunk " + (chunks.empty() ? "none" : chunks.back().dump());
      }
    }
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back(run, t);
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0) << first_bad;
}

TEST(EngineApi, ConfigureIsLiveAndValidated) {
  auto e = loadedEngine(4);
  ASSERT_TRUE(e->configure({.decode_steps = 4u, .rows = 2u, .task_share = 1.0}).ok());
  Features f = e->features();
  EXPECT_EQ(f.decode_steps, 4u);
  EXPECT_EQ(f.rows, 2u);
  EXPECT_EQ(f.max_rows, 4u);
  EXPECT_TRUE(f.kv_reuse);  // the executor reuses prefixes (docs/prefix-reuse.md)
  auto bad = e->configure({.rows = 5u});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().detail["field"], "rows");
  EXPECT_EQ(e->configure({.decode_steps = 999u}).error().detail["field"], "decodeSteps");
}

TEST(EngineApi, SubscribersSeeTheLifecycleUntilTheyUnsubscribe) {
  auto e = fakeEngine();
  std::mutex mu;
  std::vector<std::string> types;
  auto unsubscribe = e->subscribe([&](const EngineEvent& ev) {
    std::lock_guard<std::mutex> lk(mu);
    types.push_back(ev.type);
  });
  ASSERT_TRUE(e->load(fixture(), {.id = "tiny"})->wait().ok());
  waitOrFail(*e->complete(user("x", 2)));
  auto has = [&](const std::string& t) {
    std::lock_guard<std::mutex> lk(mu);
    return std::find(types.begin(), types.end(), t) != types.end();
  };
  for (int i = 0; i < 200 && !has("job.finished"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (const char* t : {"model.loading", "model.progress", "model.ready", "job.queued", "job.started", "job.finished"})
    EXPECT_TRUE(has(t)) << t;
  unsubscribe();
  size_t before;
  {
    std::lock_guard<std::mutex> lk(mu);
    before = types.size();
  }
  waitOrFail(*e->complete(user("y", 2)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::lock_guard<std::mutex> lk(mu);
  EXPECT_EQ(types.size(), before);
}

TEST(EngineApi, UnloadCancelsTheModelsJobs) {
  auto e = loadedEngine(1);
  auto h = e->complete(user("long", 100000));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(e->unload().ok());
  EXPECT_TRUE(e->resident().empty());  // at once: only the GPU objects wait for the driver thread
  EXPECT_EQ(e->complete(user("after", 2)).error().code, ErrorCode::kNoModel);
  EXPECT_EQ(waitOrFail(*h).outcome, Outcome::kCancelled);
  EXPECT_EQ(e->unload("tiny").error().code, ErrorCode::kUnknownModel);
  // And it loads again.
  ASSERT_TRUE(e->load(fixture(), {.id = "tiny"})->wait().ok());
  EXPECT_EQ(waitOrFail(*e->complete(user("again", 2))).outcome, Outcome::kCompleted);
}

// Unload and load the same id again at once, while the old model's job still runs: the old job ends cancelled, the
// new model serves, and nothing of the old one's scheduling state is left under the id.
TEST(EngineApi, UnloadThenLoadTheSameIdAtOnce) {
  auto e = loadedEngine(1);
  auto h = e->complete(user("long", 100000));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(e->unload("tiny").ok());
  auto again = e->load(fixture(), {.id = "tiny"});
  EXPECT_EQ(waitOrFail(*h).outcome, Outcome::kCancelled);
  ASSERT_TRUE(again->wait().ok()) << again->wait().error().toString();
  EXPECT_EQ(e->resident(), std::vector<std::string>{"tiny"});
  EXPECT_EQ(waitOrFail(*e->complete(user("again", 2))).outcome, Outcome::kCompleted);
  EXPECT_EQ(e->state().models.size(), 1u);
}

TEST(EngineApi, ALoadReplacesIdleModelsUnlessKeptResident) {
  auto e = fakeEngine();
  ASSERT_TRUE(e->load(fixture(), {.id = "a", .keep_resident = true})->wait().ok());
  ASSERT_TRUE(e->load(fixture(), {.id = "b"})->wait().ok());
  ASSERT_TRUE(e->load(fixture(), {.id = "c"})->wait().ok());
  EXPECT_EQ(e->resident(), (std::vector<std::string>{"a", "c"}));
  ASSERT_TRUE(e->use("c").ok());
  EXPECT_EQ(e->current(), "c");
  EXPECT_EQ(e->use("zzz").error().code, ErrorCode::kUnknownModel);
}

TEST(EngineApi, ChatCompletionsCreateSpeaksOpenAIsShapes) {
  auto e = loadedEngine();
  auto h = e->chat.completions.create({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 3}});
  ASSERT_TRUE(h.ok()) << h.error().toString();
  const json* resp = (*h)->response->waitFor(20000);
  ASSERT_NE(resp, nullptr);
  EXPECT_EQ((*resp)["object"], "chat.completion");
  EXPECT_EQ((*resp)["id"], (*h)->completion_id);
  EXPECT_EQ((*resp)["model"], "tiny");
  EXPECT_EQ((*resp)["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ((*resp)["choices"][0]["message"]["content"], "0 1 2 ");
  EXPECT_EQ((*resp)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ((*resp)["usage"]["completion_tokens"], 3);
  EXPECT_EQ((*resp)["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ((*resp)["ewgpu"]["outcome"], "completed");

  std::mutex mu;
  std::vector<json> chunks;
  auto s = e->chat.completions.create(
      {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 3}, {"stream", true},
       {"stream_options", {{"include_usage", true}}}, {"logprobs", true}, {"top_logprobs", 2}},
      [&](const json& c) {
        std::lock_guard<std::mutex> lk(mu);
        chunks.push_back(c);
      });
  ASSERT_TRUE(s.ok()) << s.error().toString();
  ASSERT_NE((*s)->response->waitFor(20000), nullptr);
  std::lock_guard<std::mutex> lk(mu);
  ASSERT_GE(chunks.size(), 5u);  // role, 3 pieces, finish, usage
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 2 < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["id"], chunks.front()["id"]);
    EXPECT_EQ(chunks[i]["created"], chunks.front()["created"]);
    EXPECT_EQ(chunks[i]["object"], "chat.completion.chunk");
    EXPECT_TRUE(chunks[i]["choices"][0]["finish_reason"].is_null());
    if (chunks[i]["choices"][0]["delta"].contains("content"))
      text += chunks[i]["choices"][0]["delta"]["content"].get<std::string>();
    if (i > 0) { EXPECT_EQ(chunks[i]["choices"][0]["logprobs"]["content"].size(), 1u); }
  }
  EXPECT_EQ(text, "0 1 2 ");
  const json& fin = chunks[chunks.size() - 2];
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(fin["ewgpu"]["outcome"], "completed");
  const json& usage = chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
}

TEST(EngineApi, ChatCompletionsRejectsBadRequestsNamingTheField) {
  auto e = loadedEngine();
  const json msgs = {{{"role", "user"}, {"content", "Hi"}}};
  struct Case {
    json body;
    ErrorCode code;
    std::string field;
  };
  std::vector<Case> cases = {
      {json::array(), ErrorCode::kBadRequest, "body"},
      {{{"model", "tiny"}}, ErrorCode::kBadRequest, "messages"},
      {{{"messages", "hi"}}, ErrorCode::kBadRequest, "messages"},
      {{{"messages", {{{"role", "bot"}, {"content", "x"}}}}}, ErrorCode::kBadRequest, "messages[0].role"},
      {{{"messages", {{{"role", "user"}}}}}, ErrorCode::kBadRequest, "messages[0].content"},
      {{{"messages", msgs}, {"temperature", "hot"}}, ErrorCode::kBadRequest, "temperature"},
      {{{"messages", msgs}, {"temperature", 3}}, ErrorCode::kBadRequest, "temperature"},
      {{{"messages", msgs}, {"max_tokens", -1}}, ErrorCode::kBadRequest, "max_tokens"},
      {{{"messages", msgs}, {"max_tokens", 1.5}}, ErrorCode::kBadRequest, "max_tokens"},
      {{{"messages", msgs}, {"top_p", 0}}, ErrorCode::kBadRequest, "top_p"},
      {{{"messages", msgs}, {"stop", {1, 2}}}, ErrorCode::kBadRequest, "stop"},
      {{{"messages", msgs}, {"logit_bias", {{"abc", 1}}}}, ErrorCode::kBadRequest, "logit_bias"},
      {{{"messages", msgs}, {"logit_bias", {{"5", 500}}}}, ErrorCode::kBadRequest, "logit_bias"},
      {{{"messages", msgs}, {"top_logprobs", 3}}, ErrorCode::kBadRequest, "top_logprobs"},
      {{{"messages", msgs}, {"frobnicate", true}}, ErrorCode::kBadRequest, "frobnicate"},
      {{{"messages", msgs}, {"priority", "urgent"}}, ErrorCode::kBadRequest, "priority"},
      {{{"messages", msgs}, {"n", 2}}, ErrorCode::kUnsupported, "n"},
      {{{"messages", msgs}, {"response_format", {{"type", "grammar"}}}}, ErrorCode::kUnsupported, "response_format.type"},
      {{{"messages", msgs}, {"response_format", {{"type", "json"}}}}, ErrorCode::kBadRequest, "response_format.type"},
      {{{"messages", msgs}, {"response_format", {{"type", "json_schema"}}}}, ErrorCode::kBadRequest,
       "response_format.json_schema"},
      {{{"messages", msgs}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", json::object()}}}}}},
       ErrorCode::kBadRequest, "response_format.json_schema.name"},
      {{{"messages", msgs},
        {"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"name", "n"}, {"schema", {{"type", "string"}, {"pattern", "a+"}}}}}}}},
       ErrorCode::kBadRequest, "response_format.json_schema.schema"},
      {{{"messages", msgs}, {"response_format", {{"type", "json_object"}, {"schema", "{not json"}}}},
       ErrorCode::kBadRequest, "response_format.schema"},
      {{{"messages", msgs}, {"tools", {{{"type", "function"}}}}}, ErrorCode::kUnsupported, "tools"},
      {{{"messages", msgs}, {"model", "nope"}}, ErrorCode::kUnknownModel, "model"},
  };
  for (const auto& c : cases) {
    auto r = e->chat.completions.create(c.body);
    ASSERT_FALSE(r.ok()) << c.body.dump();
    EXPECT_EQ(r.error().code, c.code) << c.body.dump() << " -> " << r.error().toString();
    EXPECT_EQ(r.error().detail.value("field", ""), c.field) << c.body.dump() << " -> " << r.error().toString();
  }
  // Completions (raw prompt) too.
  EXPECT_EQ(e->createCompletion({{"prompt", 5}}).error().detail["field"], "prompt");
  auto ok = e->createCompletion({{"prompt", "Once"}, {"max_tokens", 2}});
  ASSERT_TRUE(ok.ok());
  const json* resp = (*ok)->response->waitFor(20000);
  ASSERT_NE(resp, nullptr);
  EXPECT_EQ((*resp)["object"], "text_completion");
  EXPECT_EQ((*resp)["choices"][0]["text"], "0 1 ");
}

// Mutated request bodies: every call returns a value or a typed error, never throws, and what it accepts ends.
TEST(EngineApi, NoUntypedExceptionEscapesTheApi) {
  auto e = loadedEngine(2, 256);
  const json base = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}, {"temperature", 0.5},
                     {"stop", {"x"}}, {"seed", 3}, {"stream", false}, {"logit_bias", {{"7", 1}}}};
  const std::vector<json> values = {nullptr, true, -1, 0, 1e300, -1e300, "", "\xff\xfe", json::array(),
                                    json::object(), {{"a", 1}}, {1, "two"}, 4294967296ll, 0.5, "user"};
  std::mt19937 rng(1);
  std::vector<ChatCompletionHandle> accepted;
  std::set<std::string> codes;
  for (int i = 0; i < 3000; ++i) {
    json b = base;
    const int edits = 1 + rng() % 3;
    for (int k = 0; k < edits; ++k) {
      const std::vector<std::string> keys = {"messages", "max_tokens", "temperature", "stop", "seed", "stream",
                                             "logit_bias", "top_p", "n", "priority", "session", "zzz"};
      const std::string key = keys[rng() % keys.size()];
      if (rng() % 5 == 0) b.erase(key);
      else if (key == "messages" && rng() % 2 && b[key].is_array() && !b[key].empty() && b[key][0].is_object())
        b[key][0]["content"] = values[rng() % values.size()];
      else b[key] = values[rng() % values.size()];
    }
    Result<ChatCompletionHandle> r = makeError(ErrorCode::kInternal, "unset");
    EXPECT_NO_THROW(r = (i % 2 ? e->chat.completions.create(b) : e->createCompletion(b))) << b.dump();
    if (r.ok()) accepted.push_back(*r);
    else {
      codes.insert(std::string(errorCodeName(r.error().code)));
      EXPECT_NE(r.error().code, ErrorCode::kInternal) << b.dump() << " " << r.error().toString();
    }
  }
  for (const auto& h : accepted) ASSERT_NE(h->response->waitFor(20000), nullptr);
  EXPECT_TRUE(codes.count("BAD_REQUEST"));
}

// A chat's system message marks where a hybrid model snapshots its state for prefix reuse: the request's
// shared_prefix is the system message's own render, a prefix of the whole prompt; none without a system message
// followed by other messages.
TEST(EngineApi, AChatsSystemMessageIsItsSharedPrefix) {
  auto folder = ModelFolder::open(fixture());
  ASSERT_TRUE(folder.ok()) << folder.error().toString();
  auto assets = loadModelAssets("tiny", fixture(), *folder);
  ASSERT_TRUE(assets.ok()) << assets.error().toString();
  ModelAssets& a = **assets;
  a.context = 1024;  // the host sets it from the loaded forward
  CompletionRequest r;
  r.messages = {{"system", "You are a careful assistant who answers every question about the weather in verse."},
                {"user", "Will it rain tomorrow?"}};
  auto j = prepareJob(a, r, {});
  ASSERT_TRUE(j.ok()) << j.error().toString();
  auto sys = a.conv->renderTokens(a.tokenizer, std::span<const ChatMessage>(r.messages.data(), 1));
  ASSERT_TRUE(sys.ok());
  const uint32_t n = j->row.shared_prefix;
  EXPECT_GE(n, 16u);
  EXPECT_LE(n, sys->size());
  EXPECT_LT(n, j->row.prompt.size());
  EXPECT_TRUE(std::equal(sys->begin(), sys->begin() + n, j->row.prompt.begin()));
  // The same system message with another user turn: the same shared prefix.
  r.messages[1].content = "And the day after?";
  EXPECT_EQ(prepareJob(a, r, {})->row.shared_prefix, n);
  r.messages = {{"user", "Will it rain tomorrow?"}};
  EXPECT_EQ(prepareJob(a, r, {})->row.shared_prefix, 0u);
  r.messages = {{"system", "Hi."}};  // nothing after it to share it with
  EXPECT_EQ(prepareJob(a, r, {})->row.shared_prefix, 0u);
}

}  // namespace
}  // namespace ewgpu
