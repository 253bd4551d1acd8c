//===- MatmulKernels.cpp - te.scaled_matmul on the GPU's matrix units -----===//
//
// A tiled GEMM on the target's 16x8x16 warp matrix unit (MatrixUnit.h;
// MMALayout.h's GemmTiling): each block of four warps computes 64x64 outputs;
// per K step of 32 the block stages its A and B tiles in shared memory, in
// bf16 (FP8 decoded and MXFP8 scales applied: exact, bf16 holds every E4M3
// and E5M2 value times a power of two; bf16 operands as they are) or f16 (f16
// operands), and each warp runs 2x4 MMAs per 16 of K on fragments read with
// the unit's loads (ldmatrix on cuda; element by element without them).
// Products accumulate in f32. Block scales (1x128, 128x128) are applied per
// 128-wide K block: each block's sums start from zero and are added to the
// totals times the row's and the column's scale. The epilogue is the CPU's:
// alpha (per_tensor), C, bias, GELU (and the pre-GELU output) or dGELU, the
// output cast, for FP8 outputs the amax (warp and block reduction, one atomic
// per block) and the cast through out_scale; DGELU_BGRAD's column sums by
// warp shuffles and one atomic per column and warp, BGRADB's row sums of
// op(A) by a kernel of their own. Results match the CPU's up to the order of
// the f32 sums. f32 operands stage as f32 and multiply on the lanes' FMAs
// (ThreadFMA16x8x16: the same tiling and epilogue, nothing rounded), slower
// than the matrix unit but exact where it would round.
//
// The matrix unit and its fragment loads are the layer the Hopper step
// replaces (a warpgroup MMA unit reading shared-memory descriptors, TMA
// copies, with a tiling for its shape): the staging and the epilogue stay.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/Epilogue.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TEToGPU/MMALayout.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "te/Conversion/TECommon/ScalingMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <map>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

using Tiling = mma::GemmTiling;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The K block of Float8BlockScaling.
constexpr int64_t kScaleBlock = 128;

/// `a < limit` on indices.
Value below(OpBuilder &b, Location loc, Value a, int64_t limit) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a,
                               indexConstant(b, loc, limit));
}

/// One operand of the GEMM as the kernel reads it: op(X) is the logical
/// [rows, K] matrix, stored [rows, K] (kContiguous) or [K, rows], with its
/// FP8 scaling.
struct KernelOperand {
  Value buffer, scaleInv;
  bool kContiguous = true, fp8 = false;
  ScalingMode mode = ScalingMode::per_tensor;
  int64_t rows = 0, k = 0;
  /// A grouped GEMM's B: the group whose matrix (and scales) this is, an
  /// index into the leading dimension of `buffer` (and `scaleInv`).
  Value group;
  /// A grouped GEMM's A: rows at and past this (an index) belong to
  /// another group and read as zeros.
  Value rowLimit;

  SmallVector<Value, 3> at(Value row, Value kIndex) const {
    SmallVector<Value, 3> indices;
    if (group)
      indices.push_back(group);
    if (kContiguous)
      indices.append({row, kIndex});
    else
      indices.append({kIndex, row});
    return indices;
  }
  bool isMXFP8() const { return fp8 && mode == ScalingMode::mxfp8_1x32; }
  bool hasBlockScales() const { return fp8 && isBlockScaling(mode); }

  /// Element (row, k) in f32, decoded and times its MXFP8 scale (a power of
  /// two); both indices in bounds.
  Value emitRead(OpBuilder &b, Location loc, Value row, Value kIndex) const {
    Value code = memref::LoadOp::create(b, loc, buffer, at(row, kIndex));
    Value value = fp8 ? emitFP8ToF32(b, loc, code) : emitExtToF32(b, loc, code);
    if (!isMXFP8())
      return value;
    Value block =
        arith::DivUIOp::create(b, loc, kIndex, indexConstant(b, loc, 32));
    Value scale = memref::LoadOp::create(b, loc, scaleInv, at(row, block));
    return arith::MulFOp::create(b, loc, value, emitE8M0ToF32(b, loc, scale));
  }

  /// The f32 scale of K block `kb` for `row` (block modes; `row` in
  /// bounds).
  Value emitBlockScale(OpBuilder &b, Location loc, Value row, Value kb) const {
    Value outer = mode == ScalingMode::block_128x128
                      ? arith::DivUIOp::create(
                            b, loc, row, indexConstant(b, loc, kScaleBlock))
                            .getResult()
                      : row;
    return memref::LoadOp::create(b, loc, scaleInv, at(outer, kb));
  }
};

/// Stages one [kBlockM][kBlockK] tile of `operand` into `tile` in the
/// tile's element type (bf16 or f16): element (row, k) of the tile is
/// element (rowBase + row, k0 + k) of op(X); zero past the edges.
void stageTile(OpBuilder &b, Location loc, const KernelOperand &operand,
               Value tile, Value thread, Value rowBase, Value k0) {
  Type staged = cast<MemRefType>(tile.getType()).getElementType();
  // A loop, not unrolled copies: unrolled, the copies' index math is
  // hoisted out of the K loop and holds registers the MMAs need.
  scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, Tiling::kCopies),
      indexConstant(b, loc, 1), ValueRange{},
      [&](OpBuilder &b, Location loc, Value j, ValueRange) {
        IndexExpr copy = IndexExpr{&b, loc, thread} +
                         IndexExpr{&b, loc, j} * Tiling::kThreads;
        mma::Coord<IndexExpr> at =
            Tiling::stagedElement(copy, operand.kContiguous);
        Value row = arith::AddIOp::create(b, loc, rowBase, at.row.value);
        Value col = arith::AddIOp::create(b, loc, k0, at.col.value);
        Value inside =
            arith::AndIOp::create(b, loc, below(b, loc, row, operand.rows),
                                  below(b, loc, col, operand.k));
        if (operand.rowLimit)
          inside = arith::AndIOp::create(
              b, loc, inside,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                    operand.rowLimit));
        // Clamped, so that the load stays in bounds; the select zeroes it.
        Value r = arith::MinUIOp::create(
            b, loc, row, indexConstant(b, loc, operand.rows - 1));
        Value c = arith::MinUIOp::create(b, loc, col,
                                         indexConstant(b, loc, operand.k - 1));
        Value value = arith::SelectOp::create(b, loc, inside,
                                              operand.emitRead(b, loc, r, c),
                                              emitF32Constant(b, loc, 0.0));
        memref::StoreOp::create(b, loc, emitTruncFromF32(b, loc, value, staged),
                                tile, ValueRange{at.row.value, at.col.value});
        scf::YieldOp::create(b, loc);
      });
}

/// The gemm kernel's operands inside it, and its block's and warp's place.
struct GemmKernel {
  GemmKernel(const GPUTargetInfo &target, const MatrixUnit &unit, int64_t m,
             int64_t n, int64_t k)
      : target(target), unit(unit), m(m), n(n), k(k) {}

  const GPUTargetInfo &target;
  const MatrixUnit &unit;
  int64_t m, n, k;
  KernelOperand a, b;
  Value bias, c, geluInput, outScale, dBuffer, amax, preGelu, columnSums;
  bool gelu = false;
  /// A grouped GEMM's group (an index): per_tensor scales and the bias are
  /// read at it; D's rows at and past a.rowLimit are another group's.
  Value group;
  Value tileA, tileB;
  Value thread, blockCol, rowBase, colBase;
  Value lane, warpRow, warpCol;

  static int accIndex(int mi, int ni, int i) {
    return (mi * Tiling::kTilesN + ni) * mma::kCElements + i;
  }
  static constexpr int kAccumulators =
      Tiling::kTilesM * Tiling::kTilesN * mma::kCElements;

  /// The (row, column) of accumulator (mi, ni, i) of this thread.
  mma::Coord<IndexExpr> element(OpBuilder &b, Location loc, int mi, int ni,
                                int i) const {
    // The tiling's element of block (0, 0), moved to this block's origin
    // (a grouped GEMM's blocks start at a group's first row).
    mma::Coord<IndexExpr> at =
        Tiling::outputElement(indexExpr(b, loc, 0), indexExpr(b, loc, 0),
                              IndexExpr{&b, loc, thread}, mi, ni, i);
    return {at.row + IndexExpr{&b, loc, rowBase},
            at.col + IndexExpr{&b, loc, colBase}};
  }

  /// The thread's lane and its warp's row and column in the block, from
  /// `thread`.
  void setWarpPlace(OpBuilder &b, Location loc) {
    IndexExpr t{&b, loc, thread};
    IndexExpr warp = t / mma::kWarpSize;
    lane = (t % mma::kWarpSize).value;
    warpRow = (warp / Tiling::kWarpsN).value;
    warpCol = (warp % Tiling::kWarpsN).value;
  }

  SmallVector<Value> emitMainLoop(OpBuilder &b, Location loc) const;
  scf::ForOp emitKSteps(OpBuilder &b, Location loc, Value begin, Value end,
                        ValueRange init) const;
  SmallVector<Value> multiplyStep(OpBuilder &b, Location loc, Value flatA,
                                  Value flatB, ValueRange carried) const;
  /// Returns the amax bits of the lane's stored values (FP8 outputs).
  Value emitEpilogue(OpBuilder &b, Location loc, ArrayRef<Value> sums) const;
  void emitColumnSums(OpBuilder &b, Location loc,
                      ArrayRef<Value> partial) const;
};

/// The block's accumulators over K in [begin, end), kBlockK per step: both
/// tiles staged, then the warps' MMAs.
scf::ForOp GemmKernel::emitKSteps(OpBuilder &b, Location loc, Value begin,
                                  Value end, ValueRange init) const {
  // The tiles as rows of kStride elements, for the fragment loads.
  Value flatA = flatten(b, loc, tileA), flatB = flatten(b, loc, tileB);
  return scf::ForOp::create(
      b, loc, begin, end, indexConstant(b, loc, Tiling::kBlockK), init,
      [&](OpBuilder &b, Location loc, Value k0, ValueRange carried) {
        stageTile(b, loc, a, tileA, thread, rowBase, k0);
        // B's tile is [n][k]: op(B)^T's rows are the columns of D.
        stageTile(b, loc, this->b, tileB, thread, colBase, k0);
        gpu::BarrierOp::create(b, loc);
        SmallVector<Value> acc = multiplyStep(b, loc, flatA, flatB, carried);
        // The next step overwrites the tiles.
        gpu::BarrierOp::create(b, loc);
        scf::YieldOp::create(b, loc, acc);
      });
}

/// The f32 sums of this thread's accumulators over K: with block scales,
/// each 128-wide K block summed from zero, then added to the totals times
/// the row's and the column's scale of that block.
SmallVector<Value> GemmKernel::emitMainLoop(OpBuilder &b, Location loc) const {
  SmallVector<Value> zeros(kAccumulators, emitF32Constant(b, loc, 0.0));
  if (!a.hasBlockScales()) {
    scf::ForOp loop = emitKSteps(b, loc, indexConstant(b, loc, 0),
                                 indexConstant(b, loc, k), zeros);
    return SmallVector<Value>(loop.getResults());
  }
  auto blocks = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0),
      indexConstant(b, loc, ceilDiv(k, kScaleBlock)), indexConstant(b, loc, 1),
      zeros, [&](OpBuilder &b, Location loc, Value kb, ValueRange totals) {
        Value begin = arith::MulIOp::create(b, loc, kb,
                                            indexConstant(b, loc, kScaleBlock));
        Value end = arith::MinUIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, begin,
                                  indexConstant(b, loc, kScaleBlock)),
            indexConstant(b, loc, k));
        scf::ForOp partial = emitKSteps(b, loc, begin, end, zeros);
        // The scales of this thread's rows (mi, i / 2) and columns
        // (ni, i % 2), each read once.
        std::map<std::pair<int, int>, Value> rowScales, columnScales;
        SmallVector<Value> next;
        for (int mi = 0; mi < Tiling::kTilesM; ++mi)
          for (int ni = 0; ni < Tiling::kTilesN; ++ni)
            for (int i = 0; i < mma::kCElements; ++i) {
              mma::Coord<IndexExpr> at = element(b, loc, mi, ni, i);
              Value &rowScale = rowScales[{mi, i / 2}];
              if (!rowScale)
                rowScale = a.emitBlockScale(
                    b, loc,
                    arith::MinUIOp::create(b, loc, at.row.value,
                                           indexConstant(b, loc, m - 1)),
                    kb);
              Value &columnScale = columnScales[{ni, i % 2}];
              if (!columnScale)
                columnScale = this->b.emitBlockScale(
                    b, loc,
                    arith::MinUIOp::create(b, loc, at.col.value,
                                           indexConstant(b, loc, n - 1)),
                    kb);
              int index = accIndex(mi, ni, i);
              next.push_back(math::FmaOp::create(
                  b, loc, partial.getResult(index),
                  arith::MulFOp::create(b, loc, rowScale, columnScale),
                  totals[index]));
            }
        scf::YieldOp::create(b, loc, next);
      });
  return SmallVector<Value>(blocks.getResults());
}

/// The warp's 2x4 MMAs per 16 of K of the staged tiles.
SmallVector<Value> GemmKernel::multiplyStep(OpBuilder &b, Location loc,
                                            Value flatA, Value flatB,
                                            ValueRange carried) const {
  constexpr int64_t kStride = Tiling::kBlockK + Tiling::kPad;
  SmallVector<Value> acc(carried.begin(), carried.end());
  IndexExpr rowOfWarp{&b, loc, warpRow}, colOfWarp{&b, loc, warpCol};
  for (int kk = 0; kk < Tiling::kBlockK; kk += mma::kK) {
    SmallVector<SmallVector<Value>> aFragments, bFragments;
    IndexExpr l{&b, loc, lane};
    for (int mi = 0; mi < Tiling::kTilesM; ++mi)
      aFragments.push_back(unit.loadA(b, loc, flatA, kStride, l,
                                      rowOfWarp * Tiling::kWarpM + mi * mma::kM,
                                      indexExpr(b, loc, kk)));
    // B's tile is [n][k], as attention stages K: the warp's columns.
    for (int ni = 0; ni < Tiling::kTilesN; ++ni)
      bFragments.push_back(unit.loadB(
          b, loc, flatB, kStride, l, MatrixUnit::Staging::NRows,
          {colOfWarp * Tiling::kWarpN + ni * mma::kN, indexExpr(b, loc, kk)}));
    for (int mi = 0; mi < Tiling::kTilesM; ++mi) {
      for (int ni = 0; ni < Tiling::kTilesN; ++ni) {
        SmallVector<Value> c;
        for (int i = 0; i < mma::kCElements; ++i)
          c.push_back(acc[accIndex(mi, ni, i)]);
        SmallVector<Value> d =
            unit.multiplyAccumulate(b, loc, aFragments[mi], bFragments[ni], c);
        for (int i = 0; i < mma::kCElements; ++i)
          acc[accIndex(mi, ni, i)] = d[i];
      }
    }
  }
  return acc;
}

/// D = epilogue(alpha * sums + C): bias and GELU (storing the values before
/// it), or dGELU; cast (through out_scale for FP8 outputs). With
/// DGELU_BGRAD, D's column sums go to `columnSums`.
Value GemmKernel::emitEpilogue(OpBuilder &b, Location loc,
                               ArrayRef<Value> sums) const {
  Type dElement = cast<MemRefType>(dBuffer.getType()).getElementType();
  bool fp8Out = isFP8Type(dElement);
  bool perTensor = a.fp8 && a.mode == ScalingMode::per_tensor;
  SmallVector<Value, 1> scaleAt;
  if (group)
    scaleAt.push_back(group);
  Value alpha =
      perTensor
          ? arith::MulFOp::create(
                b, loc, memref::LoadOp::create(b, loc, a.scaleInv, scaleAt),
                memref::LoadOp::create(b, loc, this->b.scaleInv, scaleAt))
                .getResult()
          : Value();
  Value scale =
      fp8Out
          ? memref::LoadOp::create(b, loc, outScale, ValueRange{}).getResult()
          : Value();
  Value bits = i32Constant(b, loc, 0);
  // DGELU_BGRAD: this thread's sums of its columns (ni, i % 2).
  SmallVector<Value> partial(Tiling::kTilesN * 2, emitF32Constant(b, loc, 0.0));
  for (int mi = 0; mi < Tiling::kTilesM; ++mi) {
    for (int ni = 0; ni < Tiling::kTilesN; ++ni) {
      for (int i = 0; i < mma::kCElements; ++i) {
        mma::Coord<IndexExpr> at = element(b, loc, mi, ni, i);
        Value inside =
            arith::AndIOp::create(b, loc, below(b, loc, at.row.value, m),
                                  below(b, loc, at.col.value, n));
        if (a.rowLimit)
          inside = arith::AndIOp::create(
              b, loc, inside,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                    at.row.value, a.rowLimit));
        Value row = arith::MinUIOp::create(b, loc, at.row.value,
                                           indexConstant(b, loc, m - 1));
        Value col = arith::MinUIOp::create(b, loc, at.col.value,
                                           indexConstant(b, loc, n - 1));
        Value value = sums[accIndex(mi, ni, i)];
        if (alpha)
          value = arith::MulFOp::create(b, loc, value, alpha);
        if (c)
          value = arith::AddFOp::create(
              b, loc, value,
              emitExtToF32(
                  b, loc,
                  memref::LoadOp::create(b, loc, c, ValueRange{row, col})));
        if (bias) {
          SmallVector<Value, 2> biasAt;
          if (group)
            biasAt.push_back(group);
          biasAt.push_back(col);
          value = arith::AddFOp::create(
              b, loc, value,
              emitExtToF32(b, loc,
                           memref::LoadOp::create(b, loc, bias, biasAt)));
        }
        Value beforeGelu = value;
        if (gelu)
          value = emitGelu(b, loc, value);
        if (geluInput)
          value = arith::MulFOp::create(
              b, loc, value,
              emitGeluGrad(
                  b, loc,
                  emitExtToF32(b, loc,
                               memref::LoadOp::create(b, loc, geluInput,
                                                      ValueRange{row, col}))));
        if (columnSums) {
          Value &sum = partial[ni * 2 + i % 2];
          sum = arith::AddFOp::create(
              b, loc, sum,
              arith::SelectOp::create(b, loc, inside, value,
                                      emitF32Constant(b, loc, 0.0)));
        }
        Value stored;
        if (fp8Out) {
          bits = arith::SelectOp::create(
              b, loc, inside,
              arith::MaxUIOp::create(b, loc, bits, emitAmaxBits(b, loc, value)),
              bits);
          stored = target.emitF32ToFP8(
              b, loc, arith::MulFOp::create(b, loc, value, scale),
              cast<FloatType>(dElement));
        } else {
          stored = emitTruncFromF32(b, loc, value, dElement);
        }
        auto branch =
            scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(branch.thenBlock());
        memref::StoreOp::create(b, loc, stored, dBuffer,
                                ValueRange{at.row.value, at.col.value});
        if (preGelu)
          memref::StoreOp::create(
              b, loc,
              emitTruncFromF32(
                  b, loc, beforeGelu,
                  cast<MemRefType>(preGelu.getType()).getElementType()),
              preGelu, ValueRange{at.row.value, at.col.value});
      }
    }
  }
  if (columnSums)
    emitColumnSums(b, loc, partial);
  return bits;
}

/// Adds this warp's column sums to `columnSums`: the lanes that share a
/// column (lane % 4) add theirs by XOR shuffles, then lanes 0..3 add the
/// warp's with one atomic per column.
void GemmKernel::emitColumnSums(OpBuilder &b, Location loc,
                                ArrayRef<Value> partial) const {
  unsigned warpSize = target.getWarpSize();
  Value firstLanes = below(b, loc, lane, 4);
  for (int ni = 0; ni < Tiling::kTilesN; ++ni) {
    for (int e = 0; e < 2; ++e) {
      Value sum = partial[ni * 2 + e];
      for (unsigned offset : {4u, 8u, 16u})
        sum = arith::AddFOp::create(
            b, loc, sum,
            gpu::ShuffleOp::create(b, loc, sum, offset, warpSize,
                                   gpu::ShuffleMode::XOR)
                .getShuffleResult());
      Value col = element(b, loc, 0, ni, e).col.value;
      Value store =
          arith::AndIOp::create(b, loc, firstLanes, below(b, loc, col, n));
      auto branch = scf::IfOp::create(b, loc, store, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, sum,
                                  columnSums, ValueRange{col});
    }
  }
}

/// `bias_grad_init(sums)`: zeroes the f32 [n] column sums.
gpu::GPUFuncOp addZeroInit(KernelSet &set, OpBuilder &b, Location loc,
                           int64_t n) {
  auto kernel = set.addKernel(b, "bias_grad_init",
                              {MemRefType::get({n}, b.getF32Type())});
  gridStrideLoop(b, loc, n, Value(),
                 [&](OpBuilder &b, Location loc, Value i, Value) {
                   memref::StoreOp::create(b, loc, emitF32Constant(b, loc, 0.0),
                                           kernel.getArgument(0), i);
                   return Value();
                 });
  return kernel;
}

/// `bias_grad_cast(sums, out)`: the f32 column sums rounded to out's type.
gpu::GPUFuncOp addCast(KernelSet &set, OpBuilder &b, Location loc,
                       RankedTensorType out) {
  int64_t n = out.getDimSize(0);
  auto kernel =
      set.addKernel(b, "bias_grad_cast",
                    {MemRefType::get({n}, b.getF32Type()), bufferType(out)});
  gridStrideLoop(
      b, loc, n, Value(), [&](OpBuilder &b, Location loc, Value i, Value) {
        Value sum = memref::LoadOp::create(b, loc, kernel.getArgument(0), i);
        memref::StoreOp::create(
            b, loc, emitTruncFromF32(b, loc, sum, out.getElementType()),
            kernel.getArgument(1), i);
        return Value();
      });
  return kernel;
}

/// `row_sums(a, [a_scale_inv], out)`: BGRADB's bias gradient, the row sums
/// of op(A) dequantized (each element times its MXFP8 scale, the sum times
/// a per_tensor scale), one thread per row.
gpu::GPUFuncOp addRowSums(KernelSet &set, OpBuilder &b, Location loc,
                          const KernelOperand &operand, RankedTensorType out) {
  SmallVector<Type> arguments = {operand.buffer.getType()};
  if (operand.scaleInv)
    arguments.push_back(operand.scaleInv.getType());
  arguments.push_back(bufferType(out));
  auto kernel = set.addKernel(b, "bias_grad_rows", arguments);
  KernelOperand inside = operand;
  inside.buffer = kernel.getArgument(0);
  if (operand.scaleInv)
    inside.scaleInv = kernel.getArgument(1);
  Value result = kernel.getArguments().back();
  gridStrideLoop(
      b, loc, operand.rows, Value(),
      [&](OpBuilder &b, Location loc, Value row, Value) {
        auto loop = scf::ForOp::create(
            b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, operand.k),
            indexConstant(b, loc, 1), ValueRange{emitF32Constant(b, loc, 0.0)},
            [&](OpBuilder &b, Location loc, Value kIndex, ValueRange sum) {
              scf::YieldOp::create(
                  b, loc,
                  ValueRange{arith::AddFOp::create(
                      b, loc, sum[0], inside.emitRead(b, loc, row, kIndex))});
            });
        Value sum = loop.getResult(0);
        if (inside.fp8 && inside.mode == ScalingMode::per_tensor)
          sum = arith::MulFOp::create(
              b, loc, sum,
              memref::LoadOp::create(b, loc, inside.scaleInv, ValueRange{}));
        memref::StoreOp::create(
            b, loc, emitTruncFromF32(b, loc, sum, out.getElementType()), result,
            row);
        return Value();
      });
  return kernel;
}

} // namespace

namespace {

/// Why the generated GEMM kernel cannot run the op `name` with operands of
/// type `element` on `target`, or nullopt.
std::optional<std::string> getGemmKernelReason(StringRef name, Type element,
                                               const GPUTargetInfo &target) {
  if (element.isF32()) {
    constexpr MatrixUnit::Shape shape = ThreadFMA16x8x16::kShape;
    if (target.getWarpSize() != shape.threads)
      return name.str() + "'s f32 GPU kernel places its sums as the " +
             shape.str() + " unit does, on warps of that size; " +
             target.getDescription() + " has " +
             std::to_string(target.getWarpSize()) + "-lane warps";
    return std::nullopt;
  }
  return getTiledUnitUnsupportedReason(name, target);
}

/// The unit the kernel multiplies operands of type `element` on: the
/// target's 16-bit matrix unit, or the lanes' f32 FMAs for f32 operands
/// (which the matrix unit would round).
const MatrixUnit &getGemmUnit(const GPUTargetInfo &target, Type element) {
  static const ThreadFMA16x8x16 fma;
  if (element.isF32())
    return fma;
  return getTiledUnit(target);
}

/// The shared-memory tile of operands of type `element`: f32 for f32
/// operands (the FMA unit), f16 for f16 operands (the f16 MMA), bf16 for
/// the others.
MemRefType getStagingTileType(MLIRContext *context, Type element) {
  Type staged = element.isF32()   ? Type(Float32Type::get(context))
                : element.isF16() ? Type(Float16Type::get(context))
                                  : Type(BFloat16Type::get(context));
  return MemRefType::get(
      {Tiling::kBlockM, Tiling::kBlockK + Tiling::kPad}, staged,
      MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
}

} // namespace

std::optional<std::string>
gpu_lowering::getMatmulUnsupportedReason(ScaledMatmulOp op,
                                         const GPUTargetInfo &target) {
  return getGemmKernelReason("te.scaled_matmul",
                             op.getA().getType().getElementType(), target);
}

LogicalResult gpu_lowering::lowerScaledMatmul(RewriterBase &rewriter,
                                              ScaledMatmulOp op,
                                              const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  KernelSet set(op, "scaled_matmul", target);
  OpBuilder b(context);
  RankedTensorType dTensor = op.getD().getType();
  auto [m, n, k] = op.getProblemSize();
  Type dElement = dTensor.getElementType();
  bool fp8Out = isFP8Type(dElement);
  bool fp8 = op.hasFP8Operands();
  auto scalar = MemRefType::get({}, b.getF32Type());
  unsigned warpSize = target.getWarpSize();
  Value biasGrad = op.getBiasGradResult();
  bool columnSums = biasGrad && op.getGeluInput();
  auto biasGradType =
      biasGrad ? cast<RankedTensorType>(biasGrad.getType()) : nullptr;
  auto sumsType = RankedTensorType::get({n}, b.getF32Type());

  // The operands in the kernel's terms, before its arguments exist.
  KernelOperand aOperand, bOperand;
  aOperand.kContiguous = !op.getTransposeA();
  bOperand.kContiguous = op.getTransposeB();
  aOperand.fp8 = bOperand.fp8 = fp8;
  aOperand.mode = op.getAScalingMode();
  bOperand.mode = op.getBScalingMode();
  aOperand.rows = m;
  bOperand.rows = n;
  aOperand.k = bOperand.k = k;

  // Zeroed before the blocks raise or add to them: amax (FP8 outputs), the
  // column sums (DGELU_BGRAD).
  gpu::GPUFuncOp init, sumsInit;
  if (fp8Out)
    init = addAmaxInit(set, b, loc);
  if (columnSums)
    sumsInit = addZeroInit(set, b, loc, n);

  // Arguments: a, b, [scales], [bias], [c], [dgelu input], [out_scale], d,
  // [amax], [pre_gelu], [column sums].
  SmallVector<Value> inputs = {op.getA(), op.getB()};
  if (fp8)
    inputs.append({op.getAScaleInv(), op.getBScaleInv()});
  for (Value value :
       {Value(op.getBias()), Value(op.getC()), Value(op.getGeluInput()),
        fp8Out ? op.getOutScale() : Value()})
    if (value)
      inputs.push_back(value);
  SmallVector<Type> arguments;
  for (Value value : inputs)
    arguments.push_back(bufferType(cast<RankedTensorType>(value.getType())));
  arguments.push_back(bufferType(dTensor));
  if (fp8Out)
    arguments.push_back(scalar);
  Value preGeluResult = op.getPreGeluResult();
  if (preGeluResult)
    arguments.push_back(
        bufferType(cast<RankedTensorType>(preGeluResult.getType())));
  if (columnSums)
    arguments.push_back(bufferType(sumsType));

  MemRefType tileType =
      getStagingTileType(context, op.getA().getType().getElementType());
  SmallVector<Type> shared = {tileType, tileType};
  if (fp8Out)
    shared.push_back(reductionScratchType(context, warpSize, Tiling::kThreads));
  auto kernel = set.addKernel(b, "gemm", arguments, shared);

  GemmKernel gemm(target,
                  getGemmUnit(target, op.getA().getType().getElementType()), m,
                  n, k);
  gemm.gelu = op.getGelu();
  unsigned next = 0;
  gemm.a = aOperand;
  gemm.b = bOperand;
  gemm.a.buffer = kernel.getArgument(next++);
  gemm.b.buffer = kernel.getArgument(next++);
  if (fp8) {
    gemm.a.scaleInv = kernel.getArgument(next++);
    gemm.b.scaleInv = kernel.getArgument(next++);
  }
  if (op.getBias())
    gemm.bias = kernel.getArgument(next++);
  if (op.getC())
    gemm.c = kernel.getArgument(next++);
  if (op.getGeluInput())
    gemm.geluInput = kernel.getArgument(next++);
  if (fp8Out)
    gemm.outScale = kernel.getArgument(next++);
  gemm.dBuffer = kernel.getArgument(next++);
  if (fp8Out)
    gemm.amax = kernel.getArgument(next++);
  if (preGeluResult)
    gemm.preGelu = kernel.getArgument(next++);
  if (columnSums)
    gemm.columnSums = kernel.getArgument(next++);
  gemm.tileA = kernel.getWorkgroupAttributions()[0];
  gemm.tileB = kernel.getWorkgroupAttributions()[1];

  gemm.thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  gemm.blockCol = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value blockRow = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  gemm.rowBase = arith::MulIOp::create(b, loc, blockRow,
                                       indexConstant(b, loc, Tiling::kBlockM));
  gemm.colBase = arith::MulIOp::create(b, loc, gemm.blockCol,
                                       indexConstant(b, loc, Tiling::kBlockN));
  gemm.setWarpPlace(b, loc);

  SmallVector<Value> sums = gemm.emitMainLoop(b, loc);
  Value bits = gemm.emitEpilogue(b, loc, sums);
  if (fp8Out) {
    Value blockMax =
        blockMaxBits(b, loc, bits, kernel.getWorkgroupAttributions()[2],
                     warpSize, Tiling::kThreads);
    ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
      atomicMaxBits(b, loc, gemm.amax, blockMax);
    });
  }
  gpu::GPUFuncOp castKernel, rows;
  if (columnSums && !biasGradType.getElementType().isF32())
    castKernel = addCast(set, b, loc, biasGradType);
  if (biasGrad && !columnSums) {
    KernelOperand rowOperand = aOperand;
    rowOperand.buffer = gemm.a.buffer;
    rowOperand.scaleInv = fp8 ? gemm.a.scaleInv : Value();
    rows = addRowSums(set, b, loc, rowOperand, biasGradType);
  }
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands;
  for (Value value : inputs)
    operands.push_back(readBuffer(host, loc, value));
  Value d = allocateOutput(host, loc, dTensor);
  operands.push_back(d);
  SmallVector<Value> outputs = {d};
  if (fp8Out) {
    Value amaxOut =
        allocateOutput(host, loc, RankedTensorType::get({}, host.getF32Type()));
    operands.push_back(amaxOut);
    outputs.push_back(amaxOut);
    set.launch(host, init, 1, 1, {amaxOut});
  }
  if (preGeluResult) {
    Value pre = allocateOutput(host, loc,
                               cast<RankedTensorType>(preGeluResult.getType()));
    operands.push_back(pre);
    outputs.push_back(pre);
  }
  Value sumsBuffer;
  if (columnSums) {
    sumsBuffer = allocateOutput(host, loc, sumsType);
    operands.push_back(sumsBuffer);
    set.launch(host, sumsInit, blocksFor(n), kBlockSize, {sumsBuffer});
  }
  set.launch(host, kernel,
             {ceilDiv(n, Tiling::kBlockN), ceilDiv(m, Tiling::kBlockM)},
             {Tiling::kThreads, 1}, operands);
  if (columnSums) {
    if (castKernel) {
      Value out = allocateOutput(host, loc, biasGradType);
      set.launch(host, castKernel, blocksFor(n), kBlockSize, {sumsBuffer, out});
      outputs.push_back(out);
    } else {
      outputs.push_back(sumsBuffer);
    }
  } else if (biasGrad) {
    Value out = allocateOutput(host, loc, biasGradType);
    SmallVector<Value> rowOperands = {operands[0]};
    if (fp8)
      rowOperands.push_back(operands[2]);
    rowOperands.push_back(out);
    set.launch(host, rows, blocksFor(m), kBlockSize, rowOperands);
    outputs.push_back(out);
  }
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}

std::optional<std::string>
gpu_lowering::getGroupedMatmulUnsupportedReason(GroupedMatmulOp op,
                                                const GPUTargetInfo &target) {
  return getGemmKernelReason("te.grouped_matmul",
                             op.getA().getType().getElementType(), target);
}

LogicalResult gpu_lowering::lowerGroupedMatmul(RewriterBase &rewriter,
                                               GroupedMatmulOp op,
                                               const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  KernelSet set(op, "grouped_matmul", target);
  OpBuilder b(context);
  RankedTensorType dTensor = op.getD().getType();
  int64_t tokens = dTensor.getDimSize(0), n = dTensor.getDimSize(1);
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t groups = op.getNumGroups();
  bool fp8 = op.hasFP8Operands();
  // Each group starts a block of its own: at most sum ceil(m_g / kBlockM)
  // <= (T + G (kBlockM - 1)) / kBlockM row blocks; the grid has that many,
  // and the blocks past the splits' return at once.
  int64_t rowBlocks = std::max<int64_t>(
      1, (tokens + groups * (Tiling::kBlockM - 1)) / Tiling::kBlockM);

  SmallVector<Value> inputs = {op.getA(), op.getB(), op.getSplits()};
  if (fp8)
    inputs.append({op.getAScaleInv(), op.getBScaleInv()});
  for (Value value : {Value(op.getBias()), Value(op.getC())})
    if (value)
      inputs.push_back(value);
  SmallVector<Type> arguments;
  for (Value value : inputs)
    arguments.push_back(bufferType(cast<RankedTensorType>(value.getType())));
  arguments.push_back(bufferType(dTensor));
  MemRefType tileType =
      getStagingTileType(context, op.getA().getType().getElementType());
  auto kernel = set.addKernel(b, "gemm", arguments, {tileType, tileType});

  GemmKernel gemm(target,
                  getGemmUnit(target, op.getA().getType().getElementType()),
                  tokens, n, k);
  unsigned next = 0;
  KernelOperand &a = gemm.a, &bOperand = gemm.b;
  a.buffer = kernel.getArgument(next++);
  bOperand.buffer = kernel.getArgument(next++);
  Value splits = kernel.getArgument(next++);
  if (fp8) {
    a.scaleInv = kernel.getArgument(next++);
    bOperand.scaleInv = kernel.getArgument(next++);
  }
  if (op.getBias())
    gemm.bias = kernel.getArgument(next++);
  if (op.getC())
    gemm.c = kernel.getArgument(next++);
  gemm.dBuffer = kernel.getArgument(next++);
  a.kContiguous = true;
  bOperand.kContiguous = op.getTransposeB();
  a.fp8 = bOperand.fp8 = fp8;
  a.mode = op.getAScalingMode();
  bOperand.mode = op.getBScalingMode();
  a.rows = tokens;
  bOperand.rows = n;
  a.k = bOperand.k = k;
  gemm.tileA = kernel.getWorkgroupAttributions()[0];
  gemm.tileB = kernel.getWorkgroupAttributions()[1];

  gemm.thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  gemm.blockCol = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value rowBlock = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);

  // This block's group: walk the splits (clamped so that they describe
  // rows of A whatever they hold; te-insert-checks reports bad ones),
  // counting each group's row blocks. Carried: the group's first row and
  // first block, and the found group, its first row and block.
  Value zero = indexConstant(b, loc, 0);
  Value none = indexConstant(b, loc, groups);
  auto walk = scf::ForOp::create(
      b, loc, zero, indexConstant(b, loc, groups), indexConstant(b, loc, 1),
      ValueRange{zero, zero, none, zero, zero},
      [&](OpBuilder &b, Location loc, Value g, ValueRange carried) {
        Value rowStart = carried[0], blockStart = carried[1];
        Value split = arith::IndexCastOp::create(
            b, loc, b.getIndexType(),
            memref::LoadOp::create(b, loc, splits, g));
        Value rows = arith::MinSIOp::create(
            b, loc, arith::MaxSIOp::create(b, loc, split, zero),
            arith::SubIOp::create(b, loc, indexConstant(b, loc, tokens),
                                  rowStart));
        Value blocks = arith::DivUIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, rows,
                                  indexConstant(b, loc, Tiling::kBlockM - 1)),
            indexConstant(b, loc, Tiling::kBlockM));
        Value blockEnd = arith::AddIOp::create(b, loc, blockStart, blocks);
        Value mine = arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, rowBlock,
                                  blockStart),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowBlock,
                                  blockEnd));
        Value rowEnd = arith::AddIOp::create(b, loc, rowStart, rows);
        scf::YieldOp::create(
            b, loc,
            ValueRange{
                rowEnd, blockEnd,
                arith::SelectOp::create(b, loc, mine, g, carried[2]),
                arith::SelectOp::create(b, loc, mine, rowStart, carried[3]),
                arith::SelectOp::create(b, loc, mine, blockStart, carried[4])});
      });
  // Rows of the group: [first row, row end), this block's from rowBase.
  Value group = walk.getResult(2);
  Value found =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, group, none);
  // The whole block takes the branch or not (the barriers inside are
  // uniform).
  auto branch = scf::IfOp::create(b, loc, found, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  Value firstRow = walk.getResult(3), firstBlock = walk.getResult(4);
  Value groupRows = arith::IndexCastOp::create(
      b, loc, b.getIndexType(), memref::LoadOp::create(b, loc, splits, group));
  groupRows = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, groupRows, zero),
      arith::SubIOp::create(b, loc, indexConstant(b, loc, tokens), firstRow));
  gemm.group = group;
  bOperand.group = group;
  a.rowLimit = arith::AddIOp::create(b, loc, firstRow, groupRows);
  gemm.rowBase = arith::AddIOp::create(
      b, loc, firstRow,
      arith::MulIOp::create(b, loc,
                            arith::SubIOp::create(b, loc, rowBlock, firstBlock),
                            indexConstant(b, loc, Tiling::kBlockM)));
  gemm.colBase = arith::MulIOp::create(b, loc, gemm.blockCol,
                                       indexConstant(b, loc, Tiling::kBlockN));
  gemm.setWarpPlace(b, loc);

  SmallVector<Value> sums = gemm.emitMainLoop(b, loc);
  gemm.emitEpilogue(b, loc, sums);
  b.setInsertionPointAfter(branch);
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands;
  for (Value value : inputs)
    operands.push_back(readBuffer(host, loc, value));
  Value d = allocateOutput(host, loc, dTensor);
  operands.push_back(d);
  set.launch(host, kernel, {ceilDiv(n, Tiling::kBlockN), rowBlocks},
             {Tiling::kThreads, 1}, operands);
  replaceWithOutputs(rewriter, op, {d});
  return success();
}
