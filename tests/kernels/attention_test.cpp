// qk_prepare + attention (+ embed) against a double-precision CPU reference: GQA, q/k norms, partial rotary,
// Qwen3.5 gating, sliding window, prefill chunks continuing a cache, batched decode rows with their own slots,
// and the same through page tables (kv_page.wgsl: a shuffled pool of 16-position pages, as prefix reuse uses).
#include "kernel_test_util.h"
#include "kernels/attention_cpu.h"

#include <algorithm>
#include <cmath>

namespace ewgpu::kernels {
namespace {

using namespace testing;

struct Shape {
  uint32_t d, hq, hkv, r;
  bool qk_norm, gated;
  uint32_t window = 0;
};

// CPU model of the two kernels over a whole cache.
struct CpuAttn {
  Shape s;
  uint32_t ctx, slots;
  std::vector<double> k, v;  // [slots, hkv, ctx, d]
  std::vector<float> inv_freq, norms;

  std::vector<double> rope(std::vector<double> x, uint32_t pos) const {
    uint32_t half = s.r / 2;
    std::vector<double> o = x;
    for (uint32_t i = 0; i < half; ++i) {
      double a = (double)pos * inv_freq[i];
      o[i] = x[i] * std::cos(a) - x[i + half] * std::sin(a);
      o[i + half] = x[i + half] * std::cos(a) + x[i] * std::sin(a);
    }
    return o;
  }
  std::vector<double> norm(std::vector<double> x, const float* w) const {
    if (!s.qk_norm) return x;
    double ss = 0;
    for (double e : x) ss += e * e;
    double r = 1 / std::sqrt(ss / s.d + 1e-6);
    for (uint32_t i = 0; i < s.d; ++i) x[i] *= r * w[i];
    return x;
  }
  // One token: qkv row -> output row [hq * d]; writes k/v at pos.
  std::vector<double> token(const float* qkv, uint32_t slot, uint32_t pos) {
    uint32_t D = s.d, W = (s.gated ? 2 : 1) * s.hq * D + 2 * s.hkv * D, kbase = (s.gated ? 2 : 1) * s.hq * D;
    (void)W;
    for (uint32_t g = 0; g < s.hkv; ++g) {
      std::vector<double> kk(qkv + kbase + g * D, qkv + kbase + g * D + D);
      kk = rope(norm(kk, norms.data() + D), pos);
      for (uint32_t i = 0; i < D; ++i) {
        k[((size_t)(slot * s.hkv + g) * ctx + pos) * D + i] = kk[i];
        v[((size_t)(slot * s.hkv + g) * ctx + pos) * D + i] = qkv[kbase + s.hkv * D + g * D + i];
      }
    }
    std::vector<double> out(s.hq * D);
    for (uint32_t h = 0; h < s.hq; ++h) {
      const float* qs = qkv + (s.gated ? h * 2 * D : h * D);
      std::vector<double> q = rope(norm(std::vector<double>(qs, qs + D), norms.data()), pos);
      uint32_t g = h / (s.hq / s.hkv);
      uint32_t first = (s.window && pos + 1 > s.window) ? pos + 1 - s.window : 0;
      std::vector<double> sc;
      double mx = -1e300;
      for (uint32_t p = first; p <= pos; ++p) {
        double d = 0;
        for (uint32_t i = 0; i < D; ++i) d += q[i] * k[((size_t)(slot * s.hkv + g) * ctx + p) * D + i];
        sc.push_back(d / std::sqrt((double)D));
        mx = std::max(mx, sc.back());
      }
      double l = 0;
      for (double& e : sc) l += (e = std::exp(e - mx));
      for (uint32_t i = 0; i < D; ++i) {
        double o = 0;
        for (uint32_t p = first; p <= pos; ++p) o += sc[p - first] * v[((size_t)(slot * s.hkv + g) * ctx + p) * D + i];
        o /= l;
        if (s.gated) o /= 1 + std::exp(-(double)qs[D + i]);
        out[h * D + i] = o;
      }
    }
    return out;
  }
};

struct GpuAttn {
  gpu::Buffer kc, vc, inv, norms;
  uint32_t ctx_len;
  Shape s;
  uint32_t wg = 256;  // attention workgroup size (256 or 64)
  bool fused = false;  // decode: attention does qk_prepare's work itself (one dispatch)
  uint32_t split = 1;  // decode with fused: position ranges merged by attention_combine
  std::vector<uint32_t> tables;  // paged: [slots, maxp] page ids appended to every rows buffer (empty: contiguous)
  uint32_t maxp = 0;
  bool cpu = false;  // attention_cpu.wgsl for both passes (CPU adapters' plain-loop kernel)
  bool kv16 = false;  // the cache holds f16 pairs (the KV16 define)
  bool gqa = false;   // fused decode through attention_gqa.wgsl (one workgroup per KV head)
  uint32_t tpp = 1;   // attention.wgsl's threads per scored position
  gpu::Constants base(bool prefill, uint32_t rows_words) const {
    gpu::Constants c{{"D", s.d}, {"HQ", s.hq}, {"HKV", s.hkv}, {"CTX", ctx_len}, {"PREFILL", prefill ? 1 : 0},
                     {"GATED", s.gated ? 1 : 0}};
    if (!tables.empty()) {
      c["PAGED"] = 1;
      c["PAGE"] = 16;
      c["MAXP"] = maxp;
      c["PT"] = rows_words;
    }
    return c;
  }
  // Runs qk_prepare + attention over `tokens` rows of qkv with the given rows buffer.
  std::vector<float> run(const std::vector<float>& qkv, uint32_t tokens, std::vector<uint32_t> rows,
                         bool prefill) {
    gpu::Context& g = ctx();
    const uint32_t rows_words = (uint32_t)rows.size();
    rows.insert(rows.end(), tables.begin(), tables.end());
    auto base = [&](bool p) { return this->base(p, rows_words); };
    auto c1 = base(prefill);
    c1["R"] = s.r;
    c1["QK_NORM"] = s.qk_norm ? 1 : 0;
    const std::vector<std::string> defs = kv16 ? std::vector<std::string>{"KV16"} : std::vector<std::string>{};
    auto prep = g.kernel("qk_prepare", c1, defs);
    EXPECT_TRUE(prep.ok()) << prep.error().toString();
    auto c2 = base(prefill);
    c2["WINDOW"] = s.window;
    c2["SCALE"] = 1.0 / std::sqrt((double)s.d);
    c2["WG"] = wg;
    c2["RS"] = wg == 256 ? 16 : 8;
    const bool one = fused && !prefill;
    if (one) {
      c2["FUSED"] = 1;
      c2["R"] = s.r;
      c2["QK_NORM"] = s.qk_norm ? 1 : 0;
      c2["SPLIT"] = split;
    }
    if (tpp != 1) c2["TPP"] = tpp;
    const bool plain = cpu;  // attention_cpu for both passes; the grid's z says which (2: prefill)
    if (plain) {
      for (const char* unused : {"PREFILL", "FUSED", "SPLIT", "WG", "RS"}) c2.erase(unused);
      c2["R"] = s.r;
      c2["QK_NORM"] = s.qk_norm ? 1 : 0;
      if (!tables.empty()) c2["PT1"] = rows_words;
    }
    const bool grouped = gqa && one;
    if (grouped) {
      for (const char* unused : {"PREFILL", "FUSED"}) c2.erase(unused);
      c2["G"] = s.hq / s.hkv;
      c2["QN"] = s.hq / s.hkv * s.d / 4;
      c2["PN"] = s.hq / s.hkv * wg;
    }
    auto att = g.kernel(plain ? "attention_cpu" : grouped ? "attention_gqa" : "attention", c2, defs);
    EXPECT_TRUE(att.ok()) << att.error().toString();
    auto bqkv = upload(qkv), brows = upload(rows);
    auto bq = poisoned((size_t)tokens * s.hq * s.d), bo = poisoned((size_t)tokens * s.hq * s.d);
    auto bg1 = g.bindGroup(**prep, {{&bqkv}, {&brows}, {&inv}, {&norms}, {&bq}, {&kc}, {&vc}});
    const bool merged = one && split > 1;
    auto bpart = poisoned((size_t)tokens * s.hq * split * (s.d + 4));
    auto bg2 = g.bindGroup(**att, {{one ? &bqkv : &bq}, {&brows}, {&kc}, {&vc}, {&bqkv}, {merged ? &bpart : &bo},
                                   {&inv}, {&norms}});
    EXPECT_TRUE(bg1.ok() && bg2.ok());
    gpu::Recorder rec(g);
    if (!one) rec.dispatch(**prep, *bg1, s.hq + s.hkv, tokens);
    uint32_t gz = merged ? split : 1;
    if (plain && prefill) gz = 2;  // attention_cpu's prefill pass
    rec.dispatch(**att, *bg2, plain ? (s.hq + kAttentionCpuHeads - 1) / kAttentionCpuHeads : grouped ? s.hkv : s.hq,
                 tokens, gz);
    if (merged) {
      auto comb = g.kernel("attention_combine", {{"D", s.d}, {"HQ", s.hq}, {"HKV", s.hkv}, {"SPLIT", split},
                                                 {"GATED", s.gated ? 1 : 0}});
      EXPECT_TRUE(comb.ok()) << comb.error().toString();
      auto bg3 = g.bindGroup(**comb, {{&bpart}, {&bqkv}, {&bo}});
      EXPECT_TRUE(bg3.ok());
      rec.dispatch(**comb, *bg3, s.hq, tokens);
    }
    EXPECT_TRUE(rec.submit().ok());
    return download<float>(bo, (size_t)tokens * s.hq * s.d);
  }
};

void runShape(const Shape& s, uint32_t seed, uint32_t wg = 256, bool fused = false, uint32_t split = 1,
              bool paged = false, bool cpu_kernel = false, bool kv16 = false, bool gqa = false, uint32_t tpp = 1) {
  // f16 K and V: each stored value is off by up to 2^-11 of itself, so outputs by about that much of their scale.
  const double tol = kv16 ? 2e-3 : 2e-5;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  const uint32_t ctx_len = 600, slots = 3;
  CpuAttn cpu{s, ctx_len, slots};
  cpu.k.assign((size_t)slots * s.hkv * ctx_len * s.d, 0);
  cpu.v = cpu.k;
  for (uint32_t i = 0; i < s.r / 2; ++i) cpu.inv_freq.push_back((float)std::pow(10000.0, -2.0 * i / s.r));
  for (uint32_t i = 0; i < 2 * s.d; ++i) cpu.norms.push_back(1.0f + 0.3f * nd(rng));
  std::vector<float> table((size_t)ctx_len * s.r);
  for (uint32_t p = 0; p < ctx_len; ++p)
    for (uint32_t i = 0; i < s.r / 2; ++i) {
      table[(size_t)p * s.r + i] = (float)std::cos((double)p * cpu.inv_freq[i]);
      table[(size_t)p * s.r + s.r / 2 + i] = (float)std::sin((double)p * cpu.inv_freq[i]);
    }
  // Paged: every slot's 38 pages drawn from a shuffled pool of slots * 38 (+ 2 never used).
  const uint32_t maxp = (ctx_len + 15) / 16, pool = slots * maxp + 2;
  std::vector<uint32_t> tables;
  if (paged) {
    std::vector<uint32_t> ids(pool);
    for (uint32_t i = 0; i < pool; ++i) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    tables.assign(ids.begin(), ids.begin() + slots * maxp);
  }
  const size_t kv_floats = (paged ? (size_t)pool * s.hkv * 16 * s.d : cpu.k.size()) / (kv16 ? 2 : 1);
  GpuAttn gpu_{poisoned(kv_floats), poisoned(kv_floats), upload(table), upload(cpu.norms), ctx_len, s, wg, fused, split,
               tables, paged ? maxp : 0, cpu_kernel, kv16, gqa, tpp};
  const uint32_t W = (s.gated ? 2 : 1) * s.hq * s.d + 2 * s.hkv * s.d;
  auto randomRows = [&](uint32_t n) {
    std::vector<float> v((size_t)n * W);
    for (auto& e : v) e = nd(rng);
    return v;
  };
  // Prefill slot 1 in three chunks (150, 70, 300 tokens): each attends to the earlier ones through the cache,
  // and the last reaches past two 256-position blocks of the kernel's online softmax.
  uint32_t pos0 = 0;
  for (uint32_t chunk : {150u, 70u, 300u}) {
    auto qkv = randomRows(chunk);
    std::vector<uint32_t> rows = {1, pos0, 1, 0, 0, 0, 0, 0};
    auto got = gpu_.run(qkv, chunk, rows, /*prefill=*/true);
    std::vector<double> want;
    for (uint32_t t = 0; t < chunk; ++t) {
      auto o = cpu.token(qkv.data() + (size_t)t * W, 1, pos0 + t);
      want.insert(want.end(), o.begin(), o.end());
    }
    expectClose(got, want, tol, "prefill chunk");
    pos0 += chunk;
  }
  // Batched decode: row 0 continues slot 1 at pos0, row 1 starts slot 2 at position 0, row 2 slot 0 at 5
  // (slot 0 positions 0..4 prefilled first).
  {
    auto qkv = randomRows(5);
    std::vector<uint32_t> rows = {0, 0, 1, 0, 0, 0, 0, 0};
    gpu_.run(qkv, 5, rows, true);
    for (uint32_t t = 0; t < 5; ++t) cpu.token(qkv.data() + (size_t)t * W, 0, t);
  }
  for (int step = 0; step < 3; ++step) {
    auto qkv = randomRows(3);
    std::vector<uint32_t> rows = {1, pos0, 1, 0, 0, 0, 0, 0, 2, (uint32_t)step, 1, 0, 0, 0, 0, 0,
                                  0, 5u + step, 1, 0, 0, 0, 0, 0};
    auto got = gpu_.run(qkv, 3, rows, /*prefill=*/false);
    std::vector<double> want;
    uint32_t slot_of[3] = {1, 2, 0}, pos_of[3] = {pos0, (uint32_t)step, 5u + step};
    for (uint32_t b = 0; b < 3; ++b) {
      auto o = cpu.token(qkv.data() + (size_t)b * W, slot_of[b], pos_of[b]);
      want.insert(want.end(), o.begin(), o.end());
    }
    expectClose(got, want, tol, "batched decode");
    ++pos0;
  }
  // Fused decode of inactive rows (finished, or no sequence: stale slot and position) leaves the cache as it was.
  if (fused) {
    // Bit patterns: pages no slot uses keep their NaN poison.
    const auto k0 = download<uint32_t>(gpu_.kc, kv_floats), v0 = download<uint32_t>(gpu_.vc, kv_floats);
    std::vector<uint32_t> rows = {1, pos0, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0};
    gpu_.run(randomRows(3), 3, rows, /*prefill=*/false);
    EXPECT_EQ(download<uint32_t>(gpu_.kc, kv_floats), k0) << "k cache written by an inactive row";
    EXPECT_EQ(download<uint32_t>(gpu_.vc, kv_floats), v0) << "v cache written by an inactive row";
  }
}

TEST(Attention, LlamaShapeGqa) { runShape({64, 8, 2, 64, false, false}, 1); }
TEST(Attention, Qwen3NormsAndHeadDim128) { runShape({128, 4, 2, 128, true, false}, 2); }
TEST(Attention, Qwen35GatedPartialRotary) { runShape({256, 4, 1, 64, true, true}, 3); }
TEST(Attention, SlidingWindow) { runShape({32, 2, 2, 32, false, false, 40}, 4); }
// Decode with q/k norm, RoPE and the KV store fused into attention (the engine's decode path): outputs and the
// cache entries it writes (later steps read them) match the reference.
TEST(Attention, FusedDecode) {
  runShape({64, 8, 2, 64, false, false}, 7, 256, true);
  runShape({128, 4, 2, 128, true, false}, 8, 256, true);
  runShape({256, 4, 1, 64, true, true}, 9, 64, true);
  runShape({32, 2, 2, 32, false, false, 40}, 10, 256, true);
}

// Fused decode split over position ranges and merged (flash-decoding): ranges that are empty for the short rows
// (slot 2 decodes at positions 0..2 with 16 ranges), a sliding window, the Qwen3.5 gate applied in the merge.
TEST(Attention, FusedDecodeSplitAndMerged) {
  runShape({64, 8, 2, 64, false, false}, 11, 256, true, 4);
  runShape({128, 4, 2, 128, true, false}, 12, 256, true, 16);
  runShape({256, 4, 1, 64, true, true}, 13, 256, true, 3);
  runShape({32, 2, 2, 32, false, false, 40}, 14, 64, true, 5);
  runShape({64, 8, 2, 64, false, false}, 25, 64, true, 32);  // the widest split the engine picks
}

// K/V through page tables (prefix reuse's layout): prefill chunks and batched decode rows (fused, and qk_prepare +
// attention with a sliding window) of three slots whose pages are scattered over the pool, against the
// contiguous CPU reference.
TEST(Attention, PagedKvCache) {
  runShape({64, 8, 2, 64, false, false}, 15, 64, true, 1, true);
  runShape({32, 2, 2, 32, false, false, 40}, 17, 64, false, 1, true);
}

// The f16 cache (the engine's default on GPUs): prefill through qk_prepare, fused and split decode, paged, the
// Qwen3.5 gate, a sliding window, within f16's rounding of the double reference (a value in the wrong half of a
// pair, or a wrong element size anywhere, is off by the values' whole scale).
TEST(Attention, F16KvCache) {
  runShape({64, 8, 2, 64, false, false}, 21, 64, true, 1, true, false, true);
  runShape({128, 4, 2, 128, true, false}, 22, 256, true, 4, true, false, true);
  runShape({256, 4, 1, 64, true, true}, 23, 64, false, 1, true, false, true);
  runShape({32, 2, 2, 32, false, false, 40}, 24, 64, true, 5, false, false, true);
}

// CPU adapters' attention (attention_cpu.wgsl: plain loops, one invocation per query head, 4 heads per workgroup),
// prefill chunks after qk_prepare and fused decode through the one kernel: GQA with 8 query heads (two
// workgroups), q/k norms and head dim 128, the Qwen3.5 gate with partial rotary and 256-dim heads, 6 query heads
// over 3 KV heads (a workgroup with two idle lanes), a sliding window, and page tables.
TEST(Attention, CpuAdapterPrefillAndDecode) {
  runShape({64, 8, 2, 64, false, false}, 21, 64, true, 1, false, true);
  runShape({128, 4, 2, 128, true, false}, 22, 64, true, 1, false, true);
  runShape({256, 4, 1, 64, true, true}, 23, 64, true, 1, false, true);
  runShape({32, 6, 3, 32, false, false}, 24, 64, true, 1, true, true);
  runShape({32, 2, 2, 32, false, false, 40}, 25, 64, true, 1, true, true);
}

// Fused decode with the query heads of a KV group in one workgroup (attention_gqa.wgsl, GPUs' decode): GQA 4:1 and
// 2:1 with q/k norms, the Qwen3.5 gate with 256-dim heads (64 threads: its workgroup memory at 256 would pass
// 16 KiB), split and merged ranges, page tables, the f16 cache, a sliding window with one head per group.
TEST(Attention, GroupedQueryHeadsShareAWorkgroup) {
  runShape({64, 8, 2, 64, false, false}, 31, 256, true, 1, false, false, false, true);
  runShape({128, 4, 2, 128, true, false}, 32, 256, true, 4, true, false, false, true);
  runShape({256, 4, 1, 64, true, true}, 33, 64, true, 3, false, false, true, true);
  runShape({64, 8, 2, 64, false, false}, 34, 256, true, 16, true, false, true, true);
  runShape({32, 2, 2, 32, false, false, 40}, 35, 64, true, 5, false, false, false, true);
}

// Scores with TPP threads per position summed by subgroup shuffles (the GPUs' decode and prefill through
// attention.wgsl): 2, 4 and 8 threads where the adapter's subgroups hold them, with prefill blocks that end
// mid-round, fused and split decode (the token's own k from workgroup memory), page tables, the f16 cache, the
// Qwen3.5 gate with 256-dim heads, a sliding window, 64-thread workgroups.
TEST(Attention, ScoresSharedBySubgroupLanes) {
  const auto& info = ctx().info();
  if (!info.subgroups) GTEST_SKIP() << "no subgroups";
  for (uint32_t tpp : {2u, 4u, 8u}) {
    if (tpp > info.subgroup_min_size) continue;
    SCOPED_TRACE("TPP " + std::to_string(tpp));
    runShape({64, 8, 2, 64, false, false}, 41, 256, true, 1, false, false, false, false, tpp);
    runShape({128, 4, 2, 128, true, false}, 42, 256, true, 4, true, false, true, false, tpp);
    runShape({256, 4, 1, 64, true, true}, 43, 64, true, 3, false, false, false, false, tpp);
    runShape({32, 2, 2, 32, false, false, 40}, 44, 64, true, 5, true, false, true, false, tpp);
  }
}

TEST(Attention, SmallWorkgroupAsOnCpuAdapters) {
  runShape({256, 4, 1, 64, true, true}, 5, 64);
  runShape({64, 8, 2, 64, false, false, 100}, 6, 64);
}

TEST(Embed, LooksUpRowsOfEveryFormatAcrossChunks) {
  std::mt19937 rng(5);
  gpu::Context& g = ctx();
  for (int q : {0, 1, 2, 3, 4}) {
    // H above 512 so a row spans several workgroups, the last one partly past H.
    const uint32_t V = 37, H = q == 4 ? 1040 : 1056;
    PackedWeights pw = randomWeights(q, V, H, rng);
    // Two chunks: rows [0, 20) and [20, 37), as a table above the binding limit would be split.
    uint32_t words_per_row = (uint32_t)(pw.w.size() / V), scales_per_row = q == 1 ? H / 32 : 0;
    (void)scales_per_row;
    std::vector<uint32_t> ids = {3, 36, 20, 19, 0};
    std::vector<double> want;
    for (uint32_t id : ids)
      for (uint32_t k = 0; k < H; ++k) want.push_back(pw.deq[(size_t)id * H + k]);
    auto out = poisoned(ids.size() * H);
    auto bids = upload(ids);
    gpu::Recorder rec(g);
    std::vector<gpu::Buffer> keep;
    std::vector<gpu::BindGroup> bgs;
    for (uint32_t start : {0u, 20u}) {
      uint32_t n = start == 0 ? 20 : 17;
      std::vector<uint32_t> w(pw.w.begin() + (size_t)start * words_per_row,
                              pw.w.begin() + (size_t)(start + n) * words_per_row);
      std::vector<uint32_t> sc = pw.s;
      if (q == 0 || q == 4) {  // f16 scales packed in pairs: re-pack the chunk's scales from index start*gpr
        uint32_t gpr = q == 4 ? (H + 39) / 40 : H / 32;
        sc.assign((n * gpr + 1) / 2, 0);
        for (uint32_t j = 0; j < n * gpr; ++j) {
          uint32_t src = start * gpr + j;
          uint32_t h = (pw.s[src / 2] >> (16 * (src % 2))) & 0xFFFF;
          sc[j / 2] |= h << (16 * (j % 2));
        }
      } else if (q == 1) {
        sc.assign(pw.s.begin() + start * (H / 32), pw.s.begin() + (start + n) * (H / 32));
      }
      keep.push_back(upload(w));
      keep.push_back(upload(sc));
      auto k = g.kernel("embed", {{"QFMT", q}, {"N", n}, {"H", H}, {"ROW_START", start}});
      ASSERT_TRUE(k.ok()) << k.error().toString();
      auto bg = g.bindGroup(**k, {{&keep[keep.size() - 2]}, {&keep.back()}, {&bids}, {&out}});
      ASSERT_TRUE(bg.ok());
      bgs.push_back(std::move(*bg));
      rec.dispatch(**k, bgs.back(), (uint32_t)ids.size(), (H + 511) / 512);
    }
    ASSERT_TRUE(rec.submit().ok());
    expectClose(download<float>(out, ids.size() * H), want, 1e-7, "embed");
  }
}

}  // namespace
}  // namespace ewgpu::kernels
