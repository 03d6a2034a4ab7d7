// ewgpu bench reuse: what prefix reuse saves (docs/prefix-reuse.md). For each history length H: a first turn
// whose prompt is H tokens (one generated token), then a second turn whose prompt is the history plus a new message
// (--new tokens); the second turn's time to first token with reuse (it resumes from the first turn's pages, or
// the hybrid's end-of-turn snapshot) against the same request with reuse off (the whole prompt prefilled). Token
// ids, not text: the history is a fixed pseudo-random sequence of ids inside the vocabulary, so any model folder
// works (e.g. `ewgpu make-tiny DIR --shape llama-3.2-1b`). A length that does not fit the model's context window
// (H + new + tokens) is skipped and said so.
#include "command.h"
#include "runtime/generator.h"
#include "runtime/local_engine.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace ewgpu::cli {
namespace {

struct ReuseFlags {
  std::string model, adapter;
  std::vector<uint32_t> history{512, 2048, 4000};
  uint32_t new_tokens = 32, tokens = 8, repeat = 3;
  bool json = false;
};

std::vector<int32_t> historyIds(uint32_t n, int vocab, uint32_t seed) {
  std::vector<int32_t> v(n);
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (auto& t : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t = (int32_t)(x % (uint64_t)vocab);
  }
  return v;
}

Result<GenerationResult> runOne(Generator& gen, std::vector<int32_t> prompt, uint32_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  GenerationResult out;
  auto id = gen.submit(std::move(r), {nullptr, [&out](const GenerationResult& g) { out = g; }});
  if (!id) return std::move(id).error();
  EWGPU_TRY(gen.runToCompletion());
  if (out.error) return *out.error;
  return out;
}

int runBenchReuse(const ReuseFlags& f) {
  LocalEngineOptions lo;
  lo.gpu.adapter = f.adapter;
  const uint32_t longest = *std::max_element(f.history.begin(), f.history.end());
  lo.forward.context = longest + f.new_tokens + f.tokens + 16;  // clamped to the model's window below
  auto probe = ModelFolder::open(f.model);
  if (!probe) return reportError(probe.error(), f.json);
  const uint32_t window = probe->config().contextLength();
  lo.forward.context = std::min(lo.forward.context, window);
  auto le = LocalEngine::load(f.model, lo);
  if (!le) return reportError(le.error(), f.json);
  const int vocab = le->model->config.vocab;
  const uint32_t ctx = le->forward->contextLength();
  Generator gen(*le->ctx, *le->forward, nullptr, 16);
  // Warm-up: every pipeline (prefill, decode, the snapshot and page copies) once.
  {
    auto w = historyIds(40, vocab, 99);
    if (auto r = runOne(gen, w, 2); !r) return reportError(r.error(), f.json);
    w.push_back(1);
    if (auto r = runOne(gen, w, 2); !r) return reportError(r.error(), f.json);
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!f.json)
    std::printf("%s on %s, context %u: second-turn time to first token, a %u-token new message, median of %u\n\n"
                "| history tokens | reused tokens | with reuse ms | without reuse ms | speed-up |\n"
                "| ---: | ---: | ---: | ---: | ---: |\n",
                f.model.c_str(), le->ctx->info().description.c_str(), ctx, f.new_tokens, f.repeat);
  for (uint32_t i = 0; i < f.history.size(); ++i) {
    const uint32_t h = f.history[i];
    if (h + f.new_tokens + f.tokens >= ctx) {
      if (f.json) rows.push_back({{"history", h}, {"skipped", "longer than the context window"}, {"context", ctx}});
      else std::printf("| %u | skipped: history + new + tokens past the context window of %u | | | |\n", h, ctx);
      continue;
    }
    std::vector<double> with, without;
    uint32_t reused = 0;
    for (uint32_t rep = 0; rep < f.repeat; ++rep) {
      // A history of its own per repetition, so nothing of an earlier one is reused.
      const auto hist = historyIds(h, vocab, i * 100 + rep);
      auto turn2 = hist;
      const auto msg = historyIds(f.new_tokens, vocab, 7777 + rep);
      turn2.insert(turn2.end(), msg.begin(), msg.end());
      gen.setPrefixReuse(true);
      auto t1 = runOne(gen, hist, 1);
      if (!t1) return reportError(t1.error(), f.json);
      auto a = runOne(gen, turn2, f.tokens);
      if (!a) return reportError(a.error(), f.json);
      gen.setPrefixReuse(false);
      auto b = runOne(gen, turn2, f.tokens);
      if (!b) return reportError(b.error(), f.json);
      with.push_back(a->ttft_ms);
      without.push_back(b->ttft_ms);
      reused = a->cached_tokens;
      if (a->tokens != b->tokens)
        std::fprintf(stderr, "warning: history %u: tokens differ with and without reuse\n", h);
    }
    std::sort(with.begin(), with.end());
    std::sort(without.begin(), without.end());
    const double mw = with[with.size() / 2], mo = without[without.size() / 2];
    if (f.json)
      rows.push_back({{"history", h}, {"new_tokens", f.new_tokens}, {"cached_tokens", reused},
                      {"ttft_ms_with_reuse", mw}, {"ttft_ms_without_reuse", mo}, {"speedup", mo / mw},
                      {"with_all", with}, {"without_all", without}});
    else
      std::printf("| %u | %u | %.1f | %.1f | %.1fx |\n", h, reused, mw, mo, mo / mw);
  }
  if (f.json) {
    nlohmann::json out = {{"model", f.model}, {"device", le->ctx->info().description}, {"context", ctx},
                          {"repeat", f.repeat}, {"rows", rows}};
    std::cout << out.dump(2) << "\n";
  }
  return 0;
}

Registration reg{{"bench reuse",
                  "prefix reuse: second-turn time to first token after a history, with vs without reuse",
                  [](CLI::App& app) {
                    auto f = std::make_shared<ReuseFlags>();
                    app.add_option("--model", f->model, "a model folder")->required();
                    addAdapterFlag(app, f->adapter);
                    app.add_option("--history", f->history, "history lengths in tokens (comma-separated)")
                        ->delimiter(',')
                        ->check(bounded<uint32_t>(1, 1u << 20))
                        ->capture_default_str();
                    app.add_option("--new", f->new_tokens, "tokens of the second turn's new message")
                        ->check(bounded<uint32_t>(1, 4096))
                        ->capture_default_str();
                    app.add_option("--tokens", f->tokens, "tokens generated per turn")
                        ->check(bounded<uint32_t>(1, 4096))
                        ->capture_default_str();
                    app.add_option("--repeat", f->repeat, "repetitions per length (the median is shown)")
                        ->check(bounded<uint32_t>(1, 50))
                        ->capture_default_str();
                    addJsonFlag(app, f->json);
                    return [f] { return runBenchReuse(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
