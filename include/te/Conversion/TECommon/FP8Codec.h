//===- FP8Codec.h - Bit-exact float conversions as arith ops ----*- C++ -*-===//
//
// The portable part of every te lowering: neither arith.truncf/extf nor LLVM
// can convert between f32 and the FP8 formats on the host, and a GPU
// without FP8 conversion instructions needs the same bit-exact routine, so
// the conversions are spelled out in integer arithmetic. Every helper works
// on scalars (the bodies of linalg ops, or a GPU thread's values) and emits
// only arith selects and bit operations, so the vectorizer can widen them
// and every target computes bit-identical results.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_FP8CODEC_H
#define TE_CONVERSION_TECOMMON_FP8CODEC_H

#include "mlir/IR/Builders.h"

namespace mlir::te {

/// An f32 constant (`value` rounded to f32), for the formulas here and in
/// every lowering.
Value emitF32Constant(OpBuilder &b, Location loc, double value);

/// True for the FP8 element types the codec handles (f8E4M3FN, f8E5M2).
bool isFP8Type(Type type);

/// f32 -> FP8: round-to-nearest-even; finite values beyond the format's
/// largest finite value and +-inf saturate to +-max; NaN becomes the
/// format's canonical NaN (0x7F). `f32Value` may be a scalar or a vector
/// (the result is then a vector of the FP8 type).
Value emitF32ToFP8(OpBuilder &b, Location loc, Value f32Value,
                   FloatType fp8Type);

/// FP8 -> f32, exact.
Value emitFP8ToF32(OpBuilder &b, Location loc, Value fp8Value);

/// Any supported float (f32, f16, bf16, FP8) -> f32, exact; f32, f16 and
/// bf16 also as vectors.
Value emitExtToF32(OpBuilder &b, Location loc, Value value);

/// f32 -> `type` (f32, f16, bf16 or FP8), round-to-nearest-even. NaN
/// becomes the positive quiet NaN with no payload (f16 0x7E00, bf16 0x7FC0,
/// what numpy's and ml_dtypes' default NaN converts to) on every target.
/// `f32Value` may be a vector (of which the result is then a vector of
/// `type`).
Value emitTruncFromF32(OpBuilder &b, Location loc, Value f32Value, Type type);

/// The i32 bit pattern of |x| (x an f32) for an amax reduction, 0 for NaN.
/// The unsigned integer order of these patterns is the order of the values,
/// so an unsigned max reduction (arith.maxui from 0, which vectorizes where
/// LLVM keeps a float max reduction scalar) followed by a bitcast computes
/// Transformer Engine's amax: TE reduces with fmaxf, which returns the other
/// operand when one is NaN, so NaN elements do not make amax NaN.
Value emitAmaxBits(OpBuilder &b, Location loc, Value f32Value);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_FP8CODEC_H
