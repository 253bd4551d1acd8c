//===- InitAllTargets.h - Every built-in target ------------------*- C++
//-*-===//
//
// The built-in targets, registered in the TargetRegistry before any plugin
// can claim their names or devices. Tools and the JIT call this instead of
// naming a backend.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_INITALLTARGETS_H
#define TE_TARGET_INITALLTARGETS_H

#include "te/Target/CPU/CPUTarget.h"
#include "te/Target/CUDA/CUDATarget.h"

namespace mlir::te {

/// Registers every built-in target. Safe to call more than once.
inline void registerBuiltinTargets() {
  registerCPUTarget();
  registerCUDATarget();
}

} // namespace mlir::te

#endif // TE_TARGET_INITALLTARGETS_H
