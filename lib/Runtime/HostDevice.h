//===- HostDevice.h - The built-in host CPU device --------------*- C++ -*-===//

#ifndef TE_LIB_RUNTIME_HOSTDEVICE_H
#define TE_LIB_RUNTIME_HOSTDEVICE_H

#include "te/Runtime/Device.h"

#include <cstddef>

namespace te::runtime {

/// The allocator host kernels take their temporaries from
/// (te/Runtime/HostTemporaries.h): `size` bytes aligned to `alignment` (a
/// power of two), or null when the system has no memory for them.
void *allocateHostTemporary(size_t size, size_t alignment);
/// Frees, or keeps for reuse, a block of allocateHostTemporary (null: no
/// effect).
void releaseHostTemporary(void *block);

/// The host CPU's device table, registered as "cpu" like any plugin would be.
const te_device_ops &getHostDeviceOps();

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_HOSTDEVICE_H
