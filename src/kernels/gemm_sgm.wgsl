// Batched decode projection on subgroup matrices (Dawn's chromium_experimental_subgroup_matrix: the cooperative-
// matrix units, tensor cores on NVIDIA): y[b, n] = epilogue( Σ_k W[n, k] · x̂[b, k] ) for the first meta[0]
// activation rows, q4 weights (QFMT 0 q4f16_1, 1 q4f32_1) dequantized to f16, x̂ already normalised and stored
// as f16 by gemv_half.wgsl (XS halves a row), f32 accumulation. Needs f16 16 × 16 × 16 matrices with an f32
// result and subgroups of 32 (the host checks both).
// A workgroup's 4 subgroups are NS column groups × 4 / NS K slices: it owns 16 · NS weight rows (gated epilogues:
// 8 gate rows and their 8 up rows per column group) and MT 16-row tiles of activation rows. K goes in chunks of
// 64, chunk c to the K slice c % (4 / NS), so the slices read adjacent bytes of each weight row. Per chunk a
// subgroup dequantizes its 16 × 64 weights into workgroup memory (a lane per group of a row: 16 bytes of codes
// and the scale), then multiplies them, 16 columns at a time, with the x̂ tiles loaded straight from storage.
// The slices' partial tiles then meet in workgroup memory, summed in slice order, and the epilogue writes the
// active rows. More column groups read x̂ once for more weight rows; more slices give a small matrix more
// workgroups.
// Row b's sums depend only on K, NS and the weights (the chunks a slice takes and the order of its products are
// fixed, and a matrix product's element (m, n) reads only row m of x̂), not on MT, the tile b falls in or the
// active count, so the host picks MT per step from the active rows.
// Chunks past K (when K / 64 is not a multiple of the slices) dequantize zero scales and re-read the last chunk of
// x̂, so every subgroup runs the same trip count with no branch around the matrix operations.
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
//#include activation
//#include q4_group

override QFMT: u32 = 0u;
override N: u32 = 16u;          // weight rows in this buffer (chunk)
override K: u32 = 64u;          // input features (multiple of 64)
override EPI: u32 = 0u;
override HAS_BIAS: bool = false;
override ROW_OFFSET: u32 = 0u;
override Y_STRIDE: u32 = 1u;
override XS: u32 = 64u;         // halves per row of x̂ (at least K)
override MT: u32 = 2u;          // 16-row activation tiles: 1 or 2
override NS: u32 = 1u;          // column groups of 16 weight rows: 1, 2 or 4 (the rest of the 4 subgroups split K)

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> xh: array<f16>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read> meta_b: array<u32>;    // [0]: active rows

const SGN: u32 = 4u;            // subgroups per workgroup (of 32 invocations)
const KC: u32 = 64u;            // K per chunk
// [buffer 0/1][subgroup][weight row 16][k 64]: a subgroup's dequantized chunk, two buffers so one barrier per
// chunk separates a chunk's writes from the previous chunk's reads.
var<workgroup> wt: array<f16, 2u * SGN * 16u * KC>;
// [subgroup][tile][m 16][n 16]: the partial sums.
var<workgroup> red: array<f32, SGN * 2u * 256u>;

fn groupsPerRow() -> u32 { return K / 32u; }

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(subgroup_invocation_id) lane: u32) {
  let sid = lid / 32u;
  let KSS = SGN / NS;
  let ns = sid % NS;
  let ks = sid / NS;
  let nact = meta_b[0];
  let G = groupsPerRow();
  let gated = epiGated(EPI);
  let h = N / 2u;
  // Lane -> (row i of the tile, hf: the chunk's first or second group).
  let i = lane / 2u;
  let hf = lane % 2u;
  var row: u32;
  if (gated) {
    row = min((wid.x * NS + ns) * 8u + i % 8u, max(h, 1u) - 1u) + select(0u, h, i >= 8u);
  } else {
    row = min((wid.x * NS + ns) * 16u + i, max(N, 1u) - 1u);
  }
  var acc0 = subgroup_matrix_result<f32, 16, 16>();
  var acc1 = subgroup_matrix_result<f32, 16, 16>();
  let chunks = K / KC;
  let iters = (chunks + KSS - 1u) / KSS;
  for (var it = 0u; it < iters; it++) {
    let c = it * KSS + ks;
    let cc = min(c, chunks - 1u);
    let buf = (it % 2u) * (SGN * 16u * KC) + sid * (16u * KC);
    let g = cc * 2u + hf;
    let codes = w[row * G + g];
    let sc = select(0.0, scaleOf(row, g), c < chunks);
    let o = buf + i * KC + hf * 32u;
    for (var wd = 0u; wd < 4u; wd++) {
      let word = codes[wd];
      for (var j = 0u; j < 8u; j++) {
        wt[o + wd * 8u + j] = f16((f32((word >> (4u * j)) & 15u) - 7.0) * sc);
      }
    }
    workgroupBarrier();
    let xo = cc * KC;
    for (var kk = 0u; kk < KC / 16u; kk++) {
      var r = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&wt, buf + kk * 16u, true, KC);
      var l0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xh, xo + kk * 16u, false, XS);
      acc0 = subgroupMatrixMultiplyAccumulate(l0, r, acc0);
      if (MT == 2u) {
        var l1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xh, 16u * XS + xo + kk * 16u, false, XS);
        acc1 = subgroupMatrixMultiplyAccumulate(l1, r, acc1);
      }
    }
  }
  subgroupMatrixStore(&red, sid * 512u, acc0, false, 16u);
  if (MT == 2u) { subgroupMatrixStore(&red, sid * 512u + 256u, acc1, false, 16u); }
  workgroupBarrier();
  // Outputs (column group, tile, m, n): the K slices' partial sums of subgroup ks · NS + column group.
  for (var e = lid; e < NS * MT * 256u; e += 128u) {
    let cg = e / (MT * 256u);
    let t = (e / 256u) % MT;
    let m = (e % 256u) / 16u;
    let n = e % 16u;
    let b = t * 16u + m;
    if (b >= nact || (gated && n >= 8u)) { continue; }
    let at = cg * 512u + t * 256u + m * 16u + n;
    var v = 0.0;
    for (var k = 0u; k < KSS; k++) { v += red[k * NS * 512u + at]; }
    if (gated) {
      var u = 0.0;
      for (var k = 0u; k < KSS; k++) { u += red[k * NS * 512u + at + 8u]; }
      let orow = (wid.x * NS + cg) * 8u + n;
      if (orow < h) { y[b * Y_STRIDE + ROW_OFFSET + orow] = actGate(EPI, v) * u; }
    } else {
      let orow = (wid.x * NS + cg) * 16u + n;
      if (orow < N) {
        let out = b * Y_STRIDE + ROW_OFFSET + orow;
        if (HAS_BIAS) { v += bias[ROW_OFFSET + orow]; }
        if (EPI == 1u) { v += y[out]; }
        y[out] = actPlain(EPI, v);
      }
    }
  }
}
