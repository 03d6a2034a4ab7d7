// ModelStore: the models this machine knows, from three sources, and their files in a local cache.
//
//  - prebuilt: an id from WebLLM's catalogue (embedded; see catalog.h). Nothing to register; pull fetches it.
//  - remote:   any http(s) URL, resolved as WebLLM does (model_url.h). Registered under an id.
//  - local:    a folder on disk, validated whole (validateModelFolder) before anything is written, then linked
//              (or copied) into the cache. A local record has no URL anywhere, and downloads refuse records
//              without one, so nothing a local model does can reach the network.
//
// Cache layout (cache_dir defaults to defaultCacheDir()):
//   <cache>/registry.sqlite            the registry (registry.h)
//   <cache>/models/<folder>/           one folder per model, named by modelFolderName(id)
//   <cache>/models/<folder>/<f>.part   a partial download, resumed with an HTTP Range request
//   <cache>/locks/<folder>.lock        flock held while a model's files change (pull, add, evict, remove)
//   <cache>/locks/registry.lock        flock held while a process opens the registry
//
// Thread-safety: one ModelStore may be used from several threads; several processes may share a cache.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "gpu/device_info.h"
#include "store/catalog.h"
#include "store/download.h"
#include "store/registry.h"

namespace ewgpu {

enum class CacheState { kCached, kPartial, kAbsent };
std::string_view cacheStateName(CacheState s);  // "cached", "partial", "absent"

struct StoreOptions {
  std::string cache_dir;    // "" = defaultCacheDir()
  std::string hf_endpoint;  // stand-in origin for huggingface.co; "" = $EWGPU_HF_ENDPOINT (if set)
  DownloadOptions download;
};

struct PullOptions {
  ProgressFn on_progress;                     // called from download threads, at most every 100 ms per store
  const std::atomic<bool>* cancel = nullptr;  // set to stop; partial files are kept
};

struct ModelListing {
  ModelRecord record;
  CacheState state = CacheState::kAbsent;
  int64_t bytes_on_disk = 0;  // complete + partial files
  int64_t bytes_total = 0;    // sum of known file sizes
};

class ModelStore {
 public:
  static Result<std::unique_ptr<ModelStore>> open(StoreOptions opts = {});

  const std::string& cacheDir() const { return cache_dir_; }

  // Registers a remote model under `id` (default: modelIdFromUrl(url)). Nothing is downloaded.
  Result<ModelRecord> registerRemote(const std::string& url, const std::string& id = "");
  // Validates `folder` whole, then links/copies its files into the cache and registers it (source local).
  Result<ModelRecord> addLocal(const std::string& folder, const std::string& id = "");
  // pull: `id_or_url` is a registered id, a catalogue id, or a URL (registered first, under `id` if given).
  // A first pull that fails before any model data arrives leaves no record and no files behind; one that fails
  // (or is cancelled) later keeps its record, state "partial", and the next pull resumes.
  Result<ModelRecord> pull(const std::string& id_or_url, const std::string& id = "", const PullOptions& po = {});
  // Fills the cache of a known id (registry or catalogue). No GPU involved.
  Status prefetch(const std::string& id, const PullOptions& po = {});

  // The registered record, or (for an unregistered catalogue id) the record a pull would create.
  Result<ModelRecord> record(const std::string& id);
  Result<CacheState> cacheState(const std::string& id);
  // Before a load: every file present with its recorded size (and md5 when `check_md5`). CACHE_INCOMPLETE
  // otherwise; for a local model the message says to re-register the folder (it never reaches the network).
  Status verify(const std::string& id, bool check_md5 = false);
  Status evict(const std::string& id);   // frees the model's files, keeps the record
  Status remove(const std::string& id);  // frees the files and forgets the record
  Result<std::vector<ModelListing>> list();
  // The folder to load from: `default` is the built-in model (store/default_model.h, written into the cache on
  // first use); a model folder path is returned as is (after validation); an id or a registered URL must be
  // cached (verify), else CACHE_INCOMPLETE; an unknown id is UNKNOWN_MODEL, and an unknown name that reads as a
  // path (has a '/', starts with '.' or '~') that is no folder is INVALID_MODEL_FOLDER {file, problem: "missing" |
  // "not_a_directory"}. Never downloads.
  Result<std::string> resolve(const std::string& id_or_url_or_path);

  Registry& registry() { return *registry_; }

 private:
  ModelStore() = default;
  std::string modelDir(const std::string& id) const;
  std::string lockPath(const std::string& id) const;
  Result<ModelRecord> recordOrCatalog(const std::string& id, bool* registered);
  Status download(ModelRecord& rec, const PullOptions& po);
  Status fetchManifest(ModelRecord& rec, const std::string& base, Downloader& dl);
  Status linkLocalFiles(const std::string& folder, const ModelRecord& rec);
  // After a failed first pull of `rec`: when no model data reached the disk (only manifests, or nothing), its
  // folder and record are removed, so a 404, a refused connection or a bad manifest leaves no ghost in list().
  void forgetFailedPull(const ModelRecord& rec);

  std::string cache_dir_;
  StoreOptions opts_;
  std::unique_ptr<Registry> registry_;
};

// What `ewgpu run` accepts: a model folder, or the id/URL of a cached model in the store.
Result<std::string> resolveModelDir(const std::string& id_or_path, ModelStore& store);

// The files a model folder's manifests name: mlc-chat-config.json, the manifest (tensor-cache.json or
// ndarray-cache.json), every shard (size, md5) and the tokenizer_files. Names are checked to be plain file
// names (no "/", no ".."): INVALID_MODEL_FOLDER otherwise. `dir` holds the two JSON files.
Result<std::vector<StoreFile>> modelFilesFromFolder(const std::string& dir);

}  // namespace ewgpu
