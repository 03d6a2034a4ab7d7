// Batched decode on the tiny transformers fixtures of every architecture (tests/fixtures/<arch>_tiny/q4f16_1):
// every sequence's greedy tokens in a batch equal the same request run alone (exact ids), while sequences join
// (more requests than rows: a new one takes a row as soon as one is freed) and leave (each has its own max_tokens,
// so rows end at different steps and the executor compacts the remaining ones into the first lanes), for
// Forwards of 1, 3, 8 and 32 rows. "Alone" is the same request, one at a time, in a Forward of one row (for rows
// 1) or of three rows (for 3, 8 and 32): batch 1 has its own GEMV fast path, every batched engine the same kernels,
// so a row's tokens depend on whether the engine batches, never on its neighbours or the engine's row count.
// Also: a step computes only the active rows (ExecutorStats::row_steps); prefix reuse (docs/prefix-reuse.md) gives
// the same greedy tokens as prefilling everything, for a second turn, a shared system prompt and after eviction.
// Cheap on SwiftShader: tiny models, prompts of one prefill chunk, ≤ 7 generated tokens, 12 distinct prompts
// (sequence i runs prompt i % 12), and engines of 3, 8 and 32 rows share their pipelines.
#include "runtime/generator.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime_test_util.h"
#include "tokenizer/tokenizer.h"

namespace ewgpu {
namespace {

using testing::gpuContext;

constexpr uint32_t kCtx = 64, kChunk = 32, kMaxSteps = 4;

struct Model {
  ModelFolder folder;
  std::unique_ptr<GpuModel> gpu;
  Tokenizer tok;
};

Model& model(const std::string& arch) {
  gpuContext();
  static std::map<std::string, std::unique_ptr<Model>> cache;
  auto it = cache.find(arch);
  if (it != cache.end()) return *it->second;
  const std::string dir = std::string(EWGPU_SOURCE_DIR) + "/tests/fixtures/" + arch + "_tiny/q4f16_1";
  auto f = ModelFolder::open(dir);
  EXPECT_TRUE(f.ok()) << f.error().toString();
  auto m = uploadModel(gpuContext(), *f, {256 << 10});
  EXPECT_TRUE(m.ok()) << m.error().toString();
  auto tok = Tokenizer::fromFile(dir + "/tokenizer.json");
  EXPECT_TRUE(tok.ok()) << tok.error().toString();
  auto p = std::unique_ptr<Model>(new Model{std::move(*f), std::move(*m), std::move(*tok)});
  return *cache.emplace(arch, std::move(p)).first->second;
}

GenerationRequest greedy(std::vector<int32_t> prompt, uint32_t max_tokens) {
  GenerationRequest req;
  req.prompt = std::move(prompt);
  req.sampling.temperature = 0;
  req.sampling.max_tokens = max_tokens;
  return req;
}

// Prompt i: distinct ids (1..8 tokens) drawn from the 256-token vocabulary.
std::vector<int32_t> prompt(uint32_t i, int vocab) {
  std::vector<int32_t> p;
  for (uint32_t j = 0; j <= i % 8; ++j) p.push_back((int32_t)((i * 37 + j * 11 + 5) % (uint32_t)vocab));
  return p;
}

uint32_t maxTokens(uint32_t i) { return 2 + (i * 5) % 6; }  // 2..7 (≤ kSoloTokens): rows leave at different steps

struct Outcome {
  std::vector<int32_t> tokens;
  std::string finish;
  int done = 0;
};

class BatchTest : public ::testing::TestWithParam<std::string> {};

constexpr uint32_t kPrompts = 12;  // distinct prompts; sequence i runs prompt i % kPrompts
constexpr uint32_t kSoloTokens = 7;

std::unique_ptr<Forward> forward(Model& m, uint32_t rows, uint32_t cache_pages = ForwardOptions::kAuto,
                                 ForwardOptions::Kv kv = ForwardOptions::Kv::kAuto,
                                 kernels::Activations act = kernels::Activations::kF32) {
  auto f = Forward::create(gpuContext(), *m.gpu,
                           {.max_batch = rows, .slots = rows, .context = kCtx, .prefill_chunk = kChunk,
                            .max_steps = kMaxSteps, .activations = act,
                            .cache_pages = cache_pages, .kv = kv});
  EXPECT_TRUE(f.ok()) << f.error().toString();
  return f.ok() ? std::move(*f) : nullptr;
}

// Each prompt alone (one sequence at a time) in `fwd`: its first kSoloTokens greedy tokens.
std::vector<std::vector<int32_t>> soloRuns(Model& m, Forward& fwd) {
  std::vector<std::vector<int32_t>> out(kPrompts);
  for (uint32_t p = 0; p < kPrompts; ++p) {
    Generator gen(gpuContext(), fwd, &m.tok, kMaxSteps);
    int done = 0;
    EXPECT_TRUE(gen.submit(greedy(prompt(p, m.gpu->config.vocab), kSoloTokens),
                           {nullptr, [&, p](const GenerationResult& r) {
                              out[p] = r.tokens;
                              ++done;
                            }})
                    .ok());
    EXPECT_TRUE(gen.runToCompletion().ok());
    EXPECT_EQ(done, 1);
    EXPECT_EQ(out[p].size(), kSoloTokens) << "prompt " << p << " alone";
  }
  return out;
}

// Runs rows + 2 sequences (3 for one row) in `fwd`: all but two at once, the last two submitted when the first
// finishes (they join a batch that is decoding); each must give the first maxTokens(i) tokens of its prompt alone.
void checkBatch(Model& m, Forward& fwd, uint32_t rows, const std::vector<std::vector<int32_t>>& solo) {
  const int vocab = m.gpu->config.vocab;
  const uint32_t n = rows == 1 ? 3 : rows + 2, first_wave = n - 2;
  std::vector<Outcome> batch(n);
  Generator gen(gpuContext(), fwd, &m.tok, kMaxSteps);
  bool late = false;
  std::function<void(uint32_t)> submit = [&](uint32_t i) {
    auto st = gen.submit(greedy(prompt(i % kPrompts, vocab), maxTokens(i)),
                         {nullptr, [&, i](const GenerationResult& r) {
                            batch[i] = {r.tokens, r.finish_reason, batch[i].done + 1};
                            if (i == 0 && !late) {
                              late = true;
                              for (uint32_t j = first_wave; j < n; ++j) submit(j);
                            }
                          }});
    ASSERT_TRUE(st.ok()) << st.error().toString();
  };
  for (uint32_t i = 0; i < first_wave; ++i) submit(i);
  ASSERT_TRUE(gen.runToCompletion().ok());
  ASSERT_TRUE(late);
  for (uint32_t i = 0; i < n; ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    EXPECT_EQ(batch[i].done, 1);
    EXPECT_EQ(batch[i].finish, "length");
    const auto& ref = solo[i % kPrompts];
    EXPECT_EQ(batch[i].tokens, std::vector<int32_t>(ref.begin(), ref.begin() + maxTokens(i)));
  }
  // Rows that left are not computed: fewer row-steps than decode steps × rows (every row would be).
  if (rows > 1) {
    EXPECT_LT(gen.stats().row_steps, gen.stats().decode_steps * rows);
    EXPECT_GT(gen.stats().row_steps, gen.stats().decode_steps) << "the rows did not decode together";
    // The first wave's prompts (1-8 tokens) arrive together: their last chunks share readbacks.
    EXPECT_LT(gen.stats().prefill_groups, n) << "no prefill group had more than one prompt";
  }
}

// Rows 1 against its prompts alone in the same one-row Forward; rows 3, 8 and 32 against the prompts alone in the
// three-row Forward (the batched kernels compute a row the same way whatever the engine's rows, so this also
// checks that engines of 8 and 32 rows give the same tokens as one of 3).
// A one-row engine has pipelines of its own (batch 1's GEMV), about 40 s per architecture on SwiftShader: CI runs
// rows 1 for the hybrid (whose GDN state a reused row must clear) and EWGPU_BATCH_TEST_FULL=1 for all five.
TEST_P(BatchTest, EverySequenceInABatchMatchesItselfAlone) {
  Model& m = model(GetParam());
  const bool full = std::getenv("EWGPU_BATCH_TEST_FULL") || std::string(GetParam()) == "qwen3_5";
  for (uint32_t rows : {1u, 3u, 8u, 32u}) {
    if (rows == 1 && !full) continue;
    SCOPED_TRACE("rows " + std::to_string(rows));
    static std::vector<std::vector<int32_t>> solo;
    auto fwd = forward(m, rows);
    ASSERT_TRUE(fwd);
    if (rows <= 3) solo = soloRuns(m, *fwd);
    checkBatch(m, *fwd, rows, solo);
  }
}

// Runs `reqs` at once in `gen` to completion; the results in order.
std::vector<GenerationResult> runAll(Generator& gen, const std::vector<GenerationRequest>& reqs) {
  std::vector<GenerationResult> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto st = gen.submit(reqs[i], {nullptr, [&out, i](const GenerationResult& r) { out[i] = r; }});
    EXPECT_TRUE(st.ok()) << st.error().toString();
  }
  EXPECT_TRUE(gen.runToCompletion().ok());
  return out;
}

std::vector<int32_t> ids(uint32_t n, uint32_t seed, int vocab) {
  std::vector<int32_t> v;
  for (uint32_t j = 0; j < n; ++j) v.push_back((int32_t)((seed * 53 + j * 29 + j * j * 7 + 3) % (uint32_t)vocab));
  return v;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Prefix reuse on (the default) against off, in the three-row Forward: a second turn that extends the first (the
// history's full KV pages, or the hybrid's end-of-turn snapshot: its partial page copied), two requests sharing a
// system prompt decoding together (its pages shared copy-free; the hybrid resumes from the snapshot taken at
// shared_prefix), and the second turn again after a burst of long sequences evicted everything (a Forward with no
// spare pages). CI runs llama, mistral (sliding window) and qwen3_5 (the hybrid's snapshots); qwen2 and qwen3
// (llama's attention path with biases / q-k norms) with EWGPU_BATCH_TEST_FULL=1, as the GPU-machine run does.
TEST_P(BatchTest, PrefixReuseGivesTheSameTokens) {
  const std::string arch = GetParam();
  if (!std::getenv("EWGPU_BATCH_TEST_FULL") && (arch == "qwen2" || arch == "qwen3"))
    GTEST_SKIP() << "llama's attention path; EWGPU_BATCH_TEST_FULL=1 runs it";
  Model& m = model(GetParam());
  const int vocab = m.gpu->config.vocab;
  const bool hybrid = std::string(GetParam()) == "qwen3_5";
  auto fwd = forward(m, 3);
  ASSERT_TRUE(fwd);
  Generator gen(gpuContext(), *fwd, &m.tok, kMaxSteps);
  const auto t1 = ids(20, 1, vocab);
  auto r1 = runAll(gen, {greedy(t1, 6)});
  ASSERT_EQ(r1[0].tokens.size(), 6u);
  EXPECT_EQ(r1[0].cached_tokens, 0u);
  const auto t2 = cat(cat(t1, r1[0].tokens), ids(9, 2, vocab));  // 35 tokens: two prefill chunks without reuse
  auto with = runAll(gen, {greedy(t2, 6)});
  // Written before: the prompt and 5 of the 6 tokens (the last was never fed). Full pages only, or the snapshot.
  EXPECT_EQ(with[0].cached_tokens, hybrid ? 25u : 16u);
  gen.setPrefixReuse(false);
  auto without = runAll(gen, {greedy(t2, 6)});
  EXPECT_EQ(without[0].cached_tokens, 0u);
  EXPECT_EQ(with[0].tokens, without[0].tokens) << "second turn";

  // A shared system prompt of 24 tokens (the hybrid snapshots at 16, its last full page).
  const auto sys = ids(24, 3, vocab);
  std::vector<GenerationRequest> reqs;
  for (uint32_t i = 0; i < 3; ++i) {
    reqs.push_back(greedy(cat(sys, ids(5 + i, 10 + i, vocab)), 5));
    reqs.back().shared_prefix = 24;
  }
  auto plainA = runAll(gen, {reqs[0]});
  auto plainBC = runAll(gen, {reqs[1], reqs[2]});
  gen.setPrefixReuse(true);
  auto a = runAll(gen, {reqs[0]});
  auto bc = runAll(gen, {reqs[1], reqs[2]});
  EXPECT_EQ(a[0].tokens, plainA[0].tokens);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("shared system prompt, request " + std::to_string(i + 1));
    EXPECT_EQ(bc[i].cached_tokens, 16u);
    EXPECT_EQ(bc[i].tokens, plainBC[i].tokens);
  }

  // Eviction: no pages beyond the slots' own, and three sequences that need all of them.
  auto small = forward(m, 3, 0);
  ASSERT_TRUE(small);
  Generator g2(gpuContext(), *small, &m.tok, kMaxSteps);
  runAll(g2, {greedy(t1, 6)});
  std::vector<GenerationRequest> burst;
  for (uint32_t i = 0; i < 3; ++i) burst.push_back(greedy(ids(59, 20 + i, vocab), 5));  // 64 positions each
  for (const auto& r : runAll(g2, burst)) EXPECT_EQ(r.cached_tokens, 0u);
  auto after = runAll(g2, {greedy(t2, 6)});
  EXPECT_EQ(after[0].cached_tokens, 0u) << "evicted";
  EXPECT_EQ(after[0].tokens, without[0].tokens) << "after eviction";
  // And reuse works again once the history is back: 40 tokens written (full pages: 32; the hybrid's snapshot: 40).
  auto again = runAll(g2, {greedy(cat(cat(t2, after[0].tokens), ids(3, 4, vocab)), 4)});
  EXPECT_EQ(again[0].cached_tokens, hybrid ? 40u : 32u);
}

// The f16 KV cache (the default on GPUs; CPU adapters default to f32, so CI runs it here explicitly): a batch with
// joins and departures equals each sequence alone on the same cache, and a second turn resumed from cached pages
// equals the same turn prefilled from scratch.
TEST(BatchF16Kv, BatchesAndReusesPrefixes) {
  Model& m = model("llama");
  const int vocab = m.gpu->config.vocab;
  auto fwd = forward(m, 3, ForwardOptions::kAuto, ForwardOptions::Kv::kF16);
  ASSERT_TRUE(fwd);
  ASSERT_TRUE(fwd->kvF16());
  checkBatch(m, *fwd, 3, soloRuns(m, *fwd));
  Generator gen(gpuContext(), *fwd, &m.tok, kMaxSteps);
  const auto t1 = ids(20, 1, vocab);
  auto r1 = runAll(gen, {greedy(t1, 6)});
  const auto t2 = cat(cat(t1, r1[0].tokens), ids(9, 2, vocab));
  auto with = runAll(gen, {greedy(t2, 6)});
  EXPECT_EQ(with[0].cached_tokens, 16u);
  gen.setPrefixReuse(false);
  auto without = runAll(gen, {greedy(t2, 6)});
  EXPECT_EQ(with[0].tokens, without[0].tokens) << "second turn";
}

// Seeded sampling is a function of the row's logits, seed and count of generated tokens, so a sampled sequence's
// tokens in a batch equal its tokens alone. Five requests in the three-row Forward (two join as rows free up): top-k
// rows with and without top-p (on GPUs a batch of them and greedy rows takes the split sampler's phases 1, 4 and 5,
// SampleBatch::kSampledTopK: phase 1 lists each row's candidates) and a greedy one; then one with top-p alone joins
// the top-k rows (the five phases). Each equals itself alone, and the sampled ones are not all greedy's tokens.
TEST(BatchSampled, TopKRowsMatchThemselvesAlone) {
  Model& m = model("llama");
  const int vocab = m.gpu->config.vocab;
  auto fwd = forward(m, 3);
  ASSERT_TRUE(fwd);
  auto request = [&](uint32_t i) {
    GenerationRequest req = greedy(prompt(i, vocab), 6);
    if (i != 3) {
      req.sampling.temperature = 1.0f;
      req.sampling.top_k = 4 + 3 * i;
      req.sampling.top_p = i % 2 ? 0.9f : 1.0f;
      if (i == 5) req.sampling.top_k = 0, req.sampling.top_p = 0.95f;  // top-p alone
      req.sampling.seed = 1000 + i;
    }
    return req;
  };
  std::vector<std::vector<int32_t>> alone, as_greedy;
  for (uint32_t i = 0; i < 6; ++i) {
    Generator gen(gpuContext(), *fwd, &m.tok, kMaxSteps);
    alone.push_back(runAll(gen, {request(i)})[0].tokens);
    as_greedy.push_back(runAll(gen, {greedy(prompt(i, vocab), 6)})[0].tokens);
    ASSERT_EQ(alone.back().size(), 6u) << "request " << i;
  }
  for (const auto& order : {std::vector<uint32_t>{0, 1, 2, 3, 4}, std::vector<uint32_t>{0, 1, 5, 2}}) {
    std::vector<GenerationRequest> reqs;
    for (uint32_t i : order) reqs.push_back(request(i));
    Generator gen(gpuContext(), *fwd, &m.tok, kMaxSteps);
    const auto got = runAll(gen, reqs);
    for (size_t j = 0; j < order.size(); ++j) EXPECT_EQ(got[j].tokens, alone[order[j]]) << "request " << order[j];
  }
  uint32_t differ = 0;
  for (uint32_t i = 0; i < 6; ++i) differ += i != 3 && alone[i] != as_greedy[i];
  EXPECT_GE(differ, 2u) << "sampling picked greedy's tokens almost everywhere";
  EXPECT_EQ(alone[3], as_greedy[3]);
}

// int8 x̂ (two digits, the GPUs' default): engines of kernels::kGemmMinBatch rows or more run their q4 projections
// through the small-M GEMM (gemm_q8.wgsl), whose tile follows the active rows step by step. A 32-row engine gives
// every sequence the tokens it gets alone in the same engine while sequences join and leave, for llama and the
// hybrid (its GDN projections go through it too; on CPU adapters, where SwiftShader emulates the packed dot product
// and each architecture costs about 40 s, with EWGPU_BATCH_TEST_FULL=1).
TEST(BatchInt8Gemm, EverySequenceMatchesItselfAlone) {
  if (!gpuContext().info().packed_dot4) GTEST_SKIP() << "no WGSL packed dot product";
  static_assert(kernels::kGemmMinBatch <= 32);
  const bool full = std::getenv("EWGPU_BATCH_TEST_FULL") || !gpuContext().info().cpuAdapter();
  for (const char* arch : {"llama", "qwen3_5"}) {
    if (!full && std::string(arch) != "llama") continue;
    SCOPED_TRACE(arch);
    Model& m = model(arch);
    auto f32 = forward(m, 32, ForwardOptions::kAuto, ForwardOptions::Kv::kAuto, kernels::Activations::kInt16);
    ASSERT_TRUE(f32);
    const auto& bound = gpuContext().storageBindingsPerKernel();
    ASSERT_TRUE(bound.count("gemm_q8_wt") || bound.count("gemm_q8")) << "the 32-row engine bound no small-M GEMM";
    checkBatch(m, *f32, 32, soloRuns(m, *f32));
  }
}

INSTANTIATE_TEST_SUITE_P(TinyFixtures, BatchTest,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "qwen3_5"));

}  // namespace
}  // namespace ewgpu
