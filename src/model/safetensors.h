// Minimal safetensors reader: 8-byte little-endian header length, JSON header {name: {dtype, shape,
// data_offsets}}, then the data. F32, BF16 and F16 tensors are read as f32.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/error.h"

namespace ewgpu {

// name -> f32 values (row-major). INVALID_MODEL_FOLDER {file, problem, tensor?} on a malformed file.
Result<std::map<std::string, std::vector<float>>> readSafetensorsF32(const std::string& path);

// Writes F32 tensors (tests build HF folders with this). shapes[name] gives each tensor's shape.
Status writeSafetensorsF32(const std::string& path, const std::map<std::string, std::vector<float>>& tensors,
                           const std::map<std::string, std::vector<int64_t>>& shapes);

}  // namespace ewgpu
