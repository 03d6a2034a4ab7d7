// Snippet (//#include qk_rope): the q/k/v projection row width and the rotary embedding, shared by qk_prepare and
// the fused decode attention. Uses the including kernel's D, HQ, HKV, GATED, R, CTX overrides and its `rope`
// binding ([CTX, R]: cos(pos·f_i) for i < R/2, then sin).
// KV_SHARED (gemma4's KV-shared layers): the projection holds q only; k and v come from another layer's cache.
override KV_SHARED: bool = false;
fn qkvWidth() -> u32 { return select(HQ * D, 2u * HQ * D, GATED) + select(2u * HKV * D, 0u, KV_SHARED); }

// Element d of a head at position p after NeoX rotate-half over the first R dims: x is element d, partner the
// element R/2 away (d + R/2 below R/2, d - R/2 from R/2 on; partnerOf gives its index). Dims from R on and
// positions past the table pass through unchanged.
fn partnerOf(d: u32) -> u32 { return select(d - R / 2u, d + R / 2u, d < R / 2u); }

fn ropeRotate(x: f32, partner: f32, d: u32, p: u32) -> f32 {
  if (d >= R || p >= CTX) { return x; }
  let half = R / 2u;
  let c = rope[p * R + d % half];
  let s = rope[p * R + half + d % half];
  return select(x * c + partner * s, x * c - partner * s, d < half);
}
