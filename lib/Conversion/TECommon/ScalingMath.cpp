//===- ScalingMath.cpp - TE's FP8 scaling formulas as arith ops -----------===//

#include "te/Conversion/TECommon/ScalingMath.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cfloat>
#include <cmath>

using namespace mlir;
using namespace mlir::te;

namespace {

/// `cond ? a : b` on f32, for readability of the scaling formulas.
Value select(OpBuilder &b, Location loc, Value cond, Value a, Value c) {
  return arith::SelectOp::create(b, loc, cond, a, c);
}

Value isInfOrNaN(OpBuilder &b, Location loc, Value x) {
  Value magnitude = math::AbsFOp::create(b, loc, x);
  // UGE: true for +inf and for NaN (unordered).
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGE, magnitude,
                               emitF32Constant(b, loc, INFINITY));
}

Value isInf(OpBuilder &b, Location loc, Value x) {
  Value magnitude = math::AbsFOp::create(b, loc, x);
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, magnitude,
                               emitF32Constant(b, loc, INFINITY));
}

} // namespace

BlockShape mlir::te::getScalingBlockShape(ScalingMode mode,
                                          bool mxfp8Columnwise) {
  switch (mode) {
  case ScalingMode::mxfp8_1x32:
    return mxfp8Columnwise ? BlockShape{32, 1} : BlockShape{1, 32};
  case ScalingMode::block_1x128:
    return {1, 128};
  case ScalingMode::block_128x128:
    return {128, 128};
  case ScalingMode::per_tensor:
    break;
  }
  llvm_unreachable("not a block mode");
}

Value mlir::te::emitScaleFromAmax(OpBuilder &b, Location loc, Value amax,
                                  double fp8Max, float epsilon, bool pow2) {
  Value eps = emitF32Constant(b, loc, epsilon);
  Value below =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, amax, eps);
  Value a = select(b, loc, below, eps, amax);
  Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, a,
                                       emitF32Constant(b, loc, 0.0));
  Value keepOne = arith::OrIOp::create(b, loc, isZero, isInfOrNaN(b, loc, a));
  Value scale =
      arith::DivFOp::create(b, loc, emitF32Constant(b, loc, fp8Max), a);
  scale = select(b, loc, isInf(b, loc, scale), emitF32Constant(b, loc, FLT_MAX),
                 scale);
  if (pow2) {
    // Clearing the mantissa rounds down to a power of two.
    Type i32 = b.getI32Type();
    Value bits = arith::BitcastOp::create(b, loc, i32, scale);
    Value mask = arith::ConstantIntOp::create(b, loc, i32, int64_t(0xFF800000));
    scale = arith::BitcastOp::create(b, loc, b.getF32Type(),
                                     arith::AndIOp::create(b, loc, bits, mask));
  }
  return select(b, loc, keepOne, emitF32Constant(b, loc, 1.0), scale);
}

Value mlir::te::emitDelayedScale(OpBuilder &b, Location loc, Value a,
                                 Value previous, double scaledMax) {
  Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a,
                                         emitF32Constant(b, loc, 0.0));
  Value usable = arith::AndIOp::create(
      b, loc, positive,
      arith::XOrIOp::create(
          b, loc, isInfOrNaN(b, loc, a),
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
  Value scale =
      arith::DivFOp::create(b, loc, emitF32Constant(b, loc, scaledMax), a);
  scale = select(b, loc, usable, scale, previous);
  scale = select(b, loc, isInf(b, loc, scale), emitF32Constant(b, loc, FLT_MAX),
                 scale);
  return scale;
}

std::pair<Value, Value> mlir::te::emitE8M0Scale(OpBuilder &b, Location loc,
                                                Value amax, double fp8Max) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  Value ratio = arith::MulFOp::create(
      b, loc, amax, emitF32Constant(b, loc, static_cast<float>(1.0 / fp8Max)));
  Value bits = arith::BitcastOp::create(b, loc, i32, ratio);
  Value exponent = arith::ShRUIOp::create(b, loc, bits, c(23));
  Value mantissa = arith::AndIOp::create(b, loc, bits, c(0x7FFFFF));
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  };
  // Round up unless the ratio is a power of two, or a subnormal at most
  // 2^-127 (which e = 0 already covers).
  Value inexact = cmp(arith::CmpIPredicate::ne, mantissa, c(0));
  Value subnormalCovered = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, exponent, c(0)),
      cmp(arith::CmpIPredicate::ule, mantissa, c(0x400000)));
  Value roundUp = arith::AndIOp::create(
      b, loc, inexact,
      arith::XOrIOp::create(
          b, loc, subnormalCovered,
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
  Value e = arith::AddIOp::create(b, loc, exponent,
                                  arith::ExtUIOp::create(b, loc, i32, roundUp));
  e = arith::MinUIOp::create(b, loc, e, c(254));
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, ratio, ratio);
  e = arith::SelectOp::create(b, loc, isNaN, c(255), e);
  // 2^(127 - e): a normal f32 for e <= 253, the subnormal 2^-127 for 254.
  Value normal = arith::ShLIOp::create(
      b, loc, arith::SubIOp::create(b, loc, c(254), e), c(23));
  Value multiplierBits = arith::SelectOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, e, c(254)), c(0x00400000), normal);
  multiplierBits =
      arith::SelectOp::create(b, loc, isNaN, c(0x7FC00000), multiplierBits);
  return {e, arith::BitcastOp::create(b, loc, b.getF32Type(), multiplierBits)};
}

Value mlir::te::emitE8M0ToF32(OpBuilder &b, Location loc, Value code) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  Value e = arith::ExtUIOp::create(
      b, loc, i32, arith::BitcastOp::create(b, loc, b.getI8Type(), code));
  Value bits = arith::ShLIOp::create(b, loc, e, c(23));
  bits = arith::SelectOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, e, c(0)),
      c(0x00400000), bits);
  bits = arith::SelectOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, e, c(255)),
      c(0x7FC00000), bits);
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

BlockScale mlir::te::emitBlockScale(OpBuilder &b, Location loc, QuantizeOp op,
                                    Value amax, FloatType fp8Type,
                                    Type scaleType) {
  double fp8Max = *getFP8Max(fp8Type);
  if (op.getMode() == ScalingMode::mxfp8_1x32) {
    auto [e, multiplier] = emitE8M0Scale(b, loc, amax, fp8Max);
    Value code = arith::BitcastOp::create(
        b, loc, scaleType, arith::TruncIOp::create(b, loc, b.getI8Type(), e));
    return {code, multiplier};
  }
  Value scale =
      emitScaleFromAmax(b, loc, amax, fp8Max, op.getEpsilon().convertToFloat(),
                        op.getPow2Scales());
  return {arith::DivFOp::create(b, loc, emitF32Constant(b, loc, 1.0), scale),
          scale};
}
