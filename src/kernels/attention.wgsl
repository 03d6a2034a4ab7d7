// Causal grouped-query attention over the KV cache, one workgroup per (query head, token), online softmax in
// blocks of WG positions. Token i is (row b, offset t) as in qk_prepare; it attends to positions
// [max(0, pos - WINDOW + 1), pos] of its slot (WINDOW 0 = no sliding window). Query head h reads KV head
// h / (HQ / HKV). Output [tokens, HQ * D]; with GATED (Qwen3.5) multiplied by sigmoid(gate) taken from the
// interleaved q rows of the projection output.
// FUSED (decode only): the workgroup also does qk_prepare's work for its token: q of head h and k of its KV head
// from the raw projection (optional per-head RMSNorm, rotary embedding at the row's position); the first query
// head of each KV group writes k and v into the cache at that position, and every workgroup uses its own copy
// of them for that position, so no workgroup reads a cache entry written in the same dispatch. One dispatch
// instead of two per attention layer. Only active rows (rows[b*8+2]) write the cache.
// SPLIT > 1 (decode, flash-decoding): workgroup z takes the z-th of SPLIT equal ranges of the positions and
// writes its unnormalised partial (Σ p·v, running max m, Σ p) to out as [tokens, HQ, SPLIT, D/4 + 1] vec4s;
// attention_combine.wgsl merges them. Few heads × one token would otherwise keep most of the GPU idle.
// Per block of WG positions: every thread scores one position (q·k over D with 16-byte loads; with TPP > 1, TPP
// neighbouring threads share a position, each taking every TPP-th column so a subgroup's loads cover whole K rows,
// and add their parts with subgroup shuffles), one workgroup max (two barriers), then the threads split as D/4
// columns × WG/(D/4) position lanes to accumulate p·v with 16-byte coalesced loads. The softmax denominator is kept per thread and summed once at the end.
// PAGED (kv_page.wgsl): K/V are addressed through the slot's page table at the tail of `rows`.
// KV16 (a define, Context::kernel): the cache holds f16, four values per vec2<u32> (pack2x16float); scores and
// sums stay f32. Half the bytes per position read; the CPU reference keeps f32 (the default on CPU adapters).
//#enable subgroups
override D: u32 = 64u;          // head dim, multiple of 4, ≤ 256 (≤ 512 with the HEAD512 define)
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override CTX: u32 = 1u;
override WINDOW: u32 = 0u;
override GATED: bool = false;
override PREFILL: bool = false;
override SCALE: f32 = 0.125;    // 1 / sqrt(D)
override Q_BETA: f32 = 0.0;    // > 0: q times 1 + Q_BETA · ln(1 + floor(pos / Q_ORIG)) (ministral3)
override Q_ORIG: u32 = 1u;
override SOFTCAP: f32 = 0.0;    // > 0: scores soft-capped to SOFTCAP · tanh(s / SOFTCAP) (gemma2)
override FUSED: bool = false;
override SPLIT: u32 = 1u;        // decode: position ranges (grid z); > 1 writes partials for attention_combine.wgsl
override QK_NORM: bool = false;  // FUSED: per-head RMSNorm of q and k
override V_NORM: bool = false;   // FUSED: gemma4's v RMS-normed (no weight) before the cache
override R: u32 = 64u;           // FUSED: rotary dims (even, ≤ D)
override EPS: f32 = 1e-6;

override WG: u32 = 256u;         // 256, or 64 where barriers are expensive (CPU adapters)
override RS: u32 = 16u;          // reduction fan-in: RS * RS == WG
override DV: u32 = D / 4u;       // vec4 columns of a head
override PL: u32 = WG / DV;      // position lanes in the p·v accumulation
override TPP: u32 = 1u;          // threads per position scoring q·k (1, 2, 4, 8; > 1 needs subgroups of ≥ TPP)
override PVU: u32 = 8u;          // V rows each p·v lane loads at once (1..8)

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;  // [tokens, HQ, D] (unused with FUSED)
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(4) var<storage, read> qkv: array<f32>;      // projection output [tokens, width]
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;  // [tokens, HQ, D] or SPLIT partials
@group(0) @binding(6) var<storage, read> rope: array<f32>;     // FUSED: [CTX, R] cos then sin (qk_prepare.wgsl)
@group(0) @binding(7) var<storage, read> norms: array<f32>;    // FUSED with QK_NORM: [2, D] q_norm, k_norm

//#if HEAD512
var<workgroup> qs: array<vec4<f32>, 128>;    // HEAD512 (gemma4's full layers, D ≤ 512; WG 256)
//#else
var<workgroup> qs: array<vec4<f32>, 64>;
//#endif
var<workgroup> p: array<f32, WG>;
var<workgroup> accs: array<vec4<f32>, WG>;
//#if HEAD512
var<workgroup> kcur: array<vec4<f32>, 128>;
var<workgroup> vcur: array<vec4<f32>, 128>;
//#else
var<workgroup> kcur: array<vec4<f32>, 64>;   // FUSED: k and v of the token's own position
var<workgroup> vcur: array<vec4<f32>, 64>;
//#endif

//#include activation
//#include attention_shared

//#include attention_gate

//#include qk_rope

//#include kv_page

//#if SUBGROUPS
// TPP > 1: the scores of block positions blk + j (j < WG), TPP threads per position (every TPP-th column, so a
// subgroup's load instruction reads whole K rows instead of one column of 32 rows), summed by shuffles; each
// position's score lands in p[j] (-3e38 past `last`) and the thread gets its own position's. All the rounds'
// loads are issued before the first shuffle.
fn scoreShared(blk: u32, last: u32, slot: u32, g: u32, raw_pos: u32, lid: u32) -> f32 {
  let sub = lid % TPP;
  let lane = lid / TPP;
  // Rounds of WG / TPP positions up to the block's last one (a short range, early in a sequence, takes one).
  let rounds = min(TPP, (min(last + 1u - blk, WG) + WG / TPP - 1u) / (WG / TPP));
  var sds: array<f32, 8>;
  for (var r = 0u; r < rounds; r++) {
    let pp = blk + r * (WG / TPP) + lane;
    var d4 = vec4<f32>(0.0);
    if (pp <= last) {
      if (FUSED && !KV_SHARED && pp == raw_pos) {
        for (var c = sub; c < DV; c += TPP) { d4 += qs[c] * kcur[c]; }
      } else {
        let kr = kvRow(slot, g, pp) * DV;
        for (var c = sub; c < DV; c += TPP) { d4 += qs[c] * kload(kr + c); }
      }
    }
    sds[r] = d4.x + d4.y + d4.z + d4.w;
  }
  for (var r = 0u; r < rounds; r++) {
    var sd = sds[r];
    for (var m = TPP / 2u; m > 0u; m = m / 2u) { sd += subgroupShuffleXor(sd, m); }
    let j = r * (WG / TPP) + lane;
    if (sub == 0u) { p[j] = select(-3.0e38, softcap(sd, SOFTCAP), blk + j <= last); }
  }
  workgroupBarrier();
  return select(-3.0e38, p[lid], blk + lid <= last);
}
//#endif

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let h = wid.x;
  let i = wid.y;
  let b = select(i, 0u, PREFILL);
  let t = select(0u, i, PREFILL);
  let slot = rows[b * 8u];
  let raw_pos = rows[b * 8u + 1u] + t;
  let pos = min(raw_pos, CTX - 1u);
  let g = h / (HQ / HKV);
  let qscale = SCALE * queryScale(raw_pos, Q_BETA, Q_ORIG);  // q · SCALE (ministral3: times its position's factor)
  if (FUSED) {
    let width = qkvWidth();
    let kbase = select(HQ * D, 2u * HQ * D, GATED);
    prepHead(i * width + select(h * D, h * 2u * D, GATED), 0u, raw_pos, lid);
    if (lid < DV) {
      qs[lid] = vec4<f32>(hb[4u * lid], hb[4u * lid + 1u], hb[4u * lid + 2u], hb[4u * lid + 3u]) * qscale;
    }
    workgroupBarrier();
  } else if (lid < DV) {
    qs[lid] = q[(i * HQ + h) * DV + lid] * qscale;
  }
  // KV_SHARED (gemma4): the source layer wrote this position into the cache earlier in the step; read from there.
  if (FUSED && !KV_SHARED) {
    let width = qkvWidth();
    let kbase = select(HQ * D, 2u * HQ * D, GATED);
    prepHead(i * width + kbase + g * D, D, raw_pos, lid);
    var vr = 1.0;
    if (V_NORM) {
      var vs = 0.0;
      if (lid < DV) {
        let vi = i * width + kbase + HKV * D + g * D + 4u * lid;
        let vv = vec4<f32>(qkv[vi], qkv[vi + 1u], qkv[vi + 2u], qkv[vi + 3u]);
        vs = dot(vv, vv);
      }
      vr = inverseSqrt(reduceSum(vs, lid) / f32(D) + EPS);
    }
    if (lid < DV) {
      let kv = vec4<f32>(hb[4u * lid], hb[4u * lid + 1u], hb[4u * lid + 2u], hb[4u * lid + 3u]);
      let vi = i * width + kbase + HKV * D + g * D + 4u * lid;
      let vv = vec4<f32>(qkv[vi], qkv[vi + 1u], qkv[vi + 2u], qkv[vi + 3u]) * vr;
      kcur[lid] = kv;
      vcur[lid] = vv;
      // Inactive rows (no sequence, or finished) must not touch the cache: their slot/pos are stale.
      if (h % (HQ / HKV) == 0u && wid.z == 0u && raw_pos < CTX && rows[b * 8u + 2u] != 0u) {
        let at = kvRow(slot, g, raw_pos) * DV + lid;
        kvstore(at, kv, vv);
      }
    }
  }
  workgroupBarrier();
  var first = 0u;
  if (WINDOW > 0u && pos + 1u > WINDOW) { first = pos + 1u - WINDOW; }
  var last = pos;                 // inclusive; first > last: an empty range
  if (SPLIT > 1u) {
    let chunk = (pos + SPLIT - first) / SPLIT;
    first += wid.z * chunk;
    last = min(pos, first + chunk - 1u);
  }
  let col = lid % DV;
  let lane = lid / DV;
  var m = -3.0e38;
  var l = 0.0;                    // this thread's share of the softmax denominator (scaled to m)
  var acc = vec4<f32>(0.0);       // column `col`, positions ≡ lane (mod PL) of every block
  for (var blk = first; blk <= last; blk += WG) {
    let pp = blk + lid;
    var s = -3.0e38;
    // A block of more than one round's positions takes TPP threads per position; a short one (early in a sequence,
    // or a short range of a wide split) keeps a thread per position, which loads its few rows at once.
    var lanes = false;
//#if SUBGROUPS
    if (TPP > 1u && last + 1u - blk > WG / TPP) {
      s = scoreShared(blk, last, slot, g, raw_pos, lid);
      lanes = true;
    }
//#endif
    if (!lanes && pp <= last) {
      let kr = kvRow(slot, g, pp) * DV;
      var d4 = vec4<f32>(0.0);
      if (FUSED && !KV_SHARED && pp == raw_pos) {
        for (var j = 0u; j < DV; j++) { d4 += qs[j] * kcur[j]; }
      } else {
        for (var j = 0u; j < DV; j++) { d4 += qs[j] * kload(kr + j); }
      }
      s = softcap(d4.x + d4.y + d4.z + d4.w, SOFTCAP);
    }
    let mn = max(m, reduceMax(s, lid));
    let corr = exp(m - mn);
    let e = select(0.0, exp(s - mn), pp <= last);
    p[lid] = e;
    l = l * corr + e;
    m = mn;
    acc *= corr;
    workgroupBarrier();
    let cnt = min(WG, last + 1u - blk);
    // The token's own position (FUSED) can only be the block's last: its v is vcur, not the cache row another
    // workgroup may be writing. The others are read PVU rows at a time, every load issued before the first
    // multiply-add (one load per multiply-add waits a memory latency per row; H200, Qwen3-0.6B after 4000
    // positions: 15.0 -> 12.9 µs per layer, docs/kernels.md).
    var cc = cnt;
    if (FUSED && !KV_SHARED && blk + cnt - 1u == raw_pos) { cc = cnt - 1u; }
    var j = lane;
    for (; j + (PVU - 1u) * PL < cc; j += PVU * PL) {
      var vv: array<vec4<f32>, 8>;
      for (var u = 0u; u < PVU; u++) { vv[u] = vload(kvRow(slot, g, blk + j + u * PL) * DV + col); }
      for (var u = 0u; u < PVU; u++) { acc += p[j + u * PL] * vv[u]; }
    }
    for (; j < cc; j += PL) { acc += p[j] * vload(kvRow(slot, g, blk + j) * DV + col); }
    if (cc < cnt && lane == cc % PL) { acc += p[cc] * vcur[col]; }
    workgroupBarrier();
  }
  let total = reduceSum(l, lid);
  accs[lid] = acc;
  workgroupBarrier();
  if (lid < DV) {
    var o = vec4<f32>(0.0);
    for (var j = 0u; j < PL; j++) { o += accs[j * DV + lid]; }
    if (SPLIT > 1u) {
      let pb = ((i * HQ + h) * SPLIT + wid.z) * (DV + 1u);
      out[pb + lid] = o;
      if (lid == 0u) { out[pb + DV] = vec4<f32>(m, total, 0.0, 0.0); }
      return;
    }
    o /= total;
    if (GATED) { o = applyGate(o, i, h, lid); }
    out[(i * HQ + h) * DV + lid] = o;
  }
}
