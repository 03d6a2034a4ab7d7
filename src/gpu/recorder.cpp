#include "gpu/recorder.h"

#include <atomic>
#include <cstring>

namespace ewgpu::gpu {

Recorder::Recorder(Context& ctx, uint32_t dispatch_cap) : ctx_(ctx), cap_(dispatch_cap) {}

Recorder::~Recorder() {
  if (pass_) {
    wgpuComputePassEncoderEnd(pass_);
    wgpuComputePassEncoderRelease(pass_);
  }
  if (encoder_) wgpuCommandEncoderRelease(encoder_);
}

void Recorder::ensureEncoder() {
  if (!encoder_) {
    WGPUCommandEncoderDescriptor d{};
    encoder_ = wgpuDeviceCreateCommandEncoder(ctx_.device(), &d);
  }
}

void Recorder::ensurePass() {
  ensureEncoder();
  if (pass_) return;
  WGPUComputePassDescriptor d{};
  if (timer_) d.timestampWrites = timer_->nextPass();
  pass_ = wgpuCommandEncoderBeginComputePass(encoder_, &d);
  ++stats_.passes;
}

void Recorder::endPass() {
  if (!pass_) return;
  wgpuComputePassEncoderEnd(pass_);
  wgpuComputePassEncoderRelease(pass_);
  pass_ = nullptr;
}

void Recorder::dispatch(const Kernel& k, const BindGroup& bg, uint32_t x, uint32_t y, uint32_t z) {
  if (cap_ && since_submit_ >= cap_) (void)submit();  // errors resurface at the caller's submit()
  if (!k.pipeline) {
    // A pipeline still compiling asynchronously (Context::kernel). A failure surfaces at submit() via the
    // context's error, and the dispatch is dropped rather than recorded without a pipeline.
    Status s = ctx_.awaitPipelines();
    if (!k.pipeline) {
      if (deferred_error_)
        deferred_error_ = s ? makeError(ErrorCode::kGpu, "kernel '" + k.name + "' has no pipeline: " + k.error,
                                        {{"kernel", k.name}, {"compiler", k.error}})
                            : std::move(s).error();
      return;
    }
  }
  ensurePass();
  wgpuComputePassEncoderSetPipeline(pass_, k.pipeline);
  wgpuComputePassEncoderSetBindGroup(pass_, 0, bg.handle(), 0, nullptr);
  const uint32_t n = split_ && !once_ ? repeat_ : 1;
  for (uint32_t r = 0; r < n; ++r) wgpuComputePassEncoderDispatchWorkgroups(pass_, x, y, z);
  ++stats_.dispatches;
  ++since_submit_;
  if (split_) {
    repeats_.push_back(n);
    labels_.push_back(k.name);
    details_.push_back(k.constants + " grid=" + std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z));
    endPass();
  }
}

void Recorder::dispatchOnce(const Kernel& k, const BindGroup& bg, uint32_t x, uint32_t y, uint32_t z) {
  once_ = true;
  dispatch(k, bg, x, y, z);
  once_ = false;
}

void Recorder::copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size) {
  endPass();
  ensureEncoder();
  wgpuCommandEncoderCopyBufferToBuffer(encoder_, src.handle(), src_offset, dst.handle(), dst_offset, size);
}

void Recorder::clear(const Buffer& buf, uint64_t offset, uint64_t size) {
  endPass();
  ensureEncoder();
  wgpuCommandEncoderClearBuffer(encoder_, buf.handle(), offset, size);
}

void Recorder::resolveQueries(WGPUQuerySet set, uint32_t count, const Buffer& dst) {
  endPass();
  ensureEncoder();
  wgpuCommandEncoderResolveQuerySet(encoder_, set, 0, count, dst.handle(), 0);
}

namespace {
std::atomic<bool> g_lose_at_next_submit{false};
}  // namespace

void loseDeviceAtNextSubmit() { g_lose_at_next_submit.store(true); }

Status Recorder::submit() {
  endPass();
  if (g_lose_at_next_submit.exchange(false)) {
    const char* why = "forced by gpu::loseDeviceAtNextSubmit";
    wgpuDeviceForceLoss(ctx_.device(), WGPUDeviceLostReason_Unknown, WGPUStringView{why, std::strlen(why)});
  }
  if (encoder_) {
    WGPUCommandBufferDescriptor d{};
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(encoder_, &d);
    wgpuCommandEncoderRelease(encoder_);
    encoder_ = nullptr;
    if (cb) {
      wgpuQueueSubmit(ctx_.queue(), 1, &cb);
      wgpuCommandBufferRelease(cb);
    }
    ++stats_.submits;
  }
  since_submit_ = 0;
  if (!deferred_error_) {
    Status e = std::move(deferred_error_);
    deferred_error_ = Status();
    return e;
  }
  return ctx_.takeError();
}

// ---- Timer ----

Result<std::unique_ptr<Timer>> Timer::create(Context& ctx, uint32_t max_passes) {
  std::unique_ptr<Timer> t(new Timer());
  if (!ctx.info().timestamp_query) return t;
  WGPUQuerySetDescriptor d{};
  d.type = WGPUQueryType_Timestamp;
  d.count = 2 * max_passes;
  Status s = ctx.scoped([&] { t->set_ = wgpuDeviceCreateQuerySet(ctx.device(), &d); });
  if (!s) return std::move(s).error();
  auto r = ctx.createBuffer(8ull * d.count, BufferKind::kQuery, "timestamps");
  if (!r) return std::move(r).error();
  t->resolve_buf_ = std::move(*r);
  auto rb = ctx.createBuffer(8ull * d.count, BufferKind::kReadback, "timestamps-readback");
  if (!rb) return std::move(rb).error();
  t->readback_ = std::move(*rb);
  t->max_passes_ = max_passes;
  return t;
}

Timer::~Timer() {
  if (set_) {
    wgpuQuerySetDestroy(set_);
    wgpuQuerySetRelease(set_);
  }
}

const WGPUPassTimestampWrites* Timer::nextPass() {
  if (!set_ || used_ >= max_passes_) return nullptr;
  writes_ = WGPUPassTimestampWrites{};
  writes_.querySet = set_;
  writes_.beginningOfPassWriteIndex = 2 * used_;
  writes_.endOfPassWriteIndex = 2 * used_ + 1;
  ++used_;
  return &writes_;
}

void Timer::resolve(Recorder& rec) {
  if (!set_ || used_ == 0) return;
  rec.resolveQueries(set_, 2 * used_, resolve_buf_);
  rec.copy(resolve_buf_, 0, readback_, 0, 16ull * used_);
}

Result<uint64_t> Timer::readTotalNs(Context& ctx) {
  auto per = readPassNs(ctx);
  if (!per) return std::move(per).error();
  uint64_t total = 0;
  for (uint64_t v : *per) total += v;
  return total;
}

Result<std::vector<uint64_t>> Timer::readPassNs(Context& ctx) {
  std::vector<uint64_t> out;
  if (!set_ || used_ == 0) return out;
  struct Out { WGPUMapAsyncStatus st = WGPUMapAsyncStatus_Error; } map;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_WaitAnyOnly;
  cb.callback = [](WGPUMapAsyncStatus st, WGPUStringView, void* u1, void*) { static_cast<Out*>(u1)->st = st; };
  cb.userdata1 = &map;
  uint64_t bytes = 16ull * used_;
  EWGPU_TRY(ctx.wait(wgpuBufferMapAsync(readback_.handle(), WGPUMapMode_Read, 0, bytes, cb)));
  if (map.st != WGPUMapAsyncStatus_Success) return makeError(ErrorCode::kGpu, "timestamp readback failed");
  const auto* p = static_cast<const uint64_t*>(wgpuBufferGetConstMappedRange(readback_.handle(), 0, bytes));
  for (uint32_t i = 0; i < used_; ++i) out.push_back(p[2 * i + 1] > p[2 * i] ? p[2 * i + 1] - p[2 * i] : 0);
  wgpuBufferUnmap(readback_.handle());
  used_ = 0;
  return out;
}

}  // namespace ewgpu::gpu
