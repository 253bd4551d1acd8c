//===- CrossEntropyKernels.cpp - te.cross_entropy on a GPU ----------------===//
//
// The forward is one warp per row of the [N, V] logits in the passes of the
// op's description: the row's maximum (and the label-smoothing sum), then
// d = sum exp(x - m), then the loss (lane 0) and the gradient written in
// 16-byte vectors, in f32 until its one rounding. With `reduce_loss`, one
// warp first counts the rows not ignored (N), and one sums the rows'
// losses after. The backward scales the gradient elementwise. Targets outside
// the row are clamped into it for the reads (te-insert-checks reports them).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

Value f32(OpBuilder &b, Location loc, double value) {
  return emitF32Constant(b, loc, value);
}

/// The f32 values of vector `v` (of `width` elements) of `row` in the flat
/// [N * V] `buffer`, and the vector's first element and column.
struct RowVector {
  Value index, column;
  SmallVector<Value> values;

  static RowVector load(OpBuilder &b, Location loc, Value buffer, Value row,
                        Value v, int64_t vocab, int64_t width) {
    Value column =
        arith::MulIOp::create(b, loc, v, indexConstant(b, loc, width));
    Value index = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, row, indexConstant(b, loc, vocab)),
        column);
    SmallVector<Value> values;
    for (Value x : loadElements(b, loc, buffer, index, width))
      values.push_back(emitExtToF32(b, loc, x));
    return {index, column, values};
  }
};

/// A row's loss from its target's logit, m, d and the smoothing sum:
/// -(x_y - m - log d), smoothed when `smoothing` > 0.
Value emitRowLoss(OpBuilder &b, Location loc, Value xy, Value m, Value d,
                  Value scaledSum, double smoothing) {
  Value logD = math::LogOp::create(b, loc, d);
  Value value = arith::NegFOp::create(
      b, loc,
      arith::SubFOp::create(b, loc, arith::SubFOp::create(b, loc, xy, m),
                            logD));
  if (smoothing <= 0)
    return value;
  Value lse = arith::AddFOp::create(b, loc, m, logD);
  Value smooth = arith::AddFOp::create(
      b, loc, scaledSum,
      arith::MulFOp::create(b, loc, f32(b, loc, smoothing), lse));
  return arith::AddFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, value, f32(b, loc, 1.0 - smoothing)),
      smooth);
}

/// Whether the class `t` (i32 or i64) is `ignore`.
Value isIgnored(OpBuilder &b, Location loc, Value t, int64_t ignore) {
  if (!t.getType().isInteger(64))
    t = arith::ExtSIOp::create(b, loc, b.getI64Type(), t);
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, t,
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), ignore));
}

/// count_rows(target, count): N, the rows whose class is not `ignore` (at
/// least 1), as an f32, by one warp.
gpu::GPUFuncOp addCountRows(KernelSet &set, OpBuilder &b, Location loc,
                            MemRefType targetType, int64_t ignore) {
  auto scalarType = MemRefType::get({}, b.getF32Type());
  auto kernel = set.addKernel(b, "count_rows", {targetType, scalarType});
  int64_t rows = targetType.getNumElements();
  unsigned warpSize = set.getTarget().getWarpSize();
  Value targets = flatten(b, loc, kernel.getArgument(0));
  Value lane = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Type i32 = b.getI32Type();
  SmallVector<Value> counted = forEachLaneItem(
      b, loc, lane, rows, warpSize,
      ValueRange{arith::ConstantIntOp::create(b, loc, i32, 0)},
      [&](OpBuilder &b, Location loc, Value i,
          ValueRange acc) -> SmallVector<Value> {
        Value ignored = isIgnored(
            b, loc, memref::LoadOp::create(b, loc, targets, i), ignore);
        Value kept = arith::SelectOp::create(
            b, loc, ignored, arith::ConstantIntOp::create(b, loc, i32, 0),
            arith::ConstantIntOp::create(b, loc, i32, 1));
        return {arith::AddIOp::create(b, loc, acc[0], kept)};
      });
  Value total = reduceOverLanes(b, loc, counted[0], warpSize, warpSize,
                                [&](Value x, Value y) -> Value {
                                  return arith::AddIOp::create(b, loc, x, y);
                                });
  ifFirstLane(b, loc, lane, [&](OpBuilder &b, Location loc) {
    Value atLeastOne = arith::MaxSIOp::create(
        b, loc, total, arith::ConstantIntOp::create(b, loc, i32, 1));
    memref::StoreOp::create(
        b, loc, arith::SIToFPOp::create(b, loc, b.getF32Type(), atLeastOne),
        kernel.getArgument(1), ValueRange{});
  });
  return kernel;
}

/// loss_mean(losses, count, loss): one warp sums the `rows` losses, then
/// divides by N.
gpu::GPUFuncOp addLossMean(KernelSet &set, OpBuilder &b, Location loc,
                           int64_t rows) {
  auto scalarType = MemRefType::get({}, b.getF32Type());
  auto kernel = set.addKernel(
      b, "loss_mean",
      {MemRefType::get({rows}, b.getF32Type()), scalarType, scalarType});
  unsigned warpSize = set.getTarget().getWarpSize();
  Value lane = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  SmallVector<Value> sum = forEachLaneItem(
      b, loc, lane, rows, warpSize, ValueRange{f32(b, loc, 0.0)},
      [&](OpBuilder &b, Location loc, Value i,
          ValueRange acc) -> SmallVector<Value> {
        Value loss = memref::LoadOp::create(b, loc, kernel.getArgument(0), i);
        return {arith::AddFOp::create(b, loc, acc[0], loss)};
      });
  Value total = warpSum(b, loc, sum[0], warpSize);
  ifFirstLane(b, loc, lane, [&](OpBuilder &b, Location loc) {
    Value n =
        memref::LoadOp::create(b, loc, kernel.getArgument(1), ValueRange{});
    memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, total, n),
                            kernel.getArgument(2), ValueRange{});
  });
  return kernel;
}

LogicalResult lowerCrossEntropy(RewriterBase &rewriter, CrossEntropyOp op,
                                const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
  int64_t vocab = logitsType.getShape().back();
  int64_t rows = vocab ? logitsType.getNumElements() / vocab : 0;
  Type element = logitsType.getElementType();
  int64_t width = vectorWidth(element, vocab);
  int64_t vectors = vocab / width;
  double smoothing = op.getLabelSmoothing().convertToDouble();
  float eps = static_cast<float>(smoothing / static_cast<double>(vocab));
  bool reduce = op.getReduceLoss();
  int64_t ignore = op.getIgnoreIndex();

  unsigned warpSize = target.getWarpSize();
  auto rowsType = RankedTensorType::get({rows}, Float32Type::get(context));
  auto gradType = cast<RankedTensorType>(op.getGrad().getType());
  Type gradElement = gradType.getElementType();
  auto lossType = cast<RankedTensorType>(op.getLoss().getType());
  auto scalarType = RankedTensorType::get({}, Float32Type::get(context));
  // The rows' losses: the loss itself, or what loss_mean sums.
  RankedTensorType lossesType = reduce ? rowsType : lossType;

  KernelSet set(op, "cross_entropy", target);
  OpBuilder b(context);
  gpu::GPUFuncOp countKernel;
  if (reduce)
    countKernel =
        addCountRows(set, b, loc, bufferTypeOf(op.getTarget()), ignore);

  // cross_entropy(logits, target, [count], losses, grad): losses[row] per
  // row.
  SmallVector<Type> arguments = {bufferTypeOf(op.getLogits()),
                                 bufferTypeOf(op.getTarget())};
  if (reduce)
    arguments.push_back(bufferType(scalarType));
  arguments.push_back(bufferType(lossesType));
  arguments.push_back(bufferType(gradType));
  auto kernel = set.addKernel(b, "cross_entropy", arguments);
  {
    unsigned next = 0;
    Value logits = flatten(b, loc, kernel.getArgument(next++));
    Value targets = flatten(b, loc, kernel.getArgument(next++));
    Value n = reduce ? memref::LoadOp::create(
                           b, loc, kernel.getArgument(next++), ValueRange{})
                           .getResult()
                     : Value();
    Value losses = flatten(b, loc, kernel.getArgument(next++));
    Value grad = flatten(b, loc, kernel.getArgument(next++));
    forEachRowOfWarp(
        b, loc, rows, warpSize,
        [&](OpBuilder &b, Location loc, Value row, Value lane) {
          // The row's target: ignored, or its column clamped into the row.
          Value t = memref::LoadOp::create(b, loc, targets, row);
          Value ignored = isIgnored(b, loc, t, ignore);
          if (!t.getType().isInteger(64))
            t = arith::ExtSIOp::create(b, loc, b.getI64Type(), t);
          auto i64 = [&](int64_t v) {
            return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
          };
          Value column = arith::IndexCastOp::create(
              b, loc, b.getIndexType(),
              arith::MinSIOp::create(b, loc,
                                     arith::MaxSIOp::create(b, loc, t, i64(0)),
                                     i64(vocab - 1)));

          // m and the smoothing sum, then d.
          SmallVector<Value> firstPass = forEachLaneItem(
              b, loc, lane, vectors, warpSize,
              ValueRange{f32(b, loc, -std::numeric_limits<double>::infinity()),
                         f32(b, loc, 0.0)},
              [&](OpBuilder &b, Location loc, Value v,
                  ValueRange acc) -> SmallVector<Value> {
                RowVector x =
                    RowVector::load(b, loc, logits, row, v, vocab, width);
                Value max = acc[0], sum = acc[1];
                for (Value value : x.values) {
                  max = arith::MaximumFOp::create(b, loc, max, value);
                  if (smoothing > 0)
                    sum = arith::AddFOp::create(
                        b, loc, sum,
                        arith::MulFOp::create(b, loc, f32(b, loc, -eps),
                                              value));
                }
                return {max, sum};
              });
          Value m = warpMax(b, loc, firstPass[0], warpSize);
          Value scaledSum = warpSum(b, loc, firstPass[1], warpSize);
          SmallVector<Value> secondPass = forEachLaneItem(
              b, loc, lane, vectors, warpSize, ValueRange{f32(b, loc, 0.0)},
              [&](OpBuilder &b, Location loc, Value v,
                  ValueRange acc) -> SmallVector<Value> {
                RowVector x =
                    RowVector::load(b, loc, logits, row, v, vocab, width);
                Value sum = acc[0];
                for (Value value : x.values)
                  sum = arith::AddFOp::create(
                      b, loc, sum,
                      math::ExpOp::create(
                          b, loc, arith::SubFOp::create(b, loc, value, m)));
                return {sum};
              });
          Value d = warpSum(b, loc, secondPass[0], warpSize);

          // The loss: -(x_y - m - log d), smoothed.
          ifFirstLane(b, loc, lane, [&](OpBuilder &b, Location loc) {
            Value at = arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(b, loc, row,
                                      indexConstant(b, loc, vocab)),
                column);
            Value xy = emitExtToF32(b, loc,
                                    memref::LoadOp::create(b, loc, logits, at));
            Value value = emitRowLoss(b, loc, xy, m, d, scaledSum, smoothing);
            memref::StoreOp::create(b, loc,
                                    arith::SelectOp::create(b, loc, ignored,
                                                            f32(b, loc, 0.0),
                                                            value),
                                    losses, row);
          });

          // The gradient, in f32 until its one rounding; the target's entry
          // gets -(1 - label_smoothing) / N.
          Value targetShift =
              f32(b, loc, static_cast<float>(-(1.0 - smoothing)));
          if (n)
            targetShift = arith::DivFOp::create(b, loc, targetShift, n);
          forEachLaneItem(
              b, loc, lane, vectors, warpSize, ValueRange{},
              [&](OpBuilder &b, Location loc, Value v,
                  ValueRange) -> SmallVector<Value> {
                RowVector x =
                    RowVector::load(b, loc, logits, row, v, vocab, width);
                SmallVector<Value> out;
                for (auto [k, value] : llvm::enumerate(x.values)) {
                  Value p = arith::DivFOp::create(
                      b, loc,
                      math::ExpOp::create(
                          b, loc, arith::SubFOp::create(b, loc, value, m)),
                      d);
                  Value g = arith::SubFOp::create(b, loc, p, f32(b, loc, eps));
                  if (n)
                    g = arith::DivFOp::create(b, loc, g, n);
                  Value j = arith::AddIOp::create(b, loc, x.column,
                                                  indexConstant(b, loc, k));
                  Value isTarget = arith::CmpIOp::create(
                      b, loc, arith::CmpIPredicate::eq, j, column);
                  g = arith::SelectOp::create(
                      b, loc, isTarget,
                      arith::AddFOp::create(b, loc, g, targetShift), g);
                  g = arith::SelectOp::create(b, loc, ignored, f32(b, loc, 0.0),
                                              g);
                  out.push_back(emitTruncFromF32(b, loc, g, gradElement));
                }
                storeElements(b, loc, grad, x.index, out);
                return {};
              });
        });
  }
  gpu::GPUFuncOp mean;
  if (reduce)
    mean = addLossMean(set, b, loc, rows);
  set.finish();

  OpBuilder &host = rewriter;
  Value losses = allocateOutput(host, loc, lossesType);
  Value grad = allocateOutput(host, loc, gradType);
  Value targets = readBuffer(host, loc, op.getTarget());
  SmallVector<Value> operands = {readBuffer(host, loc, op.getLogits()),
                                 targets};
  Value count;
  if (reduce) {
    count = allocateOutput(host, loc, scalarType);
    set.launch(host, countKernel, 1, warpSize, {targets, count});
    operands.push_back(count);
  }
  operands.push_back(losses);
  operands.push_back(grad);
  set.launch(host, kernel, blocksFor(rows * warpSize), kBlockSize, operands);
  Value loss = losses;
  if (reduce) {
    loss = allocateOutput(host, loc, lossType);
    set.launch(host, mean, 1, warpSize, {losses, count, loss});
  }
  replaceWithOutputs(rewriter, op, {loss, grad});
  return success();
}

LogicalResult lowerCrossEntropyBackward(RewriterBase &rewriter,
                                        CrossEntropyBackwardOp op,
                                        const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  auto gradType = cast<RankedTensorType>(op.getGrad().getType());
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  int64_t vocab = gradType.getShape().back();
  Type element = resultType.getElementType();
  // Vectors as wide as both types allow (an f32 grad: 4).
  int64_t width = std::min(vectorWidth(gradType.getElementType(), vocab),
                           vectorWidth(element, vocab));
  int64_t vectors = gradType.getNumElements() / width;
  bool perRow = op.getDloss().getType().getRank() != 0;

  // cross_entropy_backward(grad, dloss, result) = grad * dloss, elementwise.
  KernelSet set(op, "cross_entropy_backward", target);
  OpBuilder b(op.getContext());
  auto kernel =
      set.addKernel(b, "cross_entropy_backward",
                    {bufferTypeOf(op.getGrad()), bufferTypeOf(op.getDloss()),
                     bufferType(resultType)});
  Value grad = flatten(b, loc, kernel.getArgument(0));
  Value dlossBuffer = kernel.getArgument(1);
  if (perRow)
    dlossBuffer = flatten(b, loc, dlossBuffer);
  Value result = flatten(b, loc, kernel.getArgument(2));
  gridStrideLoop(
      b, loc, vectors, Value(),
      [&](OpBuilder &b, Location loc, Value i, Value) -> Value {
        Value first =
            arith::MulIOp::create(b, loc, i, indexConstant(b, loc, width));
        Value dloss =
            perRow ? memref::LoadOp::create(
                         b, loc, dlossBuffer,
                         ValueRange{arith::DivUIOp::create(
                             b, loc, first, indexConstant(b, loc, vocab))})
                         .getResult()
                   : memref::LoadOp::create(b, loc, dlossBuffer, ValueRange{})
                         .getResult();
        SmallVector<Value> out;
        for (Value g : loadElements(b, loc, grad, first, width))
          out.push_back(emitTruncFromF32(
              b, loc,
              arith::MulFOp::create(b, loc, emitExtToF32(b, loc, g), dloss),
              element));
        storeElements(b, loc, result, first, out);
        return Value();
      });
  set.finish();

  OpBuilder &host = rewriter;
  Value out = allocateOutput(host, loc, resultType);
  set.launch(host, kernel, blocksFor(vectors), kBlockSize,
             {readBuffer(host, loc, op.getGrad()),
              readBuffer(host, loc, op.getDloss()), out});
  replaceWithOutputs(rewriter, op, {out});
  return success();
}

} // namespace

bool gpu_lowering::isCrossEntropyOp(Operation *op) {
  return isa<CrossEntropyOp, CrossEntropyBackwardOp>(op);
}

LogicalResult gpu_lowering::lowerCrossEntropyOp(RewriterBase &rewriter,
                                                Operation *op,
                                                const GPUTargetInfo &target) {
  if (auto forward = dyn_cast<CrossEntropyOp>(op))
    return lowerCrossEntropy(rewriter, forward, target);
  return lowerCrossEntropyBackward(rewriter, cast<CrossEntropyBackwardOp>(op),
                                   target);
}
