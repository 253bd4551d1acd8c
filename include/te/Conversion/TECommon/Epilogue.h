//===- Epilogue.h - GEMM epilogue math as arith ops -------------*- C++ -*-===//
//
// What te.scaled_matmul's epilogue applies to each f32 output, shared by
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

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_EPILOGUE_H
