// Snippet (//#include kv_cache): the KV cache's bindings 2 and 3 with their loads and store, f32 or f16 pairs with
// the KV16 define (the layout is kv_page.wgsl's), for the attention kernels (attention.wgsl and attention_gqa.wgsl
// through attention_shared.wgsl, attention_prefill.wgsl).
//#if KV16
@group(0) @binding(2) var<storage, read_write> kc: array<vec2<u32>>; // [slots, HKV, CTX, D] or pages (kv_page)
@group(0) @binding(3) var<storage, read_write> vc: array<vec2<u32>>;
fn kload(i: u32) -> vec4<f32> { let w = kc[i]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
fn vload(i: u32) -> vec4<f32> { let w = vc[i]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
fn kvstore(i: u32, k: vec4<f32>, v: vec4<f32>) {
  kc[i] = vec2<u32>(pack2x16float(k.xy), pack2x16float(k.zw));
  vc[i] = vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));
}
//#else
@group(0) @binding(2) var<storage, read_write> kc: array<vec4<f32>>; // [slots, HKV, CTX, D] or pages (kv_page)
@group(0) @binding(3) var<storage, read_write> vc: array<vec4<f32>>;
fn kload(i: u32) -> vec4<f32> { return kc[i]; }
fn vload(i: u32) -> vec4<f32> { return vc[i]; }
fn kvstore(i: u32, k: vec4<f32>, v: vec4<f32>) {
  kc[i] = k;
  vc[i] = v;
}
//#endif
