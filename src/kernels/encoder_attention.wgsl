// Bidirectional (non-causal) multi-head attention of a packed batch of sequences, for encoders (BERT). Token t
// belongs to the sequence [start_t, start_t + len_t) given in toks[t] and attends to every token of it, none of any
// other sequence, so a packed batch needs no padding and no mask.
//   out[t, h*D .. h*D+D) = softmax_j(q_t,h · k_j,h · SCALE) v_j,h  over j in the sequence of t
// q, k, v come from the fused projection qkv [T, 3 * HQ * D] (rows q | k | v, head h at columns h*D.., as MLC's
// bert `qkv`). One invocation per (token, head), index g = t * HQ + h, 64 per workgroup (grid: ceil(T*HQ / 64));
// one pass over the keys with an online softmax (running max m, sum l, accumulator in f32). Plain loops with no
// workgroup memory: the shape CPU adapters compile fast; it is not the fast form for GPUs.
// Bindings: 0 toks [T, 4] u32 (id, position, start, len), 1 qkv [T, 3*HQ*D] f32, 2 out [T, HQ*D] f32, 3 meta (T).

@group(0) @binding(0) var<storage, read> toks: array<u32>;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> row_meta: array<u32>;

override D: u32 = 64u;  // head dim, ≤ 256
override HQ: u32 = 1u;  // heads
override SCALE: f32 = 0.125;

var<private> q: array<f32, 256>;
var<private> acc: array<f32, 256>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let g = gid.x;
  let t = g / HQ;
  let h = g % HQ;
  if (t >= row_meta[0]) { return; }
  let W = HQ * D;
  let start = toks[t * 4u + 2u];
  let len = toks[t * 4u + 3u];
  for (var d = 0u; d < D; d++) {
    q[d] = qkv[t * 3u * W + h * D + d] * SCALE;
    acc[d] = 0.0;
  }
  var m = -3.0e38;
  var l = 0.0;
  for (var j = start; j < start + len; j++) {
    let kb = j * 3u * W + W + h * D;
    var s = 0.0;
    for (var d = 0u; d < D; d++) { s = fma(q[d], qkv[kb + d], s); }
    let mNew = max(m, s);
    let corr = exp(m - mNew);
    let p = exp(s - mNew);
    l = l * corr + p;
    let vb = kb + W;
    for (var d = 0u; d < D; d++) { acc[d] = fma(p, qkv[vb + d], acc[d] * corr); }
    m = mNew;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var d = 0u; d < D; d++) { out[t * W + h * D + d] = acc[d] * inv; }
}
