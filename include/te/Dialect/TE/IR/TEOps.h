//===- TEOps.h - Operations of the te dialect -------------------*- C++ -*-===//
#ifndef TE_DIALECT_TE_IR_TEOPS_H
#define TE_DIALECT_TE_IR_TEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <array>

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEDialect.h"

namespace mlir::te {

/// Runs an op's own checks before the result types are inferred and compared,
/// so users see the precise diagnostic of a bad configuration. The op
/// implements `LogicalResult verifyBeforeTypeInference()`.
template <typename ConcreteType>
class VerifyBeforeTypeInference
    : public OpTrait::TraitBase<ConcreteType, VerifyBeforeTypeInference> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return cast<ConcreteType>(op).verifyBeforeTypeInference();
  }
};

} // namespace mlir::te

// Interfaces te ops share (TEInterfaces.td), before the ops that have them.
#include "te/Dialect/TE/IR/TEInterfaces.h.inc"

#define GET_OP_CLASSES
#include "te/Dialect/TE/IR/TEOps.h.inc"

#endif // TE_DIALECT_TE_IR_TEOPS_H
