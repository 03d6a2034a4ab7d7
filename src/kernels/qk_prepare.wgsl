// Attention-layer preparation after the fused q/k/v projection: per-head RMSNorm of q and k (Qwen3, Qwen3.5),
// rotary embedding (NeoX rotate-half over the first R dims, from a cos/sin table the CPU computes in double
// precision per position, so Llama-3 frequency scaling and partial rotary need nothing here and large angles
// keep full f32 accuracy), q written to `q_out`, k and v written into the slot's KV cache at the
// token's position. Qwen3.5's gated q rows are per-head interleaved [query D | gate D] (GATED).
// Token i is (row b, offset t): decode b = i, t = 0; prefill (PREFILL) b = 0, t = i. pos = rows[b].pos + t.
// Grid: (HQ + HKV, tokens); one thread per head dimension.
override D: u32 = 64u;
override HQ: u32 = 1u;
override HKV: u32 = 1u;
override R: u32 = 64u;          // rotary dims (even, ≤ D)
override QK_NORM: bool = false;
override V_NORM: bool = false;  // gemma4: v RMS-normed (no weight) before the cache
override GATED: bool = false;
override PREFILL: bool = false;
override CTX: u32 = 1u;         // positions per slot in the cache
override EPS: f32 = 1e-6;

@group(0) @binding(0) var<storage, read> qkv: array<f32>;        // [tokens, QKV_W]
@group(0) @binding(1) var<storage, read> rows: array<u32>;       // [B, 8]: slot, pos, active, ...
@group(0) @binding(2) var<storage, read> rope: array<f32>;       // [CTX, R]: cos(pos·f_i) i < R/2, then sin
@group(0) @binding(3) var<storage, read> norms: array<f32>;      // [2, D]: q_norm, k_norm (unused without QK_NORM)
@group(0) @binding(4) var<storage, read_write> q_out: array<f32>; // [tokens, HQ, D]
// KV16 (a define): the cache holds f16 pairs (pack2x16float), as attention.wgsl reads them.
//#if KV16
@group(0) @binding(5) var<storage, read_write> kc: array<u32>;   // [slots, HKV, CTX, D / 2] or pages (kv_page)
@group(0) @binding(6) var<storage, read_write> vc: array<u32>;
//#else
@group(0) @binding(5) var<storage, read_write> kc: array<f32>;   // [slots, HKV, CTX, D] or pages (kv_page)
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;   // [slots, HKV, CTX, D]
//#endif

var<workgroup> buf: array<f32, D>;
var<workgroup> red: array<f32, D>;

//#include qk_rope

//#include kv_page

//#if HEAD512
// Head dim 512 (gemma4's full layers; past the 256 invocations a workgroup may have): 256 threads, each dims d
// and d + 256, the same steps.
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let d = lidv.x;
  let head = wid.x;
  let i = wid.y;
  let b = select(i, 0u, PREFILL);
  let t = select(0u, i, PREFILL);
  let slot = rows[b * 8u + 0u];
  let pos = rows[b * 8u + 1u] + t;
  let is_q = head < HQ;
  let kvh = head - HQ;
  let kbase = select(HQ * D, 2u * HQ * D, GATED);
  var src: u32;
  if (is_q) { src = i * qkvWidth() + select(head * D, head * 2u * D, GATED); }
  else { src = i * qkvWidth() + kbase + kvh * D; }
  var v0 = qkv[src + d];
  var v1 = qkv[src + d + 256u];
  let vs = i * qkvWidth() + kbase + HKV * D + select(kvh, 0u, is_q) * D + d;
  var vr = 1.0;
  if (V_NORM) {
    let a0 = select(qkv[vs], 0.0, is_q);
    let a1 = select(qkv[vs + 256u], 0.0, is_q);
    red[d] = a0 * a0 + a1 * a1;
    workgroupBarrier();
    for (var st = 128u; st > 0u; st = st / 2u) {
      if (d < st) { red[d] += red[d + st]; }
      workgroupBarrier();
    }
    vr = inverseSqrt(red[0] / f32(D) + EPS);
    workgroupBarrier();
  }
  if (QK_NORM) {
    red[d] = v0 * v0 + v1 * v1;
    workgroupBarrier();
    for (var st = 128u; st > 0u; st = st / 2u) {
      if (d < st) { red[d] += red[d + st]; }
      workgroupBarrier();
    }
    let r = inverseSqrt(red[0] / f32(D) + EPS);
    v0 = v0 * r * norms[select(D, 0u, is_q) + d];
    v1 = v1 * r * norms[select(D, 0u, is_q) + d + 256u];
  }
  buf[d] = v0;
  buf[d + 256u] = v1;
  workgroupBarrier();
  v0 = ropeRotate(v0, buf[partnerOf(d)], d, pos);
  v1 = ropeRotate(v1, buf[partnerOf(d + 256u)], d + 256u, pos);
//#if KV16
  red[d] = v0;  // a pair of neighbours is packed by its even thread
  red[d + 256u] = v1;
  workgroupBarrier();
//#endif
  if (is_q) {
    q_out[(i * HQ + head) * D + d] = v0;
    q_out[(i * HQ + head) * D + d + 256u] = v1;
  } else if (pos < CTX) {
    let at = kvRow(slot, kvh, pos) * D + d;
//#if KV16
    if (d % 2u == 0u) {
      kc[at / 2u] = pack2x16float(vec2<f32>(v0, red[d + 1u]));
      vc[at / 2u] = pack2x16float(vec2<f32>(qkv[vs], qkv[vs + 1u]) * vr);
      kc[(at + 256u) / 2u] = pack2x16float(vec2<f32>(v1, red[d + 257u]));
      vc[(at + 256u) / 2u] = pack2x16float(vec2<f32>(qkv[vs + 256u], qkv[vs + 257u]) * vr);
    }
//#else
    kc[at] = v0;
    vc[at] = qkv[vs] * vr;
    kc[at + 256u] = v1;
    vc[at + 256u] = qkv[vs + 256u] * vr;
//#endif
  }
}
//#else
@compute @workgroup_size(D)
fn main(@builtin(local_invocation_id) lidv: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let d = lidv.x;
  let head = wid.x;
  let i = wid.y;
  let b = select(i, 0u, PREFILL);
  let t = select(0u, i, PREFILL);
  let slot = rows[b * 8u + 0u];
  let pos = rows[b * 8u + 1u] + t;
  let is_q = head < HQ;
  let kvh = head - HQ;
  let kbase = select(HQ * D, 2u * HQ * D, GATED);
  var src: u32;
  if (is_q) { src = i * qkvWidth() + select(head * D, head * 2u * D, GATED); }
  else { src = i * qkvWidth() + kbase + kvh * D; }
  var v = qkv[src + d];
  let vs = i * qkvWidth() + kbase + HKV * D + select(kvh, 0u, is_q) * D + d;
  var vr = 1.0;
  if (V_NORM) {
    let vv = select(qkv[vs], 0.0, is_q);
    red[d] = vv * vv;
    workgroupBarrier();
    for (var st = D / 2u; st > 0u; st = st / 2u) {
      if (d < st) { red[d] += red[d + st]; }
      workgroupBarrier();
    }
    vr = inverseSqrt(red[0] / f32(D) + EPS);
    workgroupBarrier();
  }
  if (QK_NORM) {
    red[d] = v * v;
    workgroupBarrier();
    for (var st = D / 2u; st > 0u; st = st / 2u) {
      if (d < st) { red[d] += red[d + st]; }
      workgroupBarrier();
    }
    v = v * inverseSqrt(red[0] / f32(D) + EPS) * norms[select(D, 0u, is_q) + d];
  }
  buf[d] = v;
  workgroupBarrier();
  v = ropeRotate(v, buf[partnerOf(d)], d, pos);
//#if KV16
  red[d] = v;  // a pair of neighbours is packed by its even thread
  workgroupBarrier();
//#endif
  if (is_q) {
    q_out[(i * HQ + head) * D + d] = v;
  } else if (pos < CTX) {
    let at = kvRow(slot, kvh, pos) * D + d;
//#if KV16
    if (d % 2u == 0u) {
      kc[at / 2u] = pack2x16float(vec2<f32>(v, red[d + 1u]));
      vc[at / 2u] = pack2x16float(vec2<f32>(qkv[vs], qkv[vs + 1u]) * vr);
    }
//#else
    kc[at] = v;
    vc[at] = qkv[vs] * vr;
//#endif
  }
}
//#endif
