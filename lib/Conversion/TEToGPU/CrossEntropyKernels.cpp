//===- CrossEntropyKernels.cpp - te.cross_entropy on a GPU ----------------===//
//
// The forward is one warp per row of the [N, V] logits in the passes of the
// op's description: the row's maximum (and the label-smoothing sum), then
// d = sum exp(x - m), then the loss (lane 0) and the gradient written in
// 16-byte vectors, in f32 until its one rounding. With `reduce_loss`, one
// warp first counts the rows not ignored (N), and one sums the rows'
// losses after. With the vocabulary split over a group, the statistics of
// this rank's columns are a kernel of their own, gathered from every rank
// (te.all_gather) and combined in rank order by the loss and gradient
// kernel (CrossEntropyMath.h, the host lowering's formula). The backward
// scales the gradient elementwise. Targets outside the row are clamped into
// it for the reads (te-insert-checks reports them).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/CrossEntropyMath.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/LibraryCall.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cassert>
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

/// One te.cross_entropy on a GPU: its shapes and attributes, and the
/// pieces its per-row kernels are built of (each row one warp, its lanes
/// on vectors of the row).
struct CrossEntropyLowering {
  CrossEntropyOp op;
  int64_t vocab, rows, width, vectors, shards, ignore;
  double smoothing;
  float eps;
  /// The vocabulary split over the op's group: the statistics are
  /// gathered and combined between two kernels.
  bool split;
  Type gradElement;
  unsigned warpSize;

  explicit CrossEntropyLowering(CrossEntropyOp op, unsigned warpSize)
      : op(op), warpSize(warpSize) {
    auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
    vocab = logitsType.getShape().back();
    rows = vocab ? logitsType.getNumElements() / vocab : 0;
    width = vectorWidth(logitsType.getElementType(), vocab);
    vectors = vocab / width;
    split = static_cast<bool>(op.getGroupAttr());
    shards = op.getVocabShards();
    ignore = op.getIgnoreIndex();
    smoothing = op.getLabelSmoothing().convertToDouble();
    // TE's eps = label_smoothing / (n_cols * world_size).
    eps = static_cast<float>(smoothing / static_cast<double>(vocab * shards));
    gradElement =
        cast<RankedTensorType>(op.getGrad().getType()).getElementType();
  }

  /// `body` on each vector of `row` of the logits that `lane` takes (in
  /// f32), carrying `init`; returns the lane's carried values.
  SmallVector<Value>
  overRow(OpBuilder &b, Location loc, Value logits, Value row, Value lane,
          ValueRange init,
          function_ref<SmallVector<Value>(OpBuilder &, Location,
                                          const RowVector &, ValueRange)>
              body) const {
    return forEachLaneItem(
        b, loc, lane, vectors, warpSize, init,
        [&](OpBuilder &b, Location loc, Value v,
            ValueRange acc) -> SmallVector<Value> {
          return body(b, loc,
                      RowVector::load(b, loc, logits, row, v, vocab, width),
                      acc);
        });
  }

  /// The smoothing sum `sum` plus -eps x.
  Value addSmoothingTerm(OpBuilder &b, Location loc, Value sum, Value x) const {
    return arith::AddFOp::create(
        b, loc, sum, arith::MulFOp::create(b, loc, f32(b, loc, -eps), x));
  }

  /// A row's target: whether it is ignored, whether this rank's columns
  /// hold its class, and its column among them (clamped into the row for
  /// the reads).
  struct RowTarget {
    Value ignored, mine, column;
  };

  /// The target of `row`; `rank` (i32) is this rank's place in the group
  /// when the vocabulary is split, else null.
  RowTarget targetOf(OpBuilder &b, Location loc, Value targets, Value row,
                     Value rank) const {
    Value t = memref::LoadOp::create(b, loc, targets, row);
    Value ignored = isIgnored(b, loc, t, ignore);
    Type i64 = b.getI64Type();
    if (!t.getType().isInteger(64))
      t = arith::ExtSIOp::create(b, loc, i64, t);
    auto constant = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i64, v);
    };
    Value local = t;
    Value mine = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    if (rank) {
      // Column j of this rank is class rank * V + j.
      local = arith::SubIOp::create(
          b, loc, t,
          arith::MulIOp::create(b, loc,
                                arith::ExtSIOp::create(b, loc, i64, rank),
                                constant(vocab)));
      mine = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, local,
                                constant(0)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, local,
                                constant(vocab)));
    }
    Value column = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        arith::MinSIOp::create(
            b, loc, arith::MaxSIOp::create(b, loc, local, constant(0)),
            constant(vocab - 1)));
    return {ignored, mine, column};
  }

  /// The statistics of this rank's columns of `row`: the max m (and with
  /// `scaledSum` the smoothing sum of -eps x) in one pass, then d.
  SoftmaxStats localStats(OpBuilder &b, Location loc, Value logits, Value row,
                          Value lane, Value *scaledSum) const {
    bool withSum = scaledSum && smoothing > 0;
    SmallVector<Value> firstPass = overRow(
        b, loc, logits, row, lane,
        ValueRange{f32(b, loc, -std::numeric_limits<double>::infinity()),
                   f32(b, loc, 0.0)},
        [&](OpBuilder &b, Location loc, const RowVector &x,
            ValueRange acc) -> SmallVector<Value> {
          Value max = acc[0], sum = acc[1];
          for (Value value : x.values) {
            max = arith::MaximumFOp::create(b, loc, max, value);
            if (withSum)
              sum = addSmoothingTerm(b, loc, sum, value);
          }
          return {max, sum};
        });
    Value m = warpMax(b, loc, firstPass[0], warpSize);
    if (withSum)
      *scaledSum = warpSum(b, loc, firstPass[1], warpSize);
    SmallVector<Value> secondPass =
        overRow(b, loc, logits, row, lane, ValueRange{f32(b, loc, 0.0)},
                [&](OpBuilder &b, Location loc, const RowVector &x,
                    ValueRange acc) -> SmallVector<Value> {
                  Value sum = acc[0];
                  for (Value value : x.values)
                    sum = arith::AddFOp::create(
                        b, loc, sum,
                        math::ExpOp::create(
                            b, loc, arith::SubFOp::create(b, loc, value, m)));
                  return {sum};
                });
    return {m, warpSum(b, loc, secondPass[0], warpSize), Value()};
  }

  /// The target's logit when this rank holds its class, else -inf.
  Value targetLogit(OpBuilder &b, Location loc, Value logits, Value row,
                    const RowTarget &target) const {
    Value at = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, row, indexConstant(b, loc, vocab)),
        target.column);
    Value xy = emitExtToF32(b, loc, memref::LoadOp::create(b, loc, logits, at));
    return arith::SelectOp::create(
        b, loc, target.mine, xy,
        f32(b, loc, -std::numeric_limits<double>::infinity()));
  }

  /// Lane 0 stores the row's loss (0 where ignored).
  void storeLoss(OpBuilder &b, Location loc, Value lane, Value losses,
                 Value row, const SoftmaxStats &stats, Value scaledSum,
                 const RowTarget &target) const {
    ifFirstLane(b, loc, lane, [&](OpBuilder &b, Location loc) {
      Value value =
          emitCrossEntropyRowLoss(b, loc, stats, scaledSum, smoothing);
      memref::StoreOp::create(b, loc,
                              arith::SelectOp::create(b, loc, target.ignored,
                                                      f32(b, loc, 0.0), value),
                              losses, row);
    });
  }

  /// Writes the row's gradient, in f32 until its one rounding (divided by
  /// `n` with reduce_loss; the target's entry gets -(1 - label_smoothing)
  /// / N). With `scaledSum`, also the smoothing sum of the row, from the
  /// same reads.
  void storeGradient(OpBuilder &b, Location loc, Value logits, Value grad,
                     Value row, Value lane, const SoftmaxStats &stats,
                     const RowTarget &target, Value n, Value *scaledSum) const {
    bool withSum = scaledSum && smoothing > 0;
    Value targetShift = f32(b, loc, static_cast<float>(-(1.0 - smoothing)));
    if (n)
      targetShift = arith::DivFOp::create(b, loc, targetShift, n);
    SmallVector<Value> sum = overRow(
        b, loc, logits, row, lane, ValueRange{f32(b, loc, 0.0)},
        [&](OpBuilder &b, Location loc, const RowVector &x,
            ValueRange acc) -> SmallVector<Value> {
          Value total = acc[0];
          SmallVector<Value> out;
          for (auto [k, value] : llvm::enumerate(x.values)) {
            if (withSum)
              total = addSmoothingTerm(b, loc, total, value);
            Value p = arith::DivFOp::create(
                b, loc,
                math::ExpOp::create(
                    b, loc, arith::SubFOp::create(b, loc, value, stats.m)),
                stats.d);
            Value g = arith::SubFOp::create(b, loc, p, f32(b, loc, eps));
            if (n)
              g = arith::DivFOp::create(b, loc, g, n);
            Value j = arith::AddIOp::create(b, loc, x.column,
                                            indexConstant(b, loc, k));
            Value isTarget = arith::AndIOp::create(
                b, loc, target.mine,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, j,
                                      target.column));
            g = arith::SelectOp::create(
                b, loc, isTarget, arith::AddFOp::create(b, loc, g, targetShift),
                g);
            g = arith::SelectOp::create(b, loc, target.ignored,
                                        f32(b, loc, 0.0), g);
            out.push_back(emitTruncFromF32(b, loc, g, gradElement));
          }
          storeElements(b, loc, grad, x.index, out);
          return {total};
        });
    if (withSum)
      *scaledSum = warpSum(b, loc, sum[0], warpSize);
  }

  /// cross_entropy_stats(logits, target, rank, stats): each row's m, d and
  /// x_y over this rank's columns, as the [N, 3] rows TE's
  /// online_softmax_kernel writes for the all-gather.
  gpu::GPUFuncOp addStats(KernelSet &set, OpBuilder &b, Location loc,
                          RankedTensorType statsType) {
    auto kernel = set.addKernel(
        b, "cross_entropy_stats",
        {bufferTypeOf(op.getLogits()), bufferTypeOf(op.getTarget()),
         MemRefType::get({}, b.getI32Type()), bufferType(statsType)});
    Value logits = flatten(b, loc, kernel.getArgument(0));
    Value targets = flatten(b, loc, kernel.getArgument(1));
    Value rank =
        memref::LoadOp::create(b, loc, kernel.getArgument(2), ValueRange{});
    Value stats = flatten(b, loc, kernel.getArgument(3));
    forEachRowOfWarp(
        b, loc, rows, warpSize,
        [&](OpBuilder &b, Location loc, Value row, Value lane) {
          RowTarget target = targetOf(b, loc, targets, row, rank);
          SoftmaxStats local = localStats(b, loc, logits, row, lane, nullptr);
          local.xy = targetLogit(b, loc, logits, row, target);
          ifFirstLane(b, loc, lane, [&](OpBuilder &b, Location loc) {
            Value first =
                arith::MulIOp::create(b, loc, row, indexConstant(b, loc, 3));
            for (auto [k, value] :
                 llvm::enumerate(ArrayRef<Value>{local.m, local.d, local.xy}))
              memref::StoreOp::create(
                  b, loc, value, stats,
                  ValueRange{arith::AddIOp::create(b, loc, first,
                                                   indexConstant(b, loc, k))});
          });
        });
    return kernel;
  }

  /// The row's statistics over the whole vocabulary from the gathered
  /// [shards N, 3] (rank after rank), combined in rank order from rank 0.
  SoftmaxStats combined(OpBuilder &b, Location loc, Value gathered,
                        Value row) const {
    auto at = [&](OpBuilder &b, Location loc, Value shard, int64_t k) -> Value {
      Value r = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, shard, indexConstant(b, loc, rows)),
          row);
      return memref::LoadOp::create(
          b, loc, gathered,
          ValueRange{arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(b, loc, r, indexConstant(b, loc, 3)),
              indexConstant(b, loc, k))});
    };
    Value zero = indexConstant(b, loc, 0);
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 1), indexConstant(b, loc, shards),
        indexConstant(b, loc, 1),
        ValueRange{at(b, loc, zero, 0), at(b, loc, zero, 1),
                   at(b, loc, zero, 2)},
        [&](OpBuilder &b, Location loc, Value k, ValueRange acc) {
          SoftmaxStats next = emitCombinedSoftmaxStats(
              b, loc, {acc[0], acc[1], acc[2]},
              {at(b, loc, k, 0), at(b, loc, k, 1), at(b, loc, k, 2)});
          scf::YieldOp::create(b, loc, ValueRange{next.m, next.d, next.xy});
        });
    return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
  }

  /// cross_entropy(logits, target, [rank, gathered], [count], losses,
  /// grad): each row's loss and gradient, from the row's own statistics
  /// or (split) the ranks' gathered ones.
  gpu::GPUFuncOp addLossAndGradient(KernelSet &set, OpBuilder &b, Location loc,
                                    RankedTensorType gatheredType,
                                    RankedTensorType lossesType) {
    bool reduce = op.getReduceLoss();
    SmallVector<Type> arguments = {bufferTypeOf(op.getLogits()),
                                   bufferTypeOf(op.getTarget())};
    auto scalar = [&](Type element) { return MemRefType::get({}, element); };
    if (split) {
      arguments.push_back(scalar(b.getI32Type()));
      arguments.push_back(bufferType(gatheredType));
    }
    if (reduce)
      arguments.push_back(scalar(b.getF32Type()));
    arguments.push_back(bufferType(lossesType));
    arguments.push_back(bufferTypeOf(op.getGrad()));
    auto kernel = set.addKernel(b, "cross_entropy", arguments);
    unsigned next = 0;
    Value logits = flatten(b, loc, kernel.getArgument(next++));
    Value targets = flatten(b, loc, kernel.getArgument(next++));
    Value rank, gathered;
    if (split) {
      rank = memref::LoadOp::create(b, loc, kernel.getArgument(next++),
                                    ValueRange{});
      gathered = flatten(b, loc, kernel.getArgument(next++));
    }
    Value n = reduce ? memref::LoadOp::create(
                           b, loc, kernel.getArgument(next++), ValueRange{})
                           .getResult()
                     : Value();
    Value losses = flatten(b, loc, kernel.getArgument(next++));
    Value grad = flatten(b, loc, kernel.getArgument(next++));
    forEachRowOfWarp(
        b, loc, rows, warpSize,
        [&](OpBuilder &b, Location loc, Value row, Value lane) {
          RowTarget target = targetOf(b, loc, targets, row, rank);
          Value scaledSum;
          if (split) {
            // The smoothing sum of this rank's columns comes with the
            // gradient's reads.
            SoftmaxStats stats = combined(b, loc, gathered, row);
            storeGradient(b, loc, logits, grad, row, lane, stats, target, n,
                          &scaledSum);
            storeLoss(b, loc, lane, losses, row, stats, scaledSum, target);
            return;
          }
          SoftmaxStats stats =
              localStats(b, loc, logits, row, lane, &scaledSum);
          stats.xy = targetLogit(b, loc, logits, row, target);
          storeLoss(b, loc, lane, losses, row, stats, scaledSum, target);
          storeGradient(b, loc, logits, grad, row, lane, stats, target, n,
                        nullptr);
        });
    return kernel;
  }
};

/// te.cross_entropy: with reduce_loss, count_rows first; with the
/// vocabulary split over a group, cross_entropy_stats, the group's rank
/// and the all-gather of the statistics (te's collectives, lowered where
/// they are made); then cross_entropy; with reduce_loss, loss_mean.
LogicalResult lowerCrossEntropy(RewriterBase &rewriter, CrossEntropyOp op,
                                const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  CrossEntropyLowering ce(op, target.getWarpSize());
  bool reduce = op.getReduceLoss();
  unsigned warpSize = target.getWarpSize();
  Type f32Type = Float32Type::get(context);
  auto rowsType = RankedTensorType::get({ce.rows}, f32Type);
  auto lossType = cast<RankedTensorType>(op.getLoss().getType());
  auto scalarType = RankedTensorType::get({}, f32Type);
  // The rows' losses: the loss itself, or what loss_mean sums.
  RankedTensorType lossesType = reduce ? rowsType : lossType;
  auto statsType = RankedTensorType::get({ce.rows, 3}, f32Type);
  auto gatheredType = RankedTensorType::get({ce.shards * ce.rows, 3}, f32Type);

  // The verifier resolved the group (its symbol use), so the collectives
  // below lower.
  assert((!ce.split || ce.shards >= 1) && "te.cross_entropy is verified");
  KernelSet set(op, "cross_entropy", target);
  OpBuilder b(context);
  gpu::GPUFuncOp countKernel, statsKernel, mean;
  if (reduce)
    countKernel =
        addCountRows(set, b, loc, bufferTypeOf(op.getTarget()), ce.ignore);
  if (ce.split)
    statsKernel = ce.addStats(set, b, loc, statsType);
  auto kernel = ce.addLossAndGradient(set, b, loc, gatheredType, lossesType);
  if (reduce)
    mean = addLossMean(set, b, loc, ce.rows);
  set.finish();

  OpBuilder &host = rewriter;
  Value logits = readBuffer(host, loc, op.getLogits());
  Value targets = readBuffer(host, loc, op.getTarget());
  SmallVector<Value> operands = {logits, targets};
  if (ce.split) {
    auto rank = GroupRankOp::create(
        rewriter, loc, RankedTensorType::get({}, rewriter.getI32Type()),
        op.getGroupAttr());
    Value rankBuffer = readBuffer(host, loc, rank);
    Value stats = allocateOutput(host, loc, statsType);
    set.launch(host, statsKernel, blocksFor(ce.rows * warpSize), kBlockSize,
               {logits, targets, rankBuffer, stats});
    operands.push_back(rankBuffer);
    // Over a group of one the rank's statistics are the gathered ones.
    AllGatherOp gather;
    if (ce.shards == 1) {
      operands.push_back(stats);
    } else {
      gather =
          AllGatherOp::create(rewriter, loc, gatheredType,
                              outputTensor(host, loc, stats, statsType),
                              op.getGroupAttr(), rewriter.getI64IntegerAttr(0));
      operands.push_back(readBuffer(host, loc, gather));
    }
    // The buffers above read the collectives' results, which their
    // lowerings replace.
    if (failed(lowerCollective(rewriter, rank)) ||
        (gather && failed(lowerCollective(rewriter, gather))))
      return failure();
  }
  Value count;
  if (reduce) {
    count = allocateOutput(host, loc, scalarType);
    set.launch(host, countKernel, 1, warpSize, {targets, count});
    operands.push_back(count);
  }
  Value losses = allocateOutput(host, loc, lossesType);
  Value grad =
      allocateOutput(host, loc, cast<RankedTensorType>(op.getGrad().getType()));
  operands.push_back(losses);
  operands.push_back(grad);
  set.launch(host, kernel, blocksFor(ce.rows * warpSize), kBlockSize, operands);
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
