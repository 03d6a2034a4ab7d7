// The f16 x̂ of the subgroup-matrix projections (gemm_sgm.wgsl), once per step: one workgroup per active row
// b < meta[0] writes x̂ = x · rsqrt(mean(x²) + EPS) · norm_w (NORM) or x̂ = x as f16, XS halves a row, the halves
// past K zero. The RMS is a fixed tree over the row (gemv_quant.wgsl's), so a row's x̂ never depends on the others.
enable f16;

override K: u32 = 4u;           // features (multiple of 4)
override X_STRIDE: u32 = K;     // floats per row of x (multiple of 4)
override NORM: bool = false;
override EPS: f32 = 1e-6;
override XS: u32 = K;           // halves per row of x̂ (multiple of 4, at least K)

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> norm_w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> xh: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> meta_b: array<u32>;  // [0]: active rows

const WG: u32 = 256u;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let b = wid.x;
  if (b >= meta_b[0]) { return; }  // uniform: the whole workgroup has the same row
  let xrow = b * (X_STRIDE / 4u);
  var rinv = 1.0;
  if (NORM) {
    var ss = 0.0;
    for (var v = lid; v < K / 4u; v += WG) {
      let xi = x[xrow + v];
      ss += dot(xi, xi);
    }
    red[lid] = ss;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st = st / 2u) {
      if (lid < st) { red[lid] += red[lid + st]; }
      workgroupBarrier();
    }
    rinv = inverseSqrt(red[0] / f32(K) + EPS);
  }
  let orow = b * (XS / 4u);
  for (var v = lid; v < XS / 4u; v += WG) {
    var o = vec4<f32>(0.0);
    if (v < K / 4u) {
      o = x[xrow + v];
      if (NORM) { o = o * rinv * norm_w[v]; }
    }
    xh[orow + v] = vec4<f16>(clamp(o, vec4<f32>(-65504.0), vec4<f32>(65504.0)));  // finite in f16
  }
}
