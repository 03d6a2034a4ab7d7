// Token sampling on CPU adapters (SwiftShader): sample.wgsl's semantics, bindings, grid and outputs, written as
// one invocation per batch row walking the vocabulary in plain loops: no workgroup memory, no atomics, no
// barriers. SwiftShader compiles every barrier of sample.wgsl into a resumption point of each invocation, which
// made that sampler the costliest pipeline of the default model to compile (docs/default-model.md). On a CPU a
// few sequential passes over the row cost little at V = 4096 and stay exact at V = 151936 or 262144.
//
// Same picks as sample.wgsl, bit for bit: every per-token value (penalties, keys, masses, Gumbel scores, the
// hash) is the same f32 expression, the integer passes (top-k, top-p radix selects, the survivor count) are
// order-independent, and the two floating-point sums (the top-p normaliser Z and the logprob normaliser Z1)
// are added in sample.wgsl's order for a workgroup of ORDER_WG threads: thread t sums tokens t, t + WG, ...,
// groups of RG = 16 threads are summed in thread order, then the groups (reduce_sum_f2). The helpers below
// repeat sample.wgsl's; tests/kernels/sample_test.cpp (SampleCpuKernel) runs both on the same rows.

override V: u32;                    // vocabulary size (row length of logits and counts)
override KMAX: u32 = 1u;            // steps in the out ring per row
override ADVANCE_POS: bool = true;  // decode step: pos += 1 for an active row
override WRITE_STATS: bool = false;  // tests: rows[b*8+7] = number of tokens that survived top-k/top-p
override ORDER_WG: u32 = 64u;       // sample.wgsl's WG whose summation order Z and Z1 follow (a multiple of 16)

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;  // [B, V]
@group(0) @binding(1) var<storage, read> params: array<u32>;        // [B, 64]
@group(0) @binding(2) var<storage, read_write> counts: array<u32>;  // [S, V]: bit 31 prompt, bits 0..30 generated
@group(0) @binding(3) var<storage, read_write> rows: array<u32>;    // [B, 8]
@group(0) @binding(4) var<storage, read_write> out: array<u32>;     // [B, KMAX, 44]
@group(0) @binding(5) var<storage, read> mask: array<u32>;         // [B, ceil(V/32)]: allowed tokens (P_MASK rows)

const NBINS = 256u;
const RG = 16u;  // sample.wgsl's reduction group size
const MAX_TOP = 20u;
const NONE = 0xFFFFFFFFu;
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
const P_MASK = 53u;

var<private> hist: array<u32, NBINS>;     // radix-select histogram
var<private> top_id: array<u32, MAX_TOP>;  // top-n logprobs: ids, keys descending (ties: ascending id)
var<private> top_key: array<u32, MAX_TOP>;

// Per-row values shared by the helpers.
var<private> g_base: u32;     // row offset into logits
var<private> g_m: f32;        // max processed logit
var<private> g_inv_t: f32;    // 1 / temperature (capped)
var<private> g_tk: u32;       // top-k threshold key (0 = all)
var<private> g_qscale: f32;   // 2^31 / Z over the top-k survivors
var<private> g_top_p: f32;
var<private> g_k1: u32;       // hash keys of (seed, generated)
var<private> g_ks: u32;

// ---- as in sample.wgsl ----

fn key_of(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}

fn from_key(k: u32) -> f32 {
  return bitcast<f32>(select(~k, k & 0x7FFFFFFFu, (k & 0x80000000u) != 0u));
}

fn lval(i: u32) -> f32 {
  let x = logits[g_base + i];
  let a = bitcast<u32>(x) & 0x7FFFFFFFu;
  if (a > 0x7F800000u) { return -FLT_MAX; }
  return clamp(x, -FLT_MAX, FLT_MAX);
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
  return -log(1.0 - v);
}

fn mass(x: f32) -> u32 {
  let e = exp((x - g_m) * g_inv_t);
  return u32(round(e * g_qscale));
}

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

fn top_p_target(total: u32) -> u32 {
  let p24 = u32(round(g_top_p * 16777216.0));
  let prod = mul64(total, p24);
  var t = (prod.x << 8u) | (prod.y >> 24u);
  if ((prod.y & 0xFFFFFFu) != 0u) {
    t += 1u;
  }
  return max(t, 1u);
}

// ---- the passes, sequential ----

const MODE_COUNT = 0u;  // weight 1 per token
const MODE_MASS = 1u;   // weight mass(x) per top-k survivor; target derived from the total and top_p

// The largest key t with W(t) >= target, W(t) = total weight of tokens whose key >= t: four passes over the row,
// one 8-bit digit each, most significant first; `above` is the weight of tokens already known to be > t.
fn radix_select(mode: u32, target_in: u32) -> u32 {
  var prefix = 0u;
  var above = 0u;
  var goal = target_in;
  for (var step = 0u; step < 4u; step++) {
    let shift = 24u - 8u * step;
    let decided = ~(0xFFFFFFFFu >> (8u * step));  // digits already decided
    for (var j = 0u; j < NBINS; j++) {
      hist[j] = 0u;
    }
    for (var i = 0u; i < V; i++) {
      let x = lval(i);
      let k = key_of(x);
      if ((k & decided) != prefix) {
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
      hist[(k >> shift) & 0xFFu] += w;
    }
    if (step == 0u && mode == MODE_MASS) {
      var total = 0u;
      for (var j = 0u; j < NBINS; j++) {
        total += hist[j];
      }
      goal = top_p_target(total);
    }
    // From the top bin down, the first where the running weight reaches the goal (above < goal on entry).
    var run = above;
    for (var jj = 0u; jj < NBINS; jj++) {
      let j = NBINS - 1u - jj;
      let next = run;
      run += hist[j];
      if (run >= goal) {
        prefix |= j << shift;
        above = next;
        break;
      }
    }
  }
  return prefix;
}

// Z over the top-k survivors at temperature T (x) and Z1 over all at temperature 1 (y), summed in sample.wgsl's
// order for ORDER_WG threads.
fn normalisers(use_top_p: bool, want_lp: bool) -> vec2<f32> {
  var z = vec2<f32>(0.0);
  for (var grp = 0u; grp < ORDER_WG / RG; grp++) {
    var part = vec2<f32>(0.0);
    for (var t = grp * RG; t < grp * RG + RG; t++) {
      var zs = 0.0;
      var z1 = 0.0;
      for (var i = t; i < V; i += ORDER_WG) {
        let x = lval(i);
        let d = x - g_m;
        if (use_top_p && key_of(x) >= g_tk) {
          zs += exp(d * g_inv_t);
        }
        if (want_lp) {
          z1 += exp(d);
        }
      }
      part += vec2<f32>(zs, z1);
    }
    z += part;
  }
  return z;
}

// Ids of the n largest logits into top_id[0..n), key descending, ties by lowest id: one pass keeping a sorted list
// (ids arrive ascending, so an equal key never displaces an earlier id).
fn collect_top(n: u32) {
  var filled = 0u;
  for (var i = 0u; i < V; i++) {
    let k = key_of(lval(i));
    if (filled == n && k <= top_key[n - 1u]) {
      continue;
    }
    var q = min(filled, n - 1u);
    if (filled < n) {
      filled++;
    }
    loop {
      if (q == 0u || top_key[q - 1u] >= k) {
        break;
      }
      top_key[q] = top_key[q - 1u];
      top_id[q] = top_id[q - 1u];
      q--;
    }
    top_key[q] = k;
    top_id[q] = i;
  }
}

// A grammar row: tokens whose bit is clear get -FLT_MAX, after penalties and bias.
fn apply_mask(b: u32) {
  let words = (V + 31u) / 32u;
  for (var w = 0u; w < words; w++) {
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
}

// Penalties on tokens seen in the prompt or generated, then logit_bias; all in place.
fn apply_penalties(pb: u32, slot: u32) {
  let rep = bitcast<f32>(params[pb + P_REP]);
  let pres = bitcast<f32>(params[pb + P_PRES]);
  let freq = bitcast<f32>(params[pb + P_FREQ]);
  let nb = min(params[pb + P_N_BIAS], 16u);
  if (rep != 1.0 || pres != 0.0 || freq != 0.0) {
    let inv_rep = 1.0 / rep;
    for (var i = 0u; i < V; i++) {
      let c = counts[slot * V + i];
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
  for (var j = 0u; j < nb; j++) {
    let tok = params[pb + P_BIAS + 2u * j];
    if (tok < V) {
      logits[g_base + tok] = lval(tok) + bitcast<f32>(params[pb + P_BIAS + 2u * j + 1u]);
    }
  }
}

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
  let b = wid.x;
  let pb = b * 64u;
  let r = b * 8u;
  let slot = rows[r];
  let pos = rows[r + 1u];
  let row_active = rows[r + 2u];
  let generated = rows[r + 3u];
  let out_index = rows[r + 5u];
  let o = (b * KMAX + out_index % KMAX) * 44u;

  if (row_active == 0u) {  // inactive: mark the step, keep the state
    out[o] = NONE;
    out[o + 1u] = 0u;
    out[o + 2u] = 0u;
    out[o + 43u] = rows[r + 6u];
    rows[r + 5u] = out_index + 1u;
    return;
  }

  g_base = b * V;
  apply_penalties(pb, slot);
  let masked = params[pb + P_MASK] != 0u;
  if (masked) {
    apply_mask(b);
  }

  // Max (and greedy argmax, lowest id among equal keys).
  var bk = 0u;
  var bi = NONE;
  for (var i = 0u; i < V; i++) {
    let k = key_of(lval(i));
    if (k > bk) {
      bk = k;
      bi = i;
    }
  }
  g_m = from_key(bk);

  let temperature = bitcast<f32>(params[pb + P_TEMP]);
  let n_top = min(min(params[pb + P_N_LOGPROBS], MAX_TOP), V);
  let want_lp = params[pb + P_WANT_LOGPROB] != 0u || n_top > 0u;
  let greedy = !(temperature > 0.0);
  g_inv_t = min(1.0 / temperature, 1e30);
  g_top_p = bitcast<f32>(params[pb + P_TOP_P]);
  let use_top_p = !greedy && g_top_p < 1.0;
  let top_k = params[pb + P_TOP_K];

  g_tk = 0u;
  if (!greedy && top_k > 0u && top_k < V) {
    g_tk = radix_select(MODE_COUNT, top_k);
  }

  var log_z1 = 0.0;
  if (use_top_p || want_lp) {
    let z = normalisers(use_top_p, want_lp);
    log_z1 = log(z.y);
    g_qscale = 2147483648.0 / z.x;
  }

  var token = bi;
  var n_survivors = 1u;
  if (!greedy) {
    var t_surv = g_tk;
    if (use_top_p) {
      t_surv = radix_select(MODE_MASS, 0u);
    }
    // Gumbel-max over the survivors: argmax s_i - log(E_i), E_i ~ Exp(1); lowest id among equal keys.
    g_k1 = mix32(params[pb + P_SEED_LO] ^ 0x3c6ef372u);
    let k2 = mix32(params[pb + P_SEED_HI] ^ mix32(g_k1 ^ 0xa54ff53au));
    g_ks = mix32(k2 ^ mix32(generated + 0x9e3779b9u));
    var sk = 0u;
    var si = NONE;
    var cnt = 0u;
    for (var i = 0u; i < V; i++) {
      let x = lval(i);
      if (key_of(x) < t_surv) {
        continue;
      }
      cnt += 1u;
      let score = (x - g_m) * g_inv_t - log(exp_draw(i));
      let k = key_of(score);
      if (k > sk) {
        sk = k;
        si = i;
      }
    }
    token = si;
    n_survivors = cnt;
  }

  if (n_top > 0u) {
    collect_top(n_top);
  }

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
  let n_stop = min(params[pb + P_N_STOP], 8u);
  for (var j = 0u; j < n_stop; j++) {
    if (params[pb + P_STOP + j] == token) {
      finish = 1u;
    }
  }
  if (finish == 0u && gen >= params[pb + P_MAX_TOKENS]) {
    finish = 2u;
  }
  if (ADVANCE_POS) {
    rows[r + 1u] = pos + 1u;
  }
  // A grammar row pauses after each token (active 0, finish none) for the host to compute its next mask.
  rows[r + 2u] = select(1u, 0u, finish != 0u || masked);
  rows[r + 3u] = gen;
  rows[r + 4u] = token;
  rows[r + 5u] = out_index + 1u;
  rows[r + 6u] = finish;
  if (WRITE_STATS) {
    rows[r + 7u] = n_survivors;
  }
  out[o + 43u] = finish;
}
