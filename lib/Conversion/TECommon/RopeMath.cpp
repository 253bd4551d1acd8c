//===- RopeMath.cpp - TE's RoPE angles and positions as scalar ops --------===//

#include "te/Conversion/TECommon/RopeMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;

std::pair<Value, Value> mlir::te::emitRopeSinCos(OpBuilder &b, Location loc,
                                                 Value angle) {
  Type f64 = b.getF64Type();
  auto c = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f64, v));
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulFOp::create(b, loc, x, y);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddFOp::create(b, loc, x, y);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return arith::SubFOp::create(b, loc, x, y);
  };
  Value x = arith::ExtFOp::create(b, loc, f64, angle);
  Value k = math::RoundEvenOp::create(b, loc, mul(x, c(2.0 / M_PI)));
  // pi/2 = hi + lo with hi's low bits zero, so k * hi is exact for the
  // angles an f32 holds below 2^27.
  Value r = sub(sub(x, mul(k, c(1.5707963267341256))),
                mul(k, c(6.077100506506192e-11)));
  Value r2 = mul(r, r);
  auto horner = [&](ArrayRef<double> coefficients) {
    Value sum = c(coefficients.back());
    for (double coefficient : llvm::reverse(coefficients.drop_back()))
      sum = add(mul(sum, r2), c(coefficient));
    return sum;
  };
  // sin r = r (1 - r^2/3! + ...), cos r = 1 - r^2/2! + ...
  SmallVector<double> sinTerms, cosTerms;
  double factorial = 1.0;
  for (int n = 1; n <= 17; ++n) {
    factorial *= n;
    double term = ((n / 2) % 2 ? -1.0 : 1.0) / factorial;
    (n % 2 ? sinTerms : cosTerms).push_back(term);
  }
  cosTerms.insert(cosTerms.begin(), 1.0);
  Value sinR = mul(r, horner(sinTerms));
  Value cosR = horner(cosTerms);
  // The quadrant q = k mod 4, compared as a float (NaN angles give NaN r).
  Value q = sub(k, mul(c(4.0), math::FloorOp::create(b, loc, mul(k, c(0.25)))));
  auto is = [&](double v) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, q, c(v));
  };
  auto pick = [&](Value q1, Value q2, Value q3, Value q0) -> Value {
    Value v = arith::SelectOp::create(b, loc, is(3.0), q3, q0);
    v = arith::SelectOp::create(b, loc, is(2.0), q2, v);
    return arith::SelectOp::create(b, loc, is(1.0), q1, v);
  };
  Value negSin = arith::NegFOp::create(b, loc, sinR);
  Value negCos = arith::NegFOp::create(b, loc, cosR);
  Value sinX = pick(cosR, negSin, negCos, sinR);
  Value cosX = pick(negSin, negCos, sinR, cosR);
  Type f32 = b.getF32Type();
  return {arith::TruncFOp::create(b, loc, f32, sinX),
          arith::TruncFOp::create(b, loc, f32, cosX)};
}

Value mlir::te::emitRopePosition(OpBuilder &b, Location loc, Value sId,
                                 Value length, Value start, int64_t cpSize,
                                 int64_t cpRank) {
  auto i32 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return arith::SubIOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulIOp::create(b, loc, x, y);
  };
  Value p = add(sId, start);
  if (cpSize == 1)
    return p;
  Value half = arith::DivSIOp::create(b, loc, length, i32(2));
  Value first = mul(i32(cpRank), half);
  Value second =
      sub(sub(mul(length, i32(cpSize)), mul(i32(cpRank + 1), half)), half);
  Value inFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, sId, half);
  return add(p, arith::SelectOp::create(b, loc, inFirst, first, second));
}

Value mlir::te::emitRopeRotation(OpBuilder &b, Location loc, bool backward,
                                 Value x, Value partner, Value first, Value cos,
                                 Value sin) {
  Value rotated;
  if (!backward) {
    // r = -x[k] in the first half (even channels), x[k] otherwise.
    Value r = arith::SelectOp::create(
        b, loc, first, arith::NegFOp::create(b, loc, partner), partner);
    rotated = arith::MulFOp::create(b, loc, r, sin);
  } else {
    Value s = arith::SelectOp::create(b, loc, first, sin,
                                      arith::NegFOp::create(b, loc, sin));
    rotated = arith::MulFOp::create(b, loc, partner, s);
  }
  return arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x, cos),
                               rotated);
}
