//===- ScalingMath.h - TE's FP8 scaling formulas as arith ops ---*- C++ -*-===//
//
// The scale computations of TE's recipes, on f32 scalars, shared by every
// target's lowering so that each computes bit-identical scales: current
// scaling (te.compute_scale and the fp32 block scales), the delayed-scaling
// update, and MXFP8's E8M0 block scales. Like the FP8 codec, every helper
// emits only arith (and math.absf) ops on scalars.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_SCALINGMATH_H
#define TE_CONVERSION_TECOMMON_SCALINGMATH_H

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/IR/Builders.h"

#include <utility>

namespace mlir::te {

/// Every block scaling mode is quantization of a 2-D matrix [rows, cols] in
/// blocks of [rows, cols] (partial blocks at the edges included): MXFP8
/// row-wise is [1, 32] over the tensor with its leading dims collapsed,
/// column-wise [32, 1]; the fp32 modes are 2-D, and their column-wise copy
/// is the row-wise quantization of the transpose.
struct BlockShape {
  int64_t rows, cols;
};

/// Whether `mode` is one of Float8BlockScaling's f32 block modes
/// (block_1x128, block_128x128), whose GEMMs apply the scales per 128-wide
/// K block.
inline bool isBlockScaling(ScalingMode mode) {
  return mode == ScalingMode::block_1x128 || mode == ScalingMode::block_128x128;
}

/// The block of `mode` (not per_tensor); `mxfp8Columnwise` picks MXFP8's
/// column-wise blocks.
BlockShape getScalingBlockShape(ScalingMode mode, bool mxfp8Columnwise);

/// Float8CurrentScaling's scale from an amax (te.compute_scale, and the
/// fp32 block scales): epsilon floor, fp8_max / amax, FLT_MAX on overflow,
/// optionally rounded down to a power of two, 1 for a zero or non-finite
/// amax.
Value emitScaleFromAmax(OpBuilder &b, Location loc, Value amax, double fp8Max,
                        float epsilon, bool pow2);

/// TE's delayed-scaling update of one scale (delayed_scaling.cu):
/// scaledMax / amax, the `previous` scale when amax is 0 or not finite,
/// FLT_MAX when the division overflows. `scaledMax` is fp8_max * 2^-margin.
Value emitDelayedScale(OpBuilder &b, Location loc, Value amax, Value previous,
                       double scaledMax);

/// MXFP8's E8M0 scale of a block: the smallest power of two 2^(e - 127) that
/// is >= amax / fp8_max (amax times TE's f32 reciprocal of fp8_max),
/// e clamped to 254; NaN gives e = 255. Returns (e as i32, 2^(127 - e)).
std::pair<Value, Value> emitE8M0Scale(OpBuilder &b, Location loc, Value amax,
                                      double fp8Max);

/// The value 2^(e - 127) of an E8M0 scale (NaN for e = 255), exact.
Value emitE8M0ToF32(OpBuilder &b, Location loc, Value code);

/// A quantization block's scale: the element stored in scale_inv (MXFP8's
/// E8M0 code, or the fp32 scale's inverse) and the multiplier applied to
/// the block's data before the FP8 cast.
struct BlockScale {
  Value scaleInv, multiplier;
};

/// The scale of a block of the block-scaling te.quantize `op` from the
/// block's f32 amax, with scale_inv elements of `scaleType`: MXFP8's E8M0
/// scale, or current scaling with the op's epsilon and pow2_scales
/// (emitScaleFromAmax) for the fp32 modes.
BlockScale emitBlockScale(OpBuilder &b, Location loc, QuantizeOp op, Value amax,
                          FloatType fp8Type, Type scaleType);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_SCALINGMATH_H
