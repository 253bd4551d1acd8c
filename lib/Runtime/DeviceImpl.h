//===- DeviceImpl.h - The runtime's view of an opened device ----*- C++ -*-===//
//
// Buffers and modules call their device only through the registered
// te_device_ops table; this is the one place that pairs a table with an
// opened instance.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_DEVICEIMPL_H
#define TE_LIB_RUNTIME_DEVICEIMPL_H

#include "te/Runtime/Device.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string>

struct te_device {
  /// The registry's copy of the table; registry entries are never removed, so
  /// both the table and `name` outlive every device.
  const te_device_ops *ops;
  const char *name;
  int index;
  /// Passed as the first argument of every table entry.
  void *instance;
  /// Guarded by the registry mutex, because opening looks devices up by name
  /// and must not hand out one whose last reference is being dropped.
  int refCount;
  /// The default stream's execution context (exec_context_create with a
  /// NULL stream), created at the first launch that needs it.
  std::mutex execContextMutex;
  void *defaultExecContext = nullptr;
  /// The channels of the process groups collectives have run on, by their
  /// spec (Collective.cpp); destroyed with the instance.
  std::mutex channelMutex;
  std::map<std::string, void *> channels;
  /// te_device_host_memory's answer once probed; -1 before.
  std::atomic<int> hostMemory{-1};
};

namespace te::runtime {

/// Adds a reference for an object (buffer, module) that uses the device.
void retainDevice(te_device *device);

/// Drops a reference; the last one closes the instance.
void releaseDevice(te_device *device);

/// Frees the step temporaries the device's kernels keep for `stream` (NULL:
/// the default stream), once everything issued to it is complete
/// (Module.cpp; te_stream_release calls it after synchronizing).
void forgetStreamTemporaries(te_device *device, void *stream);

/// Registers `count` device tables (with their contexts, or NULL contexts)
/// all together or, if any is invalid or its name taken, none of them.
te_status registerDeviceGroup(const te_device_ops *const *ops,
                              void *const *contexts, int count, const char *fn);

/// Destroys the channels the device's collectives created (before the
/// instance closes).
void destroyChannels(te_device *device);

/// Whether the table implements kernel modules (the optional entry group).
bool supportsModules(const te_device_ops &ops);

/// Whether the table is of version 2 or later: its launch takes a
/// te_launch_config, and it may have streams and execution contexts.
bool isVersion2(const te_device_ops &ops);

/// The execution context of `stream` (NULL: the default stream) for a
/// launch: created once per stream through exec_context_create and kept in
/// *slot; NULL without error when the device has none.
te_status getExecContext(te_device *device, void *stream, void **slot,
                         std::mutex &slotMutex, void **out);

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_DEVICEIMPL_H
