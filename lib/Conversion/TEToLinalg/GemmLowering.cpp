//===- GemmLowering.cpp - te.scaled_matmul's product on the host ----------===//
//
// The f32 product of te.scaled_matmul as a blocked GEMM: op(A) and op(B)
// packed once into panels of MR rows and NR columns (FP8 decoded, MXFP8
// scales applied: both exact), and a register micro-kernel of MR rows by
// NR columns accumulating over chunks of K. Tiles of the output run on the
// kernel's threads (scf.forall). Block scales
// (Float8BlockScaling) are applied per 128-wide K block: the micro-kernel
// sums each block from zero and adds it, times its row and column scales,
// to the output tile. The epilogue (TEToLinalg.cpp) reads the result.
//
//===----------------------------------------------------------------------===//

#include "HostAttention.h"
#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/ScalingMath.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::te;
using host_attention::generateTensor;
using host_attention::IndexMath;

namespace {

/// Output tiles of a thread: this many micro-kernel panels in each
/// direction, so that a tile's B panels (KC x NC) stay in L2 and one B panel
/// in L1 while the micro-kernel walks the tile's A panels.
constexpr int64_t kTilePanelsM = 8;
constexpr int64_t kTilePanelsN = 8;
/// Elements of K per chunk: a B panel of NR columns is 16 KiB of bf16 pairs.
constexpr int64_t kChunkK = 256;
/// The K block of Float8BlockScaling.
constexpr int64_t kScaleBlockK = 128;

bool isBlockScaling(ScalingMode mode) {
  return mode == ScalingMode::block_1x128 || mode == ScalingMode::block_128x128;
}

/// One GEMM operand: the stored tensor, which of its dimensions is K, and
/// its FP8 scaling.
struct Operand {
  Value stored;
  unsigned kDim;
  /// Scale inverse of an FP8 operand (null when high precision).
  Value scaleInv;
  ScalingMode mode = ScalingMode::per_tensor;

  int64_t getK() const {
    return cast<RankedTensorType>(stored.getType()).getDimSize(kDim);
  }
  /// Rows (A: M) or columns (B: N): the other dimension.
  int64_t getOther() const {
    return cast<RankedTensorType>(stored.getType()).getDimSize(1 - kDim);
  }
  Type getElementType() const {
    return cast<RankedTensorType>(stored.getType()).getElementType();
  }
  bool hasBlockScales() const { return scaleInv && isBlockScaling(mode); }

  /// Element (other, k) in f32: decoded, times its MXFP8 block scale (a
  /// power of two: exact unless the result leaves f32's range). Both
  /// indices must be in bounds.
  Value emitRead(OpBuilder &b, Location loc, Value other, Value k) const {
    SmallVector<Value, 2> at = kDim == 1 ? SmallVector<Value, 2>{other, k}
                                         : SmallVector<Value, 2>{k, other};
    Value value =
        emitExtToF32(b, loc, tensor::ExtractOp::create(b, loc, stored, at));
    if (!isMXFP8())
      return value;
    IndexMath im{b, loc};
    at[kDim] = im.div(k, im.c(32));
    Value scale =
        emitE8M0ToF32(b, loc, tensor::ExtractOp::create(b, loc, scaleInv, at));
    return arith::MulFOp::create(b, loc, value, scale);
  }

  /// Element (other, k) in `type` (bf16 or f32), or 0 past either end.
  Value emitPaddedRead(OpBuilder &b, Location loc, Value other, Value k,
                       Type type) const {
    IndexMath im{b, loc};
    Value inside = arith::AndIOp::create(b, loc, im.lt(other, im.c(getOther())),
                                         im.lt(k, im.c(getK())));
    other = im.min(other, im.c(getOther() - 1));
    k = im.min(k, im.c(getK() - 1));
    Value value;
    if (getElementType() == type && !isMXFP8()) {
      SmallVector<Value, 2> at = kDim == 1 ? SmallVector<Value, 2>{other, k}
                                           : SmallVector<Value, 2>{k, other};
      value = tensor::ExtractOp::create(b, loc, stored, at);
    } else if (type.isBF16() && isFP8Type(getElementType())) {
      // bf16 holds every FP8 value (times a power of two), so the f32's
      // low half is zero and dropping it is the conversion; only MXFP8
      // values scaled below f32's normal range (2^-126) would be
      // truncated, and AVX512-BF16 reads those as zero anyway.
      Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(),
                                            emitRead(b, loc, other, k));
      bits = arith::ShRUIOp::create(
          b, loc, bits,
          arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16));
      value = arith::BitcastOp::create(
          b, loc, type, arith::TruncIOp::create(b, loc, b.getI16Type(), bits));
    } else {
      value = emitTruncFromF32(b, loc, emitRead(b, loc, other, k), type);
    }
    Value zero =
        arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(type)));
    return im.select(inside, value, zero);
  }

  bool isMXFP8() const { return scaleInv && mode == ScalingMode::mxfp8_1x32; }

  /// The f32 scale of block kb for row or column `other` (block modes).
  Value emitBlockScale(OpBuilder &b, Location loc, Value other,
                       Value kb) const {
    IndexMath im{b, loc};
    Value outer = mode == ScalingMode::block_128x128
                      ? im.div(other, im.c(kScaleBlockK))
                      : other;
    SmallVector<Value, 2> at = kDim == 1 ? SmallVector<Value, 2>{outer, kb}
                                         : SmallVector<Value, 2>{kb, outer};
    return tensor::ExtractOp::create(b, loc, scaleInv, at);
  }
};

/// The micro-kernel's view of the problem.
struct GemmShape {
  int64_t m, n, k;
  /// K rounded up to the micro-kernel's step (2 for pairs).
  int64_t kPadded;
  int64_t mPanels, nPanels;
  int64_t tileRows, tileCols;
  int64_t tilesM, tilesN;
  int64_t chunk;
};

GemmShape getShape(const HostGemmKernel &kernel, const Operand &a,
                   const Operand &b, bool blockScales) {
  GemmShape s;
  s.m = a.getOther();
  s.n = b.getOther();
  s.k = a.getK();
  int64_t step = kernel.getKStep();
  s.kPadded = llvm::divideCeil(s.k, step) * step;
  s.mPanels = llvm::divideCeil(s.m, kernel.rows);
  s.nPanels = llvm::divideCeil(s.n, kernel.getColumns());
  // At most kTilePanels* panels a tile, as evenly spread as they go.
  s.tilesM = llvm::divideCeil(s.mPanels, kTilePanelsM);
  s.tilesN = llvm::divideCeil(s.nPanels, kTilePanelsN);
  s.tileRows = llvm::divideCeil(s.mPanels, s.tilesM) * kernel.rows;
  s.tileCols = llvm::divideCeil(s.nPanels, s.tilesN) * kernel.getColumns();
  s.chunk = blockScales ? kScaleBlockK : kChunkK;
  return s;
}

/// An operand packed in panels of `size` rows of op(A) or columns of
/// op(B), the micro-kernel's element type: pairs, bf16 [panels, K / 2,
/// 2 size] with element (p, t, 2 j + e) = (row or column p size + j, K
/// index 2 t + e); f32, [panels, K, size] with element (p, k, j). Zero past
/// the operand's ends. Each panel is contiguous, so the micro-kernel's
/// reads of A are one stream (no cache-set conflicts between rows whose
/// stride is a power of two) and its reads of B whole vectors.
Value packPanels(OpBuilder &b, Location loc, const HostGemmKernel &kernel,
                 const Operand &operand, int64_t panels, int64_t size,
                 const GemmShape &s) {
  Type element = kernel.getOperandType(b.getContext());
  int64_t step = kernel.getKStep();
  return generateTensor(
      b, loc, {panels, s.kPadded / step, step * size}, element,
      [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
        IndexMath im{b, loc};
        Value other =
            im.add(im.mul(i[0], im.c(size)), im.div(i[2], im.c(step)));
        Value k = im.add(im.mul(i[1], im.c(step)),
                         arith::RemUIOp::create(b, loc, i[2], im.c(step)));
        return operand.emitPaddedRead(b, loc, other, k, element);
      });
}

/// The block scales of `operand` per padded row (or column) and K block:
/// f32 [K blocks, panels * panel size], zero in the padding.
Value expandBlockScales(OpBuilder &b, Location loc, const Operand &operand,
                        int64_t blocks, int64_t padded) {
  return generateTensor(b, loc, {blocks, padded}, b.getF32Type(),
                        [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
                          IndexMath im{b, loc};
                          Value last = im.c(operand.getOther() - 1);
                          Value scale = operand.emitBlockScale(
                              b, loc, im.min(i[1], last), i[0]);
                          return im.select(im.le(i[1], last), scale,
                                           emitF32Constant(b, loc, 0.0));
                        });
}

/// Builds the loop nest over the output tiles.
class GemmBuilder {
public:
  GemmBuilder(const HostGemmKernel &kernel, const GemmShape &s, Value rowPanels,
              Value columnPanels, Value rowScales, Value columnScales)
      : kernel(kernel), s(s), rowPanels(rowPanels), columnPanels(columnPanels),
        rowScales(rowScales), columnScales(columnScales) {}

  /// The f32 [tilesM * tileRows, tilesN * tileCols + one vector] product.
  /// The extra vector keeps the row stride off powers of two, whose rows
  /// would all fall into one set of the L1 cache.
  Value build(OpBuilder &b, Location loc) {
    Value product = tensor::EmptyOp::create(
        b, loc,
        ArrayRef<int64_t>{s.tilesM * s.tileRows,
                          s.tilesN * s.tileCols + kernel.lanes},
        b.getF32Type());
    // One loop over all tiles, so that the threads share them evenly.
    scf::ForallOp forall = createForall(b, loc, {s.tilesM * s.tilesN}, product);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    IndexMath im{b, loc};
    // Consecutive tiles share their B panels (the larger block).
    Value tileN = im.div(forall.getInductionVar(0), im.c(s.tilesM));
    Value tileM = arith::RemUIOp::create(b, loc, forall.getInductionVar(0),
                                         im.c(s.tilesM));
    Value rowOffset = im.mul(tileM, im.c(s.tileRows));
    Value colOffset = im.mul(tileN, im.c(s.tileCols));
    SmallVector<OpFoldResult> offsets = {rowOffset, colOffset};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(s.tileRows),
                                       b.getIndexAttr(s.tileCols)};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    Value tile = tensor::ExtractSliceOp::create(
        b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
    // The panels of this tile (the last tiles may have fewer).
    int64_t panelsPerTileM = s.tileRows / kernel.rows;
    int64_t panelsPerTileN = s.tileCols / kernel.getColumns();
    Value firstPanelM = im.mul(tileM, im.c(panelsPerTileM));
    Value firstPanelN = im.mul(tileN, im.c(panelsPerTileN));
    Value panelsM =
        im.min(im.c(panelsPerTileM), im.sub(im.c(s.mPanels), firstPanelM));
    Value panelsN =
        im.min(im.c(panelsPerTileN), im.sub(im.c(s.nPanels), firstPanelN));

    int64_t chunks = llvm::divideCeil(s.kPadded, s.chunk);
    auto chunkLoop = scf::ForOp::create(
        b, loc, im.c(0), im.c(chunks), im.c(1), ValueRange{tile},
        [&](OpBuilder &b, Location loc, Value chunk, ValueRange chunkArgs) {
          IndexMath im{b, loc};
          auto columnLoop = scf::ForOp::create(
              b, loc, im.c(0), panelsN, im.c(1), chunkArgs,
              [&](OpBuilder &b, Location loc, Value panelN,
                  ValueRange columnArgs) {
                IndexMath im{b, loc};
                auto rowLoop = scf::ForOp::create(
                    b, loc, im.c(0), panelsM, im.c(1), columnArgs,
                    [&](OpBuilder &b, Location loc, Value panelM,
                        ValueRange rowArgs) {
                      IndexMath im{b, loc};
                      Value next =
                          emitMicroKernel(b, loc, rowArgs[0], chunk, panelM,
                                          im.add(firstPanelM, panelM), panelN,
                                          im.add(firstPanelN, panelN));
                      scf::YieldOp::create(b, loc, next);
                    });
                scf::YieldOp::create(b, loc, rowLoop.getResults());
              });
          scf::YieldOp::create(b, loc, columnLoop.getResults());
        });

    b.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, chunkLoop.getResult(0),
                                          forall.getRegionIterArgs()[0],
                                          offsets, sizes, strides);
    return forall.getResult(0);
  }

private:
  /// Adds the product of A panel `panelM` and B panel `panelN` over K
  /// chunk `chunk` to the tile (panel indices local to the tile, and
  /// global).
  Value emitMicroKernel(OpBuilder &b, Location loc, Value tile, Value chunk,
                        Value localM, Value panelM, Value localN,
                        Value panelN) const {
    IndexMath im{b, loc};
    int64_t lanes = kernel.lanes, step = kernel.getKStep();
    auto accType = VectorType::get({lanes}, b.getF32Type());
    Value tileRow = im.mul(localM, im.c(kernel.rows));
    Value tileCol = im.mul(localN, im.c(kernel.getColumns()));
    Value zeroF = emitF32Constant(b, loc, 0.0);
    auto readTile = [&](int64_t r, int64_t v) {
      return vector::TransferReadOp::create(
          b, loc, accType, tile,
          ValueRange{im.add(tileRow, im.c(r)),
                     im.add(tileCol, im.c(v * lanes))},
          zeroF, ArrayRef<bool>{true});
    };
    bool blockScales = static_cast<bool>(rowScales);
    Value zeroAcc = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)));
    int64_t count = kernel.rows * kernel.vectors;
    // The tile's sums so far: none before the first chunk (the product
    // tensor starts uninitialized, nothing reads it before this writes).
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, chunk, im.c(0));
    auto previousSums = [&]() -> SmallVector<Value> {
      auto ifOp = scf::IfOp::create(
          b, loc, first,
          [&](OpBuilder &b, Location loc) {
            scf::YieldOp::create(b, loc, SmallVector<Value>(count, zeroAcc));
          },
          [&](OpBuilder &b, Location loc) {
            SmallVector<Value> sums;
            for (int64_t r = 0; r < kernel.rows; ++r)
              for (int64_t v = 0; v < kernel.vectors; ++v)
                sums.push_back(readTile(r, v));
            scf::YieldOp::create(b, loc, sums);
          });
      return SmallVector<Value>(ifOp.getResults());
    };
    SmallVector<Value> init =
        blockScales ? SmallVector<Value>(count, zeroAcc) : previousSums();

    Value firstStep = im.mul(chunk, im.c(s.chunk / step));
    Value lastStep =
        im.min(im.add(firstStep, im.c(s.chunk / step)), im.c(s.kPadded / step));
    auto loop = scf::ForOp::create(
        b, loc, firstStep, lastStep, im.c(1), init,
        [&](OpBuilder &b, Location loc, Value t, ValueRange acc) {
          SmallVector<Value> next =
              kernel.kind == HostGemmKernel::Kind::PairDot
                  ? emitPairDotStep(b, loc, t, panelM, panelN, acc)
                  : emitFMAStep(b, loc, t, panelM, panelN, acc);
          scf::YieldOp::create(b, loc, next);
        });

    SmallVector<Value> sums(loop.getResults());
    if (blockScales) {
      SmallVector<Value> previous = previousSums();
      // tile += block sum * row scale * column scale.
      for (int64_t r = 0; r < kernel.rows; ++r) {
        Value rowScale = tensor::ExtractOp::create(
            b, loc, rowScales,
            ValueRange{chunk,
                       im.add(im.mul(panelM, im.c(kernel.rows)), im.c(r))});
        Value splatRow = host_attention::splat(b, loc, rowScale, accType);
        for (int64_t v = 0; v < kernel.vectors; ++v) {
          Value columnScale = vector::TransferReadOp::create(
              b, loc, accType, columnScales,
              ValueRange{chunk,
                         im.add(im.mul(panelN, im.c(kernel.getColumns())),
                                im.c(v * lanes))},
              zeroF, ArrayRef<bool>{true});
          Value scale = arith::MulFOp::create(b, loc, splatRow, columnScale);
          Value &sum = sums[r * kernel.vectors + v];
          sum = vector::FMAOp::create(b, loc, sum, scale,
                                      previous[r * kernel.vectors + v]);
        }
      }
    }
    for (int64_t r = 0; r < kernel.rows; ++r)
      for (int64_t v = 0; v < kernel.vectors; ++v)
        tile = vector::TransferWriteOp::create(
                   b, loc, sums[r * kernel.vectors + v], tile,
                   ValueRange{im.add(tileRow, im.c(r)),
                              im.add(tileCol, im.c(v * lanes))},
                   ArrayRef<bool>{true})
                   .getResult();
    return tile;
  }

  /// One pair of K: each row's bf16 pair broadcast against the panel's
  /// column pairs on the dot unit.
  SmallVector<Value> emitPairDotStep(OpBuilder &b, Location loc, Value t,
                                     Value panelM, Value panelN,
                                     ValueRange acc) const {
    IndexMath im{b, loc};
    Type bf16 = b.getBF16Type();
    int64_t lanes = kernel.lanes;
    auto operandType = VectorType::get({2 * lanes}, bf16);
    auto pairType = VectorType::get({2}, bf16);
    auto wordType = VectorType::get({1}, b.getI32Type());
    auto wordsType = VectorType::get({lanes}, b.getI32Type());
    Value zeroBF = arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16));
    SmallVector<Value> columns;
    for (int64_t v = 0; v < kernel.vectors; ++v)
      columns.push_back(vector::TransferReadOp::create(
          b, loc, operandType, columnPanels,
          ValueRange{panelN, t, im.c(v * 2 * lanes)}, zeroBF,
          ArrayRef<bool>{true}));
    SmallVector<Value> next;
    for (int64_t r = 0; r < kernel.rows; ++r) {
      Value pair = vector::TransferReadOp::create(
          b, loc, pairType, rowPanels, ValueRange{panelM, t, im.c(2 * r)},
          zeroBF, ArrayRef<bool>{true});
      Value word = vector::BitCastOp::create(b, loc, wordType, pair);
      Value broadcast = vector::BitCastOp::create(
          b, loc, operandType,
          vector::BroadcastOp::create(b, loc, wordsType, word));
      for (int64_t v = 0; v < kernel.vectors; ++v)
        next.push_back(kernel.unit->emitDot(b, loc, acc[r * kernel.vectors + v],
                                            broadcast, columns[v]));
    }
    return next;
  }

  /// One element of K: each row's f32 broadcast times the panel's columns.
  SmallVector<Value> emitFMAStep(OpBuilder &b, Location loc, Value k,
                                 Value panelM, Value panelN,
                                 ValueRange acc) const {
    IndexMath im{b, loc};
    int64_t lanes = kernel.lanes;
    auto laneType = VectorType::get({lanes}, b.getF32Type());
    Value zeroF = emitF32Constant(b, loc, 0.0);
    SmallVector<Value> columns;
    for (int64_t v = 0; v < kernel.vectors; ++v)
      columns.push_back(vector::TransferReadOp::create(
          b, loc, laneType, columnPanels,
          ValueRange{panelN, k, im.c(v * lanes)}, zeroF, ArrayRef<bool>{true}));
    SmallVector<Value> next;
    for (int64_t r = 0; r < kernel.rows; ++r) {
      Value element = tensor::ExtractOp::create(b, loc, rowPanels,
                                                ValueRange{panelM, k, im.c(r)});
      Value broadcast = host_attention::splat(b, loc, element, laneType);
      for (int64_t v = 0; v < kernel.vectors; ++v)
        next.push_back(vector::FMAOp::create(b, loc, broadcast, columns[v],
                                             acc[r * kernel.vectors + v]));
    }
    return next;
  }

  const HostGemmKernel &kernel;
  const GemmShape &s;
  Value rowPanels, columnPanels, rowScales, columnScales;
};

} // namespace

//===----------------------------------------------------------------------===//
// HostGemmKernel
//===----------------------------------------------------------------------===//

Type HostGemmKernel::getOperandType(MLIRContext *context) const {
  return kind == Kind::PairDot ? Type(BFloat16Type::get(context))
                               : Type(Float32Type::get(context));
}

std::string HostGemmKernel::describe() const {
  if (kind == Kind::PairDot)
    return llvm::formatv("{0} bf16 pair dots, {1}x{2} micro-kernel",
                         unit->getName(), rows, getColumns());
  return llvm::formatv("f32 FMAs on {0} lanes, {1}x{2} micro-kernel", lanes,
                       rows, getColumns());
}

HostGemmKernel mlir::te::chooseHostGemmKernel(ScaledMatmulOp op,
                                              const BF16PairDotUnit *unit,
                                              int64_t lanes) {
  // Products of bf16 (and of FP8, which bf16 holds exactly) are exact in
  // f32, so pair dots lose nothing; f16 and f32 need f32 FMAs.
  Type element = op.getA().getType().getElementType();
  bool pairs = unit && (element.isBF16() || isFP8Type(element));
  HostGemmKernel kernel;
  if (pairs) {
    // 24 accumulators, 2 column vectors and a broadcast: 27 of AVX-512's 32
    // registers.
    kernel.kind = HostGemmKernel::Kind::PairDot;
    kernel.unit = unit;
    kernel.lanes = 16;
    kernel.rows = 12;
    kernel.vectors = 2;
    return kernel;
  }
  kernel.kind = HostGemmKernel::Kind::FMA;
  kernel.lanes = lanes;
  // The same shape on 32 registers; 12 accumulators of AVX2's 16.
  kernel.rows = lanes >= 16 ? 12 : 6;
  kernel.vectors = 2;
  return kernel;
}

Value mlir::te::buildHostGemmProduct(OpBuilder &b, Location loc,
                                     ScaledMatmulOp op, Value aValue,
                                     Value bValue, Value aScaleInv,
                                     Value bScaleInv,
                                     const HostGemmKernel &kernel) {
  Operand a{aValue, op.getTransposeA() ? 0u : 1u, aScaleInv,
            op.getAScalingMode()};
  Operand bOperand{bValue, op.getTransposeB() ? 1u : 0u, bScaleInv,
                   op.getBScalingMode()};
  bool blockScales = a.hasBlockScales() || bOperand.hasBlockScales();
  GemmShape s = getShape(kernel, a, bOperand, blockScales);
  Value rowPanels = packPanels(b, loc, kernel, a, s.mPanels, kernel.rows, s);
  Value columnPanels =
      packPanels(b, loc, kernel, bOperand, s.nPanels, kernel.getColumns(), s);
  Value rowScales, columnScales;
  if (blockScales) {
    int64_t blocks = llvm::divideCeil(s.k, kScaleBlockK);
    rowScales = expandBlockScales(b, loc, a, blocks, s.tilesM * s.tileRows);
    columnScales =
        expandBlockScales(b, loc, bOperand, blocks, s.tilesN * s.tileCols);
  }
  return GemmBuilder(kernel, s, rowPanels, columnPanels, rowScales,
                     columnScales)
      .build(b, loc);
}

std::vector<std::pair<std::string, std::optional<std::string>>>
mlir::te::getHostGemmKernelChoices(ScaledMatmulOp op,
                                   const ConvertTEToLinalgOptions &options) {
  const BF16PairDotUnit *unit = getBF16PairDotUnit(options.dotUnit);
  HostGemmKernel chosen = chooseHostGemmKernel(op, unit, options.vectorLanes);
  std::vector<std::pair<std::string, std::optional<std::string>>> choices;
  if (chosen.kind == HostGemmKernel::Kind::PairDot) {
    choices.push_back({chosen.describe(), std::nullopt});
    return choices;
  }
  std::string element;
  llvm::raw_string_ostream os(element);
  os << op.getA().getType().getElementType();
  choices.push_back(
      {"bf16 pair dots",
       unit ? element + " operands, which bf16 pairs would round"
            : std::string("the target has no bf16 dot-product unit "
                          "(AVX512-BF16)")});
  choices.push_back({chosen.describe(), std::nullopt});
  return choices;
}
