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

/// Where the results of an op whose output may be quantized lie (te.norm,
/// te.activation, te.activation_backward): [out], [quantized...] (in
/// te.quantize's order for the mode and usage), [amax], then `trailing`
/// results of the op's own.
struct QuantizedOutputLayout {
  bool hasOutput = true;
  unsigned numQuantized = 0;
  bool hasAmax = false;
  unsigned trailing = 0;

  /// The layout of `numResults` results; the high-precision output is
  /// present unless a quantized output takes its place.
  static QuantizedOutputLayout of(std::optional<ScalingMode> mode,
                                  QuantizeUsage usage, bool amax,
                                  unsigned numResults, unsigned trailing);
  /// The number of results other than the high-precision output.
  unsigned sizeWithoutOutput() const {
    return numQuantized + (hasAmax ? 1 : 0) + trailing;
  }
  Value getOutput(ResultRange results) const {
    return hasOutput ? results[0] : Value();
  }
  ResultRange getQuantized(ResultRange results) const {
    return results.slice(hasOutput ? 1 : 0, numQuantized);
  }
  Value getAmax(ResultRange results) const {
    return hasAmax ? results[(hasOutput ? 1 : 0) + numQuantized] : Value();
  }
};

} // namespace mlir::te

// Interfaces te ops share (TEInterfaces.td), before the ops that have them.
#include "te/Dialect/TE/IR/TEInterfaces.h.inc"

#define GET_OP_CLASSES
#include "te/Dialect/TE/IR/TEOps.h.inc"

#endif // TE_DIALECT_TE_IR_TEOPS_H
