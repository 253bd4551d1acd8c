//===- RopeLowering.cpp - te.rope and te.rope_backward on the host --------===//
//
// TE's fused RoPE as the op's description states it, in three passes:
// cos and sin of every angle of freqs ([s2, d2], evaluated in f64 and
// rounded to f32, as accurate as the GPU's sincosf), the position of every
// token (sbhd/bshd: per batch and index; thd: per token, from cu_seqlens),
// then one elementwise pass over the output that reads each channel and
// its rotation partner. Every index is clamped into its tensor, so bad
// start positions or cu_seqlens (reported by te-insert-checks) never read
// out of bounds.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;

namespace {

using utils::IteratorType;

/// Index and i32 arithmetic in a pass's body.
struct Ints {
  OpBuilder &b;
  Location loc;

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivSIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  Value toI32(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
  }
  /// `v` clamped into [0, size).
  Value clamp(Value v, int64_t size) {
    Value low = arith::MaxSIOp::create(b, loc, v, i32(0));
    return arith::MinSIOp::create(b, loc, low, i32(size - 1));
  }
  /// Entry `i` (an index) of the i32 vector `vector`.
  Value at(Value tensor, ValueRange indices) {
    return tensor::ExtractOp::create(b, loc, tensor, indices);
  }
};

/// sin(x) and cos(x) of an f32 angle, in f64: Cody-Waite reduction by
/// pi/2 and Taylor polynomials on [-pi/4, pi/4], then rounded to f32.
std::pair<Value, Value> emitSinCos(OpBuilder &b, Location loc, Value angle) {
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

/// The cos and sin tables [s2, d2] of freqs [s2, 1, 1, d2].
std::pair<Value, Value> emitTables(OpBuilder &b, Location loc, Value freqs) {
  auto type = cast<RankedTensorType>(freqs.getType());
  int64_t rows = type.getDimSize(0), d2 = type.getDimSize(3);
  auto tableType = RankedTensorType::get({rows, d2}, b.getF32Type());
  Value table = tensor::CollapseShapeOp::create(
      b, loc, tableType, freqs, ArrayRef<ReassociationIndices>{{0, 1, 2}, {3}});
  AffineMap identity = b.getMultiDimIdentityMap(2);
  Value empty = tensor::EmptyOp::create(b, loc, {rows, d2}, b.getF32Type());
  auto tables = linalg::GenericOp::create(
      b, loc, TypeRange{tableType, tableType}, table, ValueRange{empty, empty},
      SmallVector<AffineMap>(3, identity),
      SmallVector<IteratorType>(2, IteratorType::parallel),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        std::pair<Value, Value> sinCos = emitSinCos(b, loc, args[0]);
        linalg::YieldOp::create(b, loc,
                                ValueRange{sinCos.second, sinCos.first});
      });
  return {tables.getResult(0), tables.getResult(1)};
}

/// The freqs row of the token at index `sId` of a sequence of local length
/// `length`, with the sequence's start position and the context-parallel
/// offset (TE's dual-chunk order).
Value emitPosition(Ints &i, Value sId, Value length, Value start,
                   int64_t cpSize, int64_t cpRank) {
  Value p = i.add(sId, start);
  if (cpSize == 1)
    return p;
  Value half = i.div(length, i.i32(2));
  Value first = i.mul(i.i32(cpRank), half);
  Value second =
      i.sub(i.sub(i.mul(length, i.i32(cpSize)), i.mul(i.i32(cpRank + 1), half)),
            half);
  return i.add(p, i.select(i.lt(sId, half), first, second));
}

template <typename OpT> struct RopeLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  static constexpr bool backward = std::is_same_v<OpT, RopeBackwardOp>;

  LogicalResult
  matchAndRewrite(OpT op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    auto freqsType = cast<RankedTensorType>(op.getFreqs().getType());
    int64_t s2 = freqsType.getDimSize(0), d2 = freqsType.getDimSize(3);
    int64_t rank = type.getRank();
    bool thd = op.isThd(), interleaved = op.getInterleaved();
    int64_t cpSize = op.getCpSizeAttr().getInt(),
            cpRank = op.getCpRankAttr().getInt();
    unsigned seqDim = op.getSequenceDim();
    int64_t sequences = op.getNumSequences();
    Value startPositions = adaptor.getStartPositions();
    Value cu = adaptor.getCuSeqlens();
    std::pair<Value, Value> tables = emitTables(b, loc, adaptor.getFreqs());
    Value cosTable = tables.first, sinTable = tables.second;

    // The freqs row of every token: [b, s] for sbhd/bshd, [t] for thd
    // (-1 for a token past the last sequence).
    Value positions;
    if (thd) {
      int64_t tokens = type.getDimSize(0);
      Value empty = tensor::EmptyOp::create(b, loc, {tokens}, b.getI32Type());
      positions =
          linalg::GenericOp::create(
              b, loc, empty.getType(), ValueRange{}, empty,
              b.getMultiDimIdentityMap(1), IteratorType::parallel,
              [&](OpBuilder &b, Location loc, ValueRange) {
                Ints i{b, loc};
                Value t = i.toI32(linalg::IndexOp::create(b, loc, 0));
                // The sequence holding t: the last with begin <= t.
                Value cp = i.i32(cpSize);
                auto search = scf::ForOp::create(
                    b, loc, i.index(0), i.index(sequences), i.index(1),
                    ValueRange{i.i32(-1), i.i32(0), i.i32(0)},
                    [&](OpBuilder &b, Location loc, Value seq,
                        ValueRange found) {
                      Ints j{b, loc};
                      Value begin = j.div(j.at(cu, seq), cp);
                      Value end = j.div(j.at(cu, j.add(seq, j.index(1))), cp);
                      Value inside = arith::AndIOp::create(
                          b, loc,
                          arith::XOrIOp::create(b, loc, j.lt(t, begin),
                                                arith::ConstantIntOp::create(
                                                    b, loc, b.getI1Type(), 1)),
                          j.lt(t, end));
                      scf::YieldOp::create(
                          b, loc,
                          ValueRange{
                              j.select(inside, j.toI32(seq), found[0]),
                              j.select(inside, begin, found[1]),
                              j.select(inside, j.sub(end, begin), found[2])});
                    });
                Value seq = search.getResult(0);
                Value sId = i.sub(t, search.getResult(1));
                Value start = i.i32(0);
                if (startPositions)
                  start = i.at(startPositions, i.toIndex(arith::MaxSIOp::create(
                                                   b, loc, seq, i.i32(0))));
                Value p = emitPosition(i, sId, search.getResult(2), start,
                                       cpSize, cpRank);
                Value outside = i.lt(seq, i.i32(0));
                linalg::YieldOp::create(
                    b, loc, i.select(outside, i.i32(-1), i.clamp(p, s2)));
              })
              .getResult(0);
    } else {
      int64_t batch = type.getDimSize(seqDim == 0 ? 1 : 0);
      int64_t s = type.getDimSize(seqDim);
      Value empty = tensor::EmptyOp::create(b, loc, {batch, s}, b.getI32Type());
      positions =
          linalg::GenericOp::create(
              b, loc, empty.getType(), ValueRange{}, empty,
              b.getMultiDimIdentityMap(2),
              SmallVector<IteratorType>(2, IteratorType::parallel),
              [&](OpBuilder &b, Location loc, ValueRange) {
                Ints i{b, loc};
                Value batchIndex = linalg::IndexOp::create(b, loc, 0);
                Value sId = i.toI32(linalg::IndexOp::create(b, loc, 1));
                Value start = startPositions ? i.at(startPositions, batchIndex)
                                             : i.i32(0);
                Value p = emitPosition(i, sId, i.i32(s), start, cpSize, cpRank);
                linalg::YieldOp::create(b, loc, i.clamp(p, s2));
              })
              .getResult(0);
    }

    // The rotation, channel by channel.
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    Value result =
        linalg::GenericOp::create(
            b, loc, type, ValueRange{}, empty, b.getMultiDimIdentityMap(rank),
            SmallVector<IteratorType>(rank, IteratorType::parallel),
            [&](OpBuilder &b, Location loc, ValueRange) {
              Ints i{b, loc};
              SmallVector<Value> indices;
              for (int64_t dim = 0; dim < rank; ++dim)
                indices.push_back(linalg::IndexOp::create(b, loc, dim));
              Value j = indices.back();
              Value p =
                  thd ? i.at(positions, indices[0])
                      : i.at(positions, ValueRange{indices[seqDim == 0 ? 1 : 0],
                                                   indices[seqDim]});
              Value x = tensor::ExtractOp::create(b, loc, input, indices);
              Value rotates = i.lt(i.toI32(j), i.i32(d2));
              if (thd)
                rotates = arith::AndIOp::create(
                    b, loc, rotates,
                    arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, p,
                                          i.i32(0)));
              auto ifOp = scf::IfOp::create(
                  b, loc, rotates,
                  [&](OpBuilder &b, Location loc) {
                    Value y = emitRotated(b, loc, input, indices, x, p,
                                          cosTable, sinTable, d2, interleaved);
                    scf::YieldOp::create(
                        b, loc, emitTruncFromF32(b, loc, y, x.getType()));
                  },
                  // The channels that do not rotate: copied, bits and all.
                  [&](OpBuilder &b, Location loc) {
                    scf::YieldOp::create(b, loc, x);
                  });
              linalg::YieldOp::create(b, loc, ifOp.getResult(0));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }

  /// Channel j (< d2) of the rotated token, in f32: forward x[j] c[j] +
  /// r[j] s[j]; backward g[j] c[j] + g[k] s[k] sign (the description's
  /// formulas).
  static Value emitRotated(OpBuilder &b, Location loc, Value input,
                           ArrayRef<Value> indices, Value x, Value p,
                           Value cosTable, Value sinTable, int64_t d2,
                           bool interleaved) {
    Ints i{b, loc};
    Value j = indices.back();
    Value row = i.toIndex(p);
    // The partner channel k and whether j is in the first half / even.
    Value first, k;
    if (interleaved) {
      Value odd = arith::RemUIOp::create(b, loc, j, i.index(2));
      first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, odd,
                                    i.index(0));
      k = i.select(first, i.add(j, i.index(1)), i.sub(j, i.index(1)));
    } else {
      first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j,
                                    i.index(d2 / 2));
      k = i.select(first, i.add(j, i.index(d2 / 2)), i.sub(j, i.index(d2 / 2)));
    }
    SmallVector<Value> partnerIndices(indices);
    partnerIndices.back() = k;
    Value v = emitExtToF32(b, loc, x);
    Value partner = emitExtToF32(
        b, loc, tensor::ExtractOp::create(b, loc, input, partnerIndices));
    Value c = tensor::ExtractOp::create(b, loc, cosTable, ValueRange{row, j});
    Value rotated;
    if (!backward) {
      // r = -x[k] in the first half (even channels), x[k] otherwise.
      Value r = arith::SelectOp::create(
          b, loc, first, arith::NegFOp::create(b, loc, partner), partner);
      Value s = tensor::ExtractOp::create(b, loc, sinTable, ValueRange{row, j});
      rotated = arith::MulFOp::create(b, loc, r, s);
    } else {
      Value s = tensor::ExtractOp::create(b, loc, sinTable, ValueRange{row, k});
      s = arith::SelectOp::create(b, loc, first, s,
                                  arith::NegFOp::create(b, loc, s));
      rotated = arith::MulFOp::create(b, loc, partner, s);
    }
    return arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, v, c),
                                 rotated);
  }
};

} // namespace

void mlir::te::populateRopeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<RopeLowering<RopeOp>, RopeLowering<RopeBackwardOp>>(
      patterns.getContext());
}
