// Snippet (//#include attention_shared): what the decode attention kernels (attention.wgsl, attention_gqa.wgsl)
// share. The KV cache (kv_cache.wgsl: bindings 2 and 3, their loads and store), the reduction and head-preparation
// scratch, the two-barrier workgroup reductions and prepHead. Uses the including kernel's D, WG, RS, QK_NORM, EPS
// overrides, its qkv and norms bindings, and qk_rope's ropeRotate / partnerOf.
//#include kv_cache

var<workgroup> red: array<f32, WG>;
var<workgroup> red2: array<f32, RS>;
//#if HEAD512
var<workgroup> hb: array<f32, 512>;          // one head being prepared (prepHead); HEAD512: gemma4's full layers
//#else
var<workgroup> hb: array<f32, 256>;          // one head being prepared (prepHead)
//#endif

// Workgroup max / sum in two barriers: RS threads fold RS values each, then every thread folds the RS.
fn reduceMax(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  if (lid < RS) {
    var r = red[lid * RS];
    for (var j = 1u; j < RS; j++) { r = max(r, red[lid * RS + j]); }
    red2[lid] = r;
  }
  workgroupBarrier();
  var r = red2[0];
  for (var j = 1u; j < RS; j++) { r = max(r, red2[j]); }
  return r;
}

fn reduceSum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  if (lid < RS) {
    var r = 0.0;
    for (var j = 0u; j < RS; j++) { r += red[lid * RS + j]; }
    red2[lid] = r;
  }
  workgroupBarrier();
  var r = 0.0;
  for (var j = 0u; j < RS; j++) { r += red2[j]; }
  return r;
}

// FUSED: hb[0..D) = the head at qkv[src .. src + D) after the optional RMSNorm (weights norms[noff ..]) and the
// rotary embedding at position p (as qk_prepare.wgsl). Uniform control flow (barriers).
// Each element and its rotation partner are normed straight from qkv (no scratch copy of the normed head).
fn prepHead(src: u32, noff: u32, p: u32, lid: u32) {
  var r = 1.0;
  if (QK_NORM) {
    var ss = 0.0;
    for (var d = lid; d < D; d += WG) {
      let v = qkv[src + d];
      ss += v * v;
    }
    r = inverseSqrt(reduceSum(ss, lid) / f32(D) + EPS);
  }
  for (var d = lid; d < D; d += WG) {
    let e = partnerOf(d);
    var x = qkv[src + d];
    var y = qkv[src + e];
    if (QK_NORM) {
      x = x * r * norms[noff + d];
      y = y * r * norms[noff + e];
    }
    hb[d] = ropeRotate(x, y, d, p);
  }
  workgroupBarrier();
}
