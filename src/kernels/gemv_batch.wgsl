// Batched decode GEMV: y[b, n] = epilogue( Σ_k W[n, k] · x̂[b, k] ) for the first meta[0] activation rows (the
// decode rows active in this step), QFMT 0..3 (q4f16_1, q4f32_1, q0f16, q0f32; docs/kernels.md). Each weight word
// (8 weights) is loaded and decoded to f32 once per workgroup and applied to all BT activation rows of the
// workgroup's batch tile, instead of once per row as gemv.wgsl's BATCH > 1 path does.
//   NORM:  x̂ = x · rsqrt(mean(x²) + EPS) · norm_w   (the RMS of each of the tile's rows, over all of K, first)
//   EPI 0: y = acc (+ bias)   EPI 1: y += acc (+ bias)   EPI 2 / 5: rows r and r + N/2 → y[r] = silu(g) · u /
//   gelu_tanh(g) · u   EPI 3 / 4: y = gelu(acc + bias), erf / tanh (activation.wgsl)
// The activations of the tile are staged in workgroup memory KT elements of K at a time (xs[b][k], x̂ already
// normalised and, for q4, carrying the prescale of the nibble trick of gemv.wgsl), so BT · KT · 4 bytes fit.
// A thread group of TPR lanes owns RPT weight rows; its lanes take consecutive words of a row within the tile.
// Lane partial sums are reduced with subgroup shuffles (SG_REDUCE) or through workgroup memory.
// Grid: (ceil(active rows / BT), ceil(rows / (WG / TPR · RPT))): the batch tile is the fastest dimension, so the
// workgroups that read the same weights run next to each other. Row b's sum is computed in the same order whatever
// the number of active rows and the tile it falls in, so a sequence's logits do not depend on its neighbours.
// Q8 (q4 formats, GPUs with the packed dot product): binding 4 holds x̂ already normalised and quantized per
// 32-element group by gemv_quant.wgsl (one or two int8 digits, a zero point and a step per group; NORM is done
// there), a thread group owns 4 weight rows, its lanes take whole groups (16-byte weight loads), and each group's
// codes meet every active row's digits in dot4I8Packed: about 3 instructions per 8 weights and row instead of the
// f32 path's 8 multiply-adds plus 16 staged-x loads, and each digit word loaded serves 4 weight rows. KSPLIT
// thread groups share 4 rows, each over every KSPLIT-th group of K, so small matrices still fill the GPU.
//#enable subgroups
//#include activation
//#include q4_group

override QFMT: u32 = 0u;
override N: u32 = 1u;           // weight rows in this buffer (chunk)
override K: u32 = 32u;          // input features (multiple of 8)
override BT: u32 = 8u;          // activation rows per workgroup (batch tile)
override EPI: u32 = 0u;
override NORM: bool = false;
override HAS_BIAS: bool = false;
override EPS: f32 = 1e-6;
override ROW_OFFSET: u32 = 0u;
override Y_STRIDE: u32 = 1u;
override X_STRIDE: u32 = K;     // floats per batch row of x (multiple of 4)
override TPR: u32 = 8u;         // lanes per thread group (power of two)
override WG: u32 = 256u;
override SG_REDUCE: bool = false;
override RPT: u32 = 1u;         // weight rows per thread group: (gated ? 2 : 1) · RPT · BT ≤ MAXACC
override KT: u32 = 256u;        // K elements staged per tile (multiple of 8)
override Q8: bool = false;      // int8 x̂ from gemv_quant.wgsl in binding 4 (QFMT ≤ 1, RPT 4, BT ≤ MAXBT_Q8)
override Q8_DIGITS: u32 = 2u;   // 1 or 2
override Q8_ROW: u32 = 4u;      // u32s per row of the quantized x̂ (gemv_quant.wgsl's ROW_U32)
override KSPLIT: u32 = 1u;      // Q8: thread groups sharing 4 weight rows, each over every KSPLIT-th group of K

const MAXACC: u32 = 64u;
const MAXBT: u32 = 32u;
const MAXBT_Q8: u32 = 8u;

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> nq: array<vec4<u32>>;  // f32 path: norm_w (bit patterns); Q8: x̂ quantized
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read> meta_b: array<u32>;  // [0]: active rows

var<workgroup> xs: array<vec4<f32>, select(BT * KT / 4u, 1u, Q8)>;
// Q8 with KSPLIT > 1: thread group tg's lane sums, [tg · BT + b] (the SwiGLU "up" halves after WG / TPR · BT).
var<workgroup> part: array<vec4<f32>, select(1u, 2u * (WG / TPR) * BT, Q8 && KSPLIT > 1u)>;
var<workgroup> red: array<f32, WG>;
var<workgroup> rinv: array<f32, MAXBT>;

fn groupsPerRow() -> u32 { return K / 32u; }

// q4 codes to f32 as in gemv.wgsl: (c - 7) divided by prescale(0) / prescale(1); the staged x carries the factor.
const MAGIC: u32 = 0x4B000000u;
const TWO23: f32 = 8388608.0;

fn nibLo(word: u32) -> vec4<f32> {
  let c = vec4<u32>(word) & vec4<u32>(0xFu, 0xF0u, 0xF00u, 0xF000u);
  return bitcast<vec4<f32>>(c | vec4<u32>(MAGIC)) - (vec4<f32>(TWO23) + vec4<f32>(7.0, 112.0, 1792.0, 28672.0));
}

fn nibHi(word: u32) -> vec4<f32> {
  let t = word >> 20u;
  let c = vec4<u32>(word, t, t, t) & vec4<u32>(0xF0000u, 0xFu, 0xF0u, 0xF00u);
  return bitcast<vec4<f32>>(c | vec4<u32>(MAGIC)) - (vec4<f32>(TWO23) + vec4<f32>(458752.0, 7.0, 112.0, 1792.0));
}

fn prescale(half: u32) -> vec4<f32> {
  return select(vec4<f32>(1.0, 0.0625, 0.00390625, 0.000244140625),
                vec4<f32>(0.0000152587890625, 1.0, 0.0625, 0.00390625), half == 1u);
}

// Weights 8·gw .. 8·gw+7 of `row` as two vec4 (scale applied; q4 values divided by the prescale).
fn decodeWord(row: u32, gw: u32) -> array<vec4<f32>, 2> {
  var o: array<vec4<f32>, 2>;
  if (QFMT <= 1u) {
    let i = row * (K / 8u) + gw;
    let word = w[i >> 2u][i & 3u];
    let sc = scaleOf(row, gw >> 2u);
    o[0] = nibLo(word) * sc;
    o[1] = nibHi(word) * sc;
  } else if (QFMT == 2u) {
    let wv = w[row * (K / 8u) + gw];
    o[0] = vec4<f32>(unpack2x16float(wv.x), unpack2x16float(wv.y));
    o[1] = vec4<f32>(unpack2x16float(wv.z), unpack2x16float(wv.w));
  } else {
    o[0] = bitcast<vec4<f32>>(w[row * (K / 4u) + 2u * gw]);
    o[1] = bitcast<vec4<f32>>(w[row * (K / 4u) + 2u * gw + 1u]);
  }
  return o;
}

fn reduceLanes(v: f32, lid: u32) -> f32 {
  var r = v;
//#if SUBGROUPS
  if (SG_REDUCE) {
    for (var m = TPR / 2u; m > 0u; m = m / 2u) { r += subgroupShuffleXor(r, m); }
    return r;
  }
//#endif
  red[lid] = r;
  workgroupBarrier();
  for (var st = TPR / 2u; st > 0u; st = st / 2u) {
    if ((lid % TPR) < st) { red[lid] += red[lid + st]; }
    workgroupBarrier();
  }
  r = red[lid - (lid % TPR)];
  workgroupBarrier();
  return r;
}

// One weight row's group: its codes split into low and high nibbles, and its scale.
struct GroupW { lo: vec4<u32>, hi: vec4<u32>, sc: f32 }

fn loadGroupW(row: u32, g: u32) -> GroupW {
  let wv = w[row * groupsPerRow() + g];
  return GroupW(wv & vec4<u32>(0x0F0F0F0Fu), (wv >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu), scaleOf(row, g));
}

// Σ (code - 7) · x̂ of one group against one staged row, in units of its digit-0 step (exact in i32).
fn groupDotQ8(gw: GroupW, q: array<vec4<u32>, 4>, z: vec2<i32>) -> f32 {
  var t = dot32(gw.lo, gw.hi, q[0], q[1]) - z.x;
  if (Q8_DIGITS == 2u) { t = t * 254 + dot32(gw.lo, gw.hi, q[2], q[3]) - z.y; }
  return f32(t) * gw.sc;
}

fn mainQ8(lid: u32, wid: vec3<u32>) {
  let b0 = wid.x * BT;
  let nbt = min(BT, meta_b[0] - min(meta_b[0], b0));  // active rows in this tile (uniform)
  let tg = lid / TPR;
  let lane = lid % TPR;
  let ks = tg % KSPLIT;  // which groups of K this thread group sums
  let logical_rows = select(N, N / 2u, epiGated(EPI));
  let base = wid.y * (WG / TPR / KSPLIT) * 4u + (tg / KSPLIT) * 4u;
  let last = max(logical_rows, 1u) - 1u;
  let h = select(0u, N / 2u, epiGated(EPI));
  let G = K / 32u;
  var acc: array<vec4<f32>, MAXBT_Q8>;   // [b]: rows base .. base + 3
  var accu: array<vec4<f32>, MAXBT_Q8>;  // SwiGLU "up" rows
  for (var b = 0u; b < MAXBT_Q8; b++) {
    acc[b] = vec4<f32>(0.0);
    accu[b] = vec4<f32>(0.0);
  }
  for (var g = ks * TPR + lane; g < G; g += TPR * KSPLIT) {
    var gw: array<GroupW, 4>;
    var gu: array<GroupW, 4>;
    for (var r = 0u; r < 4u; r++) {
      gw[r] = loadGroupW(min(base + r, last), g);
      if (epiGated(EPI)) { gu[r] = loadGroupW(min(base + r, last) + h, g); }
    }
    for (var b = 0u; b < BT; b++) {
      if (b < nbt) {
        let row = (b0 + b) * (Q8_ROW / 4u);  // vec4 index of the row's quantized x̂
        var q: array<vec4<u32>, 4>;
        q[0] = nq[row + 2u * g];
        q[1] = nq[row + 2u * g + 1u];
        let zi = Q8_DIGITS * G * 8u + g;   // u32 index within the row: the zero points, then the steps
        let di = Q8_DIGITS * G * 9u + g;
        var z = vec2<i32>(bitcast<i32>(nq[row + zi / 4u][zi % 4u]), 0);
        if (Q8_DIGITS == 2u) {
          q[2] = nq[row + 2u * (G + g)];
          q[3] = nq[row + 2u * (G + g) + 1u];
          z.y = bitcast<i32>(nq[row + (zi + G) / 4u][(zi + G) % 4u]);
        }
        let step = bitcast<f32>(nq[row + di / 4u][di % 4u]);
        let d = select(step, step / 254.0, Q8_DIGITS == 2u);
        acc[b] += d * vec4<f32>(groupDotQ8(gw[0], q, z), groupDotQ8(gw[1], q, z), groupDotQ8(gw[2], q, z),
                                groupDotQ8(gw[3], q, z));
        if (epiGated(EPI)) {
          accu[b] += d * vec4<f32>(groupDotQ8(gu[0], q, z), groupDotQ8(gu[1], q, z), groupDotQ8(gu[2], q, z),
                                   groupDotQ8(gu[3], q, z));
        }
      }
    }
  }
  // Lane sums, then (KSPLIT > 1) the thread groups that share the rows, in a fixed order.
  for (var b = 0u; b < BT; b++) {
    let a = acc[b];
    let u = accu[b];
    acc[b] = vec4<f32>(reduceLanes(a.x, lid), reduceLanes(a.y, lid), reduceLanes(a.z, lid), reduceLanes(a.w, lid));
    if (epiGated(EPI)) {
      accu[b] = vec4<f32>(reduceLanes(u.x, lid), reduceLanes(u.y, lid), reduceLanes(u.z, lid), reduceLanes(u.w, lid));
    }
    if (KSPLIT > 1u && lane == 0u) {
      part[tg * BT + b] = acc[b];
      part[(WG / TPR + tg) * BT + b] = accu[b];
    }
  }
  if (KSPLIT > 1u) {
    workgroupBarrier();
    if (ks == 0u) {
      for (var b = 0u; b < BT; b++) {
        var a = part[tg * BT + b];
        var u = part[(WG / TPR + tg) * BT + b];
        for (var j = 1u; j < KSPLIT; j++) {
          a += part[(tg + j) * BT + b];
          u += part[(WG / TPR + tg + j) * BT + b];
        }
        acc[b] = a;
        accu[b] = u;
      }
    }
  }
  if (lane != 0u || ks != 0u) { return; }
  for (var b = 0u; b < BT; b++) {  // constant trip counts keep acc in registers
    for (var r = 0u; r < 4u; r++) {
      let row = base + r;
      if (b < nbt && row < logical_rows) {
        let out = (b0 + b) * Y_STRIDE + ROW_OFFSET + row;
        if (epiGated(EPI)) {
          y[out] = actGate(EPI, acc[b][r]) * accu[b][r];
        } else {
          var v = acc[b][r];
          if (HAS_BIAS) { v += bias[ROW_OFFSET + row]; }
          if (EPI == 1u) { v += y[out]; }
          y[out] = actPlain(EPI, v);
        }
      }
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  if (Q8) {
    mainQ8(lid, wid);
    return;
  }
  let b0 = wid.x * BT;
  let nbt = min(BT, meta_b[0] - min(meta_b[0], b0));  // active rows in this tile (uniform)
  if (NORM) {  // WG / BT threads per activation row sum its squares over K
    let per = WG / BT;
    let b = lid / per;
    var ss = 0.0;
    if (b < nbt) {
      for (var v = lid % per; v < K / 4u; v += per) {
        let xi = x[(b0 + b) * (X_STRIDE / 4u) + v];
        ss += dot(xi, xi);
      }
    }
    red[lid] = ss;
    workgroupBarrier();
    if (lid < BT) {
      var t = 0.0;
      for (var j = 0u; j < per; j++) { t += red[lid * per + j]; }
      rinv[lid] = inverseSqrt(t / f32(K) + EPS);
    }
    workgroupBarrier();
  }
  let tg = lid / TPR;
  let lane = lid % TPR;
  let logical_rows = select(N, N / 2u, epiGated(EPI));
  let base = wid.y * (WG / TPR) * RPT + tg * RPT;
  let up = RPT * BT;  // offset of the SwiGLU "up" accumulators
  var acc: array<f32, MAXACC>;
  for (var i = 0u; i < MAXACC; i++) { acc[i] = 0.0; }
  for (var kt = 0u; kt < K; kt += KT) {
    workgroupBarrier();  // the previous tile has been read by every thread
    for (var i = lid; i < BT * KT / 4u; i += WG) {
      let b = i / (KT / 4u);
      let v = i % (KT / 4u);
      let k4 = kt / 4u + v;
      var xi = vec4<f32>(0.0);
      if (b < nbt && k4 < K / 4u) {
        xi = x[(b0 + b) * (X_STRIDE / 4u) + k4];
        if (NORM) { xi = xi * rinv[b] * bitcast<vec4<f32>>(nq[k4]); }
        if (QFMT <= 1u) { xi = xi * prescale(k4 & 1u); }
      }
      xs[i] = xi;
    }
    workgroupBarrier();
    for (var wi = lane; wi < KT / 8u; wi += TPR) {
      let gw = kt / 8u + wi;
      if (gw >= K / 8u) { break; }
      for (var r = 0u; r < RPT; r++) {  // constant trip counts: the accumulators stay in registers
        let row = base + r;
        if (row < logical_rows) {
          let g = decodeWord(row, gw);
          var u: array<vec4<f32>, 2>;
          if (epiGated(EPI)) { u = decodeWord(row + N / 2u, gw); }
          for (var b = 0u; b < BT; b++) {
            if (b < nbt) {
              let xa = xs[b * (KT / 4u) + 2u * wi];
              let xb = xs[b * (KT / 4u) + 2u * wi + 1u];
              acc[r * BT + b] += dot(g[0], xa) + dot(g[1], xb);
              if (epiGated(EPI)) { acc[up + r * BT + b] += dot(u[0], xa) + dot(u[1], xb); }
            }
          }
        }
      }
    }
  }
  // Reduce over the lanes of each thread group; lane 0 writes the outputs.
  let n_acc = select(1u, 2u, epiGated(EPI)) * RPT * BT;
  for (var i = 0u; i < n_acc; i++) { acc[i] = reduceLanes(acc[i], lid); }
  if (lane != 0u) { return; }
  for (var r = 0u; r < RPT; r++) {
    let row = base + r;
    if (row >= logical_rows) { break; }
    for (var b = 0u; b < nbt; b++) {
      let a = acc[r * BT + b];
      let out = (b0 + b) * Y_STRIDE + ROW_OFFSET + row;
      if (epiGated(EPI)) {
        let u = acc[up + r * BT + b];
        y[out] = actGate(EPI, a) * u;
      } else {
        var v = a;
        if (HAS_BIAS) { v += bias[ROW_OFFSET + row]; }
        if (EPI == 1u) { v += y[out]; }
        y[out] = actPlain(EPI, v);
      }
    }
  }
}
