//===- Error.h - Status and message reporting in the runtime ----*- C++ -*-===//
//
// Every exported function reports failure the same way: it records a message
// for te_last_error_message and returns the status, and it never lets a C++
// exception escape through the C boundary.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_ERROR_H
#define TE_LIB_RUNTIME_ERROR_H

#include "te/Runtime/Status.h"

#include <new>

namespace te::runtime {

/// Records a printf-style message as this thread's last error and returns
/// `status`, so that error paths read `return fail(...)`. Never allocates, so
/// it is safe to call when memory is exhausted; long messages are truncated.
te_status fail(te_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// What a built-in device says about its last failure on this thread (the
/// driver's error string, why it is unavailable); the runtime adds it to the
/// message of the call that failed. Plugin devices have no such channel.
void setDeviceDetail(const char *format, ...)
    __attribute__((format(printf, 1, 2)));
/// Returns and clears this thread's device detail ("" if none).
const char *takeDeviceDetail();

/// Runs `body`, which returns a te_status, and turns any exception it throws
/// into a status with a message naming `function`.
template <typename Body>
te_status guard(const char *function, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(TE_ERROR_OUT_OF_MEMORY,
                "%s: out of host memory; free memory or reduce the workload",
                function);
  } catch (...) {
    return fail(TE_ERROR_INTERNAL,
                "%s: unexpected C++ exception inside the runtime; this is a "
                "bug, please report it",
                function);
  }
}

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_ERROR_H
