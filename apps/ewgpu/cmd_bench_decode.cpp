// ewgpu bench decode MODEL [--steps 1,2,4,8,16,32] [--tokens N] [--json]: decode throughput per K (decode steps
// per GPU sync) against the floor = weight bytes per token / measured read bandwidth + dispatches per token ×
// measured dependent-dispatch cost. Also GPU ms/token (timestamps), CPU encode ms/token, passes per token.
// ewgpu bench prefill MODEL [--lengths 128,512] [--profile] [--json]: prefill tok/s and achieved FLOP rate; with
// --profile, the last prefill chunk's GPU time kernel by kernel.
#include "command.h"
#include "gpu/microbench.h"
#include "model/expected_params.h"
#include "runtime/local_engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace ewgpu::cli {
namespace {

// What the benchmark's row asks of the sampler, as the executor decides it (sampleRowBatch).
SampleBatch batchOf(const SamplingParams& p, const Forward& f) {
  return sampleRowBatch(p, (uint32_t)f.model().config.vocab);
}

using Clock = std::chrono::steady_clock;

// Flags of bench decode and bench prefill (prefill uses model, adapter, activations, lengths, json).
struct BenchFlags {
  std::string model, adapter;
  kernels::Activations activations = kernels::Activations::kAuto;
  std::vector<uint32_t> steps = {1, 2, 4, 8, 16, 32}, lengths = {128, 512};
  uint32_t tokens = 128, prompt_tokens = 16, context = 1024, profile_repeat = 20;
  bool profile = false, json = false;
  SamplingFlags sampling;
};

struct Setup {
  LocalEngine e;
  gpu::MicrobenchResult floor;
};

Result<Setup> setup(const BenchFlags& f, uint32_t max_steps, uint32_t context) {
  LocalEngineOptions lo;
  lo.gpu.adapter = f.adapter;
  lo.forward.max_steps = max_steps;
  lo.forward.context = context;
  lo.forward.activations = f.activations;
  auto e = LocalEngine::load(f.model, lo);
  if (!e) return std::move(e).error();
  gpu::MicrobenchOptions mo;
  mo.repeats = 3;
  mo.dispatches = 1000;
  if ((*e).ctx->info().cpuAdapter()) mo.read_bytes = 32ull << 20;
  auto mb = gpu::runMicrobench(*(*e).ctx, mo);
  if (!mb) return std::move(mb).error();
  return Setup{std::move(*e), *mb};
}

// Runs one greedy generation of `tokens` tokens with K steps per sync; returns decode ms per token (after the
// first token) and fills GPU ms/token from a timestamped K-step submission.
struct DecodeRow {
  uint32_t k = 0;
  double tok_s = 0, ms_per_token = 0, gpu_ms_per_token = 0, encode_ms_per_token = 0, passes_per_token = 0;
};

Result<DecodeRow> measure(LocalEngine& e, uint32_t k, uint32_t tokens, uint32_t prompt_tokens,
                          const SamplingParams& sampling) {
  DecodeRow row{k};
  Generator gen(*e.ctx, *e.forward, nullptr, k);
  GenerationRequest req;
  for (uint32_t i = 0; i < prompt_tokens; ++i) req.prompt.push_back((int32_t)(i * 7919 % e.model->config.vocab));
  req.sampling = sampling;
  req.sampling.max_tokens = tokens;
  GenerationResult res;
  auto id = gen.submit(req, {nullptr, [&](const GenerationResult& r) { res = r; }});
  if (!id) return std::move(id).error();
  EWGPU_TRY(gen.runToCompletion());
  if (res.error) return *res.error;
  row.ms_per_token = res.completion_tokens > 1 ? res.decode_ms / (res.completion_tokens - 1) : 0;
  row.tok_s = row.ms_per_token > 0 ? 1000 / row.ms_per_token : 0;
  // GPU time of K steps (timestamps) and CPU encode time of K steps, on the row made active again: the generation
  // above finished it, and a finished row's sampler only marks the step, which would leave sampling out of the time.
  const Forward& fwd = *e.forward;
  const uint32_t one = 1, zero = 0, pos = prompt_tokens, budget = 1u << 30;
  e.ctx->write(fwd.rows(), kRowPos * 4, &pos, 4);
  e.ctx->write(fwd.rows(), kRowActive * 4, &one, 4);
  e.ctx->write(fwd.rows(), kRowOutIndex * 4, &zero, 4);
  e.ctx->write(fwd.rows(), kRowFinish * 4, &zero, 4);
  SamplingParams open = sampling;  // the same parameters with a budget the timed steps cannot reach
  open.max_tokens = budget;
  uint32_t pw[Forward::kParamWords] = {};
  encodeParams(open, pw);
  e.ctx->write(fwd.params(), 0, pw, sizeof pw);
  e.ctx->write(fwd.activeRows(), 0, &one, 4);
  auto timer = gpu::Timer::create(*e.ctx, 64);
  if (!timer) return std::move(timer).error();
  gpu::Recorder rec(*e.ctx, 0);
  rec.setTimer(timer->get());
  auto t0 = Clock::now();
  for (uint32_t s = 0; s < k; ++s) e.forward->recordDecodeStep(rec, 0, batchOf(sampling, *e.forward), pos + s + 1);
  row.encode_ms_per_token = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / k;
  (*timer)->resolve(rec);
  row.passes_per_token = (double)rec.stats().passes / k;
  EWGPU_TRY(rec.submit());
  EWGPU_TRY(e.ctx->finish());
  auto ns = (*timer)->readTotalNs(*e.ctx);
  if (ns && *ns) row.gpu_ms_per_token = (double)*ns / 1e6 / k;
  return row;
}

// Times what `record` records kernel by kernel: each dispatch is issued `repeat` times in a pass of its own and
// timed (pass time / repeat: the dispatch's cost between neighbours). With repeat 1 every figure carries a pass's
// overhead, as the sampler's do: its dispatches are issued once (Recorder::dispatchOnce), since a repeated phase
// would append to the row's candidate list again. Repeated dispatches repeat their side effects on the engine's
// state, so a profile runs last. Prints the
// total and share per kernel, then the dispatches of the first layer (up to the second run of `layer_marks`
// kernels, one run per layer) and the last six.
template <class Record>
int profile(LocalEngine& e, uint32_t repeat, const std::string& what, const std::vector<std::string>& layer_marks,
            Record record) {
  auto timer = gpu::Timer::create(*e.ctx, 2048);
  if (!timer) return reportError(timer.error(), false);
  gpu::Recorder rec(*e.ctx, 0);
  rec.setTimer(timer->get());
  rec.setSplitPasses(true, repeat);
  record(rec);
  (*timer)->resolve(rec);
  Status st = rec.submit();
  if (st) st = e.ctx->finish();
  if (!st) return reportError(st.error(), false);
  auto per = (*timer)->readPassNs(*e.ctx);
  if (!per) return reportError(per.error(), false);
  std::map<std::string, std::pair<double, int>> by;
  double total = 0;
  for (size_t i = 0; i < per->size() && i < rec.passLabels().size(); ++i) {
    auto& [ms, n] = by[rec.passLabels()[i]];
    (*per)[i] /= rec.passRepeats()[i];
    ms += (*per)[i] / 1e6;
    ++n;
    total += (*per)[i] / 1e6;
  }
  std::printf("\nprofile of %s (each dispatch %u times in a pass of its own, the sampler's once): %.3f ms\n"
              "%-18s %6s %10s %8s\n",
              what.c_str(), repeat, total, "kernel", "count", "ms", "share");
  for (const auto& [name, v] : by)
    std::printf("%-18s %6d %10.3f %7.1f%%\n", name.c_str(), v.second, v.first, 100 * v.first / total);
  const auto& labels = rec.passLabels();
  const auto& details = rec.passDetails();
  size_t n = std::min(per->size(), labels.size()), first_layer_end = n, seen = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::find(layer_marks.begin(), layer_marks.end(), labels[i]) != layer_marks.end() &&
        (i == 0 || labels[i - 1] != labels[i]) && ++seen == 2) {
      first_layer_end = i;
      break;
    }
  std::printf("\nper dispatch (first layer, then the last six):\n");
  for (size_t i = 0; i < n; ++i) {
    if (i >= first_layer_end && i + 6 < n) continue;
    std::printf("%4zu %-18s %9.1f us  %s\n", i, labels[i].c_str(), (*per)[i] / 1e3, details[i].c_str());
  }
  return 0;
}

int runBenchDecode(const BenchFlags& f) {
  const bool json = f.json;
  const std::vector<uint32_t>& ks = f.steps;
  const uint32_t tokens = f.tokens, prompt_tokens = f.prompt_tokens;
  if (prompt_tokens + tokens > f.context)
    return usageError("--prompt-tokens + --tokens (" + std::to_string(prompt_tokens + tokens) +
                          ") exceed --context " + std::to_string(f.context),
                      json);
  // Greedy unless --temperature / --top-p / --top-k say otherwise (sampling costs differ: docs/benchmarks.md).
  SamplingParams sampling;
  sampling.temperature = 0;
  f.sampling.applyTo(sampling);
  uint32_t maxk = *std::max_element(ks.begin(), ks.end());
  auto s = setup(f, maxk, f.context);
  if (!s) return reportError(s.error(), json);
  LocalEngine& e = s->e;
  const ModelConfig& c = e.model->config;
  WeightTraffic wt = weightTraffic(c);
  // The dispatches of the steps timed: the sampler's (SampleBatch: two greedy, five sampled, in a one-row engine) and
  // the attention's variant at the prompt's end (one range per head up to Forward::attnShortPositions()).
  const uint32_t dispatches = e.forward->decodeDispatches(batchOf(sampling, *e.forward), prompt_tokens + tokens);
  const double bw_floor_ms = wt.bytes_per_token / (s->floor.best_gbps * 1e6);
  const double dispatch_floor_ms = dispatches * s->floor.dispatch_in_pass_us / 1000;
  const double floor_ms = bw_floor_ms + dispatch_floor_ms;
  std::vector<DecodeRow> rows;
  for (uint32_t k : ks) {
    auto r = measure(e, k, tokens, prompt_tokens, sampling);
    if (!r) return reportError(r.error(), json);
    rows.push_back(*r);
  }
  if (json) {
    nlohmann::json j = {{"model_type", c.model_type}, {"quantization", quantName(c.quant)},
                        {"device", e.ctx->info().device}, {"bytes_per_token", wt.bytes_per_token},
                        {"dispatches_per_token", dispatches},
                        {"mlp_digits", e.forward->decodeMlpDigits()}, {"digits", e.forward->decodeDigits()},
                        {"bandwidth_GBps", s->floor.best_gbps},
                        {"dispatch_us", s->floor.dispatch_in_pass_us}, {"floor_ms", floor_ms}, {"rows", nlohmann::json::array()}};
    for (const auto& r : rows)
      j["rows"].push_back({{"steps", r.k}, {"tok_s", r.tok_s}, {"ms_per_token", r.ms_per_token},
                           {"gpu_ms_per_token", r.gpu_ms_per_token}, {"encode_ms_per_token", r.encode_ms_per_token},
                           {"passes_per_token", r.passes_per_token}, {"x_floor", r.ms_per_token / floor_ms}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const uint32_t mlp_digits = e.forward->decodeMlpDigits(), digits = e.forward->decodeDigits();
  auto dname = [](uint32_t n) { return n == 1 ? "one int8 digit" : "two int8 digits"; };
  const std::string xs = !mlp_digits && !digits ? ""
                         : mlp_digits == digits ? std::string(" (x̂ ") + dname(digits) + ")"
                                                : std::string(" (x̂ ") + dname(digits) + ", the MLP's " + dname(mlp_digits) + ")";
  std::printf("%s %s on %s: %.1f MB read per token, %u dispatches per token%s\n", c.model_type.c_str(),
              std::string(quantName(c.quant)).c_str(), e.ctx->info().device.c_str(), wt.bytes_per_token / 1e6,
              dispatches, xs.c_str());
  std::printf("floor = %.3f ms (bytes / %.0f GB/s) + %.3f ms (%u × %.2f us) = %.3f ms/token = %.0f tok/s\n\n",
              bw_floor_ms, s->floor.best_gbps, dispatch_floor_ms, dispatches, s->floor.dispatch_in_pass_us, floor_ms,
              1000 / floor_ms);
  std::printf("%4s %10s %10s %12s %12s %12s %10s\n", "K", "tok/s", "ms/token", "GPU ms/tok", "encode ms/tok",
              "passes/tok", "x floor");
  for (const auto& r : rows)
    std::printf("%4u %10.1f %10.3f %12.3f %12.3f %12.3f %10.2f\n", r.k, r.tok_s, r.ms_per_token, r.gpu_ms_per_token,
                r.encode_ms_per_token, r.passes_per_token, r.ms_per_token / floor_ms);
  if (f.profile)
    return profile(e, f.profile_repeat, "one decode step", {"attention", "gdn_recurrent"},
                   [&](gpu::Recorder& rec) {
                     e.forward->recordDecodeStep(rec, 0, batchOf(sampling, *e.forward), prompt_tokens + maxk + 1);
                   });
  return 0;
}

int runBenchPrefill(const BenchFlags& f) {
  const bool json = f.json;
  const std::vector<uint32_t>& lengths = f.lengths;
  uint32_t maxlen = *std::max_element(lengths.begin(), lengths.end());
  auto s = setup(f, 1, std::max<uint32_t>(maxlen + 8, 1024));
  if (!s) return reportError(s.error(), json);
  LocalEngine& e = s->e;
  const ModelConfig& c = e.model->config;
  const double flops_per_token = 2.0 * (double)parameterCount(c);
  nlohmann::json out = nlohmann::json::array();
  if (!json)
    std::printf("%s %s on %s (prefill chunk %u, prefill x %s%s)\n%8s %12s %12s %12s\n", c.model_type.c_str(),
                std::string(quantName(c.quant)).c_str(), e.ctx->info().device.c_str(), e.forward->prefillChunk(),
                e.forward->prefillDigits() == 0 ? "f32" : e.forward->prefillDigits() == 1 ? "int8" : "int16",
                e.forward->prefillMlpDigits() != e.forward->prefillDigits() ? ", MLP int8" : "", "tokens", "ms",
                "tok/s", "TFLOP/s");
  for (uint32_t n : lengths) {
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      Generator gen(*e.ctx, *e.forward, nullptr, 1);
      GenerationRequest req;
      for (uint32_t i = 0; i < n; ++i) req.prompt.push_back((int32_t)((i * 7919 + rep) % c.vocab));
      req.sampling.temperature = 0;
      req.sampling.max_tokens = 1;
      GenerationResult res;
      auto id = gen.submit(req, {nullptr, [&](const GenerationResult& r) { res = r; }});
      if (!id) return reportError(id.error(), json);
      Status st = gen.runToCompletion();
      if (!st) return reportError(st.error(), json);
      if (res.error) return reportError(*res.error, json);
      best = std::min(best, res.ttft_ms);
    }
    double tps = n / (best / 1000);
    double tflops = tps * flops_per_token / 1e12;
    out.push_back({{"tokens", n}, {"ms", best}, {"tok_s", tps}, {"TFLOPs", tflops}});
    if (!json) std::printf("%8u %12.2f %12.0f %12.2f\n", n, best, tps, tflops);
  }
  if (json)
    std::cout << nlohmann::json{{"device", e.ctx->info().device}, {"prefill_digits", e.forward->prefillDigits()},
                                {"prefill_mlp_digits", e.forward->prefillMlpDigits()},
                                {"rows", out}}.dump(2)
              << "\n";
  if (f.profile && !json) {
    // The last length's last chunk again, from the state its prefill left (the ids, the prefill row and meta hold
    // that chunk's values): the same dispatches with the same grids, positions and keys to attend to. The layers
    // only: the last position's final norm, lm_head and sampling (one row's decode work) are left out.
    const uint32_t n = lengths.back(), chunk = e.forward->prefillChunk();
    const uint32_t tail = n % chunk == 0 ? chunk : n % chunk;
    const std::string what = "the last prefill chunk of " + std::to_string(n) + " tokens (" + std::to_string(tail) +
                             " tokens at positions " + std::to_string(n - tail) + ".." + std::to_string(n - 1) + ", the layers)";
    return profile(e, f.profile_repeat, what, {"qk_prepare", "gdn_conv"},
                   [&](gpu::Recorder& rec) { e.forward->recordPrefillChunk(rec, tail, false, 0); });
  }
  return 0;
}

std::shared_ptr<BenchFlags> benchFlags(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  app.add_option("MODEL", f->model, "an MLC model folder")->required();
  addAdapterFlag(app, f->adapter);
  addActivationsFlag(app, f->activations);
  addJsonFlag(app, f->json);
  return f;
}

Registration reg_decode{{"bench decode", "decode tok/s per K against the bytes/bandwidth + dispatch floor", [](CLI::App& app) {
                           auto f = benchFlags(app);
                           app.add_option("--steps", f->steps, "decode steps per GPU sync (K) to measure, comma separated")
                               ->delimiter(',')
                               ->check(bounded<uint32_t>(1, 32));
                           app.add_option("--tokens", f->tokens, "tokens generated per K")->check(bounded<uint32_t>(2, 1 << 20));
                           app.add_option("--prompt-tokens", f->prompt_tokens, "prompt tokens before the decode")
                               ->check(bounded<uint32_t>(1, 1 << 20));
                           app.add_option("--context", f->context, "positions per sequence")
                               ->check(bounded<uint32_t>(8, 1 << 20));
                           app.add_flag("--profile", f->profile, "then time one decode step kernel by kernel");
                           app.add_option("--profile-repeat", f->profile_repeat, "repeats of each dispatch in --profile")
                               ->check(bounded<uint32_t>(1, 1000));
                           addSamplingFlags(app, f->sampling);
                           return [f] { return runBenchDecode(*f); };
                         }}};
Registration reg_prefill{{"bench prefill", "prefill tok/s and achieved FLOP rate per prompt length", [](CLI::App& app) {
                            auto f = benchFlags(app);
                            app.add_option("--lengths", f->lengths, "prompt lengths, comma separated")
                                ->delimiter(',')
                                ->check(bounded<uint32_t>(1, 1 << 17));
                            f->profile_repeat = 3;
                            app.add_flag("--profile", f->profile,
                                         "then time the last length's last prefill chunk kernel by kernel");
                            app.add_option("--profile-repeat", f->profile_repeat, "repeats of each dispatch in --profile")
                                ->check(bounded<uint32_t>(1, 1000));
                            return [f] { return runBenchPrefill(*f); };
                          }}};

}  // namespace
}  // namespace ewgpu::cli
