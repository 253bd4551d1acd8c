//===- AttentionMicroKernels.h - The blocked attention's kernels -*- C++
//-*-===//
//
// The micro-kernels of the host attention's blocked paths: the score
// products (S = Q K^T, dP = dO V^T), the forward's P V and the backward's
// gradient sums, each behind an interface that owns its operands' packed
// layout, and the block shape the loops take from them. The loops
// (AttentionLowering.cpp) know no instruction; today's kernels are f32 FMAs
// and bf16 pair dots on a BF16PairDotUnit (AttentionMicroKernels.cpp). A
// tile unit (AMX) is a new implementation of these interfaces, chosen in
// chooseScoreKernel, chooseValueKernel and chooseGradientKernel.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TETOLINALG_ATTENTIONMICROKERNELS_H
#define TE_LIB_CONVERSION_TETOLINALG_ATTENTIONMICROKERNELS_H

#include "HostAttention.h"
#include "TEToLinalgInternal.h"

#include <memory>

namespace mlir::te::host_attention {

/// The sizes the blocked loops are built on, which their score micro-kernel
/// (ScoreKernel) chooses: keys per chunk (the width of a row's score and
/// softmax vectors) and query rows per micro-block.
struct BlockShape {
  int64_t keyChunk, blockRows;
};

/// AVX-512's, for both of today's kernels. Keys per chunk: four AVX-512
/// registers of logits per row; 64 rather than 32 halves the softmax's
/// per-chunk work (reductions, the correction exp, rescaling the sums): 15%
/// faster in bf16, 5-10% in f32 at d=64. Rows per micro-block: with 64
/// keys, 16 independent FMA chains in the score loop, and 16 accumulator
/// registers per 64 columns of V.
constexpr BlockShape kAVX512Shape = {64, 4};

/// The score micro-kernel of the blocked paths: S = factor * R C^T for the
/// rows R of a micro-block (Q, or dO backward) against the columns C of one
/// chunk of keys (K, or V backward), and the packed layout of C it reads.
/// It owns the block shape the blocked loops are built on. f32 outer
/// products and bf16 pair dots are the kernels today; a tile unit (AMX) is
/// another implementation, with its own shape and packing.
class ScoreKernel {
public:
  explicit ScoreKernel(BlockShape shape) : shape(shape) {}
  virtual ~ScoreKernel() = default;

  BlockShape getShape() const { return shape; }

  /// `columns` (K or V, head dimension `depth`) in chunks of keyChunk keys
  /// as emitScores reads them, padded with zero keys.
  virtual Value packColumns(OpBuilder &b, Location loc,
                            const AttentionConfig &c, Value columns,
                            int64_t depth) const = 0;
  /// Whether emitScores reads the rows as f32 already times the factor
  /// (the caller's `f32Rows`, [b, h_q, s_q, depth]) rather than `rows` in
  /// place.
  virtual bool readsF32Rows() const = 0;
  /// For each row rowOf[i] of (batch, head), factor times its dot products
  /// with the keys of chunk `chunk` of `packed` (packColumns of kvHead): a
  /// vector of keyChunk f32.
  virtual SmallVector<Value>
  emitScores(OpBuilder &b, Location loc, const AttentionConfig &c, Value rows,
             Value f32Rows, Value packed, int64_t depth, float factor,
             Value batch, Value head, Value kvHead, Value chunk,
             ArrayRef<Value> rowOf) const = 0;

protected:
  VectorType chunkType(OpBuilder &b) const {
    return VectorType::get({shape.keyChunk}, b.getF32Type());
  }

  BlockShape shape;
};

/// The P V micro-kernel of the blocked forward: for each row of a
/// micro-block, acc_i = correction_i * acc_i + sum_j p_ij v_j over one key
/// chunk, with the layout of V it reads and the scratch the weights p go
/// through. The steps are separate so that the loop can interleave them
/// with each row's softmax: writeWeights and loadScaled per row, then
/// accumulate for the block. f32 FMAs on register pieces today; a tile unit
/// (AMX) is another implementation.
class ValueKernel {
public:
  /// For the loops' `shape` (the score kernel's).
  explicit ValueKernel(BlockShape shape) : shape(shape) {}
  virtual ~ValueKernel() = default;
  /// V (head dimension `depth`) as accumulate reads it, padded with zero
  /// keys to whole chunks.
  virtual Value packValues(OpBuilder &b, Location loc, const AttentionConfig &c,
                           int64_t depth) const = 0;
  /// The scratch of a micro-block's weights.
  virtual Value createScratch(OpBuilder &b, Location loc) const = 0;
  /// Row `row`'s weights (a vector of keyChunk f32) into `scratch`.
  virtual Value writeWeights(OpBuilder &b, Location loc, Value scratch,
                             int64_t row, Value p) const = 0;
  /// Row `tileRow` of the accumulators `acc` ([tile rows, depth] f32) times
  /// `correction`, held as the kernel holds it until accumulate.
  virtual SmallVector<Value> loadScaled(OpBuilder &b, Location loc, Value acc,
                                        Value tileRow, Value correction,
                                        int64_t depth) const = 0;
  /// acc[local[i], :] = scaled[i] + sum_j weights[i][j] * V[key0 + j, :]
  /// of (batch, kvHead) for the chunk's keys j; returns the new `acc`.
  virtual Value accumulate(OpBuilder &b, Location loc, Value acc,
                           ArrayRef<SmallVector<Value>> scaled,
                           ArrayRef<Value> local, Value weights, Value packed,
                           Value batch, Value kvHead, Value key0,
                           int64_t depth) const = 0;

protected:
  BlockShape shape;
};

/// The sums of the blocked backward: dV += P^T dO, dK += (scale dS)^T q
/// and dQ += (scale dS) K of a micro-block over one key chunk, from its
/// rows' P and dS, with the layout of K it reads and the scratch P and dS
/// go through. f32 FMAs, or pair dots on a BF16PairDotUnit; a tile unit
/// (AMX) is another implementation.
class GradientKernel {
public:
  GradientKernel(const AttentionConfig &c, Value dO, BlockShape shape)
      : c(c), dO(dO),
        headDimQK(cast<RankedTensorType>(c.q.getType()).getShape().back()),
        headDimV(cast<RankedTensorType>(c.v.getType()).getShape().back()),
        keyChunk(shape.keyChunk), blockRows(shape.blockRows) {}
  virtual ~GradientKernel() = default;

  /// Whether accumulate reads the rows as f32 (scale * q and dO, [b, h_q,
  /// s_q, d]).
  virtual bool readsF32Rows() const = 0;
  /// Packs K as the dQ sums read it (`keys`).
  virtual void packKeys(OpBuilder &b, Location loc) = 0;
  /// The scratch of a micro-block's P and dS, broadcast from memory in the
  /// sums: each a tensor of its own (bufferization would give iteration
  /// arguments that start from one tensor one buffer).
  virtual SmallVector<Value> createScratch(OpBuilder &b,
                                           Location loc) const = 0;
  /// The micro-block's sums from its rows' P and dS (`pRows`, `dsRows`:
  /// vectors of keyChunk f32; qs and dOs the f32 rows where the kernel
  /// reads them). `state` is (accQ, accK, accV, then the scratch); returns
  /// the next state.
  virtual SmallVector<Value> accumulate(OpBuilder &b, Location loc,
                                        ValueRange state, ArrayRef<Value> pRows,
                                        ArrayRef<Value> dsRows, Value qs,
                                        Value dOs, Value batch, Value head,
                                        Value kvHead, Value g, Value key0,
                                        ArrayRef<Value> rowOf) const = 0;

protected:
  static Value zeroTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                          Type type) {
    return filledTensor(b, loc, shape, type,
                        cast<TypedAttr>(b.getZeroAttr(type)));
  }

  /// sum + w * x for the kernel's operands.
  virtual Value multiplyAdd(OpBuilder &b, Location loc, Value w, Value x,
                            Value sum) const = 0;

  /// acc[key0 + j, :] += sum over the micro-block's sources s of
  /// weightsAt(j)[s] * sourcePieces(piece)[s] for the chunk's keys j (acc
  /// has `width` columns). The sources are its rows (f32) or its row pairs
  /// (pair dots). In groups of up to kGroupPieces pieces of `pieceWidth`, the
  /// group's source pieces held in registers while each key's accumulator
  /// pieces are read, updated and written back.
  Value
  emitKeySums(OpBuilder &b, Location loc, Value acc, Value key0, int64_t width,
              int64_t pieceWidth,
              function_ref<SmallVector<Value>(OpBuilder &, Location, int64_t)>
                  sourcePieces,
              function_ref<SmallVector<Value>(OpBuilder &, Location, Value)>
                  weightsAt) const;

  /// accQ[g, rowOf[i], :] += sum over `steps` steps t of weightsAt(t)[i] *
  /// columnAt(t, piece): steps are the chunk's keys (f32) or key pairs
  /// (pair dots). In groups of up to kGroupPieces pieces of `pieceWidth`, the
  /// micro-block's sums held in registers over the steps and added to accQ
  /// once, row by row: padding rows repeat the last row and add 0 to it.
  Value emitQuerySums(
      OpBuilder &b, Location loc, Value accQ, Value g, ArrayRef<Value> rowOf,
      int64_t pieceWidth, int64_t steps,
      function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> weightsAt,
      function_ref<Value(OpBuilder &, Location, Value, int64_t)> columnAt)
      const;

  const AttentionConfig &c;
  Value dO;
  int64_t headDimQK, headDimV, keyChunk, blockRows;
  /// K as packKeys left it.
  Value keys;
};

/// The score kernel for `rows` (Q or dO) against `columns` (K or V): pair
/// dots on `dotUnit` when both are bf16 with an even head dimension, else
/// f32 outer products.
std::unique_ptr<ScoreKernel> chooseScoreKernel(const BF16PairDotUnit *dotUnit,
                                               Value rows, Value columns);

/// The forward's P V kernel for the block shape `shape`.
std::unique_ptr<ValueKernel> chooseValueKernel(BlockShape shape);

/// The backward's sums: pair dots on `dotUnit` when both score products
/// take it, the head dimensions are whole 16-float pieces and the rows of
/// a micro-block pair up; f32 FMAs otherwise.
std::unique_ptr<GradientKernel>
chooseGradientKernel(const BF16PairDotUnit *dotUnit, const AttentionConfig &c,
                     Value dO, BlockShape shape);

} // namespace mlir::te::host_attention

#endif // TE_LIB_CONVERSION_TETOLINALG_ATTENTIONMICROKERNELS_H
