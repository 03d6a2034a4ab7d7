// Typed errors for everything-webgpu: every failure that reaches a caller is an Error{code, message, detail}.
// `detail` is structured JSON context (the missing field, the file, the limit) so no caller parses a message.
// Result<T> carries a value or an Error; library code returns these and never throws, exits or aborts on
// bad input, a lost device or a full disk.
#pragma once

#include <nlohmann/json.hpp>

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ewgpu {

enum class ErrorCode {
  kNoWebGPU,            // no usable adapter/device
  kNoModel,             // an operation needs a loaded model and none is
  kUnknownModel,        // id not in the catalogue/registry
  kCacheIncomplete,     // model files missing from the cache (evicted, partial)
  kInvalidModelFolder,  // a model folder failed validation
  kBadRequest,          // caller input rejected (bad argument, context window exceeded, ...)
  kGenerationFailed,    // generation could not complete
  kGpu,                 // the GPU reported a validation/internal error (shader compile, pipeline, ...)
  kDeviceLost,          // the device was lost
  kOutOfMemory,         // GPU or host allocation failed
  kIo,                  // file system error (includes disk full; detail says which)
  kNetwork,             // download failed (HTTP status, connection, ...)
  kCancelled,           // the operation was cancelled by its caller
  kContextTooLong,      // a prompt (plus at least one generated token) does not fit the model's context window
  kUnsupported,         // a valid request for something this engine does not do (a field, a model kind)
  kEngineClosed,        // the engine is shutting down or was closed
  kInternal,            // a bug: an invariant did not hold
};

// Every code, in declaration order (for docs checks and for mapping wire names back).
inline constexpr ErrorCode kAllErrorCodes[] = {
    ErrorCode::kNoWebGPU,     ErrorCode::kNoModel,        ErrorCode::kUnknownModel,   ErrorCode::kCacheIncomplete,
    ErrorCode::kInvalidModelFolder, ErrorCode::kBadRequest, ErrorCode::kGenerationFailed, ErrorCode::kGpu,
    ErrorCode::kDeviceLost,   ErrorCode::kOutOfMemory,    ErrorCode::kIo,             ErrorCode::kNetwork,
    ErrorCode::kCancelled,    ErrorCode::kContextTooLong, ErrorCode::kUnsupported,    ErrorCode::kEngineClosed,
    ErrorCode::kInternal};

// "NO_WEBGPU", "INVALID_MODEL_FOLDER", ...: the wire name of a code.
std::string_view errorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  nlohmann::json detail = nlohmann::json::object();

  // "CODE: message (detail-json)" for logs and CLI output.
  std::string toString() const;
  nlohmann::json toJson() const;  // {"code":..., "message":..., "detail":...}
};

inline Error makeError(ErrorCode code, std::string message, nlohmann::json detail = nlohmann::json::object()) {
  return Error{code, std::move(message), std::move(detail)};
}

// BAD_REQUEST for one request field: "field: message", detail {"field": field} plus `extra`'s keys.
inline Error badField(const std::string& field, const std::string& message,
                      nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json d = {{"field", field}};
  for (auto& [k, v] : extra.items()) d[k] = v;
  return makeError(ErrorCode::kBadRequest, field + ": " + message, d);
}

// A value or an Error. Access to the wrong alternative is an invariant violation (asserted).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { assert(!ok()); return std::get<1>(v_); }
  Error&& error() && { assert(!ok()); return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { assert(!ok_); return error_; }
  Error&& error() && { assert(!ok_); return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace ewgpu

// Propagate an error from an expression returning Result<...>/Status: EWGPU_TRY(status_expr);
#define EWGPU_TRY(expr)                         \
  do {                                          \
    auto ewgpu_try_r_ = (expr);                 \
    if (!ewgpu_try_r_.ok()) return std::move(ewgpu_try_r_).error(); \
  } while (0)

// Assign the value of an expression returning Result<T> to `lhs`, or propagate its error: EWGPU_ASSIGN(x, make());
#define EWGPU_ASSIGN(lhs, expr)                        \
  do {                                                 \
    auto ewgpu_assign_r_ = (expr);                     \
    if (!ewgpu_assign_r_) return std::move(ewgpu_assign_r_).error(); \
    lhs = std::move(*ewgpu_assign_r_);                 \
  } while (0)
