// Batched decode projection as a small-M GEMM in workgroup-memory tiles: y[b, n] = epilogue( Σ_k W[n, k] · x̂[b, k] )
// for the first meta[0] activation rows, q4 weights (QFMT 0 q4f16_1, 1 q4f32_1), x̂ normalised and quantized per
// 32-element group by gemv_quant.wgsl (one or two int8 digits and a step per group; the row layout is in that kernel's
// header; its zero points are not needed here). It is the scheme of the prefill GEMM (gemm_q8_tile.wgsl) cut to
// decode's 4 to 32 rows, with K split inside the workgroup so that a matrix of 2048 rows still fills the GPU.
// A workgroup owns R = 4·MB activation rows × NW weight rows and splits K into KS slices; step t covers the KS groups
// t·KS .. t·KS + KS - 1, one per slice. Per step the workgroup loads the step's x̂ digits and steps and the weight
// codes and scales into workgroup memory once (the codes expanded to int8 with 7 subtracted, so no zero point), and
// thread (ab, wb, s) multiplies its slice's group for activation rows 4·ab .. +3 × weight columns 4·wb .. +3: 16 sums
// of 8 dot4I8Packed per digit from 16 vec4 reads of workgroup memory per digit, each scaled (x̂ step × weight scale)
// into an f32 accumulator. The next step's global loads sit in registers while the current one computes (two stages,
// one barrier per step). After K, the slices' sums meet in workgroup memory and are added in slice order, and the
// epilogue (gemm_epilogue.wgsl: store, residual, bias, GELU, SwiGLU / GeGLU) writes each output.
// Row b's sums depend on K and KS only, not on MB, NW, the tile b falls in or the active count: the host picks MB per
// step from the active rows (the smallest tile that holds them), and the bits stay the same.
// Workgroup memory (vec4<u32>, one array): per stage [KS slices][x̂: DIGITS × 8 words × MB row blocks, MB pad]
// [weights: 8 words × WB column blocks, WPAD pad] then [KS][MB] x̂ steps and [KS][WB] weight scales (f32 bits); a
// vec4 holds one word of 4 consecutive rows (or columns), so each compute read serves 4 of a thread's 16 sums, and
// the pads spread the loading threads' scalar stores over the banks. The slices' partial sums reuse the stages.
// Column layout (as gemm_q8_tile.wgsl): plain epilogues, column c is weight row tile · NW + c; gated (EPI 2 / 5), the
// tile covers NW / 2 outputs, and a thread's 4 columns are gate(i), gate(i + 1), up(i), up(i + 1), i = tile·NW/2 + 2·wb.
// Bindings: 0 w (q4 codes by 16 bytes), 1 s (scales), 2 xq (x̂ by 16 bytes), 3 y, 4 xw (x̂ by word: the steps), 5 bias,
// 6 meta (meta[0] = active rows). Grid: (ceil(active / R), ceil(N / NW)).
//#include activation
//#include gemm_epilogue
//#include q4_group

override QFMT: u32 = 0u;
override N: u32 = 1u;           // weight rows in this buffer (chunk); gated: 2 · outputs
override K: u32 = 32u;          // input features (multiple of 32)
override EPI: u32 = 0u;
override HAS_BIAS: bool = false;
override ROW_OFFSET: u32 = 0u;
override Y_STRIDE: u32 = 1u;
override DIGITS: u32 = 2u;      // 1 or 2
override XQ_ROW: u32 = 4u;      // u32s per row of x̂ (kernels::quantRowWords, a multiple of 4)
override XQ_ROWS: u32 = 1u;     // rows the x̂ buffer holds (loads of rows past it are clamped into it)
override MB: u32 = 8u;          // blocks of 4 activation rows per tile
override NW: u32 = 16u;         // weight rows per tile: a multiple of 16 (XSM off: of 4)
override KS: u32 = 8u;          // K slices
override WPAD: u32 = 1u;        // vec4s after each slice's weight block
override WG: u32 = 256u;        // MB · NW / 4 · KS
override XSM: bool = true;      // x̂ staged in workgroup memory; false: each thread loads its 4 rows' x̂ and steps
                                // from global memory at compute time (NW may then be 4 or 8: more slices fit)

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> xw: array<u32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read> meta_b: array<u32>;

override R: u32 = 4u * MB;                   // activation rows per tile
override WB: u32 = NW / 4u;                  // weight column blocks of 4
override NCELL: u32 = MB * WB;               // thread l: cell l % NCELL (ab = cell % MB, wb = cell / MB), slice l / NCELL
override XSB: u32 = select(0u, DIGITS * 8u * MB + MB, XSM);   // one slice of the x̂ stage
override WSB: u32 = 8u * WB + WPAD;          // one slice of the weight stage
override XS_N: u32 = KS * XSB;
override WS_N: u32 = KS * WSB;
override XSC_N: u32 = select(0u, KS * MB, XSM);
override STAGE: u32 = XS_N + WS_N + XSC_N + KS * WB;
override SMEM: u32 = max(2u * STAGE, 4u * WG);   // the stages, or the partial sums (16 floats a thread)
var<workgroup> sm: array<vec4<u32>, SMEM>;

// Loads per step: (row, slice, digit) items of 2 x̂ vec4s, (column, slice) items of a weight vec4 and its scale,
// (row, slice) items of an x̂ step; a thread takes items l, l + WG, ... (at most 2, 4 and 1 for NW ≥ 16).
override XITEMS: u32 = select(0u, R * KS * DIGITS, XSM);
override WITEMS: u32 = NW * KS;
override SITEMS: u32 = select(0u, R * KS, XSM);
override XPT: u32 = (XITEMS + WG - 1u) / WG;
override WPT: u32 = (WITEMS + WG - 1u) / WG;
override SPT: u32 = (SITEMS + WG - 1u) / WG;

fn groupsPerRow() -> u32 { return K / 32u; }

// Weight row of local column c (0 .. NW - 1) of column tile `tile`, clamped into the matrix (outputs past it are
// skipped by the epilogue).
fn weightRow(tile: u32, c: u32) -> u32 {
  if (epiGated(EPI)) {
    let h = N / 2u;
    let i = min(tile * (NW / 2u) + 2u * (c / 4u) + (c % 2u), max(h, 1u) - 1u);
    return select(i, i + h, (c % 4u) >= 2u);
  }
  return min(tile * NW + c, N - 1u);
}

// q4 codes (0..15) of 4 bytes minus 7, as 4 signed bytes: (128 + c − 7) never borrows, and ^ 0x80 wraps it back.
fn minus7(v: u32) -> u32 { return ((v | 0x80808080u) - 0x07070707u) ^ 0x80808080u; }

// The next step's raw loads, held in registers while the current step computes.
var<private> xr: array<vec4<u32>, 4>;
var<private> wr: array<vec4<u32>, 4>;
var<private> wsr: array<f32, 4>;
var<private> xsr: f32;

fn load(t: u32, l: u32, b0: u32, tile: u32) {
  let G = groupsPerRow();
  for (var it = 0u; it < XPT; it++) {
    let i = l + it * WG;
    let g = t * KS + (i / R) % KS;
    if (i < XITEMS && g < G) {
      let b = min(b0 + i % R, XQ_ROWS - 1u);
      let v = (b * XQ_ROW + ((i / (R * KS)) * G + g) * 8u) / 4u;
      xr[2u * it] = xq[v];
      xr[2u * it + 1u] = xq[v + 1u];
    }
  }
  for (var it = 0u; it < WPT; it++) {
    let i = l + it * WG;
    let g = t * KS + i % KS;
    if (i < WITEMS && g < G) {
      let row = weightRow(tile, i / KS);
      wr[it] = w[row * G + g];
      wsr[it] = scaleOf(row, g);
    }
  }
  if (SPT > 0u) {
    let g = t * KS + l / R;
    if (l < SITEMS && g < G) {
      let b = min(b0 + l % R, XQ_ROWS - 1u);
      xsr = bitcast<f32>(xw[b * XQ_ROW + DIGITS * G * 9u + g]);
      if (DIGITS == 2u) { xsr = xsr / 254.0; }
    }
  }
}

fn store(st: u32, l: u32) {
  let base = st * STAGE;
  for (var it = 0u; it < XPT; it++) {
    let i = l + it * WG;
    if (i < XITEMS) {
      let r = i % R;
      let o = base + ((i / R) % KS) * XSB + (i / (R * KS)) * 8u * MB + r / 4u;
      let q = r % 4u;
      let a = xr[2u * it];
      let c = xr[2u * it + 1u];
      sm[o][q] = a.x;
      sm[o + MB][q] = a.y;
      sm[o + 2u * MB][q] = a.z;
      sm[o + 3u * MB][q] = a.w;
      sm[o + 4u * MB][q] = c.x;
      sm[o + 5u * MB][q] = c.y;
      sm[o + 6u * MB][q] = c.z;
      sm[o + 7u * MB][q] = c.w;
    }
  }
  for (var it = 0u; it < WPT; it++) {
    let i = l + it * WG;
    if (i < WITEMS) {
      let sl = i % KS;
      let c = i / KS;
      let o = base + XS_N + sl * WSB + c / 4u;
      let q = c % 4u;
      let m = vec4<u32>(0x0F0F0F0Fu);
      let lo = wr[it] & m;
      let hi = (wr[it] >> vec4<u32>(4u)) & m;
      // Word j pairs with x̂'s word j: low then high nibbles of each code word (gemv_quant.wgsl's order).
      sm[o][q] = minus7(lo.x);
      sm[o + WB][q] = minus7(hi.x);
      sm[o + 2u * WB][q] = minus7(lo.y);
      sm[o + 3u * WB][q] = minus7(hi.y);
      sm[o + 4u * WB][q] = minus7(lo.z);
      sm[o + 5u * WB][q] = minus7(hi.z);
      sm[o + 6u * WB][q] = minus7(lo.w);
      sm[o + 7u * WB][q] = minus7(hi.w);
      sm[base + XS_N + WS_N + XSC_N + sl * WB + c / 4u][q] = bitcast<u32>(wsr[it]);
    }
  }
  if (SPT > 0u && l < SITEMS) {
    let r = l % R;
    sm[base + XS_N + WS_N + (l / R) * MB + r / 4u][r % 4u] = bitcast<u32>(xsr);
  }
}

// Σ over a group's 8 words of 4 activation rows × 4 weight columns: t<m> is row m's 4 sums.
struct Sums { t0: vec4<i32>, t1: vec4<i32>, t2: vec4<i32>, t3: vec4<i32> }

fn digitSums(xo: u32, wo: u32) -> Sums {
  var r = Sums(vec4<i32>(0), vec4<i32>(0), vec4<i32>(0), vec4<i32>(0));
  for (var j = 0u; j < 8u; j++) {
    let a = sm[xo + j * MB];
    let b = sm[wo + j * WB];
    r.t0 += vec4<i32>(dot4I8Packed(a.x, b.x), dot4I8Packed(a.x, b.y), dot4I8Packed(a.x, b.z), dot4I8Packed(a.x, b.w));
    r.t1 += vec4<i32>(dot4I8Packed(a.y, b.x), dot4I8Packed(a.y, b.y), dot4I8Packed(a.y, b.z), dot4I8Packed(a.y, b.w));
    r.t2 += vec4<i32>(dot4I8Packed(a.z, b.x), dot4I8Packed(a.z, b.y), dot4I8Packed(a.z, b.z), dot4I8Packed(a.z, b.w));
    r.t3 += vec4<i32>(dot4I8Packed(a.w, b.x), dot4I8Packed(a.w, b.y), dot4I8Packed(a.w, b.z), dot4I8Packed(a.w, b.w));
  }
  return r;
}

var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;

// XSM off: digit e of group g of 4 rows from global memory, by word j: a.x .. a.w are the rows' word j.
struct Rows4 { q: array<vec4<u32>, 8> }
fn globalDigits(b0: u32, e: u32, g: u32) -> Rows4 {
  var r: Rows4;
  let G = groupsPerRow();
  var lo: array<vec4<u32>, 4>;
  var hi: array<vec4<u32>, 4>;
  for (var m = 0u; m < 4u; m++) {
    let v = (min(b0 + m, XQ_ROWS - 1u) * XQ_ROW + (e * G + g) * 8u) / 4u;
    lo[m] = xq[v];
    hi[m] = xq[v + 1u];
  }
  for (var j = 0u; j < 4u; j++) {
    r.q[j] = vec4<u32>(lo[0][j], lo[1][j], lo[2][j], lo[3][j]);
    r.q[4u + j] = vec4<u32>(hi[0][j], hi[1][j], hi[2][j], hi[3][j]);
  }
  return r;
}

fn globalSums(x: Rows4, wo: u32) -> Sums {
  var r = Sums(vec4<i32>(0), vec4<i32>(0), vec4<i32>(0), vec4<i32>(0));
  for (var j = 0u; j < 8u; j++) {
    let a = x.q[j];
    let b = sm[wo + j * WB];
    r.t0 += vec4<i32>(dot4I8Packed(a.x, b.x), dot4I8Packed(a.x, b.y), dot4I8Packed(a.x, b.z), dot4I8Packed(a.x, b.w));
    r.t1 += vec4<i32>(dot4I8Packed(a.y, b.x), dot4I8Packed(a.y, b.y), dot4I8Packed(a.y, b.z), dot4I8Packed(a.y, b.w));
    r.t2 += vec4<i32>(dot4I8Packed(a.z, b.x), dot4I8Packed(a.z, b.y), dot4I8Packed(a.z, b.z), dot4I8Packed(a.z, b.w));
    r.t3 += vec4<i32>(dot4I8Packed(a.w, b.x), dot4I8Packed(a.w, b.y), dot4I8Packed(a.w, b.z), dot4I8Packed(a.w, b.w));
  }
  return r;
}

fn compute(st: u32, t: u32, ab: u32, wb: u32, sl: u32, b0: u32) {
  let g = t * KS + sl;
  if (g >= groupsPerRow()) { return; }
  let base = st * STAGE;
  let xo = base + sl * XSB + ab;
  let wo = base + XS_N + sl * WSB + wb;
  var r: Sums;
  var sx: vec4<f32>;
  if (XSM) {
    r = digitSums(xo, wo);
    if (DIGITS == 2u) {
      let r1 = digitSums(xo + 8u * MB, wo);
      r = Sums(r.t0 * 254 + r1.t0, r.t1 * 254 + r1.t1, r.t2 * 254 + r1.t2, r.t3 * 254 + r1.t3);
    }
    sx = bitcast<vec4<f32>>(sm[base + XS_N + WS_N + sl * MB + ab]);
  } else {
    let rb = b0 + 4u * ab;
    r = globalSums(globalDigits(rb, 0u, g), wo);
    if (DIGITS == 2u) {
      let r1 = globalSums(globalDigits(rb, 1u, g), wo);
      r = Sums(r.t0 * 254 + r1.t0, r.t1 * 254 + r1.t1, r.t2 * 254 + r1.t2, r.t3 * 254 + r1.t3);
    }
    let G = groupsPerRow();
    for (var m = 0u; m < 4u; m++) {
      sx[m] = bitcast<f32>(xw[min(rb + m, XQ_ROWS - 1u) * XQ_ROW + DIGITS * G * 9u + g]);
    }
    if (DIGITS == 2u) { sx = sx / 254.0; }
  }
  let sw = bitcast<vec4<f32>>(sm[base + XS_N + WS_N + XSC_N + sl * WB + wb]);
  c0 = fma(vec4<f32>(r.t0), sx.x * sw, c0);
  c1 = fma(vec4<f32>(r.t1), sx.y * sw, c1);
  c2 = fma(vec4<f32>(r.t2), sx.z * sw, c2);
  c3 = fma(vec4<f32>(r.t3), sx.w * sw, c3);
}

// Partial sum word (slice k, sum i = 4·m + n, cell): [k][i][cell], consecutive cells in consecutive words.
fn redAt(k: u32, i: u32, cell: u32) -> u32 { return (k * 16u + i) * NCELL + cell; }
fn redPut(wd: u32, v: f32) { sm[wd / 4u][wd % 4u] = bitcast<u32>(v); }
fn redGet(wd: u32) -> f32 { return bitcast<f32>(sm[wd / 4u][wd % 4u]); }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let nact = meta_b[0];
  let b0 = wg.x * R;
  if (b0 >= nact) { return; }
  let cell = l % NCELL;
  let sl = l / NCELL;
  let ab = cell % MB;
  let wb = cell / MB;
  let steps = (groupsPerRow() + KS - 1u) / KS;
  load(0u, l, b0, wg.y);
  store(0u, l);
  workgroupBarrier();
  // Step t computes from stage t % 2 while step t + 1 is stored into the other; the barrier that ended step t - 1
  // guarantees nobody still reads that one.
  for (var t = 0u; t < steps; t++) {
    let more = t + 1u < steps;
    if (more) { load(t + 1u, l, b0, wg.y); }
    compute(t & 1u, t, ab, wb, sl, b0);
    if (more) { store((t + 1u) & 1u, l); }
    workgroupBarrier();
  }
  // Every thread has finished its last compute (the barrier above), so the stages can hold the partial sums.
  for (var n = 0u; n < 4u; n++) {
    redPut(redAt(sl, n, cell), c0[n]);
    redPut(redAt(sl, 4u + n, cell), c1[n]);
    redPut(redAt(sl, 8u + n, cell), c2[n]);
    redPut(redAt(sl, 12u + n, cell), c3[n]);
  }
  workgroupBarrier();
  // Output e: row 4·ab + m (m = e / NCELL) of cell e % NCELL's 4 columns, its slices added in order.
  for (var e = l; e < 4u * NCELL; e += WG) {
    let oc = e % NCELL;
    let m = e / NCELL;
    var v = vec4<f32>(0.0);
    for (var k = 0u; k < KS; k++) {
      v += vec4<f32>(redGet(redAt(k, 4u * m, oc)), redGet(redAt(k, 4u * m + 1u, oc)), redGet(redAt(k, 4u * m + 2u, oc)),
                     redGet(redAt(k, 4u * m + 3u, oc)));
    }
    let b = b0 + 4u * (oc % MB) + m;
    let owb = oc / MB;
    if (b < nact) { storeSums(b, v, wg.y * NW + 4u * owb, wg.y * (NW / 2u) + 2u * owb); }
  }
}
