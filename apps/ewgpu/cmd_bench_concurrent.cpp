// ewgpu bench concurrent MODEL: the engine under concurrent callers.
//  1. Streams: S greedy requests submitted at once (S in --streams), each generating --tokens tokens after a
//     prompt of about --prompt-words words. Aggregate decode tok/s (all streams' tokens over the time from the
//     first first-token to the last token), per-stream decode tok/s, and the model's weight bytes read per
//     generated token (the weights are read once per decode step for all rows).
//  2. Interactive under load: the time to first token of an interactive request on an idle engine, against the
//     same request arriving while background work holds rows: (a) a background batch (one task, so it holds at
//     most task_share of the rows and a row is free), (b) every row busy with preemptible background requests
//     (the interactive one preempts). Ratios against idle.
#include "command.h"
#include "ewgpu/engine.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

namespace ewgpu::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string wordsPrompt(uint32_t n) {
  static const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "rain"};
  std::string s;
  for (uint32_t i = 0; i < n; ++i) s += std::string(words[i % 11]) + " ";
  return s;
}

CompletionRequest greedy(uint32_t words, uint32_t tokens, Priority p = Priority::kNormal) {
  CompletionRequest r;
  r.prompt = wordsPrompt(words);
  r.max_tokens = tokens;
  r.temperature = 0;
  r.priority = p;
  r.stop = {};
  return r;
}

struct StreamRow {
  uint32_t streams = 0;
  double aggregate_tok_s = 0, per_stream_tok_s = 0, wall_ms = 0, weight_mb_per_token = 0;
  uint32_t tokens = 0;
};

Result<StreamRow> runStreams(Engine& e, const ModelInfo& info, uint32_t s, uint32_t words, uint32_t tokens) {
  std::vector<CompletionHandle> hs;
  const auto t0 = Clock::now();
  for (uint32_t i = 0; i < s; ++i) {
    CompletionRequest r = greedy(words + i, tokens);  // different prompts, same length class
    auto h = e.complete(r);
    if (!h) return std::move(h).error();
    hs.push_back(*h);
  }
  double first = 1e300, last = 0, per = 0;
  StreamRow row;
  row.streams = s;
  for (const auto& h : hs) {
    const CompletionResult& r = h->wait();
    if (r.error) return *r.error;
    const double started = r.timings.ttft_ms, ended = r.timings.total_ms;
    first = std::min(first, started);
    last = std::max(last, ended);
    row.tokens += r.usage.completion_tokens;
    per += r.timings.decode_tok_s;
  }
  row.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const double decode_ms = last - first;
  row.aggregate_tok_s = decode_ms > 0 ? (row.tokens - s) / (decode_ms / 1000) : 0;
  row.per_stream_tok_s = per / s;
  row.weight_mb_per_token = info.weight_bytes / 1e6 / s;
  return row;
}

Result<double> ttftOf(Engine& e, uint32_t words) {
  auto h = e.complete(greedy(words, 4, Priority::kInteractive));
  if (!h) return std::move(h).error();
  const CompletionResult& r = (*h)->wait();
  if (r.error) return *r.error;
  return r.timings.ttft_ms;
}

struct ConcurrentFlags {
  std::string model;
  std::vector<uint32_t> streams = {1, 2, 4};
  uint32_t tokens = 64, words = 32, repeat = 3, steps = 16;
  std::string adapter;
  bool json = false;
};

int runBenchConcurrent(const ConcurrentFlags& f) {
  const bool json = f.json;
  const std::vector<uint32_t>& streams = f.streams;
  const uint32_t tokens = f.tokens, words = f.words, repeat = f.repeat;
  uint32_t rows = 1;
  for (uint32_t s : streams) {
    rows = std::max(rows, s);
  }
  rows = std::max<uint32_t>(rows, 2);  // the interactive-under-load runs need a row beside the background work
  EngineOptions eo;
  eo.rows = rows;
  eo.adapter = f.adapter;
  eo.decode_steps = f.steps;
  auto eng = Engine::create(eo);
  if (!eng) return reportError(eng.error(), json);
  Engine& e = **eng;
  auto info = e.load(f.model)->wait();
  if (!info) return reportError(info.error(), json);
  auto dev = e.probe();
  // Warm-up: the first request pays one-time costs (first submission of each pipeline).
  if (auto w = ttftOf(e, words); !w) return reportError(w.error(), json);

  nlohmann::json out = {{"model", info->id}, {"device", dev ? dev->device : ""}, {"rows", rows},
                        {"tokens", tokens}, {"decode_steps", eo.decode_steps}, {"weight_mb", info->weight_bytes / 1e6}};
  std::vector<StreamRow> table;
  for (uint32_t s : streams) {
    auto r = runStreams(e, *info, s, words, tokens);
    if (!r) return reportError(r.error(), json);
    table.push_back(*r);
    out["streams"].push_back({{"streams", s}, {"aggregate_tok_s", r->aggregate_tok_s},
                              {"per_stream_tok_s", r->per_stream_tok_s}, {"wall_ms", r->wall_ms},
                              {"weight_mb_per_token", r->weight_mb_per_token}});
  }

  // Interactive under load, each measured `repeat` times (best of, the machine is noisy).
  auto best = [&](auto&& fn) -> Result<double> {
    double b = 1e300;
    for (uint32_t i = 0; i < repeat; ++i) {
      auto v = fn();
      if (!v) return v;
      b = std::min(b, *v);
    }
    return b;
  };
  auto idle = best([&] { return ttftOf(e, words); });
  if (!idle) return reportError(idle.error(), json);
  auto under_batch = best([&]() -> Result<double> {
    std::vector<CompletionRequest> bg;
    for (uint32_t i = 0; i < 2 * rows; ++i) bg.push_back(greedy(words, 100000, Priority::kBackground));
    auto b = e.batch(bg);
    if (!b) return std::move(b).error();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the batch is decoding
    auto t = ttftOf(e, words);
    for (uint64_t id : (*b)->ids) e.cancel(id);
    (*b)->wait();
    return t;
  });
  if (!under_batch) return reportError(under_batch.error(), json);
  auto under_preemptible = best([&]() -> Result<double> {
    std::vector<CompletionHandle> bg;
    for (uint32_t i = 0; i < rows; ++i) {
      CompletionRequest r = greedy(words, 100000, Priority::kBackground);
      r.preemptible = true;
      auto h = e.complete(r);
      if (!h) return std::move(h).error();
      bg.push_back(*h);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto t = ttftOf(e, words);
    for (const auto& h : bg) e.cancel(h->id);
    for (const auto& h : bg) h->wait();
    return t;
  });
  if (!under_preemptible) return reportError(under_preemptible.error(), json);
  out["interactive_ttft_ms"] = {{"idle", *idle},
                                {"beside_background_batch", *under_batch},
                                {"preempting_background", *under_preemptible},
                                {"ratio_beside_batch", *under_batch / *idle},
                                {"ratio_preempting", *under_preemptible / *idle}};
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%s on %s: %u rows, %u tokens per stream, K=%u, %.1f MB of weights\n\n", info->id.c_str(),
              dev ? dev->device.c_str() : "?", rows, tokens, eo.decode_steps, info->weight_bytes / 1e6);
  std::printf("| streams | aggregate tok/s | per-stream tok/s | vs 1 stream | MB weights / token |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& r : table)
    std::printf("| %u | %.1f | %.1f | %.2fx | %.1f |\n", r.streams, r.aggregate_tok_s, r.per_stream_tok_s,
                table[0].aggregate_tok_s > 0 ? r.aggregate_tok_s / table[0].aggregate_tok_s : 0, r.weight_mb_per_token);
  std::printf("\ninteractive time to first token (best of %u): idle %.1f ms; beside a background batch %.1f ms "
              "(%.2fx); preempting background work %.1f ms (%.2fx)\n",
              repeat, *idle, *under_batch, *under_batch / *idle, *under_preemptible, *under_preemptible / *idle);
  return 0;
}

Registration reg{{"bench concurrent",
                  "the engine under concurrent callers: aggregate tok/s per stream count, interactive TTFT under load",
                  [](CLI::App& app) {
                    auto f = std::make_shared<ConcurrentFlags>();
                    app.add_option("MODEL", f->model, "a model folder or store id")->required();
                    app.add_option("--streams", f->streams, "concurrent streams to measure, comma separated (1..8)")
                        ->delimiter(',')
                        ->check(bounded<uint32_t>(1, 8))
                        ->capture_default_str();
                    app.add_option("--tokens", f->tokens, "tokens generated per stream")
                        ->check(bounded<uint32_t>(2, 1 << 16))
                        ->capture_default_str();
                    app.add_option("--prompt-words", f->words, "words in each prompt")
                        ->check(bounded<uint32_t>(1, 1 << 14))
                        ->capture_default_str();
                    app.add_option("--steps", f->steps, "decode steps per GPU submission (K), at most")
                        ->check(bounded<uint32_t>(1, 32))
                        ->capture_default_str();
                    app.add_option("--repeat", f->repeat, "repeats of each time-to-first-token measurement (best of)")
                        ->check(bounded<uint32_t>(1, 100))
                        ->capture_default_str();
                    addAdapterFlag(app, f->adapter);
                    addJsonFlag(app, f->json);
                    return [f] { return runBenchConcurrent(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
