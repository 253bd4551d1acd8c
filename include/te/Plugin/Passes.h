//===- Passes.h - Plugin dispatch passes ------------------------*- C++ -*-===//
#ifndef TE_PLUGIN_PASSES_H
#define TE_PLUGIN_PASSES_H

#include "te/Plugin/Dispatch.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "te/Plugin/Passes.h.inc"

} // namespace mlir::te

#endif // TE_PLUGIN_PASSES_H
