// BERT embeddings of a packed batch: out[t, :] = word[id_t, :] + pos[p_t, :] + type[0, :] (token type 0 for every
// token, as MLC's BertModel). One workgroup of 64 threads per token t (grid: T_dispatched workgroups along x);
// tokens at or past row_meta[0] = T exit. The LayerNorm that follows is its own dispatch.
// Bindings: 0 toks [T, 4] u32 (id, position, sequence start, sequence length: encoder_attention.wgsl reads the
// last two), 1 word [V, H] f32, 2 pos [P, H] f32, 3 ttype [types, H] f32, 4 out [T, H] f32, 5 meta (T).

@group(0) @binding(0) var<storage, read> toks: array<u32>;
@group(0) @binding(1) var<storage, read> word: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<f32>;
@group(0) @binding(3) var<storage, read> ttype: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> row_meta: array<u32>;

override H: u32;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) l: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let t = wg.x;
  if (t >= row_meta[0]) { return; }
  let wbase = toks[t * 4u] * H;
  let pbase = toks[t * 4u + 1u] * H;
  for (var i = l; i < H; i += 64u) {
    out[t * H + i] = word[wbase + i] + pos[pbase + i] + ttype[i];
  }
}
