// safetensors reading/writing (F32/BF16/F16 as f32): header = u64 LE length + JSON {name: {dtype, shape,
// data_offsets:[begin,end]}} (offsets relative to the data section that follows the header).
#include "model/safetensors.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/half.h"
#include "base/mapped_file.h"

namespace ewgpu {

namespace {

Error stError(const std::string& file, const std::string& problem, const std::string& msg,
              const std::string& tensor = "") {
  nlohmann::json d = {{"file", file}, {"problem", problem}};
  if (!tensor.empty()) d["tensor"] = tensor;
  return makeError(ErrorCode::kInvalidModelFolder, file + ": " + msg, std::move(d));
}

Result<std::vector<float>> decodeTensor(const std::string& file, const std::string& name, const std::string& dtype,
                                        const uint8_t* p, uint64_t nbytes, int64_t numel) {
  int size = dtype == "F32" ? 4 : (dtype == "BF16" || dtype == "F16") ? 2 : 0;
  if (!size) return stError(file, "unknown_dtype", name + " has unsupported dtype " + dtype, name);
  if (nbytes != (uint64_t)numel * size) return stError(file, "nbytes_mismatch", name + " size disagrees", name);
  std::vector<float> out((size_t)numel);
  for (int64_t i = 0; i < numel; ++i) {
    uint16_t h;
    if (size == 4) {
      std::memcpy(&out[i], p + 4 * i, 4);
      continue;
    }
    std::memcpy(&h, p + 2 * i, 2);
    out[i] = dtype == "BF16" ? bf16ToFloat(h) : halfToFloat(h);
  }
  return out;
}

}  // namespace

Result<std::map<std::string, std::vector<float>>> readSafetensorsF32(const std::string& path) {
  std::string file = path.substr(path.find_last_of('/') + 1);
  auto m = MappedFile::open(path);
  if (!m.ok()) return stError(file, "missing", "cannot open");
  std::span<const uint8_t> b = m->bytes();
  uint64_t hlen = 0;
  if (b.size() < 8) return stError(file, "bad_header", "shorter than its header length");
  std::memcpy(&hlen, b.data(), 8);
  if (hlen > b.size() - 8) return stError(file, "bad_header", "header length beyond the file");
  auto h = nlohmann::json::parse(b.begin() + 8, b.begin() + 8 + (long)hlen, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return stError(file, "bad_json", "header is not a JSON object");
  const uint8_t* data = b.data() + 8 + hlen;
  uint64_t dataSize = b.size() - 8 - hlen;
  std::map<std::string, std::vector<float>> out;
  try {  // json accessors throw on wrong types: turn that into an Error here
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      const auto& e = it.value();
      if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets") ||
          !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
        return stError(file, "bad_header", it.key() + " has a malformed entry", it.key());
      uint64_t begin = e["data_offsets"][0].get<uint64_t>(), end = e["data_offsets"][1].get<uint64_t>();
      if (begin > end || end > dataSize) return stError(file, "outside_file", it.key() + " lies outside", it.key());
      int64_t numel = 1;
      for (const auto& d : e["shape"]) numel *= d.get<int64_t>();
      auto v = decodeTensor(file, it.key(), e["dtype"].get<std::string>(), data + begin, end - begin, numel);
      if (!v.ok()) return std::move(v).error();
      out.emplace(it.key(), std::move(v).value());
    }
  } catch (const nlohmann::json::exception& e) {
    return stError(file, "bad_header", std::string("malformed header: ") + e.what());
  }
  return out;
}

Status writeSafetensorsF32(const std::string& path, const std::map<std::string, std::vector<float>>& tensors,
                           const std::map<std::string, std::vector<int64_t>>& shapes) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t off = 0;
  for (const auto& [name, v] : tensors) {
    auto s = shapes.find(name);
    std::vector<int64_t> shape = s != shapes.end() ? s->second : std::vector<int64_t>{(int64_t)v.size()};
    h[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {off, off + v.size() * 4}}};
    off += v.size() * 4;
  }
  std::string hs = h.dump();
  uint64_t hlen = hs.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write((const char*)&hlen, 8);
  out.write(hs.data(), (std::streamsize)hs.size());
  for (const auto& [name, v] : tensors) out.write((const char*)v.data(), (std::streamsize)(v.size() * 4));
  out.close();
  if (!out) return makeError(ErrorCode::kIo, "cannot write " + path, {{"path", path}});
  return {};
}

}  // namespace ewgpu
