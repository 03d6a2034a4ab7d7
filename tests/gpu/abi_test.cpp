// Pins the ABI assumptions of src/gpu/webgpu_abi.h against the prebuilt Dawn (dawn-abi.md): struct sizes and
// offsets, the old feature numbering and the old instance descriptor. A Dawn bump that changes any of these
// fails here, loudly, instead of as garbage at run time.
#include "gpu/context.h"
#include "gpu_test_util.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

#ifndef EWGPU_SYSTEM_DAWN
static_assert(sizeof(WGPUStringView) == 16);
static_assert(sizeof(WGPUChainedStruct) == 16);
static_assert(sizeof(WGPUInstanceCapabilities) == 24 && offsetof(WGPUInstanceCapabilities, timedWaitAnyMaxCount) == 16);
static_assert(sizeof(WGPUInstanceDescriptor) == 32 && offsetof(WGPUInstanceDescriptor, capabilities) == 8);
static_assert(sizeof(WGPURequestAdapterOptions) == 32 && offsetof(WGPURequestAdapterOptions, backendType) == 20);
static_assert(sizeof(WGPUAdapterInfo) == 96 && offsetof(WGPUAdapterInfo, backendType) == 72);
static_assert(sizeof(WGPULimits) == 152 && offsetof(WGPULimits, maxStorageBufferBindingSize) == 72);
static_assert(offsetof(WGPULimits, maxBufferSize) == 96 && offsetof(WGPULimits, maxImmediateSize) == 148);
static_assert(sizeof(WGPUDeviceDescriptor) == 144 && offsetof(WGPUDeviceDescriptor, deviceLostCallbackInfo) == 72);
static_assert(offsetof(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo) == 112);
static_assert(sizeof(WGPUBufferDescriptor) == 48 && offsetof(WGPUBufferDescriptor, size) == 32);
static_assert(sizeof(WGPUBindGroupLayoutEntry) == 120 && offsetof(WGPUBindGroupLayoutEntry, buffer) == 32);
static_assert(sizeof(WGPUBindGroupEntry) == 56 && offsetof(WGPUBindGroupEntry, size) == 32);
static_assert(sizeof(WGPUComputePipelineDescriptor) == 80 && offsetof(WGPUComputePipelineDescriptor, compute) == 32);
static_assert(sizeof(WGPUComputeState) == 48 && sizeof(WGPUConstantEntry) == 32);
static_assert(sizeof(WGPUPipelineLayoutDescriptor) == 48 && sizeof(WGPUComputePassDescriptor) == 32);
static_assert(sizeof(WGPUPassTimestampWrites) == 24 && sizeof(WGPUQuerySetDescriptor) == 32);
static_assert(sizeof(WGPUBufferMapCallbackInfo) == 40 && sizeof(WGPUUncapturedErrorCallbackInfo) == 32);
static_assert(sizeof(WGPUDawnTogglesDescriptor) == 48 && sizeof(WGPUAdapterPropertiesMemoryHeaps) == 32);
static_assert(WGPUFeatureName_TimestampQuery == 0x03 && WGPUFeatureName_ShaderF16 == 0x0A);
static_assert(WGPUFeatureName_Subgroups == 0x11 && WGPUFeatureName_CoreFeaturesAndLimits == 0x12);
static_assert(sizeof(WGPUDawnCacheDeviceDescriptor) == 56 && offsetof(WGPUDawnCacheDeviceDescriptor, isolationKey) == 16);
static_assert(offsetof(WGPUDawnCacheDeviceDescriptor, loadDataFunction) == 32 &&
              offsetof(WGPUDawnCacheDeviceDescriptor, functionUserdata) == 48);
static_assert(sizeof(WGPUCreateComputePipelineAsyncCallbackInfo) == 40 &&
              offsetof(WGPUCreateComputePipelineAsyncCallbackInfo, callback) == 16);
static_assert(WGPUSType_DawnCacheDeviceDescriptor == 0x50007 && WGPUCreatePipelineAsyncStatus_ValidationError == 3);
static_assert(WGPUSType_DawnTogglesDescriptor == 0x5000A && WGPUSType_AdapterPropertiesMemoryHeaps == 0x50013);
static_assert(WGPUSType_AdapterPropertiesSubgroupMatrixConfigs == 0x5003B &&
              WGPUFeatureName_ChromiumExperimentalSubgroupMatrix == 0x50037);
static_assert(sizeof(WGPUAdapterPropertiesSubgroupMatrixConfigs) == 32 &&
              offsetof(WGPUAdapterPropertiesSubgroupMatrixConfigs, configs) == 24);
static_assert(sizeof(WGPUSubgroupMatrixConfig) == 20 && offsetof(WGPUSubgroupMatrixConfig, K) == 16);
#endif

namespace ewgpu::gpu {
namespace {

// Asks the binary to create a device with `feature` and returns its message ("" on success).
std::string deviceMessageFor(Context& ctx, uint32_t feature) {
  WGPUAdapter adapter = nullptr;
  WGPURequestAdapterOptions opts{};
  opts.backendType = WGPUBackendType_Vulkan;
  WGPURequestAdapterCallbackInfo acb{};
  acb.mode = WGPUCallbackMode_WaitAnyOnly;
  acb.callback = [](WGPURequestAdapterStatus, WGPUAdapter a, WGPUStringView, void* u1, void*) {
    *static_cast<WGPUAdapter*>(u1) = a;
  };
  acb.userdata1 = &adapter;
  EXPECT_TRUE(ctx.wait(wgpuInstanceRequestAdapter(ctx.instance(), &opts, acb)).ok());
  if (!adapter) return "no adapter";
  WGPUFeatureName f = (WGPUFeatureName)feature;
  WGPUDeviceDescriptor desc{};
  desc.requiredFeatureCount = 1;
  desc.requiredFeatures = &f;
  struct Out { WGPURequestDeviceStatus st; WGPUDevice d; std::string msg; } out{};
  WGPURequestDeviceCallbackInfo dcb{};
  dcb.mode = WGPUCallbackMode_WaitAnyOnly;
  dcb.callback = [](WGPURequestDeviceStatus st, WGPUDevice d, WGPUStringView m, void* u1, void*) {
    auto* o = static_cast<Out*>(u1);
    o->st = st;
    o->d = d;
    if (m.data) o->msg = m.length == WGPU_STRLEN ? std::string(m.data) : std::string(m.data, m.length);
  };
  dcb.userdata1 = &out;
  EXPECT_TRUE(ctx.wait(wgpuAdapterRequestDevice(adapter, &desc, dcb)).ok());
  std::string msg = out.st == WGPURequestDeviceStatus_Success ? "" : out.msg;
  if (out.d) {
    wgpuDeviceDestroy(out.d);
    wgpuDeviceRelease(out.d);
  }
  wgpuAdapterRelease(adapter);
  return msg.empty() && out.st != WGPURequestDeviceStatus_Success ? "failed" : msg;
}

TEST(Abi, LimitsStructIs152BytesInTheBinary) {
  Context& ctx = testing::sharedContext();
  alignas(8) unsigned char buf[512];
  std::memset(buf, 0xAB, sizeof buf);
  std::memset(buf, 0, 8);  // nextInChain = NULL
  ASSERT_EQ(wgpuDeviceGetLimits(ctx.device(), reinterpret_cast<WGPULimits*>(buf)), WGPUStatus_Success);
  int last = -1;
  for (int i = 0; i < 512; ++i)
    if (buf[i] != 0xAB) last = i;
  EXPECT_LE(last, 151);  // nothing written past our struct
  EXPECT_GE(last, 144);  // maxComputeWorkgroupsPerDimension at 144 is always written
}

TEST(Abi, OldFeatureNumberingIsWhatTheBinarySpeaks) {
  Context& ctx = testing::sharedContext();
  if (ctx.info().architecture != "swiftshader") GTEST_SKIP() << "messages pinned on SwiftShader";
  // SwiftShader has no shader-f16: the binary names the feature we asked for by value 0x0A.
  std::string m = deviceMessageFor(ctx, 0x0A);
  EXPECT_NE(m.find("ShaderF16"), std::string::npos) << m;
  // 0x03 is TimestampQuery here (0x09 in today's upstream header) and SwiftShader supports it.
  EXPECT_EQ(deviceMessageFor(ctx, 0x03), "");
  EXPECT_TRUE(ctx.info().timestamp_query);
  // 0x13 (TextureFormatsTier2's upstream neighbourhood) is not a valid feature value in this build.
  m = deviceMessageFor(ctx, 0x13);
  EXPECT_NE(m.find("invalid"), std::string::npos) << m;
}

}  // namespace
}  // namespace ewgpu::gpu
