// RMSNorm over the rows of a prefill chunk: out[t, :] = x[t, :] * inverseSqrt(mean(x[t, :]^2) + EPS) * w[:].
// One workgroup of 256 threads per row t (grid: T_dispatched workgroups along x); rows at or past row_meta[0] = T exit.
// Bindings: 0 x [T, H] f32, 1 w [H] f32, 2 out [T, H] f32 (a different buffer from x), 3 meta (row_meta[0] = T).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> row_meta: array<u32>;

override H: u32;           // features per row
override EPS: f32 = 1e-6;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let t = wg.x;
  if (t >= row_meta[0]) { return; }
  let base = t * H;
  var ss = 0.0;
  for (var i = l; i < H; i += 256u) {
    let v = x[base + i];
    ss = fma(v, v, ss);
  }
  partial[l] = ss;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (l < h) { partial[l] += partial[l + h]; }
    workgroupBarrier();
  }
  let r = inverseSqrt(partial[0] / f32(H) + EPS);
  for (var i = l; i < H; i += 256u) {
    out[base + i] = x[base + i] * r * w[i];
  }
}
