// The int8 x̂ of a batched decode GEMV (gemv_batch.wgsl / gemm_q8.wgsl with Q8), quantized once per step instead of
// once per workgroup, and of a prefill GEMM's tokens (gemm_q8_tile.wgsl, NORM off, meta[0] = T): one workgroup per
// active row b < meta[0] computes x̂ = x · rsqrt(mean(x²) + EPS) · norm_w (NORM) or
// x̂ = x, then quantizes each 32-element group as gemv.wgsl's quantizeGroup does: digit 0 = round(x̂ / step) with
// step = max |x̂| / 127, digit 1 (DIGITS 2) = round(residual · 254), each digit's 32 int8 packed in nibble order
// (weights 0, 2, 4, 6 then 1, 3, 5, 7 of every 8, the order the q4 codes' low and high nibbles come in).
// Row b of q (ROW_U32 u32s, a multiple of 4) holds, for G = K / 32 groups:
//   [(e · G + g) · 8 .. +7]         digit e of group g (two vec4<u32>)
//   [DIGITS · G · 8 + e · G + g]    its zero point 7 · Σ digits (i32): Σ (code - 7) · d = Σ code · d - that
//   [DIGITS · G · 9 + g]            the group's step (f32; digit 1's is step / 254)
// XSPLIT (gemm_q8.wgsl's layout): the two vec4s of digit e, group g at [((2e + h) · G + g) · 4 .. +3] (h = 0, 1)
// instead, so that threads reading consecutive groups' half h read consecutive 16 bytes.
// The RMS is a fixed tree over the row, so a row's x̂ never depends on the other rows.
// SG (subgroups of at least 4 invocations): every thread takes 8 consecutive elements, a quarter of a group; the RMS
// is summed by subgroupAdd and then over the subgroups in order, and each group's max and digit sum by shuffles
// among its 4 threads, so all 256 threads quantize at once and the RMS needs one barrier instead of eight. The
// digits are computed by the same expressions as without SG (only the RMS's summation order differs).
//#enable subgroups
//#include q8_quarter

override K: u32 = 32u;          // features (multiple of 32)
override X_STRIDE: u32 = K;     // floats per row of x (multiple of 4)
override NORM: bool = false;
override EPS: f32 = 1e-6;
override DIGITS: u32 = 2u;      // 1 or 2
override ROW_U32: u32 = 4u;     // u32s per row of q
override SG: bool = false;      // the subgroup path (needs subgroups of at least 4 invocations)
override XSPLIT: bool = false;  // the halves of a group's digits apart (header)

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> norm_w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> q: array<u32>;
@group(0) @binding(3) var<storage, read> meta_b: array<u32>;  // [0]: active rows

const WG: u32 = 256u;
var<workgroup> red: array<f32, WG>;

// Word j (0-7) of digit e of group g, within a row.
fn digitWord(e: u32, g: u32, j: u32) -> u32 {
  let G = K / 32u;
  if (XSPLIT) { return ((2u * e + j / 4u) * G + g) * 4u + j % 4u; }
  return (e * G + g) * 8u + j;
}

//#if SUBGROUPS
// SG: thread lid takes elements 8c .. 8c + 7 for c = lid, lid + WG, ...: quarter m = c % 4 of group c / 4.
fn quantizeSg(lid: u32, sgs: u32, sid: u32, b: u32) {
  let xrow = b * (X_STRIDE / 4u);
  let C = K / 8u;  // quarters
  var rinv = 1.0;
  if (NORM) {
    var ss = 0.0;
    for (var base = 0u; base < C; base += WG) {
      let c = min(base + lid, C - 1u);
      let x0 = x[xrow + 2u * c];
      let x1 = x[xrow + 2u * c + 1u];
      ss += select(0.0, dot(x0, x0) + dot(x1, x1), base + lid < C);
    }
    ss = subgroupAdd(ss);
    if (sid == 0u) { red[lid / sgs] = ss; }
    workgroupBarrier();
    var tot = 0.0;
    for (var i = 0u; i < WG / sgs; i++) { tot += red[i]; }
    rinv = inverseSqrt(tot / f32(K) + EPS);
  }
  let G = K / 32u;
  let qrow = b * ROW_U32;
  for (var base = 0u; base < C; base += WG) {  // uniform trip count: every thread reaches the shuffles
    let valid = base + lid < C;
    let c = min(base + lid, C - 1u);
    let g = c / 4u;
    let m = c % 4u;
    var v0 = x[xrow + 2u * c];
    var v1 = x[xrow + 2u * c + 1u];
    if (NORM) {
      v0 = v0 * rinv * norm_w[2u * c];
      v1 = v1 * rinv * norm_w[2u * c + 1u];
    }
    let amax = quarterMax(v0, v1);
    let inv = select(0.0, 127.0 / amax, amax > 0.0);
    if (valid && m == 0u) { q[qrow + DIGITS * G * 9u + g] = bitcast<u32>(amax / 127.0); }
    for (var e = 0u; e < DIGITS; e++) {
      let qd = quarterDigits(v0, v1, inv, e);
      if (valid) {
        q[qrow + digitWord(e, g, 2u * m)] = qd.lo;
        q[qrow + digitWord(e, g, 2u * m + 1u)] = qd.hi;
        if (m == 0u) { q[qrow + DIGITS * G * 8u + e * G + g] = bitcast<u32>(7 * qd.sum); }
      }
    }
  }
}
//#endif

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>
//#if SUBGROUPS
        , @builtin(subgroup_size) sgs: u32, @builtin(subgroup_invocation_id) sid: u32
//#endif
        ) {
  let lid = lidv.x;
  let b = wid.x;
  if (b >= meta_b[0]) { return; }  // uniform: the whole workgroup has the same row
//#if SUBGROUPS
  if (SG) {
    quantizeSg(lid, sgs, sid, b);
    return;
  }
//#endif
  let xrow = b * (X_STRIDE / 4u);
  var rinv = 1.0;
  if (NORM) {
    var ss = 0.0;
    for (var v = lid; v < K / 4u; v += WG) {
      let xi = x[xrow + v];
      ss += dot(xi, xi);
    }
    red[lid] = ss;
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st = st / 2u) {
      if (lid < st) { red[lid] += red[lid + st]; }
      workgroupBarrier();
    }
    rinv = inverseSqrt(red[0] / f32(K) + EPS);
  }
  let G = K / 32u;
  let qrow = b * ROW_U32;
  for (var g = lid; g < G; g += WG) {
    var v: array<vec4<f32>, 8>;
    var amax = 0.0;
    for (var j = 0u; j < 8u; j++) {
      let xi = x[xrow + 8u * g + j];
      v[j] = select(xi, xi * rinv * norm_w[8u * g + j], NORM);
      let a = abs(v[j]);
      amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let inv = select(0.0, 127.0 / amax, amax > 0.0);
    q[qrow + DIGITS * G * 9u + g] = bitcast<u32>(amax / 127.0);
    for (var e = 0u; e < DIGITS; e++) {
      var sum = 0;
      for (var m = 0u; m < 4u; m++) {  // word m of the group: elements 8m .. 8m+7 = v[2m], v[2m+1]
        let s0 = v[2u * m] * inv;
        let s1 = v[2u * m + 1u] * inv;
        let a = vec4<i32>(select(round(s0), round((s0 - round(s0)) * 254.0), e == 1u));
        let c = vec4<i32>(select(round(s1), round((s1 - round(s1)) * 254.0), e == 1u));
        q[qrow + digitWord(e, g, 2u * m)] = pack4xI8(vec4<i32>(a.x, a.z, c.x, c.z));       // meets the low nibbles
        q[qrow + digitWord(e, g, 2u * m + 1u)] = pack4xI8(vec4<i32>(a.y, a.w, c.y, c.w));  // the high nibbles
        sum += a.x + a.y + a.z + a.w + c.x + c.y + c.z + c.w;
      }
      q[qrow + DIGITS * G * 8u + e * G + g] = bitcast<u32>(7 * sum);
    }
  }
}
