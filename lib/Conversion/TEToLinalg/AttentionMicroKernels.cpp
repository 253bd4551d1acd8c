//===- AttentionMicroKernels.cpp - f32 FMA and bf16 pair-dot kernels ------===//
//
// Today's micro-kernels of the blocked attention paths
// (AttentionMicroKernels.h): f32 outer products and FMAs on register
// pieces of 16 floats, and bf16 pair dots on a BF16PairDotUnit with the
// operands packed in pairs. The shapes are AVX-512's.
//
//===----------------------------------------------------------------------===//

#include "AttentionMicroKernels.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::host_attention;

namespace {

/// Register pieces of 16 floats of a row that the V (and, backward, the
/// dK/dV/dQ) accumulation works on at a time, for each row of a micro-block.
constexpr int64_t kGroupPieces = 4;

/// `dotUnit` if the scores of `rows` (Q or dO) against `columns` (K or V)
/// can use it: both bf16, with an even head dimension. Null otherwise.
const BF16PairDotUnit *pairDotFor(const BF16PairDotUnit *dotUnit, Value rows,
                                  Value columns) {
  auto rowType = cast<RankedTensorType>(rows.getType());
  auto columnType = cast<RankedTensorType>(columns.getType());
  if (!dotUnit || !rowType.getElementType().isBF16() ||
      !columnType.getElementType().isBF16() ||
      rowType.getShape().back() % 2 != 0)
    return nullptr;
  return dotUnit;
}

/// K (`tensor`, bf16, head dimension `depth`) as pairs of keys, the layout
/// of a BF16PairDotUnit's vector operand for sums over keys: a bf16
/// [b, h_kv, chunks * keyChunk / 2, 2 * depth] tensor whose element
/// (.., p, 2 t + e) is column t of key 2 p + e, padded with zero keys.
Value emitKeyPairs(OpBuilder &b, Location loc, const AttentionConfig &c,
                   Value tensor, int64_t depth, int64_t keyChunk) {
  return generateTensor(
      b, loc,
      {c.batches, c.headsKV,
       static_cast<int64_t>(llvm::alignTo(c.seqKV, keyChunk)) / 2, 2 * depth},
      b.getBF16Type(), [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
        IndexMath im{b, loc};
        Value token = im.add(im.mul(i[2], im.c(2)),
                             arith::RemUIOp::create(b, loc, i[3], im.c(2)));
        Value column = arith::DivUIOp::create(b, loc, i[3], im.c(2));
        return readPaddedElement(b, loc, c, tensor, i[0], token, i[1], column);
      });
}

/// The i32 at `indices` of `words` in all 16 lanes, as the 32 bf16 of a
/// BF16PairDotUnit's broadcast operand.
Value broadcastPair(OpBuilder &b, Location loc, Value words,
                    ValueRange indices) {
  Value word = tensor::ExtractOp::create(b, loc, words, indices);
  return vector::BitCastOp::create(
      b, loc, VectorType::get({32}, b.getBF16Type()),
      vector::BroadcastOp::create(b, loc, VectorType::get({16}, b.getI32Type()),
                                  word));
}

/// K or V rows as an f32 [b, h_kv, chunks * keyChunk, depth] tensor padded
/// with zero keys.
Value emitPaddedRows(OpBuilder &b, Location loc, const AttentionConfig &c,
                     Value tensor, int64_t depth, int64_t keyChunk) {
  return generateF32(
      b, loc,
      {c.batches, c.headsKV,
       static_cast<int64_t>(llvm::alignTo(c.seqKV, keyChunk)), depth},
      [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
        return readPaddedKV(b, loc, c, tensor, i[0], i[2], i[1], i[3]);
      });
}

/// Floats per register piece of a row of `width` columns: 16 (one AVX-512
/// register) when they divide it, else the whole row.
int64_t pieceWidthOf(int64_t width) { return width % 16 == 0 ? 16 : width; }

/// Scores as f32 outer products: per column t of the head dimension, one
/// vector load of the chunk's column t (C^T in chunks) and one broadcast of
/// each row's element t feed one FMA per row, with no horizontal sums.
class OuterProductScores final : public ScoreKernel {
public:
  OuterProductScores() : ScoreKernel(kAVX512Shape) {}

  /// C transposed in chunks: an f32 [b, h_kv, chunks, depth, keyChunk]
  /// tensor.
  Value packColumns(OpBuilder &b, Location loc, const AttentionConfig &c,
                    Value columns, int64_t depth) const override {
    int64_t keyChunk = shape.keyChunk;
    return generateF32(
        b, loc,
        {c.batches, c.headsKV,
         static_cast<int64_t>(llvm::divideCeil(c.seqKV, keyChunk)), depth,
         keyChunk},
        [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
          IndexMath im{b, loc};
          Value token = im.add(im.mul(i[2], im.c(keyChunk)), i[4]);
          return readPaddedKV(b, loc, c, columns, i[0], token, i[1], i[3]);
        });
  }

  bool readsF32Rows() const override { return true; }

  SmallVector<Value> emitScores(OpBuilder &b, Location loc,
                                const AttentionConfig &, Value, Value f32Rows,
                                Value packed, int64_t depth, float, Value batch,
                                Value head, Value kvHead, Value chunk,
                                ArrayRef<Value> rowOf) const override {
    VectorType type = chunkType(b);
    Value zeroF = emitF32Constant(b, loc, 0.0);
    SmallVector<Value> init(
        rowOf.size(),
        arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(0))));
    IndexMath im{b, loc};
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(depth), im.c(1), init,
        [&](OpBuilder &b, Location loc, Value t, ValueRange partial) {
          IndexMath im{b, loc};
          Value keys = vector::TransferReadOp::create(
              b, loc, type, packed,
              ValueRange{batch, kvHead, chunk, t, im.c(0)}, zeroF,
              ArrayRef<bool>{true});
          SmallVector<Value> next;
          for (auto [i, row] : llvm::enumerate(rowOf)) {
            Value element = tensor::ExtractOp::create(
                b, loc, f32Rows, ValueRange{batch, head, row, t});
            next.push_back(vector::FMAOp::create(
                b, loc, splat(b, loc, element, type), keys, partial[i]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    return loop.getResults();
  }
};

/// Scores as bf16 pair dots on a BF16PairDotUnit: each row read in place
/// two columns at a time and broadcast as one i32, against the chunk's
/// keys as column pairs. The products are exact; the sums are f32.
class PairDotScores final : public ScoreKernel {
public:
  explicit PairDotScores(const BF16PairDotUnit &unit)
      : ScoreKernel(kAVX512Shape), unit(unit) {}

  /// C as column pairs in chunks, the layout of the unit's vector operand:
  /// a bf16 [b, h_kv, chunks, depth / 2, 2 * keyChunk] tensor whose
  /// element (.., chunk, t, 2 j + e) is column 2 t + e of key
  /// chunk * keyChunk + j.
  Value packColumns(OpBuilder &b, Location loc, const AttentionConfig &c,
                    Value columns, int64_t depth) const override {
    int64_t keyChunk = shape.keyChunk;
    return generateTensor(
        b, loc,
        {c.batches, c.headsKV,
         static_cast<int64_t>(llvm::divideCeil(c.seqKV, keyChunk)), depth / 2,
         2 * keyChunk},
        b.getBF16Type(), [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
          IndexMath im{b, loc};
          Value token = im.add(im.mul(i[2], im.c(keyChunk)),
                               arith::DivUIOp::create(b, loc, i[4], im.c(2)));
          Value column = im.add(im.mul(i[3], im.c(2)),
                                arith::RemUIOp::create(b, loc, i[4], im.c(2)));
          return readPaddedElement(b, loc, c, columns, i[0], token, i[1],
                                   column);
        });
  }

  bool readsF32Rows() const override { return false; }

  SmallVector<Value> emitScores(OpBuilder &b, Location loc,
                                const AttentionConfig &c, Value rows, Value,
                                Value packed, int64_t depth, float factor,
                                Value batch, Value head, Value kvHead,
                                Value chunk,
                                ArrayRef<Value> rowOf) const override {
    SmallVector<Value> scores = emitPairDots(b, loc, c, rows, packed, depth,
                                             batch, head, kvHead, chunk, rowOf);
    if (factor == 1.0f)
      return scores;
    // Each score times the scalar factor.
    Value splatFactor =
        splat(b, loc, emitF32Constant(b, loc, factor), chunkType(b));
    for (Value &score : scores)
      score = arith::MulFOp::create(b, loc, score, splatFactor);
    return scores;
  }

private:
  /// The sums of emitScores, in parts of 16 keys (the unit's accumulators)
  /// joined side by side.
  SmallVector<Value> emitPairDots(OpBuilder &b, Location loc,
                                  const AttentionConfig &c, Value rows,
                                  Value pairs, int64_t depth, Value batch,
                                  Value head, Value kvHead, Value chunk,
                                  ArrayRef<Value> rowOf) const {
    constexpr int64_t kLanes = 16;
    int64_t halves = shape.keyChunk / kLanes;
    Type bf16 = b.getBF16Type();
    auto laneType = VectorType::get({kLanes}, b.getF32Type());
    auto operandType = VectorType::get({2 * kLanes}, bf16);
    auto twoType = VectorType::get({2}, bf16);
    auto wordType = VectorType::get({1}, b.getI32Type());
    auto wordsType = VectorType::get({kLanes}, b.getI32Type());
    Value zeroBF = arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16));
    SmallVector<Value> init(
        rowOf.size() * halves,
        arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(laneType, b.getF32FloatAttr(0))));
    IndexMath im{b, loc};
    auto loop = scf::ForOp::create(
        b, loc, im.c(0), im.c(depth / 2), im.c(1), init,
        [&](OpBuilder &b, Location loc, Value t, ValueRange partial) {
          IndexMath im{b, loc};
          SmallVector<Value> keys;
          for (int64_t half = 0; half < halves; ++half)
            keys.push_back(vector::TransferReadOp::create(
                b, loc, operandType, pairs,
                ValueRange{batch, kvHead, chunk, t, im.c(half * 2 * kLanes)},
                zeroBF, ArrayRef<bool>{true}));
          SmallVector<Value> next;
          for (auto [i, row] : llvm::enumerate(rowOf)) {
            Value two = vector::TransferReadOp::create(
                b, loc, twoType, rows,
                rowIndices(c.layout, batch, row, head, im.mul(t, im.c(2))),
                zeroBF, ArrayRef<bool>{true});
            Value word = vector::BitCastOp::create(b, loc, wordType, two);
            Value broadcast = vector::BitCastOp::create(
                b, loc, operandType,
                vector::BroadcastOp::create(b, loc, wordsType, word));
            for (int64_t half = 0; half < halves; ++half)
              next.push_back(unit.emitDot(b, loc, partial[i * halves + half],
                                          broadcast, keys[half]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    SmallVector<Value> scores;
    for (size_t i = 0; i < rowOf.size(); ++i) {
      Value joined = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(chunkType(b), b.getF32FloatAttr(0)));
      for (int64_t part = 0; part < halves; ++part)
        joined = vector::InsertStridedSliceOp::create(
            b, loc, loop.getResult(i * halves + part), joined,
            ArrayRef<int64_t>{part * kLanes}, ArrayRef<int64_t>{1});
      scores.push_back(joined);
    }
    return scores;
  }

  const BF16PairDotUnit &unit;
};

/// P V as f32 FMAs: V copied to f32 rows; each row's accumulators in
/// pieces of 16 floats (one AVX-512 register), in groups of up to
/// kGroupPieces pieces: for each key, the rows' broadcast weights and the
/// group's V pieces feed rows x pieces FMAs into registers.
class FMAValues final : public ValueKernel {
public:
  using ValueKernel::ValueKernel;

  Value packValues(OpBuilder &b, Location loc, const AttentionConfig &c,
                   int64_t depth) const override {
    return emitPaddedRows(b, loc, c, c.v, depth, shape.keyChunk);
  }

  Value createScratch(OpBuilder &b, Location loc) const override {
    return filledTensor(b, loc, {shape.blockRows, shape.keyChunk},
                        b.getF32Type(), b.getF32FloatAttr(0.0f));
  }

  Value writeWeights(OpBuilder &b, Location loc, Value scratch, int64_t row,
                     Value p) const override {
    IndexMath im{b, loc};
    return vector::TransferWriteOp::create(b, loc, p, scratch,
                                           ValueRange{im.c(row), im.c(0)},
                                           ArrayRef<bool>{true})
        .getResult();
  }

  SmallVector<Value> loadScaled(OpBuilder &b, Location loc, Value acc,
                                Value tileRow, Value correction,
                                int64_t depth) const override {
    IndexMath im{b, loc};
    int64_t pieceWidth = pieceWidthOf(depth);
    auto pieceType = VectorType::get({pieceWidth}, b.getF32Type());
    Value zeroF = emitF32Constant(b, loc, 0.0);
    Value scaleBy = splat(b, loc, correction, pieceType);
    SmallVector<Value> pieces;
    for (int64_t piece = 0; piece < depth / pieceWidth; ++piece) {
      Value current = vector::TransferReadOp::create(
          b, loc, pieceType, acc, ValueRange{tileRow, im.c(piece * pieceWidth)},
          zeroF, ArrayRef<bool>{true});
      pieces.push_back(arith::MulFOp::create(b, loc, current, scaleBy));
    }
    return pieces;
  }

  Value accumulate(OpBuilder &b, Location loc, Value acc,
                   ArrayRef<SmallVector<Value>> scaled, ArrayRef<Value> local,
                   Value weights, Value packed, Value batch, Value kvHead,
                   Value key0, int64_t depth) const override {
    IndexMath im{b, loc};
    int64_t pieceWidth = pieceWidthOf(depth);
    int64_t pieces = depth / pieceWidth;
    int64_t rows = local.size();
    auto pieceType = VectorType::get({pieceWidth}, b.getF32Type());
    Value zeroF = emitF32Constant(b, loc, 0.0);
    SmallVector<SmallVector<Value>> sums(scaled.begin(), scaled.end());
    for (int64_t group = 0; group < pieces; group += kGroupPieces) {
      int64_t groupEnd = std::min(pieces, group + kGroupPieces);
      for (int64_t j = 0; j < shape.keyChunk; ++j) {
        SmallVector<Value> w;
        for (int64_t i = 0; i < rows; ++i)
          w.push_back(splat(b, loc,
                            tensor::ExtractOp::create(
                                b, loc, weights, ValueRange{im.c(i), im.c(j)}),
                            pieceType));
        for (int64_t piece = group; piece < groupEnd; ++piece) {
          Value vPiece = vector::TransferReadOp::create(
              b, loc, pieceType, packed,
              ValueRange{batch, kvHead, im.add(key0, im.c(j)),
                         im.c(piece * pieceWidth)},
              zeroF, ArrayRef<bool>{true});
          for (int64_t i = 0; i < rows; ++i)
            sums[i][piece] =
                vector::FMAOp::create(b, loc, w[i], vPiece, sums[i][piece]);
        }
      }
      for (int64_t piece = group; piece < groupEnd; ++piece)
        for (int64_t i = 0; i < rows; ++i)
          acc = vector::TransferWriteOp::create(
                    b, loc, sums[i][piece], acc,
                    ValueRange{local[i], im.c(piece * pieceWidth)},
                    ArrayRef<bool>{true})
                    .getResult();
    }
    return acc;
  }
};

/// The sums as f32 FMAs over the rows in f32; K as f32 rows [b, h_kv,
/// chunks * keyChunk, d_qk].
class FMAGradients final : public GradientKernel {
public:
  using GradientKernel::GradientKernel;

  bool readsF32Rows() const override { return true; }
  void packKeys(OpBuilder &b, Location loc) override {
    keys = emitPaddedRows(b, loc, c, c.k, headDimQK, keyChunk);
  }
  /// P and dS as f32 [rows, keys].
  SmallVector<Value> createScratch(OpBuilder &b, Location loc) const override {
    Type f32 = b.getF32Type();
    return {zeroTensor(b, loc, {blockRows, keyChunk}, f32),
            zeroTensor(b, loc, {blockRows, keyChunk}, f32)};
  }

  SmallVector<Value> accumulate(OpBuilder &b, Location loc, ValueRange state,
                                ArrayRef<Value> pRows, ArrayRef<Value> dsRows,
                                Value qs, Value dOs, Value batch, Value head,
                                Value kvHead, Value g, Value key0,
                                ArrayRef<Value> rowOf) const override {
    IndexMath im{b, loc};
    Value pState = state[3], dsState = state[4];
    for (int64_t i = 0; i < blockRows; ++i) {
      pState = vector::TransferWriteOp::create(b, loc, pRows[i], pState,
                                               ValueRange{im.c(i), im.c(0)},
                                               ArrayRef<bool>{true})
                   .getResult();
      dsState = vector::TransferWriteOp::create(b, loc, dsRows[i], dsState,
                                                ValueRange{im.c(i), im.c(0)},
                                                ArrayRef<bool>{true})
                    .getResult();
    }
    Value accV = emitKeyAccumulation(b, loc, state[2], pState, dOs, headDimV,
                                     batch, head, key0, rowOf);
    Value accK = emitKeyAccumulation(b, loc, state[1], dsState, qs, headDimQK,
                                     batch, head, key0, rowOf);
    Value accQ = emitQueryAccumulation(b, loc, state[0], dsState, batch, kvHead,
                                       g, key0, rowOf);
    return {accQ, accK, accV, pState, dsState};
  }

protected:
  Value multiplyAdd(OpBuilder &b, Location loc, Value w, Value x,
                    Value sum) const override {
    return vector::FMAOp::create(b, loc, w, x, sum);
  }

private:
  /// acc[key0 + j, :] += sum_i weights[i, j] * rows[batch, head, rowOf[i],
  /// :] for the chunk's keys j, in f32.
  Value emitKeyAccumulation(OpBuilder &b, Location loc, Value acc,
                            Value weights, Value rows, int64_t width,
                            Value batch, Value head, Value key0,
                            ArrayRef<Value> rowOf) const {
    int64_t pieceWidth = pieceWidthOf(width);
    auto pieceType = VectorType::get({pieceWidth}, b.getF32Type());
    Value zeroF = emitF32Constant(b, loc, 0.0);
    return emitKeySums(
        b, loc, acc, key0, width, pieceWidth,
        [&](OpBuilder &b, Location loc, int64_t piece) {
          IndexMath im{b, loc};
          SmallVector<Value> pieces;
          for (Value row : rowOf)
            pieces.push_back(vector::TransferReadOp::create(
                b, loc, pieceType, rows,
                ValueRange{batch, head, row, im.c(piece * pieceWidth)}, zeroF,
                ArrayRef<bool>{true}));
          return pieces;
        },
        [&](OpBuilder &b, Location loc, Value j) {
          IndexMath im{b, loc};
          SmallVector<Value> w;
          for (int64_t i = 0, e = rowOf.size(); i < e; ++i)
            w.push_back(splat(b, loc,
                              tensor::ExtractOp::create(b, loc, weights,
                                                        ValueRange{im.c(i), j}),
                              pieceType));
          return w;
        });
  }

  /// accQ[g, rowOf[i], :] += scale * sum_j dS[i, j] * K[key0 + j, :], in f32.
  Value emitQueryAccumulation(OpBuilder &b, Location loc, Value accQ, Value dS,
                              Value batch, Value kvHead, Value g, Value key0,
                              ArrayRef<Value> rowOf) const {
    int64_t pieceWidth = pieceWidthOf(headDimQK);
    auto pieceType = VectorType::get({pieceWidth}, b.getF32Type());
    Value zeroF = emitF32Constant(b, loc, 0.0);
    Value scale = emitF32Constant(b, loc, c.scale);
    return emitQuerySums(
        b, loc, accQ, g, rowOf, pieceWidth, keyChunk,
        [&](OpBuilder &b, Location loc, Value j) {
          IndexMath im{b, loc};
          SmallVector<Value> w;
          for (int64_t i = 0, e = rowOf.size(); i < e; ++i)
            w.push_back(splat(
                b, loc,
                arith::MulFOp::create(b, loc,
                                      tensor::ExtractOp::create(
                                          b, loc, dS, ValueRange{im.c(i), j}),
                                      scale),
                pieceType));
          return w;
        },
        [&](OpBuilder &b, Location loc, Value j, int64_t piece) -> Value {
          IndexMath im{b, loc};
          return vector::TransferReadOp::create(
              b, loc, pieceType, keys,
              ValueRange{batch, kvHead, im.add(key0, j),
                         im.c(piece * pieceWidth)},
              zeroF, ArrayRef<bool>{true});
        });
  }
};

/// The sums as pair dots on a BF16PairDotUnit, which take P and scale * dS
/// rounded to bf16 once: rows paired for dV and dK, keys paired for dQ (K
/// as key pairs, emitKeyPairs).
class PairDotGradients final : public GradientKernel {
public:
  PairDotGradients(const AttentionConfig &c, Value dO, BlockShape shape,
                   const BF16PairDotUnit &unit)
      : GradientKernel(c, dO, shape), unit(unit) {}

  bool readsF32Rows() const override { return false; }
  void packKeys(OpBuilder &b, Location loc) override {
    keys = emitKeyPairs(b, loc, c, c.k, headDimQK, keyChunk);
  }
  /// bf16 pairs as i32: P and scale * dS with rows paired ([rows / 2,
  /// keys], for dV and dK), and scale * dS with keys paired ([rows, keys /
  /// 2], for dQ).
  SmallVector<Value> createScratch(OpBuilder &b, Location loc) const override {
    Type i32 = b.getI32Type();
    return {zeroTensor(b, loc, {blockRows / 2, keyChunk}, i32),
            zeroTensor(b, loc, {blockRows / 2, keyChunk}, i32),
            zeroTensor(b, loc, {blockRows, keyChunk / 2}, i32)};
  }

  /// P and scale * dS rounded to bf16 once; the scratch holds the P and dS
  /// row pairs and the dS key pairs.
  SmallVector<Value> accumulate(OpBuilder &b, Location loc, ValueRange state,
                                ArrayRef<Value> pRows, ArrayRef<Value> dsRows,
                                Value, Value, Value batch, Value head,
                                Value kvHead, Value g, Value key0,
                                ArrayRef<Value> rowOf) const override {
    IndexMath im{b, loc};
    Type bf16 = b.getBF16Type(), i32 = b.getI32Type();
    auto rowType = VectorType::get({keyChunk}, bf16);
    Value scale = splat(b, loc, emitF32Constant(b, loc, c.scale),
                        VectorType::get({keyChunk}, b.getF32Type()));
    SmallVector<Value> p, ds;
    for (int64_t i = 0; i < blockRows; ++i) {
      p.push_back(arith::TruncFOp::create(b, loc, rowType, pRows[i]));
      ds.push_back(arith::TruncFOp::create(
          b, loc, rowType, arith::MulFOp::create(b, loc, dsRows[i], scale)));
    }
    auto write = [&](Value vector, Value into, int64_t row) {
      return vector::TransferWriteOp::create(b, loc, vector, into,
                                             ValueRange{im.c(row), im.c(0)},
                                             ArrayRef<bool>{true})
          .getResult();
    };
    // Rows 2r and 2r + 1 interleaved: the i32 of key j is their pair.
    auto rowPairs = [&](ArrayRef<Value> rows, int64_t r) {
      return vector::BitCastOp::create(
          b, loc, VectorType::get({keyChunk}, i32),
          vector::InterleaveOp::create(b, loc, rows[2 * r], rows[2 * r + 1]));
    };
    Value pPairs = state[3], dsPairs = state[4], dsKeyPairs = state[5];
    for (int64_t r = 0; r < blockRows / 2; ++r) {
      pPairs = write(rowPairs(p, r), pPairs, r);
      dsPairs = write(rowPairs(ds, r), dsPairs, r);
    }
    for (int64_t i = 0; i < blockRows; ++i)
      dsKeyPairs =
          write(vector::BitCastOp::create(
                    b, loc, VectorType::get({keyChunk / 2}, i32), ds[i]),
                dsKeyPairs, i);
    Value accV = emitPairKeySums(b, loc, state[2], pPairs, dO, headDimV, batch,
                                 head, key0, rowOf);
    Value accK = emitPairKeySums(b, loc, state[1], dsPairs, c.q, headDimQK,
                                 batch, head, key0, rowOf);
    Value accQ = emitPairQuerySums(b, loc, state[0], dsKeyPairs, batch, kvHead,
                                   g, key0, rowOf);
    return {accQ, accK, accV, pPairs, dsPairs, dsKeyPairs};
  }

private:
  /// emitKeyAccumulation on the unit: `pairs` holds the weights of rows 2r
  /// and 2r + 1 for each key as one i32, `rows` is the bf16 Q or dO (width
  /// columns) whose rows pair up the same way (pieces interleaved).
  Value emitPairKeySums(OpBuilder &b, Location loc, Value acc, Value pairs,
                        Value rows, int64_t width, Value batch, Value head,
                        Value key0, ArrayRef<Value> rowOf) const {
    constexpr int64_t kLanes = 16;
    Type bf16 = b.getBF16Type();
    auto halfType = VectorType::get({kLanes}, bf16);
    Value zeroBF = arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16));
    int64_t rowPairCount = rowOf.size() / 2;
    return emitKeySums(
        b, loc, acc, key0, width, kLanes,
        [&](OpBuilder &b, Location loc, int64_t piece) {
          IndexMath im{b, loc};
          SmallVector<Value> pieces;
          for (int64_t r = 0; r < rowPairCount; ++r) {
            SmallVector<Value> halves;
            for (int64_t e = 0; e < 2; ++e)
              halves.push_back(vector::TransferReadOp::create(
                  b, loc, halfType, rows,
                  rowIndices(c.layout, batch, rowOf[2 * r + e], head,
                             im.c(piece * kLanes)),
                  zeroBF, ArrayRef<bool>{true}));
            pieces.push_back(
                vector::InterleaveOp::create(b, loc, halves[0], halves[1]));
          }
          return pieces;
        },
        [&](OpBuilder &b, Location loc, Value j) {
          IndexMath im{b, loc};
          SmallVector<Value> w;
          for (int64_t r = 0; r < rowPairCount; ++r)
            w.push_back(broadcastPair(b, loc, pairs, ValueRange{im.c(r), j}));
          return w;
        });
  }

  /// emitQueryAccumulation on the unit: `keyPairs` holds the weights (scale
  /// dS) of keys 2p and 2p + 1 of each row as one i32, keys the keys
  /// paired the same way.
  Value emitPairQuerySums(OpBuilder &b, Location loc, Value accQ,
                          Value keyPairs, Value batch, Value kvHead, Value g,
                          Value key0, ArrayRef<Value> rowOf) const {
    constexpr int64_t kLanes = 16;
    Type bf16 = b.getBF16Type();
    auto operandType = VectorType::get({2 * kLanes}, bf16);
    Value zeroBF = arith::ConstantOp::create(b, loc, b.getZeroAttr(bf16));
    Value pair0 = IndexMath{b, loc}.div(key0, IndexMath{b, loc}.c(2));
    return emitQuerySums(
        b, loc, accQ, g, rowOf, kLanes, keyChunk / 2,
        [&](OpBuilder &b, Location loc, Value pair) {
          IndexMath im{b, loc};
          SmallVector<Value> w;
          for (int64_t i = 0, e = rowOf.size(); i < e; ++i)
            w.push_back(
                broadcastPair(b, loc, keyPairs, ValueRange{im.c(i), pair}));
          return w;
        },
        [&](OpBuilder &b, Location loc, Value pair, int64_t piece) -> Value {
          IndexMath im{b, loc};
          return vector::TransferReadOp::create(
              b, loc, operandType, keys,
              ValueRange{batch, kvHead, im.add(pair0, pair),
                         im.c(piece * 2 * kLanes)},
              zeroBF, ArrayRef<bool>{true});
        });
  }

protected:
  Value multiplyAdd(OpBuilder &b, Location loc, Value w, Value x,
                    Value sum) const override {
    return unit.emitDot(b, loc, sum, w, x);
  }

private:
  const BF16PairDotUnit &unit;
};

} // namespace

Value GradientKernel::emitKeySums(
    OpBuilder &b, Location loc, Value acc, Value key0, int64_t width,
    int64_t pieceWidth,
    function_ref<SmallVector<Value>(OpBuilder &, Location, int64_t)>
        sourcePieces,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> weightsAt)
    const {
  auto pieceType = VectorType::get({pieceWidth}, b.getF32Type());
  Value zeroF = emitF32Constant(b, loc, 0.0);
  int64_t pieces = width / pieceWidth;
  for (int64_t groupStart = 0; groupStart < pieces;
       groupStart += kGroupPieces) {
    int64_t groupEnd = std::min(pieces, groupStart + kGroupPieces);
    SmallVector<SmallVector<Value>> sources;
    for (int64_t piece = groupStart; piece < groupEnd; ++piece)
      sources.push_back(sourcePieces(b, loc, piece));
    IndexMath im{b, loc};
    auto keyLoop = scf::ForOp::create(
        b, loc, im.c(0), im.c(keyChunk), im.c(1), ValueRange{acc},
        [&](OpBuilder &b, Location loc, Value j, ValueRange carried) {
          IndexMath im{b, loc};
          Value key = im.add(key0, j);
          SmallVector<Value> w = weightsAt(b, loc, j);
          Value updated = carried[0];
          for (int64_t piece = groupStart; piece < groupEnd; ++piece) {
            SmallVector<Value> at = {key, im.c(piece * pieceWidth)};
            Value sum = vector::TransferReadOp::create(
                b, loc, pieceType, updated, at, zeroF, ArrayRef<bool>{true});
            for (auto [weight, source] :
                 llvm::zip(w, sources[piece - groupStart]))
              sum = multiplyAdd(b, loc, weight, source, sum);
            updated = vector::TransferWriteOp::create(b, loc, sum, updated, at,
                                                      ArrayRef<bool>{true})
                          .getResult();
          }
          scf::YieldOp::create(b, loc, updated);
        });
    acc = keyLoop.getResult(0);
  }
  return acc;
}

Value GradientKernel::emitQuerySums(
    OpBuilder &b, Location loc, Value accQ, Value g, ArrayRef<Value> rowOf,
    int64_t pieceWidth, int64_t steps,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> weightsAt,
    function_ref<Value(OpBuilder &, Location, Value, int64_t)> columnAt) const {
  auto pieceType = VectorType::get({pieceWidth}, b.getF32Type());
  Value zeroF = emitF32Constant(b, loc, 0.0);
  Value zeroPiece = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(pieceType, b.getF32FloatAttr(0)));
  IndexMath im{b, loc};
  int64_t pieces = headDimQK / pieceWidth;
  int64_t rows = rowOf.size();
  for (int64_t groupStart = 0; groupStart < pieces;
       groupStart += kGroupPieces) {
    int64_t groupEnd = std::min(pieces, groupStart + kGroupPieces);
    int64_t width = groupEnd - groupStart;
    SmallVector<Value> init(rows * width, zeroPiece);
    auto stepLoop = scf::ForOp::create(
        b, loc, im.c(0), im.c(steps), im.c(1), init,
        [&](OpBuilder &b, Location loc, Value step, ValueRange sums) {
          SmallVector<Value> w = weightsAt(b, loc, step);
          SmallVector<Value> next(sums.begin(), sums.end());
          for (int64_t piece = groupStart; piece < groupEnd; ++piece) {
            Value column = columnAt(b, loc, step, piece);
            for (int64_t i = 0; i < rows; ++i) {
              Value &sum = next[i * width + piece - groupStart];
              sum = multiplyAdd(b, loc, w[i], column, sum);
            }
          }
          scf::YieldOp::create(b, loc, next);
        });
    for (auto [i, row] : llvm::enumerate(rowOf))
      for (int64_t piece = groupStart; piece < groupEnd; ++piece) {
        SmallVector<Value> at = {g, row, im.c(piece * pieceWidth)};
        Value sum = arith::AddFOp::create(
            b, loc,
            vector::TransferReadOp::create(b, loc, pieceType, accQ, at, zeroF,
                                           ArrayRef<bool>{true}),
            stepLoop.getResult(i * width + piece - groupStart));
        accQ = vector::TransferWriteOp::create(b, loc, sum, accQ, at,
                                               ArrayRef<bool>{true})
                   .getResult();
      }
  }
  return accQ;
}

std::unique_ptr<ScoreKernel>
host_attention::chooseScoreKernel(const BF16PairDotUnit *dotUnit, Value rows,
                                  Value columns) {
  if (const BF16PairDotUnit *unit = pairDotFor(dotUnit, rows, columns))
    return std::make_unique<PairDotScores>(*unit);
  return std::make_unique<OuterProductScores>();
}

std::unique_ptr<ValueKernel>
host_attention::chooseValueKernel(BlockShape shape) {
  return std::make_unique<FMAValues>(shape);
}

std::unique_ptr<GradientKernel>
host_attention::chooseGradientKernel(const BF16PairDotUnit *dotUnit,
                                     const AttentionConfig &c, Value dO,
                                     BlockShape shape) {
  int64_t headDimQK = cast<RankedTensorType>(c.q.getType()).getShape().back();
  int64_t headDimV = cast<RankedTensorType>(c.v.getType()).getShape().back();
  if (pairDotFor(dotUnit, c.q, c.k) && pairDotFor(dotUnit, dO, c.v) &&
      headDimQK % 16 == 0 && headDimV % 16 == 0 && shape.blockRows % 2 == 0)
    return std::make_unique<PairDotGradients>(c, dO, shape, *dotUnit);
  return std::make_unique<FMAGradients>(c, dO, shape);
}
