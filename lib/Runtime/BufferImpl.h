//===- BufferImpl.h - Layout of a runtime buffer ----------------*- C++ -*-===//

#ifndef TE_LIB_RUNTIME_BUFFERIMPL_H
#define TE_LIB_RUNTIME_BUFFERIMPL_H

#include "te/Runtime/Buffer.h"

#include <atomic>
#include <cstdint>

struct te_buffer {
  /// Holds a reference for as long as the buffer lives.
  te_device *device;
  te_dtype dtype;
  int rank;
  int64_t dims[TE_MAX_RANK];
  size_t bytes;
  /// Device address from te_device_ops::allocate, or the borrowed memory
  /// of te_buffer_wrap; NULL when bytes is 0.
  void *data;
  std::atomic<int> refCount;
  /// te_buffer_wrap: the memory is borrowed; `release(context)` (if set)
  /// runs instead of the device's free.
  bool borrowed = false;
  te_buffer_release_fn release = nullptr;
  void *context = nullptr;
};

/// Whether the byte ranges [a, a + aBytes) and [b, b + bBytes) share a
/// byte (empty ranges share none).
inline bool rangesOverlap(const void *a, size_t aBytes, const void *b,
                          size_t bBytes) {
  auto begin = [](const void *p) { return reinterpret_cast<uintptr_t>(p); };
  return aBytes && bBytes && begin(a) < begin(b) + bBytes &&
         begin(b) < begin(a) + aBytes;
}

/// Whether two buffers' memory overlaps (te_buffer_wrap's buffers may share
/// memory without being the same buffer).
inline bool buffersOverlap(const te_buffer *a, const te_buffer *b) {
  return rangesOverlap(a->data, a->bytes, b->data, b->bytes);
}

#endif // TE_LIB_RUNTIME_BUFFERIMPL_H
