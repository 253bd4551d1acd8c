//===- Buffer.cpp - Dense tensors in device memory ------------------------===//

#include "BufferImpl.h"
#include "DeviceImpl.h"
#include "Error.h"
#include "Shape.h"

#include <cstdint>
#include <memory>
#include <string>

using namespace te::runtime;

namespace {

/// The checks te_buffer_create and te_buffer_wrap share: the arguments and
/// the byte size of the shape, into `bytes`.
te_status checkShape(const char *fn, te_device *device, te_dtype dtype,
                     int rank, const int64_t *dims, te_buffer **out,
                     size_t &bytes) {
  if (out)
    *out = nullptr;
  if (!device || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !device ? "device" : "out");
  if (!isValidDType(dtype))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: %d is not a te_dtype; use one of the TE_DTYPE_* values",
                fn, static_cast<int>(dtype));
  if (rank < 0 || rank > TE_MAX_RANK)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: rank %d is out of range; buffers have rank 0 to %d", fn,
                rank, TE_MAX_RANK);
  if (rank > 0 && !dims)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: dims must not be NULL for rank %d", fn, rank);
  for (int i = 0; i < rank; ++i)
    if (dims[i] < 0)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: dimension %d is %lld; dimensions must be >= 0", fn, i,
                  static_cast<long long>(dims[i]));
  if (!computeByteSize(dtype, rank, dims, bytes))
    return guard(fn, [&] {
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: a %s buffer does not fit in the address space", fn,
                  formatTensorType(dtype, rank, dims).c_str());
    });
  return TE_OK;
}

/// A buffer of the shape, without memory yet.
std::unique_ptr<te_buffer> makeBuffer(te_device *device, te_dtype dtype,
                                      int rank, const int64_t *dims,
                                      size_t bytes) {
  auto buffer = std::make_unique<te_buffer>();
  buffer->device = device;
  buffer->dtype = dtype;
  buffer->rank = rank;
  for (int i = 0; i < rank; ++i)
    buffer->dims[i] = dims[i];
  buffer->bytes = bytes;
  buffer->data = nullptr;
  buffer->refCount.store(1, std::memory_order_relaxed);
  return buffer;
}

} // namespace

extern "C" te_status te_buffer_create(te_device *device, te_dtype dtype,
                                      int rank, const int64_t *dims,
                                      te_buffer **out) {
  const char *fn = "te_buffer_create";
  size_t bytes = 0;
  if (te_status failed = checkShape(fn, device, dtype, rank, dims, out, bytes))
    return failed;
  return guard(fn, [&] {
    std::unique_ptr<te_buffer> buffer =
        makeBuffer(device, dtype, rank, dims, bytes);
    if (bytes > 0) {
      te_status status = device->ops->allocate(
          device->instance, bytes, TE_BUFFER_ALIGNMENT, &buffer->data);
      if (status != TE_OK || !buffer->data)
        return fail(status != TE_OK ? status : TE_ERROR_INTERNAL,
                    "%s: device '%s' %d could not allocate %zu bytes for a %s "
                    "buffer: %s",
                    fn, device->name, device->index, bytes,
                    formatTensorType(dtype, rank, dims).c_str(),
                    status != TE_OK ? te_status_string(status)
                                    : "it returned TE_OK but no memory");
    }
    retainDevice(device);
    *out = buffer.release();
    return TE_OK;
  });
}

extern "C" te_status te_buffer_wrap(te_device *device, te_dtype dtype, int rank,
                                    const int64_t *dims, void *data,
                                    size_t bytes, te_buffer_release_fn release,
                                    void *context, te_buffer **out) {
  const char *fn = "te_buffer_wrap";
  size_t needed = 0;
  if (te_status failed = checkShape(fn, device, dtype, rank, dims, out, needed))
    return failed;
  return guard(fn, [&] {
    std::string type = formatTensorType(dtype, rank, dims);
    if (bytes != needed)
      return fail(TE_ERROR_SHAPE_MISMATCH,
                  "%s: a %s buffer holds %zu bytes, but %zu were given; wrap "
                  "a dense array of exactly that shape",
                  fn, type.c_str(), needed, bytes);
    if (bytes > 0 && !data)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: data must not be NULL for a %s buffer", fn,
                  type.c_str());
    size_t element = te_dtype_size(dtype);
    if (element > 1 && reinterpret_cast<uintptr_t>(data) % element != 0)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: data %p is not aligned to the %zu bytes of a %s "
                  "element; copy the array into aligned memory first",
                  fn, data, element, te_dtype_name(dtype));
    std::unique_ptr<te_buffer> buffer =
        makeBuffer(device, dtype, rank, dims, bytes);
    buffer->data = bytes > 0 ? data : nullptr;
    buffer->borrowed = true;
    buffer->release = release;
    buffer->context = context;
    retainDevice(device);
    *out = buffer.release();
    return TE_OK;
  });
}

namespace {
/// Checks the common preconditions of te_buffer_write and te_buffer_read.
te_status checkTransfer(const char *fn, const te_buffer *buffer,
                        const void *host, size_t bytes) {
  if (!buffer)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: buffer must not be NULL", fn);
  if (bytes != buffer->bytes)
    return guard(fn, [&] {
      return fail(
          TE_ERROR_SHAPE_MISMATCH,
          "%s: the %s buffer holds %zu bytes but %zu were given; "
          "transfers cover the whole buffer",
          fn,
          formatTensorType(buffer->dtype, buffer->rank, buffer->dims).c_str(),
          buffer->bytes, bytes);
    });
  if (!host && bytes > 0)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: host data pointer must not be NULL", fn);
  return TE_OK;
}
} // namespace

extern "C" te_status te_buffer_write(te_buffer *buffer, const void *host,
                                     size_t bytes) {
  const char *fn = "te_buffer_write";
  if (te_status status = checkTransfer(fn, buffer, host, bytes))
    return status;
  if (bytes == 0)
    return TE_OK;
  te_device *device = buffer->device;
  if (te_status status = device->ops->copy_to_device(device->instance,
                                                     buffer->data, host, bytes))
    return fail(status, "%s: copying %zu bytes to device '%s' %d failed: %s",
                fn, bytes, device->name, device->index,
                te_status_string(status));
  return TE_OK;
}

extern "C" te_status te_buffer_read(const te_buffer *buffer, void *host,
                                    size_t bytes) {
  const char *fn = "te_buffer_read";
  if (te_status status = checkTransfer(fn, buffer, host, bytes))
    return status;
  if (bytes == 0)
    return TE_OK;
  te_device *device = buffer->device;
  if (te_status status = device->ops->copy_to_host(device->instance, host,
                                                   buffer->data, bytes))
    return fail(status, "%s: copying %zu bytes from device '%s' %d failed: %s",
                fn, bytes, device->name, device->index,
                te_status_string(status));
  return TE_OK;
}

extern "C" te_status te_buffer_copy(te_buffer *dst, const te_buffer *src) {
  const char *fn = "te_buffer_copy";
  if (!dst || !src)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !dst ? "dst" : "src");
  if (dst->device != src->device)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: src is on device '%s' %d but dst on '%s' %d; copy "
                "through host memory with te_buffer_read and te_buffer_write",
                fn, src->device->name, src->device->index, dst->device->name,
                dst->device->index);
  bool sameShape = dst->rank == src->rank;
  for (int i = 0; sameShape && i < dst->rank; ++i)
    sameShape = dst->dims[i] == src->dims[i];
  if (dst->dtype != src->dtype || !sameShape)
    return guard(fn, [&] {
      return fail(dst->dtype != src->dtype ? TE_ERROR_DTYPE_MISMATCH
                                           : TE_ERROR_SHAPE_MISMATCH,
                  "%s: dst is %s but src is %s; both must have the same type",
                  fn,
                  formatTensorType(dst->dtype, dst->rank, dst->dims).c_str(),
                  formatTensorType(src->dtype, src->rank, src->dims).c_str());
    });
  if (dst == src || dst->bytes == 0)
    return TE_OK;
  // Buffers of te_buffer_wrap may share memory; device copies may not.
  if (buffersOverlap(dst, src))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: dst and src are different buffers over overlapping "
                "memory; copy through a separate buffer",
                fn);
  te_device *device = dst->device;
  if (te_status status = device->ops->copy_device_to_device(
          device->instance, dst->data, src->data, dst->bytes))
    return fail(status, "%s: copying %zu bytes on device '%s' %d failed: %s",
                fn, dst->bytes, device->name, device->index,
                te_status_string(status));
  return TE_OK;
}

extern "C" te_dtype te_buffer_dtype(const te_buffer *buffer) {
  return buffer ? buffer->dtype : TE_DTYPE_INVALID;
}

extern "C" int te_buffer_rank(const te_buffer *buffer) {
  return buffer ? buffer->rank : -1;
}

extern "C" const int64_t *te_buffer_dims(const te_buffer *buffer) {
  return buffer ? buffer->dims : nullptr;
}

extern "C" size_t te_buffer_size_bytes(const te_buffer *buffer) {
  return buffer ? buffer->bytes : 0;
}

extern "C" te_device *te_buffer_device(const te_buffer *buffer) {
  return buffer ? buffer->device : nullptr;
}

extern "C" void *te_buffer_host_pointer(te_buffer *buffer) {
  if (!buffer || !buffer->data || !buffer->device->ops->host_pointer)
    return nullptr;
  return buffer->device->ops->host_pointer(buffer->device->instance,
                                           buffer->data);
}

extern "C" void te_buffer_retain(te_buffer *buffer) {
  if (buffer)
    buffer->refCount.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void te_buffer_release(te_buffer *buffer) {
  if (!buffer || buffer->refCount.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  te_device *device = buffer->device;
  if (buffer->borrowed) {
    if (buffer->release)
      buffer->release(buffer->context);
  } else if (buffer->data) {
    device->ops->free(device->instance, buffer->data);
  }
  delete buffer;
  releaseDevice(device);
}
