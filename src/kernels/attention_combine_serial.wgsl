// Merges the SPLIT partial results of attention.wgsl (SPLIT > 1) for each (query head, token): with the ranges
// running maxima m_s, denominators l_s and unnormalised sums o_s, M = max m_s, out = Σ e^(m_s - M) o_s /
// Σ e^(m_s - M) l_s, times sigmoid(gate) with GATED (Qwen3.5). Grid (HQ, tokens); a thread per 4 dims.
override D: u32 = 64u;
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override SPLIT: u32 = 2u;
override GATED: bool = false;
override DV: u32 = D / 4u;

@group(0) @binding(0) var<storage, read> part: array<vec4<f32>>;  // [tokens, HQ, SPLIT, DV + 1]
@group(0) @binding(1) var<storage, read> qkv: array<f32>;         // projection output (gate rows), GATED only
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;  // [tokens, HQ, D]

//#include attention_gate

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let lid = lidv.x;
  let h = wid.x;
  let i = wid.y;
  if (lid >= DV) { return; }
  let pb = (i * HQ + h) * SPLIT * (DV + 1u);
  var mx = -3.0e38;
  for (var s = 0u; s < SPLIT; s++) { mx = max(mx, part[pb + s * (DV + 1u) + DV].x); }
  var l = 0.0;
  var o = vec4<f32>(0.0);
  for (var s = 0u; s < SPLIT; s++) {
    let st = part[pb + s * (DV + 1u) + DV];
    let w = exp(st.x - mx);
    l += st.y * w;
    o += part[pb + s * (DV + 1u) + lid] * w;
  }
  o /= l;
  if (GATED) { o = applyGate(o, i, h, lid); }
  out[(i * HQ + h) * DV + lid] = o;
}
