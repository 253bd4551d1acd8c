//===- RopeMath.h - TE's RoPE angles and positions as scalar ops -*- C++
//-*-===//
//
// What te.rope and te.rope_backward compute per channel and per token, on
// scalars, shared by every target's lowering so that each computes the
// same values: sin and cos of an angle (in f64, rounded to f32), the freqs
// row of a token (start positions, context parallelism's dual chunks), and
// the rotation of one channel. Emits arith and math ops only.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_ROPEMATH_H
#define TE_CONVERSION_TECOMMON_ROPEMATH_H

#include "mlir/IR/Builders.h"

#include <utility>

namespace mlir::te {

/// sin(x) and cos(x) of an f32 angle, evaluated in f64 (Cody-Waite
/// reduction by pi/2, Taylor polynomials on [-pi/4, pi/4]) and rounded to
/// f32: as accurate as the GPU's sincosf, and the same on every target.
std::pair<Value, Value> emitRopeSinCos(OpBuilder &b, Location loc, Value angle);

/// The freqs row (i32) of the token at index `sId` (i32) of a sequence of
/// local length `length` (i32), with the sequence's start position
/// `start` (i32) and, for `cpSize` > 1, the context-parallel offset of
/// rank `cpRank` (TE's dual-chunk order).
Value emitRopePosition(OpBuilder &b, Location loc, Value sId, Value length,
                       Value start, int64_t cpSize, int64_t cpRank);

/// Channel j (< d2) of a rotated token in f32, from the channel's value
/// `x`, its partner's `partner` (channel k: j + d2/2 or j - d2/2; j + 1 or
/// j - 1 interleaved), `first` (j in the first half, or even), the cosine
/// of channel j and the sine of channel j (forward) or k (backward):
/// forward x c + r s with r = -partner for `first`, else partner; backward
/// x c + partner s (s negated unless `first`).
Value emitRopeRotation(OpBuilder &b, Location loc, bool backward, Value x,
                       Value partner, Value first, Value cos, Value sin);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_ROPEMATH_H
