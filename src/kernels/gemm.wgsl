// Prefill linear layer (tiled GEMM): y[t, ROW_OFFSET + c] = epilogue( sum_k x[t, k] * W[n, k] ) for the T tokens
// of a prefill chunk, for every weight format of docs/kernels.md (QFMT 0 q4f16_1, 1 q4f32_1, 2 q0f16, 3 q0f32,
// 4 q3f16_1). Arithmetic and accumulation in f32.
//
// Tiling: one workgroup of 256 threads (16 x 16) computes a TILE_T x TILE_N tile (tokens x weight rows); each
// thread owns a TM x TN micro-tile (TM = TILE_T / 16 rows, TN = TILE_N / 16 columns, TM, TN in {4, 8}).
// The K loop walks half quantization groups (HG = 16 values for q4 and dense, 20 for q3: two steps per group):
//   - x tile  xs [TILE_T][HG]  row-major in workgroup memory (vec4 along k, loaded coalesced as vec4);
//   - w tile  ws [HG][TILE_N]  k-major, dequantized once per tile by up to 2*TILE_N threads, one "unit" each
//     (one word of q4/q3 = 8/10 codes, 4 words of f16, 8 words of f32; all give 8 or 10 values of one row);
//   - the next step's global loads are issued into registers before the current step's FMAs (register
//     prefetch), dequantized and stored after them; STAGES = 2 double-buffers xs/ws (one barrier per step),
//     STAGES = 1 uses one buffer and two barriers per step.
// Shared-memory patterns: x vec4 reads are broadcasts (two distinct rows per 32 threads), w vec4 reads hit 16
// consecutive vec4 per row of threads, x stores are consecutive vec4, w stores are consecutive scalars along a
// row of ws (the unit's column is the fastest thread index): no bank conflicts.
//
// Column layout of a tile. Plain (EPI 0/1): local column c is weight row n0 + c. SwiGLU (EPI 2): the weight holds
// 2I rows (gate 0..I-1, up I..2I-1) and a tile covers TILE_N / 2 outputs; in each group of 4 local columns
// 4q..4q+3 sit gate(i), gate(i+1), up(i), up(i+1) with i = i0 + 2q, so the thread that owns the vec4 owns both
// halves of two outputs and no intermediate is written.
//
// Bindings: 0 w (weights of this buffer, N rows), 1 s (scales; unused for QFMT 2/3), 2 x [T, X_STRIDE] f32
// (read as vec4: X_STRIDE and K multiples of 4), 3 y [T, Y_STRIDE] f32, 4 bias f32 (EPI 0/1: bias[ROW_OFFSET + n],
// i.e. the whole tensor's bias; EPI 2: bias[r] for weight row r of this buffer), 5 meta: row_meta[0] = T.
// Grid: (ceil(columns / tile columns), ceil(T_dispatched / TILE_T)); tiles whose rows start at or past T exit.

//#include activation
//#include gemm_epilogue

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> row_meta: array<u32>;

override N: u32;                  // weight rows in this buffer (SwiGLU: 2I)
override K: u32;                  // inputs (logical; q3 rows are stored padded to a multiple of 40)
override QFMT: u32 = 0u;          // 0 q4f16_1, 1 q4f32_1, 2 q0f16, 3 q0f32, 4 q3f16_1
override EPI: u32 = 0u;           // 0 store, 1 residual add (y +=), 2 SwiGLU, 3/4 GELU erf/tanh, 5 GeGLU
override HAS_BIAS: bool = false;
override ROW_OFFSET: u32 = 0u;    // first output column of y written by this buffer
override Y_STRIDE: u32;           // floats per row of y
override X_STRIDE: u32 = K;       // floats per row of x (multiple of 4)
override TILE_T: u32 = 64u;       // tokens per tile: 64 or 128
override TILE_N: u32 = 64u;       // weight rows per tile: 64 or 128
override STAGES: u32 = 2u;        // workgroup-memory buffers: 2 = one barrier per step, 1 = half the memory

// Derived (never set from the host).
override TM: u32 = TILE_T / 16u;                      // micro-tile rows per thread
override TNV: u32 = TILE_N / 64u;                     // micro-tile vec4 columns per thread (TN / 4)
override IS_Q3: bool = QFMT == 4u;
override HG: u32 = select(16u, 20u, IS_Q3);           // k values per step (half a quantization group)
override HGV: u32 = HG / 4u;                          // vec4 per x-tile row
override UNIT: u32 = select(8u, 10u, IS_Q3);          // k values per dequantization unit (2 units per step)
override WPU: u32 = select(select(1u, 4u, QFMT == 2u), 8u, QFMT == 3u);  // words per unit
override G3: u32 = (K + 39u) / 40u;                   // q3 groups per row
override WROW: u32 = select(select(select(K / 8u, K / 2u, QFMT == 2u), K, QFMT == 3u), 4u * G3, IS_Q3);
override SROW: u32 = select(K / 32u, G3, IS_Q3);      // scales per row
override NSTEPS: u32 = select(K / 16u, 2u * G3, IS_Q3);
override XS_LEN: u32 = TILE_T * HGV;                  // vec4 in xs
override WS_LEN: u32 = HG * TILE_N / 4u;              // vec4 in ws
override XV: u32 = (XS_LEN + 255u) / 256u;            // x-tile vec4 per thread
override IHALF: u32 = N / 2u;                         // SwiGLU: I

override XS_ALL: u32 = XS_LEN * STAGES;
override WS_ALL: u32 = WS_LEN * STAGES;
var<workgroup> xs: array<vec4<f32>, XS_ALL>;  // [STAGES][TILE_T][HG / 4]
var<workgroup> ws: array<vec4<f32>, WS_ALL>;  // [STAGES][HG][TILE_N / 4]

// Registers of the prefetch pipeline and the accumulators.
var<private> xr: array<vec4<f32>, 3>;   // x-tile vec4s this thread moves (XV <= 3)
var<private> wr: array<u32, 8>;         // raw words of this thread's unit (WPU <= 8)
var<private> sr: u32;                   // raw scale word of the unit
// Accumulators c<i><g>: micro-tile row i (0..TM-1), vec4 column group g (0..TNV-1).
var<private> c00: vec4<f32>;
var<private> c10: vec4<f32>;
var<private> c20: vec4<f32>;
var<private> c30: vec4<f32>;
var<private> c40: vec4<f32>;
var<private> c50: vec4<f32>;
var<private> c60: vec4<f32>;
var<private> c70: vec4<f32>;
var<private> c01: vec4<f32>;
var<private> c11: vec4<f32>;
var<private> c21: vec4<f32>;
var<private> c31: vec4<f32>;
var<private> c41: vec4<f32>;
var<private> c51: vec4<f32>;
var<private> c61: vec4<f32>;
var<private> c71: vec4<f32>;

// Weight row of local column c in the tile starting at n0 (plain) or output i0 (SwiGLU); N when out of range.
fn weightRow(c: u32, tile: u32) -> u32 {
  if (epiGated(EPI)) {
    let i = tile * (TILE_N / 2u) + 2u * (c / 4u) + (c & 1u);
    if (i >= IHALF) { return N; }
    return select(i, IHALF + i, (c & 2u) != 0u);
  }
  return min(tile * TILE_N + c, N);
}

fn loadStep(step: u32, l: u32, t0: u32, T: u32, tile_n: u32) {
  let k0 = step * HG;
  for (var p = 0u; p < XV; p++) {
    let v = l + p * 256u;
    var val = vec4<f32>(0.0);
    if (v < XS_LEN) {
      let t = t0 + v / HGV;
      let k = k0 + (v % HGV) * 4u;
      if (t < T && k < K) { val = x[(t * X_STRIDE + k) / 4u]; }
    }
    xr[p] = val;
  }
  if (l < 2u * TILE_N) {
    let row = weightRow(l % TILE_N, tile_n);
    if (row < N) {
      let base = row * WROW + step * 2u * WPU + (l / TILE_N) * WPU;
      for (var j = 0u; j < WPU; j++) { wr[j] = w[base + j]; }
      if (QFMT <= 1u || IS_Q3) {
        let si = row * SROW + step / 2u;
        sr = s[select(si / 2u, si, QFMT == 1u)];
      }
    }
  }
}

fn scaleValue(row: u32, step: u32) -> f32 {
  if (QFMT == 1u) { return bitcast<f32>(sr); }
  let si = row * SROW + step / 2u;
  return unpack2x16float(sr)[si & 1u];
}

// ws element (k, c) as a scalar: vec4 index k * TILE_N / 4 + c / 4, lane c % 4.
fn putW(buf: u32, k: u32, c: u32, v: f32) {
  ws[buf * WS_LEN + k * (TILE_N / 4u) + c / 4u][c & 3u] = v;
}

fn storeStep(step: u32, buf: u32, l: u32, tile_n: u32) {
  for (var p = 0u; p < XV; p++) {
    let v = l + p * 256u;
    if (v < XS_LEN) { xs[buf * XS_LEN + v] = xr[p]; }
  }
  if (l < 2u * TILE_N) {
    let c = l % TILE_N;
    let k0 = (l / TILE_N) * UNIT;
    let row = weightRow(c, tile_n);
    if (row >= N) {
      for (var e = 0u; e < UNIT; e++) { putW(buf, k0 + e, c, 0.0); }
    } else if (QFMT <= 1u) {
      let sc = scaleValue(row, step);
      for (var e = 0u; e < 8u; e++) { putW(buf, k0 + e, c, (f32((wr[0] >> (4u * e)) & 15u) - 7.0) * sc); }
    } else if (IS_Q3) {
      let sc = scaleValue(row, step);
      for (var e = 0u; e < 10u; e++) { putW(buf, k0 + e, c, (f32((wr[0] >> (3u * e)) & 7u) - 3.0) * sc); }
    } else if (QFMT == 2u) {
      for (var j = 0u; j < 4u; j++) {
        let h = unpack2x16float(wr[j]);
        putW(buf, k0 + 2u * j, c, h.x);
        putW(buf, k0 + 2u * j + 1u, c, h.y);
      }
    } else {
      for (var j = 0u; j < 8u; j++) { putW(buf, k0 + j, c, bitcast<f32>(wr[j])); }
    }
  }
}

// c_ig += x[ty * TM + i, k] * w[k, 64 g + 4 tx .. +3] over the HG values of the step in workgroup memory.
// Written out (no loops over the micro-tile, no arrays) so every accumulator is a register on every compiler.
fn fma4(a: vec4<f32>, b0: vec4<f32>, b1: vec4<f32>, b2: vec4<f32>, b3: vec4<f32>, c: vec4<f32>) -> vec4<f32> {
  return fma(vec4<f32>(a.w), b3, fma(vec4<f32>(a.z), b2, fma(vec4<f32>(a.y), b1, fma(vec4<f32>(a.x), b0, c))));
}

fn computeStep(tx: u32, ty: u32, buf: u32) {
  let wrow = TILE_N / 4u;  // vec4 per k row of ws
  for (var kb = 0u; kb < HGV; kb++) {
    let r = buf * WS_LEN + kb * 4u * wrow + tx;
    let b00 = ws[r];
    let b10 = ws[r + wrow];
    let b20 = ws[r + 2u * wrow];
    let b30 = ws[r + 3u * wrow];
    var b01 = vec4<f32>(0.0);
    var b11 = vec4<f32>(0.0);
    var b21 = vec4<f32>(0.0);
    var b31 = vec4<f32>(0.0);
    if (TNV == 2u) {
      b01 = ws[r + 16u];
      b11 = ws[r + wrow + 16u];
      b21 = ws[r + 2u * wrow + 16u];
      b31 = ws[r + 3u * wrow + 16u];
    }
    let xa = buf * XS_LEN + ty * TM * HGV + kb;
    {
      let a0 = xs[xa];
      let a1 = xs[xa + HGV];
      let a2 = xs[xa + 2u * HGV];
      let a3 = xs[xa + 3u * HGV];
      c00 = fma4(a0, b00, b10, b20, b30, c00);
      c10 = fma4(a1, b00, b10, b20, b30, c10);
      c20 = fma4(a2, b00, b10, b20, b30, c20);
      c30 = fma4(a3, b00, b10, b20, b30, c30);
      if (TNV == 2u) {
      c01 = fma4(a0, b01, b11, b21, b31, c01);
      c11 = fma4(a1, b01, b11, b21, b31, c11);
      c21 = fma4(a2, b01, b11, b21, b31, c21);
      c31 = fma4(a3, b01, b11, b21, b31, c31);
      }
    }
    if (TM == 8u) {
      let a4 = xs[xa + 4u * HGV];
      let a5 = xs[xa + 5u * HGV];
      let a6 = xs[xa + 6u * HGV];
      let a7 = xs[xa + 7u * HGV];
      c40 = fma4(a4, b00, b10, b20, b30, c40);
      c50 = fma4(a5, b00, b10, b20, b30, c50);
      c60 = fma4(a6, b00, b10, b20, b30, c60);
      c70 = fma4(a7, b00, b10, b20, b30, c70);
      if (TNV == 2u) {
      c41 = fma4(a4, b01, b11, b21, b31, c41);
      c51 = fma4(a5, b01, b11, b21, b31, c51);
      c61 = fma4(a6, b01, b11, b21, b31, c61);
      c71 = fma4(a7, b01, b11, b21, b31, c71);
      }
    }
  }
}

// Writes accumulator (row i, group g) of this thread: 4 outputs (plain) or 2 (SwiGLU: gate, gate, up, up).
fn outVec(i: u32, g: u32, v: vec4<f32>, tx: u32, ty: u32, t0: u32, T: u32, tile_n: u32) {
  let t = t0 + ty * TM + i;
  let c = g * 64u + tx * 4u;
  if (t < T) { storeSums(t, v, tile_n * TILE_N + c, tile_n * (TILE_N / 2u) + 2u * (c / 4u)); }
}

fn epilogue(tx: u32, ty: u32, t0: u32, T: u32, tile_n: u32) {
  outVec(0u, 0u, c00, tx, ty, t0, T, tile_n);
  outVec(1u, 0u, c10, tx, ty, t0, T, tile_n);
  outVec(2u, 0u, c20, tx, ty, t0, T, tile_n);
  outVec(3u, 0u, c30, tx, ty, t0, T, tile_n);
  if (TNV == 2u) {
    outVec(0u, 1u, c01, tx, ty, t0, T, tile_n);
    outVec(1u, 1u, c11, tx, ty, t0, T, tile_n);
    outVec(2u, 1u, c21, tx, ty, t0, T, tile_n);
    outVec(3u, 1u, c31, tx, ty, t0, T, tile_n);
  }
  if (TM == 8u) {
    outVec(4u, 0u, c40, tx, ty, t0, T, tile_n);
    outVec(5u, 0u, c50, tx, ty, t0, T, tile_n);
    outVec(6u, 0u, c60, tx, ty, t0, T, tile_n);
    outVec(7u, 0u, c70, tx, ty, t0, T, tile_n);
    if (TNV == 2u) {
      outVec(4u, 1u, c41, tx, ty, t0, T, tile_n);
      outVec(5u, 1u, c51, tx, ty, t0, T, tile_n);
      outVec(6u, 1u, c61, tx, ty, t0, T, tile_n);
      outVec(7u, 1u, c71, tx, ty, t0, T, tile_n);
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let T = row_meta[0];
  let t0 = wg.y * TILE_T;
  if (t0 >= T) { return; }
  let tx = l % 16u;
  let ty = l / 16u;

  loadStep(0u, l, t0, T, wg.x);
  storeStep(0u, 0u, l, wg.x);
  workgroupBarrier();
  // Two stages: step s computes from buffer s % 2 while s + 1 is stored into the other; the barrier that ends
  // step s - 1 already guarantees nobody still reads that one. One stage: a second barrier instead.
  for (var step = 0u; step < NSTEPS; step++) {
    let more = step + 1u < NSTEPS;
    if (more) { loadStep(step + 1u, l, t0, T, wg.x); }
    computeStep(tx, ty, select(0u, step & 1u, STAGES == 2u));
    if (STAGES == 1u) { workgroupBarrier(); }
    if (more) { storeStep(step + 1u, select(0u, (step + 1u) & 1u, STAGES == 2u), l, wg.x); }
    workgroupBarrier();
  }
  epilogue(tx, ty, t0, T, wg.x);
}
