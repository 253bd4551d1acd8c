//===- AttentionMath.h - Which keys an attention query sees -----*- C++ -*-===//
//
// The visibility rule of te.attention and its backward (masks, sliding
// windows and the diagonal they are measured from), as index arithmetic
// shared by every target's lowering, so that the CPU's loops and the GPU's
// kernels mask exactly the same keys. Emits only arith ops on index values.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_ATTENTIONMATH_H
#define TE_CONVERSION_TECOMMON_ATTENTIONMATH_H

#include "te/Dialect/TE/IR/TEAttrs.h"

#include "mlir/IR/Builders.h"

namespace mlir::te {

/// What decides the keys a query sees, from the op's attributes.
struct AttentionVisibility {
  /// Whether the mask bounds keys by the sequence lengths (the padding
  /// masks; thd always).
  bool padding;
  bool causal;
  /// Whether the diagonal is aligned bottom-right (len_kv - len_q) rather
  /// than top-left (the op's isBottomRightDiagonal()).
  bool bottomRight;
  /// The window bounds; -1 is unbounded.
  int64_t windowLeft, windowRight;
};

/// The keys query `position` (of its sequence, an index) sees: positions
/// [lo, hi) of the sequence's keys, hi >= lo, and `diagonal`, the key
/// position on the query's diagonal, from which windows and ALiBi distances
/// are measured. `lenQ` and `lenKV` are the sequence's lengths and
/// `seqKV` the key tensor's extent (all index values): keys at or past
/// lenKV are visible only without padding, and with padding a query at or
/// past lenQ sees nothing.
struct VisibleKeys {
  Value diagonal, lo, hi;
};
VisibleKeys emitVisibleKeys(OpBuilder &b, Location loc,
                            const AttentionVisibility &visibility,
                            Value position, Value lenQ, Value lenKV,
                            Value seqKV);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_ATTENTIONMATH_H
