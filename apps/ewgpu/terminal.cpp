// Terminal output of the CLI: byte counts, the pull progress bar, the load progress line, Ctrl-C.
#include "terminal.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "command.h"

namespace ewgpu::cli {

std::string humanBytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

bool stderrIsTerminal() { return ::isatty(2) == 1; }

void drawPullProgress(const DownloadProgress& p, const std::string& id) {
  double frac = p.bytes_total > 0 ? (double)p.bytes_done / (double)p.bytes_total : 0;
  int filled = (int)(frac * 24);
  std::string bar(filled, '#');
  bar.resize(24, '.');
  long eta = p.bytes_per_second > 0 ? (long)((double)(p.bytes_total - p.bytes_done) / p.bytes_per_second) : -1;
  char etabuf[32] = "--:--";
  if (eta >= 0) std::snprintf(etabuf, sizeof etabuf, "%ld:%02ld", eta / 60, eta % 60);
  std::fprintf(stderr, "\rpulling %s [%s] %3d%%  %s/%s  %s/s  ETA %s   ", id.c_str(), bar.c_str(), (int)(frac * 100),
               humanBytes((double)p.bytes_done).c_str(), humanBytes((double)p.bytes_total).c_str(),
               humanBytes(p.bytes_per_second).c_str(), etabuf);
}

PullOptions terminalPullOptions(const std::string& label, bool show) {
  installInterruptHandler();  // Ctrl-C stops cleanly; partial files are kept for a resume
  PullOptions po;
  po.cancel = &interrupted();
  if (show) po.on_progress = [label](const DownloadProgress& p) { drawPullProgress(p, label); };
  return po;
}

void LoadProgressLine::update(const LocalLoadProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  // Redraw at most every 100 ms, but always at a stage change (the stage's first report).
  if (p.stage != LocalLoadProgress::Stage::kDone && now - last_draw_ < std::chrono::milliseconds(100) &&
      !(p.stage == LocalLoadProgress::Stage::kPipelines && p.pipelines == 0) &&
      !(p.stage == LocalLoadProgress::Stage::kUpload && p.bytes_uploaded == 0))
    return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - t0_).count();
  std::string line = "loading " + label_ + ":";
  char buf[160];
  if (p.stage == LocalLoadProgress::Stage::kParse) {
    line += " parse";
  } else {
    std::snprintf(buf, sizeof buf, " parse %.0f ms | upload %s", p.parse_ms,
                  humanBytes((double)p.bytes_uploaded).c_str());
    line += buf;
    if (p.upload_ms > 0) {
      std::snprintf(buf, sizeof buf, " %.0f MB/s", (double)p.bytes_uploaded / 1e6 / (p.upload_ms / 1000));
      line += buf;
    }
    if (p.stage == LocalLoadProgress::Stage::kPipelines || p.stage == LocalLoadProgress::Stage::kDone) {
      std::snprintf(buf, sizeof buf, " | pipelines %zu/%zu", p.pipelines, p.pipelines_total);
      line += buf;
    }
  }
  std::snprintf(buf, sizeof buf, " (%.1f s)", secs);
  line += buf;
  const size_t len = line.size();
  if (line.size() < width_) line.append(width_ - line.size(), ' ');
  width_ = len;
  std::fprintf(stderr, "\r%s", line.c_str());
  std::fflush(stderr);
}

void LoadProgressLine::finish() {
  if (width_ == 0) return;
  std::fprintf(stderr, "\r%s\r", std::string(width_, ' ').c_str());
  std::fflush(stderr);
  width_ = 0;
}

namespace {
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_interrupts{0};
std::atomic<bool> g_immediate{false};

void onSigint(int) {
  const int n = ++g_interrupts;
  g_interrupted = true;
  if (n >= 2 || g_immediate) {
    const char nl = '\n';
    (void)!::write(2, &nl, 1);
    ::_exit(kExitInterrupted);  // async-signal-safe
  }
}
}  // namespace

void installInterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = onSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}

void setInterruptImmediate(bool immediate) { g_immediate = immediate; }

const std::atomic<bool>& interrupted() { return g_interrupted; }

}  // namespace ewgpu::cli
