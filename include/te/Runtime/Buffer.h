//===- Buffer.h - Dense tensors in device memory ------------------*- C -*-===//
//
// A buffer is a dense, row-major tensor of a fixed element type and shape,
// stored in the memory of one device. A buffer owns its memory
// (te_buffer_create) or borrows memory its creator owns (te_buffer_wrap:
// an array of a framework, without a copy); buffers the runtime allocates
// never overlap, and kernels refuse outputs that overlap another argument.
//
// Thread safety: a buffer's type, shape, size and device never change, so the
// getters may be called from any thread. Retain and release are atomic.
// Writing a buffer while another thread reads, writes or launches a kernel on
// it is a data race on its contents (not on the runtime's state); order such
// accesses yourself.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_BUFFER_H
#define TE_RUNTIME_BUFFER_H

#include "te/Runtime/DType.h"
#include "te/Runtime/Device.h"
#include "te/Runtime/Status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The highest rank a buffer or kernel argument may have.
#define TE_MAX_RANK 8

/// Alignment in bytes of every buffer's device memory.
#define TE_BUFFER_ALIGNMENT 64

/// A tensor in device memory. Opaque; reference counted.
typedef struct te_buffer te_buffer;

/// Allocates an uninitialized buffer of `rank` dimensions `dims[0..rank)` on
/// `device` and stores it in *out with a reference count of one. `dims` may
/// be NULL when rank is 0 (a scalar). A buffer with a zero dimension holds no
/// memory. The buffer holds a reference to `device`.
/// Errors: TE_ERROR_INVALID_ARGUMENT if device or out is NULL, dtype is
/// invalid, rank is outside [0, TE_MAX_RANK], dims is NULL for rank > 0, or a
/// dimension is negative or the byte size overflows size_t;
/// TE_ERROR_OUT_OF_MEMORY if the device cannot allocate it. *out is set to NULL
/// on error. Thread safe.
TE_RUNTIME_EXPORT te_status te_buffer_create(te_device *device, te_dtype dtype,
                                             int rank, const int64_t *dims,
                                             te_buffer **out);

/// Called once when the last reference to a buffer of te_buffer_wrap goes,
/// with the `context` given there: the owner may free the memory then.
typedef void (*te_buffer_release_fn)(void *context);

/// Makes a buffer of `rank` dimensions `dims` over `bytes` bytes at `data`,
/// memory of `device` that the caller owns (for a device whose memory is
/// the host's, te_device_host_memory, any host memory), without copying.
/// `bytes` must be the dense size of dtype and shape, and `data` aligned
/// to the element size (NULL only for 0 bytes); the memory must stay valid
/// and be written by no one else while kernels use the buffer. When the
/// last reference goes, the runtime calls `release(context)` (if `release`
/// is not NULL) and frees nothing itself. The buffer holds a reference to
/// `device`. On error `release` is not called and *out is NULL.
/// Errors: those of te_buffer_create for the shape; TE_ERROR_SHAPE_MISMATCH
/// when bytes is not the shape's size; TE_ERROR_INVALID_ARGUMENT for NULL
/// data with bytes > 0 or misaligned data. Thread safe.
TE_RUNTIME_EXPORT te_status te_buffer_wrap(te_device *device, te_dtype dtype,
                                           int rank, const int64_t *dims,
                                           void *data, size_t bytes,
                                           te_buffer_release_fn release,
                                           void *context, te_buffer **out);

/// Copies `bytes` bytes from host memory into the buffer. `bytes` must equal
/// te_buffer_size_bytes: partial writes are rejected to catch shape mistakes.
/// `host` may be NULL only when bytes is 0.
/// Errors: TE_ERROR_INVALID_ARGUMENT for a NULL buffer or data pointer;
/// TE_ERROR_SHAPE_MISMATCH if bytes differs from the buffer size; whatever
/// the device's copy returns.
TE_RUNTIME_EXPORT te_status te_buffer_write(te_buffer *buffer, const void *host,
                                            size_t bytes);

/// Copies the buffer's contents into `bytes` bytes of host memory, after all
/// kernels launched earlier on its device have finished. Size rules and
/// errors as for te_buffer_write.
TE_RUNTIME_EXPORT te_status te_buffer_read(const te_buffer *buffer, void *host,
                                           size_t bytes);

/// Copies the contents of `src` into `dst` on their device. Both must be on
/// the same device and have the same dtype and shape; copying a buffer onto
/// itself does nothing.
/// Errors: TE_ERROR_INVALID_ARGUMENT for NULL or buffers on different
/// devices; TE_ERROR_DTYPE_MISMATCH; TE_ERROR_SHAPE_MISMATCH; whatever the
/// device's copy returns.
TE_RUNTIME_EXPORT te_status te_buffer_copy(te_buffer *dst,
                                           const te_buffer *src);

/// Returns the element type, or TE_DTYPE_INVALID for NULL.
TE_RUNTIME_EXPORT te_dtype te_buffer_dtype(const te_buffer *buffer);

/// Returns the rank (0 for a scalar), or -1 for NULL.
TE_RUNTIME_EXPORT int te_buffer_rank(const te_buffer *buffer);

/// Returns the te_buffer_rank dimensions, owned by the buffer and valid while
/// it is alive; NULL for NULL. Never NULL for a valid buffer, even a scalar.
TE_RUNTIME_EXPORT const int64_t *te_buffer_dims(const te_buffer *buffer);

/// Returns the size of the contents in bytes, or 0 for NULL.
TE_RUNTIME_EXPORT size_t te_buffer_size_bytes(const te_buffer *buffer);

/// Returns the device holding the buffer (a borrowed reference, valid while
/// the buffer is alive), or NULL for NULL.
TE_RUNTIME_EXPORT te_device *te_buffer_device(const te_buffer *buffer);

/// Returns the address of the contents in host memory if the device's memory
/// is host visible (TE_BUFFER_ALIGNMENT aligned for buffers the runtime
/// allocated, valid while the buffer is alive), otherwise NULL. Also NULL
/// for NULL and for buffers of 0 bytes.
TE_RUNTIME_EXPORT void *te_buffer_host_pointer(te_buffer *buffer);

/// Adds a reference. NULL is ignored. Thread safe.
TE_RUNTIME_EXPORT void te_buffer_retain(te_buffer *buffer);

/// Drops a reference; the last one frees the memory and releases the device.
/// NULL is ignored. Thread safe.
TE_RUNTIME_EXPORT void te_buffer_release(te_buffer *buffer);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_BUFFER_H
