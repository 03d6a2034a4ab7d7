// CPU reference operations: the test oracle for every WGSL kernel and for the whole-model reference.
// Plain loops in the spirit of llama2.c: f32 storage, double accumulation, row-major tensors, shapes in
// comments. Nothing here is fast; everything here is meant to be obviously right.
//
// Conventions: a "matrix [rows, cols]" is row-major; "x [n, d]" is n token rows of width d. Functions take
// std::span<const float> inputs and return std::vector<float> (or write into a caller's span where the
// operation updates state in place). Sizes are asserted (a mismatch is a bug in the caller, not bad input).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ewgpu::ref {

// ---- elementwise / normalisation ---------------------------------------------------------------------

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double silu(double x) { return x * sigmoid(x); }
// PyTorch's softplus: log(1 + e^x), and x itself when x > 20.
double softplus(double x);

// RMSNorm of every row: x [n, d], w [d] -> [n, d]; y = x / sqrt(mean(x^2) + eps) * w.
// The weight is a plain multiplier (Qwen3.5 folders store 1 + w already; llama-family norms are plain).
std::vector<float> rmsNorm(std::span<const float> x, std::span<const float> w, float eps);

// Gated RMSNorm of the GDN output, per row: o [n, d], z [n, d], w [d] -> [n, d];
// y = (w * o / sqrt(mean(o^2) + eps)) * silu(z).
std::vector<float> gatedRmsNorm(std::span<const float> o, std::span<const float> z, std::span<const float> w,
                                float eps);

// L2 normalisation of every row: x [n, d] -> [n, d]; y = x / sqrt(sum(x^2) + eps) (a sum, not a mean).
std::vector<float> l2Norm(std::span<const float> x, int d, float eps = 1e-6f);

// Softmax over the whole span, in place (max-subtracted, double sums).
void softmax(std::span<float> x);

// SwiGLU: gate [n], up [n] -> silu(gate) * up [n].
std::vector<float> swiglu(std::span<const float> gate, std::span<const float> up);

// LayerNorm of every row: x [n, d], w [d], b [d] -> (x - mean) / sqrt(var + eps) * w + b (biased variance).
std::vector<float> layerNorm(std::span<const float> x, std::span<const float> w, std::span<const float> b, float eps);

// GELU, exact (0.5 x (1 + erf(x / sqrt 2))) and the tanh approximation (0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))).
inline double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
}
// cap · tanh(x / cap) (gemma2's soft-capping); cap 0 returns x.
inline double softcap(double x, double cap) { return cap > 0 ? cap * std::tanh(x / cap) : x; }

// ---- matrix products ---------------------------------------------------------------------------------

// y = x W^T + b: x [n, cols], W [rows, cols] (PyTorch Linear layout), b [rows] or empty -> y [n, rows].
std::vector<float> linear(std::span<const float> x, std::span<const float> w, int rows, int cols,
                          std::span<const float> bias = {});

// Logits from final hidden states: h [n, hidden], lm_head [vocab, hidden] -> [n, vocab]. (A linear without bias.)
std::vector<float> logits(std::span<const float> h, std::span<const float> lm_head, int vocab, int hidden);

// Index of the largest value (first one on ties).
int argmax(std::span<const float> x);

// ---- rotary position embedding -----------------------------------------------------------------------

// Llama-3 ("rope_type": "llama3") frequency remap parameters.
struct Llama3Scaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

// Inverse frequencies [rotary_dim / 2]: inv_freq[i] = theta^(-2i / rotary_dim), then remapped by llama3 scaling
// when given: wavelength 2*pi/f shorter than original_max/high_freq_factor is kept, longer than
// original_max/low_freq_factor is divided by factor, and in between it is interpolated linearly in
// (original_max / wavelength) between the two.
std::vector<double> ropeInvFreq(int rotary_dim, double theta, const std::optional<Llama3Scaling>& scaling = {});

// Every RoPE variant a config can ask for, resolved for one base (a layer's theta): llama3's remap, phi3's
// LongRoPE (per-frequency divisors, short below `original` positions and long from there, cos/sin scaled) and
// YaRN (ministral3: interpolation ramp between beta_fast and beta_slow, cos/sin scaled by its mscale).
struct RopeSpec {
  int rotary_dim = 0;
  double theta = 10000.0;
  std::optional<Llama3Scaling> llama3;
  std::vector<double> short_factor, long_factor;  // longrope
  int original = 0;                               // longrope: positions below use short_factor
  double attention_factor = 1.0;                  // cos and sin times this (longrope, yarn)
  bool yarn = false;
  double yarn_factor = 1.0, beta_fast = 32.0, beta_slow = 1.0;
  int yarn_original = 0;
  // gemma4's "proportional" RoPE (transformers 5.17 _compute_proportional_rope_parameters): the rotation spans the
  // whole head (rotary_dim = head_dim, pairs (i, i + head_dim/2)) but only the first rotated_pairs frequencies are
  // theta^(-2i/head_dim) / freq_divisor; the rest are 0 (those dims pass unrotated).
  bool proportional = false;
  // The angle pos * inv_freq rounded as float32 (inv_freq too), as transformers (and MLC's kernels) compute it.
  // gemma4 only: its softmax scale 1 over RMS-normed q/k turns the float32 angle rounding at positions ~150 into
  // 4e-5 of max |logit| against a double angle; the other families are insensitive and keep double angles.
  bool float32_angles = false;
  int rotated_pairs = 0;
  double freq_divisor = 1.0;
};
// The inverse frequencies [rotary_dim / 2] at position `pos` (longrope switches factors by position).
std::vector<double> ropeInvFreq(const RopeSpec& r, int64_t pos);
// cos / sin of pos · inv_freq[i], times attention_factor: what the GPU's RoPE table holds.
void ropeCosSin(const RopeSpec& r, int64_t pos, std::vector<double>& cos, std::vector<double>& sin);
// NeoX RoPE of one token's heads with a RopeSpec (as ropeNeox below).
void ropeNeox(std::span<float> vec, int head_dim, const RopeSpec& r, int64_t pos);

// NeoX ("rotate-half") RoPE in place on every head of one token: vec [n_heads * head_dim]. Within each head only
// dims [0, rotary_dim) rotate, pairing i with i + rotary_dim/2 at angle pos * inv_freq[i]:
//   x'_i = x_i cos - x_{i+R/2} sin,  x'_{i+R/2} = x_{i+R/2} cos + x_i sin.  Dims [rotary_dim, head_dim) pass.
void ropeNeox(std::span<float> vec, int head_dim, int rotary_dim, int64_t pos, double theta,
              const std::optional<Llama3Scaling>& scaling = {});

// ---- attention ---------------------------------------------------------------------------------------

// Causal grouped-query attention of n_new new tokens over a cache that already holds them.
//   q [n_new, n_heads * head_dim] (after norm/RoPE), k_cache / v_cache [t_total, n_kv_heads * head_dim]
//   (token-major; the new tokens are the last n_new rows). New token i sits at position t_total - n_new + i and
//   sees cache rows 0..that position. Query head h reads KV head h / (n_heads / n_kv_heads).
//   scale is usually 1/sqrt(head_dim). Returns [n_new, n_heads * head_dim].
// window > 0: position p sees only [p - window + 1, p]; softcap > 0: scores (after the scale) soft-capped.
std::vector<float> causalAttention(std::span<const float> q, std::span<const float> k_cache,
                                   std::span<const float> v_cache, int n_new, int n_heads, int n_kv_heads, int head_dim,
                                   float scale, int window = 0, float softcap = 0.0f);

// ---- Gated DeltaNet (Qwen3.5 linear attention) -------------------------------------------------------

// Causal depthwise conv1d (no bias, no activation) with a rolling state.
//   x [n, channels] raw inputs of the new tokens; w [channels, kernel] (w[c, kernel-1] multiplies the current
//   token); state [kernel-1, channels] the previous raw inputs, oldest first (zeros for a new sequence); it is
//   replaced by the last kernel-1 rows of [state ; x]. Returns [n, channels].
std::vector<float> causalConv1d(std::span<const float> x, int channels, std::span<const float> w, int kernel,
                                std::span<float> state);

struct GdnShape {
  int hk = 0;  // key heads (q and k)
  int hv = 0;  // value heads = number of recurrent states; a multiple of hk (GVA when larger)
  int dk = 0;  // key head dim
  int dv = 0;  // value head dim
  int keyHeadOf(int value_head) const { return value_head / (hv / hk); }
};

// Per-token gates from the projections: a [n, hv], b [n, hv], a_log [hv], dt_bias [hv] ->
// g [n, hv] = -exp(A_log) * softplus(a + dt_bias) (log decay <= 0) and beta [n, hv] = sigmoid(b).
void gdnGates(std::span<const float> a, std::span<const float> b, std::span<const float> a_log,
              std::span<const float> dt_bias, std::vector<float>& g, std::vector<float>& beta);

// One recurrence step for one token (qwen3_5-architecture.md §6.5/§6.6). q, k [hk * dk] (already L2-normed, q also
// scaled by 1/sqrt(dk)); v [hv * dv]; g, beta [hv]. state [hv, dk, dv] is updated in place:
//   S <- exp(g) S;  S <- S + k (beta (v - S^T k))^T;  o = S^T q.   Returns o [hv * dv].
std::vector<float> gdnRecurrentStep(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                    std::span<const float> g, std::span<const float> beta, const GdnShape& s,
                                    std::span<float> state);

// n tokens by repeated steps: q, k [n, hk*dk]; v [n, hv*dv]; g, beta [n, hv]; state [hv, dk, dv] in/out.
// Returns o [n, hv*dv].
std::vector<float> gdnRecurrent(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                std::span<const float> g, std::span<const float> beta, const GdnShape& s,
                                std::span<float> state);

// The same result by the chunked (WY / UT-transform) form of §6.8 with chunks of `chunk` tokens, the last one
// partial. Mathematically identical to gdnRecurrent; this is what a prefill kernel computes.
std::vector<float> gdnChunked(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                              std::span<const float> g, std::span<const float> beta, const GdnShape& s,
                              std::span<float> state, int chunk = 64);

}  // namespace ewgpu::ref
