//===- CrossEntropyMath.h - TE's cross-entropy formulas as scalar ops -----===//
//
// What te.cross_entropy computes per row from a row's softmax statistics,
// on f32 scalars, shared by every target's lowering so that each computes
// the same values: the ranks' statistics combined (the vocabulary split
// over a group) and the row's loss. Emits arith and math ops only.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_CROSSENTROPYMATH_H
#define TE_CONVERSION_TECOMMON_CROSSENTROPYMATH_H

#include "mlir/IR/Builders.h"

namespace mlir::te {

/// A row's softmax statistics over some of its columns (f32): the max m,
/// the sum d of exp(x - m) and the target's logit x_y (-inf where the
/// columns do not hold the target).
struct SoftmaxStats {
  Value m, d, xy;
};

/// `acc` and the next rank's `next` as the statistics of both ranks'
/// columns, as TE's cross_entropy_kernel combines them (in rank order from
/// rank 0): d rescaled to the larger max, x_y by max.
SoftmaxStats emitCombinedSoftmaxStats(OpBuilder &b, Location loc,
                                      const SoftmaxStats &acc,
                                      const SoftmaxStats &next);

/// A row's loss from its statistics: -(x_y - m - log d), and with
/// `smoothing` > 0 TE's smoothed form (1 - smoothing) loss + scaledSum +
/// smoothing (m + log d), `scaledSum` the sum of -eps x over the row's
/// columns.
Value emitCrossEntropyRowLoss(OpBuilder &b, Location loc,
                              const SoftmaxStats &stats, Value scaledSum,
                              double smoothing);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_CROSSENTROPYMATH_H
