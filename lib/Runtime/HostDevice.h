//===- HostDevice.h - The built-in host CPU device --------------*- C++ -*-===//

#ifndef TE_LIB_RUNTIME_HOSTDEVICE_H
#define TE_LIB_RUNTIME_HOSTDEVICE_H

#include "te/Runtime/Device.h"

namespace te::runtime {

/// The host CPU's device table, registered as "cpu" like any plugin would be.
const te_device_ops &getHostDeviceOps();

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_HOSTDEVICE_H
