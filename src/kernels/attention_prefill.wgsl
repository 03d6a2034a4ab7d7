// Prefill attention on GPUs in tiles (flash-attention style: no score matrix in memory). One workgroup per (KV head g,
// block of BQ consecutive tokens of the chunk) with LANES threads per (query head of the group, token): G · BQ · LANES
// threads. LANES threads split the head's dims (by default two with heads over 64: the query and output row of 128
// would not fit one thread's registers; the host may ask for 1, 2 or 4) and add their partial scores through
// workgroup memory. The workgroup walks the keys its tokens need, [first position of its first token, last token's
// position], in tiles of BK positions: each tile's K and V rows
// are read from the cache once (f32 or the f16 pairs of KV16) into workgroup memory, then every thread scores the
// tile's BK keys against its query (held in registers), takes the tile's max, rescales its running sum and output
// (online softmax) and accumulates p · v. The G query heads of the KV group share each tile, so the cache is read once
// per block of tokens instead of once per token and query head (attention.wgsl's PREFILL walk). Masks: a key counts for
// a token when it is at or before the token's position and, with WINDOW, within the window; keys past the tile's end
// (the last tile) and tokens past T = meta[0] contribute nothing. The same inputs as attention.wgsl's PREFILL pass: q
// [tokens, HQ, D] from qk_prepare.wgsl (rotated, normed), the slot and first position in rows[0..1], the page tables
// after them (kv_page), Qwen3.5's output gate (GATED), gemma2's score soft-cap (SOFTCAP), ministral3's query scale
// (Q_BETA), and out [tokens, HQ, D]. D ≤ 128 (a lane's part of the query and the output row stay in registers); larger
// heads keep attention.wgsl.
// SG: the lanes of a (query head, token) add their partial scores by subgroup shuffles instead of workgroup memory
// and a barrier (needs subgroups of at least LANES, and consecutive invocations in one subgroup). Every lane gets the
// same sum, bit for bit: with 4 lanes it is (s0 + s1) + (s2 + s3) in either order of the two halves.
//#enable subgroups
override D: u32 = 64u;
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override CTX: u32 = 1u;
override WINDOW: u32 = 0u;
override GATED: bool = false;
override SCALE: f32 = 0.125;
override Q_BETA: f32 = 0.0;
override Q_ORIG: u32 = 1u;
override SOFTCAP: f32 = 0.0;
override BQ: u32 = 64u;          // tokens per workgroup
override BK: u32 = 32u;          // positions per K/V tile (≤ 32)
override G: u32 = HQ / HKV;      // query heads per KV head
override LANES: u32 = select(1u, 2u, D > 64u);  // threads per (query head, token): 1, 2 or 4
override SG: bool = false;       // LANES > 1: the partial scores meet by subgroup shuffles
override WG: u32 = G * BQ * LANES;  // threads (the host keeps it ≤ 256)
override DV: u32 = D / 4u;
override DVL: u32 = DV / LANES;  // vec4 of the head per lane (≤ 16)
override TILE: u32 = BK * DV;    // vec4 per K (and V) tile
override SP: u32 = select(1u, WG * BK, LANES > 1u && !SG);

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;  // [tokens, HQ, D]
@group(0) @binding(1) var<storage, read> rows: array<u32>;     // the prefill row (slot, pos), then the page tables
// bindings 2, 3: the KV cache (kv_cache.wgsl)
@group(0) @binding(4) var<storage, read> qkv: array<f32>;      // projection output (GATED: the gate rows)
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;  // [tokens, HQ, D]
@group(0) @binding(6) var<storage, read> meta_b: array<u32>;   // [0]: T

var<workgroup> ks: array<vec4<f32>, TILE>;
var<workgroup> vs: array<vec4<f32>, TILE>;
var<workgroup> sp: array<f32, SP>;  // LANES > 1: each thread's partial scores of the tile [thread][BK]

//#include activation
//#include kv_cache
//#include attention_gate
//#include kv_page

// The first position a token at position p attends to (its window's start; 0 without WINDOW).
fn windowStart(p: u32) -> u32 { return select(0u, p + 1u - WINDOW, WINDOW > 0u && p + 1u > WINDOW); }

// LANES > 1: key j's score summed over the lanes of this (query head, token), the same bits on every lane (addition
// commutes; with 4 lanes the pairs (0, 1) and (2, 3) are added first).
fn laneSum(v: f32, lid: u32, j: u32) -> f32 {
//#if SUBGROUPS
  if (SG) {
    let a = v + subgroupShuffleXor(v, 1u);
    if (LANES == 2u) { return a; }
    return a + subgroupShuffleXor(a, 2u);
  }
//#endif
  let b = (lid - lid % LANES) * BK + j;
  let a = sp[b] + sp[b + BK];
  if (LANES == 2u) { return a; }
  return a + (sp[b + 2u * BK] + sp[b + 3u * BK]);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let g = wid.x;
  let T = meta_b[0];
  let t0 = wid.y * BQ;
  if (t0 >= T) { return; }  // uniform: the whole workgroup has the same block
  let lane = lid % LANES;
  let qi = (lid / LANES) % BQ;
  let h = g * G + lid / LANES / BQ;
  let c0 = lane * DVL;  // this lane's first vec4 of the head
  let t = t0 + qi;
  let valid = t < T;
  let slot = rows[0];
  let pos0 = rows[1];
  let raw = pos0 + t;
  let pos = min(raw, CTX - 1u);
  let qscale = SCALE * queryScale(raw, Q_BETA, Q_ORIG);
  var qv: array<vec4<f32>, 16>;
  var acc: array<vec4<f32>, 16>;
  for (var c = 0u; c < DVL; c++) {
    qv[c] = select(vec4<f32>(0.0), q[(t * HQ + h) * DV + c0 + c] * qscale, valid);
    acc[c] = vec4<f32>(0.0);
  }
  // The positions the block needs: from its first token's window start to its last token's position.
  let tl = min(t0 + BQ, T) - 1u;
  let hi = min(pos0 + tl, CTX - 1u);
  let lo = windowStart(min(pos0 + t0, CTX - 1u));
  let first = windowStart(pos);
  var m = -3.0e38;
  var l = 0.0;
  for (var kb = lo; kb <= hi; kb += BK) {
    for (var e = lid; e < TILE; e += WG) {
      let p = kb + e / DV;
      var kv = vec4<f32>(0.0);
      var vv = vec4<f32>(0.0);
      if (p <= hi) {
        let at = kvRow(slot, g, p) * DV + e % DV;
        kv = kload(at);
        vv = vload(at);
      }
      ks[e] = kv;
      vs[e] = vv;
    }
    workgroupBarrier();
    var s: array<f32, 32>;
    for (var j = 0u; j < BK; j++) {
      var d4 = vec4<f32>(0.0);
      for (var c = 0u; c < DVL; c++) { d4 += qv[c] * ks[j * DV + c0 + c]; }
      s[j] = d4.x + d4.y + d4.z + d4.w;
      if (LANES > 1u && !SG) { sp[lid * BK + j] = s[j]; }
    }
    if (LANES > 1u && !SG) { workgroupBarrier(); }
    var mt = m;
    for (var j = 0u; j < BK; j++) {
      let p = kb + j;
      if (LANES > 1u) { s[j] = laneSum(s[j], lid, j); }
      s[j] = softcap(s[j], SOFTCAP);
      if (valid && p <= pos && p >= first) { mt = max(mt, s[j]); }
    }
    let corr = exp(m - mt);
    l *= corr;
    for (var c = 0u; c < DVL; c++) { acc[c] *= corr; }
    for (var j = 0u; j < BK; j++) {
      let p = kb + j;
      if (valid && p <= pos && p >= first) {
        let e = exp(s[j] - mt);
        l += e;
        for (var c = 0u; c < DVL; c++) { acc[c] += e * vs[j * DV + c0 + c]; }
      }
    }
    m = mt;
    workgroupBarrier();
  }
  if (!valid) { return; }
  for (var c = 0u; c < DVL; c++) {
    var o = acc[c] / l;
    if (GATED) { o = applyGate(o, t, h, c0 + c); }
    out[(t * HQ + h) * DV + c0 + c] = o;
  }
}
