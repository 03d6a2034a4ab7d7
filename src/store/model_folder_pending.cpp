// TEMPORARY: stands in for ewgpu::validateModelFolder (src/model/model_folder.h, branch wt-model) until that
// branch is merged; then this file is deleted. It checks only what the store needs: both manifests parse and
// every file they name is present with the right size.
#include "base/error.h"
#include "store/cache_files.h"
#include "store/model_store.h"

namespace ewgpu {

Status validateModelFolder(const std::string& dir) {
  auto files = modelFilesFromFolder(dir);
  if (!files) return std::move(files).error();
  for (const auto& f : *files) {
    int64_t have = fileSize(dir + "/" + f.name);
    if (have < 0)
      return makeError(ErrorCode::kInvalidModelFolder, f.name + " is missing", {{"path", dir}, {"missing", f.name}});
    if (f.size >= 0 && have != f.size)
      return makeError(ErrorCode::kInvalidModelFolder, f.name + " has the wrong size",
                       {{"path", dir}, {"file", f.name}, {"expected", f.size}, {"actual", have}});
  }
  return {};
}

}  // namespace ewgpu
