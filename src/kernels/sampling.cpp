// Sampling parameters (validation, packing for sample.wgsl), out-ring decoding, and the CPU reference of one
// sampling step. The reference repeats the kernel's f32 steps where IEEE rounding is exact on both sides
// (subtraction, multiplication, the fixed-point products) and uses double for exp/log and sums; see
// docs/sampling.md for where the two may legitimately disagree.
#include "kernels/sampling.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <span>
#include <string>

namespace ewgpu {
namespace {

// Parameter word indices (sample.wgsl P_*).
enum : uint32_t {
  kPTemp = 0,
  kPTopP = 1,
  kPTopK = 2,
  kPRep = 3,
  kPPres = 4,
  kPFreq = 5,
  kPSeedLo = 6,
  kPSeedHi = 7,
  kPMaxTokens = 8,
  kPNStop = 9,
  kPStop = 10,
  kPNLogprobs = 18,
  kPNBias = 19,
  kPBias = 20,
  kPWantLogprob = 52,
  kPMask = 53,
};

Error outOfRange(const std::string& field, const nlohmann::json& value, const std::string& allowed) {
  return makeError(ErrorCode::kBadRequest, field + " out of range (allowed " + allowed + ")",
                   {{"field", field}, {"value", value}, {"allowed", allowed}});
}

bool inRange(float x, float lo, float hi) { return std::isfinite(x) && x >= lo && x <= hi; }

uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// NaN -> -FLT_MAX, +-inf -> +-FLT_MAX (the kernel's lval).
float sanitize(float x) {
  if (std::isnan(x)) return -FLT_MAX;
  return std::clamp(x, -FLT_MAX, FLT_MAX);
}

// Penalties then logit_bias, as the kernel applies them in place.
std::vector<float> processLogits(std::span<const float> logits, const SamplingParams& p,
                                 std::span<const uint32_t> counts) {
  std::vector<float> l(logits.size());
  for (size_t i = 0; i < l.size(); ++i) l[i] = sanitize(logits[i]);
  const float rep = p.repetition_penalty, pres = p.presence_penalty, freq = p.frequency_penalty;
  if (rep != 1.0f || pres != 0.0f || freq != 0.0f) {
    const float inv_rep = 1.0f / rep;
    for (size_t i = 0; i < l.size(); ++i) {
      const uint32_t c = counts[i];
      if (c == 0) continue;
      float x = l[i] > 0.0f ? l[i] * inv_rep : l[i] * rep;
      const uint32_t gen = c & ~kCountPromptBit;
      if (gen > 0) {
        x = x - pres;
        x = x - freq * static_cast<float>(gen);
      }
      l[i] = sanitize(x);
    }
  }
  const size_t nb = std::min<size_t>(p.logit_bias.size(), kSampleMaxBias);
  for (size_t j = 0; j < nb; ++j) {
    const auto [tok, bias] = p.logit_bias[j];
    if (tok >= 0 && static_cast<size_t>(tok) < l.size()) l[tok] = sanitize(l[tok] + bias);
  }
  return l;
}

// The key of the k-th largest element (1-based) of `keys` (copied).
uint32_t kthLargestKey(std::vector<uint32_t> keys, size_t k) {
  std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<>());
  return keys[k - 1];
}

// Top-p threshold key among tokens with key >= tk: the largest key t whose fixed-point mass
// sum(q_i : key_i >= t) reaches ceil(Qtot * p24 / 2^24).
uint32_t topPThreshold(const std::vector<float>& l, const std::vector<uint32_t>& keys, float m, float inv_t,
                       uint32_t tk, float top_p, double* margin) {
  double zs = 0;
  for (size_t i = 0; i < l.size(); ++i)
    if (keys[i] >= tk) zs += std::exp(static_cast<double>((l[i] - m) * inv_t));
  const float qscale = 2147483648.0f / static_cast<float>(zs);
  std::vector<std::pair<uint32_t, uint32_t>> kq;  // (key, q)
  uint64_t total = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (keys[i] < tk) continue;
    const float e = static_cast<float>(std::exp(static_cast<double>((l[i] - m) * inv_t)));
    const auto q = static_cast<uint32_t>(std::nearbyint(e * qscale));
    if (q == 0) continue;
    kq.emplace_back(keys[i], q);
    total += q;
  }
  const uint64_t p24 = static_cast<uint64_t>(std::nearbyint(top_p * 16777216.0f));
  const uint64_t target = std::max<uint64_t>(1, (total * p24 + (1u << 24) - 1) >> 24);
  std::sort(kq.begin(), kq.end(), std::greater<>());
  uint64_t acc = 0, before = 0;  // mass of the groups above the current one
  for (size_t i = 0; i < kq.size(); ++i) {
    acc += kq[i].second;
    const bool group_end = i + 1 == kq.size() || kq[i + 1].first != kq[i].first;
    if (!group_end) continue;
    if (acc >= target) {
      *margin = static_cast<double>(std::min(acc - target, target - before)) / static_cast<double>(total);
      return kq[i].first;
    }
    before = acc;
  }
  return kq.empty() ? 0 : kq.back().first;
}

}  // namespace

Status SamplingParams::validate(int vocab) const {
  if (vocab <= 0) return outOfRange("vocab", vocab, "> 0");
  if (!inRange(temperature, 0, 100)) return outOfRange("temperature", temperature, "[0, 100]");
  if (!(std::isfinite(top_p) && top_p > 0 && top_p <= 1)) return outOfRange("top_p", top_p, "(0, 1]");
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0 && repetition_penalty <= 100))
    return outOfRange("repetition_penalty", repetition_penalty, "(0, 100]");
  if (!inRange(presence_penalty, -2, 2)) return outOfRange("presence_penalty", presence_penalty, "[-2, 2]");
  if (!inRange(frequency_penalty, -2, 2)) return outOfRange("frequency_penalty", frequency_penalty, "[-2, 2]");
  if (max_tokens < 1) return outOfRange("max_tokens", max_tokens, ">= 1");
  if (stop_token_ids.size() > kSampleMaxStop)
    return outOfRange("stop_token_ids", stop_token_ids.size(), "at most 8 ids");
  for (int32_t id : stop_token_ids)
    if (id < 0 || id >= vocab) return outOfRange("stop_token_ids", id, "[0, vocab)");
  if (n_logprobs > kSampleMaxTop) return outOfRange("top_logprobs", n_logprobs, "[0, 20]");
  if (n_logprobs > 0 && !logprobs)
    return makeError(ErrorCode::kBadRequest, "top_logprobs requires logprobs", {{"field", "top_logprobs"}});
  if (logit_bias.size() > kSampleMaxBias) return outOfRange("logit_bias", logit_bias.size(), "at most 16 entries");
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= vocab) return outOfRange("logit_bias", id, "token ids in [0, vocab)");
    if (!inRange(bias, -100, 100)) return outOfRange("logit_bias", bias, "values in [-100, 100]");
  }
  return {};
}

void encodeParams(const SamplingParams& p, uint32_t* row64) {
  std::fill(row64, row64 + kSampleParamWords, 0u);
  row64[kPTemp] = std::bit_cast<uint32_t>(p.temperature);
  row64[kPTopP] = std::bit_cast<uint32_t>(p.top_p);
  row64[kPTopK] = p.top_k;
  row64[kPRep] = std::bit_cast<uint32_t>(p.repetition_penalty);
  row64[kPPres] = std::bit_cast<uint32_t>(p.presence_penalty);
  row64[kPFreq] = std::bit_cast<uint32_t>(p.frequency_penalty);
  row64[kPSeedLo] = static_cast<uint32_t>(p.seed);
  row64[kPSeedHi] = static_cast<uint32_t>(p.seed >> 32);
  row64[kPMaxTokens] = p.max_tokens;
  const uint32_t n_stop = std::min<uint32_t>(p.stop_token_ids.size(), kSampleMaxStop);
  row64[kPNStop] = n_stop;
  for (uint32_t j = 0; j < n_stop; ++j) row64[kPStop + j] = static_cast<uint32_t>(p.stop_token_ids[j]);
  row64[kPNLogprobs] = std::min(p.n_logprobs, kSampleMaxTop);
  const uint32_t n_bias = std::min<uint32_t>(p.logit_bias.size(), kSampleMaxBias);
  row64[kPNBias] = n_bias;
  for (uint32_t j = 0; j < n_bias; ++j) {
    row64[kPBias + 2 * j] = static_cast<uint32_t>(p.logit_bias[j].first);
    row64[kPBias + 2 * j + 1] = std::bit_cast<uint32_t>(p.logit_bias[j].second);
  }
  row64[kPWantLogprob] = p.logprobs ? 1u : 0u;
  row64[kPMask] = p.token_mask ? 1u : 0u;
}

SampleOut decodeOut(const uint32_t* row44) {
  SampleOut o;
  o.active = row44[0] != kSampleInactive;
  o.token = o.active ? static_cast<int32_t>(row44[0]) : -1;
  o.logprob = std::bit_cast<float>(row44[1]);
  const uint32_t n = std::min(row44[2], kSampleMaxTop);
  for (uint32_t j = 0; j < n; ++j)
    o.top.push_back({static_cast<int32_t>(row44[3 + 2 * j]), std::bit_cast<float>(row44[4 + 2 * j])});
  o.finish = static_cast<SampleFinish>(row44[43]);
  return o;
}

uint32_t sampleWorkgroupSize(const DeviceInfo& d) {
  if (const char* e = std::getenv("EWGPU_SAMPLE_WG")) return (uint32_t)std::strtoul(e, nullptr, 10);  // A/B runs
  if (d.cpuAdapter()) return 64;
  for (uint32_t wg : {1024u, 512u}) {
    // sample.wgsl's workgroup memory: 8 histogram copies of 256 bins, the combined histogram, 16 chunk sums, the
    // 72-word state, 16 bytes of reduction slots per thread and 16 per group of 16 threads.
    const uint32_t bytes = 8 * 256 * 4 + 256 * 4 + 16 * 4 + 72 * 4 + wg * 16 + wg / 16 * 16;
    if (wg <= d.max_compute_invocations_per_workgroup && bytes <= d.max_compute_workgroup_storage_size) return wg;
  }
  return 256;
}

uint32_t sampleSplitWorkgroupSize(uint32_t wg) {
  if (const char* e = std::getenv("EWGPU_SAMPLE_SPLIT_WG")) return (uint32_t)std::strtoul(e, nullptr, 10);  // A/B
  return std::min(wg, kSampleSplitWg);
}

bool sampleCpuServes(const DeviceInfo& d) {
  if (const char* e = std::getenv("EWGPU_SAMPLE_CPU"); e && std::string(e) == "0") return false;
  return d.cpuAdapter();
}

uint32_t sampleUnroll() {
  if (const char* e = std::getenv("EWGPU_SAMPLE_UNROLL")) return std::clamp<uint32_t>(std::atoi(e), 1, 8);
  return 8;
}

bool sampleSplit() {
  const char* e = std::getenv("EWGPU_SAMPLE_SPLIT");
  return !(e && std::string(e) == "0");
}

Result<SampleOp> SampleOp::create(gpu::Context& ctx, bool cpu_kernel, bool split, gpu::Constants constants,
                                  const Buffers& b, uint32_t max_rows) {
  SampleOp op;
  const uint32_t V = (uint32_t)constants.at("V");
  op.chunks_ = (V + kSampleChunk - 1) / kSampleChunk;
  if (cpu_kernel) split = false;
  // The scratch row of sample.wgsl (srow()): per chunk maxima 4, best draws 2, exp sums 2, mass totals 2; the count
  // above the list 1; the candidate list. One word per row when unsplit (bound, unused). The candidate counter row
  // (kSampleCtrStride words) also holds the row's mass histogram.
  const uint64_t srow = split ? (uint64_t)op.chunks_ * 10 + 1 + kSampleCap : 1;
  if (!cpu_kernel) {
    EWGPU_ASSIGN(op.scratch_, ctx.createBuffer(srow * max_rows * 4, gpu::BufferKind::kStorage, "sample-scratch"));
    EWGPU_ASSIGN(op.ctr_, ctx.createBuffer((uint64_t)std::max<uint32_t>(max_rows, 1) * kSampleCtrStride * 4,
                                           gpu::BufferKind::kStorage, "sample-candidates"));
    constants["NW"] = op.chunks_;
    constants["CHUNK"] = kSampleChunk;
    constants["CAP"] = kSampleCap;
    if (!constants.count("EARLY_K")) constants["EARLY_K"] = sampleEarlyTopK() ? 1 : 0;
    if (!constants.count("SG")) {
      const auto wg = constants.find("WG");
      constants["SG"] = sampleSubgroupReduce(ctx.info(), wg == constants.end() ? 256 : (uint32_t)wg->second);
    }
  }
  std::vector<gpu::Binding> bind{{b.logits}, {b.params}, {b.counts}, {b.rows}, {b.out}, {b.mask}};
  if (!cpu_kernel) bind.insert(bind.end(), {{&op.scratch_}, {&op.ctr_}});
  // The split phases run on fewer threads per workgroup than the one dispatch (sampleSplitWorkgroupSize).
  const auto wg_it = constants.find("WG");
  const uint32_t whole_wg = wg_it == constants.end() ? 256 : (uint32_t)wg_it->second;
  if (split) constants["WG"] = sampleSplitWorkgroupSize(whole_wg);
  for (uint32_t phase : split ? std::vector<uint32_t>{1, 2, 3, 4, 5} : std::vector<uint32_t>{0}) {
    if (!cpu_kernel) constants["PHASE"] = phase;
    auto k = ctx.kernel(cpu_kernel ? "sample_cpu" : "sample", constants);
    if (!k) return std::move(k).error();
    auto bg = ctx.bindGroup(**k, bind);
    if (!bg) return std::move(bg).error();
    op.steps_.push_back({*k, std::move(*bg), phase >= 1 && phase <= 3});
  }
  if (split) {
    constants["PHASE"] = 0;
    constants["WG"] = whole_wg;
    auto k = ctx.kernel("sample", constants);
    if (!k) return std::move(k).error();
    auto bg = ctx.bindGroup(**k, bind);
    if (!bg) return std::move(bg).error();
    op.whole_ = {*k, std::move(*bg), false};
    // Phase 6 only when it is asked for: an A/B option, not yet measured, so loads do not compile it.
    constants["WG"] = sampleSplitWorkgroupSize(whole_wg);
    op.split_constants_ = constants;
    op.buffers_ = b;
    if (sampleTopKPhase6()) EWGPU_TRY(op.setTopKPhase6(ctx, true));
  }
  return op;
}

Status SampleOp::setTopKPhase6(gpu::Context& ctx, bool on) {
  if (!split()) return makeError(ErrorCode::kInternal, "phase 6 needs the split sampler", {});
  if (on && steps_.size() < 6) {
    gpu::Constants constants = split_constants_;
    constants["PHASE"] = 6;
    auto k = ctx.kernel("sample", constants);
    if (!k) return std::move(k).error();
    const Buffers& b = buffers_;
    auto bg =
        ctx.bindGroup(**k, {{b.logits}, {b.params}, {b.counts}, {b.rows}, {b.out}, {b.mask}, {&scratch_}, {&ctr_}});
    if (!bg) return std::move(bg).error();
    steps_.push_back({*k, std::move(*bg), false});
  }
  topk_phase6_ = on;
  return {};
}

uint32_t sampleSubgroupReduce(const DeviceInfo& d, uint32_t wg) {
  const char* e = std::getenv("EWGPU_SAMPLE_SG");
  const bool on = e ? std::string(e) != "0" : !d.cpuAdapter();
  if (!on || !d.subgroups || d.subgroup_min_size < 2) return 0;
  uint32_t sg = 2;
  while (sg * 2 <= std::min({d.subgroup_min_size, 32u, wg})) sg *= 2;
  return sg;
}

uint32_t sampleArgmaxSplitRows() {
  if (const char* e = std::getenv("EWGPU_SAMPLE_ARGMAX_ROWS")) return (uint32_t)std::strtoul(e, nullptr, 10);
  return kSampleArgmaxSplitRows;
}

uint32_t sampleSampledSplitRows() {
  if (const char* e = std::getenv("EWGPU_SAMPLE_SPLIT_ROWS")) return (uint32_t)std::strtoul(e, nullptr, 10);
  return kSampleSampledSplitRows;
}

bool sampleEarlyTopK() {
  // Read once: the kernels' EARLY_K (SampleOp::create) and the batches (sampleRowBatch) must agree.
  static const bool on = [] {
    const char* e = std::getenv("EWGPU_SAMPLE_EARLY_TOPK");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

bool sampleTopKPhase6() {
  const char* e = std::getenv("EWGPU_SAMPLE_TOPK_PHASE6");
  return e && std::string(e) == "1";
}

SampleBatch sampleRowBatch(const SamplingParams& p, uint32_t vocab) {
  const bool lp = p.logprobs || p.n_logprobs > 0;
  if (!(p.temperature > 0)) return lp ? SampleBatch::kGreedy : SampleBatch::kArgmax;
  const uint64_t chunks = (vocab + kSampleChunk - 1) / kSampleChunk;
  const bool early = p.top_k > 0 && p.top_k < vocab && (uint64_t)p.top_k * chunks <= kSampleCap;
  return early && !lp && !p.token_mask && sampleEarlyTopK() ? SampleBatch::kSampledTopK : SampleBatch::kSampled;
}

SampleBatch sampleBatchJoin(SampleBatch a, SampleBatch b) {
  if (a == b) return a;
  if (a == SampleBatch::kArgmax) return b;
  if (b == SampleBatch::kArgmax) return a;
  // kSampled with anything, or kGreedy (a logprob: phase 2's Z1) with kSampledTopK.
  return SampleBatch::kSampled;
}

namespace {

// The split phases a batch runs (indices into the five steps), or none for the one dispatch.
std::span<const size_t> splitPhases(SampleBatch batch, uint32_t rows, uint32_t argmax_rows, uint32_t sampled_rows,
                                    bool topk_phase6) {
  static constexpr size_t kAll[] = {0, 1, 2, 3, 4};
  // Phase 1 applies a chunk's penalties, bias and mask and writes its max; phase 4 finishes a greedy row from those
  // maxima. Phases 2 and 3 do nothing for a greedy row without a logprob, and phase 5 only takes rows with top-n
  // logprobs or a candidate list past CAP.
  static constexpr size_t kArgmaxPhases[] = {0, 3};
  // Phase 1 lists a top-k row's candidates (sampleRowBatch's kSampledTopK), so phases 2 and 3 have nothing to do;
  // phase 6 is phases 4 and 5 in one dispatch (sampleTopKPhase6).
  static constexpr size_t kTopKPhases[] = {0, 3, 4};
  static constexpr size_t kTopKPhase6[] = {0, 5};
  switch (batch) {
    case SampleBatch::kSampled:
      if (rows <= sampled_rows) return kAll;
      return {};
    case SampleBatch::kSampledTopK:
      if (rows <= sampled_rows) return topk_phase6 ? std::span<const size_t>(kTopKPhase6) : kTopKPhases;
      return {};
    case SampleBatch::kGreedy:
      return {};
    case SampleBatch::kArgmax:
      if (rows <= argmax_rows) return kArgmaxPhases;
      return {};
  }
  return {};
}

}  // namespace

uint32_t SampleOp::dispatches(uint32_t rows, SampleBatch batch) const {
  if (!split()) return (uint32_t)steps_.size();
  const size_t n = splitPhases(batch, rows, argmax_rows_, sampled_rows_, topk_phase6_).size();
  return n == 0 ? 1 : (uint32_t)n;
}

void SampleOp::record(gpu::Recorder& rec, uint32_t rows, SampleBatch batch) const {
  static constexpr size_t kOnly[] = {0};  // an op without the split step: its one kernel
  const std::span<const size_t> phases =
      split() ? splitPhases(batch, rows, argmax_rows_, sampled_rows_, topk_phase6_) : kOnly;
  // Once each under a profile's repeats: a repeated phase would add to the row's list and histogram again.
  if (phases.empty()) {
    rec.dispatchOnce(*whole_.kernel, whole_.bg, rows);
    return;
  }
  for (size_t i : phases) {
    const Step& s = steps_[i];
    if (s.chunked) {
      rec.dispatchOnce(*s.kernel, s.bg, chunks_, rows);
    } else {
      rec.dispatchOnce(*s.kernel, s.bg, rows);
    }
  }
}

uint32_t sampleOrderKey(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

double sampleExpDraw(uint64_t seed, uint32_t generated, uint32_t token) {
  const uint32_t k1 = mix32(static_cast<uint32_t>(seed) ^ 0x3c6ef372u);
  const uint32_t k2 = mix32(static_cast<uint32_t>(seed >> 32) ^ mix32(k1 ^ 0xa54ff53au));
  const uint32_t ks = mix32(k2 ^ mix32(generated + 0x9e3779b9u));
  uint32_t h1 = mix32(mix32(token ^ ks) ^ k1);
  const uint32_t h2 = mix32(h1 + ks);
  h1 = std::max(h1, 1u);
  const int lz = std::countl_zero(h1);
  uint32_t bits = h1 << lz;
  if (lz > 0) bits |= h2 >> (32 - lz);
  const double v = std::ldexp(static_cast<double>(bits >> 9) + 0.5, -(23 + lz));
  return -std::log1p(-v);
}

SampleReference sampleReferenceFull(std::span<const float> logits, const SamplingParams& p,
                                    std::span<const uint32_t> counts, uint32_t generated) {
  SampleReference r;
  r.processed = processLogits(logits, p, counts);
  const std::vector<float>& l = r.processed;
  const size_t vocab = l.size();
  std::vector<uint32_t> keys(vocab);
  for (size_t i = 0; i < vocab; ++i) keys[i] = sampleOrderKey(l[i]);
  const size_t best = std::max_element(keys.begin(), keys.end()) - keys.begin();  // first of the largest
  const float m = l[best];

  r.token = static_cast<int32_t>(best);
  r.survivors = 1;
  if (p.temperature > 0) {
    const float inv_t = std::min(1.0f / p.temperature, 1e30f);
    uint32_t threshold = 0;
    if (p.top_k > 0 && p.top_k < vocab) threshold = kthLargestKey(keys, p.top_k);
    if (p.top_p < 1.0f) threshold = topPThreshold(l, keys, m, inv_t, threshold, p.top_p, &r.top_p_margin);
    double best_score = -INFINITY, second_score = -INFINITY;
    r.token = -1;
    r.survivors = 0;
    for (size_t i = 0; i < vocab; ++i) {
      if (keys[i] < threshold) continue;
      ++r.survivors;
      const double s = static_cast<double>((l[i] - m) * inv_t);
      const double score = s - std::log(sampleExpDraw(p.seed, generated, static_cast<uint32_t>(i)));
      if (r.token < 0 || score > best_score) {
        second_score = best_score;
        best_score = score;
        r.token = static_cast<int32_t>(i);
      } else if (score > second_score) {
        second_score = score;
      }
    }
    r.score_gap = best_score - second_score;
  }

  const size_t n_top = std::min<size_t>({p.n_logprobs, kSampleMaxTop, vocab});
  if (p.logprobs || n_top > 0) {
    double z1 = 0;
    for (size_t i = 0; i < vocab; ++i) z1 += std::exp(static_cast<double>(l[i] - m));
    const double log_z1 = std::log(z1);
    auto logprob = [&](size_t i) { return static_cast<float>(static_cast<double>(l[i] - m) - log_z1); };
    r.logprob = logprob(r.token);
    std::vector<uint32_t> order(vocab);
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + n_top, order.end(),
                      [&](uint32_t a, uint32_t b) { return keys[a] != keys[b] ? keys[a] > keys[b] : a < b; });
    for (size_t j = 0; j < n_top; ++j) r.top.push_back({static_cast<int32_t>(order[j]), logprob(order[j])});
  }
  return r;
}

int32_t sampleReference(std::span<const float> logits, const SamplingParams& p, std::span<const uint32_t> counts,
                        uint32_t generated, std::vector<TopLogprob>* top) {
  SampleReference r = sampleReferenceFull(logits, p, counts, generated);
  if (top) *top = std::move(r.top);
  return r.token;
}

}  // namespace ewgpu
