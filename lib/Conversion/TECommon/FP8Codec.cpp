//===- FP8Codec.cpp - Bit-exact float conversions as arith ops ------------===//

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/bit.h"

#include <cassert>
#include <cmath>

using namespace mlir;
using namespace mlir::te;

namespace {

/// The parameters of an FP8 format with IEEE-like layout.
struct FP8Format {
  unsigned mantissaBits;
  int bias;
  uint32_t maxCode; // largest finite value, positive
  bool hasInfinity; // E5M2 has inf (exponent all ones, mantissa 0)
};

FP8Format getFormat(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return {3, 7, 0x7E, false};
  assert(isa<Float8E5M2Type>(type) && "unsupported FP8 type");
  return {2, 15, 0x7B, true};
}

constexpr uint32_t kCanonicalNaN = 0x7F;

Value i32Const(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), value);
}

} // namespace

Value mlir::te::emitF32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(static_cast<float>(value)));
}

bool mlir::te::isFP8Type(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

Value mlir::te::emitF32ToFP8(OpBuilder &b, Location loc, Value x,
                             FloatType fp8Type) {
  FP8Format fmt = getFormat(fp8Type);
  unsigned shift = 23 - fmt.mantissaBits;
  // Scalars or vectors: every type and constant has x's shape.
  auto shaped = [&](Type element) -> Type {
    if (auto vector = dyn_cast<VectorType>(x.getType()))
      return vector.clone(element);
    return element;
  };
  Type i32 = shaped(b.getI32Type());
  auto intConst = [&](int64_t value) -> Value {
    if (auto vector = dyn_cast<VectorType>(i32))
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(vector, b.getI32IntegerAttr(value)));
    return i32Const(b, loc, value);
  };
  auto floatConst = [&](double value) -> Value {
    if (auto vector = dyn_cast<VectorType>(x.getType()))
      return arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(vector,
                                 b.getF32FloatAttr(static_cast<float>(value))));
    return emitF32Constant(b, loc, value);
  };

  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value sign = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, intConst(24)),
      intConst(0x80));
  Value abs = math::AbsFOp::create(b, loc, x);
  Value absBits = arith::BitcastOp::create(b, loc, i32, abs);

  // Normal range: round the f32 mantissa to the format's width (ties to
  // even), then rebias the exponent, as one signed i32 expression: the
  // rebiasing is folded into the rounding bias (a multiple of 2^shift, so
  // it commutes with the shift), and magnitudes below the normal range
  // come out negative (every partial sum stays within i32, NaN's too). A
  // carry into the exponent is correct.
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, absBits, intConst(shift)),
      intConst(1));
  int64_t roundingBias =
      ((int64_t(1) << (shift - 1)) - 1) - (int64_t(127 - fmt.bias) << 23);
  Value normalCode = arith::ShRSIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, absBits, intConst(roundingBias)), lsb),
      intConst(shift));

  // Subnormal range: the magnitude in units of the smallest subnormal,
  // rounded to an integer (ties to even) by the f32 addition itself: the
  // sum with 2^23 units has exactly a unit as its last place. Capped at the
  // smallest normal (code 2^mantissaBits), this code is the normal one's
  // lower bound there and at least it below (a normal code of a smaller
  // magnitude is at most 2^mantissaBits, or negative), so the larger of
  // the two is the code. Checked against the direct form for every f32.
  double smallestNormal = std::ldexp(1.0, 1 - fmt.bias);
  double magic = std::ldexp(1.0, 1 - fmt.bias - int(fmt.mantissaBits) + 23);
  // (A compare and select: x86's one vminps, where minnumf needs a NaN
  // fix-up; NaN's code is chosen below.)
  Value limit = floatConst(smallestNormal);
  Value capped = arith::SelectOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, abs, limit), abs,
      limit);
  Value sum = arith::AddFOp::create(b, loc, capped, floatConst(magic));
  Value subnormalCode = arith::SubIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, sum),
      intConst(llvm::bit_cast<uint32_t>(static_cast<float>(magic))));
  Value code = arith::MaxSIOp::create(b, loc, normalCode, subnormalCode);
  // Saturation to the largest finite value (infinity included), as TE's
  // casts do.
  code = arith::MinSIOp::create(b, loc, code, intConst(fmt.maxCode));
  code = arith::OrIOp::create(b, loc, code, sign);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  code = arith::SelectOp::create(b, loc, isNaN, intConst(kCanonicalNaN), code);
  Value byte = arith::TruncIOp::create(b, loc, shaped(b.getI8Type()), code);
  return arith::BitcastOp::create(b, loc, shaped(fp8Type), byte);
}

Value mlir::te::emitFP8ToF32(OpBuilder &b, Location loc, Value value) {
  FP8Format fmt = getFormat(value.getType());
  unsigned exponentBits = 7 - fmt.mantissaBits;
  Type i32 = b.getI32Type();
  Type f32 = b.getF32Type();

  Value byte = arith::BitcastOp::create(b, loc, b.getI8Type(), value);
  Value code = arith::ExtUIOp::create(b, loc, i32, byte);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, code, i32Const(b, loc, 0x80)),
      i32Const(b, loc, 24));
  Value exponent = arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, code, i32Const(b, loc, fmt.mantissaBits)),
      i32Const(b, loc, (1 << exponentBits) - 1));
  Value mantissa = arith::AndIOp::create(
      b, loc, code, i32Const(b, loc, (1 << fmt.mantissaBits) - 1));

  // Normal: rebias the exponent, widen the mantissa.
  Value normalBits = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, exponent,
                                i32Const(b, loc, 127 - fmt.bias)),
          i32Const(b, loc, 23)),
      arith::ShLIOp::create(b, loc, mantissa,
                            i32Const(b, loc, 23 - fmt.mantissaBits)));
  // Subnormal (and zero): mantissa * 2^(1 - bias - mantissaBits), exact.
  Value subnormal = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, f32, mantissa),
      emitF32Constant(b, loc,
                      std::ldexp(1.0, 1 - fmt.bias - int(fmt.mantissaBits))));
  Value subnormalBits = arith::BitcastOp::create(b, loc, i32, subnormal);

  Value isSubnormal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            exponent, i32Const(b, loc, 0));
  Value bits =
      arith::SelectOp::create(b, loc, isSubnormal, subnormalBits, normalBits);

  Value magnitude = arith::AndIOp::create(b, loc, code, i32Const(b, loc, 0x7F));
  if (fmt.hasInfinity) {
    Value allOnes =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exponent,
                              i32Const(b, loc, (1 << exponentBits) - 1));
    Value zeroMantissa = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               mantissa, i32Const(b, loc, 0));
    Value isInf = arith::AndIOp::create(b, loc, allOnes, zeroMantissa);
    bits = arith::SelectOp::create(b, loc, isInf, i32Const(b, loc, 0x7F800000),
                                   bits);
    Value isNaN = arith::AndIOp::create(
        b, loc, allOnes,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, mantissa,
                              i32Const(b, loc, 0)));
    bits = arith::SelectOp::create(b, loc, isNaN, i32Const(b, loc, 0x7FC00000),
                                   bits);
  } else {
    Value isNaN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        magnitude, i32Const(b, loc, 0x7F));
    bits = arith::SelectOp::create(b, loc, isNaN, i32Const(b, loc, 0x7FC00000),
                                   bits);
  }
  bits = arith::OrIOp::create(b, loc, bits, sign);
  return arith::BitcastOp::create(b, loc, f32, bits);
}

/// `element` in the shape of `like`: itself for a scalar, a vector of it
/// for a vector.
static Type likeShape(Type like, Type element) {
  if (auto vector = dyn_cast<VectorType>(like))
    return vector.clone(element);
  return element;
}

Value mlir::te::emitExtToF32(OpBuilder &b, Location loc, Value value) {
  Type type = getElementTypeOrSelf(value.getType());
  if (type.isF32())
    return value;
  if (isFP8Type(type)) {
    assert(!isa<VectorType>(value.getType()) && "FP8 vectors are not decoded");
    return emitFP8ToF32(b, loc, value);
  }
  return arith::ExtFOp::create(
      b, loc, likeShape(value.getType(), b.getF32Type()), value);
}

Value mlir::te::emitTruncFromF32(OpBuilder &b, Location loc, Value value,
                                 Type type) {
  if (type.isF32())
    return value;
  if (isFP8Type(type))
    return emitF32ToFP8(b, loc, value, cast<FloatType>(type));
  Value narrow =
      arith::TruncFOp::create(b, loc, likeShape(value.getType(), type), value);
  // Conversion instructions disagree on the NaN they produce (PTX's cvt
  // gives 0x7FFF, MLIR's bf16 expansion 0x7FC0, x86 keeps the sign), so
  // NaN is chosen here, the same on every target.
  auto floatType = cast<FloatType>(type);
  unsigned width = floatType.getWidth();
  APInt quietNaN =
      APInt::getBitsSet(width, floatType.getFPMantissaWidth() - 2, width - 1);
  FloatAttr nanAttr = b.getFloatAttr(
      floatType, APFloat(floatType.getFloatSemantics(), quietNaN));
  TypedAttr nanValue = nanAttr;
  if (auto vector = dyn_cast<VectorType>(narrow.getType()))
    nanValue = DenseElementsAttr::get(vector, Attribute(nanAttr));
  Value nan = arith::ConstantOp::create(b, loc, nanValue);
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
  return arith::SelectOp::create(b, loc, isNaN, nan, narrow);
}

Value mlir::te::emitAmaxBits(OpBuilder &b, Location loc, Value f32Value) {
  Value magnitude = arith::AndIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, b.getI32Type(), f32Value),
      i32Const(b, loc, 0x7FFFFFFF));
  // NaN is tested on the float (unordered with itself), not as
  // `magnitude > 0x7F800000` on the bits: the same predicate, but LLVM 22's
  // loop-idiom recognizer (HashRecognize) does not terminate on the integer
  // form of this select inside a small reduction loop.
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                      f32Value, f32Value);
  return arith::SelectOp::create(b, loc, isNaN, i32Const(b, loc, 0), magnitude);
}
