// File-system helpers of the model cache (see cache_files.h).
#include "store/cache_files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/md5.h"

namespace ewgpu {

std::string defaultCacheDir() {
  if (const char* d = std::getenv("EWGPU_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/everything-webgpu";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/everything-webgpu";
}

std::string modelFolderName(const std::string& id) {
  std::string slug;
  for (char c : id) {
    if (slug.size() >= 48) break;
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                (c == '.' && !slug.empty());
    slug += keep ? c : '_';
  }
  std::string hash = md5Hex({reinterpret_cast<const uint8_t*>(id.data()), id.size()}).substr(0, 12);
  return (slug.empty() ? "model" : slug) + "-" + hash;
}

Error ioError(const std::string& op, const std::string& path, int err) {
  bool full = err == ENOSPC || err == EDQUOT;
  std::string msg = op + " " + path + ": " + std::strerror(err) + (full ? " (disk full)" : "");
  return makeError(ErrorCode::kIo, msg,
                   {{"op", op}, {"path", path}, {"errno", err}, {"error", std::strerror(err)}, {"disk_full", full}});
}

Status makeDirTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return ioError("mkdir", path, ec.value());
  return {};
}

int64_t fileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return st.st_size;
}

Status removeTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return ioError("remove", path, ec.value());
  return {};
}

Status fsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ioError("open", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ioError("fsync", dir, err);
  return {};
}

Status commitFile(const std::string& tmp, const std::string& final_path) {
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) return ioError("rename", tmp, errno);
  return fsyncDir(std::filesystem::path(final_path).parent_path().string());
}

Result<std::string> md5OfFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ioError("open", path, errno);
  Md5 md5;
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ioError("read", path, err);
    }
    if (n == 0) break;
    md5.update(buf.data(), (size_t)n);
  }
  ::close(fd);
  return md5.hexDigest();
}

void FileLock::release() {
  if (fd_ < 0) return;
  // Unlinked while still held: a process waiting on this file finds, once it gets the flock, that the path no
  // longer names the file it locked, and starts over on a fresh one (acquire). So no lock file outlives its use.
  ::unlink(path_.c_str());
  ::close(fd_);  // closing the description releases the flock
  fd_ = -1;
}

FileLock::~FileLock() { release(); }

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

Result<FileLock> FileLock::acquire(const std::string& path, const std::atomic<bool>* cancel) {
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ioError("open", path, errno);
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK && err != EINTR) {
        ::close(fd);
        return ioError("flock", path, err);
      }
      if (cancel && cancel->load()) {
        ::close(fd);
        return makeError(ErrorCode::kCancelled, "cancelled while waiting for " + path);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // The holder before us may have unlinked the file (release): then our flock guards nothing; retry.
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      FileLock lock;
      lock.fd_ = fd;
      lock.path_ = path;
      return lock;
    }
    ::close(fd);
  }
}

}  // namespace ewgpu
