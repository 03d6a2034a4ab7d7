#include "gpu/readback.h"

namespace ewgpu::gpu {

Result<Readback> Readback::create(Context& ctx, uint64_t size, std::string_view label) {
  auto b = ctx.createBuffer(size, BufferKind::kReadback, label);
  if (!b) return std::move(b).error();
  Readback r;
  r.staging_ = std::move(*b);
  r.state_ = std::make_shared<State>();
  return r;
}

void Readback::record(Recorder& rec, const Buffer& src, uint64_t offset, uint64_t size, uint64_t dst_offset) {
  rec.copy(src, offset, staging_, dst_offset, size);
}

void Readback::requestMap(Context& ctx) {
  *state_ = State{};
  state_->requested = true;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus st, WGPUStringView msg, void* u1, void*) {
    auto* held = static_cast<std::shared_ptr<State>*>(u1);
    State* s = held->get();
    s->status = st;
    s->done = true;
    if (msg.data) s->message = msg.length == WGPU_STRLEN ? std::string(msg.data) : std::string(msg.data, msg.length);
    delete held;
  };
  cb.userdata1 = new std::shared_ptr<State>(state_);
  state_->future = wgpuBufferMapAsync(staging_.handle(), WGPUMapMode_Read, 0, staging_.size(), cb);
}

Status Readback::status() const {
  if (!state_ || !state_->done) return makeError(ErrorCode::kInternal, "readback not finished");
  if (state_->status != WGPUMapAsyncStatus_Success)
    return makeError(ErrorCode::kGpu, "readback map failed: " + state_->message,
                     {{"status", (int)state_->status}, {"message", state_->message}});
  return {};
}

Status Readback::wait(Context& ctx) {
  if (!state_ || !state_->requested) return makeError(ErrorCode::kInternal, "readback wait without requestMap");
  if (ctx.lost()) return ctx.takeError();
  ctx.processEvents();
  if (!state_->done) EWGPU_TRY(ctx.waitLong(state_->future));
  if (!state_->done) ctx.processEvents();  // the completed map's callback, where WaitAny left it to the event pump
  EWGPU_TRY(ctx.takeError());
  return status();
}

std::span<const uint8_t> Readback::data() const {
  if (!ready()) return {};
  auto* self = const_cast<Readback*>(this);
  if (!self->mapped_)
    self->mapped_ = static_cast<const uint8_t*>(wgpuBufferGetConstMappedRange(staging_.handle(), 0, staging_.size()));
  return {mapped_, mapped_ ? static_cast<size_t>(staging_.size()) : size_t{0}};  // a staging buffer fits the (wasm32) address space
}

void Readback::unmap() {
  if (state_ && state_->done && state_->status == WGPUMapAsyncStatus_Success) wgpuBufferUnmap(staging_.handle());
  mapped_ = nullptr;
  if (state_) *state_ = State{};
}

}  // namespace ewgpu::gpu
