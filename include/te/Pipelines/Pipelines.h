//===- Pipelines.h - te's lowering pipelines --------------------*- C++ -*-===//
#ifndef TE_PIPELINES_PIPELINES_H
#define TE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::te {

/// te -> LLVM dialect for the host CPU: lowers te ops to linalg, bufferizes
/// (results become out-parameters), lowers to loops and on to the LLVM
/// dialect with the bare-pointer calling convention (static shapes only).
/// Registered in te-opt as `te-lower-cpu`.
void buildLowerToCPUPipeline(OpPassManager &pm);

/// te-lower-cpu without its first stage, te-dispatch: the remaining te ops
/// to linalg, then on to the LLVM dialect. What the built-in cpu target
/// runs after the dispatch, and what plugin targets for host-like devices
/// may reuse.
void buildCPUTargetPipeline(OpPassManager &pm);

/// te-decompose-reference followed by the stages of te-lower-cpu: the
/// reference kernels of differential checks (te-run --check). Registered
/// as `te-lower-cpu-reference`.
void buildLowerToCPUReferencePipeline(OpPassManager &pm);

/// Registers te's named pipelines with the pass registry.
void registerPipelines();

} // namespace mlir::te

#endif // TE_PIPELINES_PIPELINES_H
