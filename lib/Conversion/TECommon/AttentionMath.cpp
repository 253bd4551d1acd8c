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

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

/// i64 arithmetic modulo 2^64, as the dropout hash is defined.
struct I64Math {
  OpBuilder &b;
  Location loc;
  Value c(uint64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                        static_cast<int64_t>(v));
  }
  Value from(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  /// z ^ (z >> shift).
  Value xorShift(Value z, uint64_t shift) {
    return arith::XOrIOp::create(b, loc, z,
                                 arith::ShRUIOp::create(b, loc, z, c(shift)));
  }
};

} // namespace

Value mlir::te::emitDropoutRowState(OpBuilder &b, Location loc, Value seed,
                                    Value offset, Value batch, Value head,
                                    Value row, int64_t headsQ, int64_t rows,
                                    int64_t tokens) {
  I64Math m{b, loc};
  // x = seed + G (offset + 1 + rowCounter * tokens) + G token, mod 2^64.
  Value rowCounter = m.add(
      m.mul(m.add(m.mul(m.from(batch), m.c(headsQ)), m.from(head)), m.c(rows)),
      m.from(row));
  return m.add(seed,
               m.mul(m.c(kGolden), m.add(m.add(offset, m.c(1)),
                                         m.mul(rowCounter, m.c(tokens)))));
}

Value mlir::te::emitDropoutKeep(OpBuilder &b, Location loc, Value rowState,
                                Value token, double probability) {
  I64Math m{b, loc};
  Value x = m.add(rowState, m.mul(m.c(kGolden), m.from(token)));
  // splitmix64's finalizer.
  Value z = m.mul(m.xorShift(x, 30), m.c(0xBF58476D1CE4E5B9ull));
  z = m.mul(m.xorShift(z, 27), m.c(0x94D049BB133111EBull));
  z = m.xorShift(z, 31);
  // u = (z >> 40) 2^-24, exact in f32.
  Value top = arith::ShRUIOp::create(b, loc, z, m.c(40));
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
