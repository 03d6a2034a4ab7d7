// The WebGPU device layer: instance, adapter and device with the adapter's maximum limits, errors from the
// device turned into typed errors, move-only buffers, kernels compiled from embedded WGSL with a pipeline cache,
// bind groups. This folder is the only code that sees webgpu.h (webgpu_abi.h).
//
// Adapter choice (Linux): Vulkan is requested explicitly (a default request silently returns Dawn's Null
// backend when no driver works). "auto" tries the system's Vulkan drivers first and falls back to SwiftShader
// from Debian's chromium package; --adapter / EWGPU_ADAPTER=auto|gpu|swiftshader overrides.
#pragma once

#include "base/error.h"
#include "gpu/device_info.h"
#include "gpu/webgpu_abi.h"

#include <atomic>
#include <functional>
#include <map>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ewgpu::gpu {

struct ContextOptions {
  std::string adapter = "";  // "" = $EWGPU_ADAPTER or "auto"; "gpu" = hardware only; "swiftshader"
  bool want_timestamps = true;
  // Bounds clamps on every buffer access in generated shaders (Dawn's robustness). Off by default: every index
  // our kernels compute is bounded by sizes the host checked (token ids, positions and lengths are validated
  // before they reach the GPU), and the clamps cost 30-40% of decode speed on the H200 (docs/benchmarks.md).
  // true, or EWGPU_ROBUST=1, keeps them (while developing a kernel, say).
  bool robust = false;
  // Further Dawn device toggles to enable, e.g. "disable_workgroup_init". Unknown names are ignored by Dawn.
  // "" = $EWGPU_DAWN_TOGGLES (comma-separated).
  std::string toggles = "";
  // Where compiled pipelines persist across runs (Dawn's blob cache, gpu/pipeline_cache.h), under a
  // subdirectory per adapter and Dawn build. "" = $EWGPU_PIPELINE_CACHE_DIR, else no disk cache.
  std::string pipeline_cache_dir = "";
  // Dawn's experimental features (allow_unsafe_apis on the adapter request): today the subgroup matrices
  // (ChromiumExperimentalSubgroupMatrix, cooperative-matrix units where the driver has them), requested when the
  // adapter offers them. Off by default: no kernel uses them (docs/kernels.md, "Subgroup matrices").
  // true, or EWGPU_EXPERIMENTAL=1, turns it on.
  bool experimental = false;
};

class Context;

// A GPU buffer, destroyed explicitly (freed at once) when the owner lets go. Move-only.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : h_(o.h_), size_(o.size_) { o.h_ = nullptr; o.size_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  WGPUBuffer handle() const { return h_; }
  uint64_t size() const { return size_; }
  explicit operator bool() const { return h_ != nullptr; }
  void reset();

 private:
  friend class Context;
  WGPUBuffer h_ = nullptr;
  uint64_t size_ = 0;
};

enum class BufferKind {
  kStorage,   // storage + copy src/dst: weights, activations, state
  kReadback,  // map-read + copy dst: staging for readback
  kQuery,     // query resolve + copy src: timestamps
  kUniform,   // uniform + copy dst: small per-op parameters (kernels/linear_cpu.h)
  kUpload,    // map-write + copy src: host-written staging (gpu/microbench.h's upload variants)
};

// A compiled compute pipeline and its bind group layout (group 0, explicit: built from the @binding
// declarations of the WGSL, so bindings a specialisation leaves unused are still bound). Owns both handles.
struct Kernel {
  Kernel() = default;
  ~Kernel() {
    if (layout) wgpuBindGroupLayoutRelease(layout);
    if (pipeline) wgpuComputePipelineRelease(pipeline);
  }
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  std::string name;
  std::string constants;  // "N=3072 K=2048 ..." (profiles name dispatches by it)
  WGPUComputePipeline pipeline = nullptr;  // null while an asynchronous creation is pending, or after it failed
  WGPUBindGroupLayout layout = nullptr;
  std::string error;                       // why the asynchronous creation failed ("" otherwise)
};

// A slice of a buffer bound at binding index `binding` (in order of the kernel's @binding numbers).
struct Binding {
  const Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = WGPU_WHOLE_SIZE;
};

class BindGroup {
 public:
  BindGroup() = default;
  ~BindGroup() { if (h_) wgpuBindGroupRelease(h_); }
  BindGroup(BindGroup&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  BindGroup& operator=(BindGroup&& o) noexcept { std::swap(h_, o.h_); return *this; }
  BindGroup(const BindGroup&) = delete;
  BindGroup& operator=(const BindGroup&) = delete;
  WGPUBindGroup handle() const { return h_; }

 private:
  friend class Context;
  WGPUBindGroup h_ = nullptr;
};

// Override constants of a pipeline (WGSL `override` declarations), by name.
using Constants = std::map<std::string, double>;

// Where kernel creation spent its time (wall clock, summed over compile() calls): start-up profiles.
struct CompileStats {
  uint32_t kernels = 0;     // pipelines created
  double shader_ms = 0;     // wgpuDeviceCreateShaderModule (WGSL parse + validation)
  double pipeline_ms = 0;   // in wgpuDeviceCreateComputePipeline[Async] (Tint codegen + driver compile when sync)
  double wait_ms = 0;       // in awaitPipelines(): asynchronous compiles not finished when needed
  uint32_t cache_hits = 0, cache_misses = 0, cache_stores = 0;  // the disk cache's blobs (when enabled)
  std::string cache_dir;    // "" when there is no disk cache
};

class Context {
 public:
  // NO_WEBGPU when no adapter can be found (detail says what was tried).
  static Result<std::unique_ptr<Context>> create(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  const WGPULimits& limits() const { return limits_; }
  WGPUInstance instance() const { return instance_; }
  WGPUDevice device() const { return device_; }
  WGPUQueue queue() const { return queue_; }

  // Buffers. A size above the device's limits -> BAD_REQUEST (detail: size, limit); allocation failure ->
  // OUT_OF_MEMORY. Storage buffers are zero-filled by WebGPU.
  Result<Buffer> createBuffer(uint64_t size, BufferKind kind, std::string_view label);
  // Uploads bytes (queue write; ordered before the next submit).
  void write(const Buffer& dst, uint64_t offset, const void* data, size_t size);
  // A buffer mapped at creation: *data points at its `size` bytes (zeroed) until unmap(). Host threads may write
  // them without any API call; the buffer may be bound but not used by a submission before unmap(). A storage
  // buffer is copied to the GPU from Dawn's staging memory at unmap().
  Result<Buffer> createMapped(uint64_t size, BufferKind kind, std::string_view label, uint8_t** data);
  void unmap(const Buffer& b);

  // A kernel from the embedded src/kernels/<name>.wgsl, specialised by override constants, cached by
  // (name, constants, defines). GPU_ERROR carrying the compiler's message when the WGSL or pipeline is invalid.
  // `defines` switch the source's //#if blocks (beside the adapter's own, e.g. SUBGROUPS): for what override
  // constants cannot change, such as a binding's element type.
  Result<const Kernel*> kernel(std::string_view name, const Constants& constants = {},
                               const std::vector<std::string>& defines = {});
  // Kernels compiled (cache misses of kernel()) so far. `fn`, when set, is called as pipelines are asked for and
  // as they become ready, with counts since the hook was set (load progress: pipeline creation is most of a load
  // on CPU adapters): `total` pipelines asked for, `ready` of them built. Synchronously built ones are ready at
  // once; while deferred, the total grows as kernel() starts them and ready catches up in awaitPipelines(), so
  // once the forward is built the total is final. Empty `fn` removes the hook.
  size_t kernelsCompiled() const { return kernels_.size(); }
  void setKernelCompiledHook(std::function<void(size_t ready, size_t total)> fn) {
    on_kernel_compiled_ = std::move(fn);
    hook_base_ = kernels_.size();
  }
  // The same from WGSL text (tests, tools). Not cached.
  Result<std::unique_ptr<Kernel>> compile(std::string_view name, std::string_view wgsl, const Constants& constants = {});

  // While deferred, kernel() starts each new pipeline with wgpuDeviceCreateComputePipelineAsync, so Dawn compiles
  // them on its worker threads in parallel while the caller goes on building; a failure then surfaces at
  // awaitPipelines() rather than at kernel(). Forward::create defers around building its ops.
  void deferPipelines(bool on) { defer_pipelines_ = on; }
  // Waits for every pipeline kernel() started asynchronously. GPU_ERROR naming the kernel (and removing it from
  // the cache) if one failed. Recorder::dispatch calls it for a kernel whose pipeline is still pending.
  Status awaitPipelines();
  CompileStats compileStats() const;

  // A bind group for `k` whose entries are bindings[i] at @binding(i). GPU_ERROR on validation failure.
  Result<BindGroup> bindGroup(const Kernel& k, const std::vector<Binding>& bindings);
  // The most storage buffers any bind group of each kernel has bound so far (the invariant: at most 8, the
  // spec's default maxStorageBuffersPerShaderStage; Firefox allows 9). Tests read it after building models.
  const std::map<std::string, uint32_t>& storageBindingsPerKernel() const { return bindings_per_kernel_; }

  // Errors the device reported asynchronously (uncaptured errors, device loss) since the last call.
  // DEVICE_LOST once lost (sticky), GPU_ERROR / OUT_OF_MEMORY for uncaptured errors.
  Status takeError();
  bool lost() const { return lost_.load(); }

  // Pumps callbacks registered with AllowProcessEvents (readbacks). Never blocks.
  void processEvents();
  // Blocks until `future` completes or `timeout_ns` passes. GPU_ERROR on timeout.
  Status wait(WGPUFuture future, uint64_t timeout_ns = 30'000'000'000ull);
  // wait() in one-second slices for up to ten minutes (slow adapters: SwiftShader running a large model), giving
  // up early with the device's error if it is lost.
  Status waitLong(WGPUFuture future);
  // Blocks until all submitted work is done (tests, benchmarks).
  Status finish();

  // Runs `fn` between pushing and popping a validation+OOM error scope; returns the first error it raised.
  template <class F>
  Status scoped(F&& fn) {
    pushScopes();
    fn();
    return popScopes();
  }

 private:
  Result<Buffer> createBufferImpl(uint64_t size, BufferKind kind, std::string_view label, bool mapped);
  Context() = default;
  Status init(const ContextOptions& options);
  Status requestAdapter(const std::string& mode, bool experimental, nlohmann::json& tried);
  Status requestDevice(const ContextOptions& options);
  // compile() and kernel(): a non-empty async_key starts the pipeline asynchronously (pending_ under that key).
  Result<std::unique_ptr<Kernel>> build(std::string_view name, std::string_view wgsl, const Constants& constants,
                                        const std::string& async_key);
  void fillInfo();
  void pushScopes();
  Status popScopes();
  static void onUncapturedError(const WGPUDevice*, WGPUErrorType, WGPUStringView, void*, void*);
  static void onDeviceLost(const WGPUDevice*, WGPUDeviceLostReason, WGPUStringView, void*, void*);

  WGPUInstance instance_ = nullptr;
  WGPUAdapter adapter_ = nullptr;
  WGPUDevice device_ = nullptr;
  WGPUQueue queue_ = nullptr;
  WGPULimits limits_{};
  DeviceInfo info_;
  bool experimental_ = false;  // ContextOptions::experimental or EWGPU_EXPERIMENTAL=1

  std::mutex error_mu_;        // guards pending_errors_ (callbacks may come from Dawn threads)
  std::vector<Error> pending_errors_;
  std::atomic<bool> lost_{false};
  std::string lost_message_;   // guarded by error_mu_

  std::map<std::string, std::unique_ptr<Kernel>> kernels_;  // key: name + constants
  // Shader modules by WGSL text (after //#if preprocessing): pipelines that differ only in override constants share
  // one, so each kernel source is parsed and validated once (kernel() only; compile() builds its own).
  std::unordered_map<std::string, WGPUShaderModule> modules_;
  std::map<std::string, uint32_t> bindings_per_kernel_;
  std::function<void(size_t, size_t)> on_kernel_compiled_;
  size_t hook_base_ = 0;  // kernels_.size() when the hook was set
  CompileStats compile_stats_;
  bool defer_pipelines_ = false;
  struct PendingPipeline;
  std::vector<std::unique_ptr<PendingPipeline>> pending_;  // started by kernel(), collected by awaitPipelines()
  std::unique_ptr<class PipelineDiskCache> disk_cache_;
};

// A tiny preprocessor for kernels: lines `//#if NAME`, `//#else`, `//#endif` keep or drop code depending on
// `defines`; `//#enable subgroups` becomes `enable subgroups;` when SUBGROUPS is defined. Context::kernel
// defines SUBGROUPS when the device has the subgroups feature. Dropped lines stay as empty lines.
// `//#include NAME` appends the embedded snippet src/kernels/NAME.wgsl (once, after the file, so the file's
// line numbers are unchanged); a snippet has no entry point and uses names the including kernel declares.
std::string preprocessWgsl(std::string_view src, const std::vector<std::string>& defines);
// The line pass of preprocessWgsl: `included` collects the snippet names met (each once).
std::string preprocessWgslLines(std::string_view src, const std::vector<std::string>& defines,
                                std::vector<std::string>& included);

// The embedded WGSL source of src/kernels/<stem>.wgsl ("" when there is none).
std::string_view embeddedWgsl(std::string_view stem);

// Probes the default adapter once per process (cached) for `ewgpu probe`, the store's device fit, ...
Result<DeviceInfo> probeAdapterCached();

// While Dawn and the Vulkan loader look for drivers (instance, adapter and device creation) they print warnings
// to stderr on their own (three lines on a machine with no GPU driver, before SwiftShader is found). With quiet
// set, stderr is pointed at /dev/null for that window only (the CLI does this unless --verbose); errors still
// reach the caller as typed errors. Process-wide; off by default.
void setDriverMessagesQuiet(bool quiet);

// Fault injection for tests of device loss: the next Recorder::submit, on whichever context and thread submits
// next, first loses that device as a driver reset would (wgpuDeviceForceLoss, reason unknown), so the loss reaches
// the engine through the same callback and errors as a real one. Natively only: in the browser build it does
// nothing (its wgpuDeviceForceLoss is a stub). Process-wide, once per call.
void loseDeviceAtNextSubmit();

}  // namespace ewgpu::gpu
