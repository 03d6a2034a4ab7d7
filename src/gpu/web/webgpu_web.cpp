// The gpu layer's second backend (browser build only, cmake/Web.cmake): the wgpu* functions that src/gpu/ calls
// (the subset declared in gpu/webgpu_abi.h), implemented over navigator.gpu. This file reads the C descriptors
// (so struct layouts are wasm32's by construction) and hands scalars, handles and small JSON strings to our own
// JS library, library_ewgpu_webgpu.js, which owns the GPU* objects in a handle table. Nothing here blocks:
//   - the adapter and device are requested by the worker before the module's first call (requestAdapter and
//     requestDevice are promises in a browser); wgpuInstanceRequestAdapter / wgpuAdapterRequestDevice complete
//     at once with them;
//   - a future completes when its promise settles (JS calls ewgpu_web_future_done); wgpuInstanceWaitAny reports
//     what has completed and never waits (timeout or not): a caller that must wait gets TimedOut;
//   - error scopes are popped asynchronously: the pop's future completes at once with NoError, and an error the
//     scope caught arrives later through the uncaptured-error callback (Context::takeError() reports it);
//   - queue-done futures complete at once: the queue orders later work after earlier work anyway, and errors of
//     that work also arrive through the uncaptured-error callback;
//   - mapAsync is the one real wait: its future completes when the JS promise resolves (the bytes are copied into
//     the wasm heap then) and its callback runs in the next wgpuInstanceProcessEvents.
// docs/web.md has the whole picture.
#include "gpu/webgpu_abi.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

extern "C" {
// library_ewgpu_webgpu.js. Handles are small positive integers (0 = none); 64-bit values travel as doubles.
int ewgpuJsReady();
int ewgpuJsAdapterInfo(char* out, int cap);  // JSON {vendor, architecture, device, description, subgroupMin, ...}
int ewgpuJsLimits(int which, char* out, int cap);  // which: 0 adapter, 1 device; JSON of GPUSupportedLimits
int ewgpuJsHasFeature(int which, const char* name);
int ewgpuJsHasWgslFeature(const char* name);
void ewgpuJsDeviceDestroy();
void ewgpuJsPushErrorScope(int filter);
void ewgpuJsPopErrorScope();
int ewgpuJsCreateBuffer(double size, int usage, const char* label);
void ewgpuJsBufferDestroy(int buffer);
void ewgpuJsRelease(int handle);
void ewgpuJsWriteBuffer(int buffer, double offset, const void* data, double size);
void ewgpuJsMapRead(int buffer, double offset, double size, int future, void* dst);
int ewgpuJsCreateShaderModule(const char* code, const char* label);
int ewgpuJsCreateBindGroupLayout(const int32_t* entries, int count, const char* label);  // (binding, type) pairs
int ewgpuJsCreatePipelineLayout(const int32_t* layouts, int count);
int ewgpuJsCreateComputePipeline(int layout, int module, const char* entry, const char* constants_json, const char* label);
int ewgpuJsCreateBindGroup(int layout, const double* entries, int count, const char* label);  // 4 doubles each
int ewgpuJsCreateCommandEncoder();
int ewgpuJsBeginComputePass(int encoder, int query_set, int begin_index, int end_index);
void ewgpuJsSetPipeline(int pass, int pipeline);
void ewgpuJsSetBindGroup(int pass, int index, int group);
void ewgpuJsDispatch(int pass, int x, int y, int z);
void ewgpuJsEndPass(int pass);
void ewgpuJsCopyBufferToBuffer(int encoder, int src, double src_offset, int dst, double dst_offset, double size);
void ewgpuJsClearBuffer(int encoder, int buffer, double offset, double size);
void ewgpuJsResolveQuerySet(int encoder, int set, int first, int count, int dst, double dst_offset);
int ewgpuJsFinish(int encoder);
void ewgpuJsSubmit(const int32_t* buffers, int count);
int ewgpuJsCreateQuerySet(int count);
void ewgpuJsQuerySetDestroy(int set);
}

namespace {

// The only instance, adapter, device and queue: fixed handle values (the JS side has one device).
WGPUInstance const kInstance = reinterpret_cast<WGPUInstance>(uintptr_t{1});
WGPUAdapter const kAdapter = reinterpret_cast<WGPUAdapter>(uintptr_t{2});
WGPUDevice const kDevice = reinterpret_cast<WGPUDevice>(uintptr_t{3});
WGPUQueue const kQueue = reinterpret_cast<WGPUQueue>(uintptr_t{4});

template <class T>
int h(T p) { return static_cast<int>(reinterpret_cast<uintptr_t>(p)); }
template <class T>
T toHandle(int id) { return reinterpret_cast<T>(static_cast<uintptr_t>(id)); }

std::string str(WGPUStringView s) {
  if (!s.data) return {};
  if (s.length == WGPU_STRLEN) return std::string(s.data);
  return std::string(s.data, s.length);
}
WGPUStringView own(const std::string& s) {  // a malloc'd copy (freed by the *FreeMembers functions)
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(p, s.c_str(), s.size() + 1);
  return WGPUStringView{p, s.size()};
}

nlohmann::json jsJson(const std::function<int(char*, int)>& fn) {
  std::vector<char> buf(8192);
  int n = fn(buf.data(), (int)buf.size());
  if (n <= 0 || n >= (int)buf.size()) return nlohmann::json::object();
  auto j = nlohmann::json::parse(std::string(buf.data(), (size_t)n), nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

// Futures: completed by JS (ewgpu_web_future_done) or at once; a completed future's callback runs once, from
// wgpuInstanceWaitAny (WaitAnyOnly) or wgpuInstanceProcessEvents (AllowProcessEvents), or at completion
// (AllowSpontaneous).
struct Future {
  WGPUCallbackMode mode = WGPUCallbackMode_AllowProcessEvents;
  bool done = false;
  std::function<void(int status, const std::string& message)> fire;
  int status = 0;
  std::string message;
};
std::map<uint64_t, Future> g_futures;
uint64_t g_next_future = 1;

WGPUFuture newFuture(WGPUCallbackMode mode, std::function<void(int, const std::string&)> fire) {
  uint64_t id = g_next_future++;
  Future& f = g_futures[id];
  f.mode = mode;
  f.fire = std::move(fire);
  return WGPUFuture{id};
}

void fireFuture(uint64_t id) {
  auto it = g_futures.find(id);
  if (it == g_futures.end()) return;
  Future f = std::move(it->second);
  g_futures.erase(it);
  if (f.fire) f.fire(f.status, f.message);
}

void completeFuture(uint64_t id, int status, std::string message) {
  auto it = g_futures.find(id);
  if (it == g_futures.end()) return;
  it->second.done = true;
  it->second.status = status;
  it->second.message = std::move(message);
  if (it->second.mode == WGPUCallbackMode_AllowSpontaneous) fireFuture(id);
}

// Mapped readback copies in the wasm heap, by buffer handle.
struct Mapping {
  uint8_t* data = nullptr;
  size_t offset = 0, size = 0;
};
std::map<int, Mapping> g_mapped;
std::map<int, uint64_t> g_buffer_sizes;

// The device's callbacks, from the device descriptor.
WGPUDeviceLostCallbackInfo g_lost{};
WGPUUncapturedErrorCallbackInfo g_uncaptured{};
bool g_device_alive = false;

const char* featureName(WGPUFeatureName f) {
  switch (f) {
    case WGPUFeatureName_ShaderF16: return "shader-f16";
    case WGPUFeatureName_Subgroups: return "subgroups";
    // Not requested in the browser (the profiling Timer is native-only): reported absent.
    case WGPUFeatureName_TimestampQuery: return nullptr;
    default: return nullptr;
  }
}

void fillLimits(const nlohmann::json& j, WGPULimits* l) {
  auto u32 = [&](const char* k, uint32_t& v) { if (j.contains(k) && j[k].is_number()) v = j[k].get<uint32_t>(); };
  auto u64 = [&](const char* k, uint64_t& v) { if (j.contains(k) && j[k].is_number()) v = j[k].get<uint64_t>(); };
  u32("maxTextureDimension1D", l->maxTextureDimension1D);
  u32("maxTextureDimension2D", l->maxTextureDimension2D);
  u32("maxTextureDimension3D", l->maxTextureDimension3D);
  u32("maxTextureArrayLayers", l->maxTextureArrayLayers);
  u32("maxBindGroups", l->maxBindGroups);
  u32("maxBindGroupsPlusVertexBuffers", l->maxBindGroupsPlusVertexBuffers);
  u32("maxBindingsPerBindGroup", l->maxBindingsPerBindGroup);
  u32("maxDynamicUniformBuffersPerPipelineLayout", l->maxDynamicUniformBuffersPerPipelineLayout);
  u32("maxDynamicStorageBuffersPerPipelineLayout", l->maxDynamicStorageBuffersPerPipelineLayout);
  u32("maxSampledTexturesPerShaderStage", l->maxSampledTexturesPerShaderStage);
  u32("maxSamplersPerShaderStage", l->maxSamplersPerShaderStage);
  u32("maxStorageBuffersPerShaderStage", l->maxStorageBuffersPerShaderStage);
  u32("maxStorageTexturesPerShaderStage", l->maxStorageTexturesPerShaderStage);
  u32("maxUniformBuffersPerShaderStage", l->maxUniformBuffersPerShaderStage);
  u64("maxUniformBufferBindingSize", l->maxUniformBufferBindingSize);
  u64("maxStorageBufferBindingSize", l->maxStorageBufferBindingSize);
  u32("minUniformBufferOffsetAlignment", l->minUniformBufferOffsetAlignment);
  u32("minStorageBufferOffsetAlignment", l->minStorageBufferOffsetAlignment);
  u32("maxVertexBuffers", l->maxVertexBuffers);
  u64("maxBufferSize", l->maxBufferSize);
  u32("maxVertexAttributes", l->maxVertexAttributes);
  u32("maxVertexBufferArrayStride", l->maxVertexBufferArrayStride);
  u32("maxInterStageShaderVariables", l->maxInterStageShaderVariables);
  u32("maxColorAttachments", l->maxColorAttachments);
  u32("maxColorAttachmentBytesPerSample", l->maxColorAttachmentBytesPerSample);
  u32("maxComputeWorkgroupStorageSize", l->maxComputeWorkgroupStorageSize);
  u32("maxComputeInvocationsPerWorkgroup", l->maxComputeInvocationsPerWorkgroup);
  u32("maxComputeWorkgroupSizeX", l->maxComputeWorkgroupSizeX);
  u32("maxComputeWorkgroupSizeY", l->maxComputeWorkgroupSizeY);
  u32("maxComputeWorkgroupSizeZ", l->maxComputeWorkgroupSizeZ);
  u32("maxComputeWorkgroupsPerDimension", l->maxComputeWorkgroupsPerDimension);
  l->maxImmediateSize = 0;
}

std::string label(WGPUStringView s) { return str(s); }

}  // namespace

// Called by the JS library.
extern "C" {

__attribute__((used)) void ewgpu_web_future_done(double id, int status, const char* message) {
  completeFuture(static_cast<uint64_t>(id), status, message ? message : "");
}

// kind 0: device lost (code: 1 unknown, 2 destroyed); kind 1: an error (code: WGPUErrorType).
__attribute__((used)) void ewgpu_web_device_event(int kind, int code, const char* message) {
  WGPUStringView msg{message ? message : "", message ? std::strlen(message) : 0};
  WGPUDevice d = kDevice;
  if (kind == 0) {
    g_device_alive = false;
    if (g_lost.callback) g_lost.callback(&d, static_cast<WGPUDeviceLostReason>(code), msg, g_lost.userdata1, g_lost.userdata2);
    g_lost.callback = nullptr;
  } else if (g_uncaptured.callback) {
    g_uncaptured.callback(&d, static_cast<WGPUErrorType>(code), msg, g_uncaptured.userdata1, g_uncaptured.userdata2);
  }
}

WGPUInstance wgpuCreateInstance(const WGPUInstanceDescriptor*) { return kInstance; }
WGPUStatus wgpuGetInstanceCapabilities(WGPUInstanceCapabilities* c) {
  c->timedWaitAnyEnable = 0;
  c->timedWaitAnyMaxCount = 0;
  return WGPUStatus_Success;
}

WGPUFuture wgpuInstanceRequestAdapter(WGPUInstance, const WGPURequestAdapterOptions*, WGPURequestAdapterCallbackInfo cb) {
  const bool ok = ewgpuJsReady() != 0;
  WGPUFuture f = newFuture(cb.mode, [cb, ok](int, const std::string&) {
    const char* m = ok ? "" : "navigator.gpu gave no adapter (WebGPU disabled or unsupported)";
    cb.callback(ok ? WGPURequestAdapterStatus_Success : WGPURequestAdapterStatus_Unavailable, ok ? kAdapter : nullptr,
                WGPUStringView{m, std::strlen(m)}, cb.userdata1, cb.userdata2);
  });
  completeFuture(f.id, 0, "");
  return f;
}

void wgpuInstanceProcessEvents(WGPUInstance) {
  std::vector<uint64_t> ready;
  for (const auto& [id, f] : g_futures)
    if (f.done && f.mode != WGPUCallbackMode_WaitAnyOnly) ready.push_back(id);
  for (uint64_t id : ready) fireFuture(id);
}

WGPUWaitStatus wgpuInstanceWaitAny(WGPUInstance, size_t count, WGPUFutureWaitInfo* futures, uint64_t) {
  bool any = false;
  for (size_t i = 0; i < count; ++i) {
    auto it = g_futures.find(futures[i].future.id);
    if (it == g_futures.end()) {  // already fired
      futures[i].completed = 1;
      any = true;
    } else if (it->second.done) {
      fireFuture(futures[i].future.id);
      futures[i].completed = 1;
      any = true;
    }
  }
  return any ? WGPUWaitStatus_Success : WGPUWaitStatus_TimedOut;  // never blocks: the browser cannot
}

void wgpuInstanceRelease(WGPUInstance) {}
WGPUBool wgpuInstanceHasWGSLLanguageFeature(WGPUInstance, uint32_t feature) {
  if (feature == 2) return ewgpuJsHasWgslFeature("packed_4x8_integer_dot_product");
  return 0;
}

WGPUStatus wgpuAdapterGetInfo(WGPUAdapter, WGPUAdapterInfo* info) {
  nlohmann::json j = jsJson([](char* b, int n) { return ewgpuJsAdapterInfo(b, n); });
  auto s = [&](const char* k) { return j.value(k, std::string()); };
  info->vendor = own(s("vendor"));
  info->architecture = own(s("architecture"));
  info->device = own(s("device"));
  info->description = own(s("description"));
  info->backendType = WGPUBackendType_WebGPU;
  info->adapterType = s("architecture") == "swiftshader" || j.value("isFallbackAdapter", false)
                          ? WGPUAdapterType_CPU : WGPUAdapterType_Unknown;
  info->vendorID = 0;
  info->deviceID = 0;
  info->subgroupMinSize = j.value("subgroupMinSize", 0u);
  info->subgroupMaxSize = j.value("subgroupMaxSize", 0u);
  return WGPUStatus_Success;
}

void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo v) {
  std::free(const_cast<char*>(v.vendor.data));
  std::free(const_cast<char*>(v.architecture.data));
  std::free(const_cast<char*>(v.device.data));
  std::free(const_cast<char*>(v.description.data));
}
void wgpuAdapterPropertiesMemoryHeapsFreeMembers(WGPUAdapterPropertiesMemoryHeaps) {}
void wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(WGPUAdapterPropertiesSubgroupMatrixConfigs) {}  // never offered here
void wgpuSupportedFeaturesFreeMembers(WGPUSupportedFeatures) {}
void wgpuAdapterGetFeatures(WGPUAdapter, WGPUSupportedFeatures* f) { f->featureCount = 0; f->features = nullptr; }

WGPUStatus wgpuAdapterGetLimits(WGPUAdapter, WGPULimits* l) {
  fillLimits(jsJson([](char* b, int n) { return ewgpuJsLimits(0, b, n); }), l);
  return WGPUStatus_Success;
}
WGPUStatus wgpuDeviceGetLimits(WGPUDevice, WGPULimits* l) {
  fillLimits(jsJson([](char* b, int n) { return ewgpuJsLimits(1, b, n); }), l);
  return WGPUStatus_Success;
}
WGPUBool wgpuAdapterHasFeature(WGPUAdapter, WGPUFeatureName f) {
  const char* n = featureName(f);
  return n ? ewgpuJsHasFeature(0, n) : 0;
}
WGPUBool wgpuDeviceHasFeature(WGPUDevice, WGPUFeatureName f) {
  const char* n = featureName(f);
  return n ? ewgpuJsHasFeature(1, n) : 0;
}

// The worker already holds the device (requested with the adapter's limits and the features it has); the
// descriptor's callbacks are kept for device loss and uncaptured errors.
WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter, const WGPUDeviceDescriptor* d, WGPURequestDeviceCallbackInfo cb) {
  const bool ok = ewgpuJsReady() != 0;
  if (ok && d) {
    g_lost = d->deviceLostCallbackInfo;
    g_uncaptured = d->uncapturedErrorCallbackInfo;
    g_device_alive = true;
  }
  WGPUFuture f = newFuture(cb.mode, [cb, ok](int, const std::string&) {
    const char* m = ok ? "" : "no GPUDevice";
    cb.callback(ok ? WGPURequestDeviceStatus_Success : WGPURequestDeviceStatus_Error, ok ? kDevice : nullptr,
                WGPUStringView{m, std::strlen(m)}, cb.userdata1, cb.userdata2);
  });
  completeFuture(f.id, 0, "");
  return f;
}
void wgpuAdapterRelease(WGPUAdapter) {}

WGPUQueue wgpuDeviceGetQueue(WGPUDevice) { return kQueue; }
void wgpuQueueRelease(WGPUQueue) {}
void wgpuDeviceDestroy(WGPUDevice) {
  if (!g_device_alive) return;
  ewgpuJsDeviceDestroy();  // the lost promise resolves later with reason "destroyed": report it now, as Dawn does
  WGPUDevice d = kDevice;
  if (g_lost.callback) {
    const char* m = "Device was destroyed.";
    g_lost.callback(&d, WGPUDeviceLostReason_Destroyed, WGPUStringView{m, std::strlen(m)}, g_lost.userdata1,
                    g_lost.userdata2);
  }
  g_lost.callback = nullptr;
  g_uncaptured.callback = nullptr;
  g_device_alive = false;
}
void wgpuDeviceForceLoss(WGPUDevice, WGPUDeviceLostReason, WGPUStringView) {}
void wgpuDeviceRelease(WGPUDevice) {}

void wgpuDevicePushErrorScope(WGPUDevice, WGPUErrorFilter filter) { ewgpuJsPushErrorScope((int)filter); }
WGPUFuture wgpuDevicePopErrorScope(WGPUDevice, WGPUPopErrorScopeCallbackInfo cb) {
  ewgpuJsPopErrorScope();  // an error it caught comes back through the uncaptured-error callback
  WGPUFuture f = newFuture(cb.mode, [cb](int, const std::string&) {
    cb.callback(WGPUPopErrorScopeStatus_Success, WGPUErrorType_NoError, WGPUStringView{"", 0}, cb.userdata1, cb.userdata2);
  });
  completeFuture(f.id, 0, "");
  return f;
}

WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice, const WGPUBufferDescriptor* d) {
  int id = ewgpuJsCreateBuffer((double)d->size, (int)d->usage, label(d->label).c_str());
  if (id) g_buffer_sizes[id] = d->size;
  return toHandle<WGPUBuffer>(id);
}
void wgpuBufferDestroy(WGPUBuffer b) { ewgpuJsBufferDestroy(h(b)); }
void wgpuBufferRelease(WGPUBuffer b) {
  auto it = g_mapped.find(h(b));
  if (it != g_mapped.end()) {
    std::free(it->second.data);
    g_mapped.erase(it);
  }
  g_buffer_sizes.erase(h(b));
  ewgpuJsRelease(h(b));
}
uint64_t wgpuBufferGetSize(WGPUBuffer b) {
  auto it = g_buffer_sizes.find(h(b));
  return it == g_buffer_sizes.end() ? 0 : it->second;
}
void wgpuQueueWriteBuffer(WGPUQueue, WGPUBuffer b, uint64_t offset, const void* data, size_t size) {
  ewgpuJsWriteBuffer(h(b), (double)offset, data, (double)size);
}

WGPUFuture wgpuBufferMapAsync(WGPUBuffer b, WGPUMapMode, size_t offset, size_t size, WGPUBufferMapCallbackInfo cb) {
  const int id = h(b);
  if (size == WGPU_WHOLE_MAP_SIZE) size = (size_t)(wgpuBufferGetSize(b) - offset);
  Mapping& m = g_mapped[id];
  std::free(m.data);
  m.data = static_cast<uint8_t*>(std::malloc(size ? size : 1));
  m.offset = offset;
  m.size = size;
  WGPUFuture f = newFuture(cb.mode, [cb](int status, const std::string& message) {
    cb.callback(static_cast<WGPUMapAsyncStatus>(status), WGPUStringView{message.data(), message.size()}, cb.userdata1,
                cb.userdata2);
  });
  ewgpuJsMapRead(id, (double)offset, (double)size, (int)f.id, m.data);
  return f;
}
const void* wgpuBufferGetConstMappedRange(WGPUBuffer b, size_t offset, size_t size) {
  auto it = g_mapped.find(h(b));
  if (it == g_mapped.end() || offset < it->second.offset) return nullptr;
  return it->second.data + (offset - it->second.offset);
}
void* wgpuBufferGetMappedRange(WGPUBuffer b, size_t offset, size_t size) {
  return const_cast<void*>(wgpuBufferGetConstMappedRange(b, offset, size));
}
void wgpuBufferUnmap(WGPUBuffer b) {  // the GPU buffer was unmapped when its bytes were copied
  auto it = g_mapped.find(h(b));
  if (it == g_mapped.end()) return;
  std::free(it->second.data);
  g_mapped.erase(it);
}

WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice, const WGPUShaderModuleDescriptor* d) {
  const auto* src = reinterpret_cast<const WGPUShaderSourceWGSL*>(d->nextInChain);
  if (!src || src->chain.sType != WGPUSType_ShaderSourceWGSL) return nullptr;
  return toHandle<WGPUShaderModule>(ewgpuJsCreateShaderModule(str(src->code).c_str(), label(d->label).c_str()));
}
void wgpuShaderModuleRelease(WGPUShaderModule m) { ewgpuJsRelease(h(m)); }

WGPUBindGroupLayout wgpuDeviceCreateBindGroupLayout(WGPUDevice, const WGPUBindGroupLayoutDescriptor* d) {
  std::vector<int32_t> e;
  for (size_t i = 0; i < d->entryCount; ++i) {
    e.push_back((int32_t)d->entries[i].binding);
    e.push_back((int32_t)d->entries[i].buffer.type);
  }
  return toHandle<WGPUBindGroupLayout>(ewgpuJsCreateBindGroupLayout(e.data(), (int)d->entryCount, label(d->label).c_str()));
}
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout l) { ewgpuJsRelease(h(l)); }

WGPUPipelineLayout wgpuDeviceCreatePipelineLayout(WGPUDevice, const WGPUPipelineLayoutDescriptor* d) {
  std::vector<int32_t> ls;
  for (size_t i = 0; i < d->bindGroupLayoutCount; ++i) ls.push_back(h(d->bindGroupLayouts[i]));
  return toHandle<WGPUPipelineLayout>(ewgpuJsCreatePipelineLayout(ls.data(), (int)ls.size()));
}
void wgpuPipelineLayoutRelease(WGPUPipelineLayout l) { ewgpuJsRelease(h(l)); }

namespace {
int createPipeline(const WGPUComputePipelineDescriptor* d) {
  nlohmann::json c = nlohmann::json::object();
  for (size_t i = 0; i < d->compute.constantCount; ++i) c[str(d->compute.constants[i].key)] = d->compute.constants[i].value;
  const std::string entry = str(d->compute.entryPoint);
  return ewgpuJsCreateComputePipeline(h(d->layout), h(d->compute.module), entry.c_str(), c.dump().c_str(),
                                      label(d->label).c_str());
}
}  // namespace

WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice, const WGPUComputePipelineDescriptor* d) {
  return toHandle<WGPUComputePipeline>(createPipeline(d));
}
// Created synchronously (the browser compiles it off the calling thread anyway); the future completes at once.
WGPUFuture wgpuDeviceCreateComputePipelineAsync(WGPUDevice, const WGPUComputePipelineDescriptor* d,
                                                WGPUCreateComputePipelineAsyncCallbackInfo cb) {
  WGPUComputePipeline p = toHandle<WGPUComputePipeline>(createPipeline(d));
  WGPUFuture f = newFuture(cb.mode, [cb, p](int, const std::string&) {
    cb.callback(p ? WGPUCreatePipelineAsyncStatus_Success : WGPUCreatePipelineAsyncStatus_InternalError, p,
                WGPUStringView{"", 0}, cb.userdata1, cb.userdata2);
  });
  completeFuture(f.id, 0, "");
  return f;
}
void wgpuComputePipelineRelease(WGPUComputePipeline p) { ewgpuJsRelease(h(p)); }

WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice, const WGPUBindGroupDescriptor* d) {
  std::vector<double> e;
  for (size_t i = 0; i < d->entryCount; ++i) {
    const WGPUBindGroupEntry& x = d->entries[i];
    e.push_back(x.binding);
    e.push_back(h(x.buffer));
    e.push_back((double)x.offset);
    e.push_back(x.size == WGPU_WHOLE_SIZE ? -1.0 : (double)x.size);
  }
  return toHandle<WGPUBindGroup>(ewgpuJsCreateBindGroup(h(d->layout), e.data(), (int)d->entryCount, label(d->label).c_str()));
}
void wgpuBindGroupRelease(WGPUBindGroup g) { ewgpuJsRelease(h(g)); }

WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice, const WGPUCommandEncoderDescriptor*) {
  return toHandle<WGPUCommandEncoder>(ewgpuJsCreateCommandEncoder());
}
WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder e, const WGPUComputePassDescriptor* d) {
  const WGPUPassTimestampWrites* t = d ? d->timestampWrites : nullptr;
  return toHandle<WGPUComputePassEncoder>(ewgpuJsBeginComputePass(
      h(e), t ? h(t->querySet) : 0, t ? (int)t->beginningOfPassWriteIndex : -1, t ? (int)t->endOfPassWriteIndex : -1));
}
void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder p, WGPUComputePipeline pl) { ewgpuJsSetPipeline(h(p), h(pl)); }
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder p, uint32_t index, WGPUBindGroup g, size_t, const uint32_t*) {
  ewgpuJsSetBindGroup(h(p), (int)index, h(g));
}
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder p, uint32_t x, uint32_t y, uint32_t z) {
  ewgpuJsDispatch(h(p), (int)x, (int)y, (int)z);
}
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder p) { ewgpuJsEndPass(h(p)); }
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder p) { ewgpuJsRelease(h(p)); }
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder e, WGPUBuffer src, uint64_t so, WGPUBuffer dst, uint64_t dof,
                                          uint64_t size) {
  ewgpuJsCopyBufferToBuffer(h(e), h(src), (double)so, h(dst), (double)dof, (double)size);
}
void wgpuCommandEncoderClearBuffer(WGPUCommandEncoder e, WGPUBuffer b, uint64_t offset, uint64_t size) {
  ewgpuJsClearBuffer(h(e), h(b), (double)offset, size == WGPU_WHOLE_SIZE ? -1.0 : (double)size);
}
void wgpuCommandEncoderResolveQuerySet(WGPUCommandEncoder e, WGPUQuerySet s, uint32_t first, uint32_t count, WGPUBuffer dst,
                                       uint64_t dst_offset) {
  ewgpuJsResolveQuerySet(h(e), h(s), (int)first, (int)count, h(dst), (double)dst_offset);
}
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder e, const WGPUCommandBufferDescriptor*) {
  return toHandle<WGPUCommandBuffer>(ewgpuJsFinish(h(e)));
}
void wgpuCommandEncoderRelease(WGPUCommandEncoder e) { ewgpuJsRelease(h(e)); }
void wgpuCommandBufferRelease(WGPUCommandBuffer b) { ewgpuJsRelease(h(b)); }
void wgpuQueueSubmit(WGPUQueue, size_t count, const WGPUCommandBuffer* bufs) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < count; ++i) ids.push_back(h(bufs[i]));
  ewgpuJsSubmit(ids.data(), (int)ids.size());
}
WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue, WGPUQueueWorkDoneCallbackInfo cb) {
  WGPUFuture f = newFuture(cb.mode, [cb](int, const std::string&) {
    cb.callback(WGPUQueueWorkDoneStatus_Success, WGPUStringView{"", 0}, cb.userdata1, cb.userdata2);
  });
  completeFuture(f.id, 0, "");  // ordering is the queue's; errors come through the uncaptured-error callback
  return f;
}

WGPUQuerySet wgpuDeviceCreateQuerySet(WGPUDevice, const WGPUQuerySetDescriptor* d) {
  return toHandle<WGPUQuerySet>(ewgpuJsCreateQuerySet((int)d->count));
}
void wgpuQuerySetDestroy(WGPUQuerySet s) { ewgpuJsQuerySetDestroy(h(s)); }
void wgpuQuerySetRelease(WGPUQuerySet s) { ewgpuJsRelease(h(s)); }

WGPUBindGroupLayout wgpuComputePipelineGetBindGroupLayout(WGPUComputePipeline, uint32_t) { return nullptr; }

}  // extern "C"
