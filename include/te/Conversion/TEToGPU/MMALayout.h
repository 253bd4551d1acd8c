//===- MMALayout.h - Where the elements of MMA fragments live ---*- C++ -*-===//
//
// The lane-to-element maps of the 16x8x16 matrix multiply-accumulate with
// 16-bit A and B and f32 accumulators (PTX's mma.sync.m16n8k16, "Matrix
// Fragments for mma.m16n8k16"), and the tiling of te's GEMM kernel on top
// of them. Plain C++ templated on the index type: the kernel builder
// instantiates them with IR values (the code it emits computes exactly
// these formulas), the unit tests with integers (to check that the maps
// and the tiling cover every element exactly once and compute a matrix
// product). No MLIR types here.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TETOGPU_MMALAYOUT_H
#define TE_CONVERSION_TETOGPU_MMALAYOUT_H

#include <cstdint>

namespace mlir::te::mma {

/// One warp's shape: D[16x8] = A[16x16] * B[16x8] + C[16x8].
constexpr int kM = 16, kN = 8, kK = 16, kWarpSize = 32;
/// Elements per lane of each fragment.
constexpr int kAElements = 8, kBElements = 4, kCElements = 4;

template <typename Index> struct Coord {
  Index row, col;
};

/// Lane `lane`'s A element `i` (0..7): pairs of consecutive columns, rows
/// lane/4 and lane/4 + 8, columns 2*(lane%4) and 8 + 2*(lane%4). Elements
/// 2j and 2j+1 form the lane's register j.
template <typename Index> Coord<Index> aElement(Index lane, int i) {
  return {lane / 4 + 8 * ((i / 2) % 2), (lane % 4) * 2 + (i % 2) + 8 * (i / 4)};
}

/// Lane `lane`'s B element `i` (0..3) as (k, n): column lane/4, rows
/// 2*(lane%4) and 8 + 2*(lane%4), pairs of consecutive rows per register.
template <typename Index> Coord<Index> bElement(Index lane, int i) {
  return {(lane % 4) * 2 + (i % 2) + 8 * (i / 2), lane / 4};
}

/// Lane `lane`'s accumulator element `i` (0..3): rows lane/4 and
/// lane/4 + 8, columns 2*(lane%4) and 2*(lane%4) + 1.
template <typename Index> Coord<Index> cElement(Index lane, int i) {
  return {lane / 4 + 8 * (i / 2), (lane % 4) * 2 + (i % 2)};
}

/// ldmatrix with two 8x8 tiles of 16-bit elements (PTX's
/// ldmatrix.sync.aligned.m8n8.x2): lanes 0..15 each supply the address of
/// one tile row, (tile, row) = loadMatrixRow(lane) (the other lanes'
/// addresses are not read); every lane receives two elements of each tile,
/// element e of tile j at loadMatrixElement(lane, e) as (row, column) of
/// the tile as stored, or transposed, (column, row), with `.trans`.
template <typename Index> struct TileRow {
  Index tile, row;
};
template <typename Index> TileRow<Index> loadMatrixRow(Index lane) {
  return {lane % 16 / 8, lane % 8};
}
template <typename Index>
Coord<Index> loadMatrixElement(Index lane, int e, bool transpose) {
  if (transpose)
    return {(lane % 4) * 2 + e, lane / 4};
  return {lane / 4, (lane % 4) * 2 + e};
}

/// The row address a lane supplies to load a B fragment (k 16 by n 8) with
/// one ldmatrix x2 from a staged tile, relative to the fragment's first
/// element: of a [k][n] tile (`kRows`, loaded transposed) the lane's k row,
/// of a [n][k] tile its n row and the first of the two 8-column halves of
/// k. Register j of the result holds B elements 2j and 2j + 1.
template <typename Index> Coord<Index> bFragmentRow(Index lane, bool kRows) {
  TileRow<Index> at = loadMatrixRow(lane);
  if (kRows)
    // The column is the same for every lane (written as an Index).
    return {at.tile * 8 + at.row, lane * 0};
  return {at.row, at.tile * 8};
}

/// Where an A element comes from when A is the accumulator of an earlier
/// MMA (attention's P = softmax(Q K^T) feeding P V): A's 16 columns of one
/// k step are the 8 columns of accumulator tiles 2t and 2t + 1, and every
/// lane already holds the A elements it needs. A element `i` of a lane is
/// element `element` of the lane's accumulator tile 2t + `tile`.
struct AccumulatorSource {
  int tile, element;
};
constexpr AccumulatorSource accumulatorForA(int i) {
  return {i / 4, 2 * ((i / 2) % 2) + i % 2};
}

/// te's flash-attention forward kernel: blocks of kBlockQ query rows, one
/// warp per kM rows, over the keys in tiles of kBlockKV staged with their
/// values through shared memory ([key][d + kPad] 16-bit elements).
struct FlashTiling {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kBlockQ = kWarps * kM, kBlockKV = 64;
  static constexpr int kTilesKV = kBlockKV / kN;
  static constexpr int kPad = 8;
  /// The B fragments of the kernel's two products load from the staged
  /// tiles, stored [key][d]: for S = Q K^T's tile `ni` at k step `kk`, K's
  /// rows are keys and its columns the k of the step (bFragmentRow of a
  /// [n][k] tile); for P V's key step `step` and output column tile `nd`,
  /// V's rows are the keys of the step (of a [k][n] tile, transposed).
  template <typename Index>
  static Coord<Index> keyFragmentRow(Index lane, int ni, int kk) {
    Coord<Index> at = bFragmentRow(lane, /*kRows=*/false);
    return {at.row + ni * kN, at.col + kk};
  }
  template <typename Index>
  static Coord<Index> valueFragmentRow(Index lane, int step, int nd) {
    Coord<Index> at = bFragmentRow(lane, /*kRows=*/true);
    return {at.row + step * kK, at.col + nd * kN};
  }

  /// Largest head dimension: two staged tiles stay within 48 KiB of static
  /// shared memory and the accumulators within the register file.
  static constexpr int kMaxHeadDim = 128;
};

/// The row address a lane supplies to load an A fragment (16 rows by 16
/// columns of a [row][column] tile, not transposed) with two ldmatrix x2:
/// load `half` (0 or 1) reads columns 8 * half .. 8 * half + 7 and returns
/// A elements 4 * half .. 4 * half + 3 (tile 0 the rows 0..7, tile 1 the
/// rows 8..15).
template <typename Index> Coord<Index> aFragmentRow(Index lane, int half) {
  TileRow<Index> at = loadMatrixRow(lane);
  return {at.tile * 8 + at.row, lane * 0 + 8 * half};
}

/// te's flash-attention backward kernel: a block of four warps owns
/// kBlockKV keys of one (batch, key/value head), one warp per kM keys, and
/// walks the query tiles (of blockQ(d) rows, Q and dO staged through shared
/// memory) of every query head that shares the keys; d is the larger head
/// dimension. Per tile each warp computes S^T = K Q^T and dP^T = V dO^T for
/// its keys, P^T and dS^T on the accumulators, and accumulates dV += P^T dO
/// and dK += dS^T Q in registers (accumulatorForA); dS goes through shared
/// memory ([query][key]) so that the block adds dQ += dS K to an f32
/// buffer over all the block's keys, warp `w` taking the kM query rows
/// from dqRow(w) and the columns from dqColumn(w): each dQ element gets one
/// addition per key block.
struct FlashBackwardTiling {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kBlockKV = kWarps * kM;
  static constexpr int kPad = 8;
  /// Query rows per tile: fewer for wide heads, so that the accumulators
  /// stay in registers and the staged tiles in 48 KiB of shared memory.
  static constexpr int blockQ(int headDim) { return headDim > 64 ? 16 : 32; }
  /// Row groups of kM query rows in a tile, and the parts dQ's 8-column
  /// tiles split into among the warps of one row group.
  static constexpr int rowGroups(int headDim) { return blockQ(headDim) / kM; }
  static constexpr int columnParts(int headDim) {
    return kWarps / rowGroups(headDim);
  }
  /// dQ tiles per warp for a Q head dimension dqk: the last warps of a row
  /// group may have fewer (dqColumn says where each tile is).
  static constexpr int dqTiles(int headDim, int dqk) {
    return (dqk / kN + columnParts(headDim) - 1) / columnParts(headDim);
  }
  template <typename Index> static Index dqRow(Index warp, int headDim) {
    return (warp % rowGroups(headDim)) * kM;
  }
  /// The first column of warp `warp`'s dQ tile `tile`: columns at or past
  /// dqk are not the warp's (it has fewer tiles).
  template <typename Index>
  static Index dqColumn(Index warp, int tile, int headDim, int dqk) {
    return ((warp / rowGroups(headDim)) * dqTiles(headDim, dqk) + tile) * kN;
  }
};

/// te's GEMM kernel: blocks of kBlockM x kBlockN outputs, four warps in a
/// 2x2 grid, each warp kWarpM x kWarpN outputs as kTilesM x kTilesN MMA
/// tiles, over K in steps of kBlockK staged through shared memory.
struct GemmTiling {
  static constexpr int kBlockM = 64, kBlockN = 64, kBlockK = 32;
  // A's and B's tiles are staged (and typed) alike.
  static_assert(kBlockM == kBlockN, "one staging layout for A and B");
  static constexpr int kWarpsM = 2, kWarpsN = 2;
  static constexpr int kThreads = kWarpsM * kWarpsN * kWarpSize;
  static constexpr int kWarpM = kBlockM / kWarpsM, kWarpN = kBlockN / kWarpsN;
  static constexpr int kTilesM = kWarpM / kM, kTilesN = kWarpN / kN;
  /// Shared tiles are [rows][kBlockK + kPad] 16-bit elements: the padding
  /// spreads a fragment's rows over the banks.
  static constexpr int kPad = 8;

  /// The output element of block (blockRow, blockCol), thread `thread`,
  /// MMA tile (mi, ni) and accumulator element i.
  template <typename Index>
  static Coord<Index> outputElement(Index blockRow, Index blockCol,
                                    Index thread, int mi, int ni, int i) {
    Index warp = thread / kWarpSize, lane = thread % kWarpSize;
    Coord<Index> c = cElement(lane, i);
    return {blockRow * kBlockM + (warp / kWarpsN) * kWarpM + mi * kM + c.row,
            blockCol * kBlockN + (warp % kWarpsN) * kWarpN + ni * kN + c.col};
  }

  /// Staging copies per thread and K step: thread t makes copies
  /// t + j * kThreads for j in [0, kCopies).
  static constexpr int kCopies = kBlockM * kBlockK / kThreads;

  /// Where staging copy `e` goes in a [kBlockM][kBlockK] shared tile:
  /// (row, k). Consecutive copies take consecutive k when the operand is
  /// stored k-contiguous (`kContiguous`), else consecutive rows, so that
  /// the global reads of consecutive threads are coalesced either way.
  template <typename Index>
  static Coord<Index> stagedElement(Index e, bool kContiguous) {
    if (kContiguous)
      return {e / kBlockK, e % kBlockK};
    return {e % kBlockM, e / kBlockM};
  }
};

} // namespace mlir::te::mma

#endif // TE_CONVERSION_TETOGPU_MMALAYOUT_H
