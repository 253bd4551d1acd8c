//===- StreamImpl.h - The runtime's view of streams and events --*- C++ -*-===//

#ifndef TE_LIB_RUNTIME_STREAMIMPL_H
#define TE_LIB_RUNTIME_STREAMIMPL_H

#include "te/Runtime/Stream.h"

#include <chrono>
#include <mutex>

struct te_stream {
  /// Holds a reference for as long as the stream lives.
  te_device *device = nullptr;
  /// The device's stream; NULL when the device has no stream group and the
  /// runtime emulates the stream with the default one.
  void *handle = nullptr;
  /// The stream's execution context, created at its first launch.
  std::mutex execContextMutex;
  void *execContext = nullptr;
};

struct te_event {
  /// Holds a reference for as long as the event lives.
  te_device *device = nullptr;
  /// The device's event; NULL when emulated.
  void *handle = nullptr;
  bool recorded = false;
  /// For an emulated event: when the device had completed everything issued
  /// before the record.
  std::chrono::steady_clock::time_point reachedAt;
};

#endif // TE_LIB_RUNTIME_STREAMIMPL_H
