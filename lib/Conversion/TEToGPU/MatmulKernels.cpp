//===- MatmulKernels.cpp - te.scaled_matmul on the GPU's matrix units -----===//
//
// A tiled GEMM on the target's 16x8x16 warp matrix unit (MatrixUnit.h;
// MMALayout.h's GemmTiling): each block of four warps computes 64x64 outputs;
// per K step of 32 the block stages its A and B tiles in shared memory,
// widening the FP8 operands to bf16 (exact: every E4M3 and E5M2 value is a bf16
// value), and each warp runs 2x4 MMAs per 16 of K on fragments read with the
// unit's loads (ldmatrix on cuda; element by element without them). Products
// accumulate in f32; the epilogue is the CPU's: acc * (a_scale_inv *
// b_scale_inv), bias, GELU, the output cast, and for FP8 outputs the amax (warp
// and block reduction, one atomic per block) and the cast through out_scale.
// Results match the CPU's up to the order of the f32 sums.
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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

using Tiling = mma::GemmTiling;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// `a < limit` on indices.
Value below(OpBuilder &b, Location loc, Value a, int64_t limit) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a,
                               indexConstant(b, loc, limit));
}

/// Stages one [kBlockM][kBlockK] tile of an FP8 operand into `tile` as
/// bf16: element (row, k) of the tile is operand element (rowBase + row,
/// k0 + k) of the logical [rows, K] matrix, read from `operand` stored
/// [rows, K] (kContiguous) or [K, rows]; zero past the edges.
void stageTile(OpBuilder &b, Location loc, Value operand, Value tile,
               Value thread, Value rowBase, Value k0, int64_t rows, int64_t k,
               bool kContiguous) {
  // A loop, not unrolled copies: unrolled, the copies' index math is
  // hoisted out of the K loop and holds registers the MMAs need.
  scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, Tiling::kCopies),
      indexConstant(b, loc, 1), ValueRange{},
      [&](OpBuilder &b, Location loc, Value j, ValueRange) {
        IndexExpr copy = IndexExpr{&b, loc, thread} +
                         IndexExpr{&b, loc, j} * Tiling::kThreads;
        mma::Coord<IndexExpr> at = Tiling::stagedElement(copy, kContiguous);
        Value row = arith::AddIOp::create(b, loc, rowBase, at.row.value);
        Value col = arith::AddIOp::create(b, loc, k0, at.col.value);
        Value inside = arith::AndIOp::create(b, loc, below(b, loc, row, rows),
                                             below(b, loc, col, k));
        // Clamped, so that the load stays in bounds; the select zeroes it.
        Value r = arith::MinUIOp::create(b, loc, row,
                                         indexConstant(b, loc, rows - 1));
        Value c =
            arith::MinUIOp::create(b, loc, col, indexConstant(b, loc, k - 1));
        Value code = memref::LoadOp::create(
            b, loc, operand, kContiguous ? ValueRange{r, c} : ValueRange{c, r});
        Value value =
            arith::SelectOp::create(b, loc, inside, emitFP8ToF32(b, loc, code),
                                    emitF32Constant(b, loc, 0.0));
        Value narrow = arith::TruncFOp::create(b, loc, b.getBF16Type(), value);
        memref::StoreOp::create(b, loc, narrow, tile,
                                ValueRange{at.row.value, at.col.value});
        scf::YieldOp::create(b, loc);
      });
}

/// The gemm kernel's operands inside it, and its block's and warp's place.
struct GemmKernel {
  GemmKernel(ScaledMatmulOp op, const GPUTargetInfo &target,
             const MatrixUnit &unit, int64_t m, int64_t n, int64_t k)
      : op(op), target(target), unit(unit), m(m), n(n), k(k) {}

  mutable ScaledMatmulOp op;
  const GPUTargetInfo &target;
  const MatrixUnit &unit;
  int64_t m, n, k;
  Value aBuffer, bBuffer, aScaleInv, bScaleInv, bias, outScale, dBuffer, amax;
  Value tileA, tileB;
  Value thread, blockCol, blockRow, rowBase, colBase;
  Value lane, warpRow, warpCol;

  static int accIndex(int mi, int ni, int i) {
    return (mi * Tiling::kTilesN + ni) * mma::kCElements + i;
  }
  static constexpr int kAccumulators =
      Tiling::kTilesM * Tiling::kTilesN * mma::kCElements;

  scf::ForOp emitMainLoop(OpBuilder &b, Location loc) const;
  SmallVector<Value> multiplyStep(OpBuilder &b, Location loc, Value flatA,
                                  Value flatB, ValueRange carried) const;
  /// Returns the amax bits of the lane's stored values (FP8 outputs).
  Value emitEpilogue(OpBuilder &b, Location loc, scf::ForOp kLoop) const;
};

/// The block's accumulators over K, kBlockK per step: both tiles staged,
/// then the warps' MMAs.
scf::ForOp GemmKernel::emitMainLoop(OpBuilder &b, Location loc) const {
  SmallVector<Value> zeros(kAccumulators, emitF32Constant(b, loc, 0.0));
  // The tiles as rows of kStride elements, for the fragment loads.
  Value flatA = flatten(b, loc, tileA), flatB = flatten(b, loc, tileB);
  return scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, k),
      indexConstant(b, loc, Tiling::kBlockK), zeros,
      [&](OpBuilder &b, Location loc, Value k0, ValueRange carried) {
        stageTile(b, loc, aBuffer, tileA, thread, rowBase, k0, m, k,
                  /*kContiguous=*/!op.getTransposeA());
        // B's tile is [n][k]: stored [K, N] it is n-contiguous.
        stageTile(b, loc, bBuffer, tileB, thread, colBase, k0, n, k,
                  /*kContiguous=*/op.getTransposeB());
        gpu::BarrierOp::create(b, loc);
        SmallVector<Value> acc = multiplyStep(b, loc, flatA, flatB, carried);
        // The next step overwrites the tiles.
        gpu::BarrierOp::create(b, loc);
        scf::YieldOp::create(b, loc, acc);
      });
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

/// D = gelu(acc * a_scale_inv * b_scale_inv + bias), cast (through
/// out_scale for FP8 outputs).
Value GemmKernel::emitEpilogue(OpBuilder &b, Location loc,
                               scf::ForOp kLoop) const {
  RankedTensorType dTensor = op.getD().getType();
  Type dElement = dTensor.getElementType();
  bool fp8Out = isFP8Type(dElement);
  Value alpha = arith::MulFOp::create(
      b, loc, memref::LoadOp::create(b, loc, aScaleInv, ValueRange{}),
      memref::LoadOp::create(b, loc, bScaleInv, ValueRange{}));
  Value scale =
      fp8Out
          ? memref::LoadOp::create(b, loc, outScale, ValueRange{}).getResult()
          : Value();
  Value bits = i32Constant(b, loc, 0);
  IndexExpr rowBlock{&b, loc, blockRow}, colBlock{&b, loc, blockCol};
  IndexExpr t{&b, loc, thread};
  for (int mi = 0; mi < Tiling::kTilesM; ++mi) {
    for (int ni = 0; ni < Tiling::kTilesN; ++ni) {
      for (int i = 0; i < mma::kCElements; ++i) {
        mma::Coord<IndexExpr> at =
            Tiling::outputElement(rowBlock, colBlock, t, mi, ni, i);
        Value inside =
            arith::AndIOp::create(b, loc, below(b, loc, at.row.value, m),
                                  below(b, loc, at.col.value, n));
        Value value = arith::MulFOp::create(
            b, loc, kLoop.getResult(accIndex(mi, ni, i)), alpha);
        if (bias) {
          Value col = arith::MinUIOp::create(b, loc, at.col.value,
                                             indexConstant(b, loc, n - 1));
          value = arith::AddFOp::create(
              b, loc, value,
              emitExtToF32(b, loc, memref::LoadOp::create(b, loc, bias, col)));
        }
        if (op.getGelu())
          value = emitGelu(b, loc, value);
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
      }
    }
  }
  return bits;
}

} // namespace

std::optional<std::string>
gpu_lowering::getMatmulUnsupportedReason(ScaledMatmulOp op,
                                         const GPUTargetInfo &target) {
  if (std::optional<std::string> feature = op.getFeatureBeyondPerTensorFP8())
    return "the generated GPU GEMM takes per_tensor FP8 operands with the "
           "bias and GELU epilogues only, not yet te.scaled_matmul's " +
           *feature;
  return getTiledUnitUnsupportedReason("te.scaled_matmul", target);
}

LogicalResult gpu_lowering::lowerScaledMatmul(RewriterBase &rewriter,
                                              ScaledMatmulOp op,
                                              const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  KernelSet set(op, "scaled_matmul", target);
  OpBuilder b(context);
  RankedTensorType dTensor = op.getD().getType();
  int64_t m = dTensor.getDimSize(0), n = dTensor.getDimSize(1);
  auto aTensor = cast<RankedTensorType>(op.getA().getType());
  int64_t k = aTensor.getDimSize(op.getTransposeA() ? 0 : 1);
  Type dElement = dTensor.getElementType();
  bool fp8Out = isFP8Type(dElement);
  bool hasBias = static_cast<bool>(op.getBias());
  auto scalar = MemRefType::get({}, b.getF32Type());
  unsigned warpSize = target.getWarpSize();

  // init(amax): zeroed before the blocks raise it (FP8 outputs only).
  gpu::GPUFuncOp init;
  if (fp8Out)
    init = addAmaxInit(set, b, loc);

  SmallVector<Type> arguments = {
      bufferType(aTensor),
      bufferType(cast<RankedTensorType>(op.getB().getType())), scalar, scalar};
  if (hasBias)
    arguments.push_back(
        bufferType(cast<RankedTensorType>(op.getBias().getType())));
  if (fp8Out)
    arguments.push_back(scalar); // out_scale
  arguments.push_back(bufferType(dTensor));
  if (fp8Out)
    arguments.push_back(scalar); // amax
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  auto tileType =
      MemRefType::get({Tiling::kBlockM, Tiling::kBlockK + Tiling::kPad},
                      b.getBF16Type(), MemRefLayoutAttrInterface(), workgroup);
  SmallVector<Type> shared = {tileType, tileType};
  if (fp8Out)
    shared.push_back(reductionScratchType(context, warpSize, Tiling::kThreads));
  auto kernel = set.addKernel(b, "gemm", arguments, shared);

  GemmKernel gemm(op, target, getTiledUnit(target), m, n, k);
  unsigned next = 0;
  gemm.aBuffer = kernel.getArgument(next++);
  gemm.bBuffer = kernel.getArgument(next++);
  gemm.aScaleInv = kernel.getArgument(next++);
  gemm.bScaleInv = kernel.getArgument(next++);
  if (hasBias)
    gemm.bias = kernel.getArgument(next++);
  if (fp8Out)
    gemm.outScale = kernel.getArgument(next++);
  gemm.dBuffer = kernel.getArgument(next++);
  if (fp8Out)
    gemm.amax = kernel.getArgument(next++);
  gemm.tileA = kernel.getWorkgroupAttributions()[0];
  gemm.tileB = kernel.getWorkgroupAttributions()[1];

  gemm.thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  gemm.blockCol = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  gemm.blockRow = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  gemm.rowBase = arith::MulIOp::create(b, loc, gemm.blockRow,
                                       indexConstant(b, loc, Tiling::kBlockM));
  gemm.colBase = arith::MulIOp::create(b, loc, gemm.blockCol,
                                       indexConstant(b, loc, Tiling::kBlockN));
  IndexExpr t{&b, loc, gemm.thread};
  IndexExpr warp = t / mma::kWarpSize, lane = t % mma::kWarpSize;
  IndexExpr warpRow = warp / Tiling::kWarpsN, warpCol = warp % Tiling::kWarpsN;
  gemm.lane = lane.value;
  gemm.warpRow = warpRow.value;
  gemm.warpCol = warpCol.value;

  scf::ForOp kLoop = gemm.emitMainLoop(b, loc);
  Value bits = gemm.emitEpilogue(b, loc, kLoop);
  if (fp8Out) {
    Value blockMax =
        blockMaxBits(b, loc, bits, kernel.getWorkgroupAttributions()[2],
                     warpSize, Tiling::kThreads);
    ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
      atomicMaxBits(b, loc, gemm.amax, blockMax);
    });
  }
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands = {readBuffer(host, loc, op.getA()),
                                 readBuffer(host, loc, op.getB()),
                                 readBuffer(host, loc, op.getAScaleInv()),
                                 readBuffer(host, loc, op.getBScaleInv())};
  if (hasBias)
    operands.push_back(readBuffer(host, loc, op.getBias()));
  if (fp8Out)
    operands.push_back(readBuffer(host, loc, op.getOutScale()));
  Value d = allocateOutput(host, loc, dTensor);
  operands.push_back(d);
  Value amaxOut;
  if (fp8Out) {
    amaxOut =
        allocateOutput(host, loc, RankedTensorType::get({}, host.getF32Type()));
    operands.push_back(amaxOut);
    set.launch(host, init, 1, 1, {amaxOut});
  }
  set.launch(host, kernel,
             {ceilDiv(n, Tiling::kBlockN), ceilDiv(m, Tiling::kBlockM)},
             {Tiling::kThreads, 1}, operands);
  SmallVector<Value> outputs = {d};
  if (fp8Out)
    outputs.push_back(amaxOut);
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}
