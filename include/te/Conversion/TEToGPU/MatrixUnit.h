//===- MatrixUnit.h - The matrix units GPU kernels are built on -*- C++ -*-===//
//
// A matrix unit as te's GPU kernels use it: the tile one product of a group
// of threads computes (D = A * B + C), where each thread's fragment
// elements sit in A, B and D, how fragments load from tiles staged in
// workgroup memory, and the multiply-accumulate itself. The kernels reach
// the hardware's matrix instructions only through this interface; a target
// lists the units it has (GPUTargetInfo::getMatrixUnits), and each kernel
// takes the unit of the shape its tiling is built for (findMatrixUnit).
//
// WarpMMA16x8x16 is the one matrix instruction's shape in tree (PTX's
// mma.sync m16n8k16: its fragment maps are MMALayout.h's), with the
// instruction and the matrix load left to the target. ThreadFMA16x8x16 is
// the same product of f32 operands on the lanes' FMAs, for kernels whose
// operands the 16-bit unit would round. A warpgroup MMA fed by TMA, or AMD's
// MFMA, is a new MatrixUnit beside it, with the tiling that suits it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TETOGPU_MATRIXUNIT_H
#define TE_CONVERSION_TETOGPU_MATRIXUNIT_H

#include "te/Conversion/TEToGPU/IndexExpr.h"
#include "te/Conversion/TEToGPU/MMALayout.h"

#include "mlir/IR/Builders.h"

#include <cstdint>
#include <string>

namespace mlir::te {

/// (row, column) of an element of a tile, as IR.
using TileCoord = mma::Coord<IndexExpr>;

class MatrixUnit {
public:
  /// D[m x n] = A[m x k] * B[k x n] + C[m x n] by `threads` threads
  /// together, each holding `aElements` of A, `bElements` of B and
  /// `cElements` of C and D.
  struct Shape {
    int64_t m, n, k, threads, aElements, bElements, cElements;

    bool operator==(const Shape &other) const {
      return m == other.m && n == other.n && k == other.k &&
             threads == other.threads && aElements == other.aElements &&
             bElements == other.bElements && cElements == other.cElements;
    }
    bool operator!=(const Shape &other) const { return !(*this == other); }
    /// "16x8x16 on 32 threads".
    std::string str() const;
  };

  /// How B is staged: element (k, n) at tile row k (`KRows`: a [k][n]
  /// tile, as attention stages V) or at tile row n (`NRows`: a [n][k]
  /// tile, as attention stages K and the GEMM its B).
  enum class Staging { KRows, NRows };

  virtual ~MatrixUnit();

  /// The instruction in messages, e.g. "mma.sync.m16n8k16".
  virtual std::string getName() const = 0;
  virtual Shape getShape() const = 0;
  /// Whether A and B may have `element` type (D and C are f32).
  virtual bool takesOperands(Type element) const = 0;

  /// Where the `i`th element a thread (`lane` of the group) holds sits:
  /// in A as (row, k), in B as (k, column), in C and D as (row, column).
  virtual TileCoord aElement(IndexExpr lane, int i) const = 0;
  virtual TileCoord bElement(IndexExpr lane, int i) const = 0;
  virtual TileCoord cElement(IndexExpr lane, int i) const = 0;
  /// When A is the accumulators of an earlier product along n (attention's
  /// P = softmax(Q K^T) feeding P V): A element `i` of a k step over
  /// accumulator tiles t, t + 1, ... is element `element` of tile
  /// t + `tile`, held by the same thread.
  virtual mma::AccumulatorSource accumulatorForA(int i) const = 0;

  /// The thread's A fragment of rows [row, row + m) and columns
  /// [col, col + k) of `tile`, a 1-D workgroup buffer of a [row][column]
  /// tile with `stride` elements per row.
  virtual SmallVector<Value> loadA(OpBuilder &b, Location loc, Value tile,
                                   int64_t stride, IndexExpr lane,
                                   IndexExpr row, IndexExpr col) const = 0;
  /// The thread's B fragment whose element (k, n) is at (origin.row + k,
  /// origin.col + n) of the staged tile (`KRows`) or at (origin.row + n,
  /// origin.col + k) (`NRows`).
  virtual SmallVector<Value> loadB(OpBuilder &b, Location loc, Value tile,
                                   int64_t stride, IndexExpr lane,
                                   Staging staging, TileCoord origin) const = 0;

  /// D = A * B + C on the thread's fragments; returns D's elements.
  virtual SmallVector<Value> multiplyAccumulate(OpBuilder &b, Location loc,
                                                ArrayRef<Value> a,
                                                ArrayRef<Value> bValues,
                                                ArrayRef<Value> c) const = 0;
};

/// One warp's 16x8x16 product of bf16 or f16 into f32, fragments placed as
/// MMALayout.h says (PTX's mma.sync m16n8k16). Fragments load element by
/// element, or with a matrix load where the target has one (ldmatrix x2:
/// MMALayout.h's loadMatrixRow and loadMatrixElement); the target supplies
/// the instruction.
class WarpMMA16x8x16 : public MatrixUnit {
public:
  static constexpr Shape kShape = {
      mma::kM,         mma::kN,         mma::kK,        mma::kWarpSize,
      mma::kAElements, mma::kBElements, mma::kCElements};

  Shape getShape() const final { return kShape; }
  bool takesOperands(Type element) const override;
  TileCoord aElement(IndexExpr lane, int i) const final;
  TileCoord bElement(IndexExpr lane, int i) const final;
  TileCoord cElement(IndexExpr lane, int i) const final;
  mma::AccumulatorSource accumulatorForA(int i) const final;
  SmallVector<Value> loadA(OpBuilder &b, Location loc, Value tile,
                           int64_t stride, IndexExpr lane, IndexExpr row,
                           IndexExpr col) const final;
  SmallVector<Value> loadB(OpBuilder &b, Location loc, Value tile,
                           int64_t stride, IndexExpr lane, Staging staging,
                           TileCoord origin) const final;

protected:
  /// Whether the target loads two 8x8 tiles of 16-bit elements from
  /// workgroup memory into fragments with one instruction.
  virtual bool hasLoadMatrix() const { return false; }
  /// That load: `tile` is a 1-D workgroup buffer of bf16 or f16, `index`
  /// the element where the row this lane supplies starts (16-byte
  /// aligned); returns the lane's four elements, tile 0's two then tile
  /// 1's, transposed with `transpose`. Only called when hasLoadMatrix().
  virtual SmallVector<Value> loadMatrixX2(OpBuilder &b, Location loc,
                                          Value tile, Value index,
                                          bool transpose) const;
};

/// One warp's 16x8x16 product of f32 operands on the lanes' own FMAs, in
/// f32: nothing rounds the operands (a 16-bit matrix unit would), so the
/// result is the CPU's f32 GEMM's up to the order of the sums. C and D sit
/// as in WarpMMA16x8x16; a lane's four accumulators need A's rows lane/4
/// and lane/4 + 8 and B's columns 2*(lane%4) and 2*(lane%4) + 1 over all
/// of k (aElements and bElements count them). Its fragments are where
/// those rows and columns start in the staged tiles (the tile, two
/// indices and the step between consecutive k), and multiplyAccumulate
/// reads each element beside the FMA that uses it, so the 64 operands are
/// never held in registers at once. Plain loads and FMAs: every target has
/// it, and no target lists it (it is not a matrix instruction).
class ThreadFMA16x8x16 : public MatrixUnit {
public:
  static constexpr Shape kShape = {mma::kM,        mma::kN,     mma::kK,
                                   mma::kWarpSize, 2 * mma::kK, 2 * mma::kK,
                                   mma::kCElements};

  std::string getName() const final { return "f32 FMA"; }
  Shape getShape() const final { return kShape; }
  bool takesOperands(Type element) const final { return element.isF32(); }
  TileCoord aElement(IndexExpr lane, int i) const final;
  TileCoord bElement(IndexExpr lane, int i) const final;
  TileCoord cElement(IndexExpr lane, int i) const final;
  /// Not available: A is read from a tile, never from accumulators.
  mma::AccumulatorSource accumulatorForA(int i) const final;
  SmallVector<Value> loadA(OpBuilder &b, Location loc, Value tile,
                           int64_t stride, IndexExpr lane, IndexExpr row,
                           IndexExpr col) const final;
  SmallVector<Value> loadB(OpBuilder &b, Location loc, Value tile,
                           int64_t stride, IndexExpr lane, Staging staging,
                           TileCoord origin) const final;
  SmallVector<Value> multiplyAccumulate(OpBuilder &b, Location loc,
                                        ArrayRef<Value> a,
                                        ArrayRef<Value> bValues,
                                        ArrayRef<Value> c) const final;
};

} // namespace mlir::te

#endif // TE_CONVERSION_TETOGPU_MATRIXUNIT_H
