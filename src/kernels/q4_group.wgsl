// Snippet (//#include q4_group): a weight group's scale and the packed dot product of a q4 group's codes, for the
// decode projection kernels (gemv.wgsl, gemv_batch.wgsl, gemm_q8.wgsl), from the including kernel's QFMT override,
// its scale binding `s` and its groupsPerRow().

// The scale of group g of weight row `row`: f32 for q4f32_1 (QFMT 1), else two f16 per u32.
fn scaleOf(row: u32, g: u32) -> f32 {
  let j = row * groupsPerRow() + g;
  if (QFMT == 1u) { return bitcast<f32>(s[j]); }
  let pair = unpack2x16float(s[j >> 1u]);
  return select(pair.x, pair.y, (j & 1u) == 1u);
}

// Σ code · q over one group: the 8 words' low and high nibbles against q0, q1 (one int8 digit of x̂'s group, packed
// in the nibbles' order by gemv_quant.wgsl or gemv.wgsl's prologue).
fn dot32(lo: vec4<u32>, hi: vec4<u32>, q0: vec4<u32>, q1: vec4<u32>) -> i32 {
  return dot4I8Packed(lo.x, q0.x) + dot4I8Packed(hi.x, q0.y) + dot4I8Packed(lo.y, q0.z) + dot4I8Packed(hi.y, q0.w) +
         dot4I8Packed(lo.z, q1.x) + dot4I8Packed(hi.z, q1.y) + dot4I8Packed(lo.w, q1.z) + dot4I8Packed(hi.w, q1.w);
}
