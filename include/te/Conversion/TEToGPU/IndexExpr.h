//===- IndexExpr.h - Index arithmetic that builds its IR --------*- C++ -*-===//
//
// An index value whose C++ arithmetic emits arith ops, so that the plain
// index formulas of MMALayout.h (templated on the index type) build the IR
// that computes them: the unit tests instantiate the same formulas with
// integers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TETOGPU_INDEXEXPR_H
#define TE_CONVERSION_TETOGPU_INDEXEXPR_H

#include "mlir/IR/Builders.h"

#include <cstdint>

namespace mlir::te {

/// Every operation creates its op with `b` at the builder's insertion
/// point; the left operand's builder is the one used.
struct IndexExpr {
  OpBuilder *b;
  Location loc;
  Value value;

  IndexExpr operator+(const IndexExpr &other) const;
  IndexExpr operator+(int64_t constant) const;
  IndexExpr operator*(int64_t constant) const;
  IndexExpr operator/(int64_t constant) const;
  IndexExpr operator%(int64_t constant) const;
};

} // namespace mlir::te

#endif // TE_CONVERSION_TETOGPU_INDEXEXPR_H
