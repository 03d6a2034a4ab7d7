// Row norms over the rows of a prefill chunk or the active decode rows:
//   RMSNorm (LAYER false): n = x[t, :] * inverseSqrt(mean(x[t, :]^2) + EPS) * w[:]
//   LayerNorm (LAYER true): n = (x[t, :] - mean) * inverseSqrt(var + EPS) * w[:] + b[:]  (biased variance)
// then out[t, :] = n, or out[t, :] += n with ADD (a post-norm on a block's output, added to the residual stream:
// gemma2/3, olmo2). One workgroup of 256 threads per row t (grid: T_dispatched workgroups along x); rows at or
// past row_meta[0] = T exit (the prefill meta, or the decode's active-rows word).
// Bindings: 0 x [T, H] f32, 1 w [H] f32, 2 out [T, H] f32 (a different buffer from x), 3 meta, 4 b [H] f32
// (LAYER; the host binds w again for RMSNorm).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> row_meta: array<u32>;
@group(0) @binding(4) var<storage, read> b: array<f32>;

override H: u32;           // features per row
override EPS: f32 = 1e-6;
override LAYER: bool = false;
override ADD: bool = false;

var<workgroup> partial: array<f32, 256>;

fn rowSum(l: u32, v: f32) -> f32 {
  partial[l] = v;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (l < h) { partial[l] += partial[l + h]; }
    workgroupBarrier();
  }
  let s = partial[0];
  workgroupBarrier();  // partial is reused by the next sum
  return s;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let t = wg.x;
  if (t >= row_meta[0]) { return; }
  let base = t * H;
  var mean = 0.0;
  if (LAYER) {
    var s = 0.0;
    for (var i = l; i < H; i += 256u) { s += x[base + i]; }
    mean = rowSum(l, s) / f32(H);
  }
  var ss = 0.0;
  for (var i = l; i < H; i += 256u) {
    let v = x[base + i] - mean;
    ss = fma(v, v, ss);
  }
  let r = inverseSqrt(rowSum(l, ss) / f32(H) + EPS);
  for (var i = l; i < H; i += 256u) {
    var n = (x[base + i] - mean) * r * w[i];
    if (LAYER) { n += b[i]; }
    if (ADD) { n += out[base + i]; }
    out[base + i] = n;
  }
}
