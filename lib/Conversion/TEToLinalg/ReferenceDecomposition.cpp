//===- ReferenceDecomposition.cpp - te ops as dense reference math --------===//
//
// te-decompose-reference: te.attention and te.attention_backward as the
// textbook dense computation, written independently of AttentionLowering.cpp
// so that the two can be checked against each other (te-run --check); and
// te.scaled_matmul as one contraction of the dequantized operands, written
// independently of GemmLowering.cpp (see "The GEMM" at the end). Every
// quantity lives on the iteration space (n, h, i, j): batch entry (a single
// one for thd, whose sequences are packed), query head, query row (token for
// thd) and key (token for thd). The f32 score tensor [n, h_q, i, j] is
// materialized by a contraction; visibility is computed per element from
// linalg.index values (thd: from per-token tables of sequence and position)
// straight from the op's documented rules; the softmax is the two-pass one
// (row max, exp, row sum); dropout is a dense tensor of keep factors from
// the documented hash; the backward pass is the dense chain rule on these
// tensors. Nothing here is shared with the production lowering on purpose:
// a helper used by both would make a bug in it invisible to the check.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TECommon/Epilogue.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/ScalingMath.h"
#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::te {
#define GEN_PASS_DEF_TEDECOMPOSEREFERENCE
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

std::optional<std::string>
mlir::te::getReferenceDecompositionGap(Operation *op) {
  if (!isa<AttentionOp, AttentionBackwardOp, ScaledMatmulOp, GroupedMatmulOp>(
          op))
    return std::nullopt;
  for (Value value : op->getOperands())
    if (!cast<ShapedType>(value.getType()).hasStaticShape())
      return "no reference decomposition for " +
             op->getName().getStringRef().str() + " with dynamic shapes";
  return std::nullopt;
}

namespace {

using utils::IteratorType;

/// Iterator types from a string of 'p' (parallel) and 'r' (reduction).
SmallVector<IteratorType> iterators(StringRef kinds) {
  SmallVector<IteratorType> result;
  for (char kind : kinds)
    result.push_back(kind == 'r' ? IteratorType::reduction
                                 : IteratorType::parallel);
  return result;
}

/// The positions of a Q/K/V/O-like tensor in `layout` for the canonical
/// (batch, head, row, x); `head` may be the kv head and `row` the key. thd
/// has a single batch entry, which does not appear.
SmallVector<AffineExpr, 4> layoutExprs(QKVLayout layout, AffineExpr batch,
                                       AffineExpr head, AffineExpr row,
                                       AffineExpr x) {
  return arrangeInLayout(layout, batch, row, head, x);
}

/// A map from `dims` loops reading a [1|B, 1|H, S, T] operand at logical
/// (b, h, i, j) = `logical`: size-1 dimensions read index 0 (broadcast).
AffineMap broadcastMap(MLIRContext *ctx, unsigned dims, Value operand,
                       ArrayRef<AffineExpr> logical) {
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(operand.getType()).getShape();
  SmallVector<AffineExpr> results;
  for (auto [size, expr] : llvm::zip(shape, logical))
    results.push_back(size == 1 ? getAffineConstantExpr(0, ctx) : expr);
  return AffineMap::get(dims, 0, results, ctx);
}

Value toF32(OpBuilder &b, Location loc, Value value) {
  if (value.getType().isF32())
    return value;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), value);
}

/// An f32 value rounded to `element` (the results' element type).
Value fromF32(OpBuilder &b, Location loc, Value value, Type element) {
  if (element.isF32())
    return value;
  return arith::TruncFOp::create(b, loc, element, value);
}

Value constantF32(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(value)));
}

Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
             double value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  return linalg::FillOp::create(b, loc, constantF32(b, loc, value), empty)
      .getResult(0);
}

using GenericBody = function_ref<Value(OpBuilder &, Location, ValueRange args)>;

/// A one-result linalg.generic writing into `init`; `body` returns the
/// value to yield.
Value generic(OpBuilder &b, Location loc, ValueRange inputs, Value init,
              ArrayRef<AffineMap> maps, StringRef kinds, GenericBody body) {
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iterators(kinds),
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(b, loc, ValueRange{body(b, loc, args)});
             })
      .getResult(0);
}

/// Everything about a te.attention or te.attention_backward that the dense
/// formulation needs, read from the op and resolved from its documented
/// rules (not from the production lowering's helpers).
struct AttentionProblem {
  QKVLayout layout;
  bool thd, padding, causal, bottomRight;
  int64_t windowLeft, windowRight;
  BiasKind biasKind;
  SoftmaxKind softmax;
  double scale, dropout;
  /// The iteration space: `batches` entries (1 for thd), `headsQ` query
  /// heads over `headsKV` kv heads, `rows` query rows and `keys` keys per
  /// entry (the token counts for thd), head dimensions dQK and dV.
  int64_t batches, headsQ, headsKV, rows, keys, dQK, dV;
  /// The forward pass runs over blocks of query rows (attentionRowBlock):
  /// `blockRows` rows from `rowOffset` (null: 0), with q, the mask and the
  /// bias sliced to them; `rows` stays the row count of the whole problem.
  int64_t blockRows;
  Value rowOffset;
  Value q, k, v, cuQ, cuKV, offQ, offKV, seqlensQ, seqlensKV, mask, bias,
      slopes, softmaxOffset, rngState;

  template <typename OpT> static AttentionProblem get(OpT op) {
    AttentionProblem p;
    p.layout = op.getLayout();
    p.thd = p.layout == QKVLayout::thd;
    MaskKind maskKind = op.getMaskKind();
    p.padding = maskKind == MaskKind::padding ||
                maskKind == MaskKind::padding_causal ||
                maskKind == MaskKind::padding_causal_bottom_right;
    p.causal = maskKind == MaskKind::causal ||
               maskKind == MaskKind::causal_bottom_right ||
               maskKind == MaskKind::padding_causal ||
               maskKind == MaskKind::padding_causal_bottom_right;
    // TE's resolution of the diagonal's alignment (DotProductAttention's
    // bottom_right_diagonal): fixed by the causal masks, the attribute (true
    // when absent) for the others.
    p.bottomRight = op.getBottomRightDiagonal().value_or(true);
    if (maskKind == MaskKind::causal || maskKind == MaskKind::padding_causal)
      p.bottomRight = false;
    if (maskKind == MaskKind::causal_bottom_right ||
        maskKind == MaskKind::padding_causal_bottom_right)
      p.bottomRight = true;
    std::tie(p.windowLeft, p.windowRight) = op.getWindowBounds();
    p.biasKind = op.getBiasKind();
    p.softmax = op.getSoftmaxKind();
    p.scale = *op.getEffectiveScale();
    p.dropout = op.getRngState() ? op.getDropout().convertToDouble() : 0.0;
    p.q = op.getQ();
    p.k = op.getK();
    p.v = op.getV();
    p.cuQ = op.getCuSeqlensQ();
    p.cuKV = op.getCuSeqlensKv();
    p.offQ = op.getSeqOffsetsQ();
    p.offKV = op.getSeqOffsetsKv();
    p.seqlensQ = op.getSeqlensQ();
    p.seqlensKV = op.getSeqlensKv();
    p.mask = op.getMask();
    p.bias = op.getBias();
    p.slopes = op.getAlibiSlopes();
    p.softmaxOffset = op.getSoftmaxOffset();
    p.rngState = op.getRngState();
    std::array<int64_t, 4> qSizes = p.sizes(p.q), kSizes = p.sizes(p.k);
    p.batches = qSizes[0];
    p.headsQ = qSizes[1];
    p.rows = qSizes[2];
    p.dQK = qSizes[3];
    p.headsKV = kSizes[1];
    p.keys = kSizes[2];
    p.dV = p.sizes(p.v)[3];
    p.blockRows = p.rows;
    return p;
  }

  /// (batch, heads, sequence, head dim) of a Q/K/V/O-like tensor from the
  /// op's documented layouts.
  std::array<int64_t, 4> sizes(Value tensor) const {
    HeadTensorDims d = getHeadTensorDims(
        layout, cast<RankedTensorType>(tensor.getType()).getShape());
    return {layout == QKVLayout::thd ? 1 : d.batch, d.heads, d.seq, d.headDim};
  }

  int64_t group() const { return headsQ / headsKV; }
  SmallVector<int64_t> scoreShape() const {
    return {batches, headsQ, blockRows, keys};
  }
  SmallVector<int64_t> rowShape() const { return {batches, headsQ, blockRows}; }

  /// The LSE element of (batch d0, head d1, row d2) from `dims` loops:
  /// [b, h_q, s_q, 1], or [t_q, h_q, 1] for thd.
  AffineMap lseMap(MLIRContext *ctx, unsigned dims) const {
    AffineExpr n = getAffineDimExpr(0, ctx), h = getAffineDimExpr(1, ctx),
               i = getAffineDimExpr(2, ctx),
               zero = getAffineConstantExpr(0, ctx);
    if (thd)
      return AffineMap::get(dims, 0, {i, h, zero}, ctx);
    return AffineMap::get(dims, 0, {n, h, i, zero}, ctx);
  }
};

/// For thd: per-token tables of the packed sequences, from a loop over the
/// sequences per token (a reduction over n). Sequence n owns the tokens
/// [start[n], start[n] + len[n]) with len[n] = cu[n + 1] - cu[n] and start
/// = seq_offsets when given, cu otherwise. A token of no sequence has
/// sequence -1, position 0 and lengths 0.
struct TokenTable {
  /// i64 [tokens] each: the token's sequence, its position in it, and (for
  /// the q side) the lengths of its sequence's q and kv parts.
  Value sequence, position, lenQ, lenKV;
};

TokenTable buildTokenTable(OpBuilder &b, Location loc, int64_t tokens, Value cu,
                           Value offsets, Value otherCu) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  int64_t sequences = cast<RankedTensorType>(cu.getType()).getDimSize(0) - 1;
  auto slice = [&](Value vector, int64_t first) -> Value {
    return tensor::ExtractSliceOp::create(
        b, loc, vector, ArrayRef<OpFoldResult>{b.getIndexAttr(first)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(sequences)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  };
  auto table = [&](int64_t value) -> Value {
    Value empty =
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{tokens}, i64);
    Value fill = arith::ConstantIntOp::create(b, loc, i64, value);
    return linalg::FillOp::create(b, loc, fill, empty).getResult(0);
  };
  // (token t, sequence n): inputs per n, outputs per t.
  SmallVector<Value> inputs = {slice(cu, 0), slice(cu, 1),
                               slice(offsets ? offsets : cu, 0)};
  bool lengths = static_cast<bool>(otherCu);
  if (lengths) {
    inputs.push_back(slice(otherCu, 0));
    inputs.push_back(slice(otherCu, 1));
  }
  SmallVector<Value> outputs = {table(-1), table(0)};
  if (lengths) {
    outputs.push_back(table(0));
    outputs.push_back(table(0));
  }
  AffineMap perSequence = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
  AffineMap perToken = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  SmallVector<AffineMap> maps(inputs.size(), perSequence);
  maps.append(outputs.size(), perToken);
  SmallVector<Type> types(outputs.size(), RankedTensorType::get({tokens}, i64));
  auto op = linalg::GenericOp::create(
      b, loc, types, inputs, outputs, maps, iterators("pr"),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        auto wide = [&](Value x) -> Value {
          return arith::ExtSIOp::create(b, loc, i64, x);
        };
        auto index = [&](unsigned dim) -> Value {
          return arith::IndexCastOp::create(
              b, loc, i64, linalg::IndexOp::create(b, loc, dim));
        };
        Value token = index(0), n = index(1);
        Value len = arith::SubIOp::create(b, loc, wide(args[1]), wide(args[0]));
        Value start = wide(args[2]);
        Value end = arith::AddIOp::create(b, loc, start, len);
        Value inside = arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, start,
                                  token),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, token,
                                  end));
        unsigned acc = inputs.size();
        auto pick = [&](Value mine, unsigned at) -> Value {
          return arith::SelectOp::create(b, loc, inside, mine, args[at]);
        };
        SmallVector<Value> yields = {
            pick(n, acc),
            pick(arith::SubIOp::create(b, loc, token, start), acc + 1)};
        if (lengths) {
          yields.push_back(pick(len, acc + 2));
          yields.push_back(
              pick(arith::SubIOp::create(b, loc, wide(args[4]), wide(args[3])),
                   acc + 3));
        }
        linalg::YieldOp::create(b, loc, yields);
      });
  TokenTable result{op.getResult(0), op.getResult(1), {}, {}};
  if (lengths) {
    result.lenQ = op.getResult(2);
    result.lenKV = op.getResult(3);
  }
  return result;
}

/// S[n, h, i, j] = sum_d q[n, i, h, d] k[n, j, h / g, d] in f32.
Value buildScores(OpBuilder &b, Location loc, const AttentionProblem &p) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineExpr kvHead = d1.floorDiv(p.group());
  return generic(
      b, loc, ValueRange{p.q, p.k}, filled(b, loc, p.scoreShape(), 0.0),
      {AffineMap::get(5, 0, layoutExprs(p.layout, d0, d1, d2, d4), ctx),
       AffineMap::get(5, 0, layoutExprs(p.layout, d0, kvHead, d3, d4), ctx),
       AffineMap::get(5, 0, {d0, d1, d2, d3}, ctx)},
      "ppppr", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value product = arith::MulFOp::create(b, loc, toF32(b, loc, args[0]),
                                              toF32(b, loc, args[1]));
        return arith::AddFOp::create(b, loc, args[2], product);
      });
}

/// R[n, h, i, x] = sum_j w[n, h, i, j] kv[n, j, h / g, x] in f32 for
/// score-space weights `w` of `rows` query rows and a key or value tensor
/// `kv` of head dimension `width`: (P o F) V forward, dS K backward.
Value weightedKeysOrValues(OpBuilder &b, Location loc,
                           const AttentionProblem &p, Value weights, Value kv,
                           int64_t rows, int64_t width) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineExpr kvHead = d1.floorDiv(p.group());
  return generic(
      b, loc, ValueRange{weights, kv},
      filled(b, loc, {p.batches, p.headsQ, rows, width}, 0.0),
      {AffineMap::get(5, 0, {d0, d1, d2, d4}, ctx),
       AffineMap::get(5, 0, layoutExprs(p.layout, d0, kvHead, d4, d3), ctx),
       AffineMap::get(5, 0, {d0, d1, d2, d3}, ctx)},
      "ppppr", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value product =
            arith::MulFOp::create(b, loc, args[0], toF32(b, loc, args[1]));
        return arith::AddFOp::create(b, loc, args[2], product);
      });
}

/// The logits x[n, h, i, j] from the scores: scale, bias and ALiBi, and
/// -inf where the mask, the window, the padding or (thd) the packing hides
/// key j from query i.
Value buildLogits(OpBuilder &b, Location loc, const AttentionProblem &p,
                  Value scores) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  SmallVector<int64_t> scoreShape = p.scoreShape();
  SmallVector<Value> inputs = {scores};
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(4, ctx)};
  SmallVector<AffineExpr> logical = {d0, d1, d2, d3};
  auto add = [&](Value input, AffineMap map) {
    inputs.push_back(input);
    maps.push_back(map);
    return static_cast<int>(inputs.size() - 1);
  };
  int biasAt = -1, maskAt = -1, slopesAt = -1, lenAt = -1, tableAt = -1;
  if (p.bias &&
      (p.biasKind == BiasKind::pre_scale || p.biasKind == BiasKind::post_scale))
    biasAt = add(p.bias, broadcastMap(ctx, 4, p.bias, logical));
  if (p.mask)
    maskAt = add(p.mask, broadcastMap(ctx, 4, p.mask, logical));
  bool slopesPerSequence = false;
  if (p.biasKind == BiasKind::alibi) {
    slopesPerSequence =
        cast<RankedTensorType>(p.slopes.getType()).getRank() == 2;
    // thd reads a per-sequence slope by the query token's sequence, below.
    if (!(slopesPerSequence && p.thd))
      slopesAt =
          add(p.slopes, slopesPerSequence ? AffineMap::get(4, 0, {d0, d1}, ctx)
                                          : AffineMap::get(4, 0, {d1}, ctx));
  }
  if (p.thd) {
    TokenTable qTable = buildTokenTable(b, loc, p.rows, p.cuQ, p.offQ, p.cuKV);
    TokenTable kvTable =
        buildTokenTable(b, loc, p.keys, p.cuKV, p.offKV, Value());
    AffineMap byRow = AffineMap::get(4, 0, {d2}, ctx);
    AffineMap byKey = AffineMap::get(4, 0, {d3}, ctx);
    tableAt = add(qTable.sequence, byRow);
    add(qTable.position, byRow);
    add(qTable.lenQ, byRow);
    add(qTable.lenKV, byRow);
    add(kvTable.sequence, byKey);
    add(kvTable.position, byKey);
  } else if (p.padding) {
    lenAt = add(p.seqlensQ, AffineMap::get(4, 0, {d0}, ctx));
    add(p.seqlensKV, AffineMap::get(4, 0, {d0}, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(4, ctx));

  return generic(
      b, loc, inputs, tensor::EmptyOp::create(b, loc, scoreShape, f32), maps,
      "pppp", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        auto index = [&](unsigned dim) -> Value {
          return arith::IndexCastOp::create(
              b, loc, i64, linalg::IndexOp::create(b, loc, dim));
        };
        auto c64 = [&](int64_t value) -> Value {
          return arith::ConstantIntOp::create(b, loc, i64, value);
        };
        auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) -> Value {
          return arith::CmpIOp::create(b, loc, pred, x, y);
        };
        auto both = [&](Value x, Value y) -> Value {
          return arith::AndIOp::create(b, loc, x, y);
        };
        // Positions of the query and the key in their sequence, and the
        // sequence's lengths.
        Value i = index(2), j = index(3);
        if (p.rowOffset)
          i = arith::AddIOp::create(
              b, loc, i, arith::IndexCastOp::create(b, loc, i64, p.rowOffset));
        Value lenQ = c64(p.rows), lenKV = c64(p.keys);
        Value visible = arith::ConstantIntOp::create(b, loc, 1, 1);
        Value querySequence;
        if (tableAt >= 0) {
          querySequence = args[tableAt];
          i = args[tableAt + 1];
          lenQ = args[tableAt + 2];
          lenKV = args[tableAt + 3];
          j = args[tableAt + 5];
          // Both tokens belong to the same sequence.
          visible = both(
              cmp(arith::CmpIPredicate::sge, querySequence, c64(0)),
              cmp(arith::CmpIPredicate::eq, querySequence, args[tableAt + 4]));
        } else if (lenAt >= 0) {
          lenQ = arith::ExtSIOp::create(b, loc, i64, args[lenAt]);
          lenKV = arith::ExtSIOp::create(b, loc, i64, args[lenAt + 1]);
        }
        // The diagonal key of row i: i + len_kv - len_q when aligned
        // bottom-right (actual lengths with padding), i otherwise. The
        // causal mask, the window and ALiBi are measured from it.
        Value shift = arith::SubIOp::create(b, loc, lenKV, lenQ);
        Value diagonal =
            p.bottomRight ? arith::AddIOp::create(b, loc, i, shift) : i;

        Value dot = args[0];
        Value scaleValue = constantF32(b, loc, p.scale);
        Value x;
        if (p.biasKind == BiasKind::pre_scale)
          x = arith::MulFOp::create(
              b, loc,
              arith::AddFOp::create(b, loc, dot, toF32(b, loc, args[biasAt])),
              scaleValue);
        else
          x = arith::MulFOp::create(b, loc, dot, scaleValue);
        if (p.biasKind == BiasKind::post_scale)
          x = arith::AddFOp::create(b, loc, x, toF32(b, loc, args[biasAt]));
        if (p.biasKind == BiasKind::alibi) {
          Value slope;
          if (slopesAt >= 0) {
            slope = args[slopesAt];
          } else {
            // A token of no sequence reads sequence 0's slope; it sees no
            // key, so the value is never used.
            Value sequence =
                arith::MaxSIOp::create(b, loc, querySequence, c64(0));
            Type index = b.getIndexType();
            slope = tensor::ExtractOp::create(
                b, loc, p.slopes,
                ValueRange{arith::IndexCastOp::create(b, loc, index, sequence),
                           linalg::IndexOp::create(b, loc, 1)});
          }
          // -slope * |i + diag - j|.
          Value distance = arith::SubIOp::create(b, loc, j, diagonal);
          Value magnitude = arith::MaxSIOp::create(
              b, loc, distance,
              arith::SubIOp::create(b, loc, c64(0), distance));
          Value penalty = arith::MulFOp::create(
              b, loc, slope, arith::SIToFPOp::create(b, loc, f32, magnitude));
          x = arith::SubFOp::create(b, loc, x, penalty);
        }

        if (p.padding)
          visible = both(both(visible, cmp(arith::CmpIPredicate::slt, i, lenQ)),
                         cmp(arith::CmpIPredicate::slt, j, lenKV));
        if (p.causal)
          visible = both(visible, cmp(arith::CmpIPredicate::sle, j, diagonal));
        if (p.windowLeft >= 0)
          visible = both(
              visible,
              cmp(arith::CmpIPredicate::sge, j,
                  arith::SubIOp::create(b, loc, diagonal, c64(p.windowLeft))));
        if (p.windowRight >= 0)
          visible = both(
              visible,
              cmp(arith::CmpIPredicate::sle, j,
                  arith::AddIOp::create(b, loc, diagonal, c64(p.windowRight))));
        if (maskAt >= 0) // true excludes the key
          visible =
              both(visible, arith::XOrIOp::create(
                                b, loc, args[maskAt],
                                arith::ConstantIntOp::create(b, loc, 1, 1)));
        return arith::SelectOp::create(b, loc, visible, x,
                                       constantF32(b, loc, -INFINITY));
      });
}

/// Dropout's dense keep factors F[n, h, i, j]: 0 for a dropped element,
/// 1 / (1 - p) for a kept one, from the op's documented counter-based
/// generator, evaluated here in its own terms: the element's counter is its
/// linear index in the [n, h, i, j] space (n = 0 and token indices for thd),
/// splitmix64 finalizes seed + golden * (offset + counter + 1) and the
/// element is kept when the top 24 bits, read as u * 2^24, reach
/// ceil(p * 2^24).
Value buildDropoutFactors(OpBuilder &b, Location loc,
                          const AttentionProblem &p) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto c64 = [&](OpBuilder &b, uint64_t value) -> Value {
    return arith::ConstantIntOp::create(b, loc, i64,
                                        static_cast<int64_t>(value));
  };
  auto element = [&](int64_t at) -> Value {
    return tensor::ExtractOp::create(
        b, loc, p.rngState,
        ValueRange{arith::ConstantIndexOp::create(b, loc, at)});
  };
  Value seed = element(0), offset = element(1);
  // u >= p with u = top * 2^-24 and p an f32 (exact in double).
  auto threshold = static_cast<uint64_t>(std::ceil(std::ldexp(p.dropout, 24)));
  double kept = 1.0 / (1.0 - p.dropout);
  SmallVector<int64_t> shape = p.scoreShape();
  return generic(
      b, loc, ValueRange{},
      tensor::EmptyOp::create(b, loc, shape, b.getF32Type()),
      {AffineMap::getMultiDimIdentityMap(4, ctx)}, "pppp",
      [&](OpBuilder &b, Location loc, ValueRange) -> Value {
        // Row-major linear index over [batches, heads, rows, keys].
        Value counter = c64(b, 0);
        // The rows are those of the whole problem, not of the block.
        for (unsigned dim = 0; dim < 4; ++dim) {
          Value at = arith::IndexCastOp::create(
              b, loc, i64, linalg::IndexOp::create(b, loc, dim));
          if (dim == 2 && p.rowOffset)
            at = arith::AddIOp::create(
                b, loc, at,
                arith::IndexCastOp::create(b, loc, i64, p.rowOffset));
          int64_t extent = dim == 2 ? p.rows : shape[dim];
          counter = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, counter, c64(b, extent)),
              at);
        }
        Value step = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, offset, counter), c64(b, 1));
        Value z = arith::AddIOp::create(
            b, loc, seed,
            arith::MulIOp::create(b, loc, step, c64(b, 0x9E3779B97F4A7C15ull)));
        // splitmix64's finalizer: (shift, multiplier) rounds, then a shift.
        auto mix = [&](Value z, uint64_t shift) -> Value {
          return arith::XOrIOp::create(
              b, loc, z, arith::ShRUIOp::create(b, loc, z, c64(b, shift)));
        };
        z = arith::MulIOp::create(b, loc, mix(z, 30),
                                  c64(b, 0xBF58476D1CE4E5B9ull));
        z = arith::MulIOp::create(b, loc, mix(z, 27),
                                  c64(b, 0x94D049BB133111EBull));
        z = mix(z, 31);
        Value top = arith::ShRUIOp::create(b, loc, z, c64(b, 40));
        Value keep = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           top, c64(b, threshold));
        return arith::SelectOp::create(b, loc, keep, constantF32(b, loc, kept),
                                       constantF32(b, loc, 0.0));
      });
}

/// The log of the softmax's extra denominator term per row [n, h, i]
/// (off_by_one: 0, learnable: alpha_h), or null for vanilla.
Value buildExtraLogit(OpBuilder &b, Location loc, const AttentionProblem &p) {
  MLIRContext *ctx = b.getContext();
  if (p.softmax == SoftmaxKind::off_by_one)
    return filled(b, loc, p.rowShape(), 0.0);
  if (p.softmax != SoftmaxKind::learnable)
    return Value();
  AffineExpr d1 = getAffineDimExpr(1, ctx),
             zero = getAffineConstantExpr(0, ctx);
  return generic(b, loc, ValueRange{p.softmaxOffset},
                 tensor::EmptyOp::create(b, loc, p.rowShape(), b.getF32Type()),
                 {AffineMap::get(3, 0, {zero, d1, zero, zero}, ctx),
                  AffineMap::getMultiDimIdentityMap(3, ctx)},
                 "ppp", [&](OpBuilder &, Location, ValueRange args) -> Value {
                   return args[0];
                 });
}

/// The element-wise product of two [n, h, i, j] tensors.
Value multiplyScores(OpBuilder &b, Location loc, const AttentionProblem &p,
                     Value x, Value y) {
  AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, b.getContext());
  return generic(
      b, loc, ValueRange{x, y},
      tensor::EmptyOp::create(b, loc, p.scoreShape(), b.getF32Type()),
      {id4, id4, id4}, "pppp",
      [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return arith::MulFOp::create(b, loc, args[0], args[1]);
      });
}

/// The query rows of one block of the reference forward pass: all of them
/// while a block's score tensor stays within kReferenceBlockBytes, else the
/// largest divisor of the row count that keeps it there, so that --check
/// of a long sequence needs O(block * s_kv) memory, not O(s_q * s_kv). thd
/// (rows of packed sequences, read through per-token tables) is not
/// blocked.
constexpr int64_t kReferenceBlockBytes = int64_t(64) << 20;

int64_t attentionRowBlock(const AttentionProblem &p) {
  int64_t rowBytes = p.batches * p.headsQ * p.keys * int64_t(sizeof(float));
  if (p.thd || rowBytes == 0 || p.rows * rowBytes <= kReferenceBlockBytes)
    return p.rows;
  int64_t block = std::max<int64_t>(1, kReferenceBlockBytes / rowBytes);
  while (p.rows % block != 0)
    --block;
  return block;
}

/// Steps 1-8 of the dense forward pass for the rows of `p`'s block: O in
/// `oType` and, when `lseType` is given, the LSE.
SmallVector<Value> buildAttentionForward(OpBuilder &b, Location loc,
                                         const AttentionProblem &p,
                                         RankedTensorType oType,
                                         RankedTensorType lseType) {
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> scoreShape = p.scoreShape(), rowShape = p.rowShape();

  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineMap rows4 = AffineMap::get(4, 0, {d0, d1, d2}, ctx);
  AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
  AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ctx);
  Type f32 = b.getF32Type();

  // 1-2. Dense scores, then logits with -inf where the key is not visible.
  Value logits = buildLogits(b, loc, p, buildScores(b, loc, p));
  // The extra denominator term's logit e per row; it starts both the row
  // max and the row sum.
  Value extra = buildExtraLogit(b, loc, p);

  // 3. Row max m = max(e, max_j x).
  Value rowMax = generic(
      b, loc, ValueRange{logits},
      extra ? extra : filled(b, loc, rowShape, -INFINITY), {id4, rows4}, "pppr",
      [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return arith::MaximumFOp::create(b, loc, args[0], args[1]);
      });

  // 4. p = exp(x - m); an invisible key (x = -inf) contributes 0 even
  // when the whole row is invisible (m = -inf).
  Value probs = generic(
      b, loc, ValueRange{logits, rowMax},
      tensor::EmptyOp::create(b, loc, scoreShape, f32), {id4, rows4, id4},
      "pppp", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value invisible =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, args[0],
                                  constantF32(b, loc, -INFINITY));
        Value e = math::ExpOp::create(
            b, loc, arith::SubFOp::create(b, loc, args[0], args[1]));
        return arith::SelectOp::create(b, loc, invisible,
                                       constantF32(b, loc, 0.0), e);
      });

  // 5. Row sum l = exp(e - m) + sum_j p (before dropout: the softmax
  // statistics are those of the undropped weights).
  Value sumInit = filled(b, loc, rowShape, 0.0);
  if (extra)
    sumInit = generic(
        b, loc, ValueRange{extra, rowMax},
        tensor::EmptyOp::create(b, loc, rowShape, f32), {id3, id3, id3}, "ppp",
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, args[0], args[1]));
        });
  Value rowSum =
      generic(b, loc, ValueRange{probs}, sumInit, {id4, rows4}, "pppr",
              [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                return arith::AddFOp::create(b, loc, args[0], args[1]);
              });

  // 6. Unnormalized (P o F) V: acc[n, h, i, x] = sum_j p[n, h, i, j]
  // f[n, h, i, j] v[n, j, h/g, x]. Loops (n, h, i, x, j).
  Value weights = probs;
  if (p.dropout > 0.0)
    weights = multiplyScores(b, loc, p, probs, buildDropoutFactors(b, loc, p));
  Value acc = weightedKeysOrValues(b, loc, p, weights, p.v, p.blockRows, p.dV);

  // 7. O = acc / l in q's layout and element type; a row that sees
  // nothing (l = 0, or only the extra term: acc = 0) is 0.
  Type oElement = oType.getElementType();
  Value o = generic(
      b, loc, ValueRange{acc, rowSum},
      tensor::EmptyOp::create(b, loc, oType.getShape(), oElement),
      {id4, rows4,
       AffineMap::get(4, 0, layoutExprs(p.layout, d0, d1, d2, d3), ctx)},
      "pppp", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           args[1], constantF32(b, loc, 0.0));
        Value value = arith::SelectOp::create(
            b, loc, seen, arith::DivFOp::create(b, loc, args[0], args[1]),
            constantF32(b, loc, 0.0));
        return fromF32(b, loc, value, oElement);
      });

  SmallVector<Value> results = {o};
  if (lseType) {
    // 8. LSE = m + log(l); l = 0 only when there is no extra term and the
    // row sees nothing: log E = log 0 = -inf. Loops (n, h, i, 0).
    AffineMap lseOut = p.thd ? AffineMap::get(4, 0, {d2, d1, d3}, ctx) : id4;
    results.push_back(generic(
        b, loc, ValueRange{rowMax, rowSum},
        tensor::EmptyOp::create(b, loc, lseType.getShape(), f32),
        {rows4, rows4, lseOut}, "pppp",
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             args[1], constantF32(b, loc, 0.0));
          Value lse = arith::AddFOp::create(
              b, loc, args[0], math::LogOp::create(b, loc, args[1]));
          return arith::SelectOp::create(b, loc, seen, lse,
                                         constantF32(b, loc, -INFINITY));
        }));
  }
  return results;
}

struct AttentionOpReferenceDecomposition : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> gap = getReferenceDecompositionGap(op))
      return rewriter.notifyMatchFailure(op, *gap);
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    AttentionProblem p = AttentionProblem::get(op);
    RankedTensorType oType = op.getO().getType();
    RankedTensorType lseType =
        op.getLse() ? cast<RankedTensorType>(op.getLse().getType())
                    : RankedTensorType();
    int64_t block = attentionRowBlock(p);
    if (block == p.rows) {
      rewriter.replaceOp(op, buildAttentionForward(b, loc, p, oType, lseType));
      return success();
    }

    // Blocks of query rows, each inserted into the results: q, O and the
    // LSE have their rows at `rowDim`, the mask and the bias at 2 (unless
    // they broadcast over rows).
    int64_t rowDim = *getLayoutPosition(p.layout, HeadTensorDim::Seq);
    auto blockType = [&](RankedTensorType type, int64_t dim) {
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] = block;
      return RankedTensorType::get(shape, type.getElementType());
    };
    auto rowsOf = [&](RankedTensorType type, int64_t dim, Value at,
                      SmallVector<OpFoldResult> &offsets,
                      SmallVector<OpFoldResult> &sizes,
                      SmallVector<OpFoldResult> &strides) {
      for (auto [d, size] : llvm::enumerate(type.getShape())) {
        offsets.push_back(static_cast<int64_t>(d) == dim
                              ? OpFoldResult(at)
                              : OpFoldResult(b.getIndexAttr(0)));
        sizes.push_back(
            b.getIndexAttr(static_cast<int64_t>(d) == dim ? block : size));
        strides.push_back(b.getIndexAttr(1));
      }
    };
    auto slice = [&](OpBuilder &b, Value tensor, int64_t dim,
                     Value at) -> Value {
      auto type = cast<RankedTensorType>(tensor.getType());
      if (type.getDimSize(dim) == 1)
        return tensor;
      SmallVector<OpFoldResult> offsets, sizes, strides;
      rowsOf(type, dim, at, offsets, sizes, strides);
      return tensor::ExtractSliceOp::create(b, loc, blockType(type, dim),
                                            tensor, offsets, sizes, strides);
    };
    SmallVector<Value> inits = {tensor::EmptyOp::create(
        b, loc, oType.getShape(), oType.getElementType())};
    SmallVector<int64_t> resultDims = {rowDim};
    if (lseType) {
      inits.push_back(tensor::EmptyOp::create(b, loc, lseType.getShape(),
                                              lseType.getElementType()));
      resultDims.push_back(2);
    }
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value rows = arith::ConstantIndexOp::create(b, loc, p.rows);
    Value step = arith::ConstantIndexOp::create(b, loc, block);
    auto loop = scf::ForOp::create(
        b, loc, zero, rows, step, inits,
        [&](OpBuilder &b, Location loc, Value at, ValueRange partial) {
          AttentionProblem rowsP = p;
          rowsP.blockRows = block;
          rowsP.rowOffset = at;
          rowsP.q = slice(b, p.q, rowDim, at);
          if (p.mask)
            rowsP.mask = slice(b, p.mask, 2, at);
          if (p.bias)
            rowsP.bias = slice(b, p.bias, 2, at);
          SmallVector<Value> parts = buildAttentionForward(
              b, loc, rowsP, blockType(oType, rowDim),
              lseType ? blockType(lseType, 2) : RankedTensorType());
          SmallVector<Value> updated;
          for (auto [part, whole, dim] :
               llvm::zip(parts, partial, resultDims)) {
            SmallVector<OpFoldResult> offsets, sizes, strides;
            rowsOf(cast<RankedTensorType>(whole.getType()), dim, at, offsets,
                   sizes, strides);
            updated.push_back(tensor::InsertSliceOp::create(
                b, loc, part, whole, offsets, sizes, strides));
          }
          scf::YieldOp::create(b, loc, updated);
        });
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

/// dbias: (scale) dS summed over the dimensions in which the bias is 1,
/// written in the bias's shape and type.
Value buildBiasGradient(OpBuilder &b, Location loc, const AttentionProblem &p,
                        Value dS, RankedTensorType biasType) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
  SmallVector<AffineExpr> kept, keptOfBias;
  SmallVector<int64_t> keptShape;
  std::string kinds;
  AffineExpr loops[] = {d0, d1, d2, d3};
  for (auto [dim, size] : llvm::enumerate(biasType.getShape())) {
    if (size == 1) {
      kinds += 'r';
      continue;
    }
    kinds += 'p';
    kept.push_back(loops[dim]);
    keptOfBias.push_back(loops[dim]);
    keptShape.push_back(size);
  }
  double factor = p.biasKind == BiasKind::pre_scale ? p.scale : 1.0;
  Value sum =
      generic(b, loc, ValueRange{dS}, filled(b, loc, keptShape, 0.0),
              {id4, AffineMap::get(4, 0, kept, ctx)}, kinds,
              [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                return arith::AddFOp::create(b, loc, args[0], args[1]);
              });
  Type element = biasType.getElementType();
  return generic(b, loc, ValueRange{sum},
                 tensor::EmptyOp::create(b, loc, biasType.getShape(), element),
                 {AffineMap::get(4, 0, keptOfBias, ctx), id4}, "pppp",
                 [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                   Value value = args[0];
                   if (factor != 1.0)
                     value = arith::MulFOp::create(b, loc, value,
                                                   constantF32(b, loc, factor));
                   return fromF32(b, loc, value, element);
                 });
}

/// d alpha_h = -sum_{n, i} exp(alpha_h - LSE_i) D_i, written in the
/// offset's type.
Value buildSoftmaxOffsetGradient(OpBuilder &b, Location loc,
                                 const AttentionProblem &p, Value lseOperand,
                                 Value delta, RankedTensorType offsetType) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ctx);
  AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
  // A row with LSE = -inf saw nothing and adds nothing. Loops (n, h, i).
  Value sum =
      generic(b, loc, ValueRange{p.softmaxOffset, lseOperand, delta},
              filled(b, loc, {p.headsQ}, 0.0),
              {AffineMap::get(3, 0, {zero, d1, zero, zero}, ctx),
               p.lseMap(ctx, 3), id3, AffineMap::get(3, 0, {d1}, ctx)},
              "rpr", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                Value lse = args[1];
                Value finite =
                    arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                          lse, constantF32(b, loc, -INFINITY));
                Value weight = math::ExpOp::create(
                    b, loc, arith::SubFOp::create(b, loc, args[0], lse));
                Value term = arith::MulFOp::create(b, loc, weight, args[2]);
                return arith::SelectOp::create(
                    b, loc, finite,
                    arith::SubFOp::create(b, loc, args[3], term), args[3]);
              });
  Type element = offsetType.getElementType();
  return generic(
      b, loc, ValueRange{sum},
      tensor::EmptyOp::create(b, loc, offsetType.getShape(), element),
      {AffineMap::get(4, 0, {d1}, ctx), id4}, "pppp",
      [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return fromF32(b, loc, args[0], element);
      });
}

/// The backward pass as the dense chain rule, from the given o, d_o and lse
/// (as the kernel receives them):
///   P = exp(x - LSE) on visible keys,  D_i = dO_i . O_i,
///   dP = (dO V^T) o F,  dS = P o (dP - D),
///   dQ = scale dS K,  dK = scale dS^T Q,  dV = (P o F)^T dO
/// (dK and dV summed over the query heads of each kv head), dbias = dS
/// (post_scale) or scale dS (pre_scale) summed over the dimensions the
/// bias broadcasts, d alpha_h = -sum exp(alpha_h - LSE_i) D_i.
struct AttentionBackwardOpReferenceDecomposition
    : OpRewritePattern<AttentionBackwardOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionBackwardOp op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> gap = getReferenceDecompositionGap(op))
      return rewriter.notifyMatchFailure(op, *gap);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    OpBuilder &b = rewriter;
    AttentionProblem p = AttentionProblem::get(op);
    SmallVector<int64_t> scoreShape = p.scoreShape(), rowShape = p.rowShape();
    Type f32 = b.getF32Type();
    int64_t group = p.group();

    AffineExpr d0, d1, d2, d3, d4, d5;
    bindDims(ctx, d0, d1, d2, d3, d4, d5);
    AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
    AffineMap rows4 = AffineMap::get(4, 0, {d0, d1, d2}, ctx);

    Value logits = buildLogits(b, loc, p, buildScores(b, loc, p));

    // P = exp(x - LSE) from the given LSE; 0 on invisible keys.
    Value probs =
        generic(b, loc, ValueRange{logits, op.getLse()},
                tensor::EmptyOp::create(b, loc, scoreShape, f32),
                {id4, p.lseMap(ctx, 4), id4}, "pppp",
                [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  Value invisible = arith::CmpFOp::create(
                      b, loc, arith::CmpFPredicate::OEQ, args[0],
                      constantF32(b, loc, -INFINITY));
                  Value e = math::ExpOp::create(
                      b, loc, arith::SubFOp::create(b, loc, args[0], args[1]));
                  return arith::SelectOp::create(b, loc, invisible,
                                                 constantF32(b, loc, 0.0), e);
                });

    // D[n, h, i] = sum_x dO[n, i, h, x] O[n, i, h, x]. Loops (n, h, i, x).
    AffineMap rowOf4 =
        AffineMap::get(4, 0, layoutExprs(p.layout, d0, d1, d2, d3), ctx);
    Value delta =
        generic(b, loc, ValueRange{op.getDO(), op.getO()},
                filled(b, loc, rowShape, 0.0), {rowOf4, rowOf4, rows4}, "pppr",
                [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  Value product = arith::MulFOp::create(
                      b, loc, toF32(b, loc, args[0]), toF32(b, loc, args[1]));
                  return arith::AddFOp::create(b, loc, args[2], product);
                });

    // dP[n, h, i, j] = sum_x dO[n, i, h, x] v[n, j, h/g, x]. Loops
    // (n, h, i, j, x).
    AffineExpr kvHead = d1.floorDiv(group);
    Value dP = generic(
        b, loc, ValueRange{op.getDO(), p.v}, filled(b, loc, scoreShape, 0.0),
        {AffineMap::get(5, 0, layoutExprs(p.layout, d0, d1, d2, d4), ctx),
         AffineMap::get(5, 0, layoutExprs(p.layout, d0, kvHead, d3, d4), ctx),
         AffineMap::get(5, 0, {d0, d1, d2, d3}, ctx)},
        "ppppr", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value product = arith::MulFOp::create(b, loc, toF32(b, loc, args[0]),
                                                toF32(b, loc, args[1]));
          return arith::AddFOp::create(b, loc, args[2], product);
        });

    // With dropout O = (P o F) V: V's weights are P o F and P's gradient
    // is dP o F.
    Value weights = probs;
    if (p.dropout > 0.0) {
      Value factors = buildDropoutFactors(b, loc, p);
      weights = multiplyScores(b, loc, p, probs, factors);
      dP = multiplyScores(b, loc, p, dP, factors);
    }

    // dS = P o (dP - D).
    Value dS = generic(
        b, loc, ValueRange{probs, dP, delta},
        tensor::EmptyOp::create(b, loc, scoreShape, f32),
        {id4, id4, rows4, id4}, "pppp",
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::MulFOp::create(
              b, loc, args[0], arith::SubFOp::create(b, loc, args[1], args[2]));
        });

    // scale * acc written in `type` (a Q/K/V-like tensor in the layout),
    // from the canonical f32 [n, heads, rows, d] accumulator.
    auto finish = [&](Value acc, RankedTensorType type, double factor) {
      Type element = type.getElementType();
      return generic(
          b, loc, ValueRange{acc},
          tensor::EmptyOp::create(b, loc, type.getShape(), element),
          {id4,
           AffineMap::get(4, 0, layoutExprs(p.layout, d0, d1, d2, d3), ctx)},
          "pppp", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value value = args[0];
            if (factor != 1.0)
              value = arith::MulFOp::create(b, loc, value,
                                            constantF32(b, loc, factor));
            return fromF32(b, loc, value, element);
          });
    };

    // dQ[n, h, i, x] = scale sum_j dS[n, h, i, j] k[n, j, h/g, x]. Loops
    // (n, h, i, x, j).
    Value dqAcc = weightedKeysOrValues(b, loc, p, dS, p.k, p.rows, p.dQK);

    // dK and dV sum over the query heads h = hk * g + r of each kv head hk
    // and over the rows: the score-space tensors are viewed as
    // [n, h_kv, g, i, j]. Loops (n, hk, r, j, x, i).
    auto byKVHead = [&](Value scores) -> Value {
      return tensor::ExpandShapeOp::create(
          b, loc,
          RankedTensorType::get({p.batches, p.headsKV, group, p.rows, p.keys},
                                f32),
          scores, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    };
    AffineExpr queryHead = d1 * group + d2;
    auto kvGradient = [&](Value scores, Value rowsOperand, int64_t d) {
      return generic(
          b, loc, ValueRange{byKVHead(scores), rowsOperand},
          filled(b, loc, {p.batches, p.headsKV, p.keys, d}, 0.0),
          {AffineMap::get(6, 0, {d0, d1, d2, d5, d3}, ctx),
           AffineMap::get(6, 0, layoutExprs(p.layout, d0, queryHead, d5, d4),
                          ctx),
           AffineMap::get(6, 0, {d0, d1, d3, d4}, ctx)},
          "pprppr", [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
            Value product =
                arith::MulFOp::create(b, loc, args[0], toF32(b, loc, args[1]));
            return arith::AddFOp::create(b, loc, args[2], product);
          });
    };
    SmallVector<Value> results = {
        finish(dqAcc, cast<RankedTensorType>(op.getDq().getType()), p.scale),
        finish(kvGradient(dS, p.q, p.dQK),
               cast<RankedTensorType>(op.getDk().getType()), p.scale),
        finish(kvGradient(weights, op.getDO(), p.dV),
               cast<RankedTensorType>(op.getDv().getType()), 1.0)};

    if (Value dbias = op.getDBias())
      results.push_back(buildBiasGradient(
          b, loc, p, dS, cast<RankedTensorType>(dbias.getType())));
    if (Value dOffset = op.getDSoftmaxOffset())
      results.push_back(buildSoftmaxOffsetGradient(
          b, loc, p, op.getLse(), delta,
          cast<RankedTensorType>(dOffset.getType())));
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The GEMM
//===----------------------------------------------------------------------===//

/// The map of a stored GEMM operand's element (or of its scale, with the
/// K index divided by the scale block `kBlock` and the other by
/// `otherBlock`) for the iteration (row, column, k) of op(A) x op(B).
AffineMap gemmOperandMap(MLIRContext *ctx, AffineExpr other, AffineExpr k,
                         bool kIsFirst, int64_t kBlock = 1,
                         int64_t otherBlock = 1) {
  AffineExpr o = otherBlock == 1 ? other : other.floorDiv(otherBlock);
  AffineExpr kk = kBlock == 1 ? k : k.floorDiv(kBlock);
  return AffineMap::get(3, 0,
                        kIsFirst ? ArrayRef<AffineExpr>{kk, o}
                                 : ArrayRef<AffineExpr>{o, kk},
                        ctx);
}

/// DGELU_BGRAD's bias gradient: the column sums of the f32 [M, N] `d`.
Value buildReferenceColumnSums(OpBuilder &b, Location loc, Value d, int64_t n) {
  MLIRContext *ctx = b.getContext();
  return generic(
      b, loc, {d}, filled(b, loc, {n}, 0.0),
      {b.getMultiDimIdentityMap(2),
       AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx)},
      "rp", [&](OpBuilder &b, Location loc, ValueRange args) {
        return arith::AddFOp::create(b, loc, args[1], args[0]).getResult();
      });
}

/// BGRADB's bias gradient: the row sums of op(A), each element dequantized
/// (times its per_tensor or MXFP8 scale; block modes have no BGRADB).
Value buildReferenceRowSumsOfA(OpBuilder &b, Location loc, ScaledMatmulOp op,
                               int64_t m) {
  MLIRContext *ctx = b.getContext();
  bool kFirst = op.getTransposeA(), fp8 = op.hasFP8Operands();
  AffineExpr r = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx);
  auto twoD = [&](AffineExpr kIndex) {
    return AffineMap::get(2, 0,
                          kFirst ? ArrayRef<AffineExpr>{kIndex, r}
                                 : ArrayRef<AffineExpr>{r, kIndex},
                          ctx);
  };
  SmallVector<Value> inputs = {op.getA()};
  SmallVector<AffineMap> maps = {twoD(c)};
  bool mxfp8 = fp8 && op.getAScalingMode() == ScalingMode::mxfp8_1x32;
  if (fp8) {
    inputs.push_back(op.getAScaleInv());
    maps.push_back(mxfp8 ? twoD(c.floorDiv(32))
                         : AffineMap::get(2, 0, {}, ctx));
  }
  maps.push_back(AffineMap::get(2, 0, {r}, ctx));
  return generic(
      b, loc, inputs, filled(b, loc, {m}, 0.0), maps, "pr",
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value x = emitExtToF32(b, loc, args[0]);
        if (fp8)
          x = arith::MulFOp::create(
              b, loc, x, mxfp8 ? emitE8M0ToF32(b, loc, args[1]) : args[1]);
        return arith::AddFOp::create(b, loc, args.back(), x).getResult();
      });
}

/// te.scaled_matmul as the dense formula: every product of op(A) and op(B)
/// dequantized (the element times its MXFP8 or block scale, read through
/// a floordiv map from the mode's stated scale shape), summed over K in
/// f32, times alpha for per_tensor operands; then the epilogue as the op
/// states it.
struct ScaledMatmulOpReferenceDecomposition : OpRewritePattern<ScaledMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScaledMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> gap = getReferenceDecompositionGap(op))
      return rewriter.notifyMatchFailure(op, *gap);
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *ctx = b.getContext();
    auto [m, n, k] = op.getProblemSize();
    AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx),
               kk = getAffineDimExpr(2, ctx);
    bool aKFirst = op.getTransposeA(), bKFirst = !op.getTransposeB();

    SmallVector<Value> inputs = {op.getA(), op.getB()};
    SmallVector<AffineMap> maps = {gemmOperandMap(ctx, i, kk, aKFirst),
                                   gemmOperandMap(ctx, j, kk, bKFirst)};
    bool fp8 = op.hasFP8Operands();
    bool perTensor = fp8 && op.getAScalingMode() == ScalingMode::per_tensor;
    bool blockScales = fp8 && !perTensor;
    auto scaleMap = [&](ScalingMode mode, AffineExpr other, bool kFirst) {
      switch (mode) {
      case ScalingMode::mxfp8_1x32:
        return gemmOperandMap(ctx, other, kk, kFirst, 32);
      case ScalingMode::block_1x128:
        return gemmOperandMap(ctx, other, kk, kFirst, 128);
      case ScalingMode::block_128x128:
        return gemmOperandMap(ctx, other, kk, kFirst, 128, 128);
      case ScalingMode::per_tensor:
        break;
      }
      llvm_unreachable("per_tensor has no block scale");
    };
    if (blockScales) {
      inputs.append({op.getAScaleInv(), op.getBScaleInv()});
      maps.push_back(scaleMap(op.getAScalingMode(), i, aKFirst));
      maps.push_back(scaleMap(op.getBScalingMode(), j, bKFirst));
    }
    maps.push_back(AffineMap::get(3, 0, {i, j}, ctx));
    auto scaleValue = [&](OpBuilder &b, Location loc, Value scale) {
      return isa<Float8E8M0FNUType>(scale.getType())
                 ? emitE8M0ToF32(b, loc, scale)
                 : scale;
    };
    Value sums = generic(
        b, loc, inputs, filled(b, loc, {m, n}, 0.0), maps, "ppr",
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value x = emitExtToF32(b, loc, args[0]);
          Value y = emitExtToF32(b, loc, args[1]);
          if (blockScales) {
            x = arith::MulFOp::create(b, loc, x, scaleValue(b, loc, args[2]));
            y = arith::MulFOp::create(b, loc, y, scaleValue(b, loc, args[3]));
          }
          return arith::AddFOp::create(b, loc, args.back(),
                                       arith::MulFOp::create(b, loc, x, y))
              .getResult();
        });

    // P = alpha * sums + C, then bias and GELU, or dGELU: f32 [M, N].
    AffineMap id2 = b.getMultiDimIdentityMap(2);
    AffineMap scalar2 = AffineMap::get(2, 0, {}, ctx);
    SmallVector<Value> epilogueInputs = {sums};
    SmallVector<AffineMap> epilogueMaps = {id2};
    auto add = [&](Value value, AffineMap map) {
      epilogueInputs.push_back(value);
      epilogueMaps.push_back(map);
    };
    if (perTensor) {
      add(op.getAScaleInv(), scalar2);
      add(op.getBScaleInv(), scalar2);
    }
    if (Value c = op.getC())
      add(c, id2);
    epilogueMaps.push_back(id2);
    Value pre = generic(
        b, loc, epilogueInputs, filled(b, loc, {m, n}, 0.0), epilogueMaps, "pp",
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value value = args[0];
          unsigned next = 1;
          if (perTensor) {
            value = arith::MulFOp::create(
                b, loc, value, arith::MulFOp::create(b, loc, args[1], args[2]));
            next = 3;
          }
          if (op.getC())
            value = arith::AddFOp::create(b, loc, value,
                                          emitExtToF32(b, loc, args[next]));
          return value;
        });
    if (Value bias = op.getBias())
      pre = generic(
          b, loc, {pre, bias}, filled(b, loc, {m, n}, 0.0),
          {id2, AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx), id2},
          "pp", [&](OpBuilder &b, Location loc, ValueRange args) {
            return arith::AddFOp::create(b, loc, args[0],
                                         emitExtToF32(b, loc, args[1]))
                .getResult();
          });
    Value d = pre;
    if (op.getGelu())
      d = generic(b, loc, {pre}, filled(b, loc, {m, n}, 0.0), {id2, id2}, "pp",
                  [&](OpBuilder &b, Location loc, ValueRange args) {
                    return emitGelu(b, loc, args[0]);
                  });
    if (Value input = op.getGeluInput())
      d = generic(
          b, loc, {pre, input}, filled(b, loc, {m, n}, 0.0), {id2, id2, id2},
          "pp", [&](OpBuilder &b, Location loc, ValueRange args) {
            return arith::MulFOp::create(
                       b, loc, args[0],
                       emitGeluGrad(b, loc, emitExtToF32(b, loc, args[1])))
                .getResult();
          });

    SmallVector<Value> results;
    RankedTensorType dType = op.getD().getType();
    auto rounded = [&](Value value, RankedTensorType type) {
      Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                           type.getElementType());
      int64_t rank = type.getRank();
      SmallVector<AffineMap> ids(2, b.getMultiDimIdentityMap(rank));
      return linalg::GenericOp::create(
                 b, loc, TypeRange{type}, ValueRange{value}, ValueRange{init},
                 ids, iterators(rank == 1 ? "p" : "pp"),
                 [&](OpBuilder &b, Location loc, ValueRange args) {
                   linalg::YieldOp::create(
                       b, loc,
                       emitTruncFromF32(b, loc, args[0],
                                        type.getElementType()));
                 })
          .getResult(0);
    };
    if (op.hasFP8Output()) {
      // D_fp8 = cast(D * out_scale); amax = max |D| over its non-NaN
      // elements, from 0.
      Value scaled = generic(
          b, loc, {d, op.getOutScale()}, filled(b, loc, {m, n}, 0.0),
          {id2, scalar2, id2}, "pp",
          [&](OpBuilder &b, Location loc, ValueRange args) {
            return arith::MulFOp::create(b, loc, args[0], args[1]).getResult();
          });
      results.push_back(rounded(scaled, dType));
      Value amax = generic(b, loc, {d}, filled(b, loc, {}, 0.0),
                           {id2, AffineMap::get(2, 0, {}, ctx)}, "rr",
                           [&](OpBuilder &b, Location loc, ValueRange args) {
                             return arith::MaxNumFOp::create(
                                        b, loc, args[1],
                                        math::AbsFOp::create(b, loc, args[0]))
                                 .getResult();
                           });
      results.push_back(amax);
    } else {
      results.push_back(rounded(d, dType));
    }
    if (Value preGelu = op.getPreGeluResult())
      results.push_back(
          rounded(pre, cast<RankedTensorType>(preGelu.getType())));
    if (Value biasGrad = op.getBiasGradResult()) {
      auto type = cast<RankedTensorType>(biasGrad.getType());
      Value sumsOf = op.getGeluInput()
                         ? buildReferenceColumnSums(b, loc, d, n)
                         : buildReferenceRowSumsOfA(b, loc, op, m);
      results.push_back(rounded(sumsOf, type));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// An i64 tensor of `shape` filled with 0.
Value zerosI64(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, b.getI64Type());
  Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// te.grouped_matmul as the dense formula: row r belongs to the group g
/// with split prefix sums ends[g-1] <= r < ends[g] (the number of groups
/// before the last that end at or before r); its products with B[g] are
/// dequantized as te.scaled_matmul's reference dequantizes them, summed
/// over K in f32, scaled by group g's per_tensor scales, plus C and group
/// g's bias.
struct GroupedMatmulOpReferenceDecomposition
    : OpRewritePattern<GroupedMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GroupedMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> gap = getReferenceDecompositionGap(op))
      return rewriter.notifyMatchFailure(op, *gap);
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    MLIRContext *ctx = b.getContext();
    RankedTensorType dType = op.getD().getType();
    int64_t tokens = dType.getDimSize(0), n = dType.getDimSize(1);
    int64_t groups = op.getNumGroups();
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);

    // ends[g] = sum of splits[h] for h <= g.
    Value ends = generic(
        b, loc, {op.getSplits()}, zerosI64(b, loc, {groups}),
        {AffineMap::get(2, 0, {d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
        "pr", [&](OpBuilder &b, Location loc, ValueRange args) {
          Value g = linalg::IndexOp::create(b, loc, 0);
          Value h = linalg::IndexOp::create(b, loc, 1);
          Value take =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, h, g);
          Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
          return arith::AddIOp::create(
                     b, loc, args[1],
                     arith::SelectOp::create(b, loc, take, args[0], zero))
              .getResult();
        });
    Value rowGroup = generic(
        b, loc, {ends}, zerosI64(b, loc, {tokens}),
        {AffineMap::get(2, 0, {d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
        "pr", [&](OpBuilder &b, Location loc, ValueRange args) {
          Value r = arith::IndexCastOp::create(
              b, loc, b.getI64Type(), linalg::IndexOp::create(b, loc, 0));
          Value g = linalg::IndexOp::create(b, loc, 1);
          Value counts = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::ult, g,
                  arith::ConstantIndexOp::create(b, loc, groups - 1)),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, args[0],
                                    r));
          return arith::AddIOp::create(
                     b, loc, args[1],
                     arith::ExtUIOp::create(b, loc, b.getI64Type(), counts))
              .getResult();
        });

    bool fp8 = op.hasFP8Operands();
    ScalingMode aMode = op.getAScalingMode(), bMode = op.getBScalingMode();
    bool perTensor = fp8 && aMode == ScalingMode::per_tensor;
    bool blockScales = fp8 && !perTensor;
    bool transposeB = op.getTransposeB();
    auto blockOf = [](ScalingMode mode) -> int64_t {
      return mode == ScalingMode::mxfp8_1x32 ? 32 : 128;
    };
    auto scaleValue = [&](OpBuilder &b, Location loc, Value scale) {
      return isa<Float8E8M0FNUType>(scale.getType())
                 ? emitE8M0ToF32(b, loc, scale)
                 : scale;
    };
    // Iterations (r, j, k): A and its scales by map, B by group.
    SmallVector<Value> inputs = {op.getA(), rowGroup};
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {d0, d2}, ctx),
                                   AffineMap::get(3, 0, {d0}, ctx)};
    if (blockScales) {
      inputs.push_back(op.getAScaleInv());
      maps.push_back(
          AffineMap::get(3, 0, {d0, d2.floorDiv(blockOf(aMode))}, ctx));
    }
    maps.push_back(AffineMap::get(3, 0, {d0, d1}, ctx));
    Value sums = generic(
        b, loc, inputs, filled(b, loc, {tokens, n}, 0.0), maps, "ppr",
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value g =
              arith::IndexCastOp::create(b, loc, b.getIndexType(), args[1]);
          Value j = linalg::IndexOp::create(b, loc, 1);
          Value k = linalg::IndexOp::create(b, loc, 2);
          auto at = [&](Value other, Value kIndex) {
            return transposeB ? SmallVector<Value>{g, other, kIndex}
                              : SmallVector<Value>{g, kIndex, other};
          };
          Value x = emitExtToF32(b, loc, args[0]);
          Value y = emitExtToF32(
              b, loc, tensor::ExtractOp::create(b, loc, op.getB(), at(j, k)));
          if (blockScales) {
            x = arith::MulFOp::create(b, loc, x, scaleValue(b, loc, args[2]));
            auto c = [&](int64_t v) {
              return arith::ConstantIndexOp::create(b, loc, v);
            };
            Value kBlock = arith::DivUIOp::create(b, loc, k, c(blockOf(bMode)));
            Value other = bMode == ScalingMode::block_128x128
                              ? arith::DivUIOp::create(b, loc, j, c(128))
                              : j;
            Value scale = tensor::ExtractOp::create(b, loc, op.getBScaleInv(),
                                                    at(other, kBlock));
            y = arith::MulFOp::create(b, loc, y, scaleValue(b, loc, scale));
          }
          return arith::AddFOp::create(b, loc, args.back(),
                                       arith::MulFOp::create(b, loc, x, y))
              .getResult();
        });

    AffineMap id2 = b.getMultiDimIdentityMap(2);
    SmallVector<Value> epilogueInputs = {sums, rowGroup};
    SmallVector<AffineMap> epilogueMaps = {id2,
                                           AffineMap::get(2, 0, {d0}, ctx)};
    if (Value c = op.getC()) {
      epilogueInputs.push_back(c);
      epilogueMaps.push_back(id2);
    }
    epilogueMaps.push_back(id2);
    Value init = tensor::EmptyOp::create(b, loc, dType.getShape(),
                                         dType.getElementType());
    Value d =
        linalg::GenericOp::create(
            b, loc, TypeRange{dType}, epilogueInputs, ValueRange{init},
            epilogueMaps, iterators("pp"),
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value g =
                  arith::IndexCastOp::create(b, loc, b.getIndexType(), args[1]);
              Value value = args[0];
              if (perTensor)
                value = arith::MulFOp::create(
                    b, loc, value,
                    arith::MulFOp::create(
                        b, loc,
                        tensor::ExtractOp::create(b, loc, op.getAScaleInv(), g),
                        tensor::ExtractOp::create(b, loc, op.getBScaleInv(),
                                                  g)));
              if (op.getC())
                value = arith::AddFOp::create(b, loc, value,
                                              emitExtToF32(b, loc, args[2]));
              if (Value bias = op.getBias()) {
                Value j = linalg::IndexOp::create(b, loc, 1);
                value = arith::AddFOp::create(
                    b, loc, value,
                    emitExtToF32(b, loc,
                                 tensor::ExtractOp::create(b, loc, bias,
                                                           ValueRange{g, j})));
              }
              linalg::YieldOp::create(
                  b, loc,
                  emitTruncFromF32(b, loc, value, dType.getElementType()));
            })
            .getResult(0);
    rewriter.replaceOp(op, d);
    return success();
  }
};

struct TEDecomposeReferencePass
    : te::impl::TEDecomposeReferenceBase<TEDecomposeReferencePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A configuration without a reference is an error that names it, so
    // that a differential check never silently compares the production
    // lowering with itself.
    bool gaps = false;
    module.walk([&](Operation *op) {
      if (std::optional<std::string> gap = getReferenceDecompositionGap(op)) {
        op->emitError(*gap);
        gaps = true;
      }
    });
    if (gaps)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateTEReferenceDecompositionPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::te::populateTEReferenceDecompositionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionOpReferenceDecomposition,
               AttentionBackwardOpReferenceDecomposition,
               ScaledMatmulOpReferenceDecomposition,
               GroupedMatmulOpReferenceDecomposition>(patterns.getContext());
}
