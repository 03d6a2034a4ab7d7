// Decode attention shared by a KV group (issue 12): attention.wgsl's fused decode (FUSED, optional SPLIT, PAGED,
// KV16, GATED, QK_NORM, WINDOW) with one workgroup per (KV head, row, position range) for all G = HQ / HKV query
// heads that read that KV head, instead of one per query head: each K and V row is loaded once per workgroup and
// applied to the G heads, and the KV store has a single writer per (KV head, row). The outputs are attention.wgsl's
// (per query head, or the SPLIT partials attention_combine.wgsl merges), so the host swaps one for the other.
// Per block of WG positions: every thread scores one position for the G heads (one pass over its K row), G
// workgroup maxima, then D/4 columns × WG/(D/4) lanes accumulate p·v for the G heads from one V load.
override D: u32 = 64u;          // head dim, multiple of 4, ≤ 256
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override CTX: u32 = 1u;
override WINDOW: u32 = 0u;
override GATED: bool = false;
override SCALE: f32 = 0.125;
override SPLIT: u32 = 1u;
override QK_NORM: bool = false;
override R: u32 = 64u;
override EPS: f32 = 1e-6;
override WG: u32 = 256u;
override RS: u32 = 16u;          // RS * RS == WG
override DV: u32 = D / 4u;
override PL: u32 = WG / DV;
override G: u32 = 1u;            // query heads per KV head, ≤ 8
override QN: u32 = 64u;          // G * DV
override PN: u32 = 256u;         // G * WG

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;  // unused (bound as in attention.wgsl)
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(4) var<storage, read> qkv: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> rope: array<f32>;
@group(0) @binding(7) var<storage, read> norms: array<f32>;

var<workgroup> qs: array<vec4<f32>, QN>;     // [G, DV], scaled
var<workgroup> p: array<f32, PN>;            // [G, WG]
var<workgroup> accs: array<vec4<f32>, WG>;
var<workgroup> kcur: array<vec4<f32>, 64>;
var<workgroup> vcur: array<vec4<f32>, 64>;

//#include attention_shared

//#include attention_gate

//#include qk_rope

//#include kv_page

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let g = wid.x;
  let i = wid.y;
  let slot = rows[i * 8u];
  let raw_pos = rows[i * 8u + 1u];
  let pos = min(raw_pos, CTX - 1u);
  let width = qkvWidth();
  let kbase = select(HQ * D, 2u * HQ * D, GATED);
  for (var j = 0u; j < G; j++) {
    let h = g * G + j;
    prepHead(i * width + select(h * D, h * 2u * D, GATED), 0u, raw_pos, lid);
    if (lid < DV) {
      qs[j * DV + lid] = vec4<f32>(hb[4u * lid], hb[4u * lid + 1u], hb[4u * lid + 2u], hb[4u * lid + 3u]) * SCALE;
    }
    workgroupBarrier();
  }
  prepHead(i * width + kbase + g * D, D, raw_pos, lid);
  if (lid < DV) {
    let kv = vec4<f32>(hb[4u * lid], hb[4u * lid + 1u], hb[4u * lid + 2u], hb[4u * lid + 3u]);
    let vi = i * width + kbase + HKV * D + g * D + 4u * lid;
    let vv = vec4<f32>(qkv[vi], qkv[vi + 1u], qkv[vi + 2u], qkv[vi + 3u]);
    kcur[lid] = kv;
    vcur[lid] = vv;
    if (wid.z == 0u && raw_pos < CTX && rows[i * 8u + 2u] != 0u) { kvstore(kvRow(slot, g, raw_pos) * DV + lid, kv, vv); }
  }
  workgroupBarrier();
  var first = 0u;
  if (WINDOW > 0u && pos + 1u > WINDOW) { first = pos + 1u - WINDOW; }
  var last = pos;
  if (SPLIT > 1u) {
    let chunk = (pos + SPLIT - first) / SPLIT;
    first += wid.z * chunk;
    last = min(pos, first + chunk - 1u);
  }
  let col = lid % DV;
  let lane = lid / DV;
  var m: array<f32, 8>;
  var l: array<f32, 8>;
  var acc: array<vec4<f32>, 8>;
  for (var j = 0u; j < G; j++) { m[j] = -3.0e38; l[j] = 0.0; acc[j] = vec4<f32>(0.0); }
  for (var blk = first; blk <= last; blk += WG) {
    let pp = blk + lid;
    var s: array<f32, 8>;
    for (var j = 0u; j < G; j++) { s[j] = -3.0e38; }
    if (pp <= last) {
      let kr = kvRow(slot, g, pp) * DV;
      var d4: array<vec4<f32>, 8>;
      for (var j = 0u; j < G; j++) { d4[j] = vec4<f32>(0.0); }
      for (var c = 0u; c < DV; c++) {
        var kk: vec4<f32>;
        if (pp == raw_pos) { kk = kcur[c]; } else { kk = kload(kr + c); }
        for (var j = 0u; j < G; j++) { d4[j] += qs[j * DV + c] * kk; }
      }
      for (var j = 0u; j < G; j++) { s[j] = d4[j].x + d4[j].y + d4[j].z + d4[j].w; }
    }
    for (var j = 0u; j < G; j++) {
      let mn = max(m[j], reduceMax(s[j], lid));
      let corr = exp(m[j] - mn);
      let e = select(0.0, exp(s[j] - mn), pp <= last);
      p[j * WG + lid] = e;
      l[j] = l[j] * corr + e;
      m[j] = mn;
      acc[j] *= corr;
    }
    workgroupBarrier();
    let cnt = min(WG, last + 1u - blk);
    for (var t = lane; t < cnt; t += PL) {
      var vv: vec4<f32>;
      if (blk + t == raw_pos) { vv = vcur[col]; } else { vv = vload(kvRow(slot, g, blk + t) * DV + col); }
      for (var j = 0u; j < G; j++) { acc[j] += p[j * WG + t] * vv; }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < G; j++) {
    let h = g * G + j;
    let total = reduceSum(l[j], lid);
    accs[lid] = acc[j];
    workgroupBarrier();
    if (lid < DV) {
      var o = vec4<f32>(0.0);
      for (var t = 0u; t < PL; t++) { o += accs[t * DV + lid]; }
      if (SPLIT > 1u) {
        let pb = ((i * HQ + h) * SPLIT + wid.z) * (DV + 1u);
        out[pb + lid] = o;
        if (lid == 0u) { out[pb + DV] = vec4<f32>(m[j], total, 0.0, 0.0); }
      } else {
        o /= total;
        if (GATED) { o = applyGate(o, i, h, lid); }
        out[(i * HQ + h) * DV + lid] = o;
      }
    }
    workgroupBarrier();
  }
}
