// OLMo 2's q/k norms over the whole projection: for each token row of a fused q|k|v activation,
//   out[q] = rmsnorm(q over HQ·D) · w[0 .. HQ·D),  out[k] = rmsnorm(k over HKV·D) · w[HQ·D ..),  out[v] = v,
// written to a second buffer that the attention then reads as its q|k|v (per-head norms, RoPE and the KV store
// stay in the attention kernels). Grid: (tokens, 3): y = 0 q, 1 k, 2 v; rows at or past row_meta[0] exit.
// Bindings: 0 x [T, W] f32, 1 w [HQ·D + HKV·D] f32, 2 out [T, W] f32, 3 meta (row_meta[0] = T).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> row_meta: array<u32>;

override QW: u32 = 64u;   // HQ · D
override KW: u32 = 64u;   // HKV · D
override EPS: f32 = 1e-6;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let t = wg.x;
  if (t >= row_meta[0]) { return; }
  let W = QW + 2u * KW;
  let base = t * W;
  if (wg.y == 2u) {
    for (var i = l; i < KW; i += 256u) { out[base + QW + KW + i] = x[base + QW + KW + i]; }
    return;
  }
  let first = select(0u, QW, wg.y == 1u);
  let n = select(QW, KW, wg.y == 1u);
  var ss = 0.0;
  for (var i = l; i < n; i += 256u) {
    let v = x[base + first + i];
    ss = fma(v, v, ss);
  }
  partial[l] = ss;
  workgroupBarrier();
  for (var h = 128u; h > 0u; h >>= 1u) {
    if (l < h) { partial[l] += partial[l + h]; }
    workgroupBarrier();
  }
  let r = inverseSqrt(partial[0] / f32(n) + EPS);
  for (var i = l; i < n; i += 256u) { out[base + first + i] = x[base + first + i] * r * w[first + i]; }
}
