#include "store/default_model.h"

#include "base/md5.h"
#include "store/cache_files.h"
#include "store/model_store.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace ewgpu {

namespace embedded_default_model {
std::span<const EmbeddedFile> files();  // generated (cmake/embed_binary.cmake)
}

std::span<const EmbeddedFile> defaultModelFiles() { return embedded_default_model::files(); }

namespace {

// Writes `f` to `path` and fsyncs it.
Status writeEmbedded(const EmbeddedFile& f, const std::string& path) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) return ioError("open", path, errno);
  bool ok = std::fwrite(f.data, 1, f.size, out) == f.size && std::fflush(out) == 0 && ::fsync(fileno(out)) == 0;
  int err = errno;
  std::fclose(out);
  if (!ok) return ioError("write", path, err);
  return {};
}

bool complete(const std::string& dir) {
  for (const auto& f : defaultModelFiles())
    if (fileSize(dir + "/" + std::string(f.name)) != (int64_t)f.size) return false;
  return true;
}

// Writes the embedded folder to `dir` (through a temporary folder renamed into place, so a crash or a concurrent
// process never leaves a half-written folder under the final name).
Status materialise(const std::string& dir) {
  for (const auto& f : defaultModelFiles()) {
    std::string got = md5Hex(f.bytes());
    if (got != f.md5)
      return makeError(ErrorCode::kInvalidModelFolder, "the embedded default model is corrupt",
                       {{"file", f.name}, {"problem", "md5_mismatch"}, {"expected", f.md5}, {"actual", got}});
  }
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  EWGPU_TRY(removeTree(tmp));
  EWGPU_TRY(makeDirTree(tmp));
  for (const auto& f : defaultModelFiles()) {
    Status s = writeEmbedded(f, tmp + "/" + std::string(f.name));
    if (!s) {
      (void)removeTree(tmp);
      return s;
    }
  }
  EWGPU_TRY(fsyncDir(tmp));
  std::error_code ec;
  std::filesystem::rename(tmp, dir, ec);
  if (ec) {
    (void)removeTree(tmp);
    if (!complete(dir)) return ioError("rename", dir, ec.value());  // another process may have won the race
  }
  return fsyncDir(std::filesystem::path(dir).parent_path().string());
}

}  // namespace

Result<std::string> defaultModelDir(ModelStore& store) {
  Md5 version;
  for (const auto& f : defaultModelFiles()) version.update(f.md5.data(), f.md5.size());
  const std::string src = store.cacheDir() + "/builtin/default-" + version.hexDigest().substr(0, 12);
  const std::string id(kDefaultModelId);
  auto rec = store.registry().get(id);
  if (!rec) return std::move(rec).error();
  if (*rec && (*rec)->local_path == src && store.verify(id)) return (*rec)->dir;
  if (!complete(src)) EWGPU_TRY(makeDirTree(store.cacheDir() + "/builtin"));
  if (!complete(src)) EWGPU_TRY(materialise(src));
  auto added = store.addLocal(src, id);
  if (!added) return std::move(added).error();
  EWGPU_TRY(store.verify(id, /*check_md5=*/true));
  return added->dir;
}

}  // namespace ewgpu
