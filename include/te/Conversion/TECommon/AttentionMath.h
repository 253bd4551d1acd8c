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

/// Dropout's keep factor of element (batch, head, row, token) as an f32: 0
/// for a dropped element, 1 / (1 - probability) for a kept one, by te's
/// documented counter-based hash (TEDialect.md): counter = ((batch * headsQ
/// + head) * rows + row) * tokens + token, x = seed + 0x9E3779B97F4A7C15 *
/// (offset + counter + 1) (mod 2^64), splitmix64's finalizer on x, u = its
/// top 24 bits * 2^-24; kept when u >= probability. `seed` and `offset`
/// are i64 values (rng_state), the others index values; for thd, batch is
/// 0 and row and token are token indices (rows and tokens: t_q and t_kv).
Value emitDropoutFactor(OpBuilder &b, Location loc, Value seed, Value offset,
                        Value batch, Value head, Value row, Value token,
                        int64_t headsQ, int64_t rows, int64_t tokens,
                        double probability);

/// The same hash in two steps, for kernels that walk a row's keys: the
/// row's part of x (an i64: x of token 0; x of `token` is x0 + 0x9E37...
/// * token, mod 2^64), then whether the element of `token` is kept (i1).
Value emitDropoutRowState(OpBuilder &b, Location loc, Value seed, Value offset,
                          Value batch, Value head, Value row, int64_t headsQ,
                          int64_t rows, int64_t tokens);
Value emitDropoutKeep(OpBuilder &b, Location loc, Value rowState, Value token,
                      double probability);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_ATTENTIONMATH_H
