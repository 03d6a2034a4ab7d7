// Recorder: puts consecutive dispatches into one compute pass per flush. Dispatches inside a pass are ordered
// by WebGPU's implicit barriers, so extra passes buy no correctness (the seed measured ~100 µs per pass on
// Metal). A copy or clear ends the pass; submit() ends the pass and submits the command buffer. A dispatch cap
// submits early after `dispatch_cap` dispatches (the seed lost a device with thousands in one encoder).
// Optional GPU timing: with a Timer attached, every pass writes begin/end timestamps.
#pragma once

#include "gpu/context.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ewgpu::gpu {

class Timer;

struct RecorderStats {
  uint64_t dispatches = 0;
  uint64_t passes = 0;
  uint64_t submits = 0;
};

class Recorder {
 public:
  explicit Recorder(Context& ctx, uint32_t dispatch_cap = 8192);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void dispatch(const Kernel& k, const BindGroup& bg, uint32_t x, uint32_t y = 1, uint32_t z = 1);
  // A dispatch whose repeats would change what it computes (the sampler: penalties applied in place, the row state
  // advanced, candidate lists appended to): as dispatch(), but issued once in its pass when profiling repeats.
  void dispatchOnce(const Kernel& k, const BindGroup& bg, uint32_t x, uint32_t y = 1, uint32_t z = 1);
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size);
  void clear(const Buffer& buf, uint64_t offset, uint64_t size);
  // Resolves queries [0, count) of `set` into `dst` (ends the pass).
  void resolveQueries(WGPUQuerySet set, uint32_t count, const Buffer& dst);
  // Ends the open pass (if any) and submits everything recorded so far. Returns device errors raised so far.
  Status submit();
  void setTimer(Timer* t) { timer_ = t; }
  // Profiling: every dispatch gets its own pass (so a Timer times each kernel); passLabels() names them. With
  // repeat > 1 the dispatch is issued that many times in its pass (the pass time / repeat is then the cost of the
  // dispatch between neighbours, as in a real step, without the pass's own overhead). Only for benchmarks:
  // repeating a dispatch repeats its side effects.
  void setSplitPasses(bool on, uint32_t repeat = 1) { split_ = on; repeat_ = repeat ? repeat : 1; }
  const std::vector<std::string>& passLabels() const { return labels_; }
  const std::vector<std::string>& passDetails() const { return details_; }  // constants and grid per pass
  const std::vector<uint32_t>& passRepeats() const { return repeats_; }     // dispatches per pass (1 or repeat)
  const RecorderStats& stats() const { return stats_; }
  void resetStats() { stats_ = {}; }

 private:
  void ensureEncoder();
  void ensurePass();
  void endPass();

  Context& ctx_;
  uint32_t cap_;
  uint32_t since_submit_ = 0;
  WGPUCommandEncoder encoder_ = nullptr;
  WGPUComputePassEncoder pass_ = nullptr;
  Timer* timer_ = nullptr;
  bool split_ = false;
  uint32_t repeat_ = 1;
  bool once_ = false;  // the dispatch being recorded is a dispatchOnce
  std::vector<std::string> labels_, details_;
  std::vector<uint32_t> repeats_;
  RecorderStats stats_;
  Status deferred_error_;  // a dispatch dropped for want of a pipeline (asynchronous creation failed)
};

// Timestamps around compute passes (needs the timestamp-query feature; otherwise available() is false).
class Timer {
 public:
  static Result<std::unique_ptr<Timer>> create(Context& ctx, uint32_t max_passes = 2048);  // 2 queries each; WebGPU caps a set at 4096
  ~Timer();
  bool available() const { return set_ != nullptr; }
  // Indices for the next pass, or nullptr when full/unavailable.
  const WGPUPassTimestampWrites* nextPass();
  // Records resolve + copy into the readback buffer (call before the final submit).
  void resolve(Recorder& rec);
  // After the submit completed: sum of (end - begin) over recorded passes, in nanoseconds; resets.
  Result<uint64_t> readTotalNs(Context& ctx);
  // The same, per pass (in recording order); resets.
  Result<std::vector<uint64_t>> readPassNs(Context& ctx);

 private:
  Timer() = default;
  WGPUQuerySet set_ = nullptr;
  Buffer resolve_buf_, readback_;
  uint32_t max_passes_ = 0, used_ = 0;
  WGPUPassTimestampWrites writes_{};
};

}  // namespace ewgpu::gpu
