//===- Passes.h - Transformations of te modules -----------------*- C++ -*-===//
#ifndef TE_DIALECT_TE_TRANSFORMS_PASSES_H
#define TE_DIALECT_TE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::te {

#define GEN_PASS_DECL
#include "te/Dialect/TE/Transforms/Passes.h.inc"

/// The module attribute te-materialize-checks writes: a dictionary from
/// each function with checks to the array of its check messages.
constexpr llvm::StringLiteral kKernelChecksAttrName = "te.kernel_checks";

/// The type of a kernel's status result (see te-materialize-checks).
RankedTensorType getKernelStatusType(MLIRContext *ctx);

#define GEN_PASS_REGISTRATION
#include "te/Dialect/TE/Transforms/Passes.h.inc"

} // namespace mlir::te

#endif // TE_DIALECT_TE_TRANSFORMS_PASSES_H
