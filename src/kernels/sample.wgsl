// Token sampling on the GPU: one workgroup per batch row, one dispatch per decode step. Reads the row's logits,
// applies repetition/presence/frequency penalties and logit_bias in place, then picks the next token: greedy
// argmax (temperature 0) or an exact draw from the temperature -> top-k -> top-p distribution with the
// Gumbel-max trick. Writes the token, its logprob and the top-n logprobs into the out ring, and advances the
// row state (position, generated count, last token, stop/length finish) so the next step's embedding reads
// the token without a CPU round trip. docs/sampling.md describes every field; sampling.cpp holds the CPU
// reference, which uses the same hash, ordering keys and fixed-point mass, so both pick the same tokens.
//
// Exact thresholds: top-k and top-p cut-offs are found by a 4-pass radix select (8-bit digits, workgroup
// histograms) over the order-preserving u32 key of each logit, counting elements (top-k, top-n logprobs) or
// summing fixed-point probability mass q_i = round(p_i * 2^31) (top-p). No sorting, no candidate cap.
// Every element with key >= threshold survives, so ties at a threshold are all kept.
//
// PHASE 0: the whole step in one dispatch, one workgroup per row (grid B). PHASE 1..5: the same step split so that
// the full-vocabulary passes run on NW = ceil(V / CHUNK) workgroups per row (grid (NW, B)) and the one-workgroup
// finish walks only a short candidate list (docs/sampling.md, "The split sampler"):
//   1: penalties, bias and mask of the chunk in place; chunk argmax; chunk top-k threshold; with early_k, the chunk's
//      tokens at or above it appended to the row's list (phases 2 and 3 then skip the row).
//   2: chunk sums of exp at temperature T and 1; the chunk's mass histogram over s = (l - m) / T, added into the
//      row's histogram (ctr); the chunk's best Gumbel score (temperature alone).
//   3: the candidates appended to the row's list: key >= the largest chunk top-k threshold (top-k rows that are not
//      early_k: a superset of the survivors), or (top-p alone) s in the bins [jlo, jstar] that may hold the cut:
//      jstar is the first bin whose cumulative mass reaches (top_p + margin) Z, jlo the first that may reach
//      (top_p - margin) Z. Tokens in bins above jlo survive for certain: the chunk adds their exact fixed-point mass,
//      their count and their best Gumbel score instead of listing them; it also adds its exact mass total.
//   4 (grid B): greedy, temperature alone, or the exact radix selects and draw over the candidates (top-p alone:
//      the select starts from the mass above the list, and the draw is the better of the list's and the chunks').
//   5 (grid B): the rows phase 4 leaves, over the whole vocabulary as phase 0 (penalties not re-applied): more
//      candidates than CAP, or top-n logprobs (those rows skip phases 1-3 and are done whole here).
//   6 (grid B): phase 4 that also finishes the rows it would leave to phase 5, in one pipeline with the list's code
//      (slower over the whole vocabulary): for batches whose rows rarely overflow (SampleBatch::kSampledTopK).

//#enable subgroups

override V: u32;                    // vocabulary size (row length of logits and counts)
override KMAX: u32 = 1u;            // steps in the out ring per row
override ADVANCE_POS: bool = true;  // decode step: pos += 1 for an active row
override WG: u32 = 256u;            // threads per workgroup (a multiple of 16; kernels::sampleWorkgroupSize for
                                    // PHASE 0, kernels::sampleSplitWorkgroupSize for the split phases)
override HIST_COPIES: u32 = 8u;     // private histogram copies (fewer same-address atomics); at least 2
override WRITE_STATS: bool = false;  // tests: rows[b*8+7] = number of tokens that survived top-k/top-p
override UNROLL: u32 = 8u;          // logits each invocation loads at once in the full-row loops (1..UMAX)
override PHASE: u32 = 0u;           // 0: one dispatch; 1..5: the split step; 6: phases 4 and 5 in one (header)
override CHUNK: u32 = 2048u;        // split: tokens per workgroup (a multiple of 32)
override NW: u32 = 1u;              // split: workgroups per row, ceil(V / CHUNK)
override CAP: u32 = 4096u;          // split: candidates per row
override SG: u32 = 0u;              // workgroup reductions by subgroup shuffles over SG neighbouring invocations
                                    // (a power of two, at most the subgroup size; 0: through workgroup memory)
override EARLY_K: bool = true;      // split: phase 1 lists a top-k row's candidates (early_k), so phases 2 and 3
                                    // have nothing to do for it (false: phase 3 lists them, for A/B runs)

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;  // [B, V]
@group(0) @binding(1) var<storage, read> params: array<u32>;        // [B, 64]
@group(0) @binding(2) var<storage, read_write> counts: array<u32>;  // [S, V]: bit 31 prompt, bits 0..30 generated
@group(0) @binding(3) var<storage, read_write> rows: array<u32>;    // [B, 8]
@group(0) @binding(4) var<storage, read_write> out: array<u32>;     // [B, KMAX, 44]
@group(0) @binding(5) var<storage, read> mask: array<u32>;         // [B, ceil(V/32)]: allowed tokens (P_MASK rows)
@group(0) @binding(6) var<storage, read_write> scratch: array<u32>;  // split: [B, srow()] (offsets below)
// split: per row (CTR_STRIDE words) the candidates appended, then the row's mass histogram (NB counts, NB masses
// as 64-bit (low, high) words: low words then high words), summed over the chunks with atomics.
@group(0) @binding(7) var<storage, read_write> ctr: array<atomic<u32>>;

const NBINS = 256u;
const RG = 16u;  // reduction group size
const MAX_TOP = 20u;
const TIE_CAP = 64u;
const NONE = 0xFFFFFFFFu;
const UMAX = 8u;
const FLT_MAX = 3.40282346638528859812e+38f;

// Parameter word indices (sampling.h mirrors them).
const P_TEMP = 0u;
const P_TOP_P = 1u;
const P_TOP_K = 2u;
const P_REP = 3u;
const P_PRES = 4u;
const P_FREQ = 5u;
const P_SEED_LO = 6u;
const P_SEED_HI = 7u;
const P_MAX_TOKENS = 8u;
const P_N_STOP = 9u;
const P_STOP = 10u;
const P_N_LOGPROBS = 18u;
const P_N_BIAS = 19u;
const P_BIAS = 20u;
const P_WANT_LOGPROB = 52u;
const P_MASK = 53u;  // 1: only tokens whose bit is set in the row's mask may be sampled, and the row pauses after it

var<workgroup> hist: array<atomic<u32>, max(NBINS * HIST_COPIES, 2u * NB)>;
var<workgroup> cum: array<u32, NBINS>;  // combined histogram
var<workgroup> chunk: array<u32, 16>;   // sums of 16 bins
var<workgroup> red_f: array<vec2<f32>, WG>;
var<workgroup> red_u: array<u32, WG>;
var<workgroup> red_i: array<u32, WG>;
var<workgroup> part_f: array<vec2<f32>, WG / RG>;
var<workgroup> part_u: array<u32, WG / RG>;
var<workgroup> part_i: array<u32, WG / RG>;
var<workgroup> wg_state: array<u32, 72>;  // params row (64 words), then rows row (8 words)
var<workgroup> wg_sel: vec2<u32>;         // radix select: (digit, weight above)
var<workgroup> wg_scalar: u32;
var<workgroup> wg_pair: vec2<u32>;
var<workgroup> n_above: atomic<u32>;
var<workgroup> n_ties: atomic<u32>;
var<workgroup> tie_min: atomic<u32>;
var<workgroup> top_id: array<u32, MAX_TOP>;
var<workgroup> ties: array<u32, TIE_CAP>;

// Per-row values shared by the helper functions (same in every invocation).
var<private> g_base: u32;     // row offset into logits
var<private> g_m: f32;        // max processed logit
var<private> g_inv_t: f32;    // 1 / temperature (capped)
var<private> g_tk: u32;       // top-k threshold key (0 = all)
var<private> g_qscale: f32;   // 2^31 / Z over the top-k survivors
var<private> g_top_p: f32;
var<private> g_k1: u32;       // hash keys of (seed, generated)
var<private> g_ks: u32;
// The domain the full-row loops walk: tokens g_lo + j for j < g_n, or candidate j of the row's list (g_cand).
var<private> g_lo: u32;
var<private> g_n: u32;
var<private> g_cand: bool;
var<private> g_cbase: u32;
var<private> g_qtotal: u32;  // split, top-p alone: the fixed-point mass total over the vocabulary (NONE: count it)
var<private> g_qabove: u32;  // split, top-p alone: the mass of the tokens above the list (0 otherwise)

// ---- ordering keys, hashing, Exp(1) draws ----

// Order-preserving map f32 -> u32 (larger float, larger key; -0 < +0).
fn key_of(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}

fn from_key(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7FFFFFFFu, (k & 0x80000000u) != 0u));
}

// Processed logit i of this row with NaN -> -FLT_MAX and +-inf clamped to +-FLT_MAX.
fn lval(i: u32) -> f32 {
  let x = logits[g_base + i];
  let a = bitcast<u32>(x) & 0x7FFFFFFFu;
  if (a > 0x7F800000u) { return -FLT_MAX; }
  return clamp(x, -FLT_MAX, FLT_MAX);
}

// The processed logits i + u·WG for u < UNROLL, all loaded before any is used. The full-row loops run in one
// workgroup, and an invocation that uses each load before issuing the next waits one L2 round trip per element
// (~0.3 µs on the H200: 49 µs for a greedy argmax over 151936 logits). Indices past V read V - 1; callers stop at V.
fn load_row(i: u32) -> array<f32, UMAX> {
  var a: array<f32, UMAX>;
  for (var u = 0u; u < UNROLL; u++) {
    a[u] = lval(dom_id(min(i + u * WG, g_n - 1u)));
  }
  return a;
}

// Token id of domain element j.
fn dom_id(j: u32) -> u32 {
  if ((PHASE == 4u || PHASE == 6u) && g_cand) {  // a constant false outside phases 4 and 6: plain loops elsewhere
    return scratch[g_cbase + j];
  }
  return g_lo + j;
}

// ---- the split step's scratch row (u32 words): per chunk its maxima (key, id, top-k key, 0), best Gumbel (key,
// id: temperature alone over the chunk; top-p alone over its tokens above the list), exp sums (T, 1 as f32 bits),
// fixed-point mass totals (the chunk's, and its tokens' above the list); then the row's count of tokens above the
// list; the candidate list. The row's mass histogram is in ctr (atomics).
const NB = 512u;             // histogram bins of s = (l - m) / T: bin j holds -s in [j, j + 1) / BIN_SCALE
const BIN_SCALE = 32.0;
const MASS_ONE = 1048576.0;  // histogram masses: floor(exp(s) * 2^20), so a bin's mass is never over-counted
const TOP_P_MARGIN = 5e-4;   // the list's bins: from the first whose mass might reach (top_p - margin) * Z to the
                             // first whose mass surely reaches (top_p + margin) * Z
const BIN_GROUP = 16u;       // phase 3 scans the bins' totals in groups of 16, then inside the two groups it needs
const CTR_STRIDE = 2u + 3u * NB;
const CTR_EARLY = 1u + 3u * NB;  // the word after the histogram: phase 1's appends to an early_k row's list
fn off_gum() -> u32 { return NW * 4u; }
fn off_z() -> u32 { return NW * 6u; }
fn off_q() -> u32 { return NW * 8u; }
fn off_na() -> u32 { return NW * 10u; }
fn off_c() -> u32 { return NW * 10u + 1u; }
fn srow() -> u32 { return off_c() + CAP; }
// Phase 2's private copies of the (counts, masses) histogram in `hist`.
fn hist_copies() -> u32 { return max(NBINS * HIST_COPIES / (2u * NB), 1u); }

// A top-k row whose candidates phase 1 lists: each chunk appends its tokens with keys at or above its own k-th
// largest (the row's k-th largest key is at least every chunk's, so the list holds every survivor), at most
// top_k * NW of them without ties, so the list fits CAP. Phases 2 and 3 then have nothing to do for the row unless
// it wants a logprob (phase 2's Z1); a batch of such rows skips both dispatches (SampleBatch::kSampledTopK). A
// grammar row keeps phase 3's tighter list: a chunk with fewer than k allowed tokens would list all of them.
fn early_k(use_k: bool, top_k: u32, masked: bool) -> bool {
  return EARLY_K && use_k && !masked && top_k * NW <= CAP;
}

fn bin_of(s: f32) -> u32 {
  let d = -s * BIN_SCALE;
  if (!(d < f32(NB - 1u))) {
    return NB - 1u;
  }
  return u32(d);
}

// The best (key, id) pair of the chunks' pairs at scratch[at + stride·c], [at + stride·c + 1]: each invocation takes
// chunks tid, tid + WG, ..., then the workgroup reduction.
fn chunks_argmax(at: u32, stride: u32, tid: u32) -> vec2<u32> {
  var bk = 0u;
  var bi = NONE;
  for (var c = tid; c < NW; c += WG) {
    let k = scratch[at + stride * c];
    let i = scratch[at + stride * c + 1u];
    if (better(k, i, bk, bi)) {
      bk = k;
      bi = i;
    }
  }
  return reduce_argmax(bk, bi, tid);
}

// The row's max key and lowest id among the chunk maxima.
fn row_best(sb: u32, tid: u32) -> vec2<u32> {
  return chunks_argmax(sb, 4u, tid);
}

// The hash keys of this row's Exp(1) draws at (seed, generated count).
fn set_draw_keys(p: array<u32, 72>, generated: u32) {
  g_k1 = mix32(p[P_SEED_LO] ^ 0x3c6ef372u);
  let k2 = mix32(p[P_SEED_HI] ^ mix32(g_k1 ^ 0xa54ff53au));
  g_ks = mix32(k2 ^ mix32(generated + 0x9e3779b9u));
}

// The chunks' exp sums (x: temperature T, y: temperature 1) added up, each invocation taking chunks tid, tid + WG, ...
// then the workgroup reduction: a fixed order, so phases 3 and 4 get the same bits. (A loop over the chunks in
// every invocation waits out one memory round trip per chunk: ~40 µs at 75 chunks on the H200.)
fn zsum(sb: u32, tid: u32) -> vec2<f32> {
  var z = vec2<f32>(0.0, 0.0);
  for (var c = tid; c < NW; c += WG) {
    z += vec2<f32>(bitcast<f32>(scratch[sb + off_z() + 2u * c]), bitcast<f32>(scratch[sb + off_z() + 2u * c + 1u]));
  }
  return reduce_sum_f2(z, tid);
}

fn mix32(x0: u32) -> u32 {
  var x = x0;
  x ^= x >> 16u;
  x *= 0x7feb352du;
  x ^= x >> 15u;
  x *= 0x846ca68bu;
  x ^= x >> 16u;
  return x;
}

// E_i ~ Exp(1) for token i at this row's (seed, generated): E = -log(1 - v), v in (0,1) built from 64 hash bits
// with 23 significant bits at every magnitude (v down to 2^-55), so small E (the likely winners) are precise.
fn exp_draw(i: u32) -> f32 {
  var h1 = mix32(mix32(i ^ g_ks) ^ g_k1);
  let h2 = mix32(h1 + g_ks);
  h1 = max(h1, 1u);
  let lz = countLeadingZeros(h1);
  var bits = h1 << lz;
  if (lz > 0u) {
    bits |= h2 >> (32u - lz);
  }
  let v = ldexp(f32(bits >> 9u) + 0.5, -i32(23u + lz));
  if (v <= 0.5) {
    // -log(1 - v) = 2 atanh(z), z = v / (2 - v) <= 1/3: odd series to z^17 (relative error < 1e-9).
    let z = v / (2.0 - v);
    let w = z * z;
    var p = 1.0 / 17.0;
    p = p * w + 1.0 / 15.0;
    p = p * w + 1.0 / 13.0;
    p = p * w + 1.0 / 11.0;
    p = p * w + 1.0 / 9.0;
    p = p * w + 1.0 / 7.0;
    p = p * w + 1.0 / 5.0;
    p = p * w + 1.0 / 3.0;
    p = p * w + 1.0;
    return 2.0 * z * p;
  }
  return -log(1.0 - v);  // 1 - v is exact here and < 0.5
}

// Fixed-point probability mass of a logit among the top-k survivors: round(p * 2^31).
fn mass(x: f32) -> u32 {
  let e = exp((x - g_m) * g_inv_t);
  return u32(round(e * g_qscale));
}

// (hi, lo) of the 64-bit product a * b.
fn mul64(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xFFFFu;
  let a1 = a >> 16u;
  let b0 = b & 0xFFFFu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xFFFFu) + (p10 & 0xFFFFu);
  let lo = (mid << 16u) | (p00 & 0xFFFFu);
  let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2<u32>(hi, lo);
}

// Mass the top-p set must reach: ceil(total * p24 / 2^24) with p24 = round(top_p * 2^24), at least 1.
fn top_p_target(total: u32) -> u32 {
  let p24 = u32(round(g_top_p * 16777216.0));
  let prod = mul64(total, p24);
  var t = (prod.x << 8u) | (prod.y >> 24u);
  if ((prod.y & 0xFFFFFFu) != 0u) {
    t += 1u;
  }
  return max(t, 1u);
}

// ---- workgroup reductions (call from uniform control flow) ----
// Two levels with two barriers each (barriers are what a CPU rasteriser like SwiftShader pays for most):
// groups of RG values reduced by WG/RG invocations, then every invocation reduces the WG/RG partials. With SG
// (GPUs with subgroups, sampleSubgroupReduce): each SG neighbouring invocations combine by shuffles, one of them
// writes the group's value into red_*, and after the barrier every group combines the WG/SG values the same way,
// so no invocation loops over partials one shared-memory load at a time. A float sum's butterfly gives every
// invocation the same bits (a + b == b + a), and argmax is order-free (largest key, lowest id), so every
// invocation returns the same result either way; the float sums' bits differ from the path without SG.

// Largest key, lowest index among equal keys.
fn better(k2: u32, i2: u32, k1: u32, i1: u32) -> bool {
  return k2 > k1 || (k2 == k1 && i2 < i1);
}

//#if SUBGROUPS
// SG as a divisor (the expressions are evaluated with SG = 0 too), and the groups of SG invocations.
fn sg_n() -> u32 {
  return max(SG, 1u);
}

fn sg_groups() -> u32 {
  return WG / sg_n();
}

fn sg_argmax(k0: u32, i0: u32) -> vec2<u32> {
  var k = k0;
  var i = i0;
  for (var m = 1u; m < SG; m = m * 2u) {
    let k2 = subgroupShuffleXor(k, m);
    let i2 = subgroupShuffleXor(i, m);
    let t = better(k2, i2, k, i);
    k = select(k, k2, t);
    i = select(i, i2, t);
  }
  return vec2<u32>(k, i);
}

fn sg_sum_f2(v0: vec2<f32>) -> vec2<f32> {
  var v = v0;
  for (var m = 1u; m < SG; m = m * 2u) {
    v += subgroupShuffleXor(v, m);
  }
  return v;
}

fn sg_sum_u(v0: u32) -> u32 {
  var v = v0;
  for (var m = 1u; m < SG; m = m * 2u) {
    v += subgroupShuffleXor(v, m);
  }
  return v;
}

//#endif

fn reduce_argmax(k: u32, i: u32, tid: u32) -> vec2<u32> {
//#if SUBGROUPS
  if (SG > 0u) {
    let g = sg_argmax(k, i);
    workgroupBarrier();
    if (tid % sg_n() == 0u) {
      red_u[tid / sg_n()] = g.x;
      red_i[tid / sg_n()] = g.y;
    }
    workgroupBarrier();
    var bk = 0u;
    var bi = NONE;
    for (var r = 0u; r < (sg_groups() + sg_n() - 1u) / sg_n(); r++) {
      let j = r * sg_n() + tid % sg_n();
      if (j < sg_groups() && better(red_u[j], red_i[j], bk, bi)) {
        bk = red_u[j];
        bi = red_i[j];
      }
    }
    return sg_argmax(bk, bi);
  }
//#endif
  red_u[tid] = k;
  red_i[tid] = i;
  workgroupBarrier();
  if (tid < WG / RG) {
    var bk = red_u[tid * RG];
    var bi = red_i[tid * RG];
    for (var j = 1u; j < RG; j++) {
      let k2 = red_u[tid * RG + j];
      let i2 = red_i[tid * RG + j];
      if (better(k2, i2, bk, bi)) {
        bk = k2;
        bi = i2;
      }
    }
    part_u[tid] = bk;
    part_i[tid] = bi;
  }
  workgroupBarrier();
  var bk = part_u[0];
  var bi = part_i[0];
  for (var j = 1u; j < WG / RG; j++) {
    if (better(part_u[j], part_i[j], bk, bi)) {
      bk = part_u[j];
      bi = part_i[j];
    }
  }
  return vec2<u32>(bk, bi);
}

fn reduce_sum_f2(v: vec2<f32>, tid: u32) -> vec2<f32> {
//#if SUBGROUPS
  if (SG > 0u) {
    let g = sg_sum_f2(v);
    workgroupBarrier();
    if (tid % sg_n() == 0u) {
      red_f[tid / sg_n()] = g;
    }
    workgroupBarrier();
    var t = vec2<f32>(0.0);
    for (var r = 0u; r < (sg_groups() + sg_n() - 1u) / sg_n(); r++) {
      let j = r * sg_n() + tid % sg_n();
      if (j < sg_groups()) {
        t += red_f[j];
      }
    }
    return sg_sum_f2(t);
  }
//#endif
  red_f[tid] = v;
  workgroupBarrier();
  if (tid < WG / RG) {
    var s = vec2<f32>(0.0);
    for (var j = 0u; j < RG; j++) {
      s += red_f[tid * RG + j];
    }
    part_f[tid] = s;
  }
  workgroupBarrier();
  var s = vec2<f32>(0.0);
  for (var j = 0u; j < WG / RG; j++) {
    s += part_f[j];
  }
  return s;
}

fn reduce_sum_u(v: u32, tid: u32) -> u32 {
//#if SUBGROUPS
  if (SG > 0u) {
    let g = sg_sum_u(v);
    workgroupBarrier();
    if (tid % sg_n() == 0u) {
      red_u[tid / sg_n()] = g;
    }
    workgroupBarrier();
    var t = 0u;
    for (var r = 0u; r < (sg_groups() + sg_n() - 1u) / sg_n(); r++) {
      let j = r * sg_n() + tid % sg_n();
      if (j < sg_groups()) {
        t += red_u[j];
      }
    }
    return sg_sum_u(t);
  }
//#endif
  red_u[tid] = v;
  workgroupBarrier();
  if (tid < WG / RG) {
    var s = 0u;
    for (var j = 0u; j < RG; j++) {
      s += red_u[tid * RG + j];
    }
    part_u[tid] = s;
  }
  workgroupBarrier();
  var s = 0u;
  for (var j = 0u; j < WG / RG; j++) {
    s += part_u[j];
  }
  return s;
}

// ---- radix select ----

const MODE_COUNT = 0u;  // weight 1 per token
const MODE_MASS = 1u;   // weight mass(x) per top-k survivor; target derived from the total and top_p

// The largest key t with W(t) >= target, W(t) = total weight of tokens whose key >= t. Four passes, one
// 8-bit digit each, most significant first; `above` is the weight of tokens already known to be > t.
// Per pass: weights into HIST_COPIES histograms (zero on entry, zeroed again when combined), then 16
// invocations each own 16 bins and find the bin where the running sum from the top crosses the target.
fn radix_select(mode: u32, target_in: u32, tid: u32) -> u32 {
  var prefix = 0u;
  var above = select(0u, g_qabove, mode == MODE_MASS);  // the split step's tokens above its top-p list
  var goal = target_in;  // used by invocations < 16
  let copy = (tid % HIST_COPIES) * NBINS;
  for (var step = 0u; step < 4u; step++) {
    let shift = 24u - 8u * step;
    let mask = ~(0xFFFFFFFFu >> (8u * step));  // digits already decided
    for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
      var xs = load_row(i0);
      for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
        let i = dom_id(i0 + u * WG);
        let x = xs[u];
        let k = key_of(x);
        if ((k & mask) != prefix) {
          continue;
        }
        var w = 1u;
        if (mode == MODE_MASS) {
          if (k < g_tk) {
            continue;
          }
          w = mass(x);
          if (w == 0u) {
            continue;
          }
        }
        atomicAdd(&hist[copy + ((k >> shift) & 0xFFu)], w);
      }
    }
    workgroupBarrier();
    for (var j = tid; j < NBINS; j += WG) {
      var s = 0u;
      for (var c = 0u; c < HIST_COPIES; c++) {
        s += atomicLoad(&hist[c * NBINS + j]);
        atomicStore(&hist[c * NBINS + j], 0u);
      }
      cum[j] = s;
    }
    workgroupBarrier();
    if (tid < 16u) {
      var s = 0u;
      for (var j = 0u; j < 16u; j++) {
        s += cum[tid * 16u + j];
      }
      chunk[tid] = s;
    }
    workgroupBarrier();
    if (tid < 16u) {
      if (step == 0u && mode == MODE_MASS) {
        var total = 0u;
        for (var c = 0u; c < 16u; c++) {
          total += chunk[c];
        }
        if (g_qtotal != NONE) {  // the split step's candidates: the total is the whole vocabulary's
          total = g_qtotal;
        }
        goal = top_p_target(total);
      }
      var run = above;
      for (var c = tid + 1u; c < 16u; c++) {
        run += chunk[c];
      }
      for (var jj = 0u; jj < 16u; jj++) {
        let j = tid * 16u + 15u - jj;
        let next = run;
        run += cum[j];
        if (run >= goal && next < goal) {
          wg_sel = vec2<u32>(j, next);
        }
      }
    }
    let sel = workgroupUniformLoad(&wg_sel);
    prefix |= sel.x << shift;
    above = sel.y;
  }
  return prefix;
}

// ---- top-n logprobs ----

// Ids of the n largest logits (ties at the n-th value broken by lowest id) into top_id[0..n), sorted by
// descending key then ascending id. tn = the n-th largest key (radix select), 0 when n covers the vocabulary.
fn collect_top(n: u32, tn: u32, tid: u32) {
  if (tid == 0u) {
    atomicStore(&n_above, 0u);
    atomicStore(&n_ties, 0u);
  }
  workgroupBarrier();
  for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
    var xs = load_row(i0);
    for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
      let i = dom_id(i0 + u * WG);
      let k = key_of(xs[u]);
      if (k > tn) {
        let s = atomicAdd(&n_above, 1u);
        if (s < MAX_TOP) {
          top_id[s] = i;
        }
      } else if (k == tn) {
        let s = atomicAdd(&n_ties, 1u);
        if (s < TIE_CAP) {
          ties[s] = i;
        }
      }
    }
  }
  workgroupBarrier();
  if (tid == 0u) {
    wg_pair = vec2<u32>(atomicLoad(&n_above), atomicLoad(&n_ties));
  }
  let found = workgroupUniformLoad(&wg_pair);
  let c = min(found.x, n);
  let nt = found.y;
  let r = n - c;  // ties to take, lowest ids first
  if (nt <= TIE_CAP) {
    if (tid == 0u) {
      for (var j = 0u; j < r; j++) {  // partial selection sort of the tie buffer
        var best = j;
        for (var q = j + 1u; q < nt; q++) {
          if (ties[q] < ties[best]) {
            best = q;
          }
        }
        let t = ties[best];
        ties[best] = ties[j];
        ties[j] = t;
        top_id[c + j] = t;
      }
    }
  } else {
    // More than TIE_CAP tokens share the n-th value (degenerate logits): one min-id pass per missing entry.
    var last = 0u;
    for (var j = 0u; j < r; j++) {
      if (tid == 0u) {
        atomicStore(&tie_min, NONE);
      }
      workgroupBarrier();
      for (var jd = tid; jd < g_n; jd += WG) {
        let i = dom_id(jd);
        if ((j == 0u || i > last) && key_of(lval(i)) == tn) {
          atomicMin(&tie_min, i);
        }
      }
      workgroupBarrier();
      if (tid == 0u) {
        wg_scalar = atomicLoad(&tie_min);
        top_id[c + j] = wg_scalar;
      }
      last = workgroupUniformLoad(&wg_scalar);
    }
  }
  workgroupBarrier();
  if (tid == 0u) {  // insertion sort: key descending, id ascending
    for (var j = 1u; j < n; j++) {
      let id = top_id[j];
      let k = key_of(lval(id));
      var q = j;
      loop {
        if (q == 0u) {
          break;
        }
        let pid = top_id[q - 1u];
        let pk = key_of(lval(pid));
        if (pk > k || (pk == k && pid < id)) {
          break;
        }
        top_id[q] = pid;
        q--;
      }
      top_id[q] = id;
    }
  }
  workgroupBarrier();
}

// ---- the step ----

// A grammar row (P_MASK): every token whose bit is clear in the row's mask gets -FLT_MAX, after penalties and
// bias, so no later pass (max, top-k, top-p, the draw, logprobs) can pick it. One invocation per mask word of
// tokens [lo, hi) (lo a multiple of 32).
fn apply_mask(b: u32, tid: u32, lo: u32, hi: u32) {
  let words = (V + 31u) / 32u;
  for (var w = lo / 32u + tid; w < (hi + 31u) / 32u; w += WG) {
    let bits = mask[b * words + w];
    if (bits == 0xFFFFFFFFu) {
      continue;
    }
    for (var j = 0u; j < 32u; j++) {
      let i = w * 32u + j;
      if (i < V && ((bits >> j) & 1u) == 0u) {
        logits[g_base + i] = -FLT_MAX;
      }
    }
  }
  storageBarrier();
}

// Penalties on tokens seen in the prompt or generated (HF repetition; OpenAI presence/frequency on generated
// counts only), then logit_bias; all in place, for tokens [lo, hi).
fn apply_penalties(st: array<u32, 72>, slot: u32, tid: u32, lo: u32, hi: u32) {
  let rep = bitcast<f32>(st[P_REP]);
  let pres = bitcast<f32>(st[P_PRES]);
  let freq = bitcast<f32>(st[P_FREQ]);
  let nb = min(st[P_N_BIAS], 16u);
  let penalised = rep != 1.0 || pres != 0.0 || freq != 0.0;
  if (penalised) {
    let inv_rep = 1.0 / rep;
    for (var i0 = lo + tid; i0 < hi; i0 += UNROLL * WG) {
      var cs: array<u32, UMAX>;  // the counts loaded together, as load_row does for logits
      for (var u = 0u; u < UNROLL; u++) {
        cs[u] = counts[slot * V + min(i0 + u * WG, hi - 1u)];
      }
      for (var u = 0u; u < UNROLL && i0 + u * WG < hi; u++) {
        let i = i0 + u * WG;
        let c = cs[u];
        if (c == 0u) {
          continue;
        }
        var l = lval(i);
        if (l > 0.0) {
          l = l * inv_rep;
        } else {
          l = l * rep;
        }
        let gen = c & 0x7FFFFFFFu;
        if (gen > 0u) {
          l = l - pres;
          l = l - freq * f32(gen);
        }
        logits[g_base + i] = l;
      }
    }
    if (nb > 0u) {
      storageBarrier();
    }
  }
  if (tid == 0u) {
    for (var j = 0u; j < nb; j++) {
      let tok = st[P_BIAS + 2u * j];
      if (tok >= lo && tok < hi) {
        logits[g_base + tok] = lval(tok) + bitcast<f32>(st[P_BIAS + 2u * j + 1u]);
      }
    }
  }
  if (penalised || nb > 0u) {
    storageBarrier();
  }
}

// The split step's phases 1-3 for chunk c of row b (an active row; hist zeroed).
fn prepass(b: u32, c: u32, p: array<u32, 72>, row: array<u32, 8>, tid: u32) {
  let lo = c * CHUNK;
  let hi = min(V, lo + CHUNK);
  let sb = b * srow();
  g_base = b * V;
  g_lo = lo;
  g_n = hi - lo;
  g_cand = false;
  g_qtotal = NONE;
  let temperature = bitcast<f32>(p[P_TEMP]);
  let greedy = !(temperature > 0.0);
  g_inv_t = min(1.0 / temperature, 1e30);
  let top_k = p[P_TOP_K];
  let use_k = !greedy && top_k > 0u && top_k < V;
  let top_p = bitcast<f32>(p[P_TOP_P]);
  g_top_p = top_p;
  let use_p = !greedy && top_p < 1.0;
  let n_top = min(min(p[P_N_LOGPROBS], MAX_TOP), V);
  let want_lp = p[P_WANT_LOGPROB] != 0u || n_top > 0u;
  if (n_top > 0u) {  // top-n logprobs walk the vocabulary in phase 4 anyway: it does the whole step
    return;
  }

  if (PHASE == 1u) {
    if (c == 0u && tid == 0u) {
      atomicStore(&ctr[b * CTR_STRIDE], 0u);
    }
    if (c == 0u && use_p && !use_k) {  // the row's histogram, which phase 2's chunks add to
      for (var j = tid; j < 3u * NB; j += WG) {
        atomicStore(&ctr[b * CTR_STRIDE + 1u + j], 0u);
      }
    }
    apply_penalties(p, row[0], tid, lo, hi);
    if (p[P_MASK] != 0u) {
      apply_mask(b, tid, lo, hi);
    }
    var bk = 0u;
    var bi = NONE;
    for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
      var xs = load_row(i0);
      for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
        let k = key_of(xs[u]);
        if (k > bk) {
          bk = k;
          bi = dom_id(i0 + u * WG);
        }
      }
    }
    let best = reduce_argmax(bk, bi, tid);
    // The chunk's top-k key: the row's k-th largest is at least the largest of these (that chunk alone has k).
    var kth = 0u;
    if (use_k && top_k <= hi - lo) {
      kth = radix_select(MODE_COUNT, top_k, tid);
    }
    if (tid == 0u) {
      scratch[sb + 4u * c] = best.x;
      scratch[sb + 4u * c + 1u] = best.y;
      scratch[sb + 4u * c + 2u] = kth;
      scratch[sb + 4u * c + 3u] = 0u;
    }
    if (early_k(use_k, top_k, p[P_MASK] != 0u)) {
      append_cands(b, CTR_EARLY, true, kth, 0u, NB, tid);
    }
    return;
  }

  g_m = from_key(row_best(sb, tid).x);
  if (greedy && !(want_lp && PHASE == 2u)) {  // a greedy row's logprob takes phase 2's Z1
    return;
  }
  let alone = !greedy && !use_k && !use_p && n_top == 0u;  // temperature alone: the draw is over every token

  if (PHASE == 2u) {
    set_draw_keys(p, row[3]);
    let hist_p = use_p && !use_k;
    var zs = 0.0;
    var z1 = 0.0;
    var sk = 0u;
    var si = NONE;
    for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
      var xs = load_row(i0);
      for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
        let i = dom_id(i0 + u * WG);
        let x = xs[u];
        let sc = (x - g_m) * g_inv_t;
        let e = exp(sc);
        zs += e;
        if (want_lp) {
          z1 += exp(x - g_m);
        }
        if (hist_p) {  // the open last bin is never needed (reaching it means every token): no atomics there
          let j = bin_of(sc);
          if (j < NB - 1u) {
            let hc = (tid % hist_copies()) * 2u * NB;
            atomicAdd(&hist[hc + j], 1u);
            atomicAdd(&hist[hc + NB + j], u32(e * MASS_ONE));
          }
        }
        if (alone) {
          let k = key_of(sc - log(exp_draw(i)));
          if (k > sk) {
            sk = k;
            si = i;
          }
        }
      }
    }
    let z = reduce_sum_f2(vec2<f32>(zs, z1), tid);
    let g = reduce_argmax(sk, si, tid);
    workgroupBarrier();
    // The chunk's bins into the row's histogram: counts, and masses (at most 2^31 per chunk) as 64-bit sums.
    if (hist_p) {
      let hb = b * CTR_STRIDE + 1u;
      for (var j = tid; j < 2u * NB; j += WG) {
        var h = 0u;
        for (var cp = 0u; cp < hist_copies(); cp++) {
          h += atomicLoad(&hist[cp * 2u * NB + j]);
        }
        if (h != 0u) {
          let old = atomicAdd(&ctr[hb + j], h);
          if (j >= NB && old + h < old) {
            atomicAdd(&ctr[hb + NB + j], 1u);
          }
        }
      }
    }
    if (tid == 0u) {
      scratch[sb + off_z() + 2u * c] = bitcast<u32>(z.x);
      scratch[sb + off_z() + 2u * c + 1u] = bitcast<u32>(z.y);
      scratch[sb + off_gum() + 2u * c] = g.x;
      scratch[sb + off_gum() + 2u * c + 1u] = g.y;
    }
    return;
  }

  // PHASE 3: the candidates (temperature alone takes no list). Each workgroup counts its own, reserves a range of
  // the row's list with one global atomic and writes them there: one atomic per chunk, not per token.
  if (alone || greedy || early_k(use_k, top_k, p[P_MASK] != 0u)) {  // early_k: phase 1 listed them
    return;
  }
  var t0 = 0u;       // top-k: candidates have key >= t0
  var jstar = NB;    // top-p alone: candidates have jlo <= bin <= jstar
  var jlo = 0u;
  if (use_k) {
    var tk = 0u;
    for (var cc = tid; cc < NW; cc += WG) {
      tk = max(tk, scratch[sb + 4u * cc + 2u]);
    }
    t0 = reduce_argmax(tk, 0u, tid).x;
  } else {
    let z = zsum(sb, tid).x;
    g_qscale = 2147483648.0 / z;
    // The row's bins into hist (counts, then masses as f32 bits), and group totals of BIN_GROUP bins into red_f /
    // red_u.
    let hb = b * CTR_STRIDE + 1u;
    for (var j = tid; j < NB; j += WG) {
      atomicStore(&hist[j], atomicLoad(&ctr[hb + j]));
      let m = (f32(atomicLoad(&ctr[hb + 2u * NB + j])) * 4294967296.0 + f32(atomicLoad(&ctr[hb + NB + j]))) / MASS_ONE;
      atomicStore(&hist[NB + j], bitcast<u32>(m));
    }
    workgroupBarrier();
    const NG = NB / BIN_GROUP;
    for (var g = tid; g < NG; g += WG) {
      var gm = 0.0;
      var gn = 0u;
      for (var j = g * BIN_GROUP; j < (g + 1u) * BIN_GROUP; j++) {
        gn += atomicLoad(&hist[j]);
        gm += bitcast<f32>(atomicLoad(&hist[NB + j]));
      }
      red_f[g] = vec2<f32>(gm, 0.0);
      red_u[g] = gn;
    }
    workgroupBarrier();
    // The list's bins [jlo, jstar]. jstar: the first bin whose mass from the top reaches (top_p + margin) * Z (the
    // histogram's masses round down, so the exact cut is no lower). jlo: the first bin whose mass from the top
    // might reach (top_p - margin) * Z, counting each token's rounding (under 2^-20); the tokens of the bins above
    // it hold less than the target mass, so they all survive and need not be listed. Each is found in its group
    // of bins first, then in that group.
    if (tid == 0u) {
      let need = (top_p + TOP_P_MARGIN) * z;
      let below = (top_p - TOP_P_MARGIN) * z;
      // The groups holding each bound (phase 2 leaves the open last bin empty: reaching it means every token).
      var acc = 0.0;
      var n = 0u;
      var gl = NG;
      var gs = NG;
      var acc_l = 0.0;
      var n_l = 0u;
      var acc_s = 0.0;
      var n_s = 0u;
      for (var g = 0u; g < NG; g++) {
        let gm = red_f[g].x;
        let gn = red_u[g];
        if (gl == NG && acc + gm + f32(n + gn) / MASS_ONE >= below) {
          gl = g;
          acc_l = acc;
          n_l = n;
        }
        if (acc + gm >= need) {
          gs = g;
          acc_s = acc;
          n_s = n;
          break;
        }
        acc += gm;
        n += gn;
      }
      // Inside them. The group's own sums decided it, so without a bin that crosses on its own (f32 order) the
      // bound falls back to the group's first bin (jlo) or last bin (jstar): still the safe side of the cut.
      var js = NB;
      var n_hi = 0u;
      var jl = NB;
      var n_lo = 0u;
      if (gs < NG) {
        let end = min((gs + 1u) * BIN_GROUP, NB - 1u);
        js = end - 1u;
        n_hi = n_s;
        for (var j = gs * BIN_GROUP; j < end; j++) {
          n_hi += atomicLoad(&hist[j]);
          acc_s += bitcast<f32>(atomicLoad(&hist[NB + j]));
          if (acc_s >= need) {
            js = j;
            break;
          }
        }
        jl = gl * BIN_GROUP;
        n_lo = n_l;
        for (var j = gl * BIN_GROUP; j < min((gl + 1u) * BIN_GROUP, js); j++) {
          let nj = atomicLoad(&hist[j]);
          acc_l += bitcast<f32>(atomicLoad(&hist[NB + j]));
          if (acc_l + f32(n_l + nj) / MASS_ONE >= below) {
            break;
          }
          n_l += nj;
          jl = j + 1u;
          n_lo = n_l;
        }
      }
      wg_pair = vec2<u32>(js, select(n_hi - n_lo, V, js >= NB));
      wg_sel = vec2<u32>(jl, n_lo);
    }
    let sel = workgroupUniformLoad(&wg_pair);
    let lo_sel = workgroupUniformLoad(&wg_sel);
    jstar = sel.x;
    jlo = lo_sel.x;
    // One pass: the chunk's fixed-point mass total, and over its tokens above the list their mass and best Gumbel
    // score (phase 4's draw over the survivors takes these with the list's).
    set_draw_keys(p, row[3]);
    var qs = 0u;
    var qa = 0u;
    var sk = 0u;
    var si = NONE;
    for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
      var xs = load_row(i0);
      for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
        let x = xs[u];
        let w = mass(x);
        qs += w;
        let sc = (x - g_m) * g_inv_t;
        if (bin_of(sc) < jlo) {
          qa += w;
          let i = dom_id(i0 + u * WG);
          let k = key_of(sc - log(exp_draw(i)));
          if (better(k, i, sk, si)) {
            sk = k;
            si = i;
          }
        }
      }
    }
    let q = reduce_sum_u(qs, tid);
    let q_above = reduce_sum_u(qa, tid);
    let g = reduce_argmax(sk, si, tid);
    if (tid == 0u) {
      scratch[sb + off_q() + 2u * c] = q;
      scratch[sb + off_q() + 2u * c + 1u] = q_above;
      scratch[sb + off_gum() + 2u * c] = g.x;
      scratch[sb + off_gum() + 2u * c + 1u] = g.y;
      if (c == 0u) {
        scratch[sb + off_na()] = lo_sel.y;
      }
    }
    // Past CAP phase 4 walks the vocabulary: no chunk writes a list.
    if (sel.y > CAP) {
      if (c == 0u && tid == 0u) {
        atomicStore(&ctr[b * CTR_STRIDE], sel.y);
      }
      return;
    }
  }
  append_cands(b, 0u, use_k, t0, jlo, jstar, tid);
}

// The chunk's tokens that take_cand keeps, appended to the row's candidate list (scratch from off_c()) and counted in
// ctr[b * CTR_STRIDE + word]: the chunk counts its own in workgroup memory, reserves its range of the list with one
// global atomic and writes them there (one atomic per chunk, not per token). Past CAP nothing is written; the count
// still grows, which sends the row to phase 5.
fn append_cands(b: u32, word: u32, use_k: bool, t0: u32, jlo: u32, jstar: u32, tid: u32) {
  let sb = b * srow();
  if (tid == 0u) {
    atomicStore(&n_above, 0u);
  }
  workgroupBarrier();
  for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
    var xs = load_row(i0);
    for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
      if (take_cand(xs[u], use_k, t0, jlo, jstar)) {
        atomicAdd(&n_above, 1u);
      }
    }
  }
  workgroupBarrier();
  if (tid == 0u) {
    let mine = atomicLoad(&n_above);
    wg_scalar = select(atomicAdd(&ctr[b * CTR_STRIDE + word], mine), CAP, mine == 0u);
    atomicStore(&n_above, 0u);
  }
  let base = workgroupUniformLoad(&wg_scalar);
  if (base >= CAP) {
    return;
  }
  for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
    var xs = load_row(i0);
    for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
      if (take_cand(xs[u], use_k, t0, jlo, jstar)) {
        let at = base + atomicAdd(&n_above, 1u);
        if (at < CAP) {
          scratch[sb + off_c() + at] = dom_id(i0 + u * WG);
        }
      }
    }
  }
}

fn take_cand(x: f32, use_k: bool, t0: u32, jlo: u32, jstar: u32) -> bool {
  if (use_k) {
    return key_of(x) >= t0;
  }
  let j = bin_of((x - g_m) * g_inv_t);
  return j >= jlo && (jstar >= NB || j <= jstar);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let pre = PHASE >= 1u && PHASE <= 3u;
  let b = select(wid.x, wid.y, pre);
  for (var j = tid; j < 72u; j += WG) {
    if (j < 64u) {
      wg_state[j] = params[b * 64u + j];
    } else {
      wg_state[j] = rows[b * 8u + j - 64u];
    }
  }
  for (var j = tid; j < NBINS * HIST_COPIES; j += WG) {
    atomicStore(&hist[j], 0u);
  }
  let p = workgroupUniformLoad(&wg_state);  // p[0..64) params, p[64..72) row state
  let row = array<u32, 8>(p[64], p[65], p[66], p[67], p[68], p[69], p[70], p[71]);
  if (pre) {
    if (row[2] != 0u) {
      prepass(b, wid.x, p, row, tid);
    }
    return;
  }
  let o = (b * KMAX + row[5] % KMAX) * 44u;

  if (row[2] == 0u) {  // inactive: mark the step, keep the state
    if (PHASE == 5u) {  // phase 4 marked it, or finished it
      return;
    }
    if (tid == 0u) {
      out[o] = NONE;
      out[o + 1u] = 0u;
      out[o + 2u] = 0u;
      out[o + 43u] = row[6];
      rows[b * 8u + 5u] = row[5] + 1u;
    }
    return;
  }

  g_base = b * V;
  g_lo = 0u;
  g_n = V;
  g_cand = false;
  g_qtotal = NONE;
  g_qabove = 0u;
  let sb = b * srow();
  let slot = row[0];
  let generated = row[3];
  let masked = p[P_MASK] != 0u;
  let temperature = bitcast<f32>(p[P_TEMP]);
  let n_top = min(min(p[P_N_LOGPROBS], MAX_TOP), V);
  let want_lp = p[P_WANT_LOGPROB] != 0u || n_top > 0u;
  let greedy = !(temperature > 0.0);
  g_inv_t = min(1.0 / temperature, 1e30);
  let top_p = bitcast<f32>(p[P_TOP_P]);
  g_top_p = top_p;
  let use_top_p = !greedy && top_p < 1.0;
  let top_k = p[P_TOP_K];
  let use_k = !greedy && top_k > 0u && top_k < V;
  // The split step's finish is two pipelines: phase 4 the rows whose list holds their survivors (and greedy and
  // temperature-alone rows), phase 5 the others over the whole vocabulary (top-n logprobs, a list past CAP), in
  // a pipeline without the list's code, so its full-row loops run as in phase 0.
  var n_list = 0u;  // the candidate list's length (top-k / top-p rows)
  var fallback = false;  // phases 5 and 6: the row is done over the whole vocabulary
  if (PHASE >= 4u) {
    fallback = n_top > 0u;
    if (!fallback && (use_k || use_top_p)) {
      if (tid == 0u) {
        var n = atomicLoad(&ctr[b * CTR_STRIDE]);
        // Phase 1 counted an early_k row's list in its own word, which phase 1's chunks cannot zero before they
        // append: phase 4 moves the length to word 0 (phase 5 and the tests read it there) and zeroes it for the
        // next step. The word starts at zero, and steps without phase 4 (the one dispatch) do not touch it.
        if ((PHASE == 4u || PHASE == 6u) && early_k(use_k, top_k, masked)) {
          n = atomicLoad(&ctr[b * CTR_STRIDE + CTR_EARLY]);
          atomicStore(&ctr[b * CTR_STRIDE + CTR_EARLY], 0u);
          atomicStore(&ctr[b * CTR_STRIDE], n);
        }
        wg_scalar = n;
      }
      n_list = workgroupUniformLoad(&wg_scalar);
      fallback = n_list > CAP;
    }
    if (PHASE != 6u && (PHASE == 5u) != fallback) {
      return;
    }
  }
  var best: vec2<u32>;
  let whole = PHASE == 0u || n_top > 0u;  // the split step's phase 1 skipped top-n rows
  if (whole) {
    apply_penalties(p, slot, tid, 0u, V);
    if (masked) {
      apply_mask(b, tid, 0u, V);
    }
    // Max (and greedy argmax) of the processed logits.
    var bk = 0u;
    var bi = NONE;
    for (var i0 = tid; i0 < V; i0 += UNROLL * WG) {
      var xs = load_row(i0);
      for (var u = 0u; u < UNROLL && i0 + u * WG < V; u++) {
        let i = i0 + u * WG;
        let k = key_of(xs[u]);
        if (k > bk) {
          bk = k;
          bi = i;
        }
      }
    }
    best = reduce_argmax(bk, bi, tid);
  } else {
    best = row_best(sb, tid);  // phase 1 applied the penalties, bias and mask
  }
  g_m = from_key(best.x);

  // The split step: temperature alone takes the chunks' draws; top-k / top-p walk the candidate list unless it
  // overflowed; the normalisers come from the chunks where the list does not hold every token they sum.
  var alone = false;
  var above_list = false;  // top-p alone over a list: the tokens above it survive (phase 3's mass and best draw)
  let listed = (PHASE == 4u || PHASE == 6u) && !fallback;  // phase 4's work, not phase 5's
  var split_z = listed && greedy;  // Z (top-p alone) and Z1 (logprobs) from the chunk sums
  if (listed && !greedy && n_top == 0u) {
    if (!use_k && !use_top_p) {
      alone = true;
      split_z = true;
    } else {
      let n = n_list;
      if (n <= CAP) {
        g_cand = true;
        g_n = n;
        g_cbase = sb + off_c();
        split_z = true;
        if (!use_k) {
          var q = 0u;
          var qa = 0u;
          for (var c = tid; c < NW; c += WG) {
            q += scratch[sb + off_q() + 2u * c];
            qa += scratch[sb + off_q() + 2u * c + 1u];
          }
          g_qtotal = reduce_sum_u(q, tid);
          g_qabove = reduce_sum_u(qa, tid);
          above_list = true;
        }
      }
    }
  }

  // Top-k threshold (counts).
  g_tk = 0u;
  if (use_k) {
    g_tk = radix_select(MODE_COUNT, top_k, tid);
  }

  // Normalisers: Z over the top-k survivors at temperature T (top-p), Z1 over all at temperature 1 (logprobs).
  var log_z1 = 0.0;
  if (use_top_p || want_lp) {
    var zs = 0.0;
    var z1 = 0.0;
    if (split_z && (want_lp || !use_k)) {  // top-k sums Z over its list below; Z1 only for a logprob
      let z = zsum(sb, tid);
      zs = z.x;
      z1 = z.y;
    }
    if (!split_z || use_k) {  // top-k's Z sums its survivors, all of them in the list
      var zl = 0.0;
      var zl1 = 0.0;
      for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
        var xs = load_row(i0);
        for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
          let x = xs[u];
          let d = x - g_m;
          if (use_top_p && key_of(x) >= g_tk) {
            zl += exp(d * g_inv_t);
          }
          if (want_lp && !split_z) {
            zl1 += exp(d);
          }
        }
      }
      let z = reduce_sum_f2(vec2<f32>(zl, zl1), tid);
      zs = z.x;
      if (!split_z) {
        z1 = z.y;
      }
    }
    log_z1 = log(z1);
    g_qscale = 2147483648.0 / zs;
  }

  var token = best.y;
  var n_survivors = 1u;
  if (alone) {
    // Gumbel-max over every token: the chunks' best scores.
    token = chunks_argmax(sb + off_gum(), 2u, tid).y;
    n_survivors = V;
  } else if (!greedy) {
    var t_surv = g_tk;
    if (use_top_p) {
      t_surv = radix_select(MODE_MASS, 0u, tid);
    }
    // The tokens above a top-p list: phase 3's best draws per chunk.
    var above = vec2<u32>(0u, NONE);
    if (above_list) {
      above = chunks_argmax(sb + off_gum(), 2u, tid);
    }
    // Gumbel-max over the survivors: argmax s_i - log(E_i), E_i ~ Exp(1).
    set_draw_keys(p, generated);
    var sk = 0u;
    var si = NONE;
    var cnt = 0u;
    for (var i0 = tid; i0 < g_n; i0 += UNROLL * WG) {
      var xs = load_row(i0);
      for (var u = 0u; u < UNROLL && i0 + u * WG < g_n; u++) {
        let i = dom_id(i0 + u * WG);
        let x = xs[u];
        if (key_of(x) < t_surv) {
          continue;
        }
        cnt += 1u;
        let score = (x - g_m) * g_inv_t - log(exp_draw(i));
        let k = key_of(score);
        if (better(k, i, sk, si)) {
          sk = k;
          si = i;
        }
      }
    }
    let listed = reduce_argmax(sk, si, tid);
    token = select(listed.y, above.y, better(above.x, above.y, listed.x, listed.y));
    if (WRITE_STATS) {
      n_survivors = reduce_sum_u(cnt, tid);
      if (above_list) {
        n_survivors += scratch[sb + off_na()];
      }
    }
  }

  if (n_top > 0u) {
    var tn = 0u;
    if (n_top < V) {
      tn = radix_select(MODE_COUNT, n_top, tid);
    }
    collect_top(n_top, tn, tid);
  }

  if (tid != 0u) {
    return;
  }
  // Outputs and row state (one invocation).
  var lp = 0.0;
  if (want_lp) {
    lp = (lval(token) - g_m) - log_z1;
  }
  out[o] = token;
  out[o + 1u] = bitcast<u32>(lp);
  out[o + 2u] = n_top;
  for (var j = 0u; j < MAX_TOP; j++) {
    var id = NONE;
    var lpj = 0.0;
    if (j < n_top) {
      id = top_id[j];
      lpj = (lval(id) - g_m) - log_z1;
    }
    out[o + 3u + 2u * j] = id;
    out[o + 4u + 2u * j] = bitcast<u32>(lpj);
  }
  let ci = slot * V + token;
  let c = counts[ci];
  counts[ci] = (c & 0x80000000u) | ((c + 1u) & 0x7FFFFFFFu);

  let gen = generated + 1u;
  var finish = 0u;
  let n_stop = min(p[P_N_STOP], 8u);
  for (var j = 0u; j < n_stop; j++) {
    if (p[P_STOP + j] == token) {
      finish = 1u;
    }
  }
  if (finish == 0u && gen >= p[P_MAX_TOKENS]) {
    finish = 2u;
  }
  let r = b * 8u;
  if (ADVANCE_POS) {
    rows[r + 1u] = row[1] + 1u;
  }
  // A grammar row pauses after each token (active 0, finish none): the host computes its next mask from the
  // token and re-activates it for the next submission.
  rows[r + 2u] = select(1u, 0u, finish != 0u || masked);
  rows[r + 3u] = gen;
  rows[r + 4u] = token;
  rows[r + 5u] = row[5] + 1u;
  rows[r + 6u] = finish;
  if (WRITE_STATS) {
    rows[r + 7u] = n_survivors;
  }
  out[o + 43u] = finish;
}
