//===- TEToLinalg.cpp - Lowering te ops to linalg on tensors --------------===//
//
// The host CPU's lowering of te ops, on tensors: each op becomes linalg
// structured ops whose bodies hold the exact arithmetic of the op's
// definition in TEOps.td. Bufferization, vectorization and the step to LLVM
// are left to the pipeline.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToLinalg/TEToLinalg.h"

#include "HostAttention.h"
#include "TEToLinalgInternal.h"
#include "te/Conversion/TECommon/Epilogue.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/LibraryCall.h"
#include "te/Conversion/TECommon/ScalingMath.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
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

/// An i32 tensor of float bits as the f32 tensor of the same shape.
Value bitsToF32(OpBuilder &b, Location loc, Value bits) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(bits.getType()).getShape();
  Value result = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(shape.size()));
  return linalg::GenericOp::create(
             b, loc, result.getType(), bits, result, maps,
             parallelLoops(shape.size()),
             [](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(
                   b, loc,
                   arith::BitcastOp::create(b, loc, b.getF32Type(), args[0])
                       .getResult());
             })
      .getResult(0);
}

} // namespace

Value mlir::te::readLanesF32(OpBuilder &b, Location loc, Value matrix,
                             Value row, Value col) {
  Type element = cast<RankedTensorType>(matrix.getType()).getElementType();
  auto f32Type = VectorType::get({kAmaxLanes}, b.getF32Type());
  Value x = vector::TransferReadOp::create(
      b, loc, VectorType::get({kAmaxLanes}, element), matrix,
      ValueRange{row, col},
      arith::ConstantOp::create(b, loc, b.getZeroAttr(element)),
      ArrayRef<bool>{true});
  if (x.getType() != f32Type)
    x = arith::ExtFOp::create(b, loc, f32Type, x);
  return x;
}

Value mlir::te::emitAmaxBitsOfLanes(OpBuilder &b, Location loc, Value x) {
  auto laneType = VectorType::get({kAmaxLanes}, b.getI32Type());
  auto splatI32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(laneType, b.getI32IntegerAttr(v)));
  };
  Value magnitude = arith::AndIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, laneType, x),
      splatI32(0x7FFFFFFF));
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(b, loc, isNaN, splatI32(0), magnitude);
}

namespace {

/// emitAmaxBits on kAmaxLanes elements: those of the 2-D `matrix` at (row,
/// col), as bits of |x| with NaN as 0.
Value emitAmaxBitsVector(OpBuilder &b, Location loc, Value matrix, Value row,
                         Value col) {
  return emitAmaxBitsOfLanes(b, loc, readLanesF32(b, loc, matrix, row, col));
}

} // namespace

Value mlir::te::emitZeroAmaxBitsVector(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(VectorType::get({kAmaxLanes}, b.getI32Type()),
                             b.getI32IntegerAttr(0)));
}

namespace {

/// max |x| over the non-NaN elements of `input` (f32 scalar tensor), as TE
/// computes it; empty or all-NaN inputs give 0. See emitAmaxBits.
Value buildAmax(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type();
  Value zero = arith::ConstantIntOp::create(b, loc, i32, 0);
  auto maxBits = [](OpBuilder &b, Location loc, ValueRange args) {
    Value magnitude = emitAmaxBits(b, loc, emitExtToF32(b, loc, args[0]));
    Value max = arith::MaxUIOp::create(b, loc, args[1], magnitude);
    linalg::YieldOp::create(b, loc, max);
  };
  auto reduceAll = [&](Value tensor, auto body) {
    int64_t rank = cast<RankedTensorType>(tensor.getType()).getRank();
    Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i32);
    Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                   scalarMap(ctx, rank)};
    SmallVector<utils::IteratorType> loops(rank,
                                           utils::IteratorType::reduction);
    return linalg::GenericOp::create(b, loc, init.getType(), tensor, init, maps,
                                     loops, body)
        .getResult(0);
  };
  if (rank < 2)
    return bitsToF32(b, loc, reduceAll(input, maxBits));

  // In two steps, so that the first runs on several threads: the max of
  // each row of the [leading dims, last dim] view, then of those.
  int64_t rows = 1;
  for (int64_t size : type.getShape().drop_back())
    rows *= size;
  int64_t cols = type.getShape().back();
  Value matrix = viewAs2D(b, loc, input);
  Value empty = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows}, i32);
  Value rowMax;
  if (cols % kAmaxLanes == 0) {
    // Each row in vectors of kAmaxLanes with a vector accumulator: as a
    // scalar reduction LLVM keeps it scalar once InstCombine has folded the
    // NaN select into the maximum (the accumulator then sits in a select).
    rowMax =
        linalg::GenericOp::create(
            b, loc, empty.getType(), ValueRange{}, empty,
            b.getMultiDimIdentityMap(1), parallelLoops(1),
            [&](OpBuilder &b, Location loc, ValueRange) {
              Value row = linalg::IndexOp::create(b, loc, 0);
              auto index = [&](int64_t v) -> Value {
                return arith::ConstantIndexOp::create(b, loc, v);
              };
              auto loop = scf::ForOp::create(
                  b, loc, index(0), index(cols), index(kAmaxLanes),
                  ValueRange{emitZeroAmaxBitsVector(b, loc)},
                  [&](OpBuilder &b, Location loc, Value col, ValueRange acc) {
                    scf::YieldOp::create(
                        b, loc,
                        arith::MaxUIOp::create(
                            b, loc, acc[0],
                            emitAmaxBitsVector(b, loc, matrix, row, col))
                            .getResult());
                  });
              linalg::YieldOp::create(
                  b, loc,
                  vector::ReductionOp::create(
                      b, loc, vector::CombiningKind::MAXUI, loop.getResult(0))
                      .getResult());
            })
            .getResult(0);
  } else {
    Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    SmallVector<AffineMap> maps = {
        b.getMultiDimIdentityMap(2),
        AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx)};
    SmallVector<utils::IteratorType> loops = {utils::IteratorType::parallel,
                                              utils::IteratorType::reduction};
    rowMax = linalg::GenericOp::create(b, loc, init.getType(), matrix, init,
                                       maps, loops, maxBits)
                 .getResult(0);
  }
  return reduceRowMaxima(b, loc, rowMax);
}

} // namespace

Value mlir::te::reduceRowMaxima(OpBuilder &b, Location loc, Value rowMax) {
  Value empty =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getI32Type());
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(1),
                                 scalarMap(b.getContext(), 1)};
  Value max =
      linalg::GenericOp::create(
          b, loc, init.getType(), rowMax, init, maps,
          ArrayRef<utils::IteratorType>{utils::IteratorType::reduction},
          [](OpBuilder &b, Location loc, ValueRange args) {
            linalg::YieldOp::create(
                b, loc,
                arith::MaxUIOp::create(b, loc, args[1], args[0]).getResult());
          })
          .getResult(0);
  return bitsToF32(b, loc, max);
}

namespace {

//===----------------------------------------------------------------------===//
// What the host lowering covers
//===----------------------------------------------------------------------===//

} // namespace

scf::ForallOp mlir::te::createForall(OpBuilder &b, Location loc,
                                     ArrayRef<int64_t> upperBounds,
                                     ValueRange outputs) {
  SmallVector<OpFoldResult> lbs(upperBounds.size(), b.getIndexAttr(0)),
      steps(upperBounds.size(), b.getIndexAttr(1)), ubs;
  for (int64_t n : upperBounds)
    ubs.push_back(b.getIndexAttr(n));
  return scf::ForallOp::create(b, loc, lbs, ubs, steps, outputs,
                               /*mapping=*/std::nullopt);
}

std::optional<std::string> mlir::te::getCPUUnsupportedReason(Operation *op) {
  if (isa<QuantizeOp, DequantizeOp>(op)) {
    // Block modes reshape through static shapes.
    for (Value value : op->getOperands())
      if (!cast<ShapedType>(value.getType()).hasStaticShape())
        return op->getName().getStringRef().str() +
               " with dynamic shapes has no CPU lowering yet";
    return std::nullopt;
  }
  if (auto attention = dyn_cast<AttentionOpInterface>(op))
    return getAttentionUnsupportedReason(attention);
  if (auto crossEntropy = dyn_cast<CrossEntropyOp>(op);
      crossEntropy && crossEntropy.getVocabShards() > 1 &&
      !isa<func::FuncOp>(op->getParentOp()))
    return "te.cross_entropy over group " +
           crossEntropy.getGroupAttr().getValue().str() +
           " gathers across ranks, which the cpu target runs at the top "
           "level of an entry point only; move it out of the loop or region";
  if (isa<ScaledMatmulOp, GroupedMatmulOp, NormOp, NormBackwardOp, ActivationOp,
          ActivationBackwardOp, RopeOp, RopeBackwardOp, QkvRopeOp,
          QkvRopeBackwardOp, CrossEntropyOp, CrossEntropyBackwardOp>(op)) {
    // The GEMM micro-kernel's panels and tiles are sized at compile time;
    // the norms, activations, RoPE and cross-entropy view their operands
    // and results through static shapes.
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      if (!cast<ShapedType>(value.getType()).hasStaticShape())
        return op->getName().getStringRef().str() +
               " with dynamic shapes has no CPU lowering yet";
    return std::nullopt;
  }
  if (isa<AmaxOp, ComputeScaleOp, UpdateDelayedScalingOp, ProcessGroupOp>(op))
    return std::nullopt;
  // The runtime's device runs collectives (te/Runtime/Collective.h).
  if (isCollective(op))
    return getCollectiveUnsupportedReason(op);
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
          linalg::YieldOp::create(
              b, loc,
              emitScaleFromAmax(b, loc, args[0], fp8Max, epsilon, pow2));
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
    // With L = 1 nothing is kept: the new amax is the whole history (TE's
    // roll). The slices of the shift would be empty, and an empty slice at
    // offset 1 of a length-1 dimension does not verify.
    if (historyType.isDynamicDim(0) || historyType.getDimSize(0) > 1) {
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
    }
    SmallVector<OpFoldResult> frontSizes = sizes;
    frontSizes[0] = rewriter.getIndexAttr(1);
    newHistory = tensor::InsertSliceOp::create(rewriter, loc, amax, newHistory,
                                               zeros, frontSizes, ones);

    // The amax the scale is computed from. TE's kernel reduces the history
    // with fmaxf from 0: NaN entries are skipped (maxnumf returns the other
    // operand), an all-NaN history gives 0 and keeps the previous scale.
    Value chosen = amax;
    if (op.getAmaxAlgo() == AmaxComputeAlgo::max) {
      Value init = emptyLike(rewriter, loc, amax, rewriter.getF32Type());
      init = linalg::FillOp::create(rewriter, loc,
                                    emitF32Constant(rewriter, loc, 0.0), init)
                 .getResult(0);
      chosen = linalg::ReduceOp::create(
                   rewriter, loc, newHistory, init, /*dimensions=*/{0},
                   [](OpBuilder &b, Location loc, ValueRange args) {
                     linalg::YieldOp::create(
                         b, loc,
                         arith::MaxNumFOp::create(b, loc, args[0], args[1])
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
          linalg::YieldOp::create(
              b, loc, emitDelayedScale(b, loc, args[0], args[1], scaledMax));
        });
    rewriter.replaceOp(op, {newHistory, newScale.getResult(0)});
    return success();
  }
};

} // namespace

SmallVector<Value> mlir::te::forEachRowInParallel(OpBuilder &b, Location loc,
                                                  int64_t rows,
                                                  ValueRange outputs,
                                                  RowBody body) {
  scf::ForallOp forall = createForall(b, loc, {rows}, outputs);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value row = forall.getInductionVar(0);
  SmallVector<SmallVector<OpFoldResult>> offsets, sizes;
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  SmallVector<Value> slices;
  for (Value shared : forall.getRegionIterArgs()) {
    auto type = cast<RankedTensorType>(shared.getType());
    int64_t width = type.getDimSize(1);
    offsets.push_back({row, b.getIndexAttr(0)});
    sizes.push_back({b.getIndexAttr(1), b.getIndexAttr(width)});
    slices.push_back(tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({width}, type.getElementType()), shared,
        offsets.back(), sizes.back(), strides));
  }
  SmallVector<Value> written = body(b, loc, row, slices);
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  for (auto [i, slice] : llvm::enumerate(written))
    tensor::ParallelInsertSliceOp::create(b, loc, slice,
                                          forall.getRegionIterArgs()[i],
                                          offsets[i], sizes[i], strides);
  return forall.getResults();
}

Value mlir::te::writeRowScalar(OpBuilder &b, Location loc, Value scalar,
                               Value slice) {
  return tensor::InsertOp::create(
      b, loc, scalar, slice,
      ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
}

Value mlir::te::buildScaleInv(OpBuilder &b, Location loc, Value scale) {
  Value init =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, b.getF32Type());
  SmallVector<AffineMap> maps(2, scalarMap(b.getContext(), 0));
  auto scaleInv = linalg::GenericOp::create(
      b, loc, init.getType(), scale, init, maps,
      ArrayRef<utils::IteratorType>{},
      [](OpBuilder &b, Location loc, ValueRange args) {
        linalg::YieldOp::create(
            b, loc,
            arith::DivFOp::create(b, loc, emitF32Constant(b, loc, 1.0), args[0])
                .getResult());
      });
  return scaleInv.getResult(0);
}

namespace {

/// data = cast(x * scale) and amax = max |x| in one pass over x, for the
/// per-tensor quantize: the rows of x's 2-D view in parallel, each row in
/// vectors of kAmaxLanes whose loads feed both the FP8 cast and the row's
/// vector maximum; then the maximum of the rows. nullopt when the rows do
/// not split into whole vectors (the caller then casts and reduces in two
/// loops).
std::optional<std::pair<Value, Value>>
buildFusedQuantize(OpBuilder &b, Location loc, Value input, Value scale,
                   RankedTensorType dataType) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType.getRank() < 2 || inputType.getShape().back() % kAmaxLanes != 0)
    return std::nullopt;
  Value matrix = viewAs2D(b, loc, input);
  ArrayRef<int64_t> shape = cast<RankedTensorType>(matrix.getType()).getShape();
  int64_t rows = shape[0], cols = shape[1];
  auto fp8Type = cast<FloatType>(dataType.getElementType());
  Type i32 = b.getI32Type();
  auto index = [&](OpBuilder &b, Location loc, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // The data and each row's maximum of |x| bits ([rows, 1]).
  SmallVector<Value> outputs = {
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows, cols}, fp8Type),
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows, 1}, i32)};
  auto laneType = VectorType::get({kAmaxLanes}, b.getF32Type());
  Value scaleLanes = vector::BroadcastOp::create(
      b, loc, laneType, tensor::ExtractOp::create(b, loc, scale, ValueRange{}));
  SmallVector<Value> results = forEachRowInParallel(
      b, loc, rows, outputs,
      [&](OpBuilder &b, Location loc, Value row, ValueRange slices) {
        auto loop = scf::ForOp::create(
            b, loc, index(b, loc, 0), index(b, loc, cols),
            index(b, loc, kAmaxLanes),
            ValueRange{emitZeroAmaxBitsVector(b, loc), slices[0]},
            [&](OpBuilder &b, Location loc, Value col, ValueRange carried) {
              Value x = readLanesF32(b, loc, matrix, row, col);
              Value max = arith::MaxUIOp::create(
                  b, loc, carried[0], emitAmaxBitsOfLanes(b, loc, x));
              Value codes = emitF32ToFP8(
                  b, loc, arith::MulFOp::create(b, loc, x, scaleLanes),
                  fp8Type);
              Value written = vector::TransferWriteOp::create(
                                  b, loc, codes, carried[1], ValueRange{col},
                                  ArrayRef<bool>{true})
                                  .getResult();
              scf::YieldOp::create(b, loc, ValueRange{max, written});
            });
        Value rowMax = writeRowScalar(
            b, loc,
            vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXUI,
                                        loop.getResult(0)),
            slices[1]);
        return SmallVector<Value>{loop.getResult(1), rowMax};
      });
  Value rowMax = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({rows}, i32), results[1],
      ArrayRef<ReassociationIndices>{{0, 1}});
  return std::make_pair(viewAs(b, loc, results[0], dataType),
                        reduceRowMaxima(b, loc, rowMax));
}

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
    if (op.getMode() != ScalingMode::per_tensor)
      return rewriter.notifyMatchFailure(op, "a block scaling mode");
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    Value scale = adaptor.getScale();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<Value> results;
    // The row-wise data alone: one pass over the input (the cast and the
    // amax written as vector code: as a scalar fused loop LLVM kept it
    // scalar, 3.5x slower than two vectorized loops).
    Value amax;
    if (op.getData() && !op.getColumnwiseData()) {
      if (std::optional<std::pair<Value, Value>> fused = buildFusedQuantize(
              rewriter, loc, input, scale,
              cast<RankedTensorType>(op.getData().getType()))) {
        results.push_back(fused->first);
        amax = fused->second;
      }
    }
    if (Value data = op.getData(); data && !amax) {
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
    results.push_back(buildScaleInv(rewriter, loc, scale));
    results.push_back(amax ? amax : buildAmax(rewriter, loc, input));
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DequantizeOpLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getMode() != ScalingMode::per_tensor)
      return rewriter.notifyMatchFailure(op, "a block scaling mode");
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

/// The row sums of op(A), dequantized (the per_tensor or MXFP8 scales
/// applied to each element), in f32: TE's BGRADB bias gradient, the sum of
/// dY over the tokens in the wgrad GEMM.
Value buildRowSumsOfA(OpBuilder &b, Location loc, ScaledMatmulOp op, Value a,
                      Value aScaleInv, int64_t m) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), k = getAffineDimExpr(1, ctx);
  bool transposed = op.getTransposeA();
  SmallVector<Value> inputs = {a};
  SmallVector<AffineMap> maps = {
      AffineMap::get(2, 0, transposed ? ArrayRef{k, i} : ArrayRef{i, k}, ctx)};
  bool mxfp8 = aScaleInv && op.getAScalingMode() == ScalingMode::mxfp8_1x32;
  if (aScaleInv) {
    inputs.push_back(aScaleInv);
    AffineExpr block = k.floorDiv(32);
    maps.push_back(mxfp8 ? AffineMap::get(2, 0,
                                          transposed ? ArrayRef{block, i}
                                                     : ArrayRef{i, block},
                                          ctx)
                         : scalarMap(ctx, 2));
  }
  maps.push_back(AffineMap::get(2, 0, {i}, ctx));
  Value init = host_attention::filledTensor(b, loc, {m}, b.getF32Type(),
                                            b.getF32FloatAttr(0));
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, init, maps,
             {utils::IteratorType::parallel, utils::IteratorType::reduction},
             [&](OpBuilder &b, Location loc, ValueRange args) {
               Value value = emitExtToF32(b, loc, args[0]);
               if (args.size() == 3) {
                 Value scale = mxfp8 ? emitE8M0ToF32(b, loc, args[1]) : args[1];
                 value = arith::MulFOp::create(b, loc, value, scale);
               }
               linalg::YieldOp::create(
                   b, loc,
                   arith::AddFOp::create(b, loc, args.back(), value)
                       .getResult());
             })
      .getResult(0);
}

/// The column sums of an f32 [M, N] matrix: TE's DGELU_BGRAD bias gradient.
Value buildColumnSums(OpBuilder &b, Location loc, Value matrix, int64_t n) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
  Value init = host_attention::filledTensor(b, loc, {n}, b.getF32Type(),
                                            b.getF32FloatAttr(0));
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {i, j}, ctx),
                                 AffineMap::get(2, 0, {j}, ctx)};
  return linalg::GenericOp::create(
             b, loc, init.getType(), matrix, init, maps,
             {utils::IteratorType::reduction, utils::IteratorType::parallel},
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(
                   b, loc,
                   arith::AddFOp::create(b, loc, args[1], args[0]).getResult());
             })
      .getResult(0);
}

/// `value` (f32) rounded to the element type of `type`, elementwise.
Value truncTensor(OpBuilder &b, Location loc, Value value,
                  RankedTensorType type) {
  if (type.getElementType().isF32())
    return value;
  int64_t rank = type.getRank();
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, value, init,
             SmallVector<AffineMap>(2, b.getMultiDimIdentityMap(rank)),
             parallelLoops(rank),
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(
                   b, loc,
                   emitTruncFromF32(b, loc, args[0], type.getElementType()));
             })
      .getResult(0);
}

/// te.scaled_matmul: the product on the host GEMM (GemmLowering.cpp), then
/// one pass of the epilogue over [M, N].
struct ScaledMatmulOpLowering : OpConversionPattern<ScaledMatmulOp> {
  ScaledMatmulOpLowering(MLIRContext *context, const BF16PairDotUnit *dotUnit,
                         const BF16TileUnit *tileUnit, int64_t lanes)
      : OpConversionPattern(context), dotUnit(dotUnit), tileUnit(tileUnit),
        lanes(lanes) {}

  LogicalResult
  matchAndRewrite(ScaledMatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type f32 = rewriter.getF32Type();
    RankedTensorType dType = op.getD().getType();
    int64_t m = dType.getDimSize(0), n = dType.getDimSize(1);
    AffineExpr j = getAffineDimExpr(1, ctx);

    HostGemmKernel kernel = chooseHostGemmKernel(
        op.getA().getType().getElementType(), dotUnit, tileUnit, lanes);
    Value padded = buildHostGemmProduct(rewriter, loc, op, adaptor.getA(),
                                        adaptor.getB(), adaptor.getAScaleInv(),
                                        adaptor.getBScaleInv(), kernel);
    SmallVector<OpFoldResult> zeros(2, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(m),
                                       rewriter.getIndexAttr(n)};
    SmallVector<OpFoldResult> ones(2, rewriter.getIndexAttr(1));
    Value product = tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get({m, n}, f32), padded, zeros, sizes,
        ones);

    // The epilogue: P = alpha * product [+ C], then TE's bias, GELU or
    // dGELU, one pass writing D and the side outputs.
    AffineMap identity = rewriter.getMultiDimIdentityMap(2);
    SmallVector<Value> inputs = {product};
    SmallVector<AffineMap> maps = {identity};
    bool perTensor =
        op.hasFP8Operands() && op.getAScalingMode() == ScalingMode::per_tensor;
    if (perTensor) {
      inputs.append({adaptor.getAScaleInv(), adaptor.getBScaleInv()});
      maps.append({scalarMap(ctx, 2), scalarMap(ctx, 2)});
    }
    auto addInput = [&](Value value, AffineMap map) -> int {
      if (!value)
        return -1;
      inputs.push_back(value);
      maps.push_back(map);
      return inputs.size() - 1;
    };
    int cIndex = addInput(adaptor.getC(), identity);
    int biasIndex = addInput(adaptor.getBias(), AffineMap::get(2, 0, {j}, ctx));
    int geluInputIndex = addInput(adaptor.getGeluInput(), identity);

    bool fp8Out = op.hasFP8Output();
    bool columnSums = op.getBiasGrad() && op.getGeluInput();
    SmallVector<Type> outputTypes = {fp8Out ? RankedTensorType::get({m, n}, f32)
                                            : dType};
    if (Value pre = op.getPreGeluResult())
      outputTypes.push_back(pre.getType());
    if (columnSums)
      outputTypes.push_back(RankedTensorType::get({m, n}, f32));
    SmallVector<Value> inits;
    for (Type type : outputTypes) {
      auto tensorType = cast<RankedTensorType>(type);
      inits.push_back(tensor::EmptyOp::create(
          rewriter, loc, tensorType.getShape(), tensorType.getElementType()));
      maps.push_back(identity);
    }
    bool gelu = op.getGelu(), preGelu = op.getPreGelu();
    auto epilogue = linalg::GenericOp::create(
        rewriter, loc, outputTypes, inputs, inits, maps, parallelLoops(2),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value value = args[0];
          if (perTensor)
            value = arith::MulFOp::create(
                b, loc, value, arith::MulFOp::create(b, loc, args[1], args[2]));
          if (cIndex >= 0)
            value = arith::AddFOp::create(b, loc, value,
                                          emitExtToF32(b, loc, args[cIndex]));
          if (biasIndex >= 0)
            value = arith::AddFOp::create(
                b, loc, value, emitExtToF32(b, loc, args[biasIndex]));
          SmallVector<Value> results;
          Value beforeGelu = value;
          if (gelu)
            value = emitGelu(b, loc, value);
          if (geluInputIndex >= 0)
            value = arith::MulFOp::create(
                b, loc, value,
                emitGeluGrad(b, loc,
                             emitExtToF32(b, loc, args[geluInputIndex])));
          results.push_back(emitTruncFromF32(
              b, loc, value,
              cast<RankedTensorType>(outputTypes[0]).getElementType()));
          if (preGelu)
            results.push_back(emitTruncFromF32(
                b, loc, beforeGelu,
                cast<RankedTensorType>(outputTypes[1]).getElementType()));
          if (columnSums)
            results.push_back(value);
          linalg::YieldOp::create(b, loc, results);
        });

    SmallVector<Value> replacements;
    Value d = epilogue.getResult(0);
    if (fp8Out) {
      replacements.push_back(buildScaledCast(
          rewriter, loc, d, adaptor.getOutScale(), dType, identity, {0, 1}));
      replacements.push_back(buildAmax(rewriter, loc, d));
    } else {
      replacements.push_back(d);
    }
    if (preGelu)
      replacements.push_back(epilogue.getResult(1));
    if (Value biasGrad = op.getBiasGradResult()) {
      Value sums =
          columnSums
              ? buildColumnSums(rewriter, loc, epilogue.getResults().back(), n)
              : buildRowSumsOfA(rewriter, loc, op, adaptor.getA(),
                                adaptor.getAScaleInv(), m);
      replacements.push_back(truncTensor(
          rewriter, loc, sums, cast<RankedTensorType>(biasGrad.getType())));
    }
    rewriter.replaceOp(op, replacements);
    return success();
  }

private:
  const BF16PairDotUnit *dotUnit;
  const BF16TileUnit *tileUnit;
  int64_t lanes;
};

/// te.grouped_matmul: the host GEMM over panels that each hold one group's
/// rows, then one pass that reads each row's product and applies its
/// group's scales and bias.
struct GroupedMatmulOpLowering : OpConversionPattern<GroupedMatmulOp> {
  GroupedMatmulOpLowering(MLIRContext *context, const BF16PairDotUnit *dotUnit,
                          const BF16TileUnit *tileUnit, int64_t lanes)
      : OpConversionPattern(context), dotUnit(dotUnit), tileUnit(tileUnit),
        lanes(lanes) {}

  LogicalResult
  matchAndRewrite(GroupedMatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType dType = op.getD().getType();
    HostGemmKernel kernel = chooseHostGemmKernel(
        op.getA().getType().getElementType(), dotUnit, tileUnit, lanes);
    HostGroupedGemmProduct grouped = buildHostGroupedGemmProduct(
        rewriter, loc, op, adaptor.getA(), adaptor.getB(), adaptor.getSplits(),
        adaptor.getAScaleInv(), adaptor.getBScaleInv(), kernel);
    bool perTensor =
        op.hasFP8Operands() && op.getAScalingMode() == ScalingMode::per_tensor;
    Value c = adaptor.getC(), bias = adaptor.getBias();
    Value d = host_attention::generateTensor(
        rewriter, loc, dType.getShape(), dType.getElementType(),
        [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
          Value group =
              tensor::ExtractOp::create(b, loc, grouped.rowGroup, i[0]);
          Value row =
              tensor::ExtractOp::create(b, loc, grouped.productRow, i[0]);
          Value value = tensor::ExtractOp::create(b, loc, grouped.product,
                                                  ValueRange{row, i[1]});
          if (perTensor) {
            Value alpha = arith::MulFOp::create(
                b, loc,
                tensor::ExtractOp::create(b, loc, adaptor.getAScaleInv(),
                                          group),
                tensor::ExtractOp::create(b, loc, adaptor.getBScaleInv(),
                                          group));
            value = arith::MulFOp::create(b, loc, value, alpha);
          }
          if (c)
            value = arith::AddFOp::create(
                b, loc, value,
                emitExtToF32(b, loc, tensor::ExtractOp::create(b, loc, c, i)));
          if (bias)
            value = arith::AddFOp::create(
                b, loc, value,
                emitExtToF32(b, loc,
                             tensor::ExtractOp::create(
                                 b, loc, bias, ValueRange{group, i[1]})));
          return emitTruncFromF32(b, loc, value, dType.getElementType());
        });
    rewriter.replaceOp(op, d);
    return success();
  }

private:
  const BF16PairDotUnit *dotUnit;
  const BF16TileUnit *tileUnit;
  int64_t lanes;
};

//===----------------------------------------------------------------------===//
// Block scaling (MXFP8 1x32, fp32 1x128 and 128x128 blocks)
//===----------------------------------------------------------------------===//

} // namespace

/// The reassociation between a rank-n static shape and its 2-D view
/// [prod(leading), last].
static SmallVector<ReassociationIndices> reassociationTo2D(int64_t rank) {
  if (rank == 1)
    return {{0, 1}};
  ReassociationIndices leading;
  for (int64_t i = 0; i + 1 < rank; ++i)
    leading.push_back(i);
  return {leading, {rank - 1}};
}

Value mlir::te::viewAs2D(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rank = type.getRank();
  if (rank == 2)
    return value;
  int64_t cols = type.getShape().back(), rows = 1;
  for (int64_t size : type.getShape().drop_back())
    rows *= size;
  auto matrix = RankedTensorType::get({rows, cols}, type.getElementType());
  if (rank == 1)
    return tensor::ExpandShapeOp::create(b, loc, matrix, value,
                                         reassociationTo2D(1));
  return tensor::CollapseShapeOp::create(b, loc, matrix, value,
                                         reassociationTo2D(rank));
}

Value mlir::te::viewAs(OpBuilder &b, Location loc, Value matrix,
                       RankedTensorType type) {
  int64_t rank = type.getRank();
  if (rank == 2)
    return matrix;
  if (rank == 1)
    return tensor::CollapseShapeOp::create(b, loc, type, matrix,
                                           reassociationTo2D(1));
  return tensor::ExpandShapeOp::create(b, loc, type, matrix,
                                       reassociationTo2D(rank));
}

namespace {

/// max |x| of every [block.rows, block.cols] block of the 2-D `matrix`, as
/// an f32 [ceil(rows / block.rows), ceil(cols / block.cols)] tensor. Edge
/// blocks are padded with zeros, which do not change a maximum magnitude.
Value buildBlockAmax(OpBuilder &b, Location loc, Value matrix,
                     BlockShape block) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(matrix.getType());
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t blockRows = llvm::divideCeil(rows, block.rows);
  int64_t blockCols = llvm::divideCeil(cols, block.cols);
  Type element = type.getElementType();
  if (blockRows * block.rows != rows || blockCols * block.cols != cols) {
    // Pad with a gather rather than tensor.pad, whose bufferized copy into a
    // strided view needs MLIR's runtime library (memrefCopy).
    auto padded = RankedTensorType::get(
        {blockRows * block.rows, blockCols * block.cols}, element);
    Value init = tensor::EmptyOp::create(b, loc, padded.getShape(), element);
    Value source = matrix;
    matrix = linalg::GenericOp::create(
                 b, loc, padded, ValueRange{}, init,
                 b.getMultiDimIdentityMap(2), parallelLoops(2),
                 [&](OpBuilder &b, Location loc, ValueRange args) {
                   Value i = linalg::IndexOp::create(b, loc, 0);
                   Value j = linalg::IndexOp::create(b, loc, 1);
                   auto index = [&](int64_t v) {
                     return arith::ConstantIndexOp::create(b, loc, v);
                   };
                   Value inside = arith::AndIOp::create(
                       b, loc,
                       arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             i, index(rows)),
                       arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                             j, index(cols)));
                   Value clampedI =
                       arith::MinUIOp::create(b, loc, i, index(rows - 1));
                   Value clampedJ =
                       arith::MinUIOp::create(b, loc, j, index(cols - 1));
                   Value value = tensor::ExtractOp::create(
                       b, loc, source, ValueRange{clampedI, clampedJ});
                   Value zero = arith::ConstantOp::create(
                       b, loc, b.getZeroAttr(element));
                   linalg::YieldOp::create(
                       b, loc,
                       arith::SelectOp::create(b, loc, inside, value, zero)
                           .getResult());
                 })
                 .getResult(0);
  }
  Type i32 = b.getI32Type();
  if (block.rows == 1 && block.cols % kAmaxLanes == 0) {
    // Row blocks (MXFP8 1x32, 1x128) as a few vectors each: see buildAmax
    // for why the scalar form of this reduction stays scalar.
    Value empty = tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{blockRows, blockCols}, i32);
    Value source = matrix;
    Value bits =
        linalg::GenericOp::create(
            b, loc, empty.getType(), ValueRange{}, empty,
            b.getMultiDimIdentityMap(2), parallelLoops(2),
            [&](OpBuilder &b, Location loc, ValueRange) {
              Value row = linalg::IndexOp::create(b, loc, 0);
              Value first = arith::MulIOp::create(
                  b, loc, linalg::IndexOp::create(b, loc, 1),
                  arith::ConstantIndexOp::create(b, loc, block.cols));
              Value acc = emitZeroAmaxBitsVector(b, loc);
              for (int64_t lane = 0; lane < block.cols; lane += kAmaxLanes)
                acc = arith::MaxUIOp::create(
                    b, loc, acc,
                    emitAmaxBitsVector(
                        b, loc, source, row,
                        arith::AddIOp::create(
                            b, loc, first,
                            arith::ConstantIndexOp::create(b, loc, lane))));
              linalg::YieldOp::create(
                  b, loc,
                  vector::ReductionOp::create(b, loc,
                                              vector::CombiningKind::MAXUI, acc)
                      .getResult());
            })
            .getResult(0);
    return bitsToF32(b, loc, bits);
  }
  auto blocked = RankedTensorType::get(
      {blockRows, block.rows, blockCols, block.cols}, element);
  matrix =
      tensor::ExpandShapeOp::create(b, loc, blocked, matrix, {{0, 1}, {2, 3}});
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{blockRows, blockCols}, i32);
  Value zeroBits = arith::ConstantIntOp::create(b, loc, i32, 0);
  init = linalg::FillOp::create(b, loc, zeroBits, init).getResult(0);
  AffineExpr d0 = getAffineDimExpr(0, ctx), d2 = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4),
                                 AffineMap::get(4, 0, {d0, d2}, ctx)};
  SmallVector<utils::IteratorType> loops = {
      utils::IteratorType::parallel, utils::IteratorType::reduction,
      utils::IteratorType::parallel, utils::IteratorType::reduction};
  // The unsigned max over the bits of |x|: see emitAmaxBits.
  Value bits =
      linalg::GenericOp::create(
          b, loc, init.getType(), matrix, init, maps, loops,
          [](OpBuilder &b, Location loc, ValueRange args) {
            Value magnitude =
                emitAmaxBits(b, loc, emitExtToF32(b, loc, args[0]));
            linalg::YieldOp::create(
                b, loc,
                arith::MaxUIOp::create(b, loc, args[1], magnitude).getResult());
          })
          .getResult(0);
  return bitsToF32(b, loc, bits);
}

/// The map from an element (i, j) of the matrix to its block's scale.
AffineMap blockOfElementMap(MLIRContext *ctx, BlockShape block) {
  return AffineMap::get(2, 0,
                        {getAffineDimExpr(0, ctx).floorDiv(block.rows),
                         getAffineDimExpr(1, ctx).floorDiv(block.cols)},
                        ctx);
}

/// Quantizes the 2-D `matrix` in `block`s; returns (data [rows, cols] of
/// `fp8Type`, scale_inv [block rows, block cols] of `scaleType`).
/// buildBlockQuantize in one pass over `matrix`, for blocks of one row and
/// whole vectors of kAmaxLanes that tile the rows: the rows in parallel,
/// each block's vectors read once for its amax, its scale and its FP8
/// cast. nullopt for other blocks and shapes.
std::optional<std::pair<Value, Value>>
buildRowBlockQuantize(OpBuilder &b, Location loc, QuantizeOp op, Value matrix,
                      BlockShape block, FloatType fp8Type, Type scaleType) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(matrix.getType()).getShape();
  int64_t rows = shape[0], cols = shape[1];
  if (block.rows != 1 || block.cols % kAmaxLanes != 0 || cols % block.cols != 0)
    return std::nullopt;
  int64_t blocks = cols / block.cols, lanesPerBlock = block.cols / kAmaxLanes;
  auto index = [&](OpBuilder &b, Location loc, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  SmallVector<Value> outputs = {
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows, cols}, fp8Type),
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows, blocks},
                              scaleType)};
  auto laneType = VectorType::get({kAmaxLanes}, b.getF32Type());
  SmallVector<Value> results = forEachRowInParallel(
      b, loc, rows, outputs,
      [&](OpBuilder &b, Location loc, Value row, ValueRange slices) {
        auto loop = scf::ForOp::create(
            b, loc, index(b, loc, 0), index(b, loc, blocks), index(b, loc, 1),
            slices,
            [&](OpBuilder &b, Location loc, Value blockIndex,
                ValueRange carried) {
              Value col0 = arith::MulIOp::create(b, loc, blockIndex,
                                                 index(b, loc, block.cols));
              SmallVector<Value> xs, columns;
              Value bits = emitZeroAmaxBitsVector(b, loc);
              for (int64_t part = 0; part < lanesPerBlock; ++part) {
                columns.push_back(arith::AddIOp::create(
                    b, loc, col0, index(b, loc, part * kAmaxLanes)));
                xs.push_back(readLanesF32(b, loc, matrix, row, columns.back()));
                bits = arith::MaxUIOp::create(
                    b, loc, bits, emitAmaxBitsOfLanes(b, loc, xs.back()));
              }
              Value amax = arith::BitcastOp::create(
                  b, loc, b.getF32Type(),
                  vector::ReductionOp::create(
                      b, loc, vector::CombiningKind::MAXUI, bits));
              BlockScale scale =
                  emitBlockScale(b, loc, op, amax, fp8Type, scaleType);
              Value scales = tensor::InsertOp::create(
                  b, loc, scale.scaleInv, carried[1], ValueRange{blockIndex});
              Value data = carried[0];
              Value multiplier = vector::BroadcastOp::create(b, loc, laneType,
                                                             scale.multiplier);
              for (int64_t part = 0; part < lanesPerBlock; ++part)
                data =
                    vector::TransferWriteOp::create(
                        b, loc,
                        emitF32ToFP8(
                            b, loc,
                            arith::MulFOp::create(b, loc, xs[part], multiplier),
                            fp8Type),
                        data, ValueRange{columns[part]}, ArrayRef<bool>{true})
                        .getResult();
              scf::YieldOp::create(b, loc, ValueRange{data, scales});
            });
        return SmallVector<Value>(loop.getResults());
      });
  return std::make_pair(results[0], results[1]);
}

std::pair<Value, Value> buildBlockQuantize(OpBuilder &b, Location loc,
                                           QuantizeOp op, Value matrix,
                                           BlockShape block, FloatType fp8Type,
                                           Type scaleType) {
  if (std::optional<std::pair<Value, Value>> fused =
          buildRowBlockQuantize(b, loc, op, matrix, block, fp8Type, scaleType))
    return *fused;
  MLIRContext *ctx = b.getContext();
  Value amax = buildBlockAmax(b, loc, matrix, block);
  auto amaxType = cast<RankedTensorType>(amax.getType());

  // Per block: the scale_inv result and the multiplier applied to the data.
  Value scaleInit =
      tensor::EmptyOp::create(b, loc, amaxType.getShape(), scaleType);
  Value multiplierInit =
      tensor::EmptyOp::create(b, loc, amaxType.getShape(), b.getF32Type());
  SmallVector<AffineMap> maps(3, b.getMultiDimIdentityMap(2));
  auto perBlock = linalg::GenericOp::create(
      b, loc, TypeRange{scaleInit.getType(), multiplierInit.getType()}, amax,
      ValueRange{scaleInit, multiplierInit}, maps, parallelLoops(2),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        BlockScale scale =
            emitBlockScale(b, loc, op, args[0], fp8Type, scaleType);
        linalg::YieldOp::create(b, loc,
                                ValueRange{scale.scaleInv, scale.multiplier});
      });

  auto matrixType = cast<RankedTensorType>(matrix.getType());
  auto dataType = RankedTensorType::get(matrixType.getShape(), fp8Type);
  Value dataInit =
      tensor::EmptyOp::create(b, loc, dataType.getShape(), fp8Type);
  SmallVector<AffineMap> dataMaps = {b.getMultiDimIdentityMap(2),
                                     blockOfElementMap(ctx, block),
                                     b.getMultiDimIdentityMap(2)};
  Value data = linalg::GenericOp::create(
                   b, loc, dataType, ValueRange{matrix, perBlock.getResult(1)},
                   dataInit, dataMaps, parallelLoops(2),
                   [&](OpBuilder &b, Location loc, ValueRange args) {
                     Value scaled = arith::MulFOp::create(
                         b, loc, emitExtToF32(b, loc, args[0]), args[1]);
                     linalg::YieldOp::create(
                         b, loc, emitF32ToFP8(b, loc, scaled, fp8Type));
                   })
                   .getResult(0);
  return {data, perBlock.getResult(0)};
}

struct BlockQuantizeOpLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ScalingMode mode = op.getMode();
    if (mode == ScalingMode::per_tensor)
      return rewriter.notifyMatchFailure(op, "per-tensor quantization");
    if (std::optional<std::string> reason = getCPUUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    bool mxfp8 = mode == ScalingMode::mxfp8_1x32;
    SmallVector<Value> results;
    auto emitCopy = [&](Value data, Value scaleInv, bool columnwise) {
      auto dataType = cast<RankedTensorType>(data.getType());
      auto scaleType = cast<RankedTensorType>(scaleInv.getType());
      auto fp8Type = cast<FloatType>(dataType.getElementType());
      Value matrix = viewAs2D(rewriter, loc, input);
      if (columnwise && !mxfp8) {
        // Stored transposed: the row-wise quantization of the transpose.
        auto type = cast<RankedTensorType>(matrix.getType());
        Value init = tensor::EmptyOp::create(
            rewriter, loc,
            ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
            type.getElementType());
        matrix = linalg::TransposeOp::create(rewriter, loc, matrix, init,
                                             ArrayRef<int64_t>{1, 0})
                     .getResult()[0];
      }
      BlockShape block = getScalingBlockShape(mode, mxfp8 && columnwise);
      auto [quantized, scales] =
          buildBlockQuantize(rewriter, loc, op, matrix, block, fp8Type,
                             scaleType.getElementType());
      results.push_back(viewAs(rewriter, loc, quantized, dataType));
      results.push_back(viewAs(rewriter, loc, scales, scaleType));
    };
    if (op.hasRowwise())
      emitCopy(op.getData(), op.getScaleInv(), /*columnwise=*/false);
    if (op.hasColumnwise())
      emitCopy(op.getColumnwiseData(), op.getColumnwiseScaleInv(),
               /*columnwise=*/true);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct BlockDequantizeOpLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ScalingMode mode = op.getMode();
    if (mode == ScalingMode::per_tensor)
      return rewriter.notifyMatchFailure(op, "per-tensor dequantization");
    if (std::optional<std::string> reason = getCPUUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    bool mxfp8 = mode == ScalingMode::mxfp8_1x32;
    BlockShape block = getScalingBlockShape(mode, mxfp8 && op.getColumnwise());
    Value data = viewAs2D(rewriter, loc, adaptor.getData());
    Value scales = viewAs2D(rewriter, loc, adaptor.getScaleInv());
    RankedTensorType resultType = op.getResult().getType();
    Type element = resultType.getElementType();
    auto matrixType = RankedTensorType::get(
        cast<RankedTensorType>(data.getType()).getShape(), element);
    Value init =
        tensor::EmptyOp::create(rewriter, loc, matrixType.getShape(), element);
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(2),
                                   blockOfElementMap(ctx, block),
                                   rewriter.getMultiDimIdentityMap(2)};
    Value matrix =
        linalg::GenericOp::create(
            rewriter, loc, matrixType, ValueRange{data, scales}, init, maps,
            parallelLoops(2),
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value scaleInv = mxfp8 ? emitE8M0ToF32(b, loc, args[1]) : args[1];
              Value value = arith::MulFOp::create(
                  b, loc, emitFP8ToF32(b, loc, args[0]), scaleInv);
              linalg::YieldOp::create(b, loc,
                                      emitTruncFromF32(b, loc, value, element));
            })
            .getResult(0);
    rewriter.replaceOp(op, viewAs(rewriter, loc, matrix, resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct ConvertTEToLinalgPass
    : te::impl::ConvertTEToLinalgBase<ConvertTEToLinalgPass> {
  using Base::Base;

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

    ConvertTEToLinalgOptions options;
    options.dotUnit = dotUnit;
    options.tileUnit = tileUnit;
    options.vectorLanes = vectorLanes;
    if (failed(applyTEToLinalgConversion(module.getOperation(), options)))
      signalPassFailure();
  }
};

/// A collective as a call of the device's collective library; the cpu
/// target runs the program's other ops as kernels before and after it.
template <typename CollectiveOp>
struct CollectiveLowering : OpConversionPattern<CollectiveOp> {
  using OpConversionPattern<CollectiveOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CollectiveOp op, typename CollectiveOp::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason = getCollectiveUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    return lowerCollective(rewriter, op);
  }
};

/// The unit `options` names, or failure (reported at `anchor`) for a name
/// no unit has.
FailureOr<const BF16PairDotUnit *>
lookUpDotUnit(Operation *anchor, const ConvertTEToLinalgOptions &options) {
  if (options.dotUnit.empty())
    return static_cast<const BF16PairDotUnit *>(nullptr);
  if (const BF16PairDotUnit *unit = getBF16PairDotUnit(options.dotUnit))
    return unit;
  return emitError(anchor->getLoc(), "convert-te-to-linalg: unknown dot-unit '")
         << options.dotUnit << "'; known units: " << getBF16PairDotUnitNames()
         << ", or empty for none";
}

/// The tile unit `options` names, or failure (reported at `anchor`) for a
/// name no unit has.
FailureOr<const BF16TileUnit *>
lookUpTileUnit(Operation *anchor, const ConvertTEToLinalgOptions &options) {
  if (options.tileUnit.empty())
    return static_cast<const BF16TileUnit *>(nullptr);
  if (const BF16TileUnit *unit = getBF16TileUnit(options.tileUnit))
    return unit;
  return emitError(anchor->getLoc(),
                   "convert-te-to-linalg: unknown tile-unit '")
         << options.tileUnit << "'; known units: " << getBF16TileUnitNames()
         << ", or empty for none";
}

} // namespace

BF16PairDotUnit::~BF16PairDotUnit() = default;
BF16TileUnit::~BF16TileUnit() = default;

const BF16TileUnit *mlir::te::getBF16TileUnit(StringRef name) {
  const BF16TileUnit &amx = getAMXBF16TileUnit();
  return amx.getName() == name ? &amx : nullptr;
}

std::string mlir::te::getBF16TileUnitNames() {
  return getAMXBF16TileUnit().getName().str();
}

/// Every unit the dot-unit option can name.
static ArrayRef<const BF16PairDotUnit *> getBF16PairDotUnits() {
  static const BF16PairDotUnit *const units[] = {&getAVX512BF16DotUnit()};
  return units;
}

const BF16PairDotUnit *mlir::te::getBF16PairDotUnit(StringRef name) {
  for (const BF16PairDotUnit *unit : getBF16PairDotUnits())
    if (unit->getName() == name)
      return unit;
  return nullptr;
}

std::string mlir::te::getBF16PairDotUnitNames() {
  std::string names;
  for (const BF16PairDotUnit *unit : getBF16PairDotUnits())
    names += (names.empty() ? "" : ", ") + unit->getName().str();
  return names;
}

LogicalResult
mlir::te::applyTEToLinalgConversion(ArrayRef<Operation *> ops,
                                    const ConvertTEToLinalgOptions &options) {
  if (ops.empty())
    return success();
  MLIRContext *context = ops.front()->getContext();
  ConversionTarget target(*context);
  target.addIllegalDialect<TEDialect>();
  target.addLegalOp<ProcessGroupOp>();
  target.addLegalDialect<
      arith::ArithDialect, bufferization::BufferizationDialect,
      func::FuncDialect, linalg::LinalgDialect, math::MathDialect,
      memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect,
      vector::VectorDialect, x86vector::X86VectorDialect, amx::AMXDialect>();
  RewritePatternSet patterns(context);
  if (failed(
          populateTEToLinalgConversionPatterns(patterns, options, ops.front())))
    return failure();
  return applyPartialConversion(ops, target, std::move(patterns));
}

LogicalResult mlir::te::populateTEToLinalgConversionPatterns(
    RewritePatternSet &patterns, const ConvertTEToLinalgOptions &options,
    Operation *anchor) {
  FailureOr<const BF16PairDotUnit *> dotUnit = lookUpDotUnit(anchor, options);
  if (failed(dotUnit))
    return failure();
  FailureOr<const BF16TileUnit *> tileUnit = lookUpTileUnit(anchor, options);
  if (failed(tileUnit))
    return failure();
  patterns.add<
      AmaxOpLowering, ComputeScaleOpLowering, UpdateDelayedScalingOpLowering,
      QuantizeOpLowering, DequantizeOpLowering, BlockQuantizeOpLowering,
      BlockDequantizeOpLowering, CollectiveLowering<AllReduceOp>,
      CollectiveLowering<AllGatherOp>, CollectiveLowering<ReduceScatterOp>,
      CollectiveLowering<AllToAllOp>, CollectiveLowering<PermuteOp>,
      CollectiveLowering<GroupRankOp>>(patterns.getContext());
  patterns.add<ScaledMatmulOpLowering, GroupedMatmulOpLowering>(
      patterns.getContext(), *dotUnit, *tileUnit, options.vectorLanes);
  populateAttentionLoweringPatterns(patterns, *dotUnit);
  populateNormLoweringPatterns(patterns);
  populateActivationLoweringPatterns(patterns);
  populateRopeLoweringPatterns(patterns);
  populateCrossEntropyLoweringPatterns(patterns);
  return success();
}

void mlir::te::populateTEToLinalgConversionPatterns(
    RewritePatternSet &patterns) {
  (void)populateTEToLinalgConversionPatterns(patterns, {}, nullptr);
}
