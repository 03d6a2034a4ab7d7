// ewgpu bench concurrent MODEL: the engine under concurrent callers.
//  1. Streams: S greedy requests submitted at once (S in --streams), each generating --tokens tokens after a
//     prompt of about --prompt-words words. Aggregate decode tok/s (all streams' tokens over the time from the
//     first first-token to the last token), per-stream decode tok/s, and the model's weight bytes read per
//     generated token (the weights are read once per decode step for all rows).
//  2. Interactive under load: the time to first token of an interactive request on an idle engine, against the
//     same request arriving while background work holds rows: (a) a background batch (one task, so it holds at
//     most task_share of the rows and a row is free), (b) every row busy with preemptible background requests
//     (the interactive one preempts). Ratios against idle.
//  3. The ceiling each stream count is measured against: the weights read once per step at the measured streaming
//     bandwidth (S tokens per step), and, given the adapter's arithmetic rate (--fp32-tflops / --int8-tops, e.g.
//     the H200 figures of docs/architecture.md), 2 · weights · S FLOPs per step; the ceiling is the slower.
//  4. GPU time of one decode step of S rows by kernel family (gemv, attention, gdn, embed, sample): the model is
//     loaded again outside the engine with every row active at a mid-generation position, each dispatch timed in
//     a pass of its own (timestamps; skipped, and said so, where the adapter has none).
#include "command.h"
#include "ewgpu/engine.h"
#include "gpu/microbench.h"
#include "kernels/sampling.h"
#include "runtime/local_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
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
  double aggregate_tok_s = 0, per_stream_tok_s = 0, wall_ms = 0, weight_mb_per_token = 0, ceiling_tok_s = 0;
  // Tokens per second while every stream decodes: from the last stream's first token to the first stream's last
  // (no prefill in the window; what llama-batched-bench calls text generation speed). 0 when they never overlap.
  double steady_tok_s = 0;
  uint32_t tokens = 0;
};

// The streams' sampling: greedy unless --temperature (then top-p too, and a seed per stream).
struct StreamSampling {
  float temperature = 0, top_p = 1;
};

Result<StreamRow> runStreams(Engine& e, const ModelInfo& info, uint32_t s, uint32_t words, uint32_t tokens,
                             const StreamSampling& sampling) {
  std::vector<CompletionHandle> hs;
  const auto t0 = Clock::now();
  // Each stream's chunks as (ms since t0, tokens), for the steady window.
  std::mutex mu;
  std::vector<std::vector<std::pair<double, size_t>>> chunks(s);
  for (uint32_t i = 0; i < s; ++i) {
    CompletionRequest r = greedy(words + i, tokens);  // different prompts, same length class
    if (sampling.temperature > 0) {
      r.temperature = sampling.temperature;
      r.top_p = sampling.top_p;
      r.seed = 1000 + i;
    }
    auto h = e.complete(r, [&, i](const Chunk& c) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu);
      chunks[i].emplace_back(ms, c.tokens.size());
    });
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
  {
    std::lock_guard<std::mutex> lock(mu);
    double from = 0, to = 1e300;
    for (const auto& c : chunks) {
      if (c.empty()) return row;  // a stream without chunks: no window
      from = std::max(from, c.front().first);
      to = std::min(to, c.back().first);
    }
    size_t n = 0;
    for (const auto& c : chunks)
      for (const auto& [ms, k] : c)
        if (ms > from && ms <= to) n += k;
    if (to > from) row.steady_tok_s = n / ((to - from) / 1000);
  }
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
  uint32_t tokens = 64, words = 32, repeat = 3, steps = 16, profile_repeat = 5;
  double fp32_tflops = 0, int8_tops = 0;  // the adapter's arithmetic rates, for the ceiling (0: not known)
  StreamSampling sampling;                // the streams' (the TTFT requests stay greedy)
  std::string adapter;
  bool json = false;
};

// Bits per weight of a quantization (weights + scales), to count the multiply-adds behind a weight byte.
double bitsPerWeight(const std::string& quant) {
  if (quant == "q4f16_1") return 4.5;
  if (quant == "q4f32_1") return 5;
  if (quant == "q3f16_1") return 3.5;
  if (quant == "q0f16") return 16;
  return 32;
}

// The projections (gemv, gemv_batch, gemv_quant, gemm_q8) are one family, "gemv".
std::string kernelFamily(const std::string& kernel) {
  if (kernel.rfind("gemv", 0) == 0 || kernel.rfind("gemm", 0) == 0) return "gemv";
  if (kernel.rfind("attention", 0) == 0) return "attention";
  if (kernel.rfind("gdn", 0) == 0) return "gdn";
  return kernel;  // embed, sample
}

// One decode step of `rows` active rows at position `pos`, each dispatch timed in a pass of its own: GPU ms by
// kernel family and in all. Writes the rows' state first (repeated dispatches repeat their side effects, so the
// state is rewritten per call).
Result<std::pair<double, std::map<std::string, double>>> profileStep(LocalEngine& e, uint32_t rows, uint32_t pos,
                                                                     uint32_t repeat, const StreamSampling& sampling) {
  Forward& f = *e.forward;
  SamplingParams sp;
  sp.temperature = sampling.temperature;
  sp.top_p = sampling.top_p;
  sp.max_tokens = 1u << 20;
  uint32_t params[Forward::kParamWords];
  encodeParams(sp, params);
  for (uint32_t b = 0; b < rows; ++b) {
    const uint32_t words[Forward::kRowWords] = {b, pos, 1, 0, 1, 0, 0, 0};
    e.ctx->write(f.rows(), (uint64_t)b * sizeof words, words, sizeof words);
    e.ctx->write(f.params(), (uint64_t)b * sizeof params, params, sizeof params);
  }
  const uint32_t active[4] = {rows, 0, 0, 0};
  e.ctx->write(f.activeRows(), 0, active, sizeof active);
  auto timer = gpu::Timer::create(*e.ctx, 2048);  // passes (two queries each; Dawn caps a query set at 4096)
  if (!timer) return std::move(timer).error();
  gpu::Recorder rec(*e.ctx, 0);
  rec.setTimer(timer->get());
  rec.setSplitPasses(true, repeat);
  // As the engine records these rows (Executor::submitDecode).
  f.recordDecodeStep(rec, rows, sampleRowBatch(sp, (uint32_t)f.model().config.vocab));
  (*timer)->resolve(rec);
  EWGPU_TRY(rec.submit());
  EWGPU_TRY(e.ctx->finish());
  auto per = (*timer)->readPassNs(*e.ctx);
  if (!per) return std::move(per).error();
  std::map<std::string, double> by;
  double total = 0;
  for (size_t i = 0; i < per->size() && i < rec.passLabels().size(); ++i) {
    const double ms = (double)(*per)[i] / rec.passRepeats()[i] / 1e6;
    by[kernelFamily(rec.passLabels()[i])] += ms;
    total += ms;
  }
  return std::make_pair(total, by);
}

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
                        {"tokens", tokens}, {"decode_steps", eo.decode_steps}, {"weight_mb", info->weight_bytes / 1e6},
                        {"temperature", f.sampling.temperature}, {"top_p", f.sampling.top_p}};
  std::vector<StreamRow> table;
  for (uint32_t s : streams) {
    auto r = runStreams(e, *info, s, words, tokens, f.sampling);
    if (!r) return reportError(r.error(), json);
    table.push_back(*r);
    out["streams"].push_back({{"streams", s}, {"aggregate_tok_s", r->aggregate_tok_s},
                              {"per_stream_tok_s", r->per_stream_tok_s}, {"steady_tok_s", r->steady_tok_s},
                              {"wall_ms", r->wall_ms},
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
  // The background work is decoding once every row it was given has had its prefill: one prompt's prefill runs
  // at a time, each about an idle TTFT, so wait for twice that per row (at least 200 ms).
  const auto settle = std::chrono::milliseconds((int64_t)std::max(200.0, 2 * rows * *idle));
  auto under_batch = best([&]() -> Result<double> {
    std::vector<CompletionRequest> bg;
    for (uint32_t i = 0; i < 2 * rows; ++i) bg.push_back(greedy(words, 100000, Priority::kBackground));
    auto b = e.batch(bg);
    if (!b) return std::move(b).error();
    std::this_thread::sleep_for(settle);  // the batch is decoding
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
    std::this_thread::sleep_for(settle);
    auto t = ttftOf(e, words);
    for (const auto& h : bg) e.cancel(h->id);
    for (const auto& h : bg) h->wait();
    return t;
  });
  if (!under_preemptible) return reportError(under_preemptible.error(), json);

  // The ceiling and the GPU time by kernel family, on the model loaded again outside the engine.
  const uint32_t max_streams = *std::max_element(streams.begin(), streams.end());
  const std::string model_id = info->id, quant = info->quantization;
  const uint64_t weight_bytes = info->weight_bytes;
  eng->reset();
  LocalEngineOptions lo;
  lo.gpu.adapter = f.adapter;
  lo.forward.max_batch = max_streams;
  lo.forward.slots = max_streams;
  lo.forward.context = std::min<uint32_t>(info->context_window, words * 2 + tokens + 64);
  lo.forward.max_steps = 1;
  auto le = LocalEngine::load(f.model, lo);
  if (!le) return reportError(le.error(), json);
  gpu::MicrobenchOptions mo;
  mo.repeats = 3;
  mo.dispatches = 100;
  if (le->ctx->info().cpuAdapter()) mo.read_bytes = 32ull << 20;
  auto mb = gpu::runMicrobench(*le->ctx, mo);
  if (!mb) return reportError(mb.error(), json);
  const double gbps = mb->best_gbps, macs = weight_bytes * 8 / bitsPerWeight(quant);
  const bool timestamps = le->ctx->info().timestamp_query && mb->timestamps;
  const uint32_t pos = std::min<uint32_t>(lo.forward.context - 2, words + tokens / 2);
  nlohmann::json ceil = {{"read_gbps", gbps}, {"weight_bytes", weight_bytes}, {"macs_per_token", macs},
                         {"fp32_tflops", f.fp32_tflops}, {"int8_tops", f.int8_tops}, {"timestamps", timestamps}};
  std::vector<std::pair<double, std::map<std::string, double>>> prof(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const uint32_t s = table[i].streams;
    const double bw_ms = weight_bytes / (gbps * 1e9) * 1e3;  // weights once per step
    double ar_ms = 0;  // the faster of the arithmetic rates given
    if (f.fp32_tflops > 0) ar_ms = 2 * macs * s / (f.fp32_tflops * 1e12) * 1e3;
    if (f.int8_tops > 0) {
      const double ms = 2 * macs * s / (f.int8_tops * 1e12) * 1e3;
      ar_ms = ar_ms > 0 ? std::min(ar_ms, ms) : ms;
    }
    const double step_ms = std::max(bw_ms, ar_ms);
    table[i].ceiling_tok_s = s / (step_ms / 1e3);
    nlohmann::json& js = out["streams"][i];
    js["ceiling_tok_s"] = table[i].ceiling_tok_s;
    js["ceiling_bandwidth_tok_s"] = s / (bw_ms / 1e3);
    if (ar_ms > 0) js["ceiling_arithmetic_tok_s"] = s / (ar_ms / 1e3);
    js["of_ceiling"] = table[i].aggregate_tok_s / table[i].ceiling_tok_s;
    js["steady_of_ceiling"] = table[i].steady_tok_s / table[i].ceiling_tok_s;
    if (!timestamps) continue;
    auto p = profileStep(*le, s, pos, le->ctx->info().cpuAdapter() ? 1 : f.profile_repeat, f.sampling);
    if (!p) return reportError(p.error(), json);
    prof[i] = *p;
    js["gpu_ms_per_step"] = p->first;
    for (const auto& [fam, ms] : p->second) js["gpu_ms_by_family"][fam] = ms;
  }
  out["ceiling"] = ceil;
  // x̂'s int8 digits in the decode projections of the profiled forward (max_streams rows: the engine's but where
  // that is one stream and the engine has two rows; 0: f32 x).
  const Forward& fw = *le->forward;
  out["digits"] = {{"projections", fw.decodeDigits()}, {"mlp", fw.decodeMlpDigits()}, {"gdn", fw.decodeGdnDigits()}};
  out["interactive_ttft_ms"] = {{"idle", *idle},
                                {"beside_background_batch", *under_batch},
                                {"preempting_background", *under_preemptible},
                                {"ratio_beside_batch", *under_batch / *idle},
                                {"ratio_preempting", *under_preemptible / *idle}};
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%s on %s: %u rows, %u tokens per stream, K=%u, %.1f MB of weights", model_id.c_str(),
              dev ? dev->device.c_str() : "?", rows, tokens, eo.decode_steps, weight_bytes / 1e6);
  if (f.sampling.temperature > 0)
    std::printf(", sampled at temperature %g, top-p %g", f.sampling.temperature, f.sampling.top_p);
  if (fw.decodeDigits() && max_streams == rows) {
    std::printf(", x̂ in %u int8 digit(s), the MLP's %u", fw.decodeDigits(), fw.decodeMlpDigits());
    if (fw.model().config.arch == Arch::kQwen3_5) std::printf(", the GDN projections' %u", fw.decodeGdnDigits());
  }
  std::printf("\n");
  std::printf("ceiling: the weights once per step at %.1f GB/s (measured)", gbps);
  if (f.fp32_tflops > 0) std::printf(", %.1f FP32 TFLOP/s", f.fp32_tflops);
  if (f.int8_tops > 0) std::printf(", %.1f int8 TOP/s", f.int8_tops);
  std::printf(" (given), %.0f multiply-adds per token\n\n", macs);
  std::printf("| streams | aggregate tok/s | per-stream tok/s | vs 1 stream | steady tok/s | steady vs 1 "
              "| MB weights / token | ceiling tok/s | steady of ceiling |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& r : table)
    std::printf("| %u | %.1f | %.1f | %.2fx | %.1f | %.2fx | %.1f | %.0f | %.1f%% |\n", r.streams, r.aggregate_tok_s,
                r.per_stream_tok_s, table[0].aggregate_tok_s > 0 ? r.aggregate_tok_s / table[0].aggregate_tok_s : 0,
                r.steady_tok_s, table[0].steady_tok_s > 0 ? r.steady_tok_s / table[0].steady_tok_s : 0,
                r.weight_mb_per_token, r.ceiling_tok_s, 100 * r.steady_tok_s / r.ceiling_tok_s);
  if (!timestamps) {
    std::printf("\nGPU time by kernel family: not available (the adapter has no timestamp queries)\n");
  } else {
    std::printf("\nGPU ms of one decode step by kernel family (every row active at position %u; each dispatch in a "
                "pass of its own)\n",
                pos);
    std::printf("| streams | total | gemv | attention | gdn | embed | sample |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < table.size(); ++i) {
      auto fam = [&](const char* k) {
        auto it = prof[i].second.find(k);
        return it == prof[i].second.end() ? 0.0 : it->second;
      };
      std::printf("| %u | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", table[i].streams, prof[i].first, fam("gemv"),
                  fam("attention"), fam("gdn"), fam("embed"), fam("sample"));
    }
  }
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
                    app.add_option("--streams", f->streams, "concurrent streams to measure, comma separated (1..32)")
                        ->delimiter(',')
                        ->check(bounded<uint32_t>(1, 32))
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
                    app.add_option("--fp32-tflops", f->fp32_tflops,
                                   "the adapter's FP32 rate, for the arithmetic ceiling (0: bandwidth only)")
                        ->check(CLI::NonNegativeNumber);
                    app.add_option("--int8-tops", f->int8_tops,
                                   "the adapter's packed-int8 rate in T ops/s, for the arithmetic ceiling")
                        ->check(CLI::NonNegativeNumber);
                    app.add_option("--profile-repeat", f->profile_repeat,
                                   "times each dispatch is repeated in its timed pass (GPU adapters)")
                        ->check(bounded<uint32_t>(1, 100))
                        ->capture_default_str();
                    app.add_option("--temperature", f->sampling.temperature,
                                   "the streams' temperature (0: greedy; each stream seeded)")
                        ->check(CLI::Range(0.0, 2.0))
                        ->capture_default_str();
                    app.add_option("--top-p", f->sampling.top_p, "the streams' top-p, with --temperature")
                        ->check(CLI::Range(0.01, 1.0))
                        ->capture_default_str();
                    addAdapterFlag(app, f->adapter);
                    addJsonFlag(app, f->json);
                    return [f] { return runBenchConcurrent(*f); };
                  }}};

}  // namespace
}  // namespace ewgpu::cli
