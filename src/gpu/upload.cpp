#include "gpu/upload.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace ewgpu::gpu {

void copyPieces(const std::vector<HostCopy>& pieces, uint32_t threads) {
  constexpr size_t kChunk = 1u << 20;
  std::vector<HostCopy> chunks;
  for (const HostCopy& p : pieces)
    for (size_t o = 0; o < p.n; o += kChunk) chunks.push_back({p.src + o, p.at + o, std::min(kChunk, p.n - o)});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < chunks.size();) std::memcpy(chunks[i].at, chunks[i].src, chunks[i].n);
  };
  std::vector<std::thread> pool;
#ifndef EWGPU_WEB
  for (uint32_t t = 1; t < threads && t < chunks.size(); ++t) pool.emplace_back(work);
#endif
  work();
  for (auto& t : pool) t.join();
}

Status uploadThroughRing(Context& ctx, const std::vector<UploadRange>& ranges, const RingOptions& o) {
  struct Slot {
    Buffer b;
    uint8_t* p = nullptr;
    WGPUFuture f{};
    bool pending = false;
    WGPUMapAsyncStatus status = WGPUMapAsyncStatus_Success;
  };
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.size;
  if (total == 0) return {};
  const uint64_t slot_bytes = std::min<uint64_t>(o.slot_bytes, (total + 3) & ~uint64_t(3));
  std::vector<Slot> slots(std::max<uint32_t>(1, std::min<uint64_t>(o.slots, (total + slot_bytes - 1) / slot_bytes)));
  for (auto& s : slots) EWGPU_ASSIGN(s.b, ctx.createMapped(slot_bytes, BufferKind::kUpload, "upload-ring", &s.p));
  auto await = [&](Slot& s) -> Status {
    if (!s.pending) return {};
    EWGPU_TRY(ctx.waitLong(s.f));
    s.pending = false;
    if (s.status != WGPUMapAsyncStatus_Success)
      return makeError(ErrorCode::kGpu, "the upload's staging buffer could not be mapped", {{"status", (int)s.status}});
    s.p = static_cast<uint8_t*>(wgpuBufferGetMappedRange(s.b.handle(), 0, slot_bytes));
    if (!s.p) return makeError(ErrorCode::kGpu, "no mapped range for the upload's staging buffer");
    return {};
  };
  struct Copy {
    uint64_t from;
    WGPUBuffer dst;
    uint64_t dst_offset, n;
  };
  std::vector<HostCopy> pieces;
  std::vector<Copy> copies;
  size_t next = 0;
  uint64_t done = 0;  // bytes of ranges[next] already placed
  auto run = [&]() -> Status {
  for (uint64_t k = 0; next < ranges.size(); ++k) {
    Slot& s = slots[k % slots.size()];
    EWGPU_TRY(await(s));
    pieces.clear();
    copies.clear();
    uint64_t used = 0;
    while (next < ranges.size() && used < slot_bytes) {
      const UploadRange& r = ranges[next];
      const uint64_t n = std::min(r.size - done, slot_bytes - used);
      if (n) {
        pieces.push_back({r.src + done, s.p + used, (size_t)n});
        copies.push_back({used, r.dst, r.dst_offset + done, n});
      }
      used += n;
      done += n;
      if (done == r.size) {
        ++next;
        done = 0;
      }
    }
    copyPieces(pieces, o.threads);
    ctx.unmap(s.b);
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx.device(), nullptr);
    for (const Copy& c : copies) wgpuCommandEncoderCopyBufferToBuffer(enc, s.b.handle(), c.from, c.dst, c.dst_offset, c.n);
    WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, nullptr);
    wgpuQueueSubmit(ctx.queue(), 1, &cmd);
    wgpuCommandBufferRelease(cmd);
    wgpuCommandEncoderRelease(enc);
    WGPUBufferMapCallbackInfo cb{};
    cb.mode = WGPUCallbackMode_WaitAnyOnly;
    cb.callback = [](WGPUMapAsyncStatus st, WGPUStringView, void* u1, void*) { *static_cast<WGPUMapAsyncStatus*>(u1) = st; };
    cb.userdata1 = &s.status;
    s.f = wgpuBufferMapAsync(s.b.handle(), WGPUMapMode_Write, 0, slot_bytes, cb);
    s.pending = true;
  }
  return {};
  };
  Status st = run();
  for (auto& s : slots) {  // no map may be left pending (its callback points into `slots`)
    Status w = await(s);
    if (st && !w) st = std::move(w);
  }
  return st;
}

}  // namespace ewgpu::gpu
