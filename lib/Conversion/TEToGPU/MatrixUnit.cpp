//===- MatrixUnit.cpp - The 16x8x16 warp unit's maps and loads ------------===//
//
// WarpMMA16x8x16's fragment maps are MMALayout.h's formulas instantiated on
// IndexExpr; its loads use the target's matrix load where there is one and
// read element by element otherwise, so that a target with only the
// instruction gets the same fragments.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToGPU/MatrixUnit.h"
#include "te/Conversion/TEToGPU/TEToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::te;

std::string MatrixUnit::Shape::str() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
         " on " + std::to_string(threads) + " threads";
}

MatrixUnit::~MatrixUnit() = default;

bool WarpMMA16x8x16::takesOperands(Type element) const {
  return element.isBF16() || element.isF16();
}

TileCoord WarpMMA16x8x16::aElement(IndexExpr lane, int i) const {
  return mma::aElement(lane, i);
}

TileCoord WarpMMA16x8x16::bElement(IndexExpr lane, int i) const {
  return mma::bElement(lane, i);
}

TileCoord WarpMMA16x8x16::cElement(IndexExpr lane, int i) const {
  return mma::cElement(lane, i);
}

mma::AccumulatorSource WarpMMA16x8x16::accumulatorForA(int i) const {
  return mma::accumulatorForA(i);
}

SmallVector<Value> WarpMMA16x8x16::loadA(OpBuilder &b, Location loc, Value tile,
                                         int64_t stride, IndexExpr lane,
                                         IndexExpr row, IndexExpr col) const {
  SmallVector<Value> fragment;
  if (hasLoadMatrix()) {
    for (int half = 0; half < 2; ++half) {
      TileCoord at = mma::aFragmentRow(lane, half);
      SmallVector<Value> part = loadMatrixX2(
          b, loc, tile, ((row + at.row) * stride + col + at.col).value,
          /*transpose=*/false);
      fragment.append(part.begin(), part.end());
    }
    return fragment;
  }
  for (int i = 0; i < mma::kAElements; ++i) {
    TileCoord e = mma::aElement(lane, i);
    fragment.push_back(memref::LoadOp::create(
        b, loc, tile, ((row + e.row) * stride + col + e.col).value));
  }
  return fragment;
}

SmallVector<Value> WarpMMA16x8x16::loadB(OpBuilder &b, Location loc, Value tile,
                                         int64_t stride, IndexExpr lane,
                                         Staging staging,
                                         TileCoord origin) const {
  bool kRows = staging == Staging::KRows;
  if (hasLoadMatrix()) {
    TileCoord at = mma::bFragmentRow(lane, kRows);
    return loadMatrixX2(
        b, loc, tile,
        ((origin.row + at.row) * stride + origin.col + at.col).value,
        /*transpose=*/kRows);
  }
  SmallVector<Value> fragment;
  for (int i = 0; i < mma::kBElements; ++i) {
    TileCoord e = mma::bElement(lane, i);
    TileCoord at = kRows ? TileCoord{origin.row + e.row, origin.col + e.col}
                         : TileCoord{origin.row + e.col, origin.col + e.row};
    fragment.push_back(
        memref::LoadOp::create(b, loc, tile, (at.row * stride + at.col).value));
  }
  return fragment;
}

SmallVector<Value> WarpMMA16x8x16::loadMatrixX2(OpBuilder &, Location, Value,
                                                Value, bool) const {
  llvm::report_fatal_error("loadMatrixX2 called on a matrix unit without "
                           "matrix loads");
}

//===----------------------------------------------------------------------===//
// ThreadFMA16x8x16
//===----------------------------------------------------------------------===//

namespace {
/// The index `value`, built where `like` builds.
IndexExpr constantLike(const IndexExpr &like, int64_t value) {
  return {like.b, like.loc,
          arith::ConstantIndexOp::create(*like.b, like.loc, value)};
}
} // namespace

TileCoord ThreadFMA16x8x16::aElement(IndexExpr lane, int i) const {
  // Row lane/4 (i < 16) or lane/4 + 8, column k = i % 16.
  return {lane / 4 + 8 * (i / mma::kK), constantLike(lane, i % mma::kK)};
}

TileCoord ThreadFMA16x8x16::bElement(IndexExpr lane, int i) const {
  // (k, n): k = i % 16, column 2*(lane%4) (i < 16) or the one after it.
  return {constantLike(lane, i % mma::kK), (lane % 4) * 2 + i / mma::kK};
}

TileCoord ThreadFMA16x8x16::cElement(IndexExpr lane, int i) const {
  return mma::cElement(lane, i);
}

mma::AccumulatorSource ThreadFMA16x8x16::accumulatorForA(int) const {
  llvm::report_fatal_error("ThreadFMA16x8x16 reads A from a tile only");
}

SmallVector<Value> ThreadFMA16x8x16::loadA(OpBuilder &b, Location loc,
                                           Value tile, int64_t stride,
                                           IndexExpr lane, IndexExpr row,
                                           IndexExpr col) const {
  IndexExpr first = (row + lane / 4) * stride + col;
  return {tile, first.value, (first + 8 * stride).value,
          arith::ConstantIndexOp::create(b, loc, 1)};
}

SmallVector<Value> ThreadFMA16x8x16::loadB(OpBuilder &b, Location loc,
                                           Value tile, int64_t stride,
                                           IndexExpr lane, Staging staging,
                                           TileCoord origin) const {
  IndexExpr column = (lane % 4) * 2;
  // Element (k, n) at (origin.row + k, origin.col + n) with KRows, at
  // (origin.row + n, origin.col + k) with NRows.
  bool kRows = staging == Staging::KRows;
  IndexExpr first = kRows ? origin.row * stride + origin.col + column
                          : (origin.row + column) * stride + origin.col;
  int64_t nextColumn = kRows ? 1 : stride, kStep = kRows ? stride : 1;
  return {tile, first.value, (first + nextColumn).value,
          arith::ConstantIndexOp::create(b, loc, kStep)};
}

SmallVector<Value>
ThreadFMA16x8x16::multiplyAccumulate(OpBuilder &b, Location loc,
                                     ArrayRef<Value> a, ArrayRef<Value> bValues,
                                     ArrayRef<Value> c) const {
  auto step = [](Value value) {
    return cast<arith::ConstantIndexOp>(value.getDefiningOp()).value();
  };
  int64_t aStep = step(a[3]), bStep = step(bValues[3]);
  auto read = [&](Value tile, Value first, int64_t offset) -> Value {
    Value index = arith::AddIOp::create(
        b, loc, first, arith::ConstantIndexOp::create(b, loc, offset));
    return memref::LoadOp::create(b, loc, tile, index);
  };
  // Accumulator i is (row i / 2, column i % 2), as mma::cElement places it.
  SmallVector<Value> d(c.begin(), c.end());
  for (int k = 0; k < mma::kK; ++k) {
    Value rows[2] = {read(a[0], a[1], k * aStep), read(a[0], a[2], k * aStep)};
    Value columns[2] = {read(bValues[0], bValues[1], k * bStep),
                        read(bValues[0], bValues[2], k * bStep)};
    for (int i = 0; i < mma::kCElements; ++i)
      d[i] = math::FmaOp::create(b, loc, rows[i / 2], columns[i % 2], d[i]);
  }
  return d;
}
