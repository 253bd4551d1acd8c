//===- TEToLinalg.cpp - Lowering te ops to linalg on tensors --------------===//
//
// The host CPU's lowering of te ops, on tensors: each op becomes linalg
// structured ops whose bodies hold the exact arithmetic of the op's
// definition in TEOps.td. Bufferization, vectorization and the step to LLVM
// are left to the pipeline.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToLinalg/TEToLinalg.h"

#include "FP8Codec.h"
#include "TEToLinalgInternal.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cfloat>
#include <cmath>

namespace mlir::te {
#define GEN_PASS_DEF_CONVERTTETOLINALG
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Value f32Const(OpBuilder &b, Location loc, double value) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(static_cast<float>(value)));
}

/// An empty tensor shaped like `like` (dynamic sizes included) with another
/// element type.
Value emptyLike(OpBuilder &b, Location loc, Value like, Type elementType) {
  return tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, like),
                                 elementType);
}

/// An empty tensor of a static-or-dynamic `type` whose dynamic sizes are
/// taken from `sizesFrom` dimension by dimension through `dimMap`.
Value emptyOfType(OpBuilder &b, Location loc, RankedTensorType type,
                  Value sizesFrom, ArrayRef<int64_t> dimMap) {
  SmallVector<Value> dynamicSizes;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      dynamicSizes.push_back(
          tensor::DimOp::create(b, loc, sizesFrom, dimMap[i]));
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dynamicSizes);
}

SmallVector<utils::IteratorType> parallelLoops(int64_t rank) {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

/// The map that broadcasts a rank-0 operand over `rank` loops.
AffineMap scalarMap(MLIRContext *ctx, int64_t rank) {
  return AffineMap::get(rank, 0, {}, ctx);
}

/// max |x| over all of `input` (f32 scalar tensor); NaN propagates, empty
/// inputs give 0. The maximum is taken over the bit patterns of |x| as
/// unsigned integers, which order exactly like the values (NaNs above +inf):
/// an integer max reduction vectorizes, where LLVM keeps an fmaximum
/// reduction scalar.
Value buildAmax(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type();
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i32);
  Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 scalarMap(ctx, rank)};
  SmallVector<utils::IteratorType> loops(rank, utils::IteratorType::reduction);
  auto reduce = linalg::GenericOp::create(
      b, loc, init.getType(), input, init, maps, loops,
      [](OpBuilder &b, Location loc, ValueRange args) {
        Type i32 = b.getI32Type();
        Value bits = arith::BitcastOp::create(b, loc, i32,
                                              emitExtToF32(b, loc, args[0]));
        Value magnitude = arith::AndIOp::create(
            b, loc, bits,
            arith::ConstantIntOp::create(b, loc, i32, 0x7FFFFFFF));
        Value max = arith::MaxUIOp::create(b, loc, args[1], magnitude);
        linalg::YieldOp::create(b, loc, max);
      });
  Value result =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getF32Type());
  SmallVector<AffineMap> scalarMaps(2, scalarMap(ctx, 0));
  return linalg::GenericOp::create(
             b, loc, result.getType(), reduce.getResult(0), result, scalarMaps,
             ArrayRef<utils::IteratorType>{},
             [](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(
                   b, loc,
                   arith::BitcastOp::create(b, loc, b.getF32Type(), args[0])
                       .getResult());
             })
      .getResult(0);
}

/// `cond ? a : b` on f32, for readability of the scaling formulas.
Value select(OpBuilder &b, Location loc, Value cond, Value a, Value c) {
  return arith::SelectOp::create(b, loc, cond, a, c);
}

Value isInfOrNaN(OpBuilder &b, Location loc, Value x) {
  Value magnitude = math::AbsFOp::create(b, loc, x);
  // UGE: true for +inf and for NaN (unordered).
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGE, magnitude,
                               f32Const(b, loc, INFINITY));
}

Value isInf(OpBuilder &b, Location loc, Value x) {
  Value magnitude = math::AbsFOp::create(b, loc, x);
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, magnitude,
                               f32Const(b, loc, INFINITY));
}

//===----------------------------------------------------------------------===//
// What the host lowering covers
//===----------------------------------------------------------------------===//

} // namespace

std::optional<std::string> mlir::te::getCPUUnsupportedReason(Operation *op) {
  if (auto quantize = dyn_cast<QuantizeOp>(op)) {
    if (quantize.getMode() != ScalingMode::per_tensor)
      return "te.quantize mode " +
             stringifyScalingMode(quantize.getMode()).str() +
             " has no CPU lowering yet";
    return std::nullopt;
  }
  if (auto dequantize = dyn_cast<DequantizeOp>(op)) {
    if (dequantize.getMode() != ScalingMode::per_tensor)
      return "te.dequantize mode " +
             stringifyScalingMode(dequantize.getMode()).str() +
             " has no CPU lowering yet";
    return std::nullopt;
  }
  if (auto attention = dyn_cast<AttentionOp>(op))
    return getAttentionUnsupportedReason(attention);
  if (isa<AmaxOp, ComputeScaleOp, UpdateDelayedScalingOp, ProcessGroupOp>(op))
    return std::nullopt;
  if (op->getDialect() && isa<TEDialect>(op->getDialect()))
    return op->getName().getStringRef().str() + " has no CPU lowering yet";
  return std::nullopt;
}

namespace {

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

struct AmaxOpLowering : OpConversionPattern<AmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       buildAmax(rewriter, op.getLoc(), adaptor.getInput()));
    return success();
  }
};

struct ComputeScaleOpLowering : OpConversionPattern<ComputeScaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ComputeScaleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value amax = adaptor.getAmax();
    int64_t rank = op.getAmax().getType().getRank();
    double fp8Max = *getFP8Max(op.getFp8Type());
    float epsilon = op.getEpsilon().convertToFloat();
    bool pow2 = op.getPow2Scales();
    Value init = emptyLike(rewriter, loc, amax, rewriter.getF32Type());
    SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(rank));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, init.getType(), amax, init, maps, parallelLoops(rank),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value eps = f32Const(b, loc, epsilon);
          Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                              args[0], eps);
          Value a = select(b, loc, below, eps, args[0]);
          Value isZero = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OEQ, a, f32Const(b, loc, 0.0));
          Value keepOne =
              arith::OrIOp::create(b, loc, isZero, isInfOrNaN(b, loc, a));
          Value scale =
              arith::DivFOp::create(b, loc, f32Const(b, loc, fp8Max), a);
          scale = select(b, loc, isInf(b, loc, scale),
                         f32Const(b, loc, FLT_MAX), scale);
          if (pow2) {
            // Clearing the mantissa rounds down to a power of two.
            Type i32 = b.getI32Type();
            Value bits = arith::BitcastOp::create(b, loc, i32, scale);
            Value mask =
                arith::ConstantIntOp::create(b, loc, i32, int64_t(0xFF800000));
            scale = arith::BitcastOp::create(
                b, loc, b.getF32Type(),
                arith::AndIOp::create(b, loc, bits, mask));
          }
          scale = select(b, loc, keepOne, f32Const(b, loc, 1.0), scale);
          linalg::YieldOp::create(b, loc, scale);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

struct UpdateDelayedScalingOpLowering
    : OpConversionPattern<UpdateDelayedScalingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(UpdateDelayedScalingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value history = adaptor.getAmaxHistory();
    Value amax = adaptor.getAmax();
    auto historyType = cast<RankedTensorType>(history.getType());
    int64_t rank = historyType.getRank();

    // new_history = [amax, history[0 .. L-2]]
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, history);
    Value newHistory =
        tensor::EmptyOp::create(rewriter, loc, sizes, rewriter.getF32Type());
    SmallVector<OpFoldResult> zeros(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(rank, rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> shiftedSizes = sizes;
    if (historyType.isDynamicDim(0)) {
      Value length = tensor::DimOp::create(rewriter, loc, history, 0);
      Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
      shiftedSizes[0] =
          arith::SubIOp::create(rewriter, loc, length, one).getResult();
    } else {
      shiftedSizes[0] = rewriter.getIndexAttr(historyType.getDimSize(0) - 1);
    }
    Value kept = tensor::ExtractSliceOp::create(rewriter, loc, history, zeros,
                                                shiftedSizes, ones);
    SmallVector<OpFoldResult> shiftedOffsets = zeros;
    shiftedOffsets[0] = rewriter.getIndexAttr(1);
    newHistory = tensor::InsertSliceOp::create(
        rewriter, loc, kept, newHistory, shiftedOffsets, shiftedSizes, ones);
    SmallVector<OpFoldResult> frontSizes = sizes;
    frontSizes[0] = rewriter.getIndexAttr(1);
    newHistory = tensor::InsertSliceOp::create(rewriter, loc, amax, newHistory,
                                               zeros, frontSizes, ones);

    // The amax the scale is computed from.
    Value chosen = amax;
    if (op.getAmaxAlgo() == AmaxComputeAlgo::max) {
      Value init = emptyLike(rewriter, loc, amax, rewriter.getF32Type());
      init = linalg::FillOp::create(rewriter, loc,
                                    f32Const(rewriter, loc, -INFINITY), init)
                 .getResult(0);
      chosen = linalg::ReduceOp::create(
                   rewriter, loc, newHistory, init, /*dimensions=*/{0},
                   [](OpBuilder &b, Location loc, ValueRange args) {
                     linalg::YieldOp::create(
                         b, loc,
                         arith::MaximumFOp::create(b, loc, args[0], args[1])
                             .getResult());
                   })
                   .getResult(0);
    }

    // TE's kernel: scale = (fp8_max * 2^-margin) / amax, the previous scale
    // when amax is 0 or not finite, FLT_MAX when the division overflows.
    double scaledMax =
        std::ldexp(*getFP8Max(op.getFp8Type()),
                   -static_cast<int>(op.getMarginAttr().getInt()));
    int64_t scaleRank = rank - 1;
    Value init = emptyLike(rewriter, loc, amax, rewriter.getF32Type());
    SmallVector<AffineMap> maps(3, rewriter.getMultiDimIdentityMap(scaleRank));
    auto newScale = linalg::GenericOp::create(
        rewriter, loc, init.getType(), ValueRange{chosen, adaptor.getScale()},
        init, maps, parallelLoops(scaleRank),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value a = args[0], previous = args[1];
          Value positive = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OGT, a, f32Const(b, loc, 0.0));
          Value usable = arith::AndIOp::create(
              b, loc, positive,
              arith::XOrIOp::create(
                  b, loc, isInfOrNaN(b, loc, a),
                  arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
          Value scale =
              arith::DivFOp::create(b, loc, f32Const(b, loc, scaledMax), a);
          scale = select(b, loc, usable, scale, previous);
          scale = select(b, loc, isInf(b, loc, scale),
                         f32Const(b, loc, FLT_MAX), scale);
          linalg::YieldOp::create(b, loc, scale);
        });
    rewriter.replaceOp(op, {newHistory, newScale.getResult(0)});
    return success();
  }
};

/// data = cast(x * scale) over the loops of `resultType`; `inputMap` reads
/// the input (identity, or transposed for the column-wise copy).
Value buildScaledCast(OpBuilder &b, Location loc, Value input, Value scale,
                      RankedTensorType resultType, AffineMap inputMap,
                      ArrayRef<int64_t> sizeSourceDims) {
  int64_t rank = resultType.getRank();
  Value init = emptyOfType(b, loc, resultType, input, sizeSourceDims);
  SmallVector<AffineMap> maps = {inputMap, scalarMap(b.getContext(), rank),
                                 b.getMultiDimIdentityMap(rank)};
  auto fp8Type = cast<FloatType>(resultType.getElementType());
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, ValueRange{input, scale}, init, maps,
      parallelLoops(rank), [&](OpBuilder &b, Location loc, ValueRange args) {
        Value scaled = arith::MulFOp::create(
            b, loc, emitExtToF32(b, loc, args[0]), args[1]);
        linalg::YieldOp::create(b, loc, emitF32ToFP8(b, loc, scaled, fp8Type));
      });
  return generic.getResult(0);
}

struct QuantizeOpLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason = getCPUUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    Value scale = adaptor.getScale();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<Value> results;
    if (Value data = op.getData()) {
      auto type = cast<RankedTensorType>(data.getType());
      SmallVector<int64_t> dims =
          llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
      results.push_back(buildScaledCast(
          rewriter, loc, input, scale, type,
          rewriter.getMultiDimIdentityMap(type.getRank()), dims));
    }
    if (Value dataT = op.getColumnwiseData()) {
      auto type = cast<RankedTensorType>(dataT.getType());
      AffineMap transposed = AffineMap::get(
          2, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(0, ctx)}, ctx);
      results.push_back(buildScaledCast(rewriter, loc, input, scale, type,
                                        transposed, {1, 0}));
    }
    // scale_inv = 1 / scale, in f32 as TE computes it.
    Value init = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{},
                                         rewriter.getF32Type());
    SmallVector<AffineMap> maps(2, scalarMap(ctx, 0));
    auto scaleInv = linalg::GenericOp::create(
        rewriter, loc, init.getType(), scale, init, maps,
        ArrayRef<utils::IteratorType>{},
        [](OpBuilder &b, Location loc, ValueRange args) {
          linalg::YieldOp::create(
              b, loc,
              arith::DivFOp::create(b, loc, f32Const(b, loc, 1.0), args[0])
                  .getResult());
        });
    results.push_back(scaleInv.getResult(0));
    results.push_back(buildAmax(rewriter, loc, input));
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DequantizeOpLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason = getCPUUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    RankedTensorType resultType = op.getResult().getType();
    int64_t rank = resultType.getRank();
    Value init = emptyLike(rewriter, loc, data, resultType.getElementType());
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   scalarMap(rewriter.getContext(), rank),
                                   rewriter.getMultiDimIdentityMap(rank)};
    Type elementType = resultType.getElementType();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange{data, adaptor.getScaleInv()},
        init, maps, parallelLoops(rank),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value value = arith::MulFOp::create(
              b, loc, emitFP8ToF32(b, loc, args[0]), args[1]);
          linalg::YieldOp::create(b, loc,
                                  emitTruncFromF32(b, loc, value, elementType));
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct ConvertTEToLinalgPass
    : te::impl::ConvertTEToLinalgBase<ConvertTEToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Report every op the lowering cannot take, with the reason, rather
    // than the converter's generic "failed to legalize".
    bool unsupported = false;
    module.walk([&](Operation *op) {
      if (std::optional<std::string> reason = getCPUUnsupportedReason(op)) {
        op->emitError(*reason);
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();

    ConversionTarget target(getContext());
    target.addIllegalDialect<TEDialect>();
    target.addLegalOp<ProcessGroupOp>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect, vector::VectorDialect>();
    RewritePatternSet patterns(&getContext());
    populateTEToLinalgConversionPatterns(patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::te::populateTEToLinalgConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AmaxOpLowering, ComputeScaleOpLowering,
               UpdateDelayedScalingOpLowering, QuantizeOpLowering,
               DequantizeOpLowering>(patterns.getContext());
  populateAttentionLoweringPatterns(patterns);
}
