// The Generator state machine end to end on the tiny transformers fixtures (tests/fixtures/<arch>_tiny/q4f16_1,
// their 256-token byte-level tokenizer.json): greedy decoding is deterministic, so every run is compared with a
// reference run of the same prompt (batch 1, K = 1, pipeline depth 1, driven by runToCompletion). Covered:
// pipeline depth 1/2 × K = 1/4/16 (driven by the non-blocking step() loop, some also by runToCompletion),
// max_tokens that K does not divide, stop token ids, stop strings (streamed text, held-back text, earliest match),
// several sequences in decode rows at once (and more sequences than rows), cancel, requests rejected with
// BAD_REQUEST, slot reuse, and two decode submissions in flight under runToCompletion. Prompts fit one prefill
// chunk and at most 24 tokens are generated to keep SwiftShader runs short.
// Every Generator gets a Forward of its own with fresh slots (pipelines are cached by the context, so this costs
// milliseconds). Two regression tests guard bugs this test found: a reused slot must start from a clean Gated
// DeltaNet state (Forward::recordResetSlot), and rows no sequence occupies must not write the KV cache.
#include "runtime/generator.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime_test_util.h"
#include "tokenizer/tokenizer.h"

namespace ewgpu {
namespace {

using testing::gpuContext;

constexpr uint32_t kCtx = 128;      // positions per slot
constexpr uint32_t kChunk = 32;     // prefill chunk: every prompt below fits one
constexpr uint32_t kMaxSteps = 16;  // K max
constexpr uint32_t kGen = 24;       // tokens of the reference runs
// f32 x in every GEMV: batch-1 int8 activations (the GPU default) would make a batch-1 reference differ from the
// batched rows these tests compare it with. The int8 path's own tests are in forward_test.
constexpr auto kF32 = kernels::Activations::kF32;

struct Model {
  testing::Engine eng;  // folder, weights, and a batch-1 Forward (its creation compiles the pipelines)
  Tokenizer tok;
  int vocab() const { return eng.model->config.vocab; }
  bool recurrent() const { return eng.model->config.arch == Arch::kQwen3_5; }
};

std::string fixtureDir(const std::string& name) { return std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/" + name; }

// One model per fixture, loaded once per process. The GPU context is created before the cache so that it is
// destroyed after it (function-local statics are destroyed in reverse order of construction).
Model& model(const std::string& fixture) {
  gpuContext();
  static std::map<std::string, std::unique_ptr<Model>> cache;
  auto it = cache.find(fixture);
  if (it != cache.end()) return *it->second;
  const std::string dir = fixtureDir(fixture);
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  EXPECT_TRUE(tok.ok()) << tok.error().toString();
  auto m = std::unique_ptr<Model>(new Model{
      testing::loadEngine(
          dir, {.max_batch = 1, .slots = 1, .context = kCtx, .prefill_chunk = kChunk, .max_steps = kMaxSteps,
                .activations = kF32}),
      std::move(*tok)});
  EXPECT_TRUE(m->eng.fwd) << dir;
  return *cache.emplace(fixture, std::move(m)).first->second;
}

// A Forward with fresh slots (zero KV cache and recurrent state) over the model's weights, for one Generator.
std::unique_ptr<Forward> freshForward(Model& m, uint32_t max_batch) {
  auto f = Forward::create(
      gpuContext(), *m.eng.model,
      {.max_batch = max_batch, .slots = max_batch, .context = kCtx, .prefill_chunk = kChunk, .max_steps = kMaxSteps,
       .activations = kF32});
  EXPECT_TRUE(f.ok()) << f.error().toString();
  if (!f.ok()) return nullptr;
  return std::move(*f);
}

// What one sequence produced: the final result, the concatenation of its on_text deltas, on_done calls.
struct Outcome {
  GenerationResult res;
  std::string streamed;
  int done_calls = 0;
};

GenerationCallbacks callbacks(Outcome& r) {
  return {[&r](const std::string& delta) { r.streamed += delta; },
          [&r](const GenerationResult& g) {
            r.res = g;
            ++r.done_calls;
          }};
}

GenerationRequest greedy(const std::vector<int32_t>& prompt, uint32_t max_tokens) {
  GenerationRequest req;
  req.prompt = prompt;
  req.sampling.temperature = 0;
  req.sampling.max_tokens = max_tokens;
  return req;
}

enum class Drive { kWait, kPoll };

const char* driveName(Drive d) { return d == Drive::kWait ? "runToCompletion" : "step() loop"; }

// Drives the generator until idle. kWait: runToCompletion(). kPoll: step() without blocking, as a browser event
// loop would; returns the most submissions seen in flight (submissions - readbacks: the prompts here fit one
// prefill chunk, so every submission has a readback). `each` runs after every step() (cancel, late submits).
uint64_t drive(Generator& gen, Drive how, const std::function<void()>& each = nullptr) {
  if (how == Drive::kWait) {
    Status s = gen.runToCompletion();
    EXPECT_TRUE(s.ok()) << s.error().toString();
    return 0;
  }
  uint64_t most = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (gen.step()) {
    most = std::max<uint64_t>(most, gen.stats().submissions - gen.stats().readbacks);
    if (each) each();
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(120)) {
      ADD_FAILURE() << "the generator did not become idle in 120 s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // leave the CPU to SwiftShader
  }
  return most;
}

// The text the generator shows for `ids` when it stops there without flushing (a stop token or string): the
// streaming detokenizer's pushes; an incomplete UTF-8 tail is not shown.
std::string streamedText(const Tokenizer& tok, std::span<const int32_t> ids) {
  StreamingDetokenizer d(tok);
  std::string s;
  for (int32_t id : ids) s += d.push(id);
  return s;
}

std::vector<int32_t> head(const std::vector<int32_t>& v, size_t n) {
  return {v.begin(), v.begin() + (ptrdiff_t)std::min(n, v.size())};
}

bool isPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The greedy reference of a prompt: kGen tokens, batch 1, K = 1, pipeline depth 1, fresh slots.
const Outcome& reference(const std::string& fixture, const std::vector<int32_t>& prompt) {
  Model& m = model(fixture);
  static std::map<std::pair<std::string, std::vector<int32_t>>, Outcome> cache;
  auto key = std::make_pair(fixture, prompt);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto fwd = freshForward(m, 1);
  static const Outcome kNoForward;
  if (!fwd) return kNoForward;  // freshForward reported why; the callers' comparisons fail instead of crashing
  Generator gen(gpuContext(), *fwd, &m.tok, 1);
  EXPECT_TRUE(gen.setPipelineDepth(1).ok());
  Outcome r;
  auto id = gen.submit(greedy(prompt, kGen), callbacks(r));
  EXPECT_TRUE(id.ok()) << id.error().toString();
  drive(gen, Drive::kWait);
  EXPECT_EQ(r.done_calls, 1);
  EXPECT_EQ(r.res.finish_reason, "length");
  EXPECT_EQ(r.res.tokens.size(), kGen);
  EXPECT_EQ(r.res.completion_tokens, kGen);
  EXPECT_EQ(r.streamed, r.res.text);
  EXPECT_EQ(r.res.text, m.tok.decode(r.res.tokens)) << "streamed text of the whole run equals decode(ids)";
  for (int32_t t : r.res.tokens) EXPECT_TRUE(t >= 0 && t < m.vocab()) << t;
  return cache.emplace(key, std::move(r)).first->second;
}

const char* const kPrompts[] = {"Hello, world", "The quick brown fox", "1 2 3 4 5 6",
                                "WebGPU!",      "abcabcabc",           "tiny model, q4"};

class GeneratorTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string fx() const { return GetParam(); }
  std::vector<int32_t> prompt(int i) {
    auto p = model(fx()).tok.encode(kPrompts[i]);
    EXPECT_TRUE(!p.empty() && p.size() <= kChunk);
    return p;
  }
  // Checks a finished run against the first n tokens of its reference (finish "length").
  void expectLengthPrefix(const Outcome& r, const Outcome& ref, uint32_t n) {
    const Tokenizer& tok = model(fx()).tok;
    EXPECT_EQ(r.done_calls, 1);
    EXPECT_EQ(r.res.finish_reason, "length");
    EXPECT_FALSE(r.res.error.has_value());
    EXPECT_EQ(r.res.tokens, head(ref.res.tokens, n));
    EXPECT_EQ(r.res.completion_tokens, n);
    EXPECT_EQ(r.res.text, tok.decode(head(ref.res.tokens, n)));
    EXPECT_EQ(r.streamed, r.res.text);
  }
};

// 1. Pipeline depth 1 and 2 with K = 1, 4, 16 (step() loop; two of them also under runToCompletion): the
// reference tokens, text and finish. In the step() loop, depth 2 really queues a second decode submission and
// depth 1 never does; depth 1 issues exactly the decode steps needed.
TEST_P(GeneratorTest, PipelineDepthAndStepsGiveTheReferenceTokens) {
  Model& m = model(fx());
  const auto p = prompt(0);
  const Outcome& ref = reference(fx(), p);
  struct Case {
    uint32_t k, depth;
    Drive how;
  };
  std::vector<Case> cases;
  for (uint32_t k : {1u, 4u, 16u})
    for (uint32_t depth : {1u, 2u}) cases.push_back({k, depth, Drive::kPoll});
  cases.push_back({4, 1, Drive::kWait});
  cases.push_back({16, 2, Drive::kWait});
  for (const auto& [k, depth, how] : cases) {
    SCOPED_TRACE(::testing::Message() << "K = " << k << ", depth = " << depth << ", " << driveName(how));
    auto fwd = freshForward(m, 1);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, k);
    ASSERT_EQ(gen.steps(), k);
    ASSERT_TRUE(gen.setPipelineDepth(depth).ok());
    Outcome r;
    ASSERT_TRUE(gen.submit(greedy(p, kGen), callbacks(r)).ok());
    const uint64_t most = drive(gen, how);
    EXPECT_TRUE(gen.idle());
    EXPECT_EQ(r.res.tokens, ref.res.tokens);
    EXPECT_EQ(r.res.text, ref.res.text);
    EXPECT_EQ(r.streamed, r.res.text);
    EXPECT_EQ(r.res.finish_reason, ref.res.finish_reason);
    EXPECT_EQ(r.res.completion_tokens, kGen);
    EXPECT_EQ(r.res.prompt_tokens, p.size());
    EXPECT_EQ(r.done_calls, 1);
    EXPECT_FALSE(r.res.error.has_value());
    // The prefill samples the first token; the other kGen - 1 come from decode submissions of at most K steps,
    // and no step runs beyond max_tokens (the last submission is cut to what is left), at either depth.
    const uint64_t needed = kGen - 1;
    const GeneratorStats& st = gen.stats();
    EXPECT_EQ(st.prefill_chunks, 1u);
    EXPECT_EQ(st.decode_steps, needed);
    EXPECT_EQ(st.submissions, 1u + (needed + k - 1) / k);
    EXPECT_EQ(st.submissions, st.readbacks);
    // Decode submissions in flight never exceed the depth (the first one may queue behind the prefill, whose
    // readback is then in flight too), and depth 2 really queues a second one.
    EXPECT_LE(st.max_decodes_in_flight, depth);
    if (how == Drive::kPoll) { EXPECT_LE(most, depth + 1u); }
    if (depth == 2 && needed > k) { EXPECT_EQ(st.max_decodes_in_flight, 2u) << "no second decode submission was ever queued"; }
  }
}

// 2. max_tokens that K does not divide ends exactly there (the GPU deactivates the row mid-submission).
TEST_P(GeneratorTest, MaxTokensHonouredWhenStepsDoNotDivideIt) {
  Model& m = model(fx());
  const auto p = prompt(1);
  const Outcome& ref = reference(fx(), p);
  for (uint32_t max_tokens : {7u, 1u})
    for (uint32_t k : {4u, 16u})
      for (uint32_t depth : {1u, 2u}) {
        SCOPED_TRACE(::testing::Message() << "max_tokens = " << max_tokens << ", K = " << k << ", depth = " << depth);
        auto fwd = freshForward(m, 1);
        ASSERT_TRUE(fwd);
        Generator gen(gpuContext(), *fwd, &m.tok, k);
        ASSERT_TRUE(gen.setPipelineDepth(depth).ok());
        Outcome r;
        ASSERT_TRUE(gen.submit(greedy(p, max_tokens), callbacks(r)).ok());
        drive(gen, Drive::kPoll);
        expectLengthPrefix(r, ref, max_tokens);
        if (max_tokens == 1) {
          EXPECT_EQ(gen.stats().decode_steps, 0u) << "the prefill's token was the last one";
        }
      }
}

// 3. A stop token id ends the sequence before it: the tokens before it, finish "stop"; the stop token is not
// shown. Also when the stop token is the very first token (sampled by the prefill).
TEST_P(GeneratorTest, StopTokenIdEndsBeforeIt) {
  Model& m = model(fx());
  const auto p = prompt(2);
  const Outcome& ref = reference(fx(), p);
  const auto& want = ref.res.tokens;
  // A position j ≈ 5 whose token does not occur earlier (greedy output of a random model can repeat).
  size_t j = 0;
  for (size_t c : {5, 6, 4, 7, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 2, 1})
    if (std::find(want.begin(), want.begin() + (ptrdiff_t)c, want[c]) == want.begin() + (ptrdiff_t)c) {
      j = c;
      break;
    }
  ASSERT_GT(j, 0u) << "no token of the reference occurs first after position 0";
  struct Case {
    size_t at;
    uint32_t k, depth;
  };
  for (Case c : {Case{j, 1, 1}, Case{j, 4, 2}, Case{j, 16, 2}, Case{j, 16, 1}, Case{0, 4, 2}}) {
    SCOPED_TRACE(::testing::Message() << "stop at " << c.at << ", K = " << c.k << ", depth = " << c.depth);
    auto fwd = freshForward(m, 1);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, c.k);
    ASSERT_TRUE(gen.setPipelineDepth(c.depth).ok());
    GenerationRequest req = greedy(p, kGen);
    req.sampling.stop_token_ids = {want[c.at]};
    Outcome r;
    ASSERT_TRUE(gen.submit(req, callbacks(r)).ok());
    drive(gen, Drive::kPoll);
    EXPECT_EQ(r.done_calls, 1);
    EXPECT_EQ(r.res.finish_reason, "stop");
    EXPECT_EQ(r.res.tokens, head(want, c.at));
    EXPECT_EQ(r.res.text, streamedText(m.tok, head(want, c.at)));
    EXPECT_EQ(r.streamed, r.res.text);
    EXPECT_TRUE(ref.res.text.starts_with(r.res.text));
    EXPECT_FALSE(r.res.error.has_value());
  }
}

// 4. Stop strings: the text is the reference text cut right before the first occurrence, the streamed deltas add
// up to it (text that might begin a stop string is held back, never streamed and then retracted), the tokens end
// with the one that completed the match; the earliest of several stop strings wins; stop strings that never
// occur (even ones whose prefix occurs) change nothing.
TEST_P(GeneratorTest, StopStringsCutTheStreamedText) {
  Model& m = model(fx());
  const auto p = prompt(3);
  const Outcome& ref = reference(fx(), p);
  const std::string& text = ref.res.text;
  // A piece of two characters starting at a character boundary at or after byte `from`.
  auto piece = [&](size_t from) {
    auto boundary = [&](size_t i) {
      while (i < text.size() && ((unsigned char)text[i] & 0xC0) == 0x80) ++i;
      return i;
    };
    size_t a = boundary(from), b = boundary(boundary(a + 1) + 1);
    return text.substr(a, b - a);
  };
  ASSERT_GE(text.size(), 8u) << text;
  const std::string mid = piece(text.size() / 2), early = piece(text.size() / 4);
  ASSERT_FALSE(mid.empty());
  ASSERT_FALSE(early.empty());
  const std::string never = "<never/>";
  ASSERT_EQ(text.find(never), std::string::npos);
  ASSERT_EQ(text.find(mid + never), std::string::npos);

  struct Case {
    std::vector<std::string> stops;
    uint32_t k, depth;
  };
  for (const Case& c : {Case{{mid}, 1, 1}, Case{{mid}, 4, 2}, Case{{mid}, 16, 2}, Case{{mid, early}, 4, 2},
                        Case{{early, mid}, 16, 1}}) {
    SCOPED_TRACE(::testing::Message() << "stops = " << ::testing::PrintToString(c.stops) << ", K = " << c.k
                                      << ", depth = " << c.depth);
    size_t cut = std::string::npos;
    for (const auto& s : c.stops) cut = std::min(cut, text.find(s));
    ASSERT_NE(cut, std::string::npos);
    auto fwd = freshForward(m, 1);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, c.k);
    ASSERT_TRUE(gen.setPipelineDepth(c.depth).ok());
    GenerationRequest req = greedy(p, kGen);
    req.stop_strings = c.stops;
    Outcome r;
    ASSERT_TRUE(gen.submit(req, callbacks(r)).ok());
    drive(gen, Drive::kPoll);
    EXPECT_EQ(r.done_calls, 1);
    EXPECT_EQ(r.res.finish_reason, "stop");
    EXPECT_EQ(r.res.text, text.substr(0, cut));
    EXPECT_EQ(r.streamed, r.res.text);
    // The tokens: a prefix of the reference that ends with the token completing the first match.
    const auto& t = r.res.tokens;
    ASSERT_FALSE(t.empty());
    EXPECT_TRUE(isPrefix(t, ref.res.tokens));
    const std::string all = streamedText(m.tok, t), before = streamedText(m.tok, head(t, t.size() - 1));
    bool matched = false, matched_before = false;
    for (const auto& s : c.stops) {
      matched |= all.find(s) != std::string::npos;
      matched_before |= before.find(s) != std::string::npos;
    }
    EXPECT_TRUE(matched && !matched_before) << "the last token completes the match";
    EXPECT_EQ(r.res.completion_tokens, t.size());
  }
  for (uint32_t k : {1u, 16u}) {
    SCOPED_TRACE(::testing::Message() << "stop strings that never occur, K = " << k);
    auto fwd = freshForward(m, 1);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, k);
    GenerationRequest req = greedy(p, kGen);
    req.stop_strings = {never, mid + never, early + never};
    Outcome r;
    ASSERT_TRUE(gen.submit(req, callbacks(r)).ok());
    drive(gen, Drive::kPoll);
    expectLengthPrefix(r, ref, kGen);
    EXPECT_EQ(r.res.text, text);
  }
}

// 5a. Three sequences in decode rows at once (max_batch 4), each with its own max_tokens: each gets exactly its
// solo batch-1 reference, and the decode submissions are shared (fewer steps than running them one by one).
TEST_P(GeneratorTest, ConcurrentSequencesMatchTheirSoloReferences) {
  Model& m = model(fx());
  const uint32_t max_tokens[3] = {kGen, 17, 9};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<const Outcome*> refs;
  for (int i = 0; i < 3; ++i) {
    prompts.push_back(prompt(i));
    refs.push_back(&reference(fx(), prompts.back()));
  }
  for (const auto& [k, how] :
       {std::pair{4u, Drive::kPoll}, std::pair{16u, Drive::kPoll}, std::pair{4u, Drive::kWait}}) {
    SCOPED_TRACE(::testing::Message() << "K = " << k << ", " << driveName(how));
    auto fwd = freshForward(m, 4);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, k);
    Outcome r[3];
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(gen.submit(greedy(prompts[i], max_tokens[i]), callbacks(r[i])).ok());
    drive(gen, how);
    EXPECT_TRUE(gen.idle());
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(::testing::Message() << "sequence " << i);
      expectLengthPrefix(r[i], *refs[i], max_tokens[i]);
    }
    EXPECT_EQ(gen.stats().prefill_chunks, 3u);
    if (k == 4) {  // one by one: 24 + 16 + 8 decode steps; together about as many as the longest needs
      uint64_t one_by_one = 0;
      for (uint32_t n : max_tokens) one_by_one += (n - 1 + k - 1) / k * k;
      EXPECT_LT(gen.stats().decode_steps, one_by_one) << "the rows did not decode together";
    }
  }
}

// 5b. Six sequences with four decode rows: two wait for a free row (rows and slots are reused after a sequence
// ends); all six complete with their solo references. A seventh submitted while the others run joins too.
TEST_P(GeneratorTest, MoreSequencesThanRowsWaitForAFreeRow) {
  Model& m = model(fx());
  const uint32_t max_tokens[6] = {9, 16, 5, 13, 12, 7};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<const Outcome*> refs;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(prompt(i));
    refs.push_back(&reference(fx(), prompts.back()));
  }
  for (uint32_t k : {4u, 16u}) {
    SCOPED_TRACE(::testing::Message() << "K = " << k);
    auto fwd = freshForward(m, 4);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, k);
    Outcome r[7];
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(gen.submit(greedy(prompts[i], max_tokens[i]), callbacks(r[i])).ok());
    bool late = false;
    drive(gen, Drive::kPoll, [&] {
      if (!late && r[2].done_calls) {  // a row has been freed and the queue is still busy
        late = true;
        ASSERT_TRUE(gen.submit(greedy(prompts[1], 11), callbacks(r[6])).ok());
      }
    });
    EXPECT_TRUE(gen.idle());
    ASSERT_TRUE(late);
    for (int i = 0; i < 7; ++i) {
      SCOPED_TRACE(::testing::Message() << "sequence " << i);
      EXPECT_EQ(r[i].done_calls, 1);
      EXPECT_EQ(r[i].res.finish_reason, "length");
      expectLengthPrefix(r[i], i < 6 ? *refs[i] : *refs[1], i < 6 ? max_tokens[i] : 11);
    }
    EXPECT_EQ(gen.stats().prefill_chunks, 7u);
  }
}

// 6. Cancel: the cancelled sequence ends with "abort" and a prefix of its reference (its text flushed as it
// stands); the other completes with its reference; a sequence submitted afterwards reuses the freed row and gets
// its reference; cancelling a queued sequence aborts it with no tokens; cancel of a finished or unknown id is
// false.
TEST_P(GeneratorTest, CancelAbortsOneSequenceAndLeavesTheOthers) {
  Model& m = model(fx());
  const auto pa = prompt(0), pb = prompt(1), pc = prompt(2);
  const Outcome &ra = reference(fx(), pa), &rb = reference(fx(), pb), &rc = reference(fx(), pc);
  for (uint32_t k : {1u, 4u}) {
    SCOPED_TRACE(::testing::Message() << "K = " << k);
    auto fwd = freshForward(m, 4);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, k);
    Outcome a, b, c;
    auto ida = gen.submit(greedy(pa, kGen), callbacks(a));
    auto idb = gen.submit(greedy(pb, kGen), callbacks(b));
    ASSERT_TRUE(ida.ok() && idb.ok());
    EXPECT_NE(*ida, *idb);
    bool cancelled = false, resubmitted = false;
    uint64_t idc = 0;
    drive(gen, Drive::kPoll, [&] {
      // Cancel once both prefills and two decode submissions have been consumed.
      if (!cancelled && gen.stats().readbacks >= 4) {
        cancelled = true;
        EXPECT_TRUE(gen.cancel(*ida));
      }
      if (cancelled && !resubmitted && a.done_calls) {
        resubmitted = true;
        auto id = gen.submit(greedy(pc, kGen), callbacks(c));
        ASSERT_TRUE(id.ok());
        idc = *id;
      }
    });
    ASSERT_TRUE(cancelled && resubmitted);
    EXPECT_EQ(a.done_calls, 1);
    EXPECT_EQ(a.res.finish_reason, "abort");
    EXPECT_FALSE(a.res.error.has_value());
    EXPECT_FALSE(a.res.tokens.empty());
    EXPECT_LT(a.res.tokens.size(), kGen);
    EXPECT_TRUE(isPrefix(a.res.tokens, ra.res.tokens));
    EXPECT_EQ(a.res.text, m.tok.decode(a.res.tokens));
    EXPECT_EQ(a.streamed, a.res.text);
    expectLengthPrefix(b, rb, kGen);
    EXPECT_EQ(c.res.finish_reason, "length");
    expectLengthPrefix(c, rc, kGen);
    EXPECT_FALSE(gen.cancel(*ida)) << "already finished";
    EXPECT_FALSE(gen.cancel(idc)) << "already finished";
    EXPECT_FALSE(gen.cancel(987654)) << "unknown id";
  }
  // A sequence cancelled before it was ever admitted.
  auto fwd = freshForward(m, 4);
  ASSERT_TRUE(fwd);
  Generator gen(gpuContext(), *fwd, &m.tok, 4);
  Outcome d;
  auto idd = gen.submit(greedy(pa, kGen), callbacks(d));
  ASSERT_TRUE(idd.ok());
  EXPECT_TRUE(gen.cancel(*idd));
  drive(gen, Drive::kPoll);
  EXPECT_EQ(d.done_calls, 1);
  EXPECT_EQ(d.res.finish_reason, "abort");
  EXPECT_TRUE(d.res.tokens.empty());
  EXPECT_EQ(d.res.text, "");
  EXPECT_EQ(gen.stats().submissions, 0u);
}

// 7. Bad requests and settings are BAD_REQUEST errors that leave the generator untouched: it stays idle, and the
// reference prompt and a request at the edge of the context window still run correctly afterwards.
TEST_P(GeneratorTest, BadRequestsAreRejected) {
  Model& m = model(fx());
  const int V = m.vocab();
  const auto p = prompt(4);
  const Outcome& ref = reference(fx(), p);
  auto fwd = freshForward(m, 1);
  ASSERT_TRUE(fwd);
  Generator gen(gpuContext(), *fwd, &m.tok, 4);
  auto expectCode = [&](const GenerationRequest& req, ErrorCode code, const char* what) {
    Outcome r;
    auto id = gen.submit(req, callbacks(r));
    ASSERT_FALSE(id.ok()) << what;
    EXPECT_EQ(id.error().code, code) << what << ": " << id.error().toString();
    EXPECT_EQ(r.done_calls, 0) << what;
  };
  auto expectBad = [&](const GenerationRequest& req, const char* what) { expectCode(req, ErrorCode::kBadRequest, what); };
  expectBad(greedy({}, 4), "empty prompt");
  expectBad(greedy({1, 2, -1, 3}, 4), "token id -1");
  expectBad(greedy({1, 2, V}, 4), "token id == vocab");
  expectBad(greedy({V + 1000}, 4), "token id > vocab");
  expectCode(greedy(std::vector<int32_t>(kCtx, 65), 4), ErrorCode::kContextTooLong, "prompt == context window");
  expectCode(greedy(std::vector<int32_t>(kCtx + 1, 65), 4), ErrorCode::kContextTooLong, "prompt > context window");
  expectBad(greedy(p, 0), "max_tokens 0");
  {
    GenerationRequest req = greedy(p, 4);
    req.sampling.temperature = -1;
    expectBad(req, "temperature -1");
    req = greedy(p, 4);
    req.sampling.stop_token_ids = {V};
    expectBad(req, "stop token id == vocab");
    req = greedy(p, 4);
    req.stop_strings = {"ok", ""};
    expectBad(req, "empty stop string");
  }
  for (uint32_t k : {0u, kMaxSteps + 1}) {
    Status s = gen.setSteps(k);
    ASSERT_FALSE(s.ok()) << "setSteps(" << k << ")";
    EXPECT_EQ(s.error().code, ErrorCode::kBadRequest);
  }
  EXPECT_EQ(gen.steps(), 4u) << "a rejected setSteps keeps the old value";
  for (uint32_t depth : {0u, 3u}) {
    Status s = gen.setPipelineDepth(depth);
    ASSERT_FALSE(s.ok()) << "setPipelineDepth(" << depth << ")";
    EXPECT_EQ(s.error().code, ErrorCode::kBadRequest);
  }
  EXPECT_TRUE(gen.idle());
  EXPECT_FALSE(gen.step()) << "nothing was queued";
  EXPECT_EQ(gen.stats().submissions, 0u);

  // The generator still works after all that.
  Outcome r;
  ASSERT_TRUE(gen.submit(greedy(p, kGen), callbacks(r)).ok());
  drive(gen, Drive::kPoll);
  expectLengthPrefix(r, ref, kGen);
  // The largest prompt that fits (in four prefill chunks): max_tokens is clamped to the one position left.
  Outcome edge;
  ASSERT_TRUE(gen.submit(greedy(std::vector<int32_t>(kCtx - 1, 65), kGen), callbacks(edge)).ok());
  drive(gen, Drive::kWait);
  EXPECT_EQ(edge.done_calls, 1);
  EXPECT_EQ(edge.res.finish_reason, "length");
  EXPECT_EQ(edge.res.tokens.size(), 1u);
  EXPECT_EQ(edge.res.completion_tokens, 1u);
  EXPECT_EQ(edge.res.prompt_tokens, kCtx - 1);
  EXPECT_FALSE(edge.res.error.has_value());
  EXPECT_EQ(gen.stats().prefill_chunks, 1u + (kCtx - 1 + kChunk - 1) / kChunk);
}

// Regression (qwen3_5: the slot's GDN state was not cleared for a new sequence): one Generator, one slot, sequences
// in turn; each must start from a clean slot and give its reference. Two of them end early: one on a stop id (the
// GPU deactivates the row in the middle of a K = 4 submission) and one on a stop string (seen on the CPU after the
// GPU ran further steps for it, with the next submission already in flight): whatever state those steps left in
// the slot must not reach the next sequence.
TEST_P(GeneratorTest, ASlotReusedByTheNextSequenceStartsClean) {
  Model& m = model(fx());
  const auto p0 = prompt(0), p1 = prompt(1);
  const Outcome &r0 = reference(fx(), p0), &r1 = reference(fx(), p1);
  auto fwd = freshForward(m, 1);
  ASSERT_TRUE(fwd);
  Generator gen(gpuContext(), *fwd, &m.tok, 4);
  // Ends on the stop id r1.res.tokens[6] if that token first occurs there, else runs to length.
  GenerationRequest by_id = greedy(p1, kGen);
  by_id.sampling.stop_token_ids = {r1.res.tokens[6]};
  // Ends on the stop string: the reference text's characters from byte 3 (a whole UTF-8 character or more).
  GenerationRequest by_text = greedy(p0, kGen);
  std::string cut = r0.res.text.substr(3, 2);
  while (!cut.empty() && ((unsigned char)cut.back() & 0xC0) == 0x80) cut.pop_back();
  while (!cut.empty() && ((unsigned char)cut[0] & 0xC0) == 0x80) cut.erase(0, 1);
  ASSERT_FALSE(cut.empty()) << r0.res.text;
  by_text.stop_strings = {cut};
  const GenerationRequest runs[] = {greedy(p0, kGen), by_id, greedy(p1, kGen), by_text, greedy(p0, kGen)};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(::testing::Message() << "sequence " << i);
    Outcome r;
    ASSERT_TRUE(gen.submit(runs[i], callbacks(r)).ok());
    drive(gen, Drive::kPoll);
    const Outcome& ref = runs[i].prompt == p1 ? r1 : r0;
    if (i == 1 || i == 3) {
      EXPECT_EQ(r.res.finish_reason, "stop");
      EXPECT_TRUE(ref.res.text.starts_with(r.res.text));
      EXPECT_LT(r.res.tokens.size(), ref.res.tokens.size());
    } else {
      expectLengthPrefix(r, ref, kGen);
    }
  }
}

// Regression (decode attention stored K/V for inactive rows, whose zero-filled entry points at slot 0, position 0):
// a Forward with four rows, one sequence.
TEST_P(GeneratorTest, RowsNeverAdmittedLeaveTheOtherSlotsAlone) {
  Model& m = model(fx());
  const auto p = prompt(0);
  const Outcome& ref = reference(fx(), p);
  auto fwd = freshForward(m, 4);
  ASSERT_TRUE(fwd);
  Generator gen(gpuContext(), *fwd, &m.tok, 4);
  Outcome r;
  ASSERT_TRUE(gen.submit(greedy(p, kGen), callbacks(r)).ok());
  drive(gen, Drive::kWait);
  expectLengthPrefix(r, ref, kGen);
}

// With depth 2, runToCompletion keeps the next decode submission in flight while it consumes one (seen from
// on_text: submissions not yet read back while a readback is being consumed). Regression: when step() issued at
// most one submission per call, runToCompletion (which waits right after each step()) never had two in flight.
TEST_P(GeneratorTest, RunToCompletionKeepsTwoDecodeSubmissionsInFlight) {
  Model& m = model(fx());
  const auto p = prompt(0);
  const Outcome& ref = reference(fx(), p);
  for (uint32_t depth : {1u, 2u}) {
    SCOPED_TRACE(::testing::Message() << "depth = " << depth);
    auto fwd = freshForward(m, 1);
    ASSERT_TRUE(fwd);
    Generator gen(gpuContext(), *fwd, &m.tok, 4);
    ASSERT_TRUE(gen.setPipelineDepth(depth).ok());
    Outcome r;
    uint64_t most = 0;
    GenerationCallbacks cb = callbacks(r);
    cb.on_text = [&](const std::string& d) {
      r.streamed += d;
      most = std::max<uint64_t>(most, gen.stats().submissions - gen.stats().readbacks);
    };
    ASSERT_TRUE(gen.submit(greedy(p, kGen), cb).ok());
    drive(gen, Drive::kWait);
    expectLengthPrefix(r, ref, kGen);
    // Callbacks run after the step that consumed a readback has issued the next work: the GPU is never idle
    // while text is delivered.
    EXPECT_EQ(most, depth) << "decode submissions in flight while one is delivered";
  }
}

INSTANTIATE_TEST_SUITE_P(TinyFixtures, GeneratorTest, ::testing::Values("llama_tiny/q4f16_1", "qwen3_5_tiny/q4f16_1"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param.substr(0, i.param.find("_tiny"));
                         });

}  // namespace
}  // namespace ewgpu
