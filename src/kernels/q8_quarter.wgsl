// Snippet (//#include q8_quarter): int8 x̂ a quarter group per thread, for gemv.wgsl's prologue (QSG) and
// gemv_quant.wgsl (SG). The thread holds elements 8m .. 8m + 7 of a 32-element group as v0, v1; the group's other
// quarters are held by the neighbouring invocations of its subgroup (m = the lane's index mod 4, subgroups of at
// least 4). The expressions are those of a group per thread (gemv.wgsl's quantizeGroup, gemv_quant.wgsl's
// workgroup path), so both give the same digits for the same x̂.

//#if SUBGROUPS
// The group's max |x̂|, in every quarter.
fn quarterMax(v0: vec4<f32>, v1: vec4<f32>) -> f32 {
  let a0 = abs(v0);
  let a1 = abs(v1);
  var amax = max(max(max(a0.x, a0.y), max(a0.z, a0.w)), max(max(a1.x, a1.y), max(a1.z, a1.w)));
  amax = max(amax, subgroupShuffleXor(amax, 1u));
  return max(amax, subgroupShuffleXor(amax, 2u));
}

// Digit e of the quarter (inv = 1 / the group's step): digit 0 = round(x̂ / step), digit 1 = round(residual · 254).
// lo is the group's word 2m (elements 0, 2, 4, 6 of the quarter: they meet the q4 codes' low nibbles), hi word
// 2m + 1 (1, 3, 5, 7: the high nibbles); sum is Σ digits over the whole group, in every quarter.
struct QuarterDigits { lo: u32, hi: u32, sum: i32 }

fn quarterDigits(v0: vec4<f32>, v1: vec4<f32>, inv: f32, e: u32) -> QuarterDigits {
  let s0 = v0 * inv;
  let s1 = v1 * inv;
  let a = vec4<i32>(select(round(s0), round((s0 - round(s0)) * 254.0), e == 1u));
  let d = vec4<i32>(select(round(s1), round((s1 - round(s1)) * 254.0), e == 1u));
  var sum = a.x + a.y + a.z + a.w + d.x + d.y + d.z + d.w;
  sum += subgroupShuffleXor(sum, 1u);
  sum += subgroupShuffleXor(sum, 2u);
  return QuarterDigits(pack4xI8(vec4<i32>(a.x, a.z, d.x, d.z)), pack4xI8(vec4<i32>(a.y, a.w, d.y, d.w)), sum);
}
//#endif
