//===- Error.cpp - Status strings and the per-thread error message --------===//

#include "Error.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace {
// A fixed buffer rather than a std::string: recording an out-of-memory error
// must not itself need memory.
constexpr size_t kMessageCapacity = 4096;
thread_local char lastErrorMessage[kMessageCapacity] = "";
thread_local char deviceDetail[kMessageCapacity] = "";
thread_local char takenDeviceDetail[kMessageCapacity] = "";
} // namespace

te_status te::runtime::fail(te_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int length = std::vsnprintf(lastErrorMessage, kMessageCapacity, format, args);
  va_end(args);
  if (length < 0) {
    std::snprintf(lastErrorMessage, kMessageCapacity,
                  "%s (the error message could not be formatted)",
                  te_status_string(status));
  } else if (static_cast<size_t>(length) >= kMessageCapacity) {
    std::memcpy(lastErrorMessage + kMessageCapacity - 4, "...", 4);
  }
  return status;
}

extern "C" const char *te_status_string(te_status status) {
  switch (status) {
  case TE_OK:
    return "TE_OK";
  case TE_ERROR_INVALID_ARGUMENT:
    return "TE_ERROR_INVALID_ARGUMENT";
  case TE_ERROR_NOT_FOUND:
    return "TE_ERROR_NOT_FOUND";
  case TE_ERROR_DTYPE_MISMATCH:
    return "TE_ERROR_DTYPE_MISMATCH";
  case TE_ERROR_SHAPE_MISMATCH:
    return "TE_ERROR_SHAPE_MISMATCH";
  case TE_ERROR_OUT_OF_MEMORY:
    return "TE_ERROR_OUT_OF_MEMORY";
  case TE_ERROR_LOAD_FAILED:
    return "TE_ERROR_LOAD_FAILED";
  case TE_ERROR_UNSUPPORTED:
    return "TE_ERROR_UNSUPPORTED";
  case TE_ERROR_INTERNAL:
    return "TE_ERROR_INTERNAL";
  case TE_ERROR_COMPILE_FAILED:
    return "TE_ERROR_COMPILE_FAILED";
  case TE_ERROR_KERNEL_FAILED:
    return "TE_ERROR_KERNEL_FAILED";
  }
  return "TE_ERROR_UNKNOWN";
}

extern "C" const char *te_last_error_message(void) { return lastErrorMessage; }

void te::runtime::setDeviceDetail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(deviceDetail, sizeof(deviceDetail), format, args);
  va_end(args);
}

const char *te::runtime::takeDeviceDetail() {
  std::memcpy(takenDeviceDetail, deviceDetail, sizeof(deviceDetail));
  deviceDetail[0] = 0;
  return takenDeviceDetail;
}
