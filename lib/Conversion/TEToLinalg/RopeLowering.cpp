//===- RopeLowering.cpp - te.rope and te.rope_backward on the host --------===//
//
// TE's fused RoPE as the op's description states it, in three passes:
// cos and sin of every angle of freqs ([s2, d2], RopeMath.h), the position
// of every token (sbhd/bshd: per batch and index; thd: per token, from
// cu_seqlens), then one elementwise pass over the output that reads each
// channel and its rotation partner. Every index is clamped into its tensor, so
// bad start positions or cu_seqlens (reported by te-insert-checks) never read
// out of bounds.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/RopeMath.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

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
        std::pair<Value, Value> sinCos = emitRopeSinCos(b, loc, args[0]);
        linalg::YieldOp::create(b, loc,
                                ValueRange{sinCos.second, sinCos.first});
      });
  return {tables.getResult(0), tables.getResult(1)};
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
                Value p = emitRopePosition(b, loc, sId, search.getResult(2),
                                           start, cpSize, cpRank);
                Value outside = i.lt(seq, i.i32(0));
                linalg::YieldOp::create(
                    b, loc, i.select(outside, i.i32(-1), i.clamp(p, s2)));
              })
              .getResult(0);
    } else {
      int64_t batch = type.getDimSize(seqDim == 0 ? 1 : 0);
      int64_t s = type.getDimSize(seqDim);
      Value empty = tensor::EmptyOp::create(b, loc, {batch, s}, b.getI32Type());
      positions = linalg::GenericOp::create(
                      b, loc, empty.getType(), ValueRange{}, empty,
                      b.getMultiDimIdentityMap(2),
                      SmallVector<IteratorType>(2, IteratorType::parallel),
                      [&](OpBuilder &b, Location loc, ValueRange) {
                        Ints i{b, loc};
                        Value batchIndex = linalg::IndexOp::create(b, loc, 0);
                        Value sId = i.toI32(linalg::IndexOp::create(b, loc, 1));
                        Value start = startPositions
                                          ? i.at(startPositions, batchIndex)
                                          : i.i32(0);
                        Value p = emitRopePosition(b, loc, sId, i.i32(s), start,
                                                   cpSize, cpRank);
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
    Value s = tensor::ExtractOp::create(b, loc, sinTable,
                                        ValueRange{row, backward ? k : j});
    return emitRopeRotation(b, loc, backward, v, partner, first, c, s);
  }
};

} // namespace

namespace {

/// A rank-4 tensor [A, B, x, y] as `type` [A, B, x', y'] (the same
/// elements in the same order).
Value regroup(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from == type)
    return value;
  SmallVector<ReassociationIndices> groups = {{0}, {1}, {2, 3}};
  auto flat = RankedTensorType::get({from.getDimSize(0), from.getDimSize(1),
                                     from.getDimSize(2) * from.getDimSize(3)},
                                    from.getElementType());
  Value collapsed =
      tensor::CollapseShapeOp::create(b, loc, flat, value, groups);
  return tensor::ExpandShapeOp::create(b, loc, type, collapsed, groups);
}

/// [A, B, h, n] as heads of d channels: [A, B, h n / d, d].
RankedTensorType headsOf(RankedTensorType type, int64_t d) {
  return RankedTensorType::get({type.getDimSize(0), type.getDimSize(1),
                                type.getDimSize(2) * type.getDimSize(3) / d, d},
                               type.getElementType());
}

/// The channels [offset, offset + size) of a rank-4 tensor of type
/// `whole`: the part's type and the slice's offsets, sizes and strides.
struct LastDimSlice {
  RankedTensorType type;
  DenseI64ArrayAttr offsets, sizes, strides;

  LastDimSlice(OpBuilder &b, RankedTensorType whole, int64_t offset,
               int64_t size) {
    SmallVector<int64_t> shape(whole.getShape());
    shape.back() = size;
    type = RankedTensorType::get(shape, whole.getElementType());
    offsets = b.getDenseI64ArrayAttr({0, 0, 0, offset});
    sizes = b.getDenseI64ArrayAttr(shape);
    strides = b.getDenseI64ArrayAttr({1, 1, 1, 1});
  }
};

/// te.qkv_rope as te.rope over each part's heads of d channels (TE's
/// kernel rotates them so), the value part copied.
struct QkvRopeLowering : OpConversionPattern<QkvRopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QkvRopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value qkv = adaptor.getQkv();
    auto type = cast<RankedTensorType>(qkv.getType());
    ArrayRef<int64_t> split = op.getSplit();
    int64_t d = split[2];
    auto part = [&](int64_t offset, int64_t size) -> Value {
      LastDimSlice slice(b, type, offset, size);
      return tensor::ExtractSliceOp::create(
          b, loc, slice.type, qkv, ValueRange{}, ValueRange{}, ValueRange{},
          slice.offsets, slice.sizes, slice.strides);
    };
    auto rotated = [&](Value slice, Value freqs, Type resultType) -> Value {
      RankedTensorType heads =
          headsOf(cast<RankedTensorType>(slice.getType()), d);
      Value rope =
          RopeOp::create(b, loc, heads, regroup(b, loc, slice, heads), freqs,
                         /*cu_seqlens=*/Value(), adaptor.getStartPositions(),
                         op.getFormatAttr(), op.getInterleavedAttr(),
                         op.getCpSizeAttr(), op.getCpRankAttr());
      return regroup(b, loc, rope, cast<RankedTensorType>(resultType));
    };
    Value q =
        rotated(part(0, split[0]), adaptor.getQFreqs(), op.getQ().getType());
    Value k = rotated(part(split[0], split[1]), adaptor.getKFreqs(),
                      op.getK().getType());
    Value v = part(split[0] + split[1], d);
    rewriter.replaceOp(op, {q, k, v});
    return success();
  }
};

/// te.qkv_rope_backward: te.rope_backward of each part's heads, written
/// with the value part's gradient into the fused tensor's gradient.
struct QkvRopeBackwardLowering : OpConversionPattern<QkvRopeBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QkvRopeBackwardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto type = cast<RankedTensorType>(op.getResult().getType());
    ArrayRef<int64_t> split = op.getSplit();
    int64_t d = split[2];
    auto partType = [&](int64_t size) {
      return LastDimSlice(b, type, 0, size).type;
    };
    auto rotatedBack = [&](Value grad, Value freqs, int64_t size) -> Value {
      RankedTensorType heads = headsOf(partType(size), d);
      Value rope = RopeBackwardOp::create(
          b, loc, heads, regroup(b, loc, grad, heads), freqs,
          /*cu_seqlens=*/Value(), /*start_positions=*/Value(),
          op.getFormatAttr(), op.getInterleavedAttr(), op.getCpSizeAttr(),
          op.getCpRankAttr());
      return regroup(b, loc, rope, partType(size));
    };
    Value parts[] = {
        rotatedBack(adaptor.getDq(), adaptor.getQFreqs(), split[0]),
        rotatedBack(adaptor.getDk(), adaptor.getKFreqs(), split[1]),
        adaptor.getDv()};
    Value result =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    int64_t offset = 0;
    for (auto [value, size] : llvm::zip(parts, split)) {
      LastDimSlice slice(b, type, offset, size);
      result = tensor::InsertSliceOp::create(
          b, loc, value, result, ValueRange{}, ValueRange{}, ValueRange{},
          slice.offsets, slice.sizes, slice.strides);
      offset += size;
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::te::populateRopeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<RopeLowering<RopeOp>, RopeLowering<RopeBackwardOp>,
               QkvRopeLowering, QkvRopeBackwardLowering>(patterns.getContext());
}
