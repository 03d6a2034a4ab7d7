// Gated DeltaNet recurrence, token by token (qwen3_5-architecture.md §6.5-6.7), followed by the gated RMSNorm.
// Per value head j with key head kh = j*NK/NV (GVA) and per token:
//   S <- exp(g) S;  m = S^T k;  delta = beta (v - m);  S <- S + k delta^T;  o = S^T q  (updated state)
//   y = (norm_w ⊙ o * rsqrt(mean(o^2) + EPS)) * silu(z_j)
// The state is f32 [slots, NV, KD, VD] (row = key dim, column = value dim). One workgroup owns a whole value head:
// WG = VD * KSPLIT invocations; invocation (part, n) owns column n and key rows [part*KD/KSPLIT, (part+1)*KD/KSPLIT),
// held in registers for the whole dispatch (loaded once, stored once).
// Modes:
//   decode  (PREFILL=false): grid (NV, B); row b's token is prep/proj/out row b; slot and active from rows[b*8 + 0/2].
//                            Inactive rows leave the state untouched (their outputs are garbage).
//   prefill (PREFILL=true):  grid (NV, 1); meta = [T, slot]; the T tokens of one sequence in order (the simplest
//                            exact prefill: a sequential reference for gdn_chunked).
override NK: u32 = 2u;
override NV: u32 = 4u;
override KD: u32 = 16u;
override VD: u32 = 16u;
override KSPLIT: u32 = 1u;     // KD % KSPLIT == 0, KD / KSPLIT <= MAXR, VD * KSPLIT <= the workgroup size limit
override WG: u32 = 16u;        // = VD * KSPLIT
override EPS: f32 = 1e-6;      // rms_norm_eps
override PREFILL: bool = false;
override ROWS: u32 = KD / KSPLIT;  // state rows per invocation

const MAXR: u32 = 64u;

@group(0) @binding(0) var<storage, read> prep: array<f32>;         // [rows, C + 2*NV]: q | k | v | beta | g
@group(0) @binding(1) var<storage, read> proj: array<f32>;         // [rows, C + NV*VD + 2*NV]; z at C + j*VD
@group(0) @binding(2) var<storage, read> norm_w: array<f32>;       // [VD] (used as w, not 1 + w)
@group(0) @binding(3) var<storage, read> info: array<u32>;         // decode: rows [B, 8]; prefill: meta [T, slot]
@group(0) @binding(4) var<storage, read_write> state: array<f32>;  // [slots, NV, KD, VD]
@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // [rows, NV*VD]

var<workgroup> qs: array<f32, KD>;
var<workgroup> ks: array<f32, KD>;
var<workgroup> red: array<f32, WG>;
var<workgroup> wg_u32: u32;

//#include gdn_layout

//#include gdn_reduce

// Sum over the KSPLIT parts of column n of a per-invocation value (every invocation gets its column's total).
fn sumParts(x: f32, lid: u32, n: u32) -> f32 {
  if (KSPLIT == 1u) { return x; }
  workgroupBarrier();
  red[lid] = x;
  workgroupBarrier();
  var total = 0.0;
  for (var p = 0u; p < KSPLIT; p++) { total += red[p * VD + n]; }
  workgroupBarrier();
  return total;
}

// One token: row t of prep/proj/out against this invocation's state rows held in `sv` (updated in place).
fn tokenStep(t: u32, j: u32, sv: ptr<function, array<f32, MAXR>>, lid: u32) {
  let kh = j * NK / NV;
  let pb = t * prepWidth();
  for (var i = lid; i < KD; i += WG) {
    qs[i] = prep[pb + kh * KD + i];
    ks[i] = prep[pb + NK * KD + kh * KD + i];
  }
  workgroupBarrier();
  let n = lid % VD;
  let part = lid / VD;
  let i0 = part * ROWS;
  let alpha = exp(prep[pb + channels() + NV + j]);
  let beta = prep[pb + channels() + j];
  let v = prep[pb + 2u * NK * KD + j * VD + n];
  var m = 0.0;
  for (var r = 0u; r < ROWS; r++) { m += (*sv)[r] * ks[i0 + r]; }
  let delta = beta * (v - alpha * sumParts(m, lid, n));
  var o = 0.0;
  for (var r = 0u; r < ROWS; r++) {
    let s = alpha * (*sv)[r] + ks[i0 + r] * delta;
    (*sv)[r] = s;
    o += s * qs[i0 + r];
  }
  o = sumParts(o, lid, n);
  red[lid] = select(0.0, o * o, part == 0u);
  let r = inverseSqrt(reduceSum(lid) / f32(VD) + EPS);
  if (part == 0u) {
    let z = proj[t * projWidth() + channels() + j * VD + n];
    out[t * NV * VD + j * VD + n] = norm_w[n] * (o * r) * (z / (1.0 + exp(-z)));
  }
  // reduceSum ended with a barrier: qs/ks may be overwritten by the next step.
}

// The invocation's state rows: all loads issued before any store (a loop that loads and stores the same
// read_write buffer row by row is serialised by the store-to-load ordering: ~45 µs a step on the H200).
fn loadState(base: u32, sv: ptr<function, array<f32, MAXR>>) {
  for (var r = 0u; r < ROWS; r++) { (*sv)[r] = state[base + r * VD]; }
}

fn storeState(base: u32, sv: ptr<function, array<f32, MAXR>>) {
  for (var r = 0u; r < ROWS; r++) { state[base + r * VD] = (*sv)[r]; }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let lid = lid3.x;
  let j = wid.x;
  let n = lid % VD;
  let part = lid / VD;
  var sv: array<f32, MAXR>;
  if (PREFILL) {
    if (lid == 0u) { wg_u32 = info[0]; }
    let T = workgroupUniformLoad(&wg_u32);
    let base = (info[1] * NV + j) * KD * VD + part * ROWS * VD + n;
    loadState(base, &sv);
    for (var t = 0u; t < T; t++) { tokenStep(t, j, &sv, lid); }
    storeState(base, &sv);
  } else {
    let b = wid.y;
    let base = (info[b * 8u] * NV + j) * KD * VD + part * ROWS * VD + n;
    loadState(base, &sv);
    tokenStep(b, j, &sv, lid);
    if (info[b * 8u + 2u] != 0u) { storeState(base, &sv); }
  }
}
