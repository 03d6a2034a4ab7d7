// Activations of the linear epilogues (Epilogue in kernels/linear.h; the EPI constant or uniform of gemv.wgsl,
// gemv_batch.wgsl, gemm.wgsl and linear_cpu.wgsl):
//   2 SwiGLU  y = silu(g) · u          3 GELU   y = gelu(v), exact (erf)
//   5 GeGLU   y = gelu_tanh(g) · u     4 GELU   y = gelu_tanh(v) (the tanh approximation, "gelu_new")
// Gated epilogues (2, 5) read rows r and r + N/2 of the weight as gate and up. Plain ones (3, 4) apply to the
// stored value after the bias.

fn epiGated(epi: u32) -> bool { return epi == 2u || epi == 5u; }

fn actSilu(v: f32) -> f32 { return v / (1.0 + exp(-v)); }

// tanh through exp on a clamped argument: |x| ≥ 10 is ±1 in f32, and the clamp keeps exp finite.
fn actTanh(x: f32) -> f32 {
  let e = exp(-2.0 * abs(clamp(x, -10.0, 10.0)));
  return sign(x) * (1.0 - e) / (1.0 + e);
}

fn actGeluTanh(v: f32) -> f32 { return 0.5 * v * (1.0 + actTanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

// erf by Abramowitz & Stegun 7.1.26 (absolute error ≤ 1.5e-7).
fn actErf(x: f32) -> f32 {
  let a = abs(x);
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-a * a));
}

fn actGeluErf(v: f32) -> f32 { return 0.5 * v * (1.0 + actErf(v * 0.7071067811865476)); }

// The gate's activation of a gated epilogue.
fn actGate(epi: u32, g: f32) -> f32 { return select(actSilu(g), actGeluTanh(g), epi == 5u); }

// A plain epilogue's activation (identity for store / residual add).
fn actPlain(epi: u32, v: f32) -> f32 {
  if (epi == 3u) { return actGeluErf(v); }
  if (epi == 4u) { return actGeluTanh(v); }
  return v;
}

// Ministral 3's query scale by position (Llama 4's attention temperature): 1 + beta · ln(1 + floor(p / orig));
// beta 0 gives 1.
fn queryScale(p: u32, beta: f32, orig: u32) -> f32 {
  if (beta == 0.0) { return 1.0; }
  return 1.0 + beta * log(1.0 + floor(f32(p) / f32(orig)));
}

// Gemma 2's soft-capping of attention scores and logits: cap · tanh(v / cap); cap 0 leaves v as it is.
fn softcap(v: f32, cap: f32) -> f32 {
  if (cap > 0.0) { return cap * actTanh(v / cap); }
  return v;
}
