// libcurl transfers with resume, retry, md5 and progress (see download.h).
#include "store/download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "store/cache_files.h"

namespace ewgpu {
namespace {

void globalCurlInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// State of one HTTP attempt, shared with the curl callbacks.
struct Attempt {
  Downloader* dl = nullptr;
  std::string part;
  int fd = -1;
  int64_t offset = 0;        // bytes already in the .part file when the request was made
  int64_t written = 0;       // body bytes written by this attempt
  long status = 0;           // HTTP status of the last header block (after redirects)
  int64_t range_start = -1;  // first byte of a 206's Content-Range
  bool decided = false, discard = false, bad_range = false, stalled = false;
  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
  std::optional<Error> io_error;
};

size_t onHeader(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  a->last_activity = std::chrono::steady_clock::now();
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    size_t sp = line.find(' ');
    a->status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    a->range_start = -1;
  } else if (line.size() > 14 && strncasecmp(line.c_str(), "content-range:", 14) == 0) {
    size_t b = line.find("bytes");
    if (b != std::string::npos) a->range_start = std::strtoll(line.c_str() + b + 5, nullptr, 10);
  }
  return size * n;
}

// Decides, on the first body byte, what the response means for the .part file. False aborts the transfer.
bool decideBody(Attempt* a) {
  a->decided = true;
  if (a->status >= 400 || a->status < 200) {
    a->discard = true;  // an error page: never written into a model file
    return true;
  }
  if (a->offset > 0 && a->status == 200) {  // the server ignored Range: start over
    if (::ftruncate(a->fd, 0) != 0 || ::lseek(a->fd, 0, SEEK_SET) != 0) {
      a->io_error = ioError("truncate", a->part, errno);
      return false;
    }
    a->dl->addBytes(-a->offset, false);
    a->offset = 0;
  } else if (a->status == 206 && a->range_start != a->offset) {
    a->bad_range = true;
    return false;
  }
  return true;
}

// Takes `n` bytes from the test-only write budget; false when it is exhausted (a simulated full disk).
bool takeBudget(Attempt* a, size_t n) {
  auto& budget = a->dl->options().write_budget;
  if (!budget) return true;
  if (budget->fetch_sub((int64_t)n) >= (int64_t)n) return true;
  Error e = ioError("write", a->part, ENOSPC);
  e.detail["simulated"] = true;
  a->io_error = e;
  return false;
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  size_t len = size * n;
  if (!a->decided && !decideBody(a)) return 0;
  if (a->discard) return len;
  if (!takeBudget(a, len)) return 0;
  for (size_t done = 0; done < len;) {
    ssize_t w = ::write(a->fd, data + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      a->io_error = ioError("write", a->part, errno);
      return 0;
    }
    done += (size_t)w;
  }
  a->written += (int64_t)len;
  a->last_activity = std::chrono::steady_clock::now();
  a->dl->addBytes((int64_t)len, true);
  return len;
}

// Called by curl at least once a second: stops on cancel, and on a stall (curl's own low-speed check
// averages over several seconds, so a burst followed by silence would go unnoticed for too long).
int onXfer(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* a = static_cast<Attempt*>(user);
  if (a->dl->cancelled()) return 1;
  auto idle = std::chrono::steady_clock::now() - a->last_activity;
  if (idle > std::chrono::seconds(a->dl->options().stall_timeout_s)) a->stalled = true;
  return a->stalled ? 1 : 0;
}

CURL* makeEasy(const FileJob& job, const DownloadOptions& o, Attempt& a, char* errbuf) {
  CURL* c = curl_easy_init();
  if (!c) return nullptr;
  curl_easy_setopt(c, CURLOPT_URL, job.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "everything-webgpu-store/1");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)o.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)o.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (a.offset > 0) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)a.offset);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onXfer);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &a);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  return c;
}

// How one attempt ended, for the retry loop.
struct AttemptOutcome {
  enum Kind { kDone, kRetry, kFatal } kind = kRetry;
  Error error;
};

bool retryableStatus(long s) { return s == 408 || s == 425 || s == 429 || s >= 500; }

Error networkError(const std::string& msg, const FileJob& job, long status, int attempt, const std::string& reason) {
  return makeError(ErrorCode::kNetwork, msg,
                   {{"url", job.url}, {"http_status", status}, {"attempt", attempt}, {"reason", reason}});
}

// Performs one HTTP request appending to `part`, and classifies the result.
AttemptOutcome runAttempt(Downloader* dl, const FileJob& job, const std::string& part, int attempt) {
  Attempt a;
  a.dl = dl;
  a.part = part;
  a.offset = std::max<int64_t>(0, fileSize(part));
  a.fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (a.fd < 0) return {AttemptOutcome::kFatal, ioError("open", part, errno)};
  ::lseek(a.fd, a.offset, SEEK_SET);
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = makeEasy(job, dl->options(), a, errbuf);
  CURLcode rc = c ? curl_easy_perform(c) : CURLE_FAILED_INIT;
  if (c) curl_easy_cleanup(c);
  int sync_rc = ::fsync(a.fd);  // what was written is durable before anyone trusts the .part size
  int sync_err = errno;
  ::close(a.fd);
  if (fileSize(part) == 0) ::unlink(part.c_str());  // nothing kept: an empty .part is not a partial file
  if (a.io_error) return {AttemptOutcome::kFatal, *a.io_error};
  if (sync_rc != 0) return {AttemptOutcome::kFatal, ioError("fsync", part, sync_err)};
  if (rc != CURLE_OK && dl->cancelled())
    return {AttemptOutcome::kFatal, makeError(ErrorCode::kCancelled, "download cancelled", {{"url", job.url}})};
  if (a.status == 416 && job.size >= 0 && a.offset == job.size) return {AttemptOutcome::kDone, {}};
  if (a.status == 416 || a.bad_range) {  // our partial file does not match the server's: start again
    ::truncate(part.c_str(), 0);
    dl->addBytes(-a.offset, false);
    return {AttemptOutcome::kRetry, networkError("range not satisfiable", job, a.status, attempt, "bad_range")};
  }
  if (a.status >= 400) {
    auto kind = retryableStatus(a.status) ? AttemptOutcome::kRetry : AttemptOutcome::kFatal;
    return {kind, networkError("HTTP " + std::to_string(a.status) + " for " + job.url, job, a.status, attempt,
                               "http_status")};
  }
  if (rc != CURLE_OK) {
    std::string why = a.stalled ? "no data for " + std::to_string(dl->options().stall_timeout_s) + " s"
                                : (errbuf[0] ? errbuf : curl_easy_strerror(rc));
    Error e = networkError("transfer failed: " + why, job, a.status, attempt, a.stalled ? "stalled" : "transfer");
    e.detail["curl_code"] = (int)rc;
    e.detail["curl_error"] = why;
    e.detail["bytes_this_attempt"] = a.written;
    return {AttemptOutcome::kRetry, e};
  }
  return {AttemptOutcome::kDone, {}};
}

}  // namespace

Downloader::Downloader(DownloadOptions opts, const std::atomic<bool>* cancel, ProgressFn on_progress)
    : opts_(std::move(opts)), cancel_(cancel), on_progress_(std::move(on_progress)) {
  globalCurlInit();
  opts_.parallel = std::max(1, opts_.parallel);
  opts_.max_attempts = std::max(1, opts_.max_attempts);
}

void Downloader::addExpected(int64_t bytes_total, int files_total) {
  std::lock_guard<std::mutex> g(progress_mu_);
  progress_.bytes_total += bytes_total;
  progress_.files_total += files_total;
}

void Downloader::addBytes(int64_t n, bool transferred) {
  {
    std::lock_guard<std::mutex> g(progress_mu_);
    progress_.bytes_done += n;
    if (transferred) transferred_ += n;
  }
  report(false);
}

void Downloader::fileDone() {
  {
    std::lock_guard<std::mutex> g(progress_mu_);
    progress_.files_done += 1;
  }
  report(true);
}

void Downloader::report(bool force) {
  if (!on_progress_) return;
  DownloadProgress snapshot;
  {
    std::lock_guard<std::mutex> g(progress_mu_);
    auto now = std::chrono::steady_clock::now();
    if (!force && now - last_report_ < std::chrono::milliseconds(100)) return;
    last_report_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    progress_.bytes_per_second = secs > 0 ? (double)transferred_ / secs : 0;
    snapshot = progress_;
  }
  on_progress_(snapshot);  // outside the lock: callbacks may be slow
}

bool Downloader::sleepBackoff(int attempt) {
  int64_t ms = opts_.backoff_initial_ms;
  for (int i = 1; i < attempt && ms < opts_.backoff_max_ms; ++i) ms *= 2;
  ms = std::min<int64_t>(ms, opts_.backoff_max_ms);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (cancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(ms, 20)));
  }
  return !cancelled();
}

// Size and md5 checks on a finished .part file; renames it into place when it is good.
static AttemptOutcome checkAndCommit(Downloader* dl, const FileJob& job, const std::string& part, int attempt) {
  int64_t have = fileSize(part);
  if (job.size >= 0 && have < job.size)  // a short body the server called complete
    return {AttemptOutcome::kRetry, networkError("short body for " + job.url, job, 200, attempt, "short_body")};
  if (job.size >= 0 && have > job.size) {
    ::truncate(part.c_str(), 0);
    dl->addBytes(-have, false);
    return {AttemptOutcome::kRetry,
            networkError("body longer than expected for " + job.url, job, 200, attempt, "long_body")};
  }
  if (!job.md5.empty()) {
    auto got = md5OfFile(part);
    if (!got) return {AttemptOutcome::kFatal, std::move(got).error()};
    if (*got != job.md5) {
      ::unlink(part.c_str());
      dl->addBytes(-have, false);
      Error e = networkError("md5 mismatch for " + job.url, job, 200, attempt, "md5_mismatch");
      e.detail["md5_mismatch"] = true;
      e.detail["md5_expected"] = job.md5;
      e.detail["md5_actual"] = *got;
      return {AttemptOutcome::kRetry, e};
    }
  }
  if (auto st = commitFile(part, job.final_path); !st) return {AttemptOutcome::kFatal, std::move(st).error()};
  return {AttemptOutcome::kDone, {}};
}

Status Downloader::fetch(const FileJob& job) {
  if (job.url.empty())  // records without a URL (local models) never reach the network
    return makeError(ErrorCode::kBadRequest, "refusing to download without a URL", {{"path", job.final_path}});
  int64_t have = fileSize(job.final_path);
  if (have >= 0 && (job.size < 0 || have == job.size)) {  // only verified files ever get the final name
    fileDone();
    return {};
  }
  const std::string part = job.final_path + ".part";
  Error last = makeError(ErrorCode::kNetwork, "no attempt made", {{"url", job.url}});
  for (int attempt = 1; attempt <= opts_.max_attempts; ++attempt) {
    if (attempt > 1 && !sleepBackoff(attempt - 1)) break;
    if (cancelled()) break;
    int64_t partial = std::max<int64_t>(0, fileSize(part));
    AttemptOutcome out{AttemptOutcome::kDone, {}};
    if (job.size < 0 || partial < job.size) out = runAttempt(this, job, part, attempt);
    if (out.kind == AttemptOutcome::kDone) out = checkAndCommit(this, job, part, attempt);
    if (out.kind == AttemptOutcome::kDone) {
      if (job.size < 0) addExpected(fileSize(job.final_path), 0);  // its size is known only now
      fileDone();
      return {};
    }
    last = std::move(out.error);
    last.detail["attempts"] = opts_.max_attempts;
    if (out.kind == AttemptOutcome::kFatal) return last;
  }
  if (cancelled() && !stop_.load()) return makeError(ErrorCode::kCancelled, "download cancelled", {{"url", job.url}});
  if (stop_.load() && last.message == "no attempt made")
    return makeError(ErrorCode::kCancelled, "stopped: another file failed", {{"url", job.url}});
  return last;
}

Status Downloader::fetchAll(const std::vector<FileJob>& jobs) {
  std::atomic<size_t> next{0};
  std::mutex err_mu;
  std::optional<Error> first;  // guarded by err_mu
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      if (cancelled()) return;
      auto st = fetch(jobs[i]);
      if (st) continue;
      std::lock_guard<std::mutex> g(err_mu);
      // Keep the cause, not the "stopped because another failed" echo.
      if (!first || (first->code == ErrorCode::kCancelled && st.error().code != ErrorCode::kCancelled))
        first = st.error();
      stop_.store(true);
      return;
    }
  };
  std::vector<std::thread> threads;
  int n = std::min<int>(opts_.parallel, (int)jobs.size());
  for (int t = 0; t < n; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  stop_.store(false);
  if (first) return *first;
  if (cancel_ && cancel_->load()) return makeError(ErrorCode::kCancelled, "download cancelled");
  return {};
}

}  // namespace ewgpu
