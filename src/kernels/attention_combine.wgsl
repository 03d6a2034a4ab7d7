// Merges the partial results of attention.wgsl (SPLIT > 1) for each (query head, token): with the ranges
// running maxima m_s, denominators l_s and unnormalised sums o_s, M = max m_s, out = Σ e^(m_s - M) o_s /
// Σ e^(m_s - M) l_s, times sigmoid(gate) with GATED (Qwen3.5). Grid (HQ, tokens).
// 256 threads: thread t takes the vec4 column t % DV of the ranges t / DV, t / DV + LN, ... (LN = 256 / DV lanes),
// loads all of them at once (at most RMAX per thread), and the lanes meet in workgroup memory twice (the max, then
// the sums). One round of loads and two barriers, where a thread per column walking all SPLIT ranges held 2·SPLIT
// vec4 loads (64 at SPLIT 32) and its chain grew with SPLIT: H100, after 4000 positions, 4.1 -> 2.9 µs per layer
// (Llama-3.2-1B, 16 ranges), 4.8 -> 3.0 (Qwen3-0.6B, 32), docs/measurements/h100-run33.
override D: u32 = 64u;
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override SPLIT: u32 = 2u;
override GATED: bool = false;
override DV: u32 = D / 4u;
override LN: u32 = 256u / DV;     // lanes over the ranges (D ≤ 1024)
override RPL: u32 = (SPLIT + LN - 1u) / LN;  // ranges per lane, ≤ RMAX
const RMAX: u32 = 16u;            // SPLIT ≤ 16 · LN: 64 at D = 256 (the host's widest split)

@group(0) @binding(0) var<storage, read> part: array<vec4<f32>>;  // [tokens, HQ, SPLIT, DV + 1]
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // projection output (gate rows), GATED only
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;  // [tokens, HQ, D]

var<workgroup> lmax: array<f32, 256>;
var<workgroup> lsum: array<f32, 256>;
var<workgroup> lacc: array<vec4<f32>, 256>;

//#include attention_gate

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let h = wid.x;
  let i = wid.y;
  let c = lid % DV;
  let lane = lid / DV;
  let live = lane < LN;           // DV not dividing 256 leaves a partial lane idle
  let pb = (i * HQ + h) * SPLIT * (DV + 1u);
  var st: array<vec2<f32>, RMAX>;
  var pv: array<vec4<f32>, RMAX>;
  var m = -3.0e38;
  for (var r = 0u; r < RPL; r++) {
    let s = lane + r * LN;
    if (live && s < SPLIT) {
      let at = pb + s * (DV + 1u);
      st[r] = part[at + DV].xy;
      pv[r] = part[at + c];
      m = max(m, st[r].x);
    }
  }
  lmax[lid] = m;
  workgroupBarrier();
  var mx = -3.0e38;
  for (var j = 0u; j < LN; j++) { mx = max(mx, lmax[j * DV]); }
  var l = 0.0;
  var o = vec4<f32>(0.0);
  for (var r = 0u; r < RPL; r++) {
    let s = lane + r * LN;
    if (live && s < SPLIT) {
      let w = exp(st[r].x - mx);
      l += st[r].y * w;
      o += pv[r] * w;
    }
  }
  lsum[lid] = l;
  lacc[lid] = o;
  workgroupBarrier();
  if (lane == 0u) {
    var tl = 0.0;
    var to = vec4<f32>(0.0);
    for (var j = 0u; j < LN; j++) {
      tl += lsum[j * DV];
      to += lacc[j * DV + c];
    }
    to /= tl;
    if (GATED) { to = applyGate(to, i, h, c); }
    out[(i * HQ + h) * DV + c] = to;
  }
}
