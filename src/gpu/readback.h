// Asynchronous readback: copy GPU data into a map-read staging buffer inside a recorded command stream, then
// map it without blocking. The decode loop polls ready() (after Context::processEvents()) from its event loop
// or state machine; tools and tests may wait() instead.
#pragma once

#include "gpu/context.h"
#include "gpu/recorder.h"

#include <memory>
#include <span>

namespace ewgpu::gpu {

class Readback {
 public:
  static Result<Readback> create(Context& ctx, uint64_t size, std::string_view label = "readback");
  Readback() = default;
  Readback(Readback&&) noexcept = default;
  Readback& operator=(Readback&&) noexcept = default;

  // Records a copy of src[offset, offset+size) into the staging buffer (at staging offset dst_offset).
  void record(Recorder& rec, const Buffer& src, uint64_t offset, uint64_t size, uint64_t dst_offset = 0);
  // After the submit that carried record(): starts the map. The callback fires inside processEvents().
  void requestMap(Context& ctx);
  bool pending() const { return state_ && state_->requested && !state_->done; }
  bool ready() const { return state_ && state_->done && state_->status == WGPUMapAsyncStatus_Success; }
  // Status of a finished map (GPU_ERROR if it failed).
  Status status() const;
  // Blocking wait for the map (tools/tests; the decode loop polls instead).
  Status wait(Context& ctx);
  // Valid between ready() and unmap().
  std::span<const uint8_t> data() const;
  void unmap();
  uint64_t size() const { return staging_.size(); }

 private:
  struct State {
    bool requested = false, done = false;
    WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Error;
    std::string message;
    WGPUFuture future{};
  };
  Buffer staging_;
  // Shared with the map callback (which holds its own reference), so a Readback destroyed while a map is pending
  // never leaves the callback pointing at freed memory.
  std::shared_ptr<State> state_;
  const uint8_t* mapped_ = nullptr;
};

}  // namespace ewgpu::gpu
