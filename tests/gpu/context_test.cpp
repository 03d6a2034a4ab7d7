#include "gpu/context.h"
#include "gpu/readback.h"
#include "gpu/recorder.h"
#include "gpu_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

namespace ewgpu::gpu {
namespace {

using testing::sharedContext;

TEST(Context, CreatesADeviceWithTheAdaptersLimits) {
  Context& ctx = sharedContext();
  const DeviceInfo& d = ctx.info();
  EXPECT_EQ(d.backend, "vulkan");
  EXPECT_NE(d.backend, "null");
  EXPECT_GE(d.max_storage_buffer_binding_size, 128ull << 20);
  // The device got the adapter's maxima, not the spec defaults (SwiftShader: 1 GiB, 10 buffers/stage).
  EXPECT_EQ(ctx.limits().maxStorageBufferBindingSize, d.max_storage_buffer_binding_size);
  const char* adapter = std::getenv("EWGPU_ADAPTER");
  if (!adapter || std::string(adapter) != "gpu") {
    if (d.architecture == "swiftshader") {
      EXPECT_EQ(d.max_storage_buffer_binding_size, 1ull << 30);
      EXPECT_EQ(d.max_storage_buffers_per_shader_stage, 10u);
      EXPECT_FALSE(d.shader_f16);
    }
  }
}

TEST(Context, SwiftShaderCanBeRequestedExplicitly) {
  auto ctx = Context::create({.adapter = "swiftshader"});
  ASSERT_TRUE(ctx.ok()) << ctx.error().toString();
  EXPECT_EQ((*ctx)->info().architecture, "swiftshader");
  EXPECT_EQ((*ctx)->info().adapter_type, "cpu");
}

// Experimental features are opt-in: the default context never enables them, the option does (and is reported);
// subgroup matrices come with their shapes when the adapter offers them (SwiftShader does not).
TEST(Context, ExperimentalFeaturesAreOptIn) {
  const char* env = std::getenv("EWGPU_EXPERIMENTAL");
  if (!env || std::string(env) != "1") {
    EXPECT_FALSE(sharedContext().info().experimental);
    EXPECT_FALSE(sharedContext().info().subgroup_matrix);
  }
  auto ctx = Context::create({.experimental = true});
  ASSERT_TRUE(ctx.ok()) << ctx.error().toString();
  const DeviceInfo& d = (*ctx)->info();
  EXPECT_TRUE(d.experimental);
  EXPECT_EQ(d.subgroup_matrix, !d.subgroup_matrix_configs.empty());
  for (const auto& c : d.subgroup_matrix_configs) {
    EXPECT_TRUE(c.component == "f16" || c.component == "f32" || c.component == "i32" || c.component == "u32" ||
                c.component == "other") << c.component;
    EXPECT_GT(c.m * c.n * c.k, 0u);
  }
  if (d.architecture == "swiftshader") { EXPECT_FALSE(d.subgroup_matrix); }
}

TEST(Context, UnknownAdapterNameIsABadRequest) {
  auto ctx = Context::create({.adapter = "lavapipe"});
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.error().code, ErrorCode::kBadRequest);
}

TEST(Context, KernelMatchesCpuOnRandomData) {
  Context& ctx = sharedContext();
  const uint32_t n = 10007;  // not a multiple of the workgroup
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist;
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = dist(rng);
  for (auto& v : y) v = dist(rng);
  const float a = 0.75f;
  auto k = ctx.kernel("test_saxpy", {{"A", a}});
  ASSERT_TRUE(k.ok()) << k.error().toString();
  auto bx = ctx.createBuffer(n * 4, BufferKind::kStorage, "x");
  auto by = ctx.createBuffer(n * 4, BufferKind::kStorage, "y");
  ASSERT_TRUE(bx.ok() && by.ok());
  ctx.write(*bx, 0, x.data(), n * 4);
  ctx.write(*by, 0, y.data(), n * 4);
  auto bg = ctx.bindGroup(**k, {{&*bx}, {&*by}});
  ASSERT_TRUE(bg.ok()) << bg.error().toString();
  auto rb = Readback::create(ctx, n * 4);
  ASSERT_TRUE(rb.ok());
  Recorder rec(ctx);
  rec.dispatch(**k, *bg, (n + 63) / 64);
  rb->record(rec, *by, 0, n * 4);
  ASSERT_TRUE(rec.submit().ok());
  rb->requestMap(ctx);
  ASSERT_TRUE(rb->wait(ctx).ok());
  std::vector<float> got(n);
  std::memcpy(got.data(), rb->data().data(), n * 4);
  rb->unmap();
  for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], a * x[i] + y[i]) << i;
}

TEST(Context, PipelineCacheIsKeyedByKernelAndConstants) {
  Context& ctx = sharedContext();
  auto a = ctx.kernel("test_saxpy", {{"A", 2.0}});
  auto b = ctx.kernel("test_saxpy", {{"A", 2.0}});
  auto c = ctx.kernel("test_saxpy", {{"A", 3.0}});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
}

TEST(Context, InvalidWgslIsATypedErrorCarryingTheCompilerMessage) {
  Context& ctx = sharedContext();
  auto k = ctx.compile("broken", "@compute @workgroup_size(1) fn main() { let x: u32 = undefined_thing; }");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code, ErrorCode::kGpu);
  EXPECT_EQ(k.error().detail["kernel"], "broken");
  std::string compiler = k.error().detail["compiler"];
  EXPECT_NE(compiler.find("undefined_thing"), std::string::npos) << compiler;
  EXPECT_TRUE(ctx.takeError().ok());  // captured by the scope, not left as an uncaptured error
}

TEST(Context, InvalidOverrideConstantFailsAtPipelineCreation) {
  Context& ctx = sharedContext();
  auto k = ctx.kernel("test_saxpy", {{"NOT_A_CONSTANT", 1.0}});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code, ErrorCode::kGpu);
  EXPECT_EQ(k.error().detail["stage"], "pipeline");
}

// //#include appends an embedded snippet once, after the file (the file's own lines keep their numbers); an
// unknown snippet leaves a line that fails to compile with its name in the compiler's message.
TEST(Context, IncludeAppendsTheSnippetAfterTheFile) {
  const std::string src = "// line 1\n//#include gdn_layout\nfn a() -> u32 { return channels(); }\n//#include gdn_layout\n";
  std::string out = preprocessWgsl(src, {});
  EXPECT_EQ(out.rfind("// line 1\n\nfn a() -> u32 { return channels(); }\n\n", 0), 0u) << out;
  EXPECT_LT(out.find("fn a()"), out.find("fn channels()")) << "the snippet comes after the file";
  EXPECT_NE(out.find(std::string(embeddedWgsl("gdn_layout"))), std::string::npos);
  EXPECT_EQ(out.find("fn channels()"), out.rfind("fn channels()")) << "included once";
  std::string dropped = preprocessWgsl("//#if NOPE\n//#include gdn_layout\n//#endif\n", {});
  EXPECT_EQ(dropped.find("channels"), std::string::npos) << "an include in a dropped branch is dropped";

  Context& ctx = sharedContext();
  auto k = ctx.compile("includes", preprocessWgsl("//#include no_such_snippet\n@compute @workgroup_size(1) fn main() {}\n", {}));
  ASSERT_FALSE(k.ok());
  std::string compiler = k.error().detail["compiler"];
  EXPECT_NE(compiler.find("no_such_snippet"), std::string::npos) << compiler;
  EXPECT_TRUE(ctx.takeError().ok());
}

TEST(Context, UnknownEmbeddedKernelIsAnError) {
  auto k = sharedContext().kernel("no_such_kernel");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code, ErrorCode::kInternal);
}

TEST(Context, OversizedBufferIsATypedError) {
  Context& ctx = sharedContext();
  uint64_t too_big = ctx.limits().maxBufferSize + 4;
  auto b = ctx.createBuffer(too_big, BufferKind::kStorage, "huge");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::kBadRequest);
  EXPECT_EQ(b.error().detail["size"], too_big);
  EXPECT_EQ(b.error().detail["limit"], ctx.limits().maxBufferSize);
}

TEST(Context, ValidationErrorInASubmitSurfacesAsGpuError) {
  Context& ctx = sharedContext();
  auto k = ctx.kernel("test_saxpy", {{"A", 1.0}});
  ASSERT_TRUE(k.ok());
  auto buf = ctx.createBuffer(256, BufferKind::kStorage, "same");
  ASSERT_TRUE(buf.ok());
  // The same buffer bound read-only and read-write in one dispatch is a usage-scope validation error.
  auto bg = ctx.bindGroup(**k, {{&*buf}, {&*buf}});
  ASSERT_TRUE(bg.ok());
  Recorder rec(ctx);
  rec.dispatch(**k, *bg, 1);
  Status s = rec.submit();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kGpu);
  EXPECT_FALSE(s.error().message.empty());
  EXPECT_TRUE(ctx.takeError().ok());  // reported once
}

TEST(Context, DeviceLossBecomesATypedStickyError) {
  auto ctx = Context::create();
  ASSERT_TRUE(ctx.ok());
  Context& c = **ctx;
  wgpuDeviceForceLoss(c.device(), WGPUDeviceLostReason_Unknown, WGPUStringView{"test loss", WGPU_STRLEN});
  for (int i = 0; i < 100 && !c.lost(); ++i) c.processEvents();
  ASSERT_TRUE(c.lost());
  Status s = c.takeError();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kDeviceLost);
  EXPECT_FALSE(c.takeError().ok());  // sticky
  // Work after loss fails with a typed error instead of a silent no-op.
  auto b = c.createBuffer(64, BufferKind::kStorage, "after-loss");
  Recorder rec(c);
  if (b.ok()) rec.clear(*b, 0, 64);
  EXPECT_EQ(rec.submit().error().code, ErrorCode::kDeviceLost);
}

}  // namespace
}  // namespace ewgpu::gpu
