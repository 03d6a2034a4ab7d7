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

std::vector<uint32_t> parseList(const std::string& s) {
  std::vector<uint32_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back((uint32_t)std::stoul(item));
  return v;
}

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

int runBenchConcurrent(const Args& args) {
  const std::vector<std::string> valued = {"--streams", "--tokens", "--prompt-words", "--adapter", "--steps", "--repeat"};
  auto pos = positionals(args, valued);
  const bool json = hasFlag(args, "--json");
  if (pos.empty()) {
    std::fprintf(stderr, "usage: ewgpu bench concurrent MODEL [--streams 1,2,4] [--tokens N] [--prompt-words W] [--json]\n");
    return 2;
  }
  std::vector<uint32_t> streams = parseList(flagValue(args, "--streams").value_or("1,2,4"));
  const uint32_t tokens = (uint32_t)std::stoul(flagValue(args, "--tokens").value_or("64"));
  const uint32_t words = (uint32_t)std::stoul(flagValue(args, "--prompt-words").value_or("32"));
  const uint32_t repeat = (uint32_t)std::stoul(flagValue(args, "--repeat").value_or("3"));
  uint32_t rows = 1;
  for (uint32_t s : streams) {
    if (s < 1 || s > 8) return reportError(makeError(ErrorCode::kBadRequest, "--streams values must be 1..8 (the engine's rows)", {{"field", "--streams"}}), json);
    rows = std::max(rows, s);
  }
  rows = std::max<uint32_t>(rows, 2);  // the interactive-under-load runs need a row beside the background work
  EngineOptions eo;
  eo.rows = rows;
  if (auto a = flagValue(args, "--adapter")) eo.adapter = *a;
  eo.decode_steps = (uint32_t)std::stoul(flagValue(args, "--steps").value_or("16"));
  auto eng = Engine::create(eo);
  if (!eng) return reportError(eng.error(), json);
  Engine& e = **eng;
  auto info = e.load(pos[0])->wait();
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
                  "bench concurrent MODEL [--streams 1,2,4] [--tokens N] [--prompt-words W] [--steps K] [--repeat R] [--json]",
                  "the engine under concurrent callers: aggregate tok/s per stream count, interactive TTFT under load",
                  runBenchConcurrent}};

}  // namespace
}  // namespace ewgpu::cli
