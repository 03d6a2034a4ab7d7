// Deferred (asynchronous) pipeline creation and the on-disk blob cache of Dawn (gpu/pipeline_cache.h).
#include "gpu/context.h"
#include "gpu/pipeline_cache.h"
#include "gpu/readback.h"
#include "gpu/recorder.h"
#include "gpu_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace ewgpu::gpu {
namespace {

using testing::sharedContext;

// A deferred kernel dispatched before awaitPipelines() is resolved at its first dispatch and computes right.
TEST(DeferredPipelines, ResolveAtFirstDispatchAndCompute) {
  Context& ctx = sharedContext();
  ctx.deferPipelines(true);
  auto k = ctx.kernel("test_saxpy", {{"A", 1.25}});
  ctx.deferPipelines(false);
  ASSERT_TRUE(k.ok()) << k.error().toString();
  const uint32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = 0.5f * i, y[i] = 3.0f - i;
  auto bx = ctx.createBuffer(n * 4, BufferKind::kStorage, "x");
  auto by = ctx.createBuffer(n * 4, BufferKind::kStorage, "y");
  ASSERT_TRUE(bx.ok() && by.ok());
  ctx.write(*bx, 0, x.data(), n * 4);
  ctx.write(*by, 0, y.data(), n * 4);
  auto bg = ctx.bindGroup(**k, {{&*bx}, {&*by}});  // needs only the explicit layout, not the pipeline
  ASSERT_TRUE(bg.ok()) << bg.error().toString();
  auto rb = Readback::create(ctx, n * 4);
  ASSERT_TRUE(rb.ok());
  Recorder rec(ctx);
  rec.dispatch(**k, *bg, (n + 63) / 64);
  rb->record(rec, *by, 0, n * 4);
  ASSERT_TRUE(rec.submit().ok());
  EXPECT_NE((*k)->pipeline, nullptr);
  rb->requestMap(ctx);
  ASSERT_TRUE(rb->wait(ctx).ok());
  std::vector<float> got(n);
  std::memcpy(got.data(), rb->data().data(), n * 4);
  rb->unmap();
  for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], 1.25f * x[i] + y[i]) << i;
}

// A pipeline that fails while deferred is a typed error from awaitPipelines(), and again from kernel().
TEST(DeferredPipelines, FailureSurfacesAtAwaitAndStays) {
  Context& ctx = sharedContext();
  ctx.deferPipelines(true);
  auto k = ctx.kernel("test_saxpy", {{"NOT_A_CONSTANT", 2.0}});
  ctx.deferPipelines(false);
  ASSERT_TRUE(k.ok()) << "creation is only started here";
  Status s = ctx.awaitPipelines();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kGpu);
  EXPECT_EQ(s.error().detail["kernel"], "test_saxpy");
  EXPECT_EQ(s.error().detail["stage"], "pipeline");
  auto again = ctx.kernel("test_saxpy", {{"NOT_A_CONSTANT", 2.0}});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().detail["stage"], "pipeline");
  EXPECT_TRUE(ctx.takeError().ok()) << "reported through the callback, not as an uncaptured error";
}

TEST(PipelineDiskCache, StoresAndLoadsBlobsByKey) {
  std::string dir = ::testing::TempDir() + "/ewgpu-blobs";
  std::filesystem::remove_all(dir);
  PipelineDiskCache c(dir);
  const std::string key = "key-1", value(3000, 'v'), other = "key-2";
  EXPECT_EQ(PipelineDiskCache::load(key.data(), key.size(), nullptr, 0, &c), 0u) << "empty cache: a miss";
  PipelineDiskCache::store(key.data(), key.size(), value.data(), value.size(), &c);
  EXPECT_EQ(c.stores(), 1u);
  ASSERT_EQ(PipelineDiskCache::load(key.data(), key.size(), nullptr, 0, &c), value.size());
  std::string got(value.size(), '\0');
  EXPECT_EQ(PipelineDiskCache::load(key.data(), key.size(), got.data(), got.size(), &c), value.size());
  EXPECT_EQ(got, value);
  EXPECT_EQ(c.hits(), 1u);
  EXPECT_EQ(PipelineDiskCache::load(key.data(), key.size(), got.data(), 10, &c), 0u) << "wrong size: nothing copied";
  EXPECT_EQ(PipelineDiskCache::load(other.data(), other.size(), nullptr, 0, &c), 0u);
  // A blob file whose stored key differs (an md5 collision, or a damaged file) reads as a miss.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    f.put('X');
  }
  EXPECT_EQ(PipelineDiskCache::load(key.data(), key.size(), nullptr, 0, &c), 0u);
}

TEST(PipelineDiskCache, KeyNamesAdapterAndDawnBuildAsAFileName) {
  std::string k = pipelineCacheKey("google", "SwiftShader Device (Subzero)", "SwiftShader driver 5.0.0");
  EXPECT_EQ(k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"), std::string::npos)
      << k;
  EXPECT_NE(k.find("-dawn"), std::string::npos);
  EXPECT_EQ(k.find("dawnunknown"), std::string::npos) << "the Dawn library was found: " << k;
}

// A second context with the same cache directory reads what the first stored (the warm start).
TEST(PipelineDiskCache, ASecondContextHitsTheBlobsOfTheFirst) {
  std::string dir = ::testing::TempDir() + "/ewgpu-pipeline-cache";
  std::filesystem::remove_all(dir);
  for (int run = 0; run < 2; ++run) {
    auto ctx = Context::create({.pipeline_cache_dir = dir});
    ASSERT_TRUE(ctx.ok()) << ctx.error().toString();
    auto k = (*ctx)->kernel("test_saxpy", {{"A", 0.5}});
    ASSERT_TRUE(k.ok()) << k.error().toString();
    CompileStats s = (*ctx)->compileStats();
    EXPECT_EQ(s.cache_dir.rfind(dir + "/pipelines/", 0), 0u) << s.cache_dir;
    if (run == 0) {
      EXPECT_GT(s.cache_stores, 0u);
    } else {
      EXPECT_GT(s.cache_hits, 0u);
    }
  }
}

}  // namespace
}  // namespace ewgpu::gpu
