#include "gpu/readback.h"
#include "gpu/recorder.h"
#include "gpu_test_util.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ewgpu::gpu {
namespace {

using testing::sharedContext;

struct Counter {
  Buffer buf;
  BindGroup bg;
  const Kernel* k = nullptr;
};

Counter makeCounter(Context& ctx) {
  Counter c;
  auto k = ctx.kernel("bench_dependent");
  EXPECT_TRUE(k.ok()) << k.error().toString();
  c.k = *k;
  c.buf = std::move(*ctx.createBuffer(4, BufferKind::kStorage, "counter"));
  c.bg = std::move(*ctx.bindGroup(*c.k, {{&c.buf}}));
  return c;
}

uint32_t readCounter(Context& ctx, const Counter& c) {
  auto rb = Readback::create(ctx, 4);
  Recorder rec(ctx);
  rb->record(rec, c.buf, 0, 4);
  EXPECT_TRUE(rec.submit().ok());
  rb->requestMap(ctx);
  EXPECT_TRUE(rb->wait(ctx).ok());
  uint32_t v;
  std::memcpy(&v, rb->data().data(), 4);
  rb->unmap();
  return v;
}

TEST(Recorder, ConsecutiveDispatchesShareOnePassPerFlush) {
  Context& ctx = sharedContext();
  Counter c = makeCounter(ctx);
  Recorder rec(ctx);
  for (int i = 0; i < 37; ++i) rec.dispatch(*c.k, c.bg, 1);
  ASSERT_TRUE(rec.submit().ok());
  EXPECT_EQ(rec.stats().dispatches, 37u);
  EXPECT_EQ(rec.stats().passes, 1u);
  EXPECT_EQ(rec.stats().submits, 1u);
  // Dependent dispatches inside one pass are ordered: every increment is seen.
  EXPECT_EQ(readCounter(ctx, c), 37u);
}

TEST(Recorder, CopiesSplitPassesAndTheCapSubmitsEarly) {
  Context& ctx = sharedContext();
  Counter c = makeCounter(ctx);
  auto other = ctx.createBuffer(4, BufferKind::kStorage, "other");
  Recorder rec(ctx, /*dispatch_cap=*/4);
  for (int i = 0; i < 3; ++i) rec.dispatch(*c.k, c.bg, 1);
  rec.copy(c.buf, 0, *other, 0, 4);  // ends the pass
  for (int i = 0; i < 7; ++i) rec.dispatch(*c.k, c.bg, 1);
  ASSERT_TRUE(rec.submit().ok());
  EXPECT_EQ(rec.stats().dispatches, 10u);
  // Pass 1: 3 dispatches; then 1 more in pass 2 reaches the cap (4 since submit) -> submit; 4; then 2.
  EXPECT_EQ(rec.stats().passes, 4u);
  EXPECT_EQ(rec.stats().submits, 3u);
  EXPECT_EQ(readCounter(ctx, c), 10u);
}

TEST(Readback, MapsAsynchronouslyWithoutBlocking) {
  Context& ctx = sharedContext();
  Counter c = makeCounter(ctx);
  Recorder rec(ctx);
  for (int i = 0; i < 5; ++i) rec.dispatch(*c.k, c.bg, 1);
  auto rb = Readback::create(ctx, 4);
  ASSERT_TRUE(rb.ok());
  rb->record(rec, c.buf, 0, 4);
  ASSERT_TRUE(rec.submit().ok());
  rb->requestMap(ctx);
  EXPECT_TRUE(rb->pending() || rb->ready());
  // Poll like an event loop: processEvents never blocks; the map completes after some polls.
  int polls = 0;
  while (!rb->ready() && polls < 2'000'000) {
    ctx.processEvents();
    ++polls;
  }
  ASSERT_TRUE(rb->ready()) << "map never completed";
  ASSERT_TRUE(rb->status().ok());
  uint32_t v;
  std::memcpy(&v, rb->data().data(), 4);
  EXPECT_EQ(v, 5u);
  rb->unmap();
  EXPECT_FALSE(rb->ready());
}

TEST(Timer, MeasuresPassesWhenTimestampsExist) {
  Context& ctx = sharedContext();
  auto timer = Timer::create(ctx);
  ASSERT_TRUE(timer.ok()) << timer.error().toString();
  if (!(*timer)->available()) GTEST_SKIP() << "adapter has no timestamp-query";
  Counter c = makeCounter(ctx);
  Recorder rec(ctx);
  rec.setTimer(timer->get());
  for (int i = 0; i < 200; ++i) rec.dispatch(*c.k, c.bg, 1);
  (*timer)->resolve(rec);
  ASSERT_TRUE(rec.submit().ok());
  auto ns = (*timer)->readTotalNs(ctx);
  ASSERT_TRUE(ns.ok()) << ns.error().toString();
  EXPECT_GT(*ns, 0u);
  EXPECT_LT(*ns, 60'000'000'000ull);
}

}  // namespace
}  // namespace ewgpu::gpu

namespace ewgpu::gpu {
namespace {

TEST(Readback, DestroyedWhileAMapIsPendingIsSafe) {
  Context& ctx = testing::sharedContext();
  auto src = ctx.createBuffer(1 << 20, BufferKind::kStorage, "src");
  ASSERT_TRUE(src.ok());
  {
    auto rb = Readback::create(ctx, 1 << 20);
    ASSERT_TRUE(rb.ok());
    Recorder rec(ctx);
    rb->record(rec, *src, 0, 1 << 20);
    ASSERT_TRUE(rec.submit().ok());
    rb->requestMap(ctx);
  }  // the Readback and its staging buffer go away with the map in flight
  for (int i = 0; i < 1000; ++i) ctx.processEvents();  // the callback fires on its own state, not on freed memory
  EXPECT_TRUE(ctx.finish().ok());
}

}  // namespace
}  // namespace ewgpu::gpu
