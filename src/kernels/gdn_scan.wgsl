// Gated DeltaNet prefill as the recurrence, token by token, with the value columns spread over workgroups
// (qwen3_5-architecture.md §6.5-6.7; the same sums as gdn_recurrent.wgsl's PREFILL mode). Column n of a head's
// state only ever meets column n of v and of the output:
//   m_n = S[:,n]·k;  delta_n = beta (v_n - exp(g) m_n);  S[:,n] <- exp(g) S[:,n] + k delta_n;  o_n = S[:,n]·q
// so CW columns per workgroup need no workgroup barrier per token: the KSPLIT lanes of a column are neighbours in
// one subgroup and add their parts by shuffles. Only the gated RMSNorm couples the columns; the NORM pass does it
// afterwards over each (token, head) row of `out`, in place.
// Modes (one pipeline each):
//   scan (NORM=false): grid (NV, ceil(VD / CW)), WG = CW * KSPLIT; meta = [T, slot]; writes raw o to out.
//   norm (NORM=true):  grid (NV, T), WG = VD; out <- (norm_w ⊙ o * rsqrt(mean(o^2) + EPS)) * silu(z).
// Needs subgroups of at least KSPLIT invocations (the host checks).
//#enable subgroups
override NK: u32 = 2u;
override NV: u32 = 4u;
override KD: u32 = 16u;
override VD: u32 = 16u;
override KSPLIT: u32 = 4u;     // lanes per column (a power of two, ≤ the subgroup size); KD % KSPLIT == 0
override CW: u32 = 16u;        // columns per workgroup
override WG: u32 = 64u;        // scan: CW * KSPLIT; norm: VD
override EPS: f32 = 1e-6;
override NORM: bool = false;
override ROWS: u32 = KD / KSPLIT;  // state rows per lane (≤ MAXR)

const MAXR: u32 = 64u;

@group(0) @binding(0) var<storage, read> prep: array<f32>;         // [T, C + 2*NV]: q | k | v | beta | g
@group(0) @binding(1) var<storage, read> proj: array<f32>;         // [T, C + NV*VD + 2*NV]; z at C + j*VD
@group(0) @binding(2) var<storage, read> norm_w: array<f32>;       // [VD]
@group(0) @binding(3) var<storage, read> info: array<u32>;         // meta [T, slot]
@group(0) @binding(4) var<storage, read_write> state: array<f32>;  // [slots, NV, KD, VD]
@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // [T, NV*VD]

var<workgroup> red: array<f32, WG>;

//#include gdn_layout

//#include gdn_reduce

//#if SUBGROUPS
// The sum over the KSPLIT neighbouring lanes of a column (every lane gets it).
fn sumLanes(x: f32) -> f32 {
  var s = x;
  for (var m = KSPLIT / 2u; m > 0u; m = m / 2u) { s += subgroupShuffleXor(s, m); }
  return s;
}

// Token t's inputs for this lane: its state rows' k and q entries, g, beta and v of its column.
fn loadToken(t: u32, j: u32, kh: u32, part: u32, nc: u32, k: ptr<function, array<f32, MAXR>>,
             q: ptr<function, array<f32, MAXR>>, g: ptr<function, f32>, b: ptr<function, f32>, v: ptr<function, f32>) {
  let pb = t * prepWidth();
  for (var r = 0u; r < ROWS; r++) {
    (*k)[r] = prep[pb + NK * KD + kh * KD + part + r * KSPLIT];
    (*q)[r] = prep[pb + kh * KD + part + r * KSPLIT];
  }
  *g = prep[pb + channels() + NV + j];
  *b = prep[pb + channels() + j];
  *v = prep[pb + 2u * NK * KD + j * VD + nc];
}

fn scan(j: u32, lid: u32, col0: u32) {
  let part = lid % KSPLIT;
  let n = col0 + lid / KSPLIT;
  let live = n < VD;
  let nc = min(n, VD - 1u);  // a lane past the last column computes on a copy of it and stores nothing
  let kh = j * NK / NV;
  let T = info[0];
  // Lane `part` holds state rows part + r*KSPLIT: the lanes of a column read neighbouring k and q entries.
  let base = (info[1] * NV + j) * KD * VD + part * VD + nc;
  var sv: array<f32, MAXR>;
  for (var r = 0u; r < ROWS; r++) { sv[r] = state[base + r * KSPLIT * VD]; }
  // Token t + 1's inputs are loaded while token t is computed (nothing else hides their latency: a workgroup per
  // SM, and the state chain makes every token wait for the one before).
  var kv: array<f32, MAXR>;
  var qv: array<f32, MAXR>;
  var kn: array<f32, MAXR>;
  var qn: array<f32, MAXR>;
  var gn = 0.0;
  var bn = 0.0;
  var vn = 0.0;
  if (T > 0u) { loadToken(0u, j, kh, part, nc, &kn, &qn, &gn, &bn, &vn); }
  for (var t = 0u; t < T; t++) {
    for (var r = 0u; r < ROWS; r++) {
      kv[r] = kn[r];
      qv[r] = qn[r];
    }
    let alpha = exp(gn);
    let beta = bn;
    let v = vn;
    if (t + 1u < T) { loadToken(t + 1u, j, kh, part, nc, &kn, &qn, &gn, &bn, &vn); }
    var m = 0.0;
    for (var r = 0u; r < ROWS; r++) { m += sv[r] * kv[r]; }
    let delta = beta * (v - alpha * sumLanes(m));
    var o = 0.0;
    for (var r = 0u; r < ROWS; r++) {
      let s = alpha * sv[r] + kv[r] * delta;
      sv[r] = s;
      o += s * qv[r];
    }
    o = sumLanes(o);
    if (live && part == 0u) { out[t * NV * VD + j * VD + n] = o; }
  }
  if (live) {
    for (var r = 0u; r < ROWS; r++) { state[base + r * KSPLIT * VD] = sv[r]; }
  }
}
//#endif

// Row (t, j) of out: the gated RMSNorm of the raw o the scan wrote.
fn norm(j: u32, t: u32, n: u32) {
  let i = t * NV * VD + j * VD + n;
  let o = out[i];
  red[n] = o * o;
  let r = inverseSqrt(reduceSum(n) / f32(VD) + EPS);
  let z = proj[t * projWidth() + channels() + j * VD + n];
  out[i] = norm_w[n] * (o * r) * (z / (1.0 + exp(-z)));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  if (NORM) {
    norm(wid.x, wid.y, lid3.x);
    return;
  }
//#if SUBGROUPS
  scan(wid.x, lid3.x, wid.y * CW);
//#endif
}
