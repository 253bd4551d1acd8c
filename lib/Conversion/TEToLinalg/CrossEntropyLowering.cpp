//===- CrossEntropyLowering.cpp - te.cross_entropy on the host
//-------------===//
//
// TE's fused cross-entropy as the op's description states it, over the
// [N, V] view of the logits: row reductions for m, d and the smoothing
// sum, the target's logit by an index clamped into the row, the loss per
// row (and, with the count of rows not ignored, its mean), then the
// gradient in one elementwise pass, in f32 until its one rounding.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::te;

namespace {

using utils::IteratorType;

/// A reduction over the columns of [N, V] with `combine(acc, value)` from
/// `init`, `value(args)` computed from the inputs (read through `maps`).
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

struct CrossEntropyOpLowering : OpConversionPattern<CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value logits = viewAs2D(b, loc, adaptor.getLogits());
    auto type = cast<RankedTensorType>(logits.getType());
    int64_t rows = type.getDimSize(0), vocab = type.getDimSize(1);
    Value target = collapseRows(b, loc, adaptor.getTarget(), rows);
    double smoothing = op.getLabelSmoothing().convertToDouble();
    float eps = static_cast<float>(smoothing / static_cast<double>(vocab));
    bool reduce = op.getReduceLoss();
    int64_t ignore = op.getIgnoreIndex();
    MLIRContext *ctx = op.getContext();
    AffineMap full = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    Type f32 = b.getF32Type();

    auto c = [&](OpBuilder &b, Location loc, double v) {
      return emitF32Constant(b, loc, v);
    };
    auto ext = [&](OpBuilder &b, Location loc, ValueRange args) {
      return emitExtToF32(b, loc, args[0]);
    };
    Value m =
        reduceOf(b, loc, /*perRow=*/true, rows,
                 -std::numeric_limits<double>::infinity(), logits, {full}, ext,
                 [](OpBuilder &b, Location loc, Value acc, Value v) {
                   return arith::MaximumFOp::create(b, loc, acc, v).getResult();
                 });
    Value d = reduceOf(
        b, loc, /*perRow=*/true, rows, 0.0, {logits, m}, {full, row},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, loc, emitExtToF32(b, loc, args[0]), args[1]);
          return math::ExpOp::create(b, loc, shifted);
        },
        addReassociable);
    Value scaledSum;
    if (smoothing > 0)
      scaledSum = reduceOf(
          b, loc, /*perRow=*/true, rows, 0.0, logits, {full},
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            return arith::MulFOp::create(b, loc, c(b, loc, -eps),
                                         emitExtToF32(b, loc, args[0]));
          },
          addReassociable);

    // Per row: whether it is ignored, and its target's column (clamped).
    auto rowTarget = [&](OpBuilder &b, Location loc,
                         Value t) -> std::pair<Value, Value> {
      Value wide = t.getType().isInteger(64)
                       ? t
                       : arith::ExtSIOp::create(b, loc, b.getI64Type(), t);
      auto i64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
      };
      Value ignored = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            wide, i64(ignore));
      Value clamped = arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, wide, i64(0)), i64(vocab - 1));
      return {ignored,
              arith::IndexCastOp::create(b, loc, b.getIndexType(), clamped)};
    };

    // The loss per row.
    SmallVector<Value> lossInputs = {target, m, d};
    if (scaledSum)
      lossInputs.push_back(scaledSum);
    AffineMap identity1 = b.getMultiDimIdentityMap(1);
    Value loss = mapElements(
        b, loc, {rows}, f32, lossInputs,
        SmallVector<AffineMap>(lossInputs.size(), identity1),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          auto [ignored, column] = rowTarget(b, loc, args[0]);
          Value i = linalg::IndexOp::create(b, loc, 0);
          Value xy = emitExtToF32(
              b, loc,
              tensor::ExtractOp::create(b, loc, logits, ValueRange{i, column}));
          Value logD = math::LogOp::create(b, loc, args[2]);
          // -(x_y - m - log d)
          Value value = arith::NegFOp::create(
              b, loc,
              arith::SubFOp::create(
                  b, loc, arith::SubFOp::create(b, loc, xy, args[1]), logD));
          if (scaledSum) {
            Value lse = arith::AddFOp::create(b, loc, args[1], logD);
            Value smooth = arith::AddFOp::create(
                b, loc, args[3],
                arith::MulFOp::create(b, loc, c(b, loc, smoothing), lse));
            value = arith::AddFOp::create(
                b, loc,
                arith::MulFOp::create(b, loc, value,
                                      c(b, loc, 1.0 - smoothing)),
                smooth);
          }
          return arith::SelectOp::create(b, loc, ignored, c(b, loc, 0.0),
                                         value);
        });

    // N for reduce_loss: the rows not ignored, at least 1.
    Value count = reduce ? countKeptRows(b, loc, target, ignore) : Value();
    AffineMap scalar2 = AffineMap::get(2, 0, {}, ctx);

    // The gradient, in f32 until its one rounding.
    Type gradElement =
        cast<RankedTensorType>(op.getGrad().getType()).getElementType();
    SmallVector<Value> gradInputs = {logits, m, d, target};
    SmallVector<AffineMap> gradMaps = {full, row, row, row};
    if (count) {
      gradInputs.push_back(count);
      gradMaps.push_back(scalar2);
    }
    Value grad = mapElements(
        b, loc, {rows, vocab}, gradElement, gradInputs, gradMaps,
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          auto [ignored, column] = rowTarget(b, loc, args[3]);
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
            g = arith::DivFOp::create(b, loc, g, args[4]);
            shift = arith::DivFOp::create(b, loc, shift, args[4]);
          }
          Value j = linalg::IndexOp::create(b, loc, 1);
          Value isTarget = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq, j, column);
          Value out = arith::SelectOp::create(
              b, loc, isTarget, arith::AddFOp::create(b, loc, g, shift), g);
          out = arith::SelectOp::create(b, loc, ignored, c(b, loc, 0.0), out);
          return emitTruncFromF32(b, loc, out, gradElement);
        });

    Value lossResult;
    auto lossType = cast<RankedTensorType>(op.getLoss().getType());
    if (reduce) {
      Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, f32);
      Value zero =
          linalg::FillOp::create(b, loc, c(b, loc, 0.0), empty).getResult(0);
      Value sum = linalg::GenericOp::create(
                      b, loc, zero.getType(), loss, zero,
                      {identity1, AffineMap::get(1, 0, {}, ctx)},
                      IteratorType::reduction,
                      [&](OpBuilder &b, Location loc, ValueRange args) {
                        linalg::YieldOp::create(
                            b, loc,
                            arith::AddFOp::create(b, loc, args[1], args[0])
                                .getResult());
                      })
                      .getResult(0);
      AffineMap scalar0 = AffineMap::get(0, 0, {}, ctx);
      lossResult = mapElements(
          b, loc, {}, f32, {sum, count}, {scalar0, scalar0},
          [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            return arith::DivFOp::create(b, loc, args[0], args[1]);
          });
    } else {
      lossResult = lossType.getRank() == 1
                       ? loss
                       : tensor::ExpandShapeOp::create(
                             b, loc, lossType, loss,
                             ArrayRef<ReassociationIndices>{llvm::to_vector(
                                 llvm::seq<int64_t>(0, lossType.getRank()))});
    }
    rewriter.replaceOp(
        op,
        {lossResult,
         viewAs(b, loc, grad, cast<RankedTensorType>(op.getGrad().getType()))});
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
