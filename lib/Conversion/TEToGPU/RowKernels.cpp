//===- RowKernels.cpp - Row reductions, column sums, quantizable outputs --===//
//
// What the kernels of the row-wise op families (norms, cross-entropy, the
// activations' fused epilogues) share: one warp per row with its sums and
// maxima by XOR shuffles, deterministic column sums over rows, and an op's
// quantizable output finished by the FP8 kernels.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

void gpu_lowering::forEachRowOfWarp(
    OpBuilder &b, Location loc, int64_t rows, unsigned warpSize,
    function_ref<void(OpBuilder &, Location, Value, Value)> body) {
  Value size = indexConstant(b, loc, warpSize);
  Value thread = globalThreadIndex(b, loc);
  Value warp = arith::DivUIOp::create(b, loc, thread, size);
  Value lane = arith::RemUIOp::create(b, loc, thread, size);
  Value warps = arith::DivUIOp::create(b, loc, globalThreadCount(b, loc), size);
  scf::ForOp::create(b, loc, warp, indexConstant(b, loc, rows), warps,
                     ValueRange{},
                     [&](OpBuilder &b, Location loc, Value row, ValueRange) {
                       body(b, loc, row, lane);
                       scf::YieldOp::create(b, loc);
                     });
}

SmallVector<Value> gpu_lowering::forEachLaneItem(
    OpBuilder &b, Location loc, Value lane, int64_t count, unsigned warpSize,
    ValueRange inits,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
        body) {
  auto loop = scf::ForOp::create(
      b, loc, lane, indexConstant(b, loc, count),
      indexConstant(b, loc, warpSize), inits,
      [&](OpBuilder &b, Location loc, Value item, ValueRange carried) {
        scf::YieldOp::create(b, loc, body(b, loc, item, carried));
      });
  return SmallVector<Value>(loop.getResults());
}

Value gpu_lowering::warpSum(OpBuilder &b, Location loc, Value value,
                            unsigned warpSize) {
  return reduceOverLanes(b, loc, value, warpSize, warpSize,
                         [&](Value x, Value y) -> Value {
                           return arith::AddFOp::create(b, loc, x, y);
                         });
}

Value gpu_lowering::warpMax(OpBuilder &b, Location loc, Value value,
                            unsigned warpSize) {
  return reduceOverLanes(b, loc, value, warpSize, warpSize,
                         [&](Value x, Value y) -> Value {
                           return arith::MaximumFOp::create(b, loc, x, y);
                         });
}

void gpu_lowering::ifFirstLane(OpBuilder &b, Location loc, Value lane,
                               function_ref<void(OpBuilder &, Location)> body) {
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      indexConstant(b, loc, 0));
  auto branch = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  body(b, loc);
}

//===----------------------------------------------------------------------===//
// Column sums
//===----------------------------------------------------------------------===//

/// Rows one thread of the first kernel sums for its column.
constexpr int64_t kRowsPerChunk = 64;

ColumnSums ColumnSums::add(KernelSet &set, OpBuilder &b, Location loc,
                           StringRef name, MemRefType sourceType,
                           MemRefType outType) {
  MLIRContext *context = b.getContext();
  ColumnSums sums;
  sums.set = &set;
  sums.columns = sourceType.getShape().back();
  sums.rows = sums.columns ? sourceType.getNumElements() / sums.columns : 0;
  sums.chunks =
      std::max<int64_t>((sums.rows + kRowsPerChunk - 1) / kRowsPerChunk, 1);
  auto partialType =
      MemRefType::get({sums.chunks * sums.columns}, Float32Type::get(context));
  int64_t columns = sums.columns, rows = sums.rows;

  // <name>_partial(source, partial): partial[chunk][c] = the f32 sum of
  // its rows' column c, in row order. Consecutive threads take consecutive
  // columns of a chunk, so each row's reads are coalesced.
  {
    OpBuilder::InsertionGuard guard(b);
    sums.partial =
        set.addKernel(b, (name + "_partial").str(), {sourceType, partialType});
    Value source = flatten(b, loc, sums.partial.getArgument(0));
    Value partial = sums.partial.getArgument(1);
    gridStrideLoop(
        b, loc, sums.chunks * columns, Value(),
        [&](OpBuilder &b, Location loc, Value i, Value) -> Value {
          Value chunk =
              arith::DivUIOp::create(b, loc, i, indexConstant(b, loc, columns));
          Value column =
              arith::RemUIOp::create(b, loc, i, indexConstant(b, loc, columns));
          Value first = arith::MulIOp::create(
              b, loc, chunk, indexConstant(b, loc, kRowsPerChunk));
          Value last = arith::MinUIOp::create(
              b, loc,
              arith::AddIOp::create(b, loc, first,
                                    indexConstant(b, loc, kRowsPerChunk)),
              indexConstant(b, loc, rows));
          auto loop = scf::ForOp::create(
              b, loc, first, last, indexConstant(b, loc, 1),
              ValueRange{emitF32Constant(b, loc, 0.0)},
              [&](OpBuilder &b, Location loc, Value row, ValueRange acc) {
                Value at = arith::AddIOp::create(
                    b, loc,
                    arith::MulIOp::create(b, loc, row,
                                          indexConstant(b, loc, columns)),
                    column);
                Value x = emitExtToF32(
                    b, loc, memref::LoadOp::create(b, loc, source, at));
                scf::YieldOp::create(
                    b, loc,
                    ValueRange{arith::AddFOp::create(b, loc, acc[0], x)});
              });
          memref::StoreOp::create(b, loc, loop.getResult(0), partial, i);
          return Value();
        });
  }
  // <name>_finalize(partial, out): out[c] = the chunks' sums in order,
  // rounded once.
  {
    OpBuilder::InsertionGuard guard(b);
    sums.finalize =
        set.addKernel(b, (name + "_finalize").str(), {partialType, outType});
    Value partial = sums.finalize.getArgument(0);
    Value out = flatten(b, loc, sums.finalize.getArgument(1));
    int64_t chunks = sums.chunks;
    gridStrideLoop(
        b, loc, columns, Value(),
        [&](OpBuilder &b, Location loc, Value column, Value) -> Value {
          auto loop = scf::ForOp::create(
              b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, chunks),
              indexConstant(b, loc, 1),
              ValueRange{emitF32Constant(b, loc, 0.0)},
              [&](OpBuilder &b, Location loc, Value chunk, ValueRange acc) {
                Value at = arith::AddIOp::create(
                    b, loc,
                    arith::MulIOp::create(b, loc, chunk,
                                          indexConstant(b, loc, columns)),
                    column);
                Value x = memref::LoadOp::create(b, loc, partial, at);
                scf::YieldOp::create(
                    b, loc,
                    ValueRange{arith::AddFOp::create(b, loc, acc[0], x)});
              });
          memref::StoreOp::create(b, loc,
                                  emitTruncFromF32(b, loc, loop.getResult(0),
                                                   outType.getElementType()),
                                  out, column);
          return Value();
        });
  }
  return sums;
}

void ColumnSums::launch(OpBuilder &host, Location loc, Value source,
                        Value out) const {
  auto partialType = RankedTensorType::get({chunks * columns},
                                           Float32Type::get(host.getContext()));
  Value partialBuffer = allocateOutput(host, loc, partialType);
  set->launch(host, partial, blocksFor(chunks * columns), kBlockSize,
              {source, partialBuffer});
  set->launch(host, finalize, blocksFor(columns), kBlockSize,
              {partialBuffer, out});
}

//===----------------------------------------------------------------------===//
// Quantizable outputs
//===----------------------------------------------------------------------===//

QuantizableOutput::QuantizableOutput(const QuantizedOutputLayout &layout,
                                     ResultRange results, ScalingModeAttr mode,
                                     QuantizeUsageAttr usage,
                                     BoolAttr pow2Scales, FloatAttr amaxEpsilon,
                                     Value scale, ArrayRef<int64_t> shape,
                                     Type rounded, bool wantF32)
    : layout(layout), results(results), mode(mode), usage(usage),
      pow2Scales(pow2Scales), amaxEpsilon(amaxEpsilon), scale(scale),
      shape(shape) {
  Value output = layout.getOutput(results);
  Type element =
      output ? cast<ShapedType>(output.getType()).getElementType() : rounded;
  castFromF32 = mode && mode.getValue() == ScalingMode::per_tensor && !output;
  // The rounded values where they are a result or the quantizer's input;
  // the f32 values where the amax, per_tensor's cast or the caller take
  // them (the rounded ones when they are f32).
  if (output || (mode && !castFromF32)) {
    roundedIndex = elements.size();
    elements.push_back(element);
  }
  if (layout.hasAmax || castFromF32 || wantF32) {
    if (roundedIndex >= 0 && element.isF32()) {
      f32 = roundedIndex;
    } else {
      f32 = elements.size();
      elements.push_back(Float32Type::get(element.getContext()));
    }
  }
}

RankedTensorType QuantizableOutput::typeOf(Type element) const {
  return RankedTensorType::get(shape, element);
}

SmallVector<Value> QuantizableOutput::allocate(OpBuilder &host, Location loc) {
  buffers.clear();
  for (Type element : elements)
    buffers.push_back(allocateOutput(host, loc, typeOf(element)));
  return buffers;
}

LogicalResult QuantizableOutput::replaceOp(RewriterBase &rewriter,
                                           Operation *op,
                                           ArrayRef<Value> trailing,
                                           const GPUTargetInfo &target) {
  Location loc = op->getLoc();
  // One tensor per buffer, whichever results read it.
  SmallVector<Value> tensors(buffers.size());
  auto tensorOf = [&](int index) {
    if (!tensors[index])
      tensors[index] =
          outputTensor(rewriter, loc, buffers[index], typeOf(elements[index]));
    return tensors[index];
  };
  // The te.quantize and te.amax that finish the results are built and
  // lowered with a rewriter of their own: to the driver of the pattern
  // that called this, only `op` is replaced.
  IRRewriter finisher(rewriter.getContext());
  finisher.setInsertionPoint(rewriter.getInsertionBlock(),
                             rewriter.getInsertionPoint());
  SmallVector<Value> values;
  SmallVector<Operation *> finishing;
  if (layout.getOutput(results))
    values.push_back(tensorOf(roundedIndex));
  if (mode) {
    Value source = tensorOf(castFromF32 ? f32 : roundedIndex);
    auto quantize = QuantizeOp::create(
        finisher, loc, layout.getQuantized(results).getTypes(), source, scale,
        mode, usage, pow2Scales, amaxEpsilon);
    llvm::append_range(values, quantize.getResults());
    finishing.push_back(quantize);
  }
  if (layout.hasAmax) {
    auto amax = AmaxOp::create(finisher, loc, tensorOf(f32));
    values.push_back(amax.getResult());
    finishing.push_back(amax);
  }
  for (Operation *next : finishing)
    if (std::optional<std::string> reason = getFP8UnsupportedReason(next))
      return op->emitError(*reason);
  for (auto [buffer, result] :
       llvm::zip_equal(trailing, results.take_back(trailing.size())))
    values.push_back(outputTensor(rewriter, loc, buffer,
                                  cast<RankedTensorType>(result.getType())));
  rewriter.replaceOp(op, values);
  for (Operation *next : finishing) {
    finisher.setInsertionPoint(next);
    if (failed(lowerFP8Op(finisher, next, target)))
      return failure();
  }
  return success();
}
