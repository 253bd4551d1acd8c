//===- AttentionMath.cpp - Which keys an attention query sees -------------===//

#include "te/Conversion/TECommon/AttentionMath.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

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

static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

Value mlir::te::emitDropoutRowState(OpBuilder &b, Location loc, Value seed,
                                    Value offset, Value batch, Value head,
                                    Value row, int64_t headsQ, int64_t rows,
                                    int64_t tokens) {
  Type i64 = b.getI64Type();
  auto c64 = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(v));
  };
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  auto add = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return arith::MulIOp::create(b, loc, x, y);
  };
  // x = seed + G (offset + 1 + rowCounter * tokens) + G token, mod 2^64.
  Value rowCounter =
      add(mul(add(mul(toI64(batch), c64(headsQ)), toI64(head)), c64(rows)),
          toI64(row));
  return add(seed, mul(c64(kGolden),
                       add(add(offset, c64(1)), mul(rowCounter, c64(tokens)))));
}

Value mlir::te::emitDropoutKeep(OpBuilder &b, Location loc, Value rowState,
                                Value token, double probability) {
  Type i64 = b.getI64Type();
  auto c64 = [&](uint64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(v));
  };
  Value x = arith::AddIOp::create(
      b, loc, rowState,
      arith::MulIOp::create(b, loc, c64(kGolden),
                            arith::IndexCastOp::create(b, loc, i64, token)));
  auto xorShift = [&](Value z, uint64_t shift) -> Value {
    return arith::XOrIOp::create(b, loc, z,
                                 arith::ShRUIOp::create(b, loc, z, c64(shift)));
  };
  Value z = arith::MulIOp::create(b, loc, xorShift(x, 30),
                                  c64(0xBF58476D1CE4E5B9ull));
  z = arith::MulIOp::create(b, loc, xorShift(z, 27),
                            c64(0x94D049BB133111EBull));
  z = xorShift(z, 31);
  // u = (z >> 40) 2^-24, exact in f32.
  Value top = arith::ShRUIOp::create(b, loc, z, c64(40));
  Value u = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), top),
      emitF32Constant(b, loc, std::ldexp(1.0, -24)));
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, u,
                               emitF32Constant(b, loc, probability));
}

Value mlir::te::emitDropoutFactor(OpBuilder &b, Location loc, Value seed,
                                  Value offset, Value batch, Value head,
                                  Value row, Value token, int64_t headsQ,
                                  int64_t rows, int64_t tokens,
                                  double probability) {
  Value keep =
      emitDropoutKeep(b, loc,
                      emitDropoutRowState(b, loc, seed, offset, batch, head,
                                          row, headsQ, rows, tokens),
                      token, probability);
  return arith::SelectOp::create(
      b, loc, keep, emitF32Constant(b, loc, 1.0 / (1.0 - probability)),
      emitF32Constant(b, loc, 0.0));
}
