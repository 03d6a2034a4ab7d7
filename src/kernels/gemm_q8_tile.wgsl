// Prefill linear layer on the packed int8 dot product: y[t, ROW_OFFSET + c] = epilogue( Σ_k x̂[t, k] · W[n, k] ) for
// the T = meta[0] tokens of a prefill chunk, q4 weights (QFMT 0 q4f16_1, 1 q4f32_1). x̂ is x quantized per 32-element
// group by gemv_quant.wgsl (one or two int8 digits and a step per group; the row layout is in that kernel's header),
// the scheme llama.cpp's MMQ kernels use on GPUs without int8 matrix units. The f32 GEMM (gemm.wgsl) stays the path
// where the packed dot product is absent, and the accuracy reference.  Tiling: one workgroup of 256 threads (16 × 16)
// computes a TILE_T-token (64 or 128) × 64-weight-row tile. Thread (tx, ty) owns tokens 4·ty .. +3 (and 64 + 4·ty .. +3
// with TILE_T 128) and weight columns 4·tx .. +3 of the tile: 16 (32) outputs, each summed per group in i32 by 8 packed
// dot products per digit, then scaled (x̂ step × weight scale) into an f32 accumulator. The K loop walks one
// quantization group (32 values) per step:   - xs [STAGE][DIGITS][8 words][TILE_T / 4] vec4<u32>: word j of the group's
// digits for 4 consecutive tokens (one     vec4 read serves 4 of the thread's tokens);   - ws [STAGE][8 words][16]
// vec4<u32>: word j of 4 consecutive weight rows, the q4 codes expanded to int8 once per     tile (low nibbles, then
// high, as gemv_quant packs x̂'s elements) with 7 subtracted, so no zero point is needed;   - xsc [STAGE][TILE_T / 4] /
// wsc [STAGE][16] vec4<f32>: the tokens' steps and the weight rows' scales. Each step issues the next group's global
// loads into registers before its dot products and stores them into the other stage after them: one barrier per step.
// Per group and digit a thread does 128 packed dot products for 16 vec4 workgroup reads (TILE_T 128: 256 for 24). Every
// workgroup-memory access is conflict-free: stores go to consecutive words (the token or weight row is the fastest
// thread index), reads broadcast (xs: two distinct addresses per 32 threads) or hit 16 consecutive vec4 (ws).  Column
// layout (as gemm.wgsl): plain epilogues, local column c is weight row n0 + c; gated (EPI 2 / 5), the tile covers 32
// outputs, and a thread's 4 columns are gate(i), gate(i + 1), up(i), up(i + 1) with i = i0 + 2·tx.  Bindings: 0 w (q4
// codes of this buffer's N rows, by 16 bytes), 1 s (scales), 2 xq (x̂ rows by 16 bytes), 3 y (f32 [T, Y_STRIDE]), 4 xw
// (the x̂ buffer by word: the steps), 5 bias (EPI 0/1: bias[ROW_OFFSET + n]; gated: bias[r] for weight row r), 6 meta
// (meta[0] = T). Grid: (ceil(columns / 64 or 32), ceil(T / TILE_T)).
//#include activation
//#include gemm_epilogue
//#include q4_group

override QFMT: u32 = 0u;
override N: u32 = 1u;          // weight rows in this buffer (gated: 2I)
override K: u32 = 32u;         // inputs (multiple of 32)
override EPI: u32 = 0u;
override HAS_BIAS: bool = false;
override ROW_OFFSET: u32 = 0u;
override Y_STRIDE: u32 = 1u;
override DIGITS: u32 = 1u;     // 1 or 2
override XQ_ROW: u32 = 4u;     // u32s per x̂ row (kernels::quantRowWords)
override XQ_ROWS: u32 = 1u;    // rows the x̂ buffer holds (loads of rows past T are clamped into it)
override TILE_T: u32 = 64u;    // tokens per tile: 64 or 128

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> xw: array<u32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read> meta_b: array<u32>;

override TB: u32 = TILE_T / 4u;               // token blocks of 4 in a tile
override XS_STAGE: u32 = DIGITS * 8u * TB;    // vec4 per stage of xs
override XS_ALL: u32 = 2u * XS_STAGE;
override XSC_ALL: u32 = 2u * TB;
var<workgroup> xs: array<vec4<u32>, XS_ALL>;
var<workgroup> ws: array<vec4<u32>, 256>;      // [2][8][16]
var<workgroup> xsc: array<vec4<f32>, XSC_ALL>; // [2][TB]
var<workgroup> wsc: array<vec4<f32>, 32>;      // [2][16]

fn groupsPerRow() -> u32 { return K / 32u; }

// Weight row of local column c (0..63) of column tile `tile`, clamped into the matrix (outputs past it are skipped).
fn weightRow(tile: u32, c: u32) -> u32 {
  if (epiGated(EPI)) {
    let h = N / 2u;
    let i = min(tile * 32u + 2u * (c / 4u) + (c % 2u), max(h, 1u) - 1u);
    return select(i, i + h, (c % 4u) >= 2u);
  }
  return min(tile * 64u + c, N - 1u);
}

// q4 codes (0..15) of 4 bytes minus 7, as 4 signed bytes: (128 + c − 7) never borrows, and ^ 0x80 wraps it back.
fn minus7(v: u32) -> u32 { return ((v | 0x80808080u) - 0x07070707u) ^ 0x80808080u; }

// The next group's raw loads, held in registers across a step.
var<private> xr: array<vec4<u32>, 2>;  // x̂ digit vec4s (threads < 2·TILE_T: digit 0; DIGITS 2: digit 1 too)
var<private> wr: vec4<u32>;            // 32 codes of one weight row (threads < 64)
var<private> wsr: f32;                 // its scale
var<private> xsr: f32;                 // an x̂ step (threads 64 .. 64 + TILE_T - 1)

fn load(g: u32, l: u32, t0: u32, tile: u32) {
  let G = groupsPerRow();
  if (l < 2u * TILE_T) {
    let t = min(t0 + l % TILE_T, XQ_ROWS - 1u);
    let h = l / TILE_T;  // which half of the group's 8 words
    for (var e = 0u; e < DIGITS; e++) { xr[e] = xq[(t * XQ_ROW + (e * G + g) * 8u) / 4u + h]; }
  }
  if (l < 64u) {
    let row = weightRow(tile, l);
    wr = w[row * G + g];
    wsr = scaleOf(row, g);
  }
  if (l >= 64u && l < 64u + TILE_T) {
    let t = min(t0 + l - 64u, XQ_ROWS - 1u);
    xsr = bitcast<f32>(xw[t * XQ_ROW + DIGITS * G * 9u + g]);
    if (DIGITS == 2u) { xsr = xsr / 254.0; }
  }
}

fn store(st: u32, l: u32) {
  if (l < 2u * TILE_T) {
    let c = l % TILE_T;
    let h = l / TILE_T;
    for (var e = 0u; e < DIGITS; e++) {
      let base = st * XS_STAGE + (e * 8u + 4u * h) * TB + c / 4u;
      xs[base][c % 4u] = xr[e].x;
      xs[base + TB][c % 4u] = xr[e].y;
      xs[base + 2u * TB][c % 4u] = xr[e].z;
      xs[base + 3u * TB][c % 4u] = xr[e].w;
    }
  }
  if (l < 64u) {  // weight row l of the tile
    let m = vec4<u32>(0x0F0F0F0Fu);
    let lo = wr & m;
    let hi = (wr >> vec4<u32>(4u)) & m;
    let base = st * 128u + l / 4u;
    ws[base][l % 4u] = minus7(lo.x);
    ws[base + 16u][l % 4u] = minus7(hi.x);
    ws[base + 32u][l % 4u] = minus7(lo.y);
    ws[base + 48u][l % 4u] = minus7(hi.y);
    ws[base + 64u][l % 4u] = minus7(lo.z);
    ws[base + 80u][l % 4u] = minus7(hi.z);
    ws[base + 96u][l % 4u] = minus7(lo.w);
    ws[base + 112u][l % 4u] = minus7(hi.w);
    wsc[st * 16u + l / 4u][l % 4u] = wsr;
  }
  if (l >= 64u && l < 64u + TILE_T) {
    let t = l - 64u;
    xsc[st * TB + t / 4u][t % 4u] = xsr;
  }
}

// Σ over the group's 8 words of 4 tokens × 4 weight rows: row m of the result is token m's 4 sums.
struct Sums { t0: vec4<i32>, t1: vec4<i32>, t2: vec4<i32>, t3: vec4<i32> }

// tb: the token block (ty, or 16 + ty for the second half of a 128-token tile).
fn digitSums(st: u32, e: u32, tx: u32, tb: u32) -> Sums {
  var r = Sums(vec4<i32>(0), vec4<i32>(0), vec4<i32>(0), vec4<i32>(0));
  for (var j = 0u; j < 8u; j++) {
    let a = xs[st * XS_STAGE + (e * 8u + j) * TB + tb];
    let b = ws[st * 128u + j * 16u + tx];
    r.t0 += vec4<i32>(dot4I8Packed(a.x, b.x), dot4I8Packed(a.x, b.y), dot4I8Packed(a.x, b.z), dot4I8Packed(a.x, b.w));
    r.t1 += vec4<i32>(dot4I8Packed(a.y, b.x), dot4I8Packed(a.y, b.y), dot4I8Packed(a.y, b.z), dot4I8Packed(a.y, b.w));
    r.t2 += vec4<i32>(dot4I8Packed(a.z, b.x), dot4I8Packed(a.z, b.y), dot4I8Packed(a.z, b.z), dot4I8Packed(a.z, b.w));
    r.t3 += vec4<i32>(dot4I8Packed(a.w, b.x), dot4I8Packed(a.w, b.y), dot4I8Packed(a.w, b.z), dot4I8Packed(a.w, b.w));
  }
  return r;
}

fn blockSums(st: u32, tx: u32, tb: u32) -> Sums {
  var r = digitSums(st, 0u, tx, tb);
  if (DIGITS == 2u) {
    let r1 = digitSums(st, 1u, tx, tb);
    r = Sums(r.t0 * 254 + r1.t0, r.t1 * 254 + r1.t1, r.t2 * 254 + r1.t2, r.t3 * 254 + r1.t3);
  }
  return r;
}

// Accumulators: token 4·ty + m in c<m>, 64 + 4·ty + m in c<4 + m> (TILE_T 128).
var<private> c0: vec4<f32>;
var<private> c1: vec4<f32>;
var<private> c2: vec4<f32>;
var<private> c3: vec4<f32>;
var<private> c4: vec4<f32>;
var<private> c5: vec4<f32>;
var<private> c6: vec4<f32>;
var<private> c7: vec4<f32>;

fn compute(st: u32, tx: u32, ty: u32) {
  let sw = wsc[st * 16u + tx];
  {
    let r = blockSums(st, tx, ty);
    let sx = xsc[st * TB + ty];
    c0 = fma(vec4<f32>(r.t0), sx.x * sw, c0);
    c1 = fma(vec4<f32>(r.t1), sx.y * sw, c1);
    c2 = fma(vec4<f32>(r.t2), sx.z * sw, c2);
    c3 = fma(vec4<f32>(r.t3), sx.w * sw, c3);
  }
  if (TILE_T == 128u) {
    let r = blockSums(st, tx, 16u + ty);
    let sx = xsc[st * TB + 16u + ty];
    c4 = fma(vec4<f32>(r.t0), sx.x * sw, c4);
    c5 = fma(vec4<f32>(r.t1), sx.y * sw, c5);
    c6 = fma(vec4<f32>(r.t2), sx.z * sw, c6);
    c7 = fma(vec4<f32>(r.t3), sx.w * sw, c7);
  }
}

// Token t's 4 sums: 4 outputs (plain) or 2 (gated: gate, gate, up, up).
fn outVec(t: u32, v: vec4<f32>, tx: u32, tile: u32, T: u32) {
  if (t < T) { storeSums(t, v, tile * 64u + 4u * tx, tile * 32u + 2u * tx); }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let T = meta_b[0];
  let t0 = wg.y * TILE_T;
  if (t0 >= T) { return; }
  let tx = l % 16u;
  let ty = l / 16u;
  let G = groupsPerRow();
  load(0u, l, t0, wg.x);
  store(0u, l);
  workgroupBarrier();
  // Step g computes from stage g % 2 while group g + 1 is stored into the other; the barrier that ended step g - 1
  // guarantees nobody still reads that one.
  for (var g = 0u; g < G; g++) {
    let more = g + 1u < G;
    if (more) { load(g + 1u, l, t0, wg.x); }
    compute(g & 1u, tx, ty);
    if (more) { store((g + 1u) & 1u, l); }
    workgroupBarrier();
  }
  let tt = t0 + 4u * ty;
  outVec(tt, c0, tx, wg.x, T);
  outVec(tt + 1u, c1, tx, wg.x, T);
  outVec(tt + 2u, c2, tx, wg.x, T);
  outVec(tt + 3u, c3, tx, wg.x, T);
  if (TILE_T == 128u) {
    outVec(tt + 64u, c4, tx, wg.x, T);
    outVec(tt + 65u, c5, tx, wg.x, T);
    outVec(tt + 66u, c6, tx, wg.x, T);
    outVec(tt + 67u, c7, tx, wg.x, T);
  }
}
