// y[i] = a * x[i] + y[i] over f32 arrays; `a` is an override constant. Used by the GPU-layer tests.
override A: f32 = 1.0;
override WG: u32 = 64;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < arrayLength(&y)) {
    y[i] = A * x[i] + y[i];
  }
}
