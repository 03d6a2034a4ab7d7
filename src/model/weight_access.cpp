// Typed weight access for the CPU reference and GPU upload: dequantized matrices and f32 vectors
// (mlc-format.md §1.6 decode, §2.3-2.5 dequantization).
#include <cstring>

#include "base/half.h"
#include "model/model_folder.h"
#include "model/quantize.h"

namespace ewgpu {

namespace {

// Decoded storage bytes of `t` -> f32 values.
std::vector<float> toFloats(const TensorInfo& t, const std::vector<uint8_t>& b) {
  const int64_t n = t.numel();
  std::vector<float> out((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = b.data() + i * dtypeSize(t.dtype);
    uint16_t u16;
    uint32_t u32;
    switch (t.dtype) {
      case DType::kF16:
        std::memcpy(&u16, p, 2);
        out[i] = halfToFloat(u16);
        break;
      case DType::kBF16:
        std::memcpy(&u16, p, 2);
        out[i] = bf16ToFloat(u16);
        break;
      case DType::kF32:
        std::memcpy(&out[i], p, 4);
        break;
      case DType::kU32:
        std::memcpy(&u32, p, 4);
        out[i] = (float)u32;
        break;
      case DType::kI32:
        std::memcpy(&u32, p, 4);
        out[i] = (float)(int32_t)u32;
        break;
      case DType::kU8:
        out[i] = (float)*p;
        break;
      case DType::kI8:
        out[i] = (float)(int8_t)*p;
        break;
    }
  }
  return out;
}

Error shapeError(const TensorInfo& t, std::vector<int64_t> expected) {
  return makeError(ErrorCode::kBadRequest, t.name + " does not have the requested shape",
                   {{"tensor", t.name}, {"expected", expected}, {"actual", t.shape}});
}

Result<std::vector<float>> loadQuantized(const ModelFolder& f, const TensorInfo& qw, const TensorInfo& qs, int rows,
                                         int cols, DequantRounding rounding) {
  const QuantSpec s = quantSpec(f.config().quant);
  if (!s.quantized)
    return makeError(ErrorCode::kInvalidModelFolder, qw.name + " is quantized but the folder is not",
                     {{"file", f.cache().file}, {"problem", "unexpected_quantized"}, {"tensor", qw.name}});
  std::vector<int64_t> wShape{rows, quantWordsPerRow(s, cols)}, sShape{rows, quantGroups(s, cols)};
  if (qw.shape != wShape || qw.dtype != DType::kU32) return shapeError(qw, wShape);
  if (qs.shape != sShape) return shapeError(qs, sShape);
  auto wb = f.storageBytes(qw);
  if (!wb.ok()) return std::move(wb).error();
  auto sb = f.storageBytes(qs);
  if (!sb.ok()) return std::move(sb).error();
  std::vector<uint32_t> words(qw.numel());
  std::memcpy(words.data(), wb->data(), words.size() * 4);  // little-endian host
  std::vector<float> scales = toFloats(qs, *sb);
  std::vector<float> out((size_t)rows * cols);
  bool f16 = rounding == DequantRounding::kModelDType && !s.f32_model;
  dequantizeMatrix(s, words.data(), scales.data(), rows, cols, out.data(), f16);
  return out;
}

}  // namespace

Result<std::vector<float>> loadMatrixF32(const ModelFolder& f, std::string_view module, int rows, int cols,
                                         DequantRounding rounding) {
  std::string m(module);
  const TensorInfo* qw = f.find(m + ".q_weight");
  const TensorInfo* qs = f.find(m + ".q_scale");
  if (qw && qs) return loadQuantized(f, *qw, *qs, rows, cols, rounding);
  const TensorInfo* w = f.find(m + ".weight");
  if (!w)
    return makeError(ErrorCode::kInvalidModelFolder, "no weight for module " + m,
                     {{"file", f.cache().file}, {"problem", "missing_tensor"}, {"tensor", m + ".weight"}});
  if (w->shape != std::vector<int64_t>{rows, cols}) return shapeError(*w, {rows, cols});
  auto b = f.storageBytes(*w);
  if (!b.ok()) return std::move(b).error();
  return toFloats(*w, *b);
}

Result<std::vector<float>> loadVectorF32(const ModelFolder& f, std::string_view name) {
  const TensorInfo* t = f.find(name);
  if (!t)
    return makeError(ErrorCode::kInvalidModelFolder, "no tensor " + std::string(name),
                     {{"file", f.cache().file}, {"problem", "missing_tensor"}, {"tensor", std::string(name)}});
  auto b = f.storageBytes(*t);
  if (!b.ok()) return std::move(b).error();
  return toFloats(*t, *b);
}

}  // namespace ewgpu
