//===- DeviceMemory.h - Device memory for library workspaces ----*- C++ -*-===//
//
// How a library call's state (lib/Runtime/CUBLASLt.h, CUDNN.h) asks the
// device that owns it for workspace memory.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_DEVICEMEMORY_H
#define TE_LIB_RUNTIME_DEVICEMEMORY_H

#include "te/Runtime/Status.h"

#include <cstddef>

namespace te::runtime {

struct DeviceMemory {
  void *owner;
  te_status (*allocate)(void *owner, size_t bytes, void **pointer);
  void (*free)(void *owner, void *pointer);
};

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_DEVICEMEMORY_H
