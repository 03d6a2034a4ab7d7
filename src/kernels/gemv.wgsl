// Decode GEMV: y[b, n] = epilogue( Σ_k W[n, k] · x̂[b, k] ) for BATCH activation rows (one per sequence), every
// MLC weight format (QFMT, see docs/kernels.md), with optional fused prologue/epilogue so one dispatch covers
// "RMSNorm → projection" or "projection → residual add" or "gate/up projection → SwiGLU":
//   NORM:  x̂ = x · rsqrt(mean(x²) + EPS) · norm_w   (each workgroup recomputes the row's RMS: x is small)
//   EPI 0: y = acc (+ bias)   EPI 1: y += acc (+ bias)   EPI 2: rows r and r + N/2 → y[r] = silu(g) · u
// TPR threads share a row. For q4 formats consecutive lanes take consecutive u32 words (8 weights each): one load
// instruction of a thread group reads 4·TPR contiguous weight bytes and 32·TPR contiguous x bytes (lanes reading
// 128-byte x spans, one group each, touched 32 cache lines per instruction and held the kernel at ~20% of the
// H200's bandwidth). Other formats take a 32-element group per lane. The row's partial sums are reduced with
// subgroup shuffles when SG_REDUCE (TPR ≤ subgroup size) or through workgroup memory.
// Grid: ceil(rows / (WG / TPR)) workgroups, folded into x/y dimensions when above 65535.
//#enable subgroups

override QFMT: u32 = 0u;        // 0 q4f16_1, 1 q4f32_1, 2 q0f16, 3 q0f32, 4 q3f16_1
override N: u32 = 1u;           // weight rows in this buffer (chunk)
override K: u32 = 32u;          // input features
override BATCH: u32 = 1u;       // activation rows, ≤ 8
override EPI: u32 = 0u;
override NORM: bool = false;
override HAS_BIAS: bool = false;
override EPS: f32 = 1e-6;
override ROW_OFFSET: u32 = 0u;  // first output column written by this chunk
override Y_STRIDE: u32 = 1u;    // floats per batch row of y
override X_STRIDE: u32 = K;     // floats per batch row of x (multiple of 4)
override TPR: u32 = 32u;        // threads per row (power of two)
override WG: u32 = 256u;
override SG_REDUCE: bool = false;
override RPT: u32 = 1u;         // rows per thread group: the x values of a group are loaded once for RPT rows
override KSPLIT: u32 = 1u;      // thread groups (of TPR lanes) sharing the same rows, each over 1/KSPLIT of K

const MAXB: u32 = 8u;
const MAXACC: u32 = 32u;        // 2 (SwiGLU halves) × RPT × BATCH ≤ 32

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> norm_w: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;

var<workgroup> red: array<f32, WG>;
var<workgroup> rinv: array<f32, MAXB>;
var<workgroup> part: array<f32, (WG / TPR) * MAXACC>;  // per thread group partial sums (KSPLIT > 1)

fn groupSize() -> u32 { return select(32u, 40u, QFMT == 4u); }
fn groupsPerRow() -> u32 { return (K + groupSize() - 1u) / groupSize(); }

fn scaleOf(row: u32, g: u32) -> f32 {
  let j = row * groupsPerRow() + g;
  if (QFMT == 1u) { return bitcast<f32>(s[j]); }
  let pair = unpack2x16float(s[j >> 1u]);
  return select(pair.x, pair.y, (j & 1u) == 1u);
}

// x̂[b, 4v .. 4v+3]
fn xv(b: u32, v: u32) -> vec4<f32> {
  let xi = x[b * (X_STRIDE / 4u) + v];
  if (NORM) { return xi * rinv[b] * norm_w[v]; }
  return xi;
}

fn xs(b: u32, k: u32) -> f32 { return xv(b, k >> 2u)[k & 3u]; }

fn nib(word: u32, lo: u32) -> vec4<f32> {
  return vec4<f32>(f32((word >> lo) & 15u), f32((word >> (lo + 4u)) & 15u), f32((word >> (lo + 8u)) & 15u),
                   f32((word >> (lo + 12u)) & 15u)) - vec4<f32>(7.0);
}

// One q4 word (8 weights: elements 8·wi .. 8·wi+7 of row `row`) against x̂ in two registers: Σ (code - 7) · x · scale.
fn dotWord(row: u32, wi: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
  let i = row * (K / 8u) + wi;
  let word = w[i >> 2u][i & 3u];
  return (dot(nib(word, 0u), xa) + dot(nib(word, 16u), xb)) * scaleOf(row, wi >> 2u);
}

// Σ over quantization group g of row `row`: W[row, k] · x̂[b, k], for every batch row, added into acc[off + b].
fn accumulateGroup(row: u32, g: u32, acc: ptr<function, array<f32, MAXACC>>, off: u32) {
  if (QFMT == 2u) {
    for (var q = 0u; q < 4u; q++) {
      let wv = w[row * (K / 8u) + g * 4u + q];  // 8 halves = x elements g*32 + 8q .. +7
      let w0 = vec4<f32>(unpack2x16float(wv.x), unpack2x16float(wv.y));
      let w1 = vec4<f32>(unpack2x16float(wv.z), unpack2x16float(wv.w));
      for (var b = 0u; b < BATCH; b++) {
        (*acc)[off + b] += dot(w0, xv(b, g * 8u + 2u * q)) + dot(w1, xv(b, g * 8u + 2u * q + 1u));
      }
    }
  } else if (QFMT == 3u) {
    for (var q = 0u; q < 8u; q++) {
      let wv = bitcast<vec4<f32>>(w[row * (K / 4u) + g * 8u + q]);
      for (var b = 0u; b < BATCH; b++) { (*acc)[off + b] += dot(wv, xv(b, g * 8u + q)); }
    }
  } else {
    let wv = w[row * groupsPerRow() + g];  // 4 words × 10 int3 codes
    let sc = scaleOf(row, g);
    for (var b = 0u; b < BATCH; b++) {
      var t = 0.0;
      for (var i = 0u; i < 4u; i++) {
        for (var c = 0u; c < 10u; c++) {
          let k = g * 40u + i * 10u + c;
          if (k < K) { t += (f32((wv[i] >> (3u * c)) & 7u) - 3.0) * xs(b, k); }
        }
      }
      (*acc)[off + b] += t * sc;
    }
  }
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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let lid = lidv.x;
  if (NORM) {
    for (var b = 0u; b < BATCH; b++) {
      var ss = 0.0;
      for (var v = lid; v < K / 4u; v += WG) {
        let xi = x[b * (X_STRIDE / 4u) + v];
        ss += dot(xi, xi);
      }
      red[lid] = ss;
      workgroupBarrier();
      for (var st = WG / 2u; st > 0u; st = st / 2u) {
        if (lid < st) { red[lid] += red[lid + st]; }
        workgroupBarrier();
      }
      if (lid == 0u) { rinv[b] = inverseSqrt(red[0] / f32(K) + EPS); }
      workgroupBarrier();
    }
  }
  let groups = WG / TPR;            // thread groups in the workgroup
  let tg = lid / TPR;
  let ks = tg % KSPLIT;              // which slice of K this thread group sums
  let rows_per_wg = (groups / KSPLIT) * RPT;
  let logical_rows = select(N, N / 2u, EPI == 2u);
  let base = (wid.x + wid.y * nwg.x) * rows_per_wg + (tg / KSPLIT) * RPT;
  let lane = lid % TPR;
  var acc: array<f32, MAXACC>;
  for (var i = 0u; i < MAXACC; i++) { acc[i] = 0.0; }
  let up = RPT * BATCH;  // offset of the SwiGLU "up" accumulators
  let fast = QFMT <= 1u && BATCH == 1u && RPT == 4u;
  if (fast && base < logical_rows) {
    // Four rows per thread group, one activation row: vec4 accumulators, rows clamped (masked at the end).
    let last = logical_rows - 1u;
    let r0 = base;
    let r1 = min(base + 1u, last);
    let r2 = min(base + 2u, last);
    let r3 = min(base + 3u, last);
    var a4 = vec4<f32>(0.0);
    var u4 = vec4<f32>(0.0);
    for (var wi = ks * TPR + lane; wi < K / 8u; wi += TPR * KSPLIT) {
      let xa = xv(0u, 2u * wi);
      let xb = xv(0u, 2u * wi + 1u);
      a4 += vec4<f32>(dotWord(r0, wi, xa, xb), dotWord(r1, wi, xa, xb), dotWord(r2, wi, xa, xb),
                      dotWord(r3, wi, xa, xb));
      if (EPI == 2u) {
        let h = N / 2u;
        u4 += vec4<f32>(dotWord(r0 + h, wi, xa, xb), dotWord(r1 + h, wi, xa, xb), dotWord(r2 + h, wi, xa, xb),
                        dotWord(r3 + h, wi, xa, xb));
      }
    }
    acc[0] = a4.x;
    acc[1] = a4.y;
    acc[2] = a4.z;
    acc[3] = a4.w;
    acc[4] = u4.x;
    acc[5] = u4.y;
    acc[6] = u4.z;
    acc[7] = u4.w;
  }
  if (!fast && base < logical_rows && QFMT <= 1u) {
    for (var wi = ks * TPR + lane; wi < K / 8u; wi += TPR * KSPLIT) {
      for (var b = 0u; b < BATCH; b++) {
        let xa = xv(b, 2u * wi);
        let xb = xv(b, 2u * wi + 1u);
        for (var r = 0u; r < RPT; r++) {
          if (base + r < logical_rows) {
            acc[r * BATCH + b] += dotWord(base + r, wi, xa, xb);
            if (EPI == 2u) { acc[up + r * BATCH + b] += dotWord(base + r + N / 2u, wi, xa, xb); }
          }
        }
      }
    }
  }
  if (!fast && base < logical_rows && QFMT > 1u) {
    for (var g = ks * TPR + lane; g < groupsPerRow(); g += TPR * KSPLIT) {
      for (var r = 0u; r < RPT; r++) {
        if (base + r < logical_rows) {
          accumulateGroup(base + r, g, &acc, r * BATCH);
          if (EPI == 2u) { accumulateGroup(base + r + N / 2u, g, &acc, up + r * BATCH); }
        }
      }
    }
  }
  // Reduce over the lanes of each thread group, then over the KSPLIT groups that share the rows.
  let n_acc = select(1u, 2u, EPI == 2u) * RPT * BATCH;
  for (var i = 0u; i < n_acc; i++) {
    let v = reduceLanes(acc[i], lid);
    if (lane == 0u) { part[tg * MAXACC + i] = v; }
  }
  workgroupBarrier();
  if (lane != 0u || ks != 0u) { return; }
  for (var i = 0u; i < n_acc; i++) {
    var t = 0.0;
    for (var j = 0u; j < KSPLIT; j++) { t += part[(tg + j) * MAXACC + i]; }
    acc[i] = t;
  }
  for (var r = 0u; r < RPT; r++) {
    let row = base + r;
    if (row >= logical_rows) { continue; }
    for (var b = 0u; b < BATCH; b++) {
      let a = acc[r * BATCH + b];
      let out = b * Y_STRIDE + ROW_OFFSET + row;
      if (EPI == 2u) {
        let u = acc[up + r * BATCH + b];
        y[out] = a / (1.0 + exp(-a)) * u;
      } else {
        var v = a;
        if (HAS_BIAS) { v += bias[ROW_OFFSET + row]; }
        if (EPI == 1u) { v += y[out]; }
        y[out] = v;
      }
    }
  }
}
