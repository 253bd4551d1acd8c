//===- InitAllPasses.h - Every pass te tools register -----------*- C++ -*-===//
#ifndef TE_INITALLPASSES_H
#define TE_INITALLPASSES_H

#include "te/Conversion/Passes.h"
#include "te/Dialect/TE/Transforms/Passes.h"
#include "te/Pipelines/Pipelines.h"
#include "te/Plugin/Passes.h"

#include "mlir/InitAllPasses.h"

namespace mlir::te {

/// Registers te's passes and pipelines and the upstream passes its
/// pipelines are made of, so each stage can be run on its own in te-opt.
inline void registerAllPasses() {
  mlir::registerAllPasses();
  registerTETransformsPasses();
  registerTEConversionPasses();
  registerTEPluginPasses();
  registerPipelines();
}

} // namespace mlir::te

#endif // TE_INITALLPASSES_H
