#include "base/error.h"

namespace ewgpu {

std::string_view errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNoWebGPU: return "NO_WEBGPU";
    case ErrorCode::kNoModel: return "NO_MODEL";
    case ErrorCode::kUnknownModel: return "UNKNOWN_MODEL";
    case ErrorCode::kCacheIncomplete: return "CACHE_INCOMPLETE";
    case ErrorCode::kInvalidModelFolder: return "INVALID_MODEL_FOLDER";
    case ErrorCode::kBadRequest: return "BAD_REQUEST";
    case ErrorCode::kGenerationFailed: return "GENERATION_FAILED";
    case ErrorCode::kGpu: return "GPU_ERROR";
    case ErrorCode::kDeviceLost: return "DEVICE_LOST";
    case ErrorCode::kOutOfMemory: return "OUT_OF_MEMORY";
    case ErrorCode::kIo: return "IO_ERROR";
    case ErrorCode::kNetwork: return "NETWORK_ERROR";
    case ErrorCode::kCancelled: return "CANCELLED";
    case ErrorCode::kContextTooLong: return "CONTEXT_TOO_LONG";
    case ErrorCode::kUnsupported: return "UNSUPPORTED";
    case ErrorCode::kEngineClosed: return "ENGINE_CLOSED";
    case ErrorCode::kInternal: return "INTERNAL";
  }
  return "INTERNAL";
}

std::string Error::toString() const {
  std::string s(errorCodeName(code));
  s += ": ";
  s += message;
  if (!detail.is_null() && !detail.empty()) {
    s += " ";
    s += detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return s;
}

nlohmann::json Error::toJson() const {
  return {{"code", errorCodeName(code)}, {"message", message}, {"detail", detail}};
}

}  // namespace ewgpu
