#include "run_target.h"

#include <sys/stat.h>

#include "store/catalog.h"
#include "store/default_model.h"
#include "store/model_url.h"

namespace ewgpu::cli {

namespace {

bool isDirectory(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "./x", "../x", "/x", "~/x": meant as a folder even when it does not exist (so a typo is an error, not a prompt).
bool looksLikePath(const std::string& s) {
  return s.find_first_of(" \t\n") == std::string::npos &&
         (s.starts_with("/") || s.starts_with("./") || s.starts_with("../") || s.starts_with("~/"));
}

}  // namespace

Result<RunTarget> resolveRunTarget(const std::vector<std::string>& pos, const StoreOptions& options) {
  auto store = ModelStore::open(options);
  if (!store) return std::move(store).error();
  RunTarget t;
  bool names_model = false;
  if (!pos.empty()) {
    const std::string& first = pos[0];
    names_model = first == kDefaultModelId || isDirectory(first) || looksLikePath(first) || isHttpUrl(first) ||
                  findPrebuilt(first) != nullptr;
    if (!names_model) {
      auto reg = (*store)->registry().get(first);
      if (!reg) return std::move(reg).error();
      names_model = reg->has_value();
    }
    if (!names_model && pos.size() > 1)
      return makeError(ErrorCode::kUnknownModel,
                       "unknown model: " + first + " (no such folder, registered id or catalogue id; to ask the " +
                           "default model, give the prompt alone)",
                       {{"id", first}});
  }
  if (names_model) {
    t.model = pos[0];
    t.is_default = pos[0] == kDefaultModelId;
    if (pos.size() > 1) t.prompt = pos[1];
    return t;
  }
  t.model = std::string(kDefaultModelId);  // the store resolves it (ModelStore::resolve -> defaultModelDir)
  t.is_default = true;
  if (!pos.empty()) t.prompt = pos[0];
  return t;
}

}  // namespace ewgpu::cli
