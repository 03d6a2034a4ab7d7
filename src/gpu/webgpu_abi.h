// The project's own declarations of the webgpu.h subset the engine uses, matching the ABI of the prebuilt Dawn
// we link (npm bun-webgpu-linux-x64@0.1.7, Dawn of 2025-06-11/12; ../shared/docs/dawn-abi.md). The package ships
// no header. Differences from today's upstream webgpu.h that matter here (dawn-abi.md §0, §10):
//   - old WGPUFeatureName numbering (TimestampQuery 0x03, ShaderF16 0x0A, Subgroups 0x11),
//   - old WGPUInstanceDescriptor {nextInChain; WGPUInstanceCapabilities capabilities},
//   - Dawn sTypes 0x0005xxxx (DawnCacheDeviceDescriptor 0x50007, DawnTogglesDescriptor 0x5000A,
//     AdapterPropertiesMemoryHeaps 0x50013).
// tests/gpu/abi_test.cpp pins sizes, offsets and values against the binary so a version bump fails loudly.
// With -DEWGPU_SYSTEM_DAWN=ON the official <webgpu/webgpu.h> of a user's Dawn is used instead (same code).
#pragma once

#ifdef EWGPU_SYSTEM_DAWN
#include <webgpu/webgpu.h>
#define EWGPU_OLD_INSTANCE_DESCRIPTOR 0
#else
#define EWGPU_OLD_INSTANCE_DESCRIPTOR 1

#include <stddef.h>
#include <stdint.h>

extern "C" {

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef WGPUFlags WGPUBufferUsage;
typedef WGPUFlags WGPUMapMode;
typedef WGPUFlags WGPUShaderStage;
typedef WGPUFlags WGPUHeapProperty;

typedef struct WGPUInstanceImpl* WGPUInstance;
typedef struct WGPUAdapterImpl* WGPUAdapter;
typedef struct WGPUDeviceImpl* WGPUDevice;
typedef struct WGPUQueueImpl* WGPUQueue;
typedef struct WGPUBufferImpl* WGPUBuffer;
typedef struct WGPUShaderModuleImpl* WGPUShaderModule;
typedef struct WGPUComputePipelineImpl* WGPUComputePipeline;
typedef struct WGPUBindGroupLayoutImpl* WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl* WGPUBindGroup;
typedef struct WGPUPipelineLayoutImpl* WGPUPipelineLayout;
typedef struct WGPUCommandEncoderImpl* WGPUCommandEncoder;
typedef struct WGPUCommandBufferImpl* WGPUCommandBuffer;
typedef struct WGPUComputePassEncoderImpl* WGPUComputePassEncoder;
typedef struct WGPUQuerySetImpl* WGPUQuerySet;
typedef struct WGPUSurfaceImpl* WGPUSurface;
typedef struct WGPUSamplerImpl* WGPUSampler;
typedef struct WGPUTextureViewImpl* WGPUTextureView;

#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX
#define WGPU_WHOLE_MAP_SIZE SIZE_MAX
#define WGPU_LIMIT_U32_UNDEFINED UINT32_MAX
#define WGPU_LIMIT_U64_UNDEFINED UINT64_MAX
#define WGPU_QUERY_SET_INDEX_UNDEFINED UINT32_MAX

typedef enum WGPUAdapterType { WGPUAdapterType_DiscreteGPU = 1, WGPUAdapterType_IntegratedGPU = 2, WGPUAdapterType_CPU = 3, WGPUAdapterType_Unknown = 4, WGPUAdapterType_Force32 = 0x7FFFFFFF } WGPUAdapterType;
typedef enum WGPUBackendType { WGPUBackendType_Undefined = 0, WGPUBackendType_Null = 1, WGPUBackendType_WebGPU = 2, WGPUBackendType_D3D11 = 3, WGPUBackendType_D3D12 = 4, WGPUBackendType_Metal = 5, WGPUBackendType_Vulkan = 6, WGPUBackendType_OpenGL = 7, WGPUBackendType_OpenGLES = 8, WGPUBackendType_Force32 = 0x7FFFFFFF } WGPUBackendType;
typedef enum WGPUBufferBindingType { WGPUBufferBindingType_BindingNotUsed = 0, WGPUBufferBindingType_Undefined = 1, WGPUBufferBindingType_Uniform = 2, WGPUBufferBindingType_Storage = 3, WGPUBufferBindingType_ReadOnlyStorage = 4, WGPUBufferBindingType_Force32 = 0x7FFFFFFF } WGPUBufferBindingType;
typedef enum WGPUCallbackMode { WGPUCallbackMode_WaitAnyOnly = 1, WGPUCallbackMode_AllowProcessEvents = 2, WGPUCallbackMode_AllowSpontaneous = 3, WGPUCallbackMode_Force32 = 0x7FFFFFFF } WGPUCallbackMode;
typedef enum WGPUCompilationInfoRequestStatus { WGPUCompilationInfoRequestStatus_Success = 1, WGPUCompilationInfoRequestStatus_CallbackCancelled = 2, WGPUCompilationInfoRequestStatus_Force32 = 0x7FFFFFFF } WGPUCompilationInfoRequestStatus;
typedef enum WGPUCompilationMessageType { WGPUCompilationMessageType_Error = 1, WGPUCompilationMessageType_Warning = 2, WGPUCompilationMessageType_Info = 3, WGPUCompilationMessageType_Force32 = 0x7FFFFFFF } WGPUCompilationMessageType;
typedef enum WGPUDeviceLostReason { WGPUDeviceLostReason_Unknown = 1, WGPUDeviceLostReason_Destroyed = 2, WGPUDeviceLostReason_CallbackCancelled = 3, WGPUDeviceLostReason_FailedCreation = 4, WGPUDeviceLostReason_Force32 = 0x7FFFFFFF } WGPUDeviceLostReason;
typedef enum WGPUErrorFilter { WGPUErrorFilter_Validation = 1, WGPUErrorFilter_OutOfMemory = 2, WGPUErrorFilter_Internal = 3, WGPUErrorFilter_Force32 = 0x7FFFFFFF } WGPUErrorFilter;
typedef enum WGPUErrorType { WGPUErrorType_NoError = 1, WGPUErrorType_Validation = 2, WGPUErrorType_OutOfMemory = 3, WGPUErrorType_Internal = 4, WGPUErrorType_Unknown = 5, WGPUErrorType_Force32 = 0x7FFFFFFF } WGPUErrorType;
typedef enum WGPUFeatureLevel { WGPUFeatureLevel_Undefined = 0, WGPUFeatureLevel_Compatibility = 1, WGPUFeatureLevel_Core = 2, WGPUFeatureLevel_Force32 = 0x7FFFFFFF } WGPUFeatureLevel;
// Old numbering of this Dawn build (dawn-abi.md §4.1): NOT the values of today's upstream header.
typedef enum WGPUFeatureName {
  WGPUFeatureName_TimestampQuery = 0x00000003,
  WGPUFeatureName_ShaderF16 = 0x0000000A,
  WGPUFeatureName_Subgroups = 0x00000011,
  WGPUFeatureName_CoreFeaturesAndLimits = 0x00000012,
  WGPUFeatureName_ChromiumExperimentalTimestampQueryInsidePasses = 0x00050003,
  WGPUFeatureName_AdapterPropertiesMemoryHeaps = 0x00050015,
  WGPUFeatureName_ChromiumExperimentalSubgroupMatrix = 0x00050037,
  WGPUFeatureName_Force32 = 0x7FFFFFFF
} WGPUFeatureName;
typedef enum WGPUCreatePipelineAsyncStatus { WGPUCreatePipelineAsyncStatus_Success = 1, WGPUCreatePipelineAsyncStatus_CallbackCancelled = 2, WGPUCreatePipelineAsyncStatus_ValidationError = 3, WGPUCreatePipelineAsyncStatus_InternalError = 4, WGPUCreatePipelineAsyncStatus_Force32 = 0x7FFFFFFF } WGPUCreatePipelineAsyncStatus;
typedef enum WGPUMapAsyncStatus { WGPUMapAsyncStatus_Success = 1, WGPUMapAsyncStatus_CallbackCancelled = 2, WGPUMapAsyncStatus_Error = 3, WGPUMapAsyncStatus_Aborted = 4, WGPUMapAsyncStatus_Force32 = 0x7FFFFFFF } WGPUMapAsyncStatus;
typedef enum WGPUPopErrorScopeStatus { WGPUPopErrorScopeStatus_Success = 1, WGPUPopErrorScopeStatus_CallbackCancelled = 2, WGPUPopErrorScopeStatus_Error = 3, WGPUPopErrorScopeStatus_Force32 = 0x7FFFFFFF } WGPUPopErrorScopeStatus;
typedef enum WGPUPowerPreference { WGPUPowerPreference_Undefined = 0, WGPUPowerPreference_LowPower = 1, WGPUPowerPreference_HighPerformance = 2, WGPUPowerPreference_Force32 = 0x7FFFFFFF } WGPUPowerPreference;
typedef enum WGPUQueryType { WGPUQueryType_Occlusion = 1, WGPUQueryType_Timestamp = 2, WGPUQueryType_Force32 = 0x7FFFFFFF } WGPUQueryType;
typedef enum WGPUQueueWorkDoneStatus { WGPUQueueWorkDoneStatus_Success = 1, WGPUQueueWorkDoneStatus_CallbackCancelled = 2, WGPUQueueWorkDoneStatus_Error = 3, WGPUQueueWorkDoneStatus_Force32 = 0x7FFFFFFF } WGPUQueueWorkDoneStatus;
typedef enum WGPURequestAdapterStatus { WGPURequestAdapterStatus_Success = 1, WGPURequestAdapterStatus_CallbackCancelled = 2, WGPURequestAdapterStatus_Unavailable = 3, WGPURequestAdapterStatus_Error = 4, WGPURequestAdapterStatus_Force32 = 0x7FFFFFFF } WGPURequestAdapterStatus;
typedef enum WGPURequestDeviceStatus { WGPURequestDeviceStatus_Success = 1, WGPURequestDeviceStatus_CallbackCancelled = 2, WGPURequestDeviceStatus_Error = 3, WGPURequestDeviceStatus_Force32 = 0x7FFFFFFF } WGPURequestDeviceStatus;
typedef enum WGPUStatus { WGPUStatus_Success = 1, WGPUStatus_Error = 2, WGPUStatus_Force32 = 0x7FFFFFFF } WGPUStatus;
typedef enum WGPUWaitStatus { WGPUWaitStatus_Success = 1, WGPUWaitStatus_TimedOut = 2, WGPUWaitStatus_Error = 3, WGPUWaitStatus_Force32 = 0x7FFFFFFF } WGPUWaitStatus;
typedef enum WGPUSamplerBindingType { WGPUSamplerBindingType_BindingNotUsed = 0, WGPUSamplerBindingType_Force32 = 0x7FFFFFFF } WGPUSamplerBindingType;
typedef enum WGPUTextureSampleType { WGPUTextureSampleType_BindingNotUsed = 0, WGPUTextureSampleType_Force32 = 0x7FFFFFFF } WGPUTextureSampleType;
typedef enum WGPUTextureViewDimension { WGPUTextureViewDimension_Undefined = 0, WGPUTextureViewDimension_Force32 = 0x7FFFFFFF } WGPUTextureViewDimension;
typedef enum WGPUStorageTextureAccess { WGPUStorageTextureAccess_BindingNotUsed = 0, WGPUStorageTextureAccess_Force32 = 0x7FFFFFFF } WGPUStorageTextureAccess;
typedef enum WGPUTextureFormat { WGPUTextureFormat_Undefined = 0, WGPUTextureFormat_Force32 = 0x7FFFFFFF } WGPUTextureFormat;
typedef enum WGPUSType {
  WGPUSType_ShaderSourceSPIRV = 0x00000001,
  WGPUSType_ShaderSourceWGSL = 0x00000002,
  WGPUSType_DawnCacheDeviceDescriptor = 0x00050007,
  WGPUSType_DawnTogglesDescriptor = 0x0005000A,
  WGPUSType_AdapterPropertiesMemoryHeaps = 0x00050013,
  WGPUSType_AdapterPropertiesSubgroupMatrixConfigs = 0x0005003B,
  WGPUSType_Force32 = 0x7FFFFFFF
} WGPUSType;

static const WGPUBufferUsage WGPUBufferUsage_None = 0x0;
static const WGPUBufferUsage WGPUBufferUsage_MapRead = 0x1;
static const WGPUBufferUsage WGPUBufferUsage_MapWrite = 0x2;
static const WGPUBufferUsage WGPUBufferUsage_CopySrc = 0x4;
static const WGPUBufferUsage WGPUBufferUsage_CopyDst = 0x8;
static const WGPUBufferUsage WGPUBufferUsage_Uniform = 0x40;
static const WGPUBufferUsage WGPUBufferUsage_Storage = 0x80;
static const WGPUBufferUsage WGPUBufferUsage_QueryResolve = 0x200;
static const WGPUMapMode WGPUMapMode_Read = 0x1;
static const WGPUMapMode WGPUMapMode_Write = 0x2;
static const WGPUShaderStage WGPUShaderStage_Compute = 0x4;

typedef struct WGPUStringView { const char* data; size_t length; } WGPUStringView;
typedef struct WGPUChainedStruct { struct WGPUChainedStruct* next; WGPUSType sType; } WGPUChainedStruct;
typedef struct WGPUFuture { uint64_t id; } WGPUFuture;
typedef struct WGPUFutureWaitInfo { WGPUFuture future; WGPUBool completed; } WGPUFutureWaitInfo;

typedef struct WGPUInstanceCapabilities { WGPUChainedStruct* nextInChain; WGPUBool timedWaitAnyEnable; size_t timedWaitAnyMaxCount; } WGPUInstanceCapabilities;
typedef struct WGPUInstanceDescriptor { WGPUChainedStruct* nextInChain; WGPUInstanceCapabilities capabilities; } WGPUInstanceDescriptor;
typedef struct WGPURequestAdapterOptions { WGPUChainedStruct* nextInChain; WGPUFeatureLevel featureLevel; WGPUPowerPreference powerPreference; WGPUBool forceFallbackAdapter; WGPUBackendType backendType; WGPUSurface compatibleSurface; } WGPURequestAdapterOptions;
typedef struct WGPUAdapterInfo { WGPUChainedStruct* nextInChain; WGPUStringView vendor; WGPUStringView architecture; WGPUStringView device; WGPUStringView description; WGPUBackendType backendType; WGPUAdapterType adapterType; uint32_t vendorID; uint32_t deviceID; uint32_t subgroupMinSize; uint32_t subgroupMaxSize; } WGPUAdapterInfo;
typedef struct WGPULimits {
  WGPUChainedStruct* nextInChain;
  uint32_t maxTextureDimension1D, maxTextureDimension2D, maxTextureDimension3D, maxTextureArrayLayers;
  uint32_t maxBindGroups, maxBindGroupsPlusVertexBuffers, maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout, maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage, maxSamplersPerShaderStage, maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage, maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize, maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment, maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes, maxVertexBufferArrayStride, maxInterStageShaderVariables, maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample, maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX, maxComputeWorkgroupSizeY, maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension, maxImmediateSize;
} WGPULimits;
typedef struct WGPUSupportedFeatures { size_t featureCount; const WGPUFeatureName* features; } WGPUSupportedFeatures;
typedef struct WGPUMemoryHeapInfo { WGPUHeapProperty properties; uint64_t size; } WGPUMemoryHeapInfo;
typedef struct WGPUAdapterPropertiesMemoryHeaps { WGPUChainedStruct chain; size_t heapCount; const WGPUMemoryHeapInfo* heapInfo; } WGPUAdapterPropertiesMemoryHeaps;
typedef enum WGPUSubgroupMatrixComponentType { WGPUSubgroupMatrixComponentType_F32 = 1, WGPUSubgroupMatrixComponentType_F16 = 2, WGPUSubgroupMatrixComponentType_U32 = 3, WGPUSubgroupMatrixComponentType_I32 = 4, WGPUSubgroupMatrixComponentType_Force32 = 0x7FFFFFFF } WGPUSubgroupMatrixComponentType;
typedef struct WGPUSubgroupMatrixConfig { WGPUSubgroupMatrixComponentType componentType; WGPUSubgroupMatrixComponentType resultComponentType; uint32_t M; uint32_t N; uint32_t K; } WGPUSubgroupMatrixConfig;
typedef struct WGPUAdapterPropertiesSubgroupMatrixConfigs { WGPUChainedStruct chain; size_t configCount; const WGPUSubgroupMatrixConfig* configs; } WGPUAdapterPropertiesSubgroupMatrixConfigs;
typedef struct WGPUDawnTogglesDescriptor { WGPUChainedStruct chain; size_t enabledToggleCount; const char* const* enabledToggles; size_t disabledToggleCount; const char* const* disabledToggles; } WGPUDawnTogglesDescriptor;

typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice* device, WGPUDeviceLostReason reason, WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice* device, WGPUErrorType type, WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUCreateComputePipelineAsyncCallback)(WGPUCreatePipelineAsyncStatus status, WGPUComputePipeline pipeline, WGPUStringView message, void* userdata1, void* userdata2);
// Dawn's blob cache (DawnCacheDeviceDescriptor): load returns the value's size (0: miss) and copies it when
// value is non-null and valueSize is that size; both may be called from Dawn's worker threads.
typedef size_t (*WGPUDawnLoadCacheDataFunction)(const void* key, size_t keySize, void* value, size_t valueSize, void* userdata);
typedef void (*WGPUDawnStoreCacheDataFunction)(const void* key, size_t keySize, const void* value, size_t valueSize, void* userdata);
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void* userdata1, void* userdata2);

typedef struct WGPURequestAdapterCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPURequestAdapterCallback callback; void* userdata1; void* userdata2; } WGPURequestAdapterCallbackInfo;
typedef struct WGPURequestDeviceCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPURequestDeviceCallback callback; void* userdata1; void* userdata2; } WGPURequestDeviceCallbackInfo;
typedef struct WGPUDeviceLostCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPUDeviceLostCallback callback; void* userdata1; void* userdata2; } WGPUDeviceLostCallbackInfo;
typedef struct WGPUUncapturedErrorCallbackInfo { WGPUChainedStruct* nextInChain; WGPUUncapturedErrorCallback callback; void* userdata1; void* userdata2; } WGPUUncapturedErrorCallbackInfo;
typedef struct WGPUQueueWorkDoneCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPUQueueWorkDoneCallback callback; void* userdata1; void* userdata2; } WGPUQueueWorkDoneCallbackInfo;
typedef struct WGPUBufferMapCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPUBufferMapCallback callback; void* userdata1; void* userdata2; } WGPUBufferMapCallbackInfo;
typedef struct WGPUCreateComputePipelineAsyncCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPUCreateComputePipelineAsyncCallback callback; void* userdata1; void* userdata2; } WGPUCreateComputePipelineAsyncCallbackInfo;
typedef struct WGPUDawnCacheDeviceDescriptor { WGPUChainedStruct chain; WGPUStringView isolationKey; WGPUDawnLoadCacheDataFunction loadDataFunction; WGPUDawnStoreCacheDataFunction storeDataFunction; void* functionUserdata; } WGPUDawnCacheDeviceDescriptor;
typedef struct WGPUPopErrorScopeCallbackInfo { WGPUChainedStruct* nextInChain; WGPUCallbackMode mode; WGPUPopErrorScopeCallback callback; void* userdata1; void* userdata2; } WGPUPopErrorScopeCallbackInfo;

typedef struct WGPUQueueDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUQueueDescriptor;
typedef struct WGPUDeviceDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; size_t requiredFeatureCount; const WGPUFeatureName* requiredFeatures; const WGPULimits* requiredLimits; WGPUQueueDescriptor defaultQueue; WGPUDeviceLostCallbackInfo deviceLostCallbackInfo; WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo; } WGPUDeviceDescriptor;
typedef struct WGPUBufferDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; WGPUBufferUsage usage; uint64_t size; WGPUBool mappedAtCreation; } WGPUBufferDescriptor;
typedef struct WGPUShaderModuleDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUShaderModuleDescriptor;
typedef struct WGPUShaderSourceWGSL { WGPUChainedStruct chain; WGPUStringView code; } WGPUShaderSourceWGSL;
typedef struct WGPUConstantEntry { WGPUChainedStruct* nextInChain; WGPUStringView key; double value; } WGPUConstantEntry;
typedef struct WGPUComputeState { WGPUChainedStruct* nextInChain; WGPUShaderModule module; WGPUStringView entryPoint; size_t constantCount; const WGPUConstantEntry* constants; } WGPUComputeState;
typedef struct WGPUComputePipelineDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; WGPUPipelineLayout layout; WGPUComputeState compute; } WGPUComputePipelineDescriptor;
typedef struct WGPUBufferBindingLayout { WGPUChainedStruct* nextInChain; WGPUBufferBindingType type; WGPUBool hasDynamicOffset; uint64_t minBindingSize; } WGPUBufferBindingLayout;
typedef struct WGPUSamplerBindingLayout { WGPUChainedStruct* nextInChain; WGPUSamplerBindingType type; } WGPUSamplerBindingLayout;
typedef struct WGPUTextureBindingLayout { WGPUChainedStruct* nextInChain; WGPUTextureSampleType sampleType; WGPUTextureViewDimension viewDimension; WGPUBool multisampled; } WGPUTextureBindingLayout;
typedef struct WGPUStorageTextureBindingLayout { WGPUChainedStruct* nextInChain; WGPUStorageTextureAccess access; WGPUTextureFormat format; WGPUTextureViewDimension viewDimension; } WGPUStorageTextureBindingLayout;
typedef struct WGPUBindGroupLayoutEntry { WGPUChainedStruct* nextInChain; uint32_t binding; WGPUShaderStage visibility; uint32_t bindingArraySize; WGPUBufferBindingLayout buffer; WGPUSamplerBindingLayout sampler; WGPUTextureBindingLayout texture; WGPUStorageTextureBindingLayout storageTexture; } WGPUBindGroupLayoutEntry;
typedef struct WGPUBindGroupLayoutDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; size_t entryCount; const WGPUBindGroupLayoutEntry* entries; } WGPUBindGroupLayoutDescriptor;
typedef struct WGPUBindGroupEntry { WGPUChainedStruct* nextInChain; uint32_t binding; WGPUBuffer buffer; uint64_t offset; uint64_t size; WGPUSampler sampler; WGPUTextureView textureView; } WGPUBindGroupEntry;
typedef struct WGPUBindGroupDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; WGPUBindGroupLayout layout; size_t entryCount; const WGPUBindGroupEntry* entries; } WGPUBindGroupDescriptor;
typedef struct WGPUPipelineLayoutDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; size_t bindGroupLayoutCount; const WGPUBindGroupLayout* bindGroupLayouts; uint32_t immediateSize; } WGPUPipelineLayoutDescriptor;
typedef struct WGPUCommandEncoderDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUCommandEncoderDescriptor;
typedef struct WGPUCommandBufferDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; } WGPUCommandBufferDescriptor;
typedef struct WGPUPassTimestampWrites { WGPUChainedStruct* nextInChain; WGPUQuerySet querySet; uint32_t beginningOfPassWriteIndex; uint32_t endOfPassWriteIndex; } WGPUPassTimestampWrites;
typedef struct WGPUComputePassDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; const WGPUPassTimestampWrites* timestampWrites; } WGPUComputePassDescriptor;
typedef struct WGPUQuerySetDescriptor { WGPUChainedStruct* nextInChain; WGPUStringView label; WGPUQueryType type; uint32_t count; } WGPUQuerySetDescriptor;

WGPUInstance wgpuCreateInstance(const WGPUInstanceDescriptor* descriptor);
WGPUStatus wgpuGetInstanceCapabilities(WGPUInstanceCapabilities* capabilities);
WGPUFuture wgpuInstanceRequestAdapter(WGPUInstance instance, const WGPURequestAdapterOptions* options, WGPURequestAdapterCallbackInfo callbackInfo);
void wgpuInstanceProcessEvents(WGPUInstance instance);
WGPUWaitStatus wgpuInstanceWaitAny(WGPUInstance instance, size_t futureCount, WGPUFutureWaitInfo* futures, uint64_t timeoutNS);
void wgpuInstanceRelease(WGPUInstance instance);
WGPUBool wgpuInstanceHasWGSLLanguageFeature(WGPUInstance instance, uint32_t feature);
WGPUStatus wgpuAdapterGetInfo(WGPUAdapter adapter, WGPUAdapterInfo* info);
WGPUStatus wgpuAdapterGetLimits(WGPUAdapter adapter, WGPULimits* limits);
void wgpuAdapterGetFeatures(WGPUAdapter adapter, WGPUSupportedFeatures* features);
WGPUBool wgpuAdapterHasFeature(WGPUAdapter adapter, WGPUFeatureName feature);
WGPUFuture wgpuAdapterRequestDevice(WGPUAdapter adapter, const WGPUDeviceDescriptor* options, WGPURequestDeviceCallbackInfo callbackInfo);
void wgpuAdapterRelease(WGPUAdapter adapter);
void wgpuAdapterInfoFreeMembers(WGPUAdapterInfo value);
void wgpuAdapterPropertiesMemoryHeapsFreeMembers(WGPUAdapterPropertiesMemoryHeaps value);
void wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers(WGPUAdapterPropertiesSubgroupMatrixConfigs value);
void wgpuSupportedFeaturesFreeMembers(WGPUSupportedFeatures value);
WGPUQueue wgpuDeviceGetQueue(WGPUDevice device);
WGPUStatus wgpuDeviceGetLimits(WGPUDevice device, WGPULimits* limits);
WGPUBool wgpuDeviceHasFeature(WGPUDevice device, WGPUFeatureName feature);
void wgpuDevicePushErrorScope(WGPUDevice device, WGPUErrorFilter filter);
WGPUFuture wgpuDevicePopErrorScope(WGPUDevice device, WGPUPopErrorScopeCallbackInfo callbackInfo);
void wgpuDeviceDestroy(WGPUDevice device);
void wgpuDeviceForceLoss(WGPUDevice device, WGPUDeviceLostReason type, WGPUStringView message);  // Dawn-only (tests)
void wgpuDeviceRelease(WGPUDevice device);
WGPUBuffer wgpuDeviceCreateBuffer(WGPUDevice device, const WGPUBufferDescriptor* descriptor);
WGPUShaderModule wgpuDeviceCreateShaderModule(WGPUDevice device, const WGPUShaderModuleDescriptor* descriptor);
WGPUComputePipeline wgpuDeviceCreateComputePipeline(WGPUDevice device, const WGPUComputePipelineDescriptor* descriptor);
WGPUFuture wgpuDeviceCreateComputePipelineAsync(WGPUDevice device, const WGPUComputePipelineDescriptor* descriptor, WGPUCreateComputePipelineAsyncCallbackInfo callbackInfo);
WGPUBindGroupLayout wgpuDeviceCreateBindGroupLayout(WGPUDevice device, const WGPUBindGroupLayoutDescriptor* descriptor);
WGPUBindGroup wgpuDeviceCreateBindGroup(WGPUDevice device, const WGPUBindGroupDescriptor* descriptor);
WGPUPipelineLayout wgpuDeviceCreatePipelineLayout(WGPUDevice device, const WGPUPipelineLayoutDescriptor* descriptor);
WGPUCommandEncoder wgpuDeviceCreateCommandEncoder(WGPUDevice device, const WGPUCommandEncoderDescriptor* descriptor);
WGPUQuerySet wgpuDeviceCreateQuerySet(WGPUDevice device, const WGPUQuerySetDescriptor* descriptor);
void wgpuQueueSubmit(WGPUQueue queue, size_t commandCount, const WGPUCommandBuffer* commands);
void wgpuQueueWriteBuffer(WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, const void* data, size_t size);
WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo);
void wgpuQueueRelease(WGPUQueue queue);
WGPUFuture wgpuBufferMapAsync(WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size, WGPUBufferMapCallbackInfo callbackInfo);
const void* wgpuBufferGetConstMappedRange(WGPUBuffer buffer, size_t offset, size_t size);
void* wgpuBufferGetMappedRange(WGPUBuffer buffer, size_t offset, size_t size);
void wgpuBufferUnmap(WGPUBuffer buffer);
void wgpuBufferDestroy(WGPUBuffer buffer);
uint64_t wgpuBufferGetSize(WGPUBuffer buffer);
void wgpuBufferRelease(WGPUBuffer buffer);
void wgpuShaderModuleRelease(WGPUShaderModule shaderModule);
WGPUBindGroupLayout wgpuComputePipelineGetBindGroupLayout(WGPUComputePipeline computePipeline, uint32_t groupIndex);
void wgpuComputePipelineRelease(WGPUComputePipeline computePipeline);
void wgpuBindGroupLayoutRelease(WGPUBindGroupLayout bindGroupLayout);
void wgpuBindGroupRelease(WGPUBindGroup bindGroup);
void wgpuPipelineLayoutRelease(WGPUPipelineLayout pipelineLayout);
WGPUComputePassEncoder wgpuCommandEncoderBeginComputePass(WGPUCommandEncoder commandEncoder, const WGPUComputePassDescriptor* descriptor);
void wgpuCommandEncoderCopyBufferToBuffer(WGPUCommandEncoder commandEncoder, WGPUBuffer source, uint64_t sourceOffset, WGPUBuffer destination, uint64_t destinationOffset, uint64_t size);
void wgpuCommandEncoderClearBuffer(WGPUCommandEncoder commandEncoder, WGPUBuffer buffer, uint64_t offset, uint64_t size);
void wgpuCommandEncoderResolveQuerySet(WGPUCommandEncoder commandEncoder, WGPUQuerySet querySet, uint32_t firstQuery, uint32_t queryCount, WGPUBuffer destination, uint64_t destinationOffset);
WGPUCommandBuffer wgpuCommandEncoderFinish(WGPUCommandEncoder commandEncoder, const WGPUCommandBufferDescriptor* descriptor);
void wgpuCommandEncoderRelease(WGPUCommandEncoder commandEncoder);
void wgpuCommandBufferRelease(WGPUCommandBuffer commandBuffer);
void wgpuComputePassEncoderSetPipeline(WGPUComputePassEncoder computePassEncoder, WGPUComputePipeline pipeline);
void wgpuComputePassEncoderSetBindGroup(WGPUComputePassEncoder computePassEncoder, uint32_t groupIndex, WGPUBindGroup group, size_t dynamicOffsetCount, const uint32_t* dynamicOffsets);
void wgpuComputePassEncoderDispatchWorkgroups(WGPUComputePassEncoder computePassEncoder, uint32_t workgroupCountX, uint32_t workgroupCountY, uint32_t workgroupCountZ);
void wgpuComputePassEncoderEnd(WGPUComputePassEncoder computePassEncoder);
void wgpuComputePassEncoderRelease(WGPUComputePassEncoder computePassEncoder);
void wgpuQuerySetDestroy(WGPUQuerySet querySet);
void wgpuQuerySetRelease(WGPUQuerySet querySet);

}  // extern "C"
#endif  // EWGPU_SYSTEM_DAWN
