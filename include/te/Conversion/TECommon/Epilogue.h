//===- Epilogue.h - GEMM epilogue math as arith ops -------------*- C++ -*-===//
//
// What te.scaled_matmul's epilogues apply to each f32 output, shared by
// every target's lowering.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_EPILOGUE_H
#define TE_CONVERSION_TECOMMON_EPILOGUE_H

#include "mlir/IR/Builders.h"

namespace mlir::te {

/// GELU with the tanh approximation (cuBLASLt's and TE's epilogue), with
/// tanh(y) = 1 - 2 / (exp(2y) + 1), which saturates correctly at both
/// ends. `x` is an f32 scalar.
Value emitGelu(OpBuilder &b, Location loc, Value x);

/// The derivative of emitGelu's GELU at the f32 scalar `x` (TE's dgelu in
/// common/util/math.h, cuBLASLt's DGELU epilogue):
/// 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2) with
/// t = tanh(sqrt(2 / pi) (x + 0.044715 x^3)).
Value emitGeluGrad(OpBuilder &b, Location loc, Value x);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_EPILOGUE_H
