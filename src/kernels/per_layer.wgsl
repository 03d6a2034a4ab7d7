// gemma4's per-layer inputs (docs/architectures.md "gemma4"), three small passes over the rows of a decode step
// (meta[0]: the active rows) or a prefill chunk (meta[0]: its tokens); rows at or past meta[0] exit.
// MODE 0, once per token, after the per-layer embedding rows were looked up into pli (embed.wgsl OUT_STRIDE) and
//   the model projection of the token's embedding into proj [rows, L * P]: per layer l, with v = proj[row, l·P ..
//   l·P + P) · IN_SCALE (1/sqrt(hidden)), pli[row, l·P + k] = (v_k / rms(v) · w[k] + pli[row, l·P + k]) · OUT_SCALE
//   (1/sqrt(2)). Grid (rows, L); one workgroup of 64 threads per (row, layer).
// MODE 1, per layer after the gate GEMV (GELU-tanh epilogue) wrote g [rows, P]: g[row, k] *= pli[row, l·P + k],
//   l = aux[0] (a per-layer word, so one pipeline serves every layer). Grid (rows).
// MODE 2, per layer at its end: x[row, :] *= aux[0] (the layer scalar). Grid (rows).
// Bindings: 0 x (MODE 0: proj, MODE 1: g, MODE 2: the hidden state), 1 w (MODE 0: the norm weight [P]; else
// unused, bound to aux), 2 pli [rows, L * P], 3 meta, 4 aux.
override MODE: u32 = 0u;
override P: u32 = 256u;         // per-layer input width (hidden_size_per_layer_input)
override L: u32 = 1u;           // layers
override H: u32 = 64u;          // hidden size (MODE 2)
override EPS: f32 = 1e-6;
override IN_SCALE: f32 = 1.0;
override OUT_SCALE: f32 = 1.0;

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> pli: array<f32>;
@group(0) @binding(3) var<storage, read> row_meta: array<u32>;
@group(0) @binding(4) var<storage, read> aux: array<f32>;

var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let row = wg.x;
  if (row >= row_meta[0]) { return; }
  if (MODE == 0u) {
    let base = row * L * P + wg.y * P;
    var ss = 0.0;
    for (var k = t; k < P; k += 64u) {
      let v = x[base + k] * IN_SCALE;
      ss = fma(v, v, ss);
    }
    partial[t] = ss;
    workgroupBarrier();
    for (var h = 32u; h > 0u; h >>= 1u) {
      if (t < h) { partial[t] += partial[t + h]; }
      workgroupBarrier();
    }
    let r = inverseSqrt(partial[0] / f32(P) + EPS);
    for (var k = t; k < P; k += 64u) {
      pli[base + k] = (x[base + k] * IN_SCALE * r * w[k] + pli[base + k]) * OUT_SCALE;
    }
  } else if (MODE == 1u) {
    let l = u32(aux[0]);
    for (var k = t; k < P; k += 64u) { x[row * P + k] *= pli[row * L * P + l * P + k]; }
  } else {
    let s = aux[0];
    for (var k = t; k < H; k += 64u) { x[row * H + k] *= s; }
  }
}
