//===- BlockScalingKernels.cpp - GPU kernels of te's block scaling --------===//
//
// te.quantize and te.dequantize in the block modes (MXFP8 1x32 with E8M0
// scales, fp32 scales per 1x128 and 128x128 block). Every mode quantizes a
// 2-D matrix in blocks (getScalingBlockShape); the fp32 modes' column-wise
// copy is the row-wise quantization of the transposed matrix, read through
// a transposed view. Blocks along a row or a column (1xN, Nx1) are one
// thread each: it finds the block's amax, its scale, and casts the block,
// with consecutive threads on consecutive addresses. 128x128 blocks take
// three kernels: each row segment's amax, each block's scale from its
// segments, then the cast, one thread per element. The arithmetic is
// TECommon's, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/ScalingMath.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

/// How a kernel sees the matrix it quantizes: [rows, cols], element (r, c)
/// at flat index r * cols + c of the input, or, transposed, at
/// c * rows + r (the input is then [cols, rows]).
struct MatrixView {
  int64_t rows, cols;
  bool transposed;

  Value index(OpBuilder &b, Location loc, Value r, Value c) const {
    Value outer = transposed ? c : r, inner = transposed ? r : c;
    Value stride = indexConstant(b, loc, transposed ? rows : cols);
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, outer, stride), inner);
  }
};

/// (t % fastCount, t / fastCount): a flat thread index split so that
/// consecutive threads take consecutive values of the fast index.
std::pair<Value, Value> splitThread(OpBuilder &b, Location loc, Value t,
                                    int64_t fastCount) {
  Value count = indexConstant(b, loc, fastCount);
  return {arith::RemUIOp::create(b, loc, t, count),
          arith::DivUIOp::create(b, loc, t, count)};
}

/// The flat index of the scale of element (r, c) of a matrix in `block`s,
/// `blockCols` blocks per row.
Value blockIndex(OpBuilder &b, Location loc, Value r, Value c, BlockShape block,
                 int64_t blockCols) {
  IndexExpr row{&b, loc, r}, col{&b, loc, c};
  return ((row / block.rows) * blockCols + col / block.cols).value;
}

/// [prod(leading dims), last dim] of a static shape (rank 1: [1, n]).
std::pair<int64_t, int64_t> as2D(ArrayRef<int64_t> shape) {
  int64_t rows = 1;
  for (int64_t size : shape.drop_back())
    rows *= size;
  return {rows, shape.back()};
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Loops `body(i)` over [first, first + length) with constant bounds when
/// the length is, else up to `limit`.
void forRange(OpBuilder &b, Location loc, Value first, int64_t length,
              int64_t limit,
              function_ref<void(OpBuilder &, Location, Value)> body) {
  Value end = arith::MinUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, first, indexConstant(b, loc, length)),
      indexConstant(b, loc, limit));
  scf::ForOp::create(b, loc, first, end, indexConstant(b, loc, 1), ValueRange{},
                     [&](OpBuilder &b, Location loc, Value i, ValueRange) {
                       body(b, loc, i);
                       scf::YieldOp::create(b, loc);
                     });
}

/// The amax bits (see emitAmaxBits) of the `length` elements of `view`
/// from (r0, c0) along a row (`alongRows`) or a column, cut at the edge.
Value emitLineAmaxBits(OpBuilder &b, Location loc, Value input, MatrixView view,
                       Value r0, Value c0, bool alongRows, int64_t length) {
  Value first = alongRows ? c0 : r0;
  Value end = arith::MinUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, first, indexConstant(b, loc, length)),
      indexConstant(b, loc, alongRows ? view.cols : view.rows));
  auto loop = scf::ForOp::create(
      b, loc, first, end, indexConstant(b, loc, 1),
      ValueRange{i32Constant(b, loc, 0)},
      [&](OpBuilder &b, Location loc, Value i, ValueRange carried) {
        Value r = alongRows ? r0 : i, c = alongRows ? i : c0;
        Value x =
            memref::LoadOp::create(b, loc, input, view.index(b, loc, r, c));
        Value bits = emitAmaxBits(b, loc, emitExtToF32(b, loc, x));
        scf::YieldOp::create(
            b, loc,
            ValueRange{arith::MaxUIOp::create(b, loc, carried[0], bits)});
      });
  return loop.getResult(0);
}

/// The kernel of 1xN and Nx1 blocks: one thread per block. Its thread
/// index runs fastest along the matrix's contiguous dimension (columns of
/// a plain view for Nx1 blocks, rows of a transposed one for 1xN), so a
/// warp's accesses are consecutive.
gpu::GPUFuncOp addLineBlockKernel(KernelSet &set, OpBuilder &b, Location loc,
                                  StringRef copy, QuantizeOp op,
                                  MemRefType inputType, MatrixView view,
                                  BlockShape block, MemRefType dataType,
                                  MemRefType scaleType, int64_t &threads) {
  auto fp8Type = cast<FloatType>(dataType.getElementType());
  auto kernel = set.addKernel(b, (copy + "_blocks").str(),
                              {inputType, dataType, scaleType});
  Value input = flatten(b, loc, kernel.getArgument(0));
  Value data = flatten(b, loc, kernel.getArgument(1));
  Value scales = flatten(b, loc, kernel.getArgument(2));
  bool alongRows = block.rows == 1; // the block runs along a row
  int64_t length = alongRows ? block.cols : block.rows;
  int64_t blockCols = ceilDiv(view.cols, block.cols);
  int64_t blockRows = ceilDiv(view.rows, block.rows);
  threads = blockRows * blockCols;
  // Consecutive threads take consecutive blocks along the dimension that
  // is contiguous in memory: columns of a plain view, rows of a transposed
  // one.
  int64_t fastCount = view.transposed ? blockRows : blockCols;
  gridStrideLoop(
      b, loc, threads, Value(),
      [&](OpBuilder &b, Location loc, Value t, Value) {
        auto [fast, slow] = splitThread(b, loc, t, fastCount);
        Value blockRow = view.transposed ? fast : slow;
        Value blockCol = view.transposed ? slow : fast;
        Value firstRow = arith::MulIOp::create(
            b, loc, blockRow, indexConstant(b, loc, block.rows));
        Value firstCol = arith::MulIOp::create(
            b, loc, blockCol, indexConstant(b, loc, block.cols));
        Value first = alongRows ? firstCol : firstRow;
        int64_t limit = alongRows ? view.cols : view.rows;
        auto element = [&](OpBuilder &b, Location loc, Value i) {
          return alongRows ? std::pair{firstRow, i} : std::pair{i, firstCol};
        };
        // The block's amax (bits), then its scale, then the cast.
        Value bits = emitLineAmaxBits(b, loc, input, view, firstRow, firstCol,
                                      alongRows, length);
        Value amax = arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
        BlockScale scale = emitBlockScale(b, loc, op, amax, fp8Type,
                                          scaleType.getElementType());
        Value scaleIndex = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, blockRow,
                                  indexConstant(b, loc, blockCols)),
            blockCol);
        memref::StoreOp::create(b, loc, scale.scaleInv, scales, scaleIndex);
        forRange(b, loc, first, length, limit,
                 [&](OpBuilder &b, Location loc, Value i) {
                   auto [r, c] = element(b, loc, i);
                   Value x = memref::LoadOp::create(b, loc, input,
                                                    view.index(b, loc, r, c));
                   Value scaled = arith::MulFOp::create(
                       b, loc, emitExtToF32(b, loc, x), scale.multiplier);
                   Value out = arith::AddIOp::create(
                       b, loc,
                       arith::MulIOp::create(b, loc, r,
                                             indexConstant(b, loc, view.cols)),
                       c);
                   memref::StoreOp::create(
                       b, loc,
                       set.getTarget().emitF32ToFP8(b, loc, scaled, fp8Type),
                       data, out);
                 });
        return Value();
      });
  return kernel;
}

/// The three kernels of square (128x128) blocks. `segments`: the amax bits
/// of each row's block-wide segment [rows, block cols]; `multipliers`: each
/// block's multiplier [block rows, block cols].
struct SquareBlockKernels {
  gpu::GPUFuncOp segmentAmax, blockScales, cast;
  int64_t segmentCount, blockCount, elementCount;
  MemRefType segmentsType, multipliersType;
};

SquareBlockKernels addSquareBlockKernels(KernelSet &set, OpBuilder &b,
                                         Location loc, StringRef copy,
                                         QuantizeOp op, MemRefType inputType,
                                         MatrixView view, BlockShape block,
                                         MemRefType dataType,
                                         MemRefType scaleType) {
  auto fp8Type = cast<FloatType>(dataType.getElementType());
  int64_t blockRows = ceilDiv(view.rows, block.rows);
  int64_t blockCols = ceilDiv(view.cols, block.cols);
  SquareBlockKernels k;
  k.segmentCount = view.rows * blockCols;
  k.blockCount = blockRows * blockCols;
  k.elementCount = view.rows * view.cols;
  k.segmentsType = MemRefType::get({k.segmentCount}, b.getI32Type());
  k.multipliersType = MemRefType::get({k.blockCount}, b.getF32Type());

  // segment_amax(input, segments): one thread per row segment, consecutive
  // threads along the contiguous dimension.
  k.segmentAmax = set.addKernel(b, (copy + "_segment_amax").str(),
                                {inputType, k.segmentsType});
  {
    Value input = flatten(b, loc, k.segmentAmax.getArgument(0));
    Value segments = k.segmentAmax.getArgument(1);
    int64_t fastCount = view.transposed ? view.rows : blockCols;
    gridStrideLoop(b, loc, k.segmentCount, Value(),
                   [&](OpBuilder &b, Location loc, Value t, Value) {
                     auto [fast, slow] = splitThread(b, loc, t, fastCount);
                     Value row = view.transposed ? fast : slow;
                     Value blockCol = view.transposed ? slow : fast;
                     Value firstCol = arith::MulIOp::create(
                         b, loc, blockCol, indexConstant(b, loc, block.cols));
                     Value bits =
                         emitLineAmaxBits(b, loc, input, view, row, firstCol,
                                          /*alongRows=*/true, block.cols);
                     Value at = arith::AddIOp::create(
                         b, loc,
                         arith::MulIOp::create(
                             b, loc, row, indexConstant(b, loc, blockCols)),
                         blockCol);
                     memref::StoreOp::create(b, loc, bits, segments, at);
                     return Value();
                   });
  }

  // block_scales(segments, scale_inv, multipliers): one thread per block.
  k.blockScales = set.addKernel(b, (copy + "_block_scales").str(),
                                {k.segmentsType, scaleType, k.multipliersType});
  {
    Value segments = k.blockScales.getArgument(0);
    Value scales = flatten(b, loc, k.blockScales.getArgument(1));
    Value multipliers = k.blockScales.getArgument(2);
    gridStrideLoop(
        b, loc, k.blockCount, Value(),
        [&](OpBuilder &b, Location loc, Value t, Value) {
          Value blockRow = arith::DivUIOp::create(
              b, loc, t, indexConstant(b, loc, blockCols));
          Value blockCol = arith::RemUIOp::create(
              b, loc, t, indexConstant(b, loc, blockCols));
          Value firstRow = arith::MulIOp::create(
              b, loc, blockRow, indexConstant(b, loc, block.rows));
          Value end = arith::MinUIOp::create(
              b, loc,
              arith::AddIOp::create(b, loc, firstRow,
                                    indexConstant(b, loc, block.rows)),
              indexConstant(b, loc, view.rows));
          auto loop = scf::ForOp::create(
              b, loc, firstRow, end, indexConstant(b, loc, 1),
              ValueRange{i32Constant(b, loc, 0)},
              [&](OpBuilder &b, Location loc, Value r, ValueRange carried) {
                Value at = arith::AddIOp::create(
                    b, loc,
                    arith::MulIOp::create(b, loc, r,
                                          indexConstant(b, loc, blockCols)),
                    blockCol);
                Value bits = memref::LoadOp::create(b, loc, segments, at);
                scf::YieldOp::create(b, loc,
                                     ValueRange{arith::MaxUIOp::create(
                                         b, loc, carried[0], bits)});
              });
          Value amax = arith::BitcastOp::create(b, loc, b.getF32Type(),
                                                loop.getResult(0));
          BlockScale scale = emitBlockScale(b, loc, op, amax, fp8Type,
                                            scaleType.getElementType());
          memref::StoreOp::create(b, loc, scale.scaleInv, scales, t);
          memref::StoreOp::create(b, loc, scale.multiplier, multipliers, t);
          return Value();
        });
  }

  // cast(input, multipliers, data): one thread per element, consecutive
  // threads on consecutive input elements.
  k.cast = set.addKernel(b, (copy + "_cast").str(),
                         {inputType, k.multipliersType, dataType});
  {
    Value input = flatten(b, loc, k.cast.getArgument(0));
    Value multipliers = k.cast.getArgument(1);
    Value data = flatten(b, loc, k.cast.getArgument(2));
    int64_t fastCount = view.transposed ? view.rows : view.cols;
    gridStrideLoop(
        b, loc, k.elementCount, Value(),
        [&](OpBuilder &b, Location loc, Value e, Value) {
          auto [fast, slow] = splitThread(b, loc, e, fastCount);
          Value r = view.transposed ? fast : slow;
          Value c = view.transposed ? slow : fast;
          Value blockAt = blockIndex(b, loc, r, c, block, blockCols);
          Value multiplier =
              memref::LoadOp::create(b, loc, multipliers, blockAt);
          Value x =
              memref::LoadOp::create(b, loc, input, view.index(b, loc, r, c));
          Value scaled = arith::MulFOp::create(b, loc, emitExtToF32(b, loc, x),
                                               multiplier);
          Value out = arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(b, loc, r,
                                    indexConstant(b, loc, view.cols)),
              c);
          memref::StoreOp::create(
              b, loc, set.getTarget().emitF32ToFP8(b, loc, scaled, fp8Type),
              data, out);
          return Value();
        });
  }
  return k;
}

} // namespace

LogicalResult gpu_lowering::lowerBlockQuantize(RewriterBase &rewriter,
                                               QuantizeOp op,
                                               const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  KernelSet set(op, "block_quantize", target);
  OpBuilder b(op.getContext());
  auto inputTensor = cast<RankedTensorType>(op.getInput().getType());
  MemRefType inputType = bufferType(inputTensor);
  int64_t rows = as2D(inputTensor.getShape()).first;
  int64_t cols = as2D(inputTensor.getShape()).second;
  bool mxfp8 = op.getMode() == ScalingMode::mxfp8_1x32;

  // One plan per copy: its kernels, their sizes and its result buffers.
  struct Copy {
    Value data, scaleInv;
    gpu::GPUFuncOp line;
    int64_t lineThreads = 0;
    std::optional<SquareBlockKernels> square;
  };
  SmallVector<Copy> copies;
  auto plan = [&](Value data, Value scaleInv, bool columnwise) {
    Copy copy{data, scaleInv, {}, 0, std::nullopt};
    // The fp32 modes' column-wise copy quantizes the transposed matrix.
    bool transposed = columnwise && !mxfp8;
    MatrixView view = transposed ? MatrixView{cols, rows, true}
                                 : MatrixView{rows, cols, false};
    BlockShape block = getScalingBlockShape(op.getMode(), mxfp8 && columnwise);
    MemRefType dataType = bufferType(cast<RankedTensorType>(data.getType()));
    MemRefType scaleType =
        bufferType(cast<RankedTensorType>(scaleInv.getType()));
    StringRef name = columnwise ? "columnwise" : "rowwise";
    if (block.rows == 1 || block.cols == 1)
      copy.line =
          addLineBlockKernel(set, b, loc, name, op, inputType, view, block,
                             dataType, scaleType, copy.lineThreads);
    else
      copy.square = addSquareBlockKernels(set, b, loc, name, op, inputType,
                                          view, block, dataType, scaleType);
    copies.push_back(copy);
  };
  if (op.hasRowwise())
    plan(op.getData(), op.getScaleInv(), /*columnwise=*/false);
  if (op.hasColumnwise())
    plan(op.getColumnwiseData(), op.getColumnwiseScaleInv(),
         /*columnwise=*/true);
  set.finish();

  OpBuilder &host = rewriter;
  Value input = readBuffer(host, loc, op.getInput());
  SmallVector<Value> outputs;
  for (Copy &copy : copies) {
    auto dataType = cast<RankedTensorType>(copy.data.getType());
    auto scaleType = cast<RankedTensorType>(copy.scaleInv.getType());
    Value data = allocateOutput(host, loc, dataType);
    Value scales = allocateOutput(host, loc, scaleType);
    if (copy.line) {
      set.launch(host, copy.line, blocksFor(copy.lineThreads), kBlockSize,
                 {input, data, scales});
    } else {
      SquareBlockKernels &k = *copy.square;
      Value segments = memref::AllocOp::create(host, loc, k.segmentsType,
                                               host.getI64IntegerAttr(256));
      Value multipliers = memref::AllocOp::create(host, loc, k.multipliersType,
                                                  host.getI64IntegerAttr(256));
      set.launch(host, k.segmentAmax, blocksFor(k.segmentCount), kBlockSize,
                 {input, segments});
      set.launch(host, k.blockScales, blocksFor(k.blockCount), kBlockSize,
                 {segments, scales, multipliers});
      set.launch(host, k.cast, blocksFor(k.elementCount), kBlockSize,
                 {input, multipliers, data});
    }
    outputs.push_back(data);
    outputs.push_back(scales);
  }
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}

LogicalResult gpu_lowering::lowerBlockDequantize(RewriterBase &rewriter,
                                                 DequantizeOp op,
                                                 const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  KernelSet set(op, "block_dequantize", target);
  OpBuilder b(op.getContext());
  bool mxfp8 = op.getMode() == ScalingMode::mxfp8_1x32;
  BlockShape block =
      getScalingBlockShape(op.getMode(), mxfp8 && op.getColumnwise());
  MemRefType dataType = bufferType(op.getData().getType());
  MemRefType scaleType =
      bufferType(cast<RankedTensorType>(op.getScaleInv().getType()));
  MemRefType resultType = bufferType(op.getResult().getType());
  int64_t rows = as2D(dataType.getShape()).first;
  int64_t cols = as2D(dataType.getShape()).second;
  int64_t blockCols = ceilDiv(cols, block.cols);
  Type element = resultType.getElementType();
  auto kernel =
      set.addKernel(b, "dequantize", {dataType, scaleType, resultType});
  Value data = flatten(b, loc, kernel.getArgument(0));
  Value scales = flatten(b, loc, kernel.getArgument(1));
  Value result = flatten(b, loc, kernel.getArgument(2));
  int64_t count = rows * cols;
  gridStrideLoop(
      b, loc, count, Value(), [&](OpBuilder &b, Location loc, Value e, Value) {
        Value r =
            arith::DivUIOp::create(b, loc, e, indexConstant(b, loc, cols));
        Value c =
            arith::RemUIOp::create(b, loc, e, indexConstant(b, loc, cols));
        Value blockAt = blockIndex(b, loc, r, c, block, blockCols);
        Value scaleInv = memref::LoadOp::create(b, loc, scales, blockAt);
        if (mxfp8)
          scaleInv = emitE8M0ToF32(b, loc, scaleInv);
        Value code = memref::LoadOp::create(b, loc, data, e);
        Value value =
            arith::MulFOp::create(b, loc, emitFP8ToF32(b, loc, code), scaleInv);
        memref::StoreOp::create(
            b, loc, emitTruncFromF32(b, loc, value, element), result, e);
        return Value();
      });
  set.finish();

  OpBuilder &host = rewriter;
  Value dataIn = readBuffer(host, loc, op.getData());
  Value scalesIn = readBuffer(host, loc, op.getScaleInv());
  Value out = allocateOutput(host, loc, op.getResult().getType());
  set.launch(host, kernel, blocksFor(count), kBlockSize,
             {dataIn, scalesIn, out});
  replaceWithOutputs(rewriter, op, {out});
  return success();
}
