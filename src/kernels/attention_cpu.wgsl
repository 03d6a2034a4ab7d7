// Attention on CPU adapters (SwiftShader): attention.wgsl's fused decode (SPLIT 1) and its prefill, with the same
// bindings and outputs, written as plain loops with no workgroup memory and no barriers, so it compiles in a
// fraction of the time (docs/default-model.md, "Start-up on a CPU adapter"), and one pipeline serves both.
// One invocation per query head: a workgroup of HG = 4 consecutive heads (SwiftShader's SIMD width) of one token;
// lanes past HQ compute head HQ - 1 and write nothing. The grid says which pass it is, so the two share one
// pipeline: (ceil(HQ / HG), rows, 1) decodes, (ceil(HQ / HG), tokens, 2) prefills (the z = 1 workgroups exit).
// Decode (token i = row i): q of the head and k of its KV head from the raw projection (optional per-head
// RMSNorm, rotary embedding at the row's position), v; the first query head of each KV group writes k and v into
// the cache at that position (active rows only) and every invocation uses its own copy for that position, so
// none reads a cache entry written in the same dispatch. Prefill (token i = offset i of row 0, as in
// attention.wgsl PREFILL): q from qk_prepare's output, which also wrote the chunk's k and v into the cache.
// Then one pass over the positions [max(0, pos - WINDOW + 1), pos] with an online softmax per position;
// Qwen3.5's gate (GATED) on the output. K/V through the slot's page table with PAGED (as kv_page.wgsl, whose table
// offset here depends on the pass: PT words of decode rows, PT1 of the prefill row).
override D: u32 = 64u;          // head dim, multiple of 4, ≤ 256 (≤ 512 with the HEAD512 define)
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override CTX: u32 = 1u;
override WINDOW: u32 = 0u;
override GATED: bool = false;
override SCALE: f32 = 0.125;    // 1 / sqrt(D)
override Q_BETA: f32 = 0.0;    // > 0: q times 1 + Q_BETA · ln(1 + floor(pos / Q_ORIG)) (ministral3)
override Q_ORIG: u32 = 1u;
override SOFTCAP: f32 = 0.0;    // > 0: scores soft-capped to SOFTCAP · tanh(s / SOFTCAP) (gemma2)
override QK_NORM: bool = false;  // per-head RMSNorm of q and k
override V_NORM: bool = false;   // gemma4: v RMS-normed (no weight) before the cache
override R: u32 = 64u;           // rotary dims (even, ≤ D)
override EPS: f32 = 1e-6;
override PAGED: bool = false;
override PAGE: u32 = 16u;       // positions per page
override PT: u32 = 8u;          // decode: word offset of the page tables in `rows` (8 · decode rows)
override PT1: u32 = 8u;         // prefill: the same in the prefill row's buffer
override MAXP: u32 = 1u;        // table entries per slot: ceil(CTX / PAGE)

const HG = 4u;                   // query heads per workgroup
override DV: u32 = D / 4u;       // vec4 columns of a head

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;  // prefill: [tokens, HQ, D] (qk_prepare)
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(2) var<storage, read_write> kc: array<vec4<f32>>; // [slots, HKV, CTX, D] or pages (kv_page)
@group(0) @binding(3) var<storage, read_write> vc: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> qkv: array<f32>;      // projection output [rows, width]
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;  // [rows, HQ, D]
@group(0) @binding(6) var<storage, read> rope: array<f32>;     // [CTX, R] cos then sin (qk_prepare.wgsl)
@group(0) @binding(7) var<storage, read> norms: array<f32>;    // with QK_NORM: [2, D] q_norm, k_norm

//#if HEAD512
var<private> hn: array<f32, 512>;         // HEAD512: gemma4's full layers (D ≤ 512)
var<private> hb: array<f32, 512>;
var<private> qv: array<vec4<f32>, 128>;
var<private> kcur: array<vec4<f32>, 128>;
var<private> vcur: array<vec4<f32>, 128>;
var<private> acc: array<vec4<f32>, 128>;
//#else
var<private> hn: array<f32, 256>;         // a head being prepared: raw (normed)
var<private> hb: array<f32, 256>;         // ... rotated
var<private> qv: array<vec4<f32>, 64>;    // q · SCALE
var<private> kcur: array<vec4<f32>, 64>;  // k and v of the row's own position
var<private> vcur: array<vec4<f32>, 64>;
var<private> acc: array<vec4<f32>, 64>;   // Σ p·v, scaled to the running max
//#endif

//#include activation
//#include attention_gate

//#include qk_rope

// The row (in units of D elements) of position p of KV head g of `slot`; pt: the page tables' offset in `rows`.
fn kvRow(slot: u32, g: u32, p: u32, pt: u32) -> u32 {
  if (PAGED) {
    let page = rows[pt + slot * MAXP + p / PAGE];
    return (page * HKV + g) * PAGE + p % PAGE;
  }
  return (slot * HKV + g) * CTX + p;
}

// hb[0..D) = the head at qkv[src .. src + D) after the optional RMSNorm (weights norms[noff ..]) and the rotary
// embedding at position p.
fn prepHead(src: u32, noff: u32, p: u32) {
  var ss = 0.0;
  for (var d = 0u; d < D; d++) {
    let v = qkv[src + d];
    hn[d] = v;
    ss += v * v;
  }
  if (QK_NORM) {
    let r = inverseSqrt(ss / f32(D) + EPS);
    for (var d = 0u; d < D; d++) { hn[d] = hn[d] * r * norms[noff + d]; }
  }
  for (var d = 0u; d < D; d++) { hb[d] = ropeRotate(hn[d], hn[partnerOf(d)], d, p); }
}

@compute @workgroup_size(HG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let prefill = nwg.z == 2u;
  if (wid.z != 0u) { return; }
  let pt = select(PT, PT1, prefill);
  let lane_head = wid.x * HG + lidv.x;
  let own = lane_head < HQ;
  let h = min(lane_head, HQ - 1u);
  let i = wid.y;
  let b = select(i, 0u, prefill);
  let t = select(0u, i, prefill);
  let slot = rows[b * 8u];
  let raw_pos = rows[b * 8u + 1u] + t;
  let pos = min(raw_pos, CTX - 1u);
  let g = h / (HQ / HKV);
  let qscale = SCALE * queryScale(raw_pos, Q_BETA, Q_ORIG);  // q · SCALE (ministral3: times its position's factor)

  if (prefill) {
    for (var c = 0u; c < DV; c++) { qv[c] = q[(i * HQ + h) * DV + c] * qscale; }
  } else {
    let width = qkvWidth();
    let kbase = select(HQ * D, 2u * HQ * D, GATED);
    prepHead(i * width + select(h * D, h * 2u * D, GATED), 0u, raw_pos);
    for (var c = 0u; c < DV; c++) {
      qv[c] = vec4<f32>(hb[4u * c], hb[4u * c + 1u], hb[4u * c + 2u], hb[4u * c + 3u]) * qscale;
    }
  }
  // KV_SHARED: the source layer wrote this position into the cache earlier in the step; it is read from there.
  if (!prefill && !KV_SHARED) {
    let width = qkvWidth();
    let kbase = select(HQ * D, 2u * HQ * D, GATED);
    prepHead(i * width + kbase + g * D, D, raw_pos);
    let vi = i * width + kbase + HKV * D + g * D;
    var vr = 1.0;
    if (V_NORM) {
      var vs = 0.0;
      for (var d = 0u; d < D; d++) { vs += qkv[vi + d] * qkv[vi + d]; }
      vr = inverseSqrt(vs / f32(D) + EPS);
    }
    for (var c = 0u; c < DV; c++) {
      kcur[c] = vec4<f32>(hb[4u * c], hb[4u * c + 1u], hb[4u * c + 2u], hb[4u * c + 3u]);
      vcur[c] = vec4<f32>(qkv[vi + 4u * c], qkv[vi + 4u * c + 1u], qkv[vi + 4u * c + 2u], qkv[vi + 4u * c + 3u]) * vr;
    }
    // Inactive rows (no sequence, or finished) must not touch the cache: their slot/pos are stale.
    if (own && h % (HQ / HKV) == 0u && raw_pos < CTX && rows[b * 8u + 2u] != 0u) {
      let at = kvRow(slot, g, raw_pos, pt) * DV;
      for (var c = 0u; c < DV; c++) {
        kc[at + c] = kcur[c];
        vc[at + c] = vcur[c];
      }
    }
  }

  var first = 0u;
  if (WINDOW > 0u && pos + 1u > WINDOW) { first = pos + 1u - WINDOW; }
  var m = -3.0e38;
  var l = 0.0;
  for (var c = 0u; c < DV; c++) { acc[c] = vec4<f32>(0.0); }
  for (var pp = first; pp <= pos; pp++) {
    let mine = !prefill && !KV_SHARED && pp == raw_pos;
    let kr = kvRow(slot, g, pp, pt) * DV;
    var d4 = vec4<f32>(0.0);
    if (mine) {
      for (var c = 0u; c < DV; c++) { d4 += qv[c] * kcur[c]; }
    } else {
      for (var c = 0u; c < DV; c++) { d4 += qv[c] * kc[kr + c]; }
    }
    let s = softcap(d4.x + d4.y + d4.z + d4.w, SOFTCAP);
    if (s > m) {
      let corr = exp(m - s);
      l *= corr;
      for (var c = 0u; c < DV; c++) { acc[c] *= corr; }
      m = s;
    }
    let e = exp(s - m);
    l += e;
    if (mine) {
      for (var c = 0u; c < DV; c++) { acc[c] += e * vcur[c]; }
    } else {
      for (var c = 0u; c < DV; c++) { acc[c] += e * vc[kr + c]; }
    }
  }
  if (!own) { return; }
  for (var c = 0u; c < DV; c++) {
    var o = acc[c] / l;
    if (GATED) { o = applyGate(o, i, h, c); }
    out[(i * HQ + h) * DV + c] = o;
  }
}
