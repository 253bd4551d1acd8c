//===- FP8Kernels.cpp - GPU kernels of te's FP8 ops -----------------------===//
//
// te.amax, te.compute_scale, te.update_delayed_scaling and te.quantize /
// te.dequantize with per-tensor scaling as GPU kernels (the block modes are
// BlockScalingKernels.cpp's). Elementwise kernels
// move 16 bytes per thread and access (vector loads and stores) and loop
// over the tensor with the whole grid; amaxes reduce a warp with shuffles,
// the block through shared memory, and take one atomic per block into an
// amax that a first kernel zeroed. All arithmetic is te's codec and scaling
// math (te/Conversion/TECommon), so results are bit-identical to the CPU
// backend's.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/ScalingMath.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

MemRefType scalarF32(MLIRContext *context) {
  return MemRefType::get({}, Float32Type::get(context));
}

/// Reads the f32 scalar buffer `buffer`.
Value loadScalar(OpBuilder &b, Location loc, Value buffer) {
  return memref::LoadOp::create(b, loc, buffer, ValueRange{});
}

void storeScalar(OpBuilder &b, Location loc, Value value, Value buffer) {
  memref::StoreOp::create(b, loc, value, buffer, ValueRange{});
}

/// Ends an amax kernel: the block's maximum of `bits` into `amax`.
void finishAmax(KernelSet &set, OpBuilder &b, Location loc,
                gpu::GPUFuncOp kernel, Value bits, Value amax) {
  Value scratch = kernel.getWorkgroupAttributions().front();
  Value blockMax =
      blockMaxBits(b, loc, bits, scratch, set.getTarget().getWarpSize());
  ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
    atomicMaxBits(b, loc, amax, blockMax);
  });
}

/// `amax(input, amax)`: raises amax to max |input| (te.amax's rule).
gpu::GPUFuncOp addAmaxKernel(KernelSet &set, OpBuilder &b, Location loc,
                             MemRefType inputType, int64_t &blocks) {
  MLIRContext *context = b.getContext();
  auto kernel = set.addKernel(
      b, "amax", {inputType, scalarF32(context)},
      {reductionScratchType(context, set.getTarget().getWarpSize())});
  Value input = flatten(b, loc, kernel.getArgument(0));
  int64_t count = inputType.getNumElements();
  int64_t width = vectorWidth(inputType.getElementType(), count);
  blocks = blocksFor(count / width);
  Value widthValue = indexConstant(b, loc, width);
  Value bits = gridStrideLoop(
      b, loc, count / width, i32Constant(b, loc, 0),
      [&](OpBuilder &b, Location loc, Value i, Value max) {
        Value first = arith::MulIOp::create(b, loc, i, widthValue);
        for (Value x : loadElements(b, loc, input, first, width))
          max = arith::MaxUIOp::create(
              b, loc, max, emitAmaxBits(b, loc, emitExtToF32(b, loc, x)));
        return max;
      });
  finishAmax(set, b, loc, kernel, bits, kernel.getArgument(1));
  return kernel;
}

//===----------------------------------------------------------------------===//
// te.amax
//===----------------------------------------------------------------------===//

LogicalResult lowerAmax(RewriterBase &rewriter, AmaxOp op,
                        const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  KernelSet set(op, "amax", target);
  OpBuilder b(op.getContext());
  gpu::GPUFuncOp init = addAmaxInit(set, b, loc);
  int64_t blocks = 1;
  gpu::GPUFuncOp reduce =
      addAmaxKernel(set, b, loc, bufferTypeOf(op.getInput()), blocks);
  set.finish();

  OpBuilder &host = rewriter;
  Value input = readBuffer(host, loc, op.getInput());
  Value amax = allocateOutput(host, loc, op.getType());
  set.launch(host, init, 1, 1, {amax});
  set.launch(host, reduce, blocks, kBlockSize, {input, amax});
  replaceWithOutputs(rewriter, op, {amax});
  return success();
}

//===----------------------------------------------------------------------===//
// te.compute_scale and te.update_delayed_scaling
//===----------------------------------------------------------------------===//

LogicalResult lowerComputeScale(RewriterBase &rewriter, ComputeScaleOp op,
                                const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  KernelSet set(op, "compute_scale", target);
  OpBuilder b(op.getContext());
  MemRefType type = bufferTypeOf(op.getAmax());
  auto kernel = set.addKernel(b, "compute_scale", {type, type});
  double fp8Max = *getFP8Max(op.getFp8Type());
  float epsilon = op.getEpsilon().convertToFloat();
  bool pow2 = op.getPow2Scales();
  auto scaleOf = [&](OpBuilder &b, Location loc, Value amax) {
    return emitScaleFromAmax(b, loc, amax, fp8Max, epsilon, pow2);
  };
  int64_t count = type.getNumElements();
  if (type.getRank() == 0) {
    ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
      storeScalar(b, loc,
                  scaleOf(b, loc, loadScalar(b, loc, kernel.getArgument(0))),
                  kernel.getArgument(1));
    });
  } else {
    Value amax = flatten(b, loc, kernel.getArgument(0));
    Value scale = flatten(b, loc, kernel.getArgument(1));
    gridStrideLoop(b, loc, count, Value(),
                   [&](OpBuilder &b, Location loc, Value i, Value) {
                     Value a = memref::LoadOp::create(b, loc, amax, i);
                     memref::StoreOp::create(b, loc, scaleOf(b, loc, a), scale,
                                             i);
                     return Value();
                   });
  }
  set.finish();

  OpBuilder &host = rewriter;
  Value amax = readBuffer(host, loc, op.getAmax());
  Value scale = allocateOutput(host, loc, op.getType());
  set.launch(host, kernel, blocksFor(count), kBlockSize, {amax, scale});
  replaceWithOutputs(rewriter, op, {scale});
  return success();
}

/// One thread per managed tensor j (S of them): rolls column j of the
/// history and computes its new scale.
LogicalResult lowerUpdateDelayedScaling(RewriterBase &rewriter,
                                        UpdateDelayedScalingOp op,
                                        const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  KernelSet set(op, "delayed_scaling", target);
  OpBuilder b(op.getContext());
  MemRefType historyType = bufferTypeOf(op.getAmaxHistory());
  MemRefType scaleType = bufferTypeOf(op.getAmax());
  auto kernel = set.addKernel(
      b, "update", {historyType, scaleType, scaleType, historyType, scaleType});
  int64_t length = historyType.getDimSize(0);
  int64_t entries = scaleType.getNumElements();
  double scaledMax = std::ldexp(*getFP8Max(op.getFp8Type()),
                                -static_cast<int>(op.getMarginAttr().getInt()));
  bool useMax = op.getAmaxAlgo() == AmaxComputeAlgo::max;

  Value history = flatten(b, loc, kernel.getArgument(0));
  Value newHistory = flatten(b, loc, kernel.getArgument(3));
  auto scalarOrFlat = [&](Value buffer) {
    return scaleType.getRank() == 0 ? buffer : flatten(b, loc, buffer);
  };
  Value amaxes = scalarOrFlat(kernel.getArgument(1));
  Value scales = scalarOrFlat(kernel.getArgument(2));
  Value newScales = scalarOrFlat(kernel.getArgument(4));
  Value stride = indexConstant(b, loc, entries);
  gridStrideLoop(
      b, loc, entries, Value(),
      [&](OpBuilder &b, Location loc, Value j, Value) {
        SmallVector<Value> at;
        if (scaleType.getRank() != 0)
          at.push_back(j);
        Value amax = memref::LoadOp::create(b, loc, amaxes, at);
        memref::StoreOp::create(b, loc, amax, newHistory, j);
        // history'[i] = history[i - 1], folding each into the maximum
        // (from 0, NaN skipped: maxnumf, as TE's fmaxf). With L = 1 there
        // is nothing to roll: the new amax is the whole history.
        Value maximum = arith::MaxNumFOp::create(
            b, loc, emitF32Constant(b, loc, 0.0), amax);
        if (length > 1) {
          auto roll = scf::ForOp::create(
              b, loc, indexConstant(b, loc, 1), indexConstant(b, loc, length),
              indexConstant(b, loc, 1), ValueRange{maximum},
              [&](OpBuilder &b, Location loc, Value i, ValueRange carried) {
                Value from = arith::AddIOp::create(
                    b, loc,
                    arith::MulIOp::create(
                        b, loc,
                        arith::SubIOp::create(b, loc, i,
                                              indexConstant(b, loc, 1)),
                        stride),
                    j);
                Value to = arith::AddIOp::create(
                    b, loc, arith::MulIOp::create(b, loc, i, stride), j);
                Value value = memref::LoadOp::create(b, loc, history, from);
                memref::StoreOp::create(b, loc, value, newHistory, to);
                scf::YieldOp::create(b, loc,
                                     ValueRange{arith::MaxNumFOp::create(
                                         b, loc, carried[0], value)});
              });
          maximum = roll.getResult(0);
        }
        Value chosen = useMax ? maximum : amax;
        Value previous = memref::LoadOp::create(b, loc, scales, at);
        memref::StoreOp::create(
            b, loc, emitDelayedScale(b, loc, chosen, previous, scaledMax),
            newScales, at);
        return Value();
      });
  set.finish();

  OpBuilder &host = rewriter;
  Value historyIn = readBuffer(host, loc, op.getAmaxHistory());
  Value amaxIn = readBuffer(host, loc, op.getAmax());
  Value scaleIn = readBuffer(host, loc, op.getScale());
  auto newHistoryType = op.getNewAmaxHistory().getType();
  auto newScaleType = op.getNewScale().getType();
  Value historyOut = allocateOutput(host, loc, newHistoryType);
  Value scaleOut = allocateOutput(host, loc, newScaleType);
  set.launch(host, kernel, blocksFor(entries), kBlockSize,
             {historyIn, amaxIn, scaleIn, historyOut, scaleOut});
  replaceWithOutputs(rewriter, op, {historyOut, scaleOut});
  return success();
}

//===----------------------------------------------------------------------===//
// te.quantize and te.dequantize, per-tensor scaling
//===----------------------------------------------------------------------===//

/// `cast(input, scale, data, amax)`: data = fp8(input * scale), raising
/// amax to max |input| on the way (the input is read once).
gpu::GPUFuncOp addScaledCast(KernelSet &set, OpBuilder &b, Location loc,
                             MemRefType inputType, MemRefType dataType,
                             int64_t &blocks) {
  MLIRContext *context = b.getContext();
  auto kernel = set.addKernel(
      b, "cast", {inputType, scalarF32(context), dataType, scalarF32(context)},
      {reductionScratchType(context, set.getTarget().getWarpSize())});
  Value input = flatten(b, loc, kernel.getArgument(0));
  Value scale = loadScalar(b, loc, kernel.getArgument(1));
  Value data = flatten(b, loc, kernel.getArgument(2));
  auto fp8Type = cast<FloatType>(dataType.getElementType());
  int64_t count = inputType.getNumElements();
  int64_t width = vectorWidth(inputType.getElementType(), count);
  blocks = blocksFor(count / width);
  Value widthValue = indexConstant(b, loc, width);
  Value bits = gridStrideLoop(
      b, loc, count / width, i32Constant(b, loc, 0),
      [&](OpBuilder &b, Location loc, Value i, Value max) {
        Value first = arith::MulIOp::create(b, loc, i, widthValue);
        SmallVector<Value> codes;
        for (Value x : loadElements(b, loc, input, first, width)) {
          Value wide = emitExtToF32(b, loc, x);
          max = arith::MaxUIOp::create(b, loc, max, emitAmaxBits(b, loc, wide));
          Value scaled = arith::MulFOp::create(b, loc, wide, scale);
          codes.push_back(
              set.getTarget().emitF32ToFP8(b, loc, scaled, fp8Type));
        }
        storeElements(b, loc, data, first, codes);
        return max;
      });
  finishAmax(set, b, loc, kernel, bits, kernel.getArgument(3));
  return kernel;
}

/// Side of the square tiles the transposing cast moves through shared
/// memory, and the rows of a tile each thread row handles.
constexpr int64_t kTile = 32;
constexpr int64_t kTileRowsPerPass = 8;

/// `transpose(input, scale, data_t)`: data_t = fp8(input * scale)^T for a
/// 2-D input, through 32x32 tiles in shared memory so that both the reads
/// and the writes are coalesced. Blocks are 32x8 threads, one per tile.
gpu::GPUFuncOp addTransposedCast(KernelSet &set, OpBuilder &b, Location loc,
                                 MemRefType inputType, MemRefType dataType) {
  MLIRContext *context = b.getContext();
  auto fp8Type = cast<FloatType>(dataType.getElementType());
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  // One padding column: threads of a warp read a column of the tile
  // without bank conflicts.
  auto tileType = MemRefType::get({kTile, kTile + 1}, fp8Type,
                                  MemRefLayoutAttrInterface(), workgroup);
  auto kernel = set.addKernel(
      b, "transpose", {inputType, scalarF32(context), dataType}, {tileType});
  Value input = kernel.getArgument(0);
  Value scale = loadScalar(b, loc, kernel.getArgument(1));
  Value data = kernel.getArgument(2);
  Value tile = kernel.getWorkgroupAttributions().front();
  int64_t rows = inputType.getDimSize(0), cols = inputType.getDimSize(1);

  Value tx = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value ty = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::y);
  Value tileSize = indexConstant(b, loc, kTile);
  Value colBase = arith::MulIOp::create(
      b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), tileSize);
  Value rowBase = arith::MulIOp::create(
      b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), tileSize);
  auto inBounds = [&](OpBuilder &b, Location loc, Value row, Value col,
                      int64_t rowLimit, int64_t colLimit) {
    Value rowOk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                        indexConstant(b, loc, rowLimit));
    Value colOk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, col,
                                        indexConstant(b, loc, colLimit));
    return arith::AndIOp::create(b, loc, rowOk, colOk);
  };
  auto forTileRows = [&](function_ref<void(OpBuilder &, Location, Value)> fn) {
    scf::ForOp::create(b, loc, ty, tileSize,
                       indexConstant(b, loc, kTileRowsPerPass), ValueRange{},
                       [&](OpBuilder &b, Location loc, Value r, ValueRange) {
                         fn(b, loc, r);
                         scf::YieldOp::create(b, loc);
                       });
  };
  // Read the tile row by row (consecutive threads, consecutive columns).
  forTileRows([&](OpBuilder &b, Location loc, Value r) {
    Value row = arith::AddIOp::create(b, loc, rowBase, r);
    Value col = arith::AddIOp::create(b, loc, colBase, tx);
    auto branch =
        scf::IfOp::create(b, loc, inBounds(b, loc, row, col, rows, cols),
                          /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    Value x = memref::LoadOp::create(b, loc, input, ValueRange{row, col});
    Value scaled =
        arith::MulFOp::create(b, loc, emitExtToF32(b, loc, x), scale);
    Value code = set.getTarget().emitF32ToFP8(b, loc, scaled, fp8Type);
    memref::StoreOp::create(b, loc, code, tile, ValueRange{r, tx});
  });
  gpu::BarrierOp::create(b, loc);
  // Write it transposed: data_t[col][row] = tile[row][col].
  forTileRows([&](OpBuilder &b, Location loc, Value r) {
    Value outRow = arith::AddIOp::create(b, loc, colBase, r);
    Value outCol = arith::AddIOp::create(b, loc, rowBase, tx);
    auto branch =
        scf::IfOp::create(b, loc, inBounds(b, loc, outRow, outCol, cols, rows),
                          /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    Value code = memref::LoadOp::create(b, loc, tile, ValueRange{tx, r});
    memref::StoreOp::create(b, loc, code, data, ValueRange{outRow, outCol});
  });
  return kernel;
}

LogicalResult lowerQuantize(RewriterBase &rewriter, QuantizeOp op,
                            const GPUTargetInfo &target) {
  if (op.getMode() != ScalingMode::per_tensor)
    return lowerBlockQuantize(rewriter, op, target);
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  KernelSet set(op, "quantize", target);
  OpBuilder b(context);
  MemRefType inputType = bufferTypeOf(op.getInput());

  // init(scale, scale_inv, amax): scale_inv = 1 / scale (f32, as TE), and
  // the amax zeroed for the atomics.
  auto init = set.addKernel(
      b, "init", {scalarF32(context), scalarF32(context), scalarF32(context)});
  ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
    Value scale = loadScalar(b, loc, init.getArgument(0));
    storeScalar(
        b, loc,
        arith::DivFOp::create(b, loc, emitF32Constant(b, loc, 1.0), scale),
        init.getArgument(1));
    storeScalar(b, loc, emitF32Constant(b, loc, 0.0), init.getArgument(2));
  });
  int64_t castBlocks = 1, amaxBlocks = 1;
  gpu::GPUFuncOp castKernel, amaxKernel, transposeKernel;
  if (Value data = op.getData())
    castKernel =
        addScaledCast(set, b, loc, inputType, bufferTypeOf(data), castBlocks);
  else
    amaxKernel = addAmaxKernel(set, b, loc, inputType, amaxBlocks);
  if (Value dataT = op.getColumnwiseData())
    transposeKernel =
        addTransposedCast(set, b, loc, inputType, bufferTypeOf(dataT));
  set.finish();

  OpBuilder &host = rewriter;
  Value input = readBuffer(host, loc, op.getInput());
  Value scale = readBuffer(host, loc, op.getScale());
  auto allocate = [&](Value result) {
    return result ? allocateOutput(host, loc,
                                   cast<RankedTensorType>(result.getType()))
                  : Value();
  };
  Value data = allocate(op.getData());
  Value dataT = allocate(op.getColumnwiseData());
  Value scaleInv = allocate(op.getScaleInv());
  Value amaxOut = allocate(op.getAmax());
  set.launch(host, init, 1, 1, {scale, scaleInv, amaxOut});
  if (castKernel)
    set.launch(host, castKernel, castBlocks, kBlockSize,
               {input, scale, data, amaxOut});
  else
    set.launch(host, amaxKernel, amaxBlocks, kBlockSize, {input, amaxOut});
  if (transposeKernel) {
    int64_t rows = inputType.getDimSize(0), cols = inputType.getDimSize(1);
    set.launch(host, transposeKernel,
               {(cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile},
               {kTile, kTileRowsPerPass}, {input, scale, dataT});
  }
  SmallVector<Value> outputs;
  for (Value buffer : {data, dataT, scaleInv, amaxOut})
    if (buffer)
      outputs.push_back(buffer);
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}

LogicalResult lowerDequantize(RewriterBase &rewriter, DequantizeOp op,
                              const GPUTargetInfo &target) {
  if (op.getMode() != ScalingMode::per_tensor)
    return lowerBlockDequantize(rewriter, op, target);
  Location loc = op.getLoc();
  KernelSet set(op, "dequantize", target);
  OpBuilder b(op.getContext());
  MemRefType dataType = bufferTypeOf(op.getData());
  MemRefType resultType = bufferTypeOf(op.getResult());
  auto kernel = set.addKernel(
      b, "dequantize", {dataType, scalarF32(op.getContext()), resultType});
  Value data = flatten(b, loc, kernel.getArgument(0));
  Value scaleInv = loadScalar(b, loc, kernel.getArgument(1));
  Value result = flatten(b, loc, kernel.getArgument(2));
  Type elementType = resultType.getElementType();
  int64_t count = dataType.getNumElements();
  int64_t width = vectorWidth(elementType, count);
  Value widthValue = indexConstant(b, loc, width);
  gridStrideLoop(b, loc, count / width, Value(),
                 [&](OpBuilder &b, Location loc, Value i, Value) {
                   Value first = arith::MulIOp::create(b, loc, i, widthValue);
                   SmallVector<Value> values;
                   for (Value code : loadElements(b, loc, data, first, width))
                     values.push_back(emitTruncFromF32(
                         b, loc,
                         arith::MulFOp::create(
                             b, loc, emitFP8ToF32(b, loc, code), scaleInv),
                         elementType));
                   storeElements(b, loc, result, first, values);
                   return Value();
                 });
  set.finish();

  OpBuilder &host = rewriter;
  Value dataIn = readBuffer(host, loc, op.getData());
  Value scaleInvIn = readBuffer(host, loc, op.getScaleInv());
  Value out = allocateOutput(host, loc, op.getResult().getType());
  set.launch(host, kernel, blocksFor(count / width), kBlockSize,
             {dataIn, scaleInvIn, out});
  replaceWithOutputs(rewriter, op, {out});
  return success();
}

} // namespace

bool gpu_lowering::isFP8Op(Operation *op) {
  return isa<AmaxOp, ComputeScaleOp, UpdateDelayedScalingOp, QuantizeOp,
             DequantizeOp>(op);
}

std::optional<std::string>
gpu_lowering::getFP8UnsupportedReason(Operation *op) {
  if (auto quantize = dyn_cast<QuantizeOp>(op))
    if (cast<RankedTensorType>(quantize.getInput().getType()).getRank() == 0)
      return std::string("te.quantize of a rank-0 tensor has no GPU kernel");
  if (auto dequantize = dyn_cast<DequantizeOp>(op))
    if (dequantize.getData().getType().getRank() == 0)
      return std::string("te.dequantize of a rank-0 tensor has no GPU kernel");
  if (auto amax = dyn_cast<AmaxOp>(op))
    if (amax.getInput().getType().getRank() == 0)
      return std::string("te.amax of a rank-0 tensor has no GPU kernel");
  return std::nullopt;
}

LogicalResult gpu_lowering::lowerFP8Op(RewriterBase &rewriter, Operation *op,
                                       const GPUTargetInfo &target) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](AmaxOp amax) { return lowerAmax(rewriter, amax, target); })
      .Case([&](ComputeScaleOp scale) {
        return lowerComputeScale(rewriter, scale, target);
      })
      .Case([&](UpdateDelayedScalingOp update) {
        return lowerUpdateDelayedScaling(rewriter, update, target);
      })
      .Case([&](QuantizeOp quantize) {
        return lowerQuantize(rewriter, quantize, target);
      })
      .Case([&](DequantizeOp dequantize) {
        return lowerDequantize(rewriter, dequantize, target);
      })
      .Default([](Operation *op) {
        return op->emitError("not an FP8 op of the GPU lowering");
      });
}
