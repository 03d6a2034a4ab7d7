// Group quantization of MLC q4*/q3* weights (mlc-format.md §2.3-2.5), NK layout: encode f32 [rows, cols] into
// q_weight words + q_scale, and the exact decode. Rounding: codes use round-half-away-from-zero of w/scale;
// scale = max|w| / max_int computed in f32 from the input, then rounded to the stored scale precision
// (f16 for *f16_*, bf16 for q4f32_1 because f32 scales are stored as bf16 on disk) so the codes are computed
// with exactly the scale a reader sees. Codes are 0..2*max_int; group padding codes are 0.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace ewgpu {

struct QuantizedMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<uint32_t> q_weight;  // [rows, ngroups * words_per_group]
  std::vector<float> q_scale;      // [rows, ngroups], values exactly representable in the stored scale dtype
};

int64_t quantGroups(const QuantSpec& s, int64_t cols);       // ceil(cols / group_size)
int64_t quantWordsPerRow(const QuantSpec& s, int64_t cols);  // groups * words_per_group

// Stored-precision rounding of a scale: f16 for f16 scales, bf16 (MLC f32-to-bf16 encoder) for f32 scales.
float roundScale(const QuantSpec& s, float v);

// w: row-major [rows, cols]. Requires s.quantized.
QuantizedMatrix quantizeMatrix(const QuantSpec& s, const float* w, int64_t rows, int64_t cols);
// Encodes one row: words [quantWordsPerRow], scales [quantGroups].
void quantizeRow(const QuantSpec& s, const float* w, int64_t cols, uint32_t* words, float* scales);

// out: row-major [rows, cols]. roundToF16: round every product to f16 (MLC f16 model dtype semantics).
void dequantizeMatrix(const QuantSpec& s, const uint32_t* q_weight, const float* q_scale, int64_t rows, int64_t cols,
                      float* out, bool roundToF16 = false);

// The code of element k of a packed row.
inline uint32_t quantCode(const QuantSpec& s, const uint32_t* rowWords, int64_t k) {
  return (rowWords[k / s.elems_per_word] >> ((k % s.elems_per_word) * s.bits)) & ((1u << s.bits) - 1u);
}

}  // namespace ewgpu
