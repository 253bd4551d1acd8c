//===- InitAllPasses.h - Every pass te tools register -----------*- C++ -*-===//
#ifndef TE_INITALLPASSES_H
#define TE_INITALLPASSES_H

#include "mlir/Transforms/Passes.h"

namespace mlir::te {

/// Registers te's passes and the upstream passes te pipelines use
/// (canonicalize, cse, inline, ...).
inline void registerAllPasses() { registerTransformsPasses(); }

} // namespace mlir::te

#endif // TE_INITALLPASSES_H
