// Causal grouped-query attention over the KV cache, one workgroup per (query head, token), online softmax in
// blocks of WG positions. Token i is (row b, offset t) as in qk_prepare; it attends to positions
// [max(0, pos - WINDOW + 1), pos] of its slot (WINDOW 0 = no sliding window). Query head h reads KV head
// h / (HQ / HKV). Output [tokens, HQ * D]; with GATED (Qwen3.5) multiplied by sigmoid(gate) taken from the
// interleaved q rows of the projection output.
override D: u32 = 64u;
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override CTX: u32 = 1u;
override WINDOW: u32 = 0u;
override GATED: bool = false;
override PREFILL: bool = false;
override SCALE: f32 = 0.125;    // 1 / sqrt(D)

const WG: u32 = 128u;
const DPT: u32 = 2u;             // output dims per thread: D ≤ WG * DPT = 256

@group(0) @binding(0) var<storage, read> q: array<f32>;      // [tokens, HQ, D]
@group(0) @binding(1) var<storage, read> rows: array<u32>;
@group(0) @binding(2) var<storage, read> kc: array<f32>;     // [slots, HKV, CTX, D]
@group(0) @binding(3) var<storage, read> vc: array<f32>;
@group(0) @binding(4) var<storage, read> qkv: array<f32>;    // projection output (gate rows), GATED only
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> qs: array<f32, 256>;
var<workgroup> p: array<f32, WG>;
var<workgroup> red: array<f32, WG>;

fn reduceMax(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { red[lid] = max(red[lid], red[lid + st]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn reduceSum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { red[lid] += red[lid + st]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let h = wid.x;
  let i = wid.y;
  let b = select(i, 0u, PREFILL);
  let t = select(0u, i, PREFILL);
  let slot = rows[b * 8u];
  let pos = min(rows[b * 8u + 1u] + t, CTX - 1u);
  let g = h / (HQ / HKV);
  let base = (slot * HKV + g) * CTX;
  for (var d = lid; d < D; d += WG) { qs[d] = q[(i * HQ + h) * D + d]; }
  workgroupBarrier();
  var first = 0u;
  if (WINDOW > 0u && pos + 1u > WINDOW) { first = pos + 1u - WINDOW; }
  var m = -3.0e38;
  var l = 0.0;
  var acc: array<f32, DPT>;
  for (var j = 0u; j < DPT; j++) { acc[j] = 0.0; }
  for (var blk = first; blk <= pos; blk += WG) {
    let pp = blk + lid;
    var sc = -3.0e38;
    if (pp <= pos) {
      var dotv = 0.0;
      let kr = (base + pp) * D;
      for (var d = 0u; d < D; d += 4u) {
        dotv += dot(vec4<f32>(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]),
                    vec4<f32>(kc[kr + d], kc[kr + d + 1u], kc[kr + d + 2u], kc[kr + d + 3u]));
      }
      sc = dotv * SCALE;
    }
    let bm = reduceMax(sc, lid);
    let mn = max(m, bm);
    let e = select(0.0, exp(sc - mn), pp <= pos);
    p[lid] = e;
    let corr = exp(m - mn);
    l = l * corr + reduceSum(e, lid);
    m = mn;
    let cnt = min(WG, pos + 1u - blk);
    for (var j = 0u; j < DPT; j++) {
      let d = lid + j * WG;
      if (d < D) {
        var a = acc[j] * corr;
        for (var q2 = 0u; q2 < cnt; q2++) { a += p[q2] * vc[(base + blk + q2) * D + d]; }
        acc[j] = a;
      }
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < DPT; j++) {
    let d = lid + j * WG;
    if (d < D) {
      var o = acc[j] / l;
      if (GATED) {
        let width = 2u * HQ * D + 2u * HKV * D;
        let gt = qkv[i * width + h * 2u * D + D + d];
        o = o / (1.0 + exp(-gt));
      }
      out[(i * HQ + h) * D + d] = o;
    }
  }
}
