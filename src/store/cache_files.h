// File-system pieces of the cache: where it lives, how a model's folder is named, error values for failed
// file operations, durable commit (fsync + rename + fsync dir), and a per-model advisory lock (flock).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "base/error.h"

namespace ewgpu {

// EWGPU_CACHE_DIR, else $XDG_CACHE_HOME/everything-webgpu, else $HOME/.cache/everything-webgpu.
std::string defaultCacheDir();

// Folder name for a model id: a readable slug of the id (<= 48 chars of [A-Za-z0-9._-]) + "-" + the first
// 12 hex digits of md5(id). Distinct ids never share a folder even when their slugs agree.
std::string modelFolderName(const std::string& id);

// IO_ERROR with detail {op, path, errno, error, disk_full}; disk_full is true for ENOSPC/EDQUOT.
Error ioError(const std::string& op, const std::string& path, int err);

Status makeDirTree(const std::string& path);
int64_t fileSize(const std::string& path);   // -1 when absent or not a regular file
Status removeTree(const std::string& path);  // ok when already absent
Status fsyncDir(const std::string& dir);
// Renames `tmp` over `final_path` and fsyncs the containing folder (tmp's data must already be fsynced).
Status commitFile(const std::string& tmp, const std::string& final_path);
// Streaming md5 of a whole file (lowercase hex).
Result<std::string> md5OfFile(const std::string& path);

// An exclusive flock on `path` (created if needed), held until destruction. Works between threads of one
// process too (each FileLock opens its own file description). Waits, polling `cancel` every 20 ms. The file is
// removed when the lock is released (a waiter that then holds an unlinked file retries on a fresh one), so no
// lock file is left behind once nobody holds it.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  static Result<FileLock> acquire(const std::string& path, const std::atomic<bool>* cancel = nullptr);

 private:
  void release();
  int fd_ = -1;
  std::string path_;
};

}  // namespace ewgpu
