// Embedding lookup: out[i, :] = dequantised row ids[i * ID_STRIDE + ID_OFFSET] of the embedding table (any QFMT).
// Decode reads the ids straight from the row-state buffer (ID_STRIDE 8, ID_OFFSET 4: the token sampled by the
// previous step, still on the GPU); prefill reads an uploaded id buffer. A table split along the vocabulary into
// several buffers is looked up with one dispatch per chunk: rows outside [ROW_START, ROW_START + N) are skipped.
// Grid: (rows, ceil(H / 512), 1); a thread writes 8 consecutive elements (one q4 word), so a decode row is a few
// workgroups of one load each rather than one workgroup looping over H (8.9 µs on the H200 for H = 2048).
override QFMT: u32 = 0u;
override N: u32 = 1u;          // vocabulary rows in this chunk
override H: u32 = 32u;         // hidden size (multiple of 8)
override ROW_START: u32 = 0u;
override ID_STRIDE: u32 = 1u;
override ID_OFFSET: u32 = 0u;
override SCALE: f32 = 1.0;    // gemma: the looked-up row times sqrt(H)
override OUT_STRIDE: u32 = 0u; // floats per output row (0: H); gemma4's per-layer embedding shards write
override OUT_OFFSET: u32 = 0u; // their columns [OUT_OFFSET, OUT_OFFSET + H) of rows of OUT_STRIDE

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn scaleAt(j: u32) -> f32 {
  if (QFMT == 1u) { return bitcast<f32>(s[j]); }
  let pair = unpack2x16float(s[j >> 1u]);
  return select(pair.x, pair.y, (j & 1u) == 1u);
}

fn value(r: u32, k: u32) -> f32 {
  if (QFMT <= 1u) {
    let word = w[r * (H / 8u) + k / 8u];
    let code = (word >> (4u * (k % 8u))) & 15u;
    return (f32(code) - 7.0) * scaleAt(r * (H / 32u) + k / 32u);
  }
  if (QFMT == 2u) {
    let pair = unpack2x16float(w[r * (H / 2u) + k / 2u]);
    return select(pair.x, pair.y, (k & 1u) == 1u);
  }
  if (QFMT == 3u) { return bitcast<f32>(w[r * H + k]); }
  let groups = (H + 39u) / 40u;
  let g = k / 40u;
  let within = k % 40u;
  let word = w[r * groups * 4u + g * 4u + within / 10u];
  let code = (word >> (3u * (within % 10u))) & 7u;
  return (f32(code) - 3.0) * scaleAt(r * groups + g);
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let i = wid.x;
  let id = ids[i * ID_STRIDE + ID_OFFSET];
  if (id < ROW_START || id >= ROW_START + N) { return; }
  let r = id - ROW_START;
  let k0 = (wid.y * 64u + lid.x) * 8u;
  if (k0 >= H) { return; }
  let ob = i * select(OUT_STRIDE, H, OUT_STRIDE == 0u) + OUT_OFFSET + k0;
  for (var e = 0u; e < 8u; e++) { out[ob + e] = value(r, k0 + e) * SCALE; }
}
