// Dispatch-cost micro-benchmark: one tiny workgroup that reads and writes the same word, so every dispatch
// depends on the one before it (WebGPU inserts a barrier between them inside a pass).
@group(0) @binding(0) var<storage, read_write> counter: array<u32>;

@compute @workgroup_size(1)
fn main() {
  counter[0] = counter[0] + 1u;
}
