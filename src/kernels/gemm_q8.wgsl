// Batched decode projection as a small-M GEMM on the packed int8 dot product: y[b, n] = epilogue( Σ_k W[n, k] ·
// x̂[b, k] ) for the first meta[0] activation rows, q4 weights (QFMT 0 q4f16_1, 1 q4f32_1), x̂ already normalised
// and quantized per 32-element group by gemv_quant.wgsl (one or two int8 digits, a zero point and a step per group;
// the row layout is in that kernel's header).
// A workgroup owns a tile of 4·MB activation rows × 4·NB weight rows and splits K into KS slices: thread
// (nb, mb, ks) sums every KS-th group from group ks for 4 activation rows × 4 weight rows, 16 accumulators in
// registers; each group's codes are loaded once (16 bytes a row, split into low and high nibbles) and meet the 4
// rows' digits in dot4I8Packed, 8 per digit per pair. The slices' partial sums then meet in workgroup memory,
// summed in slice order. ks is the fastest thread index, so the KS threads of a cell read consecutive groups of the
// same rows (contiguous weight and x̂ bytes).
// Gated epilogues (EPI 2 / 5): an n-block's 4 weight rows are 2 gate rows and their 2 up rows (r, r + 1, r + N/2,
// r + 1 + N/2), so a block gives 2 outputs per activation row.
// Row b's sums depend only on K, KS and the weights, not on MB, NB, the tile b falls in or the active count: the
// host picks MB per step from the active rows (the smallest tile that holds them; the smaller tiles take more weight
// blocks, so that every tile's workgroup has 128 threads), and the bits stay the same
// (gemv_test's GemvBatch cases check it). They differ from gemv_batch.wgsl's in the last bits, so an op takes one
// kernel or the other for good (kernels/gemv_op.h says which).
//#include activation
//#include q4_group

override QFMT: u32 = 0u;
override N: u32 = 1u;           // weight rows in this buffer (chunk)
override K: u32 = 32u;          // input features (multiple of 32)
override EPI: u32 = 0u;
override HAS_BIAS: bool = false;
override ROW_OFFSET: u32 = 0u;
override Y_STRIDE: u32 = 1u;
override DIGITS: u32 = 2u;      // 1 or 2
override XQ_ROW: u32 = 4u;      // u32s per row of x̂ (gemv_quant.wgsl's ROW_U32, a multiple of 4)
override XSPLIT: bool = false;  // x̂ in gemv_quant.wgsl's XSPLIT layout (a group's halves apart)
override MB: u32 = 8u;          // blocks of 4 activation rows per workgroup
override NB: u32 = 1u;          // blocks of 4 weight rows per workgroup
override KS: u32 = 16u;         // K slices per workgroup
override WG: u32 = 128u;        // KS · NB · MB

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;  // x̂ rows, by 16 bytes
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> xw: array<u32>;        // the same buffer, by word (zero points, steps)
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read> meta_b: array<u32>;    // [0]: active rows

// [ks][cell · 16 + m · 4 + n]: each thread's partial sums, then read across the slices.
var<workgroup> red: array<f32, WG * 16u>;

fn groupsPerRow() -> u32 { return K / 32u; }

// One group's 4 weight rows: codes split into low and high nibbles, and the scales.
struct Group4 {
  lo0: vec4<u32>, hi0: vec4<u32>, lo1: vec4<u32>, hi1: vec4<u32>,
  lo2: vec4<u32>, hi2: vec4<u32>, lo3: vec4<u32>, hi3: vec4<u32>,
  sc: vec4<f32>,
}

fn loadGroup4(rows: vec4<u32>, g: u32) -> Group4 {
  let G = groupsPerRow();
  let m = vec4<u32>(0x0F0F0F0Fu);
  let w0 = w[rows.x * G + g];
  let w1 = w[rows.y * G + g];
  let w2 = w[rows.z * G + g];
  let w3 = w[rows.w * G + g];
  return Group4(w0 & m, (w0 >> vec4<u32>(4u)) & m, w1 & m, (w1 >> vec4<u32>(4u)) & m,
                w2 & m, (w2 >> vec4<u32>(4u)) & m, w3 & m, (w3 >> vec4<u32>(4u)) & m,
                vec4<f32>(scaleOf(rows.x, g), scaleOf(rows.y, g), scaleOf(rows.z, g), scaleOf(rows.w, g)));
}

// Activation row b's contribution of group g to its 4 weight rows (0 past the active rows).
fn rowTerm(b: u32, nact: u32, g: u32, gw: Group4) -> vec4<f32> {
  if (b >= nact) { return vec4<f32>(0.0); }
  let G = groupsPerRow();
  let rv = b * (XQ_ROW / 4u);
  let rw = b * XQ_ROW;
  // The group's two vec4s of digit 0 (digit 1's are 2G vec4s further in either layout).
  let h0 = select(2u * g, g, XSPLIT);
  let h1 = select(2u * g + 1u, G + g, XSPLIT);
  let q0 = xq[rv + h0];
  let q1 = xq[rv + h1];
  let z0 = bitcast<i32>(xw[rw + DIGITS * G * 8u + g]);
  let step = bitcast<f32>(xw[rw + DIGITS * G * 9u + g]);
  var t = vec4<i32>(dot32(gw.lo0, gw.hi0, q0, q1), dot32(gw.lo1, gw.hi1, q0, q1), dot32(gw.lo2, gw.hi2, q0, q1),
                    dot32(gw.lo3, gw.hi3, q0, q1)) - vec4<i32>(z0);
  var d = step;
  if (DIGITS == 2u) {
    let q2 = xq[rv + 2u * G + h0];
    let q3 = xq[rv + 2u * G + h1];
    let z1 = bitcast<i32>(xw[rw + DIGITS * G * 8u + G + g]);
    t = t * 254 + vec4<i32>(dot32(gw.lo0, gw.hi0, q2, q3), dot32(gw.lo1, gw.hi1, q2, q3),
                            dot32(gw.lo2, gw.hi2, q2, q3), dot32(gw.lo3, gw.hi3, q2, q3)) - vec4<i32>(z1);
    d = step / 254.0;
  }
  return d * (vec4<f32>(t) * gw.sc);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let ks = lid % KS;
  let cell = lid / KS;
  let mb = cell % MB;
  let nb = cell / MB;
  let nact = meta_b[0];
  let gated = epiGated(EPI);
  let h = N / 2u;
  let b0 = wid.x * 4u * MB + mb * 4u;
  // This thread's 4 weight rows (clamped into the matrix; the epilogue skips the ones past it).
  var rows: vec4<u32>;
  if (gated) {
    let r = (wid.y * NB + nb) * 2u;
    let last = max(h, 1u) - 1u;
    rows = vec4<u32>(min(r, last), min(r + 1u, last), min(r, last) + h, min(r + 1u, last) + h);
  } else {
    let r = (wid.y * NB + nb) * 4u;
    rows = min(vec4<u32>(r) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(max(N, 1u) - 1u));
  }
  let G = groupsPerRow();
  var a0 = vec4<f32>(0.0);
  var a1 = vec4<f32>(0.0);
  var a2 = vec4<f32>(0.0);
  var a3 = vec4<f32>(0.0);
  for (var g = ks; g < G; g += KS) {
    let gw = loadGroup4(rows, g);
    a0 += rowTerm(b0, nact, g, gw);
    a1 += rowTerm(b0 + 1u, nact, g, gw);
    a2 += rowTerm(b0 + 2u, nact, g, gw);
    a3 += rowTerm(b0 + 3u, nact, g, gw);
  }
  let o = (ks * MB * NB + cell) * 16u;  // [ks][cell][16]
  for (var n = 0u; n < 4u; n++) {
    red[o + n] = a0[n];
    red[o + 4u + n] = a1[n];
    red[o + 8u + n] = a2[n];
    red[o + 12u + n] = a3[n];
  }
  workgroupBarrier();
  // Every output of the tile, summed over the slices in order.
  let outs = MB * NB * 16u;
  for (var e = lid; e < outs; e += WG) {
    let c = e / 16u;
    let i = e % 16u;
    let m = i / 4u;
    let n = i % 4u;
    let b = wid.x * 4u * MB + (c % MB) * 4u + m;
    if (b >= nact || (gated && n >= 2u)) { continue; }
    var v = 0.0;
    var u = 0.0;
    for (var k = 0u; k < KS; k++) {
      v += red[k * outs + e];
      if (gated) { u += red[k * outs + e + 2u]; }
    }
    if (gated) {
      let row = (wid.y * NB + c / MB) * 2u + n;
      if (row < h) { y[b * Y_STRIDE + ROW_OFFSET + row] = actGate(EPI, v) * u; }
    } else {
      let row = (wid.y * NB + c / MB) * 4u + n;
      if (row < N) {
        let out = b * Y_STRIDE + ROW_OFFSET + row;
        if (HAS_BIAS) { v += bias[ROW_OFFSET + row]; }
        if (EPI == 1u) { v += y[out]; }
        y[out] = actPlain(EPI, v);
      }
    }
  }
}
