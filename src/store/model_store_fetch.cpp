// ModelStore operations that write model files: pull/prefetch (network) and addLocal (a folder on disk).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "model/model_folder.h"
#include "store/cache_files.h"
#include "store/model_store.h"
#include "store/model_url.h"

namespace ewgpu {

namespace {

// Copies src to dst through "<dst>.part" (fsync, rename), honouring the test-only write budget.
Status copyFile(const std::string& src, const std::string& dst, const DownloadOptions& o) {
  std::string part = dst + ".part";
  int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ioError("open", src, errno);
  int out = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    int err = errno;
    ::close(in);
    return ioError("open", part, err);
  }
  std::vector<char> buf(1 << 20);
  Status st;
  while (st.ok()) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) st = ioError("read", src, errno);
      break;
    }
    if (o.write_budget && o.write_budget->fetch_sub(n) < n) {
      Error e = ioError("write", part, ENOSPC);
      e.detail["simulated"] = true;
      st = e;
      break;
    }
    for (ssize_t done = 0; done < n && st.ok();) {
      ssize_t w = ::write(out, buf.data() + done, n - done);
      if (w < 0 && errno != EINTR) st = ioError("write", part, errno);
      if (w > 0) done += w;
    }
  }
  if (st.ok() && ::fsync(out) != 0) st = ioError("fsync", part, errno);
  ::close(in);
  ::close(out);
  if (!st.ok()) {
    ::unlink(part.c_str());
    return st;
  }
  return commitFile(part, dst);
}

}  // namespace

Status ModelStore::linkLocalFiles(const std::string& folder, const ModelRecord& rec) {
  EWGPU_TRY(removeTree(rec.dir));
  EWGPU_TRY(makeDirTree(rec.dir));
  for (const auto& f : rec.files) {
    std::string src = folder + "/" + f.name, dst = rec.dir + "/" + f.name;
    // A hard link costs nothing and leaves the user's file untouched when the cache copy is evicted.
    if (!opts_.download.write_budget && ::link(src.c_str(), dst.c_str()) == 0) continue;
    EWGPU_TRY(copyFile(src, dst, opts_.download));
  }
  return fsyncDir(rec.dir);
}

Result<ModelRecord> ModelStore::addLocal(const std::string& folder_in, const std::string& id_in) {
  std::error_code ec;
  std::string folder = std::filesystem::weakly_canonical(folder_in, ec).string();
  if (ec || folder.empty()) folder = std::filesystem::absolute(folder_in).lexically_normal().string();
  EWGPU_TRY(validateModelFolder(folder));  // whole folder, before anything is written
  auto files = modelFilesFromFolder(folder);
  if (!files) return std::move(files).error();
  ModelRecord r;
  r.id = id_in.empty() ? std::filesystem::path(folder).filename().string() : id_in;
  if (r.id.empty()) return makeError(ErrorCode::kBadRequest, "cannot derive an id from " + folder, {{"path", folder}});
  auto existing = registry_->get(r.id);
  if (!existing) return std::move(existing).error();
  if (*existing && (*existing)->source != SourceKind::kLocal)
    return makeError(ErrorCode::kBadRequest, "id " + r.id + " is already registered from another source",
                     {{"id", r.id}, {"source", sourceKindName((*existing)->source)}});
  r.source = SourceKind::kLocal;
  r.local_path = folder;  // the only location a local record carries: no url
  r.dir = modelDir(r.id);
  r.files = std::move(*files);
  r.state = "cached";
  if (*existing) r.created_at = (*existing)->created_at;
  auto lock = FileLock::acquire(lockPath(r.id));
  if (!lock) return std::move(lock).error();
  if (auto st = linkLocalFiles(folder, r); !st) {
    (void)removeTree(r.dir);  // never leave a half-linked local model that looks registered
    return std::move(st).error();
  }
  EWGPU_TRY(registry_->put(r));
  return r;
}

Status ModelStore::fetchManifest(ModelRecord& rec, const std::string& base, Downloader& dl) {
  EWGPU_TRY(dl.fetch({base + "mlc-chat-config.json", rec.dir + "/mlc-chat-config.json", -1, ""}));
  bool have_legacy = fileSize(rec.dir + "/ndarray-cache.json") >= 0;
  if (!have_legacy) {
    auto st = dl.fetch({base + "tensor-cache.json", rec.dir + "/tensor-cache.json", -1, ""});
    bool not_found = !st && st.error().code == ErrorCode::kNetwork && st.error().detail.value("http_status", 0) == 404;
    if (!st && !not_found) return st;
    if (not_found)  // repositories converted before the Sep-2025 rename carry the legacy name
      EWGPU_TRY(dl.fetch({base + "ndarray-cache.json", rec.dir + "/ndarray-cache.json", -1, ""}));
  }
  auto files = modelFilesFromFolder(rec.dir);
  if (!files) return std::move(files).error();
  rec.files = std::move(*files);
  return {};
}

Status ModelStore::download(ModelRecord& rec, const PullOptions& po) {
  if (rec.url.empty()) {  // a local model: nothing may reach the network, ever
    EWGPU_TRY(verify(rec.id));
    return {};
  }
  auto base = resolveModelBaseUrl(rec.url, opts_.hf_endpoint);
  if (!base) return std::move(base).error();
  auto lock = FileLock::acquire(lockPath(rec.id), po.cancel);
  if (!lock) return std::move(lock).error();
  EWGPU_TRY(makeDirTree(rec.dir));
  Downloader manifests(opts_.download, po.cancel, nullptr);  // small files; progress counts them below
  EWGPU_TRY(fetchManifest(rec, *base, manifests));
  rec.state = "partial";
  EWGPU_TRY(registry_->put(rec));

  std::vector<FileJob> jobs;
  int64_t total = 0, present = 0;
  for (const auto& f : rec.files) {
    std::string path = rec.dir + "/" + f.name;
    int64_t have = fileSize(path);
    present += have >= 0 ? have : std::max<int64_t>(0, fileSize(path + ".part"));
    total += f.size >= 0 ? f.size : std::max<int64_t>(0, have);
    if (f.name != "mlc-chat-config.json" && f.name != "tensor-cache.json" && f.name != "ndarray-cache.json")
      jobs.push_back({*base + f.name, path, f.size, f.md5});
  }
  Downloader dl(opts_.download, po.cancel, po.on_progress);
  dl.addExpected(total, (int)jobs.size());
  dl.addBytes(present, false);
  Status fetched = dl.fetchAll(jobs);
  for (auto& f : rec.files)  // tokenizer sizes become known once fetched
    if (f.size < 0) f.size = fileSize(rec.dir + "/" + f.name);
  rec.state = fetched ? "cached" : "partial";
  EWGPU_TRY(registry_->put(rec));
  return fetched;
}

Status ModelStore::prefetch(const std::string& id, const PullOptions& po) {
  bool registered = false;
  auto rec = recordOrCatalog(id, &registered);
  if (!rec) return std::move(rec).error();
  if (!registered) EWGPU_TRY(registry_->put(*rec));
  Status st = download(*rec, po);
  if (!st && !registered) forgetFailedPull(*rec);
  return st;
}

void ModelStore::forgetFailedPull(const ModelRecord& rec) {
  auto lock = FileLock::acquire(lockPath(rec.id));
  if (!lock) return;
  // Bytes of a shard or tokenizer (complete or .part) are worth keeping: the record stays "partial" and the next
  // pull resumes. Only the manifests (or nothing) on disk: the pull failed before any model data arrived.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(rec.dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string base = name.size() > 5 && name.ends_with(".part") ? name.substr(0, name.size() - 5) : name;
    if (base == "mlc-chat-config.json" || base == "tensor-cache.json" || base == "ndarray-cache.json") continue;
    std::error_code size_ec;
    if (e.is_regular_file(size_ec) && e.file_size(size_ec) > 0) return;
  }
  (void)removeTree(rec.dir);
  (void)registry_->erase(rec.id);
}

Result<ModelRecord> ModelStore::pull(const std::string& id_or_url, const std::string& id, const PullOptions& po) {
  std::string key = id_or_url;
  bool created = false;  // this pull registered the URL: a failure before any data arrives forgets it again
  if (isHttpUrl(id_or_url)) {
    auto found = registry_->findByUrl(id_or_url);
    if (!found) return std::move(found).error();
    if (*found && (id.empty() || (*found)->id == id)) {
      key = (*found)->id;
    } else {
      auto reg = registerRemote(id_or_url, id);
      if (!reg) return std::move(reg).error();
      key = reg->id;
      created = true;
    }
  }
  if (created) {
    auto rec = record(key);
    if (!rec) return std::move(rec).error();
    Status st = download(*rec, po);
    if (!st) {
      forgetFailedPull(*rec);
      return std::move(st).error();
    }
  } else {
    EWGPU_TRY(prefetch(key, po));
  }
  return record(key);
}

}  // namespace ewgpu
