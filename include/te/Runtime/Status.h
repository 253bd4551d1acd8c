//===- Status.h - Runtime status codes and error messages ---------*- C -*-===//
//
// Every runtime function that can fail returns a te_status; the human readable
// reason is kept per thread and read back with te_last_error_message. This
// header also defines TE_RUNTIME_EXPORT, which marks the public API of
// libTERuntime (the library itself is built with hidden visibility so that
// only this API is exported).
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_STATUS_H
#define TE_RUNTIME_STATUS_H

#if defined(_WIN32)
#define TE_RUNTIME_EXPORT __declspec(dllexport)
#else
#define TE_RUNTIME_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// Result of every fallible runtime call. The numeric values are part of the
/// ABI: new codes are only ever appended.
typedef enum te_status {
  TE_OK = 0,
  /// A NULL pointer, an out-of-range value or an otherwise unusable argument.
  TE_ERROR_INVALID_ARGUMENT,
  /// A named device, device index, kernel entry or symbol does not exist.
  TE_ERROR_NOT_FOUND,
  /// A buffer's element type differs from what the callee requires.
  TE_ERROR_DTYPE_MISMATCH,
  /// A buffer's rank, dimensions or byte size differ from what is required.
  TE_ERROR_SHAPE_MISMATCH,
  /// Host or device memory could not be allocated.
  TE_ERROR_OUT_OF_MEMORY,
  /// A kernel module could not be loaded, or its manifest is invalid.
  TE_ERROR_LOAD_FAILED,
  /// The device does not implement the requested operation.
  TE_ERROR_UNSUPPORTED,
  /// The runtime or a device plugin broke its own contract (a bug).
  TE_ERROR_INTERNAL,
  /// A te program did not compile (te_jit_load); the message holds the
  /// compiler's diagnostics.
  TE_ERROR_COMPILE_FAILED,
  /// A kernel refused its input data (a run-time check such as an index
  /// operand out of range failed) or a library it calls failed; the message
  /// names the op, its source location and the operand. The outputs of that
  /// launch are unspecified.
  TE_ERROR_KERNEL_FAILED
} te_status;

/// Returns the enumerator's name ("TE_OK", "TE_ERROR_NOT_FOUND", ...), or
/// "TE_ERROR_UNKNOWN" for a value outside the enum. The string is static.
/// Thread safe.
TE_RUNTIME_EXPORT const char *te_status_string(te_status status);

/// Returns the message of the most recent failing runtime call made by the
/// calling thread: what failed, on which object or file, and what to do about
/// it. Successful calls leave it unchanged. Returns "" when no call on this
/// thread has failed yet; never returns NULL. The string is owned by the
/// runtime and stays valid until the next failing call on the same thread.
/// Thread safe: every thread has its own message.
TE_RUNTIME_EXPORT const char *te_last_error_message(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_STATUS_H
