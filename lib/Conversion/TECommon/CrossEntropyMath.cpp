//===- CrossEntropyMath.cpp - TE's cross-entropy formulas as scalar ops ---===//

#include "te/Conversion/TECommon/CrossEntropyMath.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::te;

SoftmaxStats mlir::te::emitCombinedSoftmaxStats(OpBuilder &b, Location loc,
                                                const SoftmaxStats &acc,
                                                const SoftmaxStats &next) {
  Value top = arith::MaximumFOp::create(b, loc, acc.m, next.m);
  auto rescaled = [&](Value d, Value m) -> Value {
    return arith::MulFOp::create(
        b, loc, d,
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, top)));
  };
  Value d = arith::AddFOp::create(b, loc, rescaled(acc.d, acc.m),
                                  rescaled(next.d, next.m));
  Value xy = arith::MaximumFOp::create(b, loc, acc.xy, next.xy);
  return {top, d, xy};
}

Value mlir::te::emitCrossEntropyRowLoss(OpBuilder &b, Location loc,
                                        const SoftmaxStats &stats,
                                        Value scaledSum, double smoothing) {
  Value logD = math::LogOp::create(b, loc, stats.d);
  Value value = arith::NegFOp::create(
      b, loc,
      arith::SubFOp::create(
          b, loc, arith::SubFOp::create(b, loc, stats.xy, stats.m), logD));
  if (smoothing <= 0)
    return value;
  Value lse = arith::AddFOp::create(b, loc, stats.m, logD);
  Value smooth = arith::AddFOp::create(
      b, loc, scaledSum,
      arith::MulFOp::create(b, loc, emitF32Constant(b, loc, smoothing), lse));
  return arith::AddFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, value,
                            emitF32Constant(b, loc, 1.0 - smoothing)),
      smooth);
}
