// Snippet (//#include gdn_reduce): the sum of red[0..WG) returned to every invocation, over the including kernel's
// `var<workgroup> red: array<f32, WG>` (all invocations must call it: uniform control flow).
fn reduceSum(lid: u32) -> f32 {
  workgroupBarrier();
  var width = WG;
  while (width > 1u) {
    let hw = (width + 1u) / 2u;
    if (lid < width - hw) { red[lid] += red[lid + hw]; }
    workgroupBarrier();
    width = hw;
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}
