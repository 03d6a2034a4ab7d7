// ModelFolder: whole-folder validation by stat + manifest + expected parameter list, lazy shard mapping,
// md5 verification (mlc-format.md §1.7).
#include "model/model_folder.h"

#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "base/half.h"
#include "base/md5.h"

namespace ewgpu {

struct ModelFolder::Shards {
  std::mutex mu;                  // guards files/mapped
  std::vector<MappedFile> files;  // [shards]
  std::vector<bool> mapped;
};

namespace {

Error folderError(const std::string& file, const std::string& problem, const std::string& msg,
                  nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json d = {{"file", file}, {"problem", problem}};
  d.update(extra);
  return makeError(ErrorCode::kInvalidModelFolder, file + ": " + msg, std::move(d));
}

// Reads and parses the manifest: tensor-cache.json, else ndarray-cache.json.
Result<TensorCache> loadTensorCache(const std::string& dir) {
  for (const char* name : {"tensor-cache.json", "ndarray-cache.json"}) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded()) return folderError(name, "bad_json", "is not valid JSON");
    return parseTensorCache(j, name);
  }
  return folderError("tensor-cache.json", "missing", "no tensor-cache.json or ndarray-cache.json");
}

Status checkShardFiles(const std::string& dir, const TensorCache& tc) {
  for (const ShardInfo& s : tc.shards) {
    struct stat st {};
    if (::stat((dir + "/" + s.data_path).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return folderError(s.data_path, "missing", "shard file is missing");
    if ((uint64_t)st.st_size != s.nbytes)
      return folderError(s.data_path, "size_mismatch", "shard size differs from the manifest",
                         {{"expected", s.nbytes}, {"actual", (uint64_t)st.st_size}});
  }
  return {};
}

nlohmann::json shapeJson(const std::vector<int64_t>& s) { return nlohmann::json(s); }

Status checkExpectedTensors(const ModelConfig& c, const TensorCache& tc,
                            const std::unordered_map<std::string, size_t>& index) {
  for (const ParamSpec& p : expectedParams(c)) {
    auto it = index.find(p.name);
    if (it == index.end())
      return folderError(tc.file, "missing_tensor", "tensor " + p.name + " is missing",
                         {{"tensor", p.name}, {"expected_shape", shapeJson(p.shape)}});
    const TensorInfo& t = tc.tensors[it->second];
    if (t.shape != p.shape)
      return folderError(tc.file, "wrong_shape", "tensor " + p.name + " has the wrong shape",
                         {{"tensor", p.name}, {"expected", shapeJson(p.shape)}, {"actual", shapeJson(t.shape)}});
    if (t.dtype != p.dtype)
      return folderError(tc.file, "wrong_dtype", "tensor " + p.name + " has the wrong dtype",
                         {{"tensor", p.name}, {"expected", dtypeName(p.dtype)}, {"actual", dtypeName(t.dtype)}});
  }
  return {};
}

bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

ModelFolder::~ModelFolder() = default;
ModelFolder::ModelFolder(ModelFolder&&) noexcept = default;
ModelFolder& ModelFolder::operator=(ModelFolder&&) noexcept = default;

Result<ModelFolder> ModelFolder::open(const std::string& dir) {
  ModelFolder f;
  f.dir_ = dir;
  auto cfg = loadModelConfig(dir + "/mlc-chat-config.json");
  if (!cfg.ok()) return std::move(cfg).error();
  f.config_ = std::move(cfg).value();
  auto tc = loadTensorCache(dir);
  if (!tc.ok()) return std::move(tc).error();
  f.cache_ = std::move(tc).value();
  EWGPU_TRY(checkShardFiles(dir, f.cache_));
  for (size_t i = 0; i < f.cache_.tensors.size(); ++i) f.index_.emplace(f.cache_.tensors[i].name, i);
  EWGPU_TRY(checkExpectedTensors(f.config_, f.cache_, f.index_));
  if (!isFile(dir + "/tokenizer.json")) return folderError("tokenizer.json", "missing", "tokenizer.json is missing");
  f.shards_ = std::make_unique<Shards>();
  f.shards_->files.resize(f.cache_.shards.size());
  f.shards_->mapped.assign(f.cache_.shards.size(), false);
  return f;
}

Status validateModelFolder(const std::string& dir) {
  auto f = ModelFolder::open(dir);
  if (!f.ok()) return std::move(f).error();
  return {};
}

const TensorInfo* ModelFolder::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &cache_.tensors[it->second];
}

Result<std::span<const uint8_t>> ModelFolder::rawBytes(const TensorInfo& t) const {
  if (t.shard < 0 || (size_t)t.shard >= cache_.shards.size())
    return makeError(ErrorCode::kInternal, "tensor has no shard", {{"tensor", t.name}});
  const ShardInfo& s = cache_.shards[t.shard];
  std::lock_guard<std::mutex> lock(shards_->mu);
  if (!shards_->mapped[t.shard]) {
    auto m = MappedFile::open(dir_ + "/" + s.data_path);
    if (!m.ok()) return std::move(m).error();
    if (m->size() != s.nbytes)  // changed since open()
      return folderError(s.data_path, "size_mismatch", "shard size differs from the manifest",
                         {{"expected", s.nbytes}, {"actual", (uint64_t)m->size()}});
    shards_->files[t.shard] = std::move(m).value();
    shards_->mapped[t.shard] = true;
  }
  return shards_->files[t.shard].bytes().subspan(t.byte_offset, t.nbytes);
}

Status ModelFolder::readRange(const TensorInfo& t, uint64_t offset, std::span<uint8_t> out) const {
  if (offset > t.nbytes || out.size() > t.nbytes - offset)
    return makeError(ErrorCode::kInternal, "read past the end of a tensor", {{"tensor", t.name}});
#ifdef EWGPU_WEB
  if (t.shard < 0 || (size_t)t.shard >= cache_.shards.size())
    return makeError(ErrorCode::kInternal, "tensor has no shard", {{"tensor", t.name}});
  const std::string path = dir_ + "/" + cache_.shards[t.shard].data_path;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return makeError(ErrorCode::kIo, "cannot open " + path, {{"path", path}});
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd, out.data() + done, out.size() - done, (off_t)(t.byte_offset + offset + done));
    if (n <= 0) break;
    done += (size_t)n;
  }
  ::close(fd);
  if (done != out.size())
    return folderError(cache_.shards[t.shard].data_path, "truncated", "shard is shorter than the manifest says",
                       {{"tensor", t.name}});
  return {};
#else
  auto raw = rawBytes(t);
  if (!raw.ok()) return std::move(raw).error();
  std::memcpy(out.data(), raw->data() + offset, out.size());
  return {};
#endif
}

Result<std::vector<uint8_t>> ModelFolder::storageBytes(const TensorInfo& t) const {
  std::vector<uint8_t> raw(t.nbytes);
  EWGPU_TRY(readRange(t, 0, raw));
  std::span<const uint8_t> b = raw;
  if (!t.f32_as_bf16) return raw;
  std::vector<uint8_t> out(b.size() * 2);
  for (size_t i = 0; i < b.size() / 2; ++i) {
    uint32_t u = (uint32_t)(b[2 * i] | (b[2 * i + 1] << 8)) << 16;  // bf16 word -> f32 bits
    std::memcpy(&out[4 * i], &u, 4);
  }
  return out;
}

Status ModelFolder::verifyChecksums() const {
  std::vector<uint8_t> buf(1 << 20);
  for (const ShardInfo& s : cache_.shards) {
    if (s.md5.empty()) continue;
    std::ifstream in(dir_ + "/" + s.data_path, std::ios::binary);
    if (!in) return folderError(s.data_path, "missing", "shard file is missing");
    Md5 md5;
    while (in) {
      in.read((char*)buf.data(), (std::streamsize)buf.size());
      md5.update(buf.data(), (size_t)in.gcount());
    }
    std::string actual = md5.hexDigest();
    if (actual != s.md5)
      return folderError(s.data_path, "md5_mismatch", "shard MD5 differs from the manifest",
                         {{"expected", s.md5}, {"actual", actual}});
  }
  return {};
}

}  // namespace ewgpu
