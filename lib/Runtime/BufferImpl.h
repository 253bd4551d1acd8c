//===- BufferImpl.h - Layout of a runtime buffer ----------------*- C++ -*-===//

#ifndef TE_LIB_RUNTIME_BUFFERIMPL_H
#define TE_LIB_RUNTIME_BUFFERIMPL_H

#include "te/Runtime/Buffer.h"

#include <atomic>

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

#endif // TE_LIB_RUNTIME_BUFFERIMPL_H
