// ModelStore: registration, cache states, verify/evict/remove and resolve (see model_store.h).
// Downloads and local linking live in model_store_fetch.cpp.
#include "store/model_store.h"

#include "store/device_fit.h"

#include "store/default_model.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "model/model_folder.h"
#include "store/cache_files.h"
#include "store/model_url.h"

namespace ewgpu {

std::string_view cacheStateName(CacheState s) {
  switch (s) {
    case CacheState::kCached:
      return "cached";
    case CacheState::kPartial:
      return "partial";
    case CacheState::kAbsent:
      return "absent";
  }
  return "absent";
}

Result<std::unique_ptr<ModelStore>> ModelStore::open(StoreOptions opts) {
  std::unique_ptr<ModelStore> s(new ModelStore());
  s->cache_dir_ = opts.cache_dir.empty() ? defaultCacheDir() : opts.cache_dir;
  if (opts.hf_endpoint.empty())
    if (const char* e = std::getenv("EWGPU_HF_ENDPOINT"); e && *e) opts.hf_endpoint = e;
  s->opts_ = std::move(opts);
  EWGPU_TRY(makeDirTree(s->cache_dir_ + "/models"));
  EWGPU_TRY(makeDirTree(s->cache_dir_ + "/locks"));
  // Switching a new database to WAL takes an exclusive lock, and SQLite answers a second process doing the
  // same with SQLITE_BUSY at once (no busy handler): processes opening one cache together take turns here.
  auto open_lock = FileLock::acquire(s->cache_dir_ + "/locks/registry.lock");
  if (!open_lock) return std::move(open_lock).error();
  auto reg = Registry::open(s->cache_dir_ + "/registry.sqlite");
  if (!reg) return std::move(reg).error();
  s->registry_ = std::move(*reg);
  return s;
}

std::string ModelStore::modelDir(const std::string& id) const { return cache_dir_ + "/models/" + modelFolderName(id); }

std::string ModelStore::lockPath(const std::string& id) const {
  return cache_dir_ + "/locks/" + modelFolderName(id) + ".lock";
}

Result<ModelRecord> ModelStore::recordOrCatalog(const std::string& id, bool* registered) {
  auto got = registry_->get(id);
  if (!got) return std::move(got).error();
  if (*got) {
    if (registered) *registered = true;
    return std::move(**got);
  }
  if (registered) *registered = false;
  if (const CatalogEntry* e = findPrebuilt(id)) {
    ModelRecord r;
    r.id = id;
    r.source = SourceKind::kPrebuilt;
    r.url = e->model_url;
    r.dir = modelDir(id);
    r.state = "registered";
    return r;
  }
  return makeError(ErrorCode::kUnknownModel, "unknown model: " + id + " (not registered, not in the catalogue)",
                   {{"id", id}});
}

Result<ModelRecord> ModelStore::record(const std::string& id) { return recordOrCatalog(id, nullptr); }

Result<ModelRecord> ModelStore::registerRemote(const std::string& url, const std::string& id_in) {
  if (!isHttpUrl(url))
    return makeError(ErrorCode::kBadRequest, "a remote model needs an absolute http(s) URL: " + url, {{"url", url}});
  std::string id = id_in.empty() ? modelIdFromUrl(url) : id_in;
  auto existing = registry_->get(id);
  if (!existing) return std::move(existing).error();
  if (*existing) {
    if ((*existing)->source != SourceKind::kLocal && (*existing)->url == url) return std::move(**existing);
    return makeError(ErrorCode::kBadRequest, "id " + id + " is already registered from another source",
                     {{"id", id}, {"source", sourceKindName((*existing)->source)}});
  }
  ModelRecord r;
  r.id = id;
  const CatalogEntry* e = findPrebuilt(id);
  r.source = e && e->model_url == url ? SourceKind::kPrebuilt : SourceKind::kRemote;
  r.url = url;
  r.dir = modelDir(id);
  r.state = "registered";
  EWGPU_TRY(registry_->put(r));
  return r;
}

Result<CacheState> ModelStore::cacheState(const std::string& id) {
  auto rec = record(id);
  if (!rec) return std::move(rec).error();
  int complete = 0;
  bool partial_bytes = false;
  for (const auto& f : rec->files) {
    int64_t have = fileSize(rec->dir + "/" + f.name);
    if (have >= 0 && (f.size < 0 || have == f.size)) ++complete;
    if (fileSize(rec->dir + "/" + f.name + ".part") > 0) partial_bytes = true;
  }
  if (!rec->files.empty() && complete == (int)rec->files.size()) return CacheState::kCached;
  if (complete > 0 || partial_bytes) return CacheState::kPartial;
  return CacheState::kAbsent;
}

Status ModelStore::verify(const std::string& id, bool check_md5) {
  auto rec = record(id);
  if (!rec) return std::move(rec).error();
  nlohmann::json missing = nlohmann::json::array(), bad_md5 = nlohmann::json::array();
  for (const auto& f : rec->files) {
    std::string path = rec->dir + "/" + f.name;
    int64_t have = fileSize(path);
    if (have < 0 || (f.size >= 0 && have != f.size)) {
      missing.push_back(f.name);
      continue;
    }
    if (!check_md5 || f.md5.empty()) continue;
    auto got = md5OfFile(path);
    if (!got) return std::move(got).error();
    if (*got != f.md5) bad_md5.push_back(f.name);
  }
  if (!rec->files.empty() && missing.empty() && bad_md5.empty()) return {};
  bool local = rec->source == SourceKind::kLocal;
  nlohmann::json d = {
      {"id", id}, {"source", sourceKindName(rec->source)}, {"missing", missing}, {"md5_mismatch", bad_md5}};
  if (local) {
    d["local_path"] = rec->local_path;
    return makeError(ErrorCode::kCacheIncomplete,
                     "local model " + id + " is no longer complete in the cache: re-register the folder (ewgpu add " +
                         rec->local_path + " --id " + id + ")",
                     d);
  }
  return makeError(ErrorCode::kCacheIncomplete, "model " + id + " is not fully cached: pull it (ewgpu pull " + id + ")",
                   d);
}

Status ModelStore::evict(const std::string& id) {
  bool registered = false;
  auto rec = recordOrCatalog(id, &registered);
  if (!rec) return std::move(rec).error();
  if (!registered) return makeError(ErrorCode::kUnknownModel, "model " + id + " is not in the store", {{"id", id}});
  auto lock = FileLock::acquire(lockPath(id));
  if (!lock) return std::move(lock).error();
  EWGPU_TRY(removeTree(rec->dir));
  return registry_->setState(id, "evicted");
}

Status ModelStore::remove(const std::string& id) {
  bool registered = false;
  auto rec = recordOrCatalog(id, &registered);
  if (!rec) return std::move(rec).error();
  if (!registered) return makeError(ErrorCode::kUnknownModel, "model " + id + " is not in the store", {{"id", id}});
  auto lock = FileLock::acquire(lockPath(id));
  if (!lock) return std::move(lock).error();
  EWGPU_TRY(removeTree(rec->dir));
  return registry_->erase(id);
}

Result<std::vector<ModelListing>> ModelStore::list() {
  auto all = registry_->all();
  if (!all) return std::move(all).error();
  std::vector<ModelListing> out;
  for (auto& r : *all) {
    ModelListing l;
    auto st = cacheState(r.id);
    l.state = st ? *st : CacheState::kAbsent;
    for (const auto& f : r.files) {
      int64_t have = fileSize(r.dir + "/" + f.name);
      if (have < 0) have = std::max<int64_t>(0, fileSize(r.dir + "/" + f.name + ".part"));
      l.bytes_on_disk += have;
      l.bytes_total += std::max<int64_t>(0, f.size >= 0 ? f.size : have);
    }
    l.record = std::move(r);
    out.push_back(std::move(l));
  }
  return out;
}

Result<std::string> ModelStore::resolve(const std::string& x) {
  if (x == kDefaultModelId) return defaultModelDir(*this);  // the built-in model (store/default_model.h)
  struct stat st;
  if (!isHttpUrl(x) && ::stat(x.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    EWGPU_TRY(validateModelFolder(x));
    return std::filesystem::absolute(x).lexically_normal().string();
  }
  std::string id = x;
  if (isHttpUrl(x)) {
    auto found = registry_->findByUrl(x);
    if (!found) return std::move(found).error();
    if (!*found)
      return makeError(ErrorCode::kUnknownModel, "no model registered from " + x + " (ewgpu pull " + x + ")",
                       {{"url", x}});
    id = (*found)->id;
  }
  auto rec = record(id);
  if (!rec) {
    // Not an id the store knows; if it reads as a path, say that the folder is not there.
    const bool path_like = x.find('/') != std::string::npos || x.starts_with(".") || x.starts_with("~");
    if (rec.error().code == ErrorCode::kUnknownModel && path_like && !isHttpUrl(x)) {
      const bool exists = ::stat(x.c_str(), &st) == 0;
      return makeError(ErrorCode::kInvalidModelFolder,
                       exists ? x + " is not a folder" : "no such model folder: " + x,
                       {{"file", x}, {"problem", exists ? "not_a_directory" : "missing"}});
    }
    return std::move(rec).error();
  }
  EWGPU_TRY(verify(id));
  return rec->dir;
}

Result<std::string> resolveModelDir(const std::string& id_or_path, ModelStore& store) {
  return store.resolve(id_or_path);
}

// canRun for an id this store knows (device_fit.h): here rather than in device_fit.cpp, which the browser build
// compiles without the store.
Result<FitReport> canRun(ModelStore& store, const std::string& id, const DeviceInfo& dev) {
  auto rec = store.record(id);
  if (!rec) return std::move(rec).error();
  ModelFacts f;
  f.id = id;
  if (const CatalogEntry* e = findPrebuilt(id)) f = factsFromCatalog(*e);
  addFactsFromFolder(rec->dir, f);  // no-op when nothing is cached yet
  return checkFit(f, dev);
}

}  // namespace ewgpu
