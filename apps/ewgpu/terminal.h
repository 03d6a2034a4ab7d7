// What the CLI draws on a terminal: byte counts for people, the pull progress bar, the one-line load progress,
// and Ctrl-C handling for commands that stop cleanly on the first interrupt and at once on the second.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/local_engine.h"
#include "store/model_store.h"

namespace ewgpu::cli {

// "1.5 MB", "120 B" (powers of 1024).
std::string humanBytes(double bytes);

// True when stderr is a terminal (progress lines are drawn only then).
bool stderrIsTerminal();

// "pulling ID [#########.........]  45%  120.0 MB/266.0 MB  35.2 MB/s  ETA 0:04" on stderr, redrawn in place.
void drawPullProgress(const DownloadProgress& p, const std::string& id);

// Pull options for the CLI: the progress bar when `show`, and Ctrl-C (interrupts()) as the cancel flag.
PullOptions terminalPullOptions(const std::string& label, bool show);

// The load progress of `ewgpu run` on one line of stderr, redrawn in place:
// "loading MODEL: parse 12 ms | upload 120.0/266.0 MB 350 MB/s | pipelines 7/27".
class LoadProgressLine {
 public:
  explicit LoadProgressLine(std::string label) : label_(std::move(label)) {}
  void update(const LocalLoadProgress& p);
  void finish();  // clears the line

 private:
  std::string label_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), last_draw_{};
  size_t width_ = 0;
};

// Ctrl-C: install() routes SIGINT to a counter. The first interrupt sets interrupts() >= 1, which a command
// polls to stop cleanly; the second ends the process at once with exit code 130. With `immediate`, the first
// interrupt already ends it (a newline first): for phases with nothing to finish cleanly, such as a load.
void installInterruptHandler();
void setInterruptImmediate(bool immediate);
const std::atomic<bool>& interrupted();

}  // namespace ewgpu::cli
