// Gated DeltaNet prefill of T tokens of one sequence in chunks of CH = 64 tokens (the chunked/WY form of
// qwen3_5-architecture.md §6.8; exact, f32, the last chunk partial), starting from the slot's state and leaving the
// final state there, followed by the gated RMSNorm. Three dispatches share one bind group layout (MODE):
//   MODE 0 "solve"  grid (nchunks, NV), WG0 invocations: per chunk c and value head j, with Γ = cumsum(g),
//           A[r,s] = β_r exp(Γ_r - Γ_s) (k_r·k_s) for s < r, solves (I + A) X = RHS by forward substitution for
//           RHS rows [β_r e^{Γ_r} k_r | β_r v_r] → X = [Wk | U'] ([CH, KD + VD]) into scratch (one column each).
//   MODE 1 "state"  grid (NV, ceil(VD / NB)), NB*8 invocations: sequential over chunks; state column n is owned by
//           8 invocations (8 chunk rows each for U/O, KD/8 key rows each for S):
//           U = U' - Wk S0 (into scratch over U'), O_inter = diag(e^Γ) Q S0 (into out),
//           S = e^{Γ_last} S0 + (diag(e^{Γ_last - Γ}) K)^T U.
//   MODE 2 "output" grid (nchunks, NV), WG = VD invocations: O = O_inter + ((Q K^T) ⊙ M) U with
//           M[r,s] = exp(Γ_r - Γ_s) for s <= r, then y = norm_w ⊙ O * rsqrt(mean(O²) + EPS) * silu(z) into out.
// info = meta [T, slot]. Rows past T in the last chunk behave as q = k = v = 0, β = 0, g = 0.
override NK: u32 = 2u;
override NV: u32 = 4u;
override KD: u32 = 16u;
override VD: u32 = 16u;
override EPS: f32 = 1e-6;
override MODE: u32 = 0u;
override WG: u32 = 64u;  // MODE 0: any (256); MODE 1: NB * G; MODE 2: must equal VD
override NB: u32 = 32u;  // MODE 1: state columns per workgroup (<= 32)

const CH: u32 = 64u;  // chunk length
const G: u32 = 8u;          // MODE 1: row groups per workgroup
const RPG: u32 = CH / G;    // MODE 1: chunk rows per group

@group(0) @binding(0) var<storage, read> prep: array<f32>;           // [T, C + 2*NV]: q | k | v | beta | g
@group(0) @binding(1) var<storage, read> proj: array<f32>;           // [T, C + NV*VD + 2*NV]; z at C + j*VD
@group(0) @binding(2) var<storage, read> norm_w: array<f32>;         // [VD]
@group(0) @binding(3) var<storage, read> info: array<u32>;           // [T, slot]
@group(0) @binding(4) var<storage, read_write> state: array<f32>;    // [slots, NV, KD, VD]
@group(0) @binding(5) var<storage, read_write> out: array<f32>;      // [T, NV*VD]
@group(0) @binding(6) var<storage, read_write> scratch: array<f32>;  // [nchunks, NV, CH, KD + VD]: Wk | U' (then U)

// Shared memory, reused by the modes: MODE 0 strict lower A (CH*(CH-1)/2), MODE 1 U of the chunk (CH*NB),
// MODE 2 lower P incl. diagonal (CH*(CH+1)/2).
var<workgroup> sh: array<f32, 2080>;
var<workgroup> gam: array<f32, CH>;  // Γ (cumulative log decay inside the chunk)
var<workgroup> bet: array<f32, CH>;  // β (MODE 0), decay to the chunk end (MODE 1), row scales (MODE 2)
var<workgroup> wg_u32: u32;

//#include gdn_layout
fn qAt(t: u32, kh: u32, i: u32) -> f32 { return prep[t * prepWidth() + kh * KD + i]; }
fn kAt(t: u32, kh: u32, i: u32) -> f32 { return prep[t * prepWidth() + (NK + kh) * KD + i]; }
fn vAt(t: u32, j: u32, n: u32) -> f32 { return prep[t * prepWidth() + 2u * NK * KD + j * VD + n]; }
fn scratchAt(c: u32, j: u32, r: u32, col: u32) -> u32 { return ((c * NV + j) * CH + r) * (KD + VD) + col; }

// T, read once into workgroup memory so that loops around barriers stay uniform.
fn tokens(lid: u32) -> u32 {
  if (lid == 0u) { wg_u32 = info[0]; }
  return workgroupUniformLoad(&wg_u32);
}

// Γ and β of chunk rows [0, len) (rows past len repeat the last Γ and get β = 0). Ends with a barrier.
fn loadGates(t0: u32, len: u32, j: u32, lid: u32) {
  if (lid == 0u) {
    var acc = 0.0;
    for (var r = 0u; r < CH; r++) {
      var b = 0.0;
      if (r < len) {
        acc += prep[(t0 + r) * prepWidth() + channels() + NV + j];
        b = prep[(t0 + r) * prepWidth() + channels() + j];
      }
      gam[r] = acc;
      bet[r] = b;
    }
  }
  workgroupBarrier();
}

fn solveChunk(c: u32, j: u32, T: u32, lid: u32) {
  let t0 = c * CH;
  let len = min(CH, T - t0);
  let kh = j * NK / NV;
  loadGates(t0, len, j, lid);
  for (var e = lid; e < CH * CH; e += WG) {
    let r = e / CH;
    let s = e % CH;
    if (s < r) {
      var a = 0.0;
      if (r < len) {
        var d = 0.0;
        for (var i = 0u; i < KD; i++) { d += kAt(t0 + r, kh, i) * kAt(t0 + s, kh, i); }
        a = bet[r] * exp(gam[r] - gam[s]) * d;
      }
      sh[r * (r - 1u) / 2u + s] = a;
    }
  }
  workgroupBarrier();
  var xs: array<f32, CH>;
  for (var col = lid; col < KD + VD; col += WG) {
    for (var r = 0u; r < CH; r++) {
      var x = 0.0;
      if (r < len) {
        if (col < KD) {
          x = bet[r] * exp(gam[r]) * kAt(t0 + r, kh, col);
        } else {
          x = bet[r] * vAt(t0 + r, j, col - KD);
        }
        for (var s = 0u; s < r; s++) { x -= sh[r * (r - 1u) / 2u + s] * xs[s]; }
      }
      xs[r] = x;
      scratch[scratchAt(c, j, r, col)] = x;
    }
  }
}

// MODE 1. Invocation (g, cl) of WG = NB * G owns state column n = nb*NB + cl: in phase A chunk rows
// [g*RPG, (g+1)*RPG) of U and O_inter, in phase B key rows [g*KPG, (g+1)*KPG) of the new state.
fn carryState(j: u32, nb: u32, T: u32, lid: u32) {
  let kh = j * NK / NV;
  let slot = info[1];
  let cl = lid % NB;
  let g = lid / NB;
  let n = nb * NB + cl;
  let own = n < VD;
  let sb = (slot * NV + j) * KD * VD + n;
  let kpg = (KD + G - 1u) / G;
  let i_begin = min(KD, g * kpg);
  let i_end = min(KD, i_begin + kpg);
  let r0 = g * RPG;
  let nchunks = (T + CH - 1u) / CH;
  for (var c = 0u; c < nchunks; c++) {
    let t0 = c * CH;
    let len = min(CH, T - t0);
    loadGates(t0, len, j, lid);
    let glast = gam[CH - 1u];
    if (lid < CH) { bet[lid] = exp(glast - gam[lid]); }  // decay from row r to the chunk end
    // Phase A: U = U' - Wk S0, O_inter = e^Γ (Q S0) for this invocation's rows.
    var u: array<f32, RPG>;
    var oi: array<f32, RPG>;
    for (var rr = 0u; rr < RPG; rr++) {
      u[rr] = 0.0;
      oi[rr] = 0.0;
      if (own && r0 + rr < len) { u[rr] = scratch[scratchAt(c, j, r0 + rr, KD + n)]; }
    }
    if (own) {
      for (var i = 0u; i < KD; i++) {
        let s = state[sb + i * VD];
        for (var rr = 0u; rr < RPG; rr++) {
          if (r0 + rr < len) {
            u[rr] -= scratch[scratchAt(c, j, r0 + rr, i)] * s;
            oi[rr] += qAt(t0 + r0 + rr, kh, i) * s;
          }
        }
      }
      for (var rr = 0u; rr < RPG; rr++) {
        let r = r0 + rr;
        sh[r * NB + cl] = u[rr];
        if (r < len) {
          scratch[scratchAt(c, j, r, KD + n)] = u[rr];
          out[(t0 + r) * NV * VD + j * VD + n] = exp(gam[r]) * oi[rr];
        }
      }
    }
    storageBarrier();  // every invocation has read S0 before phase B overwrites it
    workgroupBarrier();
    // Phase B: S = e^{Γ_last} S0 + (diag(e^{Γ_last - Γ}) K)^T U for this invocation's key rows.
    if (own) {
      for (var i = i_begin; i < i_end; i++) {
        var acc = exp(glast) * state[sb + i * VD];
        for (var r = 0u; r < len; r++) { acc += bet[r] * kAt(t0 + r, kh, i) * sh[r * NB + cl]; }
        state[sb + i * VD] = acc;
      }
    }
    storageBarrier();  // the next chunk reads rows other invocations wrote
    workgroupBarrier();
  }
}

fn outputChunk(c: u32, j: u32, T: u32, lid: u32) {
  let t0 = c * CH;
  let len = min(CH, T - t0);
  let kh = j * NK / NV;
  let n = lid;  // WG == VD
  loadGates(t0, len, j, lid);
  for (var e = lid; e < CH * CH; e += WG) {
    let r = e / CH;
    let s = e % CH;
    if (s <= r) {
      var p = 0.0;
      if (r < len) {
        var d = 0.0;
        for (var i = 0u; i < KD; i++) { d += qAt(t0 + r, kh, i) * kAt(t0 + s, kh, i); }
        p = exp(gam[r] - gam[s]) * d;
      }
      sh[r * (r + 1u) / 2u + s] = p;
    }
  }
  workgroupBarrier();
  var ucol: array<f32, CH>;
  var o: array<f32, CH>;
  for (var s = 0u; s < len; s++) { ucol[s] = scratch[scratchAt(c, j, s, KD + n)]; }
  for (var r = 0u; r < len; r++) {
    var x = out[(t0 + r) * NV * VD + j * VD + n];
    for (var s = 0u; s <= r; s++) { x += sh[r * (r + 1u) / 2u + s] * ucol[s]; }
    o[r] = x;
    out[(t0 + r) * NV * VD + j * VD + n] = x;
  }
  storageBarrier();
  for (var r = lid; r < len; r += WG) {
    var ss = 0.0;
    for (var m = 0u; m < VD; m++) {
      let x = out[(t0 + r) * NV * VD + j * VD + m];
      ss += x * x;
    }
    bet[r] = inverseSqrt(ss / f32(VD) + EPS);
  }
  storageBarrier();  // the row sums read `out` before anyone overwrites it below
  workgroupBarrier();
  for (var r = 0u; r < len; r++) {
    let z = proj[(t0 + r) * projWidth() + channels() + j * VD + n];
    out[(t0 + r) * NV * VD + j * VD + n] = norm_w[n] * (o[r] * bet[r]) * (z / (1.0 + exp(-z)));
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let lid = lid3.x;
  let T = tokens(lid);
  if (MODE == 1u) {
    carryState(wid.x, wid.y, T, lid);
    return;
  }
  let c = wid.x;
  if (c * CH >= T) { return; }  // uniform: T came through workgroupUniformLoad
  if (MODE == 0u) {
    solveChunk(c, wid.y, T, lid);
  } else {
    outputChunk(c, wid.y, T, lid);
  }
}
