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
