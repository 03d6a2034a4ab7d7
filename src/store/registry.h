// The model registry: one SQLite database (WAL journal, every change in a transaction) that remembers which
// models the store knows, where they come from and which files make them up. The files on disk are the
// truth about what is cached; the registry is the truth about what should be there.
//
// Schema (user_version 1):
//   models(id PK, source 'prebuilt'|'remote'|'local', url, local_path, dir, state, created_at, updated_at)
//     CHECK: a local model has url NULL; every other source has a url and no local_path.
//   files(model_id -> models.id ON DELETE CASCADE, name, size, md5, PK(model_id, name))
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

struct sqlite3;

namespace ewgpu {

enum class SourceKind { kPrebuilt, kRemote, kLocal };
std::string_view sourceKindName(SourceKind k);  // "prebuilt", "remote", "local"

struct StoreFile {
  std::string name;   // path relative to the model folder, e.g. "params_shard_3.bin"
  int64_t size = -1;  // bytes; -1 when unknown until fetched (config, tokenizer files)
  std::string md5;    // lowercase hex from tensor-cache.json's md5sum, "" when absent
};

struct ModelRecord {
  std::string id;
  SourceKind source = SourceKind::kRemote;
  std::string url;                         // the model URL as given / catalogued; always "" for local models
  std::string local_path;                  // the folder a local model was registered from; "" for others
  std::string dir;                         // the model's folder inside the cache (absolute)
  std::string state;                       // last recorded: "registered", "partial", "cached", "evicted"
  int64_t created_at = 0, updated_at = 0;  // unix seconds
  std::vector<StoreFile> files;            // empty until the manifest is known

  nlohmann::json toJson() const;
};

class Registry {
 public:
  ~Registry();
  // Opens (creating if needed) the database at `path`. IO_ERROR when it cannot be opened or is corrupt.
  static Result<std::unique_ptr<Registry>> open(const std::string& path);

  // Inserts or replaces the model row and its whole file list, in one transaction.
  Status put(const ModelRecord& rec);
  Status setState(const std::string& id, const std::string& state);
  Result<std::optional<ModelRecord>> get(const std::string& id);
  Result<std::optional<ModelRecord>> findByUrl(const std::string& url);
  Result<std::vector<ModelRecord>> all();
  Status erase(const std::string& id);   // files rows go with it (cascade)
  Result<std::string> integrityCheck();  // "ok" when PRAGMA integrity_check finds nothing

 private:
  Registry() = default;
  Status exec(const char* sql);
  Error dbError(const std::string& what);
  Result<std::vector<ModelRecord>> query(const char* where, const std::string& arg);
  Status loadFiles(ModelRecord& rec);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::mutex mu_;  // guards db_ (one connection shared by the store's threads)
};

}  // namespace ewgpu
