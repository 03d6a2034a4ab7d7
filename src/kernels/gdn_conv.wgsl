// Gated DeltaNet front end (qwen3_5-architecture.md §6.2-6.4): causal depthwise conv over [conv state ‖ new raw
// u vectors] + SiLU, split into q (NK heads), k (NK heads), v (NV heads), L2 norm of q and k per head (q also
// scaled by 1/sqrt(KD)), beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias). Writes one "prepared" row
// per token: [q (NK*KD) | k (NK*KD) | v (NV*VD) | beta (NV) | g (NV)].
//
// Dimensions: C = 2*NK*KD + NV*VD conv channels; a projection row is [qkv (C) | z (NV*VD) | b (NV) | a (NV)].
// Modes (override constants):
//   decode  (PREFILL=false): workgroup (segment, row b); row b's token is proj row b; slot/active from rows[b*8 + 0/2].
//                            The conv state of an active row's slot is shifted by one column in the same dispatch.
//   prefill (PREFILL=true):  workgroup (segment, token t) for one sequence, meta = [T, slot]; the conv reads the
//                            existing state (chunked prefill continues), which this dispatch leaves untouched.
//   state   (STATE_PASS=true): after a prefill dispatch, one thread per channel replaces the slot's conv state with
//                            the last KS-1 raw inputs of [state ‖ u_0..u_{T-1}]. Grid: ceil(C / WG).
// Segments: 0..NK-1 q heads, NK..2NK-1 k heads, 2NK..2NK+NV-1 v heads, 2NK+NV = the gates. Grid x = 2*NK+NV+1.
override NK: u32 = 2u;
override NV: u32 = 4u;
override KD: u32 = 16u;
override VD: u32 = 16u;
override KS: u32 = 4u;  // conv kernel width
override WG: u32 = 128u;
override PREFILL: bool = false;
override STATE_PASS: bool = false;

const L2_EPS: f32 = 1e-6;

@group(0) @binding(0) var<storage, read> proj: array<f32>;             // [rows or T, C + NV*VD + 2*NV]
@group(0) @binding(1) var<storage, read> conv_w: array<f32>;           // [C, KS]; w[c, KS-1] multiplies the current token
@group(0) @binding(2) var<storage, read> a_log: array<f32>;            // [NV]
@group(0) @binding(3) var<storage, read> dt_bias: array<f32>;          // [NV]
@group(0) @binding(4) var<storage, read> info: array<u32>;             // decode: rows [B, 8]; prefill: meta [T, slot]
@group(0) @binding(5) var<storage, read_write> conv_state: array<f32>; // [slots, C, KS-1], oldest first
@group(0) @binding(6) var<storage, read_write> prep: array<f32>;       // [rows or T, C + 2*NV]

var<workgroup> red: array<f32, WG>;

//#include gdn_layout

//#include gdn_reduce

fn softplus(x: f32) -> f32 {
  if (x > 20.0) { return x; }
  let e = exp(x);
  if (e < 1e-4) { return e - 0.5 * e * e; }  // log(1 + e) without the cancellation
  return log(1.0 + e);
}

// Raw input of channel c at sequence time tau (relative to the first new token): proj row (row0 + tau) for
// tau >= 0, else the slot's state column KS-1+tau.
fn rawInput(c: u32, tau: i32, row0: u32, slot: u32) -> f32 {
  if (tau >= 0) { return proj[(row0 + u32(tau)) * projWidth() + c]; }
  return conv_state[(slot * channels() + c) * (KS - 1u) + u32(i32(KS) - 1 + tau)];
}

fn statePass(gid: u32) {
  let c = gid;
  if (c >= channels()) { return; }
  let T = info[0];
  let slot = info[1];
  let base = (slot * channels() + c) * (KS - 1u);
  // In place, ascending: entry i reads entry T+i (> i) of the old state or a proj row, never an updated entry.
  for (var i = 0u; i < KS - 1u; i++) {
    conv_state[base + i] = rawInput(c, i32(T) - i32(KS - 1u) + i32(i), 0u, slot);
  }
}

fn writeGates(row: u32, lid: u32) {
  let zb = channels() + NV * VD;
  for (var h = lid; h < NV; h += WG) {
    let b = proj[row * projWidth() + zb + h];
    let a = proj[row * projWidth() + zb + NV + h];
    prep[row * prepWidth() + channels() + h] = 1.0 / (1.0 + exp(-b));
    prep[row * prepWidth() + channels() + NV + h] = -exp(a_log[h]) * softplus(a + dt_bias[h]);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(global_invocation_id) gid: vec3<u32>) {
  if (STATE_PASS) {
    statePass(gid.x);
    return;
  }
  let lid = lid3.x;
  let seg = wid.x;
  let row = wid.y;  // proj/prep row
  var slot: u32;
  var tau0: i32;      // sequence time of this token relative to the first new token
  var row0: u32;      // proj row of sequence time 0
  var valid: bool;    // writes allowed (prefill: t < T)
  var update: bool;   // decode: shift this slot's conv state
  if (PREFILL) {
    slot = info[1];
    tau0 = i32(row);
    row0 = 0u;
    valid = row < info[0];
    update = false;
  } else {
    slot = info[row * 8u];
    tau0 = 0;
    row0 = row;
    valid = true;
    update = info[row * 8u + 2u] != 0u;
  }
  if (seg == 2u * NK + NV) {
    if (valid) { writeGates(row, lid); }
    return;
  }
  var base: u32;
  var len: u32;
  var scale = 1.0;
  let norm = seg < 2u * NK;
  if (norm) {
    base = seg * KD;
    len = KD;
    if (seg < NK) { scale = inverseSqrt(f32(KD)); }
  } else {
    base = 2u * NK * KD + (seg - 2u * NK) * VD;
    len = VD;
  }
  var ss = 0.0;
  for (var i = lid; i < len; i += WG) {
    let c = base + i;
    var acc = 0.0;
    for (var j = 0u; j < KS; j++) {
      acc += conv_w[c * KS + j] * rawInput(c, tau0 + i32(j) - i32(KS - 1u), row0, slot);
    }
    let y = acc / (1.0 + exp(-acc));  // SiLU
    ss += y * y;
    if (valid) { prep[row * prepWidth() + c] = y; }
    if (update) {
      let sb = (slot * channels() + c) * (KS - 1u);
      for (var j = 0u; j + 1u < KS - 1u; j++) { conv_state[sb + j] = conv_state[sb + j + 1u]; }
      conv_state[sb + KS - 2u] = proj[row * projWidth() + c];
    }
  }
  if (norm) {  // uniform: depends on the workgroup id only
    red[lid] = ss;
    let f = scale * inverseSqrt(reduceSum(lid) + L2_EPS);
    if (valid) {
      for (var i = lid; i < len; i += WG) { prep[row * prepWidth() + base + i] *= f; }
    }
  }
}
