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
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <tuple>

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

/// One GEMM operand: the stored tensor, which of its dimensions is K, and
/// its FP8 scaling. A grouped GEMM's B stores one matrix per group
/// ([G, ...], its scales too, when not per_tensor): `group` then selects
/// one, and `kDim` counts in that matrix.
struct Operand {
  Value stored;
  unsigned kDim;
  /// Scale inverse of an FP8 operand (null when high precision).
  Value scaleInv;
  ScalingMode mode = ScalingMode::per_tensor;
  /// The group whose matrix this is (an index), for a stored [G, ...].
  Value group = nullptr;

  RankedTensorType getType() const {
    return cast<RankedTensorType>(stored.getType());
  }
  /// The first dimension of the matrix (1 after a group dimension).
  int64_t getMatrixDim() const { return getType().getRank() - 2; }
  int64_t getK() const { return getType().getDimSize(getMatrixDim() + kDim); }
  /// Rows (A: M) or columns (B: N): the other dimension.
  int64_t getOther() const {
    return getType().getDimSize(getMatrixDim() + 1 - kDim);
  }
  Type getElementType() const { return getType().getElementType(); }
  bool hasBlockScales() const { return scaleInv && isBlockScaling(mode); }

  /// For generated indices [group,] rest...: this operand's view of the
  /// group's matrix (when `groups` is not 0) and the rest of the indices.
  std::pair<Operand, ArrayRef<Value>> selectGroup(ArrayRef<Value> indices,
                                                  int64_t groups) const {
    Operand view = *this;
    if (!groups)
      return {view, indices};
    view.group = indices[0];
    return {view, indices.drop_front()};
  }

  /// The indices of matrix element (other, k) in the stored tensor (or its
  /// block scale's, for the K block index and the row or column block).
  SmallVector<Value, 3> at(Value other, Value k) const {
    SmallVector<Value, 3> indices;
    if (getMatrixDim() > 0)
      indices.push_back(group);
    if (kDim == 1)
      indices.append({other, k});
    else
      indices.append({k, other});
    return indices;
  }

  /// Element (other, k) in f32: decoded, times its MXFP8 block scale (a
  /// power of two: exact unless the result leaves f32's range). Both
  /// indices must be in bounds.
  Value emitRead(OpBuilder &b, Location loc, Value other, Value k) const {
    Value value = emitExtToF32(
        b, loc, tensor::ExtractOp::create(b, loc, stored, at(other, k)));
    if (!isMXFP8())
      return value;
    IndexMath im{b, loc};
    Value scale =
        emitE8M0ToF32(b, loc,
                      tensor::ExtractOp::create(
                          b, loc, scaleInv, at(other, im.div(k, im.c(32)))));
    return arith::MulFOp::create(b, loc, value, scale);
  }

  /// Element (other, k) in `type` (bf16 or f32), or 0 past either end (or
  /// where `valid`, when given, is false).
  Value emitPaddedRead(OpBuilder &b, Location loc, Value other, Value k,
                       Type type, Value valid = nullptr) const {
    IndexMath im{b, loc};
    Value inside = arith::AndIOp::create(b, loc, im.lt(other, im.c(getOther())),
                                         im.lt(k, im.c(getK())));
    if (valid)
      inside = arith::AndIOp::create(b, loc, inside, valid);
    other = im.min(other, im.c(getOther() - 1));
    k = im.min(k, im.c(getK() - 1));
    Value value;
    if (getElementType() == type && !isMXFP8()) {
      value = tensor::ExtractOp::create(b, loc, stored, at(other, k));
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
    return tensor::ExtractOp::create(b, loc, scaleInv, at(outer, kb));
  }
};

/// Where the panels of op(A) take their rows. A GEMM's panel p holds rows
/// [p size, (p + 1) size). A grouped GEMM's panels each hold rows of one
/// group (the last panel of a group is partly padding): `group`, `first`
/// and `count` ([panels] index tensors, computed at run time from the
/// splits) give each panel's group, first row and number of rows.
struct RowPanels {
  Value group, first, count;

  bool isGrouped() const { return static_cast<bool>(group); }

  /// Row j of panel p (clamped into the operand) and whether it is a row
  /// of the operand rather than padding; null when not grouped.
  std::pair<Value, Value> emitRow(OpBuilder &b, Location loc, Value panel,
                                  Value j, int64_t rows) const {
    IndexMath im{b, loc};
    // Panels past the table (padding of the last tile) hold no rows.
    int64_t panels = cast<RankedTensorType>(group.getType()).getDimSize(0);
    Value inTable = im.lt(panel, im.c(panels));
    panel = im.min(panel, im.c(panels - 1));
    Value first = tensor::ExtractOp::create(b, loc, this->first, panel);
    Value count = tensor::ExtractOp::create(b, loc, this->count, panel);
    Value row = im.min(im.add(first, j), im.c(rows - 1));
    return {row, arith::AndIOp::create(b, loc, inTable, im.lt(j, count))};
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

/// The shape for operands `a` and `b`; `rowPanels` A panels when not 0
/// (a grouped GEMM's upper bound), else enough for A's rows.
GemmShape getShape(const HostGemmKernel &kernel, const Operand &a,
                   const Operand &b, bool blockScales, int64_t rowPanels = 0) {
  GemmShape s;
  s.m = a.getOther();
  s.n = b.getOther();
  s.k = a.getK();
  int64_t step = kernel.getKStep();
  s.kPadded = llvm::divideCeil(s.k, step) * step;
  s.chunk = blockScales ? kScaleBlockK : kChunkK;
  if (kernel.kind == HostGemmKernel::Kind::Tile) {
    // The tile micro-kernel runs a chunk's tile steps unrolled (tiles stay
    // in registers only within straight-line code), so K is padded to
    // whole chunks: for block scales, whole 128-blocks; else chunks of at
    // most kChunkK, as even as whole tile steps make them.
    int64_t tileK = kernel.tileUnit->getK();
    int64_t tileSteps = llvm::divideCeil(s.k, tileK);
    if (!blockScales) {
      int64_t chunks = llvm::divideCeil(tileSteps * tileK, kChunkK);
      s.chunk = chunks ? llvm::divideCeil(tileSteps, chunks) * tileK : tileK;
    }
    s.kPadded = llvm::divideCeil(s.k, s.chunk) * s.chunk;
  }
  s.mPanels = rowPanels ? rowPanels : llvm::divideCeil(s.m, kernel.rows);
  s.nPanels = llvm::divideCeil(s.n, kernel.getColumns());
  // At most kTilePanels* panels a tile, as evenly spread as they go.
  s.tilesM = llvm::divideCeil(s.mPanels, kTilePanelsM);
  s.tilesN = llvm::divideCeil(s.nPanels, kTilePanelsN);
  s.tileRows = llvm::divideCeil(s.mPanels, s.tilesM) * kernel.rows;
  s.tileCols = llvm::divideCeil(s.nPanels, s.tilesN) * kernel.getColumns();
  return s;
}

/// Whether packPanelsByVectors can pack `operand`: an operand (or a
/// grouped GEMM's stacked B) in the micro-kernel's element type, or FP8 for the
/// pair kernel (decoded by vectors), or f16 for the FMA kernel; without MXFP8
/// scales to apply. (bf16 vectors on a host without AVX512-BF16, the FMA
/// kernel's hosts, would be moved lane by lane through library calls.)
bool canPackByVectors(const HostGemmKernel &kernel, const Operand &operand) {
  // (K = 0 leaves no K rows to slice; the element-wise form packs nothing.)
  if (operand.isMXFP8() || operand.getK() == 0)
    return false;
  Type element = operand.getElementType();
  if (kernel.kind != HostGemmKernel::Kind::FMA)
    return element.isBF16() || isa<Float8E4M3FNType, Float8E5M2Type>(element);
  return element.isF32() || element.isF16();
}

/// The operand's values `raw` (a vector of its element type, or of i8 for
/// FP8) in the micro-kernel's element type `target`, exactly. FP8 goes
/// through f16, whose vector conversion to f32 the host has (F16C): E5M2
/// is the high byte of an f16; E4M3's exponent and mantissa, shifted into
/// an f16's, are the value times 2^-8 (subnormals too), and its NaN code
/// (S.1111.111) becomes a NaN.
Value convertVector(OpBuilder &b, Location loc, Value raw, Type source,
                    Type target) {
  if (source == target)
    return raw;
  auto shape = cast<VectorType>(raw.getType()).getShape();
  auto of = [&](Type element) { return VectorType::get(shape, element); };
  auto splatInt = [&](Type element, int64_t value) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(of(element), IntegerAttr::get(element, value)));
  };
  auto splatF32 = [&](float value) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(of(b.getF32Type()), b.getF32FloatAttr(value)));
  };
  Type f32 = b.getF32Type();
  Value wide;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(source)) {
    Type i16 = b.getI16Type();
    Value bits = arith::ExtUIOp::create(b, loc, of(i16), raw);
    Value half;
    if (isa<Float8E5M2Type>(source)) {
      half = arith::ShLIOp::create(b, loc, bits, splatInt(i16, 8));
    } else {
      Value magnitude =
          arith::AndIOp::create(b, loc, bits, splatInt(i16, 0x7F));
      Value sign = arith::AndIOp::create(b, loc, bits, splatInt(i16, 0x80));
      half = arith::OrIOp::create(
          b, loc, arith::ShLIOp::create(b, loc, magnitude, splatInt(i16, 7)),
          arith::ShLIOp::create(b, loc, sign, splatInt(i16, 8)));
    }
    Value asHalf = arith::BitcastOp::create(b, loc, of(b.getF16Type()), half);
    wide = arith::ExtFOp::create(b, loc, of(f32), asHalf);
    if (isa<Float8E4M3FNType>(source)) {
      wide = arith::MulFOp::create(b, loc, wide, splatF32(256.0f));
      Value nan = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::AndIOp::create(b, loc, bits, splatInt(i16, 0x7F)),
          splatInt(i16, 0x7F));
      wide = arith::SelectOp::create(
          b, loc, nan, splatF32(std::numeric_limits<float>::quiet_NaN()), wide);
    }
  } else {
    wide = arith::ExtFOp::create(b, loc, of(f32), raw);
  }
  if (target.isF32())
    return wide;
  return arith::TruncFOp::create(b, loc, of(target), wide);
}

/// Reads rows of an operand's stored matrix (of group `group`'s matrix,
/// when not null) as vectors in the micro-kernel's element type `element`.
struct VectorRowReader {
  const Operand &operand;
  Value group;
  Type element;

  /// `width` elements of stored row `row` from column `column`, in the
  /// kernel's type: zero past the row's end (the read's padding), for rows
  /// past the last and where `valid` (when given) is false. Reads are 1-D:
  /// a masked 2-D read would be lowered through a stack buffer, which a
  /// loop that is not parallel would allocate again in every iteration.
  Value read(OpBuilder &b, Location loc, Value row, Value column, int64_t width,
             Value valid) const {
    // FP8 is padded with its zero and read on as its bytes (i8).
    Type source = operand.getElementType();
    Type raw = isa<Float8E4M3FNType, Float8E5M2Type>(source)
                   ? Type(b.getI8Type())
                   : source;
    Value sourceZero = arith::ConstantOp::create(
        b, loc, cast<TypedAttr>(b.getZeroAttr(source)));
    int64_t storedRows = operand.getType().getDimSize(operand.getMatrixDim());
    IndexMath im{b, loc};
    SmallVector<Value, 3> at;
    if (group)
      at.push_back(group);
    at.append({im.min(row, im.c(storedRows - 1)), column});
    Value vector = vector::TransferReadOp::create(
        b, loc, VectorType::get({width}, source), operand.stored, at,
        sourceZero, ArrayRef<bool>{false});
    if (raw != source)
      vector = vector::BitCastOp::create(b, loc, VectorType::get({width}, raw),
                                         vector);
    auto type = VectorType::get({width}, element);
    Value zeros = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getZeroAttr(element)));
    Value inside = im.lt(row, im.c(storedRows));
    if (valid)
      inside = arith::AndIOp::create(b, loc, inside, valid);
    return arith::SelectOp::create(
        b, loc, inside, convertVector(b, loc, vector, source, element), zeros);
  }
};

/// packPanels for an operand canPackByVectors takes, a panel per thread
/// with vector reads, transposes and writes rather than one element at a
/// time (packing was a fifth of a 512^3 GEMM). With K contiguous (A, or B
/// under transpose_b) a [size, 16 steps] block of the panel's rows is read,
/// transposed (as 32-bit words: a bf16 pair is one word) and written as 16
/// rows of the panel; with K first, each step's K rows are read and
/// interleaved. The reads' padding makes the zeros past the operand's
/// ends.
Value packPanelsByVectors(OpBuilder &b, Location loc,
                          const HostGemmKernel &kernel, const Operand &operand,
                          int64_t panels, int64_t size, const GemmShape &s,
                          const RowPanels &rowPanels, int64_t groups) {
  constexpr int64_t kStepsPerRead = 16;
  Type element = kernel.getOperandType(b.getContext());
  int64_t step = kernel.getKStep();
  // Whole blocks of kStepsPerRead rows (the micro-kernel reads the first
  // kPadded / step), so that every write is in bounds.
  int64_t steps =
      llvm::divideCeil(s.kPadded / step, kStepsPerRead) * kStepsPerRead;
  // [groups,] panels, steps, step * size; one panel per iteration.
  SmallVector<int64_t> shape = {panels, steps, step * size};
  SmallVector<int64_t> bounds = {panels};
  if (groups) {
    shape.insert(shape.begin(), groups);
    bounds.insert(bounds.begin(), groups);
  }
  Value init = tensor::EmptyOp::create(b, loc, shape, element);
  scf::ForallOp forall = createForall(b, loc, bounds, init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  IndexMath im{b, loc};
  Value p = forall.getInductionVars().back();
  // Packing all groups, the group is the loop's; packing one group's
  // matrix, the operand's.
  Value group = groups ? forall.getInductionVar(0) : operand.group;
  SmallVector<OpFoldResult> offsets, sizes;
  if (groups) {
    offsets.push_back(group);
    sizes.push_back(b.getIndexAttr(1));
  }
  offsets.append({p, b.getIndexAttr(0), b.getIndexAttr(0)});
  sizes.append(
      {b.getIndexAttr(1), b.getIndexAttr(steps), b.getIndexAttr(step * size)});
  SmallVector<OpFoldResult> strides(shape.size(), b.getIndexAttr(1));
  auto panelType = RankedTensorType::get({1, steps, step * size}, element);
  Value panel = tensor::ExtractSliceOp::create(b, loc, panelType,
                                               forall.getRegionIterArgs()[0],
                                               offsets, sizes, strides);
  int64_t storedRows = operand.getType().getDimSize(operand.getMatrixDim());
  VectorRowReader reader{operand, group, element};
  auto readRow = [&](OpBuilder &b, Location loc, Value row, Value column,
                     int64_t width, Value valid = nullptr) {
    return reader.read(b, loc, row, column, width, valid);
  };
  auto writeRow = [&](OpBuilder &b, Location loc, Value line, Value into,
                      Value t) -> Value {
    IndexMath im{b, loc};
    return vector::TransferWriteOp::create(b, loc, line, into,
                                           ValueRange{im.c(0), t, im.c(0)},
                                           ArrayRef<bool>{true})
        .getResult();
  };
  Value first = im.mul(p, im.c(size));
  Type word = step == 2 ? Type(b.getI32Type()) : element;
  scf::ForOp loop;
  if (operand.kDim == 1) {
    // [size rows, 16 steps] of the operand, transposed as words.
    loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(steps), im.c(kStepsPerRead), ValueRange{panel},
        [&](OpBuilder &b, Location loc, Value t, ValueRange carried) {
          IndexMath im{b, loc};
          auto blockType =
              VectorType::get({size, kStepsPerRead * step}, element);
          Value rows = arith::ConstantOp::create(
              b, loc,
              DenseElementsAttr::get(blockType, b.getZeroAttr(element)));
          for (int64_t r = 0; r < size; ++r) {
            // A grouped GEMM's A panel takes its rows from the table.
            Value row = im.add(first, im.c(r)), valid;
            if (rowPanels.isGrouped())
              std::tie(row, valid) =
                  rowPanels.emitRow(b, loc, p, im.c(r), storedRows);
            rows = vector::InsertOp::create(
                b, loc,
                readRow(b, loc, row, im.mul(t, im.c(step)),
                        kStepsPerRead * step, valid),
                rows, ArrayRef<int64_t>{r});
          }
          Value words = vector::BitCastOp::create(
              b, loc, VectorType::get({size, kStepsPerRead}, word), rows);
          // Transposed in squares of 16 rows where the panel has whole
          // ones (B's 32 columns): the host's 16x16 shuffle transpose.
          int64_t square = size % kStepsPerRead == 0 ? kStepsPerRead : size;
          SmallVector<Value> parts;
          for (int64_t r = 0; r < size; r += square) {
            Value part = square == size
                             ? words
                             : vector::ExtractStridedSliceOp::create(
                                   b, loc, words, ArrayRef<int64_t>{r, 0},
                                   ArrayRef<int64_t>{square, kStepsPerRead},
                                   ArrayRef<int64_t>{1, 1})
                                   .getResult();
            parts.push_back(vector::TransposeOp::create(
                b, loc, part, ArrayRef<int64_t>{1, 0}));
          }
          auto lineType = VectorType::get({step * size}, element);
          Value next = carried[0];
          for (int64_t i = 0; i < kStepsPerRead; ++i) {
            // Row i of the transposed squares, side by side.
            Value line = vector::ExtractOp::create(b, loc, parts[0],
                                                   ArrayRef<int64_t>{i});
            for (size_t h = 1; h < parts.size(); ++h) {
              SmallVector<int64_t> concat;
              int64_t have = cast<VectorType>(line.getType()).getNumElements();
              for (int64_t e = 0; e < have + square; ++e)
                concat.push_back(e);
              line = vector::ShuffleOp::create(
                  b, loc, line,
                  vector::ExtractOp::create(b, loc, parts[h],
                                            ArrayRef<int64_t>{i}),
                  concat);
            }
            next = writeRow(b, loc,
                            vector::BitCastOp::create(b, loc, lineType, line),
                            next, im.add(t, im.c(i)));
          }
          scf::YieldOp::create(b, loc, next);
        });
  } else {
    // The step's K rows of the panel's columns, interleaved.
    SmallVector<int64_t> interleave;
    for (int64_t j = 0; j < size; ++j)
      for (int64_t e = 0; e < step; ++e)
        interleave.push_back(e * size + j);
    loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(s.kPadded / step), im.c(1), ValueRange{panel},
        [&](OpBuilder &b, Location loc, Value t, ValueRange carried) {
          IndexMath im{b, loc};
          Value k = im.mul(t, im.c(step));
          Value line = readRow(b, loc, k, first, size);
          if (step == 2)
            line = vector::ShuffleOp::create(
                b, loc, line, readRow(b, loc, im.add(k, im.c(1)), first, size),
                interleave);
          scf::YieldOp::create(b, loc, writeRow(b, loc, line, carried[0], t));
        });
  }
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(0),
                                        forall.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return forall.getResult(0);
}

/// op(A) packed for a tile micro-kernel: bf16 [panels, K / tileK, rows,
/// tileK] with element (p, kb, j, c) = (row p rows + j, K index kb tileK +
/// c), zero past A's ends; a grouped GEMM's A takes its rows from `table`.
/// Each block of a panel is one contiguous run of its tiles' rows (a tile
/// row 64 bytes: no cache-set conflicts whatever K is). bf16 and FP8
/// operands are packed by vectors, a panel per thread (K-contiguous ones a
/// row of a block at a time, K-first ones transposed as words); MXFP8 ones
/// element by element.
Value packTileRows(OpBuilder &b, Location loc, const HostGemmKernel &kernel,
                   const Operand &operand, const GemmShape &s,
                   const RowPanels &table) {
  int64_t rows = kernel.rows, tileK = kernel.tileUnit->getK();
  int64_t blocks = s.kPadded / tileK;
  Type element = b.getBF16Type();
  int64_t storedRows = operand.getType().getDimSize(operand.getMatrixDim());
  // Row j of panel p, and whether it is one of A's (null: when not
  // grouped, rows past A's end are clamped and zeroed by the reads).
  auto rowOf = [&](OpBuilder &b, Location loc, Value p,
                   Value j) -> std::pair<Value, Value> {
    IndexMath im{b, loc};
    if (table.isGrouped())
      return table.emitRow(b, loc, p, j, storedRows);
    return {im.add(im.mul(p, im.c(rows)), j), Value()};
  };
  // (A grouped GEMM's A is K-contiguous.)
  if (!canPackByVectors(kernel, operand) ||
      (operand.kDim != 1 && table.isGrouped()))
    return generateTensor(b, loc, {s.mPanels, blocks, rows, tileK}, element,
                          [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
                            IndexMath im{b, loc};
                            auto [row, valid] = rowOf(b, loc, i[0], i[2]);
                            Value k = im.add(im.mul(i[1], im.c(tileK)), i[3]);
                            return operand.emitPaddedRead(b, loc, row, k,
                                                          element, valid);
                          });
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{s.mPanels, blocks, rows, tileK}, element);
  scf::ForallOp forall = createForall(b, loc, {s.mPanels}, init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  IndexMath im{b, loc};
  Value p = forall.getInductionVar(0);
  SmallVector<OpFoldResult> offsets = {p, b.getIndexAttr(0), b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(blocks),
                                     b.getIndexAttr(rows),
                                     b.getIndexAttr(tileK)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value panel = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({1, blocks, rows, tileK}, element),
      forall.getRegionIterArgs()[0], offsets, sizes, strides);
  VectorRowReader reader{operand, Value(), element};
  // The panel's rows (and whether each is A's) do not change with K.
  SmallVector<std::pair<Value, Value>> panelRows;
  for (int64_t j = 0; j < rows; ++j)
    panelRows.push_back(rowOf(b, loc, p, im.c(j)));
  auto loop = scf::ForOp::create(
      b, loc, im.c(0), im.c(blocks), im.c(1), ValueRange{panel},
      [&](OpBuilder &b, Location loc, Value kb, ValueRange carried) {
        IndexMath im{b, loc};
        Value next = carried[0];
        auto write = [&](Value line, int64_t j) {
          next =
              vector::TransferWriteOp::create(
                  b, loc, line, next, ValueRange{im.c(0), kb, im.c(j), im.c(0)},
                  ArrayRef<bool>{true})
                  .getResult();
        };
        if (operand.kDim == 1) {
          // K contiguous: each row's block is one read.
          for (int64_t j = 0; j < rows; ++j) {
            auto [row, valid] = panelRows[j];
            write(
                reader.read(b, loc, row, im.mul(kb, im.c(tileK)), tileK, valid),
                j);
          }
        } else {
          // K first: the block's K pairs, each two stored rows of the
          // panel's columns interleaved into words (a column's pair), then
          // transposed 16 x 16 as words into the block's rows.
          int64_t pairs = tileK / 2;
          SmallVector<int64_t> interleave;
          for (int64_t j = 0; j < rows; ++j)
            interleave.append({j, rows + j});
          Type i32 = b.getI32Type();
          auto wordsType = VectorType::get({pairs, rows}, i32);
          Value words = arith::ConstantOp::create(
              b, loc, DenseElementsAttr::get(wordsType, b.getZeroAttr(i32)));
          Value first = im.mul(p, im.c(rows));
          for (int64_t t = 0; t < pairs; ++t) {
            Value k = im.add(im.mul(kb, im.c(tileK)), im.c(2 * t));
            Value line = vector::ShuffleOp::create(
                b, loc, reader.read(b, loc, k, first, rows, Value()),
                reader.read(b, loc, im.add(k, im.c(1)), first, rows, Value()),
                interleave);
            words = vector::InsertOp::create(
                b, loc,
                vector::BitCastOp::create(b, loc, VectorType::get({rows}, i32),
                                          line),
                words, ArrayRef<int64_t>{t});
          }
          auto lineType = VectorType::get({tileK}, element);
          for (int64_t h = 0; h < rows; h += pairs) {
            Value square = vector::TransposeOp::create(
                b, loc,
                vector::ExtractStridedSliceOp::create(
                    b, loc, words, ArrayRef<int64_t>{0, h},
                    ArrayRef<int64_t>{pairs, pairs}, ArrayRef<int64_t>{1, 1}),
                ArrayRef<int64_t>{1, 0});
            for (int64_t i = 0; i < pairs; ++i)
              write(vector::BitCastOp::create(
                        b, loc, lineType,
                        vector::ExtractOp::create(b, loc, square,
                                                  ArrayRef<int64_t>{i})),
                    h + i);
          }
        }
        scf::YieldOp::create(b, loc, next);
      });
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(0),
                                        forall.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return forall.getResult(0);
}

/// An operand packed in panels of `size` rows of op(A) or columns of
/// op(B), the micro-kernel's element type: pairs, bf16 [panels, K / 2,
/// 2 size] with element (p, t, 2 j + e) = (row or column p size + j, K
/// index 2 t + e); f32, [panels, K, size] with element (p, k, j). Zero past
/// the operand's ends. Each panel is contiguous, so the micro-kernel's
/// reads of A are one stream (no cache-set conflicts between rows whose
/// stride is a power of two) and its reads of B whole vectors. A grouped
/// GEMM's A takes its rows from `rows`; its B (`groups` matrices) is
/// packed group by group: [groups, panels, ...].
Value packPanels(OpBuilder &b, Location loc, const HostGemmKernel &kernel,
                 const Operand &operand, int64_t panels, int64_t size,
                 const GemmShape &s, const RowPanels &rows = {},
                 int64_t groups = 0) {
  // The grouped A is K-contiguous ([T, K]), as the vectors' table path
  // takes it.
  if (canPackByVectors(kernel, operand) &&
      (!rows.isGrouped() || operand.kDim == 1))
    return packPanelsByVectors(b, loc, kernel, operand, panels, size, s, rows,
                               groups);
  Type element = kernel.getOperandType(b.getContext());
  int64_t step = kernel.getKStep();
  SmallVector<int64_t> shape = {panels, s.kPadded / step, step * size};
  if (groups)
    shape.insert(shape.begin(), groups);
  return generateTensor(
      b, loc, shape, element,
      [&](OpBuilder &b, Location loc, ArrayRef<Value> indices) {
        IndexMath im{b, loc};
        auto [view, i] = operand.selectGroup(indices, groups);
        Value j = im.div(i[2], im.c(step));
        Value k = im.add(im.mul(i[1], im.c(step)),
                         arith::RemUIOp::create(b, loc, i[2], im.c(step)));
        if (rows.isGrouped()) {
          auto [row, valid] = rows.emitRow(b, loc, i[0], j, view.getOther());
          return view.emitPaddedRead(b, loc, row, k, element, valid);
        }
        Value other = im.add(im.mul(i[0], im.c(size)), j);
        return view.emitPaddedRead(b, loc, other, k, element);
      });
}

/// The block scales of `operand` per padded row (or column) and K block:
/// f32 [K blocks, panels * panel size], zero in the padding; grouped as
/// packPanels is ([groups, K blocks, ...] for `groups` matrices).
Value expandBlockScales(OpBuilder &b, Location loc, const Operand &operand,
                        int64_t blocks, int64_t padded, int64_t panelSize,
                        const RowPanels &rows = {}, int64_t groups = 0) {
  SmallVector<int64_t> shape = {blocks, padded};
  if (groups)
    shape.insert(shape.begin(), groups);
  return generateTensor(
      b, loc, shape, b.getF32Type(),
      [&](OpBuilder &b, Location loc, ArrayRef<Value> indices) {
        IndexMath im{b, loc};
        auto [view, i] = operand.selectGroup(indices, groups);
        Value last = im.c(view.getOther() - 1);
        Value other = im.min(i[1], last), inside = im.le(i[1], last);
        if (rows.isGrouped()) {
          auto [row, valid] = rows.emitRow(
              b, loc, im.div(i[1], im.c(panelSize)),
              arith::RemUIOp::create(b, loc, i[1], im.c(panelSize)),
              view.getOther());
          other = row;
          inside = valid;
        }
        Value scale = view.emitBlockScale(b, loc, other, i[0]);
        return im.select(inside, scale, emitF32Constant(b, loc, 0.0));
      });
}

/// Builds the loop nest over the output tiles.
class GemmBuilder {
public:
  GemmBuilder(const HostGemmKernel &kernel, const GemmShape &s, Value rowPanels,
              Value columnPanels, Value rowScales, Value columnScales)
      : kernel(kernel), s(s), rowPanels(rowPanels), columnPanels(columnPanels),
        rowScales(rowScales), columnScales(columnScales) {}

  /// Limits the tiles to one group's of a grouped GEMM: A panels
  /// [firstPanel, endPanel) (indices), whose B panels are `columnPanels`
  /// (that group's alone) and whose column scales are those of group
  /// `group` ([groups, ...] columnScales). The tiles start at firstPanel;
  /// the last may reach past endPanel, into rows this does not compute
  /// (the product build gets must have a tile of rows to spare for that).
  void setGroup(Value group, Value firstPanel, Value endPanel) {
    scaleGroup = group;
    groupFirstPanel = firstPanel;
    groupEndPanel = endPanel;
  }

  /// The f32 [tilesM * tileRows, tilesN * tileCols + one vector] product,
  /// computed into `into` when it is given (a grouped GEMM's, with a tile
  /// of rows more). The extra vector keeps the row stride off powers of
  /// two, whose rows would all fall into one set of the L1 cache.
  Value build(OpBuilder &b, Location loc, Value into = nullptr) {
    Value product =
        into ? into
             : tensor::EmptyOp::create(
                   b, loc,
                   ArrayRef<int64_t>{s.tilesM * s.tileRows,
                                     s.tilesN * s.tileCols + kernel.lanes},
                   b.getF32Type());
    int64_t panelsPerTileM = s.tileRows / kernel.rows;
    int64_t panelsPerTileN = s.tileCols / kernel.getColumns();
    // Tiles load from memory: the packed operands as buffers (read only).
    if (kernel.kind == HostGemmKernel::Kind::Tile) {
      auto bufferOf = [&](Value packed) -> Value {
        auto type = cast<RankedTensorType>(packed.getType());
        return bufferization::ToBufferOp::create(
            b, loc, MemRefType::get(type.getShape(), type.getElementType()),
            packed, /*read_only=*/true);
      };
      rowBuffer = bufferOf(rowPanels);
      columnBuffer = bufferOf(columnPanels);
    }
    // The row tiles: all, or one group's (a count known at run time).
    IndexMath outer{b, loc};
    Value tilesM = outer.c(s.tilesM);
    if (groupFirstPanel)
      tilesM = outer.div(outer.add(outer.sub(groupEndPanel, groupFirstPanel),
                                   outer.c(panelsPerTileM - 1)),
                         outer.c(panelsPerTileM));
    // One loop over all tiles, so that the threads share them evenly.
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{
            groupFirstPanel ? OpFoldResult(outer.mul(tilesM, outer.c(s.tilesN)))
                            : b.getIndexAttr(s.tilesM * s.tilesN)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)}, ValueRange{product},
        /*mapping=*/std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    IndexMath im{b, loc};
    // Consecutive tiles share their B panels (the larger block).
    Value tileN = im.div(forall.getInductionVar(0), tilesM);
    Value tileM =
        arith::RemUIOp::create(b, loc, forall.getInductionVar(0), tilesM);
    Value firstPanelM = im.mul(tileM, im.c(panelsPerTileM));
    if (groupFirstPanel)
      firstPanelM = im.add(groupFirstPanel, firstPanelM);
    Value rowOffset = im.mul(firstPanelM, im.c(kernel.rows));
    Value colOffset = im.mul(tileN, im.c(s.tileCols));
    SmallVector<OpFoldResult> offsets = {rowOffset, colOffset};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(s.tileRows),
                                       b.getIndexAttr(s.tileCols)};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    Value tile = tensor::ExtractSliceOp::create(
        b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
    // The panels of this tile (the last tiles may have fewer).
    Value firstPanelN = im.mul(tileN, im.c(panelsPerTileN));
    Value panelsM = im.min(
        im.c(panelsPerTileM),
        im.sub(groupEndPanel ? groupEndPanel : im.c(s.mPanels), firstPanelM));
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
    // The indices of B panel `panelN`.
    SmallVector<Value, 1> columnPanel = {panelN};

    SmallVector<Value> sums;
    if (kernel.kind == HostGemmKernel::Kind::Tile) {
      sums = emitTileSums(b, loc, chunk, panelM, panelN);
      if (!blockScales)
        for (auto [sum, previous] : llvm::zip_equal(sums, init))
          sum = arith::AddFOp::create(b, loc, sum, previous);
    } else {
      Value firstStep = im.mul(chunk, im.c(s.chunk / step));
      Value lastStep = im.min(im.add(firstStep, im.c(s.chunk / step)),
                              im.c(s.kPadded / step));
      auto loop = scf::ForOp::create(
          b, loc, firstStep, lastStep, im.c(1), init,
          [&](OpBuilder &b, Location loc, Value t, ValueRange acc) {
            SmallVector<Value> next =
                kernel.kind == HostGemmKernel::Kind::PairDot
                    ? emitPairDotStep(b, loc, t, panelM, columnPanel, acc)
                    : emitFMAStep(b, loc, t, panelM, columnPanel, acc);
            scf::YieldOp::create(b, loc, next);
          });
      sums.assign(loop.getResults().begin(), loop.getResults().end());
    }
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
          // A grouped GEMM's column scales are its group's.
          SmallVector<Value, 3> at;
          if (scaleGroup)
            at.push_back(scaleGroup);
          at.append({chunk, im.add(im.mul(panelN, im.c(kernel.getColumns())),
                                   im.c(v * lanes))});
          Value columnScale = vector::TransferReadOp::create(
              b, loc, accType, columnScales, at, zeroF, ArrayRef<bool>{true});
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

  /// The sums of A panel `panelM` times B panel `panelN` over K chunk
  /// `chunk` on the tile unit, as the kernel's rows x vectors of lanes: the
  /// chunk's tile steps unrolled (no tile crosses a block boundary, which
  /// LLVM's tile allocation and its scalar emulation both want), the C
  /// tiles then stored to a stack buffer and read back as vectors.
  SmallVector<Value> emitTileSums(OpBuilder &b, Location loc, Value chunk,
                                  Value panelM, Value panelN) const {
    IndexMath im{b, loc};
    const BF16TileUnit &unit = *kernel.tileUnit;
    int64_t down = kernel.rows / unit.getRows();
    int64_t across = kernel.getColumns() / unit.getColumns();
    int64_t tileK = unit.getK(), steps = s.chunk / tileK;
    SmallVector<Value> acc;
    for (int64_t t = 0; t < down * across; ++t)
      acc.push_back(unit.emitZero(b, loc));
    for (int64_t step = 0; step < steps; ++step) {
      // K block kb of A's packing; its pairs start at B's row kb tileK / 2.
      Value kb = im.add(im.mul(chunk, im.c(steps)), im.c(step));
      SmallVector<Value> aTiles, bTiles;
      for (int64_t i = 0; i < down; ++i)
        aTiles.push_back(unit.emitLoadA(
            b, loc, rowBuffer,
            ValueRange{panelM, kb, im.c(i * unit.getRows()), im.c(0)}));
      for (int64_t j = 0; j < across; ++j)
        bTiles.push_back(
            unit.emitLoadB(b, loc, columnBuffer,
                           ValueRange{panelN, im.mul(kb, im.c(tileK / 2)),
                                      im.c(j * 2 * unit.getColumns())}));
      for (int64_t i = 0; i < down; ++i)
        for (int64_t j = 0; j < across; ++j)
          acc[i * across + j] = unit.emitMultiply(b, loc, acc[i * across + j],
                                                  aTiles[i], bTiles[j]);
    }
    auto laneType = VectorType::get({kernel.lanes}, b.getF32Type());
    SmallVector<Type> types(kernel.rows * kernel.vectors, laneType);
    auto scope =
        memref::AllocaScopeOp::create(b, loc, TypeRange(types), ValueRange{});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&scope.getBodyRegion().emplaceBlock());
    IndexMath in{b, loc};
    Value scratch = memref::AllocaOp::create(
        b, loc,
        MemRefType::get({kernel.rows, kernel.getColumns()}, b.getF32Type()));
    for (int64_t i = 0; i < down; ++i)
      for (int64_t j = 0; j < across; ++j)
        unit.emitStore(
            b, loc, acc[i * across + j], scratch,
            ValueRange{in.c(i * unit.getRows()), in.c(j * unit.getColumns())});
    SmallVector<Value> sums;
    for (int64_t r = 0; r < kernel.rows; ++r)
      for (int64_t v = 0; v < kernel.vectors; ++v)
        sums.push_back(vector::LoadOp::create(
            b, loc, laneType, scratch,
            ValueRange{in.c(r), in.c(v * kernel.lanes)}));
    memref::AllocaScopeReturnOp::create(b, loc, sums);
    return SmallVector<Value>(scope.getResults());
  }

  /// One pair of K: each row's bf16 pair broadcast against the column
  /// pairs of B panel `columnPanel` (its indices) on the dot unit.
  SmallVector<Value> emitPairDotStep(OpBuilder &b, Location loc, Value t,
                                     Value panelM, ArrayRef<Value> columnPanel,
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
    for (int64_t v = 0; v < kernel.vectors; ++v) {
      SmallVector<Value, 4> at(columnPanel);
      at.append({t, im.c(v * 2 * lanes)});
      columns.push_back(vector::TransferReadOp::create(
          b, loc, operandType, columnPanels, at, zeroBF, ArrayRef<bool>{true}));
    }
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

  /// One element of K: each row's f32 broadcast times the columns of B
  /// panel `columnPanel` (its indices).
  SmallVector<Value> emitFMAStep(OpBuilder &b, Location loc, Value k,
                                 Value panelM, ArrayRef<Value> columnPanel,
                                 ValueRange acc) const {
    IndexMath im{b, loc};
    int64_t lanes = kernel.lanes;
    auto laneType = VectorType::get({lanes}, b.getF32Type());
    Value zeroF = emitF32Constant(b, loc, 0.0);
    SmallVector<Value> columns;
    for (int64_t v = 0; v < kernel.vectors; ++v) {
      SmallVector<Value, 4> at(columnPanel);
      at.append({k, im.c(v * lanes)});
      columns.push_back(vector::TransferReadOp::create(
          b, loc, laneType, columnPanels, at, zeroF, ArrayRef<bool>{true}));
    }
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
  /// The packed operands as buffers, for a tile micro-kernel (build).
  Value rowBuffer, columnBuffer;
  /// A grouped GEMM's group (setGroup), else null.
  Value scaleGroup, groupFirstPanel, groupEndPanel;
};

} // namespace

//===----------------------------------------------------------------------===//
// HostGemmKernel
//===----------------------------------------------------------------------===//

Type HostGemmKernel::getOperandType(MLIRContext *context) const {
  return kind == Kind::FMA ? Type(Float32Type::get(context))
                           : Type(BFloat16Type::get(context));
}

std::string HostGemmKernel::describe() const {
  if (kind == Kind::Tile)
    return llvm::formatv("{0} tiles, {1}x{2} micro-kernel ({3}x{4} tiles of "
                         "{5}x{6} f32)",
                         tileUnit->getName(), rows, getColumns(),
                         rows / tileUnit->getRows(),
                         getColumns() / tileUnit->getColumns(),
                         tileUnit->getRows(), tileUnit->getColumns());
  if (kind == Kind::PairDot)
    return llvm::formatv("{0} bf16 pair dots, {1}x{2} micro-kernel",
                         unit->getName(), rows, getColumns());
  return llvm::formatv("f32 FMAs on {0} lanes, {1}x{2} micro-kernel", lanes,
                       rows, getColumns());
}

HostGemmKernel mlir::te::chooseHostGemmKernel(Type element,
                                              const BF16PairDotUnit *unit,
                                              const BF16TileUnit *tileUnit,
                                              int64_t lanes) {
  // Products of bf16 (and of FP8, which bf16 holds exactly) are exact in
  // f32, so tiles and pair dots lose nothing; f16 and f32 need f32 FMAs.
  bool bf16 = element.isBF16() || isFP8Type(element);
  HostGemmKernel kernel;
  if (tileUnit && bf16) {
    // 2x2 C tiles: with the two A and two B tiles of a step, all eight of
    // AMX's tile registers. The sums leave as 16-lane vectors.
    kernel.kind = HostGemmKernel::Kind::Tile;
    kernel.tileUnit = tileUnit;
    kernel.lanes = 16;
    kernel.rows = 2 * tileUnit->getRows();
    kernel.vectors = 2 * tileUnit->getColumns() / kernel.lanes;
    return kernel;
  }
  if (unit && bf16) {
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
  Value rowPanels =
      kernel.kind == HostGemmKernel::Kind::Tile
          ? packTileRows(b, loc, kernel, a, s, {})
          : packPanels(b, loc, kernel, a, s.mPanels, kernel.rows, s);
  Value columnPanels =
      packPanels(b, loc, kernel, bOperand, s.nPanels, kernel.getColumns(), s);
  Value rowScales, columnScales;
  if (blockScales) {
    int64_t blocks = llvm::divideCeil(s.k, kScaleBlockK);
    rowScales = expandBlockScales(b, loc, a, blocks, s.tilesM * s.tileRows,
                                  kernel.rows);
    columnScales = expandBlockScales(
        b, loc, bOperand, blocks, s.tilesN * s.tileCols, kernel.getColumns());
  }
  return GemmBuilder(kernel, s, rowPanels, columnPanels, rowScales,
                     columnScales)
      .build(b, loc);
}

namespace {

/// An index [groups] tensor of running sums: entry g folds `next(h, sum)`
/// over h = 0 .. g from 0.
Value buildRunningSums(
    OpBuilder &b, Location loc, int64_t groups,
    function_ref<Value(OpBuilder &, Location, Value, Value)> next) {
  return generateTensor(
      b, loc, {groups}, b.getIndexType(),
      [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
        IndexMath im{b, loc};
        auto loop = scf::ForOp::create(
            b, loc, im.c(0), im.add(i[0], im.c(1)), im.c(1),
            ValueRange{im.c(0)},
            [&](OpBuilder &b, Location loc, Value h, ValueRange sum) {
              scf::YieldOp::create(b, loc, ValueRange{next(b, loc, h, sum[0])});
            });
        return loop.getResult(0);
      });
}

/// Each group's end row: min(T, the splits up to it), the clamped
/// prefix sums (an index [G] tensor). Bad splits (te-insert-checks reports
/// them) thus still describe rows inside A.
Value buildGroupEnds(OpBuilder &b, Location loc, Value splits, int64_t groups,
                     int64_t tokens) {
  return buildRunningSums(
      b, loc, groups, [&](OpBuilder &b, Location loc, Value g, Value sum) {
        IndexMath im{b, loc};
        Value split = arith::IndexCastOp::create(
            b, loc, b.getIndexType(),
            tensor::ExtractOp::create(b, loc, splits, g));
        return im.min(im.add(sum, im.max(split, im.c(0))), im.c(tokens));
      });
}

/// Entry g - 1 of the index tensor `ends`, or 0 for g = 0: where group g
/// starts.
Value emitStart(OpBuilder &b, Location loc, Value ends, Value g) {
  IndexMath im{b, loc};
  Value previous = im.max(arith::SubIOp::create(b, loc, g, im.c(1)), im.c(0));
  Value end = tensor::ExtractOp::create(b, loc, ends, previous);
  return im.select(im.lt(g, im.c(1)), im.c(0), end);
}

/// The group of position `x` given the groups' (non-decreasing) ends: the
/// number of groups that end at or before it (the last group for
/// positions past every end).
Value emitGroupOf(OpBuilder &b, Location loc, Value ends, int64_t groups,
                  Value x) {
  IndexMath im{b, loc};
  auto loop = scf::ForOp::create(
      b, loc, im.c(0), im.c(groups - 1), im.c(1), ValueRange{im.c(0)},
      [&](OpBuilder &b, Location loc, Value g, ValueRange count) {
        IndexMath im{b, loc};
        Value end = tensor::ExtractOp::create(b, loc, ends, g);
        scf::YieldOp::create(
            b, loc,
            ValueRange{im.add(
                count[0], arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                                       im.le(end, x)))});
      });
  return loop.getResult(0);
}

} // namespace

HostGroupedGemmProduct mlir::te::buildHostGroupedGemmProduct(
    OpBuilder &b, Location loc, GroupedMatmulOp op, Value aValue, Value bValue,
    Value splits, Value aScaleInv, Value bScaleInv,
    const HostGemmKernel &kernel) {
  int64_t groups = op.getNumGroups();
  int64_t tokens = op.getA().getType().getDimSize(0);
  int64_t rows = kernel.rows;
  // Per_tensor scales are per group ([G]): the epilogue applies them.
  ScalingMode aMode = op.getAScalingMode(), bMode = op.getBScalingMode();
  bool perTensor = op.hasFP8Operands() && aMode == ScalingMode::per_tensor;
  Operand a{aValue, 1, perTensor ? Value() : aScaleInv, aMode};
  Operand bOperand{bValue, op.getTransposeB() ? 1u : 0u,
                   perTensor ? Value() : bScaleInv, bMode};
  bool blockScales = a.hasBlockScales() || bOperand.hasBlockScales();

  // The groups' rows and panels: each group starts a panel, so at most
  // sum ceil(m_g / rows) <= (T + G (rows - 1)) / rows panels.
  Value rowEnds = buildGroupEnds(b, loc, splits, groups, tokens);
  Value panelEnds = buildRunningSums(
      b, loc, groups, [&](OpBuilder &b, Location loc, Value g, Value sum) {
        IndexMath im{b, loc};
        Value size = im.sub(tensor::ExtractOp::create(b, loc, rowEnds, g),
                            emitStart(b, loc, rowEnds, g));
        return im.add(sum, im.div(im.add(size, im.c(rows - 1)), im.c(rows)));
      });
  int64_t maxPanels = (tokens + groups * (rows - 1)) / rows;
  maxPanels = std::max<int64_t>(maxPanels, 1);
  RowPanels table;
  table.group =
      generateTensor(b, loc, {maxPanels}, b.getIndexType(),
                     [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
                       return emitGroupOf(b, loc, panelEnds, groups, i[0]);
                     });
  auto panelField = [&](bool count) {
    return generateTensor(
        b, loc, {maxPanels}, b.getIndexType(),
        [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
          IndexMath im{b, loc};
          Value g = tensor::ExtractOp::create(b, loc, table.group, i[0]);
          Value local =
              im.mul(im.sub(i[0], emitStart(b, loc, panelEnds, g)), im.c(rows));
          Value start = emitStart(b, loc, rowEnds, g);
          if (!count)
            return im.add(start, local);
          Value size =
              im.sub(tensor::ExtractOp::create(b, loc, rowEnds, g), start);
          return im.max(im.min(im.sub(size, local), im.c(rows)), im.c(0));
        });
  };
  table.first = panelField(false);
  table.count = panelField(true);

  GemmShape s = getShape(kernel, a, bOperand, blockScales, maxPanels);
  Value rowPanels =
      kernel.kind == HostGemmKernel::Kind::Tile
          ? packTileRows(b, loc, kernel, a, s, table)
          : packPanels(b, loc, kernel, a, s.mPanels, rows, s, table);
  Value rowScales, columnScales;
  if (blockScales) {
    int64_t blocks = llvm::divideCeil(s.k, kScaleBlockK);
    rowScales = expandBlockScales(b, loc, a, blocks, s.tilesM * s.tileRows,
                                  rows, table);
    columnScales =
        expandBlockScales(b, loc, bOperand, blocks, s.tilesN * s.tileCols,
                          kernel.getColumns(), {}, groups);
  }
  // Group by group: B[g] packed (one group's matrix at a time, so the
  // packed copy is one weight's size however many groups there are), then
  // the tiles of the group's A panels.
  IndexMath im{b, loc};
  Value empty = tensor::EmptyOp::create(
      b, loc,
      ArrayRef<int64_t>{(s.tilesM + 1) * s.tileRows,
                        s.tilesN * s.tileCols + kernel.lanes},
      b.getF32Type());
  auto groupLoop = scf::ForOp::create(
      b, loc, im.c(0), im.c(groups), im.c(1), ValueRange{empty},
      [&](OpBuilder &b, Location loc, Value g, ValueRange product) {
        Operand matrix = bOperand;
        matrix.group = g;
        Value columnPanels = packPanels(b, loc, kernel, matrix, s.nPanels,
                                        kernel.getColumns(), s);
        GemmBuilder builder(kernel, s, rowPanels, columnPanels, rowScales,
                            columnScales);
        builder.setGroup(g, emitStart(b, loc, panelEnds, g),
                         tensor::ExtractOp::create(b, loc, panelEnds, g));
        scf::YieldOp::create(b, loc, builder.build(b, loc, product[0]));
      });
  HostGroupedGemmProduct result;
  result.product = groupLoop.getResult(0);
  result.rowGroup =
      generateTensor(b, loc, {tokens}, b.getIndexType(),
                     [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
                       return emitGroupOf(b, loc, rowEnds, groups, i[0]);
                     });
  result.productRow = generateTensor(
      b, loc, {tokens}, b.getIndexType(),
      [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
        IndexMath im{b, loc};
        Value g = tensor::ExtractOp::create(b, loc, result.rowGroup, i[0]);
        Value row = im.add(im.mul(emitStart(b, loc, panelEnds, g), im.c(rows)),
                           im.sub(i[0], emitStart(b, loc, rowEnds, g)));
        return im.min(row, im.c(s.tilesM * s.tileRows - 1));
      });
  return result;
}

std::vector<std::pair<std::string, std::optional<std::string>>>
mlir::te::getHostGemmKernelChoices(Operation *op,
                                   const ConvertTEToLinalgOptions &options,
                                   std::optional<std::string> noTileUnit) {
  std::vector<std::pair<std::string, std::optional<std::string>>> choices;
  if (!isa<ScaledMatmulOp, GroupedMatmulOp>(op))
    return choices;
  Type element = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  const BF16PairDotUnit *unit = getBF16PairDotUnit(options.dotUnit);
  const BF16TileUnit *tileUnit = getBF16TileUnit(options.tileUnit);
  HostGemmKernel chosen =
      chooseHostGemmKernel(element, unit, tileUnit, options.vectorLanes);
  std::string name;
  llvm::raw_string_ostream os(name);
  os << element;
  // Each kernel before the chosen one, in order of preference, with why
  // not.
  if (chosen.kind != HostGemmKernel::Kind::Tile)
    choices.push_back(
        {"bf16 tiles",
         tileUnit ? name + " operands, which bf16 tiles would round"
                  : noTileUnit.value_or("the target has no bf16 tile unit "
                                        "(AMX-BF16)")});
  if (chosen.kind == HostGemmKernel::Kind::FMA)
    choices.push_back(
        {"bf16 pair dots",
         unit ? name + " operands, which bf16 pairs would round"
              : std::string("the target has no bf16 dot-product unit "
                            "(AVX512-BF16)")});
  choices.push_back({chosen.describe(), std::nullopt});
  return choices;
}
