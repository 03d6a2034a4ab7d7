// CPU reference operations (see reference_ops.h): f32 in and out, double inside every sum.
#include "model/reference_ops.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>

namespace ewgpu::ref {

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

std::vector<float> rmsNorm(std::span<const float> x, std::span<const float> w, float eps) {
  const size_t d = w.size();
  assert(d > 0 && x.size() % d == 0);
  std::vector<float> y(x.size());
  for (size_t row = 0; row < x.size() / d; ++row) {
    const float* xr = x.data() + row * d;
    double ss = 0;
    for (size_t i = 0; i < d; ++i) ss += (double)xr[i] * xr[i];
    const double inv = 1.0 / std::sqrt(ss / (double)d + eps);
    for (size_t i = 0; i < d; ++i) y[row * d + i] = (float)(xr[i] * inv * w[i]);
  }
  return y;
}

std::vector<float> gatedRmsNorm(std::span<const float> o, std::span<const float> z, std::span<const float> w,
                                float eps) {
  assert(o.size() == z.size());
  std::vector<float> y = rmsNorm(o, w, eps);
  for (size_t i = 0; i < y.size(); ++i) y[i] = (float)(y[i] * silu(z[i]));
  return y;
}

std::vector<float> l2Norm(std::span<const float> x, int d, float eps) {
  assert(d > 0 && x.size() % d == 0);
  std::vector<float> y(x.size());
  for (size_t row = 0; row < x.size() / d; ++row) {
    const float* xr = x.data() + row * d;
    double ss = 0;
    for (int i = 0; i < d; ++i) ss += (double)xr[i] * xr[i];
    const double inv = 1.0 / std::sqrt(ss + eps);
    for (int i = 0; i < d; ++i) y[row * d + i] = (float)(xr[i] * inv);
  }
  return y;
}

void softmax(std::span<float> x) {
  if (x.empty()) return;
  const double mx = *std::max_element(x.begin(), x.end());
  double sum = 0;
  for (float v : x) sum += std::exp((double)v - mx);
  for (float& v : x) v = (float)(std::exp((double)v - mx) / sum);
}

std::vector<float> swiglu(std::span<const float> gate, std::span<const float> up) {
  assert(gate.size() == up.size());
  std::vector<float> y(gate.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = (float)(silu(gate[i]) * up[i]);
  return y;
}

std::vector<float> layerNorm(std::span<const float> x, std::span<const float> w, std::span<const float> b, float eps) {
  const size_t d = w.size();
  assert(d > 0 && x.size() % d == 0 && b.size() == d);
  std::vector<float> y(x.size());
  for (size_t row = 0; row < x.size() / d; ++row) {
    const float* xr = x.data() + row * d;
    double mean = 0, var = 0;
    for (size_t i = 0; i < d; ++i) mean += xr[i];
    mean /= (double)d;
    for (size_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(var / (double)d + eps);
    for (size_t i = 0; i < d; ++i) y[row * d + i] = (float)((xr[i] - mean) * inv * w[i] + b[i]);
  }
  return y;
}

std::vector<float> linear(std::span<const float> x, std::span<const float> w, int rows, int cols,
                          std::span<const float> bias) {
  assert(cols > 0 && x.size() % cols == 0 && w.size() == (size_t)rows * cols);
  assert(bias.empty() || bias.size() == (size_t)rows);
  const size_t n = x.size() / cols;
  std::vector<float> y(n * rows);
  for (size_t t = 0; t < n; ++t) {
    const float* xt = x.data() + t * cols;
    for (int r = 0; r < rows; ++r) {
      const float* wr = w.data() + (size_t)r * cols;
      double acc = bias.empty() ? 0.0 : bias[r];
      for (int c = 0; c < cols; ++c) acc += (double)wr[c] * xt[c];
      y[t * rows + r] = (float)acc;
    }
  }
  return y;
}

std::vector<float> logits(std::span<const float> h, std::span<const float> lm_head, int vocab, int hidden) {
  return linear(h, lm_head, vocab, hidden);
}

int argmax(std::span<const float> x) {
  return x.empty() ? -1 : (int)(std::max_element(x.begin(), x.end()) - x.begin());
}

std::vector<double> ropeInvFreq(int rotary_dim, double theta, const std::optional<Llama3Scaling>& scaling) {
  assert(rotary_dim > 0 && rotary_dim % 2 == 0);
  std::vector<double> inv(rotary_dim / 2);
  for (int i = 0; i < rotary_dim / 2; ++i) inv[i] = std::pow(theta, -2.0 * i / rotary_dim);
  if (!scaling) return inv;
  const Llama3Scaling& s = *scaling;
  const double old_len = s.original_max_position_embeddings;
  const double short_wavelen = old_len / s.high_freq_factor;  // shorter than this: unchanged
  const double long_wavelen = old_len / s.low_freq_factor;    // longer than this: divided by factor
  for (double& f : inv) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < short_wavelen) continue;
    if (wavelen > long_wavelen) {
      f /= s.factor;
      continue;
    }
    const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = (1.0 - smooth) * f / s.factor + smooth * f;
  }
  return inv;
}

std::vector<double> ropeInvFreq(const RopeSpec& r, int64_t pos) {
  const int R = r.rotary_dim;
  if (r.proportional) {
    std::vector<double> inv(R / 2, 0.0);
    for (int i = 0; i < std::min(r.rotated_pairs, R / 2); ++i)
      inv[i] = 1.0 / std::pow(r.theta, 2.0 * i / R) / r.freq_divisor;
    return inv;
  }
  if (!r.short_factor.empty()) {  // longrope
    const std::vector<double>& ext = pos < r.original ? r.short_factor : r.long_factor;
    std::vector<double> inv(R / 2);
    for (int i = 0; i < R / 2; ++i) inv[i] = 1.0 / (ext[i] * std::pow(r.theta, 2.0 * i / R));
    return inv;
  }
  if (r.yarn) {
    // Frequencies rotating fewer than beta_slow times over the original length are interpolated (divided by the
    // factor), more than beta_fast kept, a linear ramp between (over frequency indices).
    auto dim_of = [&](double rotations) {
      return R * std::log(r.yarn_original / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(r.theta));
    };
    double lo = std::max(0.0, std::floor(dim_of(r.beta_fast)));
    double hi = std::min((double)R - 1, std::ceil(dim_of(r.beta_slow)));
    if (lo == hi) hi += 0.001;
    std::vector<double> inv(R / 2);
    for (int i = 0; i < R / 2; ++i) {
      const double extrap = 1.0 / std::pow(r.theta, 2.0 * i / R), interp = extrap / r.yarn_factor;
      const double ramp = std::clamp((i - lo) / (hi - lo), 0.0, 1.0);
      const double keep = 1.0 - ramp;  // weight of the extrapolated (unchanged) frequency
      inv[i] = interp * (1.0 - keep) + extrap * keep;
    }
    return inv;
  }
  return ropeInvFreq(R, r.theta, r.llama3);
}

void ropeCosSin(const RopeSpec& r, int64_t pos, std::vector<double>& cos, std::vector<double>& sin) {
  const std::vector<double> inv = ropeInvFreq(r, pos);
  cos.resize(inv.size());
  sin.resize(inv.size());
  for (size_t i = 0; i < inv.size(); ++i) {
    const double angle = r.float32_angles ? (double)((float)pos * (float)inv[i]) : (double)pos * inv[i];
    cos[i] = std::cos(angle) * r.attention_factor;
    sin[i] = std::sin(angle) * r.attention_factor;
  }
}

void ropeNeox(std::span<float> vec, int head_dim, const RopeSpec& r, int64_t pos) {
  assert(head_dim > 0 && vec.size() % head_dim == 0 && r.rotary_dim <= head_dim);
  std::vector<double> cs, sn;
  ropeCosSin(r, pos, cs, sn);
  const int half = r.rotary_dim / 2;
  for (size_t base = 0; base < vec.size(); base += head_dim) {
    float* x = vec.data() + base;
    for (int i = 0; i < half; ++i) {
      const double a = x[i], b = x[i + half];
      x[i] = (float)(a * cs[i] - b * sn[i]);
      x[i + half] = (float)(b * cs[i] + a * sn[i]);
    }
  }
}

void ropeNeox(std::span<float> vec, int head_dim, int rotary_dim, int64_t pos, double theta,
              const std::optional<Llama3Scaling>& scaling) {
  RopeSpec r;
  r.rotary_dim = rotary_dim;
  r.theta = theta;
  r.llama3 = scaling;
  ropeNeox(vec, head_dim, r, pos);
}

std::vector<float> causalAttention(std::span<const float> q, std::span<const float> k_cache,
                                   std::span<const float> v_cache, int n_new, int n_heads, int n_kv_heads, int head_dim,
                                   float scale, int window, float cap) {
  const size_t q_width = (size_t)n_heads * head_dim, kv_width = (size_t)n_kv_heads * head_dim;
  assert(q.size() == n_new * q_width && k_cache.size() == v_cache.size() && k_cache.size() % kv_width == 0);
  const int t_total = (int)(k_cache.size() / kv_width);
  assert(n_new <= t_total && n_heads % n_kv_heads == 0);
  const int group = n_heads / n_kv_heads;
  std::vector<float> out(n_new * q_width);
  std::vector<double> p(t_total);
  for (int i = 0; i < n_new; ++i) {
    const int pos = t_total - n_new + i;
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q.data() + i * q_width + (size_t)h * head_dim;
      const size_t kv_off = (size_t)(h / group) * head_dim;
      double mx = -INFINITY;
      const int first = window > 0 ? std::max(0, pos - window + 1) : 0;
      for (int t = first; t <= pos; ++t) {
        const float* kt = k_cache.data() + t * kv_width + kv_off;
        double dot = 0;
        for (int d = 0; d < head_dim; ++d) dot += (double)qh[d] * kt[d];
        p[t] = softcap(dot * scale, cap);
        mx = std::max(mx, p[t]);
      }
      double sum = 0;
      for (int t = first; t <= pos; ++t) sum += (p[t] = std::exp(p[t] - mx));
      float* oh = out.data() + i * q_width + (size_t)h * head_dim;
      for (int d = 0; d < head_dim; ++d) {
        double acc = 0;
        for (int t = first; t <= pos; ++t) acc += p[t] * v_cache[t * kv_width + kv_off + d];
        oh[d] = (float)(acc / sum);
      }
    }
  }
  return out;
}

std::vector<float> causalConv1d(std::span<const float> x, int channels, std::span<const float> w, int kernel,
                                std::span<float> state) {
  const size_t hist = (size_t)kernel - 1;
  assert(x.size() % channels == 0 && w.size() == (size_t)channels * kernel && state.size() == hist * channels);
  const size_t n = x.size() / channels;
  // window = [state ; x]: row r of the window is state row r for r < hist, else x row r - hist.
  auto at = [&](size_t r, int c) -> double {
    return r < hist ? state[r * channels + c] : x[(r - hist) * channels + c];
  };
  std::vector<float> y(n * channels);
  for (size_t t = 0; t < n; ++t) {
    for (int c = 0; c < channels; ++c) {
      double acc = 0;
      for (int j = 0; j < kernel; ++j) acc += (double)w[(size_t)c * kernel + j] * at(t + j, c);
      y[t * channels + c] = (float)acc;
    }
  }
  std::vector<float> next(hist * channels);
  for (size_t r = 0; r < hist; ++r)
    for (int c = 0; c < channels; ++c) next[r * channels + c] = (float)at(n + r, c);
  std::copy(next.begin(), next.end(), state.begin());
  return y;
}

void gdnGates(std::span<const float> a, std::span<const float> b, std::span<const float> a_log,
              std::span<const float> dt_bias, std::vector<float>& g, std::vector<float>& beta) {
  const size_t hv = a_log.size();
  assert(a.size() == b.size() && a.size() % hv == 0 && dt_bias.size() == hv);
  g.assign(a.size(), 0.0f);
  beta.assign(a.size(), 0.0f);
  for (size_t i = 0; i < a.size(); ++i) {
    const size_t j = i % hv;
    g[i] = (float)(-std::exp((double)a_log[j]) * softplus((double)a[i] + dt_bias[j]));
    beta[i] = (float)sigmoid(b[i]);
  }
}

std::vector<float> gdnRecurrentStep(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                    std::span<const float> g, std::span<const float> beta, const GdnShape& s,
                                    std::span<float> state) {
  assert(q.size() == (size_t)s.hk * s.dk && k.size() == q.size() && v.size() == (size_t)s.hv * s.dv);
  assert(g.size() == (size_t)s.hv && beta.size() == g.size() && state.size() == (size_t)s.hv * s.dk * s.dv);
  std::vector<float> o(s.hv * s.dv);
  std::vector<double> delta(s.dv);
  for (int j = 0; j < s.hv; ++j) {
    const float* kj = k.data() + s.keyHeadOf(j) * s.dk;
    const float* qj = q.data() + s.keyHeadOf(j) * s.dk;
    float* S = state.data() + (size_t)j * s.dk * s.dv;  // [dk, dv]
    const double alpha = std::exp((double)g[j]);
    for (int i = 0; i < s.dk * s.dv; ++i) S[i] = (float)(alpha * S[i]);
    for (int n = 0; n < s.dv; ++n) {
      double m = 0;
      for (int i = 0; i < s.dk; ++i) m += (double)S[i * s.dv + n] * kj[i];
      delta[n] = beta[j] * ((double)v[j * s.dv + n] - m);
    }
    for (int i = 0; i < s.dk; ++i)
      for (int n = 0; n < s.dv; ++n) S[i * s.dv + n] = (float)(S[i * s.dv + n] + (double)kj[i] * delta[n]);
    for (int n = 0; n < s.dv; ++n) {
      double acc = 0;
      for (int i = 0; i < s.dk; ++i) acc += (double)S[i * s.dv + n] * qj[i];
      o[j * s.dv + n] = (float)acc;
    }
  }
  return o;
}

std::vector<float> gdnRecurrent(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                                std::span<const float> g, std::span<const float> beta, const GdnShape& s,
                                std::span<float> state) {
  const size_t kw = (size_t)s.hk * s.dk, vw = (size_t)s.hv * s.dv;
  assert(q.size() % kw == 0);
  const size_t n = q.size() / kw;
  std::vector<float> o(n * vw);
  for (size_t t = 0; t < n; ++t) {
    std::vector<float> ot = gdnRecurrentStep(q.subspan(t * kw, kw), k.subspan(t * kw, kw), v.subspan(t * vw, vw),
                                             g.subspan(t * s.hv, s.hv), beta.subspan(t * s.hv, s.hv), s, state);
    std::copy(ot.begin(), ot.end(), o.begin() + t * vw);
  }
  return o;
}

namespace {

// One chunk of one value head (§6.8). Rows are the chunk's L tokens; q, k rows [dk], v rows [dv] (pointers with
// row strides); S [dk, dv] is the incoming state, replaced by the outgoing one; o rows [dv] are written.
struct ChunkHead {
  int L, dk, dv;   // chunk length, key and value head dims
  const float* q;  // row r at q + r * k_stride, [dk]
  const float* k;  // row r at k + r * k_stride, [dk]
  const float* v;  // row r at v + r * v_stride, [dv]
  size_t k_stride, v_stride;
  const float* g;     // log decay of row r at g[r * gate_stride]
  const float* beta;  // beta of row r at beta[r * gate_stride]
  size_t gate_stride;
  float* o;  // output row r at o + r * o_stride, [dv]
  size_t o_stride;
};

double dot(const float* a, const float* b, int n) {
  double acc = 0;
  for (int i = 0; i < n; ++i) acc += (double)a[i] * b[i];
  return acc;
}

void chunkOneHead(const ChunkHead& c, std::vector<double>& S) {
  const int L = c.L, dk = c.dk, dv = c.dv;
  auto qr = [&](int r) { return c.q + r * c.k_stride; };
  auto kr = [&](int r) { return c.k + r * c.k_stride; };
  std::vector<double> G(L);  // cumulative log decay inside the chunk
  for (int r = 0; r < L; ++r) G[r] = (r ? G[r - 1] : 0.0) + c.g[r * c.gate_stride];
  // A[r][s] = beta_r exp(G_r - G_s) (k_r . k_s), s < r; solve (I + A) X = B by forward substitution for
  // B = diag(beta) V (-> U') and B = diag(beta e) K (-> Wk).
  std::vector<double> A(L * L, 0.0), Up(L * dv), Wk(L * dk);
  for (int r = 0; r < L; ++r) {
    const double br = c.beta[r * c.gate_stride];
    for (int s = 0; s < r; ++s) A[r * L + s] = br * std::exp(G[r] - G[s]) * dot(kr(r), kr(s), dk);
    for (int n = 0; n < dv; ++n) Up[r * dv + n] = br * c.v[r * c.v_stride + n];
    for (int i = 0; i < dk; ++i) Wk[r * dk + i] = br * std::exp(G[r]) * kr(r)[i];
    for (int s = 0; s < r; ++s) {
      for (int n = 0; n < dv; ++n) Up[r * dv + n] -= A[r * L + s] * Up[s * dv + n];
      for (int i = 0; i < dk; ++i) Wk[r * dk + i] -= A[r * L + s] * Wk[s * dk + i];
    }
  }
  // U = U' - Wk S0 (row r is the delta of step r).
  std::vector<double> U(Up);
  for (int r = 0; r < L; ++r)
    for (int i = 0; i < dk; ++i)
      for (int n = 0; n < dv; ++n) U[r * dv + n] -= Wk[r * dk + i] * S[i * dv + n];
  // O = diag(e) Q S0 + ((Q K^T) .* M) U, M[r][s] = exp(G_r - G_s) for s <= r.
  for (int r = 0; r < L; ++r) {
    std::vector<double> acc(dv, 0.0);
    for (int i = 0; i < dk; ++i)
      for (int n = 0; n < dv; ++n) acc[n] += std::exp(G[r]) * qr(r)[i] * S[i * dv + n];
    for (int s = 0; s <= r; ++s) {
      const double w = std::exp(G[r] - G[s]) * dot(qr(r), kr(s), dk);
      for (int n = 0; n < dv; ++n) acc[n] += w * U[s * dv + n];
    }
    for (int n = 0; n < dv; ++n) c.o[r * c.o_stride + n] = (float)acc[n];
  }
  // S_C = e_last S0 + sum_r exp(G_last - G_r) k_r U_r^T.
  const double e_last = std::exp(G[L - 1]);
  for (double& x : S) x *= e_last;
  for (int r = 0; r < L; ++r) {
    const double w = std::exp(G[L - 1] - G[r]);
    for (int i = 0; i < dk; ++i)
      for (int n = 0; n < dv; ++n) S[i * dv + n] += w * kr(r)[i] * U[r * dv + n];
  }
}

}  // namespace

std::vector<float> gdnChunked(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                              std::span<const float> g, std::span<const float> beta, const GdnShape& s,
                              std::span<float> state, int chunk) {
  const size_t kw = (size_t)s.hk * s.dk, vw = (size_t)s.hv * s.dv, sw = (size_t)s.dk * s.dv;
  assert(q.size() % kw == 0 && k.size() == q.size() && chunk > 0 && state.size() == s.hv * sw);
  const int n = (int)(q.size() / kw);
  assert(v.size() == n * vw && g.size() == (size_t)n * s.hv && beta.size() == g.size());
  std::vector<float> o(n * vw);
  for (int j = 0; j < s.hv; ++j) {
    std::vector<double> S(state.begin() + j * sw, state.begin() + (j + 1) * sw);
    const size_t koff = (size_t)s.keyHeadOf(j) * s.dk, voff = (size_t)j * s.dv;
    for (int t0 = 0; t0 < n; t0 += chunk) {
      const ChunkHead c{.L = std::min(chunk, n - t0),
                        .dk = s.dk,
                        .dv = s.dv,
                        .q = q.data() + t0 * kw + koff,
                        .k = k.data() + t0 * kw + koff,
                        .v = v.data() + t0 * vw + voff,
                        .k_stride = kw,
                        .v_stride = vw,
                        .g = g.data() + (size_t)t0 * s.hv + j,
                        .beta = beta.data() + (size_t)t0 * s.hv + j,
                        .gate_stride = (size_t)s.hv,
                        .o = o.data() + t0 * vw + voff,
                        .o_stride = vw};
      chunkOneHead(c, S);
      // The state lives in f32 between chunks, as on the GPU and in HF.
      for (double& x : S) x = (float)x;
    }
    std::copy(S.begin(), S.end(), state.begin() + j * sw);
  }
  return o;
}

}  // namespace ewgpu::ref
