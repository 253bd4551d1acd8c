//===- AttentionMath.cpp - Which keys an attention query sees -------------===//

#include "te/Conversion/TECommon/AttentionMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::te;

VisibleKeys mlir::te::emitVisibleKeys(OpBuilder &b, Location loc,
                                      const AttentionVisibility &visibility,
                                      Value position, Value lenQ, Value lenKV,
                                      Value seqKV) {
  auto c = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto min = [&](Value x, Value y) -> Value {
    return arith::MinSIOp::create(b, loc, x, y);
  };
  auto max = [&](Value x, Value y) -> Value {
    return arith::MaxSIOp::create(b, loc, x, y);
  };
  Value diagonal =
      visibility.bottomRight
          ? add(position, arith::SubIOp::create(b, loc, lenKV, lenQ))
          : position;
  Value lo = c(0);
  Value hi = visibility.padding ? lenKV : seqKV;
  if (visibility.causal)
    hi = min(hi, add(diagonal, c(1)));
  if (visibility.windowLeft >= 0)
    lo = max(lo,
             arith::SubIOp::create(b, loc, diagonal, c(visibility.windowLeft)));
  if (visibility.windowRight >= 0)
    hi = min(hi, add(diagonal, c(visibility.windowRight + 1)));
  if (visibility.padding) { // query rows past the sequence see nothing
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         position, lenQ);
    hi = arith::SelectOp::create(b, loc, inside, hi, lo);
  }
  return {diagonal, lo, max(hi, lo)};
}
