//===- Runtime.h - The te-mlir runtime C API ----------------------*- C -*-===//
//
// Umbrella header of libTERuntime: devices, buffers, kernel modules,
// launches and collectives. The runtime has no MLIR or LLVM dependency;
// everything here is plain C.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_RUNTIME_H
#define TE_RUNTIME_RUNTIME_H

#include "te/Runtime/Buffer.h"
#include "te/Runtime/Collective.h"
#include "te/Runtime/DType.h"
#include "te/Runtime/Device.h"
#include "te/Runtime/HostTemporaries.h"
#include "te/Runtime/Module.h"
#include "te/Runtime/Plugin.h"
#include "te/Runtime/Status.h"
#include "te/Runtime/Stream.h"
#include "te/Runtime/Threads.h"

#endif // TE_RUNTIME_RUNTIME_H
