// Downloads of model files over HTTP(S) with libcurl: a few files in parallel, resume from a .part file with an
// HTTP Range request after any interruption, bounded retries with exponential backoff, md5 checks, progress
// and cancellation. A file reaches its final name only once complete and verified (write <name>.part, fsync,
// rename, fsync the folder), so "the final file exists" means "the file is good".
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"

namespace ewgpu {

struct DownloadProgress {
  int64_t bytes_done = 0;       // bytes of the requested files on disk (already-present bytes included)
  int64_t bytes_total = 0;      // sum of the known file sizes
  double bytes_per_second = 0;  // average rate of this session's transfers
  int files_done = 0, files_total = 0;
};
using ProgressFn = std::function<void(const DownloadProgress&)>;

struct DownloadOptions {
  int parallel = 4;              // files in flight at once
  int max_attempts = 5;          // per file, first try included
  int backoff_initial_ms = 250;  // wait before the 2nd attempt; doubled each time
  int backoff_max_ms = 8000;     // cap on one wait
  int connect_timeout_s = 15;
  int stall_timeout_s = 30;  // abort an attempt that moves < 1 byte/s for this long
  // Test-only: bytes the writer may still write (shared by every file); writing past it fails as a full disk
  // (IO_ERROR, detail.disk_full = true, detail.simulated = true). Null: unlimited.
  std::shared_ptr<std::atomic<int64_t>> write_budget;
};

struct FileJob {
  std::string url;         // absolute
  std::string final_path;  // where the verified file goes; "<final_path>.part" holds a partial transfer
  int64_t size = -1;       // expected bytes, -1 when unknown (then the server's Content-Length is trusted)
  std::string md5;         // expected lowercase hex, "" when unknown
};

class Downloader {
 public:
  // `cancel` (may be null) stops transfers between reads; partial files are kept for a free resume.
  Downloader(DownloadOptions opts, const std::atomic<bool>* cancel, ProgressFn on_progress);

  // One file, with resume and retries. NETWORK_ERROR detail: {url, http_status, attempt, curl_error, reason}.
  Status fetch(const FileJob& job);
  // Several files on `parallel` threads. The first failure stops the others (their .part files stay).
  Status fetchAll(const std::vector<FileJob>& jobs);

  // Progress accounting: expected totals, and bytes that appeared on (or left) the disk. `transferred` marks
  // bytes that came over the network now (they count towards the rate).
  void addExpected(int64_t bytes_total, int files_total);
  void addBytes(int64_t n, bool transferred);
  void fileDone();
  bool cancelled() const { return (cancel_ && cancel_->load()) || stop_.load(); }
  const DownloadOptions& options() const { return opts_; }

 private:
  void report(bool force);
  bool sleepBackoff(int attempt);

  DownloadOptions opts_;
  const std::atomic<bool>* cancel_;
  std::atomic<bool> stop_{false};  // set by fetchAll when one file failed
  ProgressFn on_progress_;
  std::mutex progress_mu_;  // guards progress_, last_report_
  DownloadProgress progress_;
  int64_t transferred_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_report_{};
};

}  // namespace ewgpu
