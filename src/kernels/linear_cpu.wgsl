// Linear layer for CPU adapters (SwiftShader): y[t, n] = epilogue( Σ_k W[n, k] · x̂[t, k] ) for q4 weights, as
// both the decode GEMV (one token, optional fused RMSNorm prologue) and the prefill GEMM (T tokens, T = meta[0]).
// Shapes and the epilogue come from a uniform, not from override constants, so one compiled pipeline serves every
// linear layer of a model (per weight format): on SwiftShader a pipeline costs seconds of compilation and that
// cost grows with unrolled code and barriers, so this kernel is plain loops with one barrier pair (NORM only).
//   NORM:  x̂ = x · rsqrt(mean(x²) + eps) · norm_w   (tokens = 1 only; the host checks)
//   EPI 0: y = acc (+ bias)   EPI 1: y += acc (+ bias)   EPI 2: rows r and r + N/2 → y[r] = silu(g) · u (no bias)
// One invocation owns one output row for TT tokens: each weight word is decoded once for the TT tokens.
// Grid: (ceil(output rows / WG), ceil(T / TT)); workgroups whose first token is at or past T exit.

override QFMT: u32 = 0u;  // 0 q4f16_1 (f16 scales), 1 q4f32_1 (f32 scales)

struct Params {
  n: u32,           // weight rows in this buffer (SwiGLU: 2I)
  k: u32,           // inputs, a multiple of 32
  epi: u32,         // 0 store, 1 residual add, 2 SwiGLU, 3/4 GELU erf/tanh, 5 GeGLU (activation.wgsl)
  norm: u32,        // 1: the RMSNorm prologue
  has_bias: u32,
  eps: f32,
  row_offset: u32,  // first output column written by this buffer
  y_stride: u32,    // floats per token of y
  x_stride: u32,    // floats per token of x (a multiple of 4)
  tokens: u32,      // tokens of the dispatch; 0: meta[0]
  pad0: u32,
  pad1: u32,
}

//#include activation

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> norm_w: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read> row_meta: array<u32>;
@group(0) @binding(7) var<uniform> p: Params;

const WG: u32 = 64u;
const TT: u32 = 4u;

var<workgroup> red: array<f32, WG>;
var<workgroup> rinv: f32;

fn scaleOf(j: u32) -> f32 {
  if (QFMT == 1u) { return bitcast<f32>(s[j]); }
  let pair = unpack2x16float(s[j >> 1u]);
  return select(pair.x, pair.y, (j & 1u) == 1u);
}

// Codes 0..3 (shift 0) or 4..7 (shift 16) of an 8-code word, minus the zero point 7.
fn codes(word: u32, shift: u32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(word >> shift) >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(15u)) - vec4<f32>(7.0);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let T = select(p.tokens, row_meta[0], p.tokens == 0u);
  let t0 = wid.y * TT;
  if (t0 >= T) { return; }
  let kv = p.k / 4u;
  var r = 1.0;
  if (p.norm == 1u) {
    var ss = 0.0;
    for (var v = lid; v < kv; v += WG) {
      let xi = x[v];
      ss += dot(xi, xi);
    }
    red[lid] = ss;
    workgroupBarrier();
    if (lid == 0u) {
      var t = 0.0;
      for (var j = 0u; j < WG; j++) { t += red[j]; }
      rinv = inverseSqrt(t / f32(p.k) + p.eps);
    }
    workgroupBarrier();
    r = rinv;
  }
  let swiglu = epiGated(p.epi);
  let rows = select(p.n, p.n / 2u, swiglu);
  let n = wid.x * WG + lid;
  if (n >= rows) { return; }
  let nt = min(TT, T - t0);
  let xs = p.x_stride / 4u;
  let wpr = p.k / 8u;   // words per row
  let gpr = p.k / 32u;  // scales per row
  let nu = n + rows;    // the SwiGLU "up" row
  var a = vec4<f32>(0.0);
  var u = vec4<f32>(0.0);
  for (var g = 0u; g < gpr; g++) {
    var pa = vec4<f32>(0.0);
    var pu = vec4<f32>(0.0);
    for (var q = 0u; q < 4u; q++) {
      let wi = g * 4u + q;
      let word = w[n * wpr + wi];
      let lo = codes(word, 0u);
      let hi = codes(word, 16u);
      var ulo = vec4<f32>(0.0);
      var uhi = vec4<f32>(0.0);
      if (swiglu) {
        let uword = w[nu * wpr + wi];
        ulo = codes(uword, 0u);
        uhi = codes(uword, 16u);
      }
      var nlo = vec4<f32>(1.0);
      var nhi = vec4<f32>(1.0);
      if (p.norm == 1u) {
        nlo = norm_w[2u * wi];
        nhi = norm_w[2u * wi + 1u];
      }
      for (var j = 0u; j < nt; j++) {
        let xb = (t0 + j) * xs + 2u * wi;
        let x0 = x[xb] * nlo;
        let x1 = x[xb + 1u] * nhi;
        pa[j] += dot(lo, x0) + dot(hi, x1);
        pu[j] += dot(ulo, x0) + dot(uhi, x1);
      }
    }
    a += pa * scaleOf(n * gpr + g);
    if (swiglu) { u += pu * scaleOf(nu * gpr + g); }
  }
  a *= r;
  u *= r;
  for (var j = 0u; j < nt; j++) {
    let o = (t0 + j) * p.y_stride + p.row_offset + n;
    if (swiglu) {
      y[o] = actGate(p.epi, a[j]) * u[j];
    } else {
      var v = a[j];
      if (p.has_bias == 1u) { v += bias[p.row_offset + n]; }
      if (p.epi == 1u) { v += y[o]; }
      y[o] = actPlain(p.epi, v);
    }
  }
}
