//===- Buffer.h - Dense tensors in device memory ------------------*- C -*-===//
//
// A buffer is a dense, row-major tensor of a fixed element type and shape,
// stored in the memory of one device. Buffers own their memory; two distinct
// buffers never overlap.
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
/// is host visible (TE_BUFFER_ALIGNMENT aligned, valid while the buffer is
/// alive), otherwise NULL. Also NULL for NULL and for buffers of 0 bytes.
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
