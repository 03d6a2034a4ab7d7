// Final-logit soft-capping (gemma2, gemma4): v = CAP · tanh(v · SCALE / CAP) over the first ROWS · V floats of
// `logits`, between the lm_head and the sampler. Grid: ceil(ROWS · V / 256) workgroups, folded into y above 65535.

//#include activation

@group(0) @binding(0) var<storage, read_write> logits: array<f32>;

override COUNT: u32 = 1u;  // floats to cap (rows · vocabulary)
override CAP: f32 = 30.0;
override SCALE: f32 = 1.0;  // gemma4: the logits times 1/sqrt(hidden) first (CAP 0: the scale alone)

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < COUNT) { logits[i] = softcap(logits[i] * SCALE, CAP); }
}
