//===- CrossEntropyLowering.cpp - te.cross_entropy on the host ------------===//
//
// TE's fused cross-entropy as the op's description states it, over the
// [N, V] view of the logits: row reductions for m, d and the smoothing
// sum, the target's logit by an index clamped into the row, the loss per
// row (and, with the count of rows not ignored, its mean), then the
// gradient in one elementwise pass, in f32 until its one rounding. With a
// group (the vocabulary split over ranks), each rank's m, d and x_y are
// gathered with te.all_gather and combined in rank order before the loss
// and the gradient, as TE's parallel_cross_entropy does.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/CrossEntropyMath.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::te;

namespace {

using utils::IteratorType;

/// `value` (one entry per row, any rank) as a vector of `rows` entries.
Value collapseRows(OpBuilder &b, Location loc, Value value, int64_t rows) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 1)
    return value;
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({rows}, type.getElementType()), value,
      ArrayRef<ReassociationIndices>{
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))});
}

/// TE's n_non_ignore: the rows of `target` (a vector of i32 or i64) whose
/// class is not `ignore`, at least 1, as an f32 scalar tensor (TE divides
/// by it as a float).
Value countKeptRows(OpBuilder &b, Location loc, Value target, int64_t ignore) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i64);
  Value zero =
      linalg::FillOp::create(
          b, loc, Value(arith::ConstantIntOp::create(b, loc, i64, 0)), empty)
          .getResult(0);
  Value counted =
      linalg::GenericOp::create(
          b, loc, zero.getType(), target, zero,
          {b.getMultiDimIdentityMap(1), AffineMap::get(1, 0, {}, ctx)},
          utils::IteratorType::reduction,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            Value t = args[0];
            if (!t.getType().isInteger(64))
              t = arith::ExtSIOp::create(b, loc, b.getI64Type(), t);
            Value kept = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::ne, t,
                arith::ConstantIntOp::create(b, loc, b.getI64Type(), ignore));
            Value one = arith::ExtUIOp::create(b, loc, b.getI64Type(), kept);
            linalg::YieldOp::create(
                b, loc,
                arith::AddIOp::create(b, loc, args[1], one).getResult());
          })
          .getResult(0);
  return mapElements(
      b, loc, {}, b.getF32Type(), counted, {AffineMap::get(0, 0, {}, ctx)},
      [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value atLeastOne = arith::MaxSIOp::create(
            b, loc, args[0],
            arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1));
        return arith::SIToFPOp::create(b, loc, b.getF32Type(), atLeastOne);
      });
}

/// The statistics of each row's softmax over the whole vocabulary (every
/// rank's columns with a group), f32 [N] each: the max m, the sum d of
/// exp(x - m) and the target's logit x_y (-inf when another rank holds y).
struct RowStats {
  Value m, d, xy;
};

/// Builds te.cross_entropy over the [N, V] view of this rank's logits.
class CrossEntropyBuilder {
public:
  CrossEntropyBuilder(OpBuilder &b, Location loc, CrossEntropyOp op,
                      Value logits, Value target)
      : b(b), loc(loc), op(op), ctx(op.getContext()), logits(logits),
        target(target) {
    auto type = cast<RankedTensorType>(logits.getType());
    rows = type.getDimSize(0);
    vocab = type.getDimSize(1);
    shards = op.getVocabShards();
    ignore = op.getIgnoreIndex();
    smoothing = op.getLabelSmoothing().convertToDouble();
    // TE's eps = label_smoothing / (n_cols * world_size).
    eps = static_cast<float>(smoothing / static_cast<double>(vocab * shards));
    full = AffineMap::getMultiDimIdentityMap(2, ctx);
    row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    if (shards > 1)
      rank = GroupRankOp::create(
          b, loc, RankedTensorType::get({}, b.getI32Type()), op.getGroupAttr());
  }

  /// Replaces the op by its loss and gradient.
  void build(ConversionPatternRewriter &rewriter) {
    RowStats local = localStats();
    RowStats stats = shards > 1 ? combine(gather(local)) : local;
    Value scaledSum;
    if (smoothing > 0)
      scaledSum = reduceOf(
          b, loc, /*perRow=*/true, rows, 0.0, logits, {full},
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            return arith::MulFOp::create(b, loc, c(b, loc, -eps),
                                         emitExtToF32(b, loc, args[0]));
          },
          addReassociable);
    Value loss = rowLosses(stats, scaledSum);
    // N for reduce_loss: the rows not ignored, at least 1.
    Value count =
        op.getReduceLoss() ? countKeptRows(b, loc, target, ignore) : Value();
    Value grad = gradient(stats, count);
    rewriter.replaceOp(
        op,
        {lossResult(loss, count),
         viewAs(b, loc, grad, cast<RankedTensorType>(op.getGrad().getType()))});
  }

private:
  static Value c(OpBuilder &b, Location loc, double v) {
    return emitF32Constant(b, loc, v);
  }

  /// The row's target as i64, whether it is ignored, and this rank's first
  /// class (0 without a group), from the body's `args` at `targetAt` (and
  /// the rank right after it with a group).
  struct RowTarget {
    Value target, ignored, shardStart;
  };
  RowTarget rowTarget(OpBuilder &b, Location loc, ValueRange args,
                      unsigned targetAt) const {
    Type i64 = b.getI64Type();
    Value t = args[targetAt];
    if (!t.getType().isInteger(64))
      t = arith::ExtSIOp::create(b, loc, i64, t);
    Value ignored = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, t,
        arith::ConstantIntOp::create(b, loc, i64, ignore));
    Value start = arith::ConstantIntOp::create(b, loc, i64, 0);
    if (rank)
      start = arith::MulIOp::create(
          b, loc, arith::ExtSIOp::create(b, loc, i64, args[targetAt + 1]),
          arith::ConstantIntOp::create(b, loc, i64, vocab));
    return {t, ignored, start};
  }

  /// The target (and the rank) as inputs of a body over [N] or [N, V].
  void addTargetInputs(SmallVector<Value> &inputs, SmallVector<AffineMap> &maps,
                       unsigned dims) const {
    inputs.push_back(target);
    maps.push_back(dims == 1 ? b.getMultiDimIdentityMap(1) : row);
    if (rank) {
      inputs.push_back(rank);
      maps.push_back(AffineMap::get(dims, 0, {}, ctx));
    }
  }

  /// m, d and x_y over this rank's columns (TE's online_softmax_kernel).
  RowStats localStats() {
    auto ext = [&](OpBuilder &b, Location loc, ValueRange args) {
      return emitExtToF32(b, loc, args[0]);
    };
    Value m =
        vocab % kAmaxLanes == 0
            ? rowMaxima()
            : reduceOf(b, loc, /*perRow=*/true, rows,
                       -std::numeric_limits<double>::infinity(), logits, {full},
                       ext, [](OpBuilder &b, Location loc, Value acc, Value v) {
                         return arith::MaximumFOp::create(b, loc, acc, v)
                             .getResult();
                       });
    Value d = reduceOf(
        b, loc, /*perRow=*/true, rows, 0.0, {logits, m}, {full, row},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, loc, emitExtToF32(b, loc, args[0]), args[1]);
          return math::ExpOp::create(b, loc, shifted);
        },
        addReassociable);
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    addTargetInputs(inputs, maps, 1);
    Value xy = mapElements(
        b, loc, {rows}, b.getF32Type(), inputs, maps,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          RowTarget t = rowTarget(b, loc, args, 0);
          Type i64 = b.getI64Type();
          Value local = arith::SubIOp::create(b, loc, t.target, t.shardStart);
          Value mine = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::sge, local,
                  arith::ConstantIntOp::create(b, loc, i64, 0)),
              arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::slt, local,
                  arith::ConstantIntOp::create(b, loc, i64, vocab)));
          // The load stays in the row; its value counts only when y is ours.
          Value column = arith::MinSIOp::create(
              b, loc,
              arith::MaxSIOp::create(
                  b, loc, local, arith::ConstantIntOp::create(b, loc, i64, 0)),
              arith::ConstantIntOp::create(b, loc, i64, vocab - 1));
          Value i = linalg::IndexOp::create(b, loc, 0);
          Value x = emitExtToF32(
              b, loc,
              tensor::ExtractOp::create(
                  b, loc, logits,
                  ValueRange{i, arith::IndexCastOp::create(
                                    b, loc, b.getIndexType(), column)}));
          return arith::SelectOp::create(
              b, loc, mine, x,
              c(b, loc, -std::numeric_limits<double>::infinity()));
        });
    return {m, d, xy};
  }

  /// Each row's max, V a multiple of kAmaxLanes: in vectors, with up to
  /// four accumulators. As a scalar reduction LLVM keeps arith.maximumf
  /// scalar, a compare and a masked move per element in one dependent
  /// chain; the maximum is exact (NaN propagates), so the order of the
  /// vector form changes nothing.
  Value rowMaxima() {
    int64_t k = getRowAccumulators(vocab);
    auto lanes = VectorType::get({kAmaxLanes}, b.getF32Type());
    Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows},
                                          b.getF32Type());
    auto body = [&](OpBuilder &b, Location loc, ValueRange) {
      Value i = linalg::IndexOp::create(b, loc, 0);
      auto index = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      Value lowest = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(
              lanes,
              b.getF32FloatAttr(-std::numeric_limits<float>::infinity())));
      auto loop = scf::ForOp::create(
          b, loc, index(0), index(vocab), index(k * kAmaxLanes),
          SmallVector<Value>(k, lowest),
          [&](OpBuilder &b, Location loc, Value col, ValueRange acc) {
            SmallVector<Value> next;
            for (int64_t a = 0; a < k; ++a) {
              Value at =
                  arith::AddIOp::create(b, loc, col, index(a * kAmaxLanes));
              next.push_back(arith::MaximumFOp::create(
                  b, loc, acc[a], readLanesF32(b, loc, logits, i, at)));
            }
            scf::YieldOp::create(b, loc, next);
          });
      Value max = loop.getResult(0);
      for (int64_t a = 1; a < k; ++a)
        max = arith::MaximumFOp::create(b, loc, max, loop.getResult(a));
      linalg::YieldOp::create(b, loc,
                              vector::ReductionOp::create(
                                  b, loc, vector::CombiningKind::MAXIMUMF, max)
                                  .getResult());
    };
    return linalg::GenericOp::create(
               b, loc, empty.getType(), ValueRange{}, empty,
               b.getMultiDimIdentityMap(1),
               SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
               body)
        .getResult(0);
  }

  /// Every rank's m, d and x_y: [shards N, 3], rank after rank (TE's
  /// all_gather_into_tensor of m_d_X_y).
  Value gather(const RowStats &local) {
    Value packed = mapElements(
        b, loc, {rows, 3}, b.getF32Type(), {local.m, local.d, local.xy},
        {row, row, row},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value which = linalg::IndexOp::create(b, loc, 1);
          auto is = [&](int64_t k) {
            return arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::eq, which,
                arith::ConstantIndexOp::create(b, loc, k));
          };
          return arith::SelectOp::create(
              b, loc, is(0), args[0],
              arith::SelectOp::create(b, loc, is(1), args[1], args[2]));
        });
    return AllGatherOp::create(
        b, loc, RankedTensorType::get({shards * rows, 3}, b.getF32Type()),
        packed, op.getGroupAttr(), b.getI64IntegerAttr(0));
  }

  /// The ranks' statistics combined in rank order from rank 0, as
  /// cross_entropy_kernel does: d rescaled to the larger max, x_y by max.
  RowStats combine(Value gathered) {
    // One loop over the ranks per row gives all three statistics.
    auto rowType = RankedTensorType::get({rows}, b.getF32Type());
    SmallVector<Value> outputs;
    for (int k = 0; k < 3; ++k)
      outputs.push_back(tensor::EmptyOp::create(b, loc, rowType.getShape(),
                                                rowType.getElementType()));
    auto body = [&](OpBuilder &b, Location loc, ValueRange) {
      Value i = linalg::IndexOp::create(b, loc, 0);
      auto at = [&](OpBuilder &b, Location loc, Value shard,
                    int64_t k) -> Value {
        Value r = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, shard,
                                  arith::ConstantIndexOp::create(b, loc, rows)),
            i);
        return tensor::ExtractOp::create(
            b, loc, gathered,
            ValueRange{r, arith::ConstantIndexOp::create(b, loc, k)});
      };
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      SmallVector<Value> init = {at(b, loc, zero, 0), at(b, loc, zero, 1),
                                 at(b, loc, zero, 2)};
      auto loop = scf::ForOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, 1),
          arith::ConstantIndexOp::create(b, loc, shards),
          arith::ConstantIndexOp::create(b, loc, 1), init,
          [&](OpBuilder &b, Location loc, Value k, ValueRange acc) {
            SoftmaxStats next = emitCombinedSoftmaxStats(
                b, loc, {acc[0], acc[1], acc[2]},
                {at(b, loc, k, 0), at(b, loc, k, 1), at(b, loc, k, 2)});
            scf::YieldOp::create(b, loc, ValueRange{next.m, next.d, next.xy});
          });
      linalg::YieldOp::create(b, loc, loop.getResults());
    };
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{rowType, rowType, rowType}, ValueRange{}, outputs,
        SmallVector<AffineMap>(3, b.getMultiDimIdentityMap(1)),
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel}, body);
    return {generic.getResult(0), generic.getResult(1), generic.getResult(2)};
  }

  /// The loss of each row, 0 where ignored (cross_entropy_kernel's step 5).
  Value rowLosses(const RowStats &stats, Value scaledSum) {
    SmallVector<Value> inputs = {stats.m, stats.d, stats.xy};
    if (scaledSum)
      inputs.push_back(scaledSum);
    AffineMap identity1 = b.getMultiDimIdentityMap(1);
    SmallVector<AffineMap> maps(inputs.size(), identity1);
    unsigned targetAt = inputs.size();
    addTargetInputs(inputs, maps, 1);
    return mapElements(
        b, loc, {rows}, b.getF32Type(), inputs, maps,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          RowTarget t = rowTarget(b, loc, args, targetAt);
          Value value =
              emitCrossEntropyRowLoss(b, loc, {args[0], args[1], args[2]},
                                      scaledSum ? args[3] : Value(), smoothing);
          return arith::SelectOp::create(b, loc, t.ignored, c(b, loc, 0.0),
                                         value);
        });
  }

  /// The gradient of this rank's columns, in f32 until its one rounding;
  /// divided by `count` with reduce_loss.
  Value gradient(const RowStats &stats, Value count) {
    Type gradElement =
        cast<RankedTensorType>(op.getGrad().getType()).getElementType();
    SmallVector<Value> inputs = {logits, stats.m, stats.d};
    SmallVector<AffineMap> maps = {full, row, row};
    if (count) {
      inputs.push_back(count);
      maps.push_back(AffineMap::get(2, 0, {}, ctx));
    }
    unsigned targetAt = inputs.size();
    addTargetInputs(inputs, maps, 2);
    return mapElements(
        b, loc, {rows, vocab}, gradElement, inputs, maps,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          RowTarget t = rowTarget(b, loc, args, targetAt);
          Value x = emitExtToF32(b, loc, args[0]);
          Value p = arith::DivFOp::create(
              b, loc,
              math::ExpOp::create(b, loc,
                                  arith::SubFOp::create(b, loc, x, args[1])),
              args[2]);
          Value g = arith::SubFOp::create(b, loc, p, c(b, loc, eps));
          // The target's entry: g + (-(1 - label_smoothing) / N).
          Value shift = c(b, loc, static_cast<float>(-(1.0 - smoothing)));
          if (count) {
            g = arith::DivFOp::create(b, loc, g, args[3]);
            shift = arith::DivFOp::create(b, loc, shift, args[3]);
          }
          // Column j is class shardStart + j of the whole vocabulary.
          Value j = arith::AddIOp::create(
              b, loc, t.shardStart,
              arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                         linalg::IndexOp::create(b, loc, 1)));
          Value isTarget = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq, j, t.target);
          Value out = arith::SelectOp::create(
              b, loc, isTarget, arith::AddFOp::create(b, loc, g, shift), g);
          out = arith::SelectOp::create(b, loc, t.ignored, c(b, loc, 0.0), out);
          return emitTruncFromF32(b, loc, out, gradElement);
        });
  }

  /// The loss result: per row in the target's shape, or with reduce_loss
  /// sum(loss) / count.
  Value lossResult(Value loss, Value count) {
    Type f32 = b.getF32Type();
    auto lossType = cast<RankedTensorType>(op.getLoss().getType());
    if (!count)
      return lossType.getRank() == 1
                 ? loss
                 : tensor::ExpandShapeOp::create(
                       b, loc, lossType, loss,
                       ArrayRef<ReassociationIndices>{llvm::to_vector(
                           llvm::seq<int64_t>(0, lossType.getRank()))});
    Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, f32);
    Value zero =
        linalg::FillOp::create(b, loc, c(b, loc, 0.0), empty).getResult(0);
    Value sum =
        linalg::GenericOp::create(
            b, loc, zero.getType(), loss, zero,
            {b.getMultiDimIdentityMap(1), AffineMap::get(1, 0, {}, ctx)},
            IteratorType::reduction,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              linalg::YieldOp::create(
                  b, loc,
                  arith::AddFOp::create(b, loc, args[1], args[0]).getResult());
            })
            .getResult(0);
    AffineMap scalar0 = AffineMap::get(0, 0, {}, ctx);
    return mapElements(
        b, loc, {}, f32, {sum, count}, {scalar0, scalar0},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::DivFOp::create(b, loc, args[0], args[1]);
        });
  }

  OpBuilder &b;
  Location loc;
  CrossEntropyOp op;
  MLIRContext *ctx;
  Value logits, target, rank;
  int64_t rows, vocab, shards, ignore;
  double smoothing;
  float eps;
  AffineMap full, row;
};

struct CrossEntropyOpLowering : OpConversionPattern<CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = viewAs2D(rewriter, loc, adaptor.getLogits());
    int64_t rows = cast<RankedTensorType>(logits.getType()).getDimSize(0);
    Value target = collapseRows(rewriter, loc, adaptor.getTarget(), rows);
    CrossEntropyBuilder(rewriter, loc, op, logits, target).build(rewriter);
    return success();
  }
};

struct CrossEntropyBackwardOpLowering
    : OpConversionPattern<CrossEntropyBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyBackwardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value grad = viewAs2D(b, loc, adaptor.getGrad());
    auto type = cast<RankedTensorType>(grad.getType());
    int64_t rows = type.getDimSize(0), vocab = type.getDimSize(1);
    Value dloss = adaptor.getDloss();
    auto dlossType = cast<RankedTensorType>(dloss.getType());
    MLIRContext *ctx = op.getContext();
    AffineMap dlossMap = AffineMap::get(2, 0, {}, ctx);
    if (dlossType.getRank() != 0) {
      dloss = collapseRows(b, loc, dloss, rows);
      dlossMap = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    }
    Type resultElement =
        cast<RankedTensorType>(op.getResult().getType()).getElementType();
    Value result =
        mapElements(b, loc, {rows, vocab}, resultElement, {grad, dloss},
                    {AffineMap::getMultiDimIdentityMap(2, ctx), dlossMap},
                    [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                      return emitTruncFromF32(
                          b, loc,
                          arith::MulFOp::create(
                              b, loc, emitExtToF32(b, loc, args[0]), args[1]),
                          resultElement);
                    });
    rewriter.replaceOp(
        op, viewAs(b, loc, result,
                   cast<RankedTensorType>(op.getResult().getType())));
    return success();
  }
};

} // namespace

void mlir::te::populateCrossEntropyLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<CrossEntropyOpLowering, CrossEntropyBackwardOpLowering>(
      patterns.getContext());
}
