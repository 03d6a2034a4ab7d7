// Streaming-read micro-benchmark: every invocation sums vec4<u32> words with a grid-stride loop and writes
// one word so the loads cannot be removed. Bytes read / time = achieved read bandwidth.
override WG: u32 = 256;

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> sink: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let stride = nwg.x * WG;
  let n = arrayLength(&src);
  var acc = vec4<u32>(0u);
  var i = gid.x;
  loop {
    if (i >= n) { break; }
    acc ^= src[i];
    i += stride;
  }
  sink[gid.x] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
