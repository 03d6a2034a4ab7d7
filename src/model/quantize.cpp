// Group quantization encode/decode for q4f16_1, q4f32_1, q3f16_1 (mlc-format.md §2.3-2.5, NK layout).
#include "model/quantize.h"

#include <algorithm>
#include <cmath>

#include "base/half.h"

namespace ewgpu {

int64_t quantGroups(const QuantSpec& s, int64_t cols) { return (cols + s.group_size - 1) / s.group_size; }

int64_t quantWordsPerRow(const QuantSpec& s, int64_t cols) { return quantGroups(s, cols) * s.words_per_group; }

float roundScale(const QuantSpec& s, float v) {
  return s.f32_scales ? bf16ToFloat(floatToBf16(v)) : halfToFloat(floatToHalf(v));
}

void quantizeRow(const QuantSpec& s, const float* w, int64_t cols, uint32_t* words, float* scales) {
  const int64_t groups = quantGroups(s, cols);
  std::fill(words, words + groups * s.words_per_group, 0u);  // padding codes are 0
  const int maxCode = 2 * s.max_int;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t k0 = g * s.group_size, k1 = std::min<int64_t>(cols, k0 + s.group_size);
    float m = 0.0f;
    for (int64_t k = k0; k < k1; ++k) m = std::max(m, std::fabs(w[k]));
    const float scale = roundScale(s, m / (float)s.max_int);
    scales[g] = scale;
    for (int64_t k = k0; k < k1; ++k) {
      // q = clamp(round(w/scale + max_int)); the argument is >= 0 (up to rounding), so half away from zero
      // is half up on w/scale. A zero group gets the zero code max_int.
      float x = scale > 0.0f ? std::round(w[k] / scale + (float)s.max_int) : (float)s.max_int;
      uint32_t q = (uint32_t)std::clamp(std::isnan(x) ? (float)s.max_int : x, 0.0f, (float)maxCode);
      words[k / s.elems_per_word] |= q << ((k % s.elems_per_word) * s.bits);
    }
  }
}

QuantizedMatrix quantizeMatrix(const QuantSpec& s, const float* w, int64_t rows, int64_t cols) {
  QuantizedMatrix q;
  q.rows = rows;
  q.cols = cols;
  const int64_t wpr = quantWordsPerRow(s, cols), gpr = quantGroups(s, cols);
  q.q_weight.resize(rows * wpr);
  q.q_scale.resize(rows * gpr);
  for (int64_t r = 0; r < rows; ++r) quantizeRow(s, w + r * cols, cols, &q.q_weight[r * wpr], &q.q_scale[r * gpr]);
  return q;
}

void dequantizeMatrix(const QuantSpec& s, const uint32_t* q_weight, const float* q_scale, int64_t rows, int64_t cols,
                      float* out, bool roundToF16) {
  const int64_t wpr = quantWordsPerRow(s, cols), gpr = quantGroups(s, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* words = q_weight + r * wpr;
    const float* scales = q_scale + r * gpr;
    float* o = out + r * cols;
    for (int64_t k = 0; k < cols; ++k) {
      float v = (float)((int)quantCode(s, words, k) - s.max_int) * scales[k / s.group_size];
      o[k] = roundToF16 ? halfToFloat(floatToHalf(v)) : v;
    }
  }
}

}  // namespace ewgpu
