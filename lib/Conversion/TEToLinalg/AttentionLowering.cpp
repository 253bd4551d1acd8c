//===- AttentionLowering.cpp - te.attention as online-softmax loops -------===//
//
// The host lowering of te.attention: the online softmax (running max m,
// running denominator l, running weighted sum of V rows) over the visible
// keys of each query row, so memory stays O(s * d) and the [s_q, s_kv] score
// matrix never exists. The key range of a row is computed from the mask,
// window and sequence lengths, so masked keys cost nothing. The forward pass
// has a blocked form (tiles of query rows against chunks of keys, see
// "The blocked forward path") for the configurations without per-element
// terms, and a per-row form (one key at a time) for the rest and for the
// backward pass.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/AttentionMath.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <memory>

using namespace mlir;
using namespace mlir::te;

namespace {

/// Small builders for the index arithmetic of the loop nest.
struct IndexMath {
  OpBuilder &b;
  Location loc;

  Value c(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value le(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// Element `index` of an i32 vector tensor, as an index.
  Value load(Value tensor, Value index) {
    Value element = tensor::ExtractOp::create(b, loc, tensor, index);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  }
};

/// Indices of the first element of the row (batch, position, head) of a
/// Q/K/V/O tensor in `layout`; for thd `position` is the token index.
SmallVector<Value> rowIndices(QKVLayout layout, Value batch, Value position,
                              Value head, Value zero) {
  return llvm::to_vector(arrangeInLayout(layout, batch, position, head, zero));
}

/// Reads a row of `tensor` as a vector<d x f32>.
Value readRow(OpBuilder &b, Location loc, Value tensor,
              ArrayRef<Value> indices) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Type element = type.getElementType();
  auto vectorType = VectorType::get({type.getShape().back()}, element);
  Value padding = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  Value row = vector::TransferReadOp::create(
      b, loc, vectorType, tensor, indices, padding, ArrayRef<bool>{true});
  if (element.isF32())
    return row;
  return arith::ExtFOp::create(
      b, loc, VectorType::get(vectorType.getShape(), b.getF32Type()), row);
}

/// A broadcastable operand's element at logical indices `indices`: each
/// dimension of size 1 reads index 0.
Value readBroadcast(OpBuilder &b, Location loc, Value tensor,
                    ArrayRef<Value> indices) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> actual;
  for (auto [size, index] : llvm::zip(type.getShape(), indices))
    actual.push_back(size == 1 ? zero : index);
  return tensor::ExtractOp::create(b, loc, tensor, actual);
}

/// Everything about an attention op (forward or backward) that the loops
/// need, with the operands already converted.
struct AttentionConfig {
  QKVLayout layout;
  MaskKind maskKind;
  bool thd, padding, causal;
  /// Whether the diagonal of the causal mask, the window and ALiBi is
  /// aligned bottom-right (at len_kv - len_q) rather than top-left.
  bool bottomRight;
  int64_t windowLeft, windowRight;
  BiasKind biasKind;
  SoftmaxKind softmax;
  float scale;
  /// Dropout probability; 0 when there is none.
  float dropout;
  int64_t batches, seqQ, headsQ, seqKV, headsKV, numSequences;
  Value q, k, v, cuQ, cuKV, offQ, offKV, lenQ, lenKV, mask, bias, slopes,
      softmaxOffset, rngState;

  template <typename OpT>
  static AttentionConfig get(OpT op, typename OpT::Adaptor adaptor) {
    AttentionConfig c;
    c.layout = op.getLayout();
    c.maskKind = op.getMaskKind();
    c.thd = c.layout == QKVLayout::thd;
    c.padding = isPaddingMask(c.maskKind) || c.thd;
    c.causal = isCausalMask(c.maskKind);
    c.bottomRight = op.isBottomRightDiagonal();
    std::tie(c.windowLeft, c.windowRight) = op.getWindowBounds();
    c.biasKind = op.getBiasKind();
    c.softmax = op.getSoftmaxKind();
    c.scale = static_cast<float>(*op.getEffectiveScale());
    c.dropout = op.getDropout().convertToFloat();
    c.rngState = adaptor.getRngState();
    c.q = adaptor.getQ();
    c.k = adaptor.getK();
    c.v = adaptor.getV();
    c.cuQ = adaptor.getCuSeqlensQ();
    c.cuKV = adaptor.getCuSeqlensKv();
    c.offQ = adaptor.getSeqOffsetsQ();
    c.offKV = adaptor.getSeqOffsetsKv();
    c.lenQ = adaptor.getSeqlensQ();
    c.lenKV = adaptor.getSeqlensKv();
    c.mask = adaptor.getMask();
    c.bias = adaptor.getBias();
    c.slopes = adaptor.getAlibiSlopes();
    c.softmaxOffset = adaptor.getSoftmaxOffset();
    std::array<int64_t, 3> qDims = c.dims(c.q), kDims = c.dims(c.k);
    c.batches = qDims[0];
    c.seqQ = qDims[1];
    c.headsQ = qDims[2];
    c.seqKV = kDims[1];
    c.headsKV = kDims[2];
    c.numSequences =
        c.thd ? cast<RankedTensorType>(c.cuQ.getType()).getDimSize(0) - 1
              : c.batches;
    return c;
  }

  /// (batch, sequence length, heads) of a Q/K/V tensor; thd: (1, tokens, h).
  std::array<int64_t, 3> dims(Value tensor) const {
    HeadTensorDims d = getHeadTensorDims(
        layout, cast<RankedTensorType>(tensor.getType()).getShape());
    return {layout == QKVLayout::thd ? 1 : d.batch, d.seq, d.heads};
  }

  /// Indices of the LSE element of (batch, row, head).
  SmallVector<Value> lseIndices(Value batch, Value row, Value head,
                                Value zero) const {
    if (thd)
      return {row, head, zero};
    return {batch, head, row, zero};
  }
};

/// Where a query row sits and which keys it sees: positions [lo, hi) of its
/// sequence, whose keys start at token `kvBase`; `diagonal` is the key
/// position on the row's diagonal (position + diag), from which windows and
/// ALiBi distances are measured.
struct RowGeometry {
  Value sequence, position, diagonal, kvBase, lo, hi;
};

/// The geometry stays inside the tensors whatever the index operands hold:
/// lengths and offsets are clamped to the tensors' extents, so a kernel
/// given bad indices computes something meaningless but never reads or
/// writes out of bounds. (te-insert-checks reports such indices.)
RowGeometry computeRowGeometry(OpBuilder &b, Location loc,
                               const AttentionConfig &c, Value batch,
                               Value row) {
  IndexMath im{b, loc};
  Value zero = im.c(0);
  auto clamp = [&](IndexMath &im, Value x, Value hi) {
    return im.min(im.max(x, im.c(0)), hi);
  };
  Value sequence = batch, position = row, lenQ = im.c(c.seqQ),
        lenKV = im.c(c.seqKV), kvBase = zero;
  if (c.thd) {
    // Linear search: the sequence whose q tokens contain `row`. A token of
    // no sequence keeps lenKV = 0 (no keys: a zero row).
    SmallVector<Value> init = {zero, zero, zero, zero, zero};
    auto search = scf::ForOp::create(
        b, loc, zero, im.c(c.numSequences), im.c(1), init,
        [&](OpBuilder &b, Location loc, Value n, ValueRange found) {
          IndexMath im{b, loc};
          Value next = im.add(n, im.c(1));
          Value qLen = im.sub(im.load(c.cuQ, next), im.load(c.cuQ, n));
          Value kvLen = im.sub(im.load(c.cuKV, next), im.load(c.cuKV, n));
          Value qStart = c.offQ ? im.load(c.offQ, n) : im.load(c.cuQ, n);
          Value kvStart =
              clamp(im, c.offKV ? im.load(c.offKV, n) : im.load(c.cuKV, n),
                    im.c(c.seqKV));
          kvLen = clamp(im, kvLen, im.sub(im.c(c.seqKV), kvStart));
          Value inside = arith::AndIOp::create(
              b, loc, im.le(qStart, row), im.lt(row, im.add(qStart, qLen)));
          SmallVector<Value> chosen = {
              im.select(inside, n, found[0]),
              im.select(inside, im.sub(row, qStart), found[1]),
              im.select(inside, qLen, found[2]),
              im.select(inside, kvLen, found[3]),
              im.select(inside, kvStart, found[4])};
          scf::YieldOp::create(b, loc, chosen);
        });
    sequence = search.getResult(0);
    position = search.getResult(1);
    lenQ = search.getResult(2);
    lenKV = search.getResult(3);
    kvBase = search.getResult(4);
  } else if (isPaddingMask(c.maskKind)) {
    lenQ = clamp(im, im.load(c.lenQ, batch), im.c(c.seqQ));
    lenKV = clamp(im, im.load(c.lenKV, batch), im.c(c.seqKV));
  }

  VisibleKeys keys = emitVisibleKeys(
      b, loc, {c.padding, c.causal, c.bottomRight, c.windowLeft, c.windowRight},
      position, lenQ, lenKV, im.c(c.seqKV));
  return {sequence, position, keys.diagonal, kvBase, keys.lo, keys.hi};
}

/// The bias element of (row, key) as f32.
Value readBias(OpBuilder &b, Location loc, const AttentionConfig &c,
               const RowGeometry &g, Value head, Value key) {
  return emitExtToF32(
      b, loc,
      readBroadcast(b, loc, c.bias, {g.sequence, head, g.position, key}));
}

/// The logit x of (row, key) from q . k (`dot`), the scale and the bias.
Value emitLogit(OpBuilder &b, Location loc, const AttentionConfig &c,
                const RowGeometry &g, Value head, Value key, Value dot) {
  IndexMath im{b, loc};
  Value scale =
      arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(c.scale));
  if (c.biasKind == BiasKind::pre_scale)
    return arith::MulFOp::create(
        b, loc,
        arith::AddFOp::create(b, loc, dot, readBias(b, loc, c, g, head, key)),
        scale);
  Value logit = arith::MulFOp::create(b, loc, dot, scale);
  if (c.biasKind == BiasKind::post_scale)
    logit =
        arith::AddFOp::create(b, loc, logit, readBias(b, loc, c, g, head, key));
  if (c.biasKind == BiasKind::alibi) {
    SmallVector<Value> at = {head};
    if (cast<RankedTensorType>(c.slopes.getType()).getRank() == 2)
      at = {g.sequence, head};
    Value slope = tensor::ExtractOp::create(b, loc, c.slopes, at);
    // -slope * |i + diag - j|.
    Value distance = im.sub(key, g.diagonal);
    Value magnitude = im.max(distance, im.sub(im.c(0), distance));
    Value distanceF = arith::UIToFPOp::create(
        b, loc, b.getF32Type(),
        arith::IndexCastOp::create(b, loc, b.getI64Type(), magnitude));
    logit = arith::SubFOp::create(
        b, loc, logit, arith::MulFOp::create(b, loc, slope, distanceF));
  }
  return logit;
}

/// log of the extra softmax denominator term: 0 (e^0) for off_by_one,
/// alpha_h for learnable; null for vanilla.
Value emitExtraLogit(OpBuilder &b, Location loc, const AttentionConfig &c,
                     Value head) {
  if (c.softmax == SoftmaxKind::vanilla)
    return {};
  if (c.softmax == SoftmaxKind::off_by_one)
    return emitF32Constant(b, loc, 0.0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return tensor::ExtractOp::create(b, loc, c.softmaxOffset,
                                   ValueRange{zero, head, zero, zero});
}

/// Dropout's keep factor for (batch, head, query row, key token): te's
/// documented hash (TECommon's emitDropoutFactor) on the op's rng_state.
Value emitDropoutFactor(OpBuilder &b, Location loc, const AttentionConfig &c,
                        Value batch, Value head, Value row, Value token) {
  Value seed = tensor::ExtractOp::create(
      b, loc, c.rngState,
      ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
  Value offset = tensor::ExtractOp::create(
      b, loc, c.rngState,
      ValueRange{arith::ConstantIndexOp::create(b, loc, 1)});
  return te::emitDropoutFactor(b, loc, seed, offset, batch, head, row, token,
                               c.headsQ, c.seqQ, c.seqKV, c.dropout);
}

using KeyBody = function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                Value key, ValueRange state)>;

/// Runs `body` for each visible key of a row, carrying `init`; with an
/// arbitrary mask, excluded keys keep the carried values.
scf::ForOp forEachVisibleKey(OpBuilder &b, Location loc,
                             const AttentionConfig &c, const RowGeometry &g,
                             Value head, ValueRange init, KeyBody body) {
  return scf::ForOp::create(
      b, loc, g.lo, g.hi, arith::ConstantIndexOp::create(b, loc, 1), init,
      [&](OpBuilder &b, Location loc, Value key, ValueRange state) {
        if (!c.mask) {
          scf::YieldOp::create(b, loc, body(b, loc, key, state));
          return;
        }
        Value excluded =
            readBroadcast(b, loc, c.mask, {g.sequence, head, g.position, key});
        auto ifOp = scf::IfOp::create(
            b, loc, excluded,
            [&](OpBuilder &b, Location loc) {
              scf::YieldOp::create(b, loc, state);
            },
            [&](OpBuilder &b, Location loc) {
              scf::YieldOp::create(b, loc, body(b, loc, key, state));
            });
        scf::YieldOp::create(b, loc, ifOp.getResults());
      });
}

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type element, TypedAttr value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, element);
  Value fill = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, fill, empty).getResult(0);
}

/// The f32 accumulator `acc` rounded to `type`'s element type.
Value castAccumulator(OpBuilder &b, Location loc, Value acc,
                      RankedTensorType type) {
  if (type.getElementType().isF32())
    return acc;
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> loops(type.getRank(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, acc, init, maps, loops,
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(
                   b, loc,
                   emitTruncFromF32(b, loc, args[0], type.getElementType()));
             })
      .getResult(0);
}

/// Adds `delta` (vector<d x f32>) to the row at `indices` of the f32 tensor
/// `acc`.
Value accumulateRow(OpBuilder &b, Location loc, Value acc,
                    ArrayRef<Value> indices, Value delta) {
  Value sum =
      arith::AddFOp::create(b, loc, readRow(b, loc, acc, indices), delta);
  return vector::TransferWriteOp::create(b, loc, sum, acc, indices,
                                         ArrayRef<bool>{true})
      .getResult();
}

Value accumulateElement(OpBuilder &b, Location loc, Value acc,
                        ArrayRef<Value> indices, Value delta) {
  Value current = tensor::ExtractOp::create(b, loc, acc, indices);
  Value sum = arith::AddFOp::create(b, loc, current, delta);
  return tensor::InsertOp::create(b, loc, sum, acc, indices);
}

Value dotProduct(OpBuilder &b, Location loc, Value x, Value y) {
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                     arith::MulFOp::create(b, loc, x, y),
                                     arith::FastMathFlags::reassoc);
}

Value splat(OpBuilder &b, Location loc, Value scalar, VectorType type) {
  return vector::BroadcastOp::create(b, loc, type, scalar);
}

/// The end of a query row's online softmax: folds in the extra denominator
/// term of the softmax kind and returns O = acc / l (in O's element type)
/// and LSE = m + log l of the row. A row that saw nothing (l = 0) gets
/// O = 0 and LSE = -inf.
std::pair<Value, Value> finishForwardRow(OpBuilder &b, Location loc,
                                         const AttentionConfig &c,
                                         RankedTensorType oType, Value head,
                                         Value m, Value l, Value acc) {
  auto accType = cast<VectorType>(acc.getType());
  Value negInf = emitF32Constant(b, loc, -INFINITY);
  // The extra denominator term, folded in like a key with a zero V row.
  if (Value extra = emitExtraLogit(b, loc, c, head)) {
    Value mNew = arith::MaximumFOp::create(b, loc, m, extra);
    Value correction =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, mNew));
    l = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, l, correction),
        math::ExpOp::create(b, loc,
                            arith::SubFOp::create(b, loc, extra, mNew)));
    acc =
        arith::MulFOp::create(b, loc, acc, splat(b, loc, correction, accType));
    m = mNew;
  }

  Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l,
                                     emitF32Constant(b, loc, 0.0));
  Value safeL =
      arith::SelectOp::create(b, loc, seen, l, emitF32Constant(b, loc, 1.0));
  Value rowOut =
      arith::DivFOp::create(b, loc, acc, splat(b, loc, safeL, accType));
  Value lseValue = arith::SelectOp::create(
      b, loc, seen,
      arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, safeL)),
      negInf);
  Type outElement = oType.getElementType();
  if (!outElement.isF32())
    rowOut = arith::TruncFOp::create(
        b, loc, VectorType::get(accType.getShape(), outElement), rowOut);
  return {rowOut, lseValue};
}

/// The results of a tile of query rows: O's rows [count, d_v] and, when
/// the op returns it, the LSE [count], written at the tile's local row
/// indices.
struct ForwardTile {
  Value o, lse;

  /// Writes row `index` of the tile.
  void write(OpBuilder &b, Location loc, Value index,
             std::pair<Value, Value> row) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    o = vector::TransferWriteOp::create(
            b, loc, row.first, o, ValueRange{index, zero}, ArrayRef<bool>{true})
            .getResult();
    if (lse)
      lse = tensor::InsertOp::create(b, loc, row.second, lse, index);
  }
};

using TileBody = function_ref<ForwardTile(OpBuilder &, Location, Value batch,
                                          Value head, Value kvHead, Value first,
                                          Value count, ForwardTile tile)>;

/// The dimension of the query position in a Q/K/V/O tensor in `layout`.
unsigned positionDim(QKVLayout layout) {
  return *getLayoutPosition(layout, HeadTensorDim::Seq);
}

/// The batch dimension of a Q/K/V/O tensor in `layout`; none for thd.
std::optional<unsigned> batchDimension(QKVLayout layout) {
  return getLayoutPosition(layout, HeadTensorDim::Batch);
}

/// The head dimension of a Q/K/V/O tensor in `layout`.
unsigned headDimension(QKVLayout layout) {
  return *getLayoutPosition(layout, HeadTensorDim::Heads);
}

/// The forward pass's rows in tiles of `tileRows` query rows of one (batch,
/// head), the tiles of all (batch, head) in parallel: an scf.forall whose
/// iterations each compute a tile (`body`, given the tile's first row, its
/// row count and the slices of O and LSE for its rows) and insert its rows
/// into O and LSE.
/// Every row of O and LSE is written by exactly one iteration.
SmallVector<Value> forEachRowTile(OpBuilder &b, Location loc,
                                  const AttentionConfig &c,
                                  RankedTensorType oType,
                                  RankedTensorType lseType, int64_t tileRows,
                                  TileBody body) {
  int64_t headDimV = oType.getShape().back();
  SmallVector<Value> outputs = {tensor::EmptyOp::create(
      b, loc, oType.getShape(), oType.getElementType())};
  if (lseType)
    outputs.push_back(tensor::EmptyOp::create(b, loc, lseType.getShape(),
                                              lseType.getElementType()));
  auto forall =
      createForall(b, loc,
                   {c.thd ? 1 : c.batches, c.headsQ,
                    static_cast<int64_t>(llvm::divideCeil(c.seqQ, tileRows))},
                   outputs);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  IndexMath im{b, loc};
  SmallVector<Value> ivs = forall.getInductionVars();
  Value batch = ivs[0], head = ivs[1];
  Value first = im.mul(ivs[2], im.c(tileRows));
  Value count = im.min(im.c(tileRows), im.sub(im.c(c.seqQ), first));
  Value kvHead = im.div(head, im.c(c.headsQ / c.headsKV));
  // Each iteration works on the slices of O and LSE holding its rows, so
  // that it writes them in place.
  Value zero = im.c(0);
  ValueRange shared = forall.getRegionIterArgs();
  struct Rows {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    RankedTensorType type;
  };
  auto rowsOf = [&](Value dest, ArrayRef<Value> at, unsigned rowDim,
                    std::optional<int64_t> columns) {
    auto destType = cast<RankedTensorType>(dest.getType());
    int64_t rank = destType.getRank();
    Rows rows{SmallVector<OpFoldResult>(at.begin(), at.end()),
              SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)),
              SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)),
              {}};
    rows.sizes[rowDim] = count;
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    if (columns) {
      rows.sizes.back() = b.getIndexAttr(*columns);
      shape.push_back(*columns);
    }
    rows.type = RankedTensorType::get(shape, destType.getElementType());
    return rows;
  };
  Rows oRows = rowsOf(shared[0], rowIndices(c.layout, batch, first, head, zero),
                      positionDim(c.layout), headDimV);
  ForwardTile tile;
  tile.o = tensor::ExtractSliceOp::create(
      b, loc, oRows.type, shared[0], oRows.offsets, oRows.sizes, oRows.strides);
  Rows lseRows;
  if (lseType) {
    lseRows = rowsOf(shared[1], c.lseIndices(batch, first, head, zero),
                     c.thd ? 0 : 2, std::nullopt);
    tile.lse = tensor::ExtractSliceOp::create(b, loc, lseRows.type, shared[1],
                                              lseRows.offsets, lseRows.sizes,
                                              lseRows.strides);
  }
  tile = body(b, loc, batch, head, kvHead, first, count, tile);

  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, tile.o, shared[0], oRows.offsets, oRows.sizes, oRows.strides);
  if (lseType)
    tensor::ParallelInsertSliceOp::create(b, loc, tile.lse, shared[1],
                                          lseRows.offsets, lseRows.sizes,
                                          lseRows.strides);
  return forall.getResults();
}

//===----------------------------------------------------------------------===//
// The blocked forward path
//===----------------------------------------------------------------------===//
//
// Without an arbitrary mask, a bias tensor, dropout or ragged (thd)
// sequences, every logit is q . k times the scale (minus the ALiBi term) and
// the visible keys of a row form one range. Then the forward pass blocks over
// rows and keys, which is what makes it fast. The score micro-kernel
// (ScoreKernel: f32 outer products, or bf16 pair dots on the target's dot
// unit) sets the block shape, keyChunk keys by blockRows rows, and packs K
// in chunks of keyChunk keys as it reads them; V is copied to f32 in
// head-major order. The query rows of one (batch, head) go in tiles of
// kTileRows whose softmax state lives in small tensors; a tile makes one
// pass over its key chunks, applying each chunk to micro-blocks of
// blockRows rows while the chunk is in the cache:
//   - the micro-block's logits come from the kernel (f32: outer-product
//     accumulations, for each of the d columns one vector load of K^T and
//     one broadcast of each row's q element feeding blockRows FMAs over
//     keyChunk keys, no horizontal sums);
//   - the online softmax runs on vectors of keyChunk logits, one max and
//     one sum reduction per chunk instead of two exp per key;
//   - each V row loaded feeds all rows of the micro-block.
// A micro-block's key range is the union of its rows' ranges; logits outside
// a row's own range are -inf and weigh 0, and a chunk none of its rows sees
// is skipped. K and V are padded with zero keys to whole chunks so a chunk
// never reads out of bounds. The copies are O(s * d), like the inputs; the
// scores are never stored.

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
/// Query rows per tile: each chunk of K and V is used by this many rows
/// while it is in the L1/L2 cache.
constexpr int64_t kTileRows = 64;
/// Register pieces of 16 floats of a row that the V (and, backward, the
/// dK/dV/dQ) accumulation works on at a time, for each row of a micro-block.
constexpr int64_t kGroupPieces = 4;

bool canUseBlockedForward(const AttentionConfig &c) {
  return !c.thd && !c.mask && !c.rngState &&
         (c.biasKind == BiasKind::no_bias || c.biasKind == BiasKind::alibi);
}

using ElementFn = function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)>;

/// A new tensor of `shape` and `elementType` whose element at `indices` is
/// `element(indices)`.
Value generateTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                     Type elementType, ElementFn element) {
  auto type = RankedTensorType::get(shape, elementType);
  Value init = tensor::EmptyOp::create(b, loc, shape, elementType);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(shape.size())};
  SmallVector<utils::IteratorType> loops(shape.size(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{}, init, maps, loops,
             [&](OpBuilder &b, Location loc, ValueRange) {
               SmallVector<Value> indices;
               for (int64_t dim = 0, e = shape.size(); dim < e; ++dim)
                 indices.push_back(linalg::IndexOp::create(b, loc, dim));
               linalg::YieldOp::create(b, loc, element(b, loc, indices));
             })
      .getResult(0);
}

/// A new f32 tensor of `shape` whose element at `indices` is
/// `element(indices)`.
Value generateF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  ElementFn element) {
  return generateTensor(b, loc, shape, b.getF32Type(), element);
}

/// Element `column` of the row (batch, position, head) of a Q/K/V tensor,
/// as f32.
Value readElementF32(OpBuilder &b, Location loc, const AttentionConfig &c,
                     Value tensor, Value batch, Value position, Value head,
                     Value column) {
  SmallVector<Value> at = rowIndices(c.layout, batch, position, head, column);
  return emitExtToF32(b, loc, tensor::ExtractOp::create(b, loc, tensor, at));
}

/// K or V element (batch, token, head, column) in its own type, or 0 for
/// the padding tokens at and past s_kv.
Value readPaddedElement(OpBuilder &b, Location loc, const AttentionConfig &c,
                        Value tensor, Value batch, Value token, Value head,
                        Value column) {
  IndexMath im{b, loc};
  Value last = im.c(c.seqKV - 1);
  Value value = tensor::ExtractOp::create(
      b, loc, tensor,
      rowIndices(c.layout, batch, im.min(token, last), head, column));
  Value zero = arith::ConstantOp::create(
      b, loc, cast<TypedAttr>(b.getZeroAttr(value.getType())));
  return arith::SelectOp::create(b, loc, im.le(token, last), value, zero);
}

/// K or V element (batch, token, head, column) as f32, or 0 for the padding
/// tokens at and past s_kv.
Value readPaddedKV(OpBuilder &b, Location loc, const AttentionConfig &c,
                   Value tensor, Value batch, Value token, Value head,
                   Value column) {
  return emitExtToF32(
      b, loc, readPaddedElement(b, loc, c, tensor, batch, token, head, column));
}

/// Whether any of the rows with `geometry` sees a key of the chunk
/// [key0, key0 + keyChunk): the union of their key ranges meets it.
Value chunkIsSeen(OpBuilder &b, Location loc, ArrayRef<RowGeometry> geometry,
                  Value key0, int64_t keyChunk) {
  IndexMath im{b, loc};
  Value lo = geometry[0].lo, hi = geometry[0].hi;
  for (const RowGeometry &g : geometry.drop_front()) {
    lo = im.min(lo, g.lo);
    hi = im.max(hi, g.hi);
  }
  return arith::AndIOp::create(b, loc, im.lt(key0, hi),
                               im.lt(lo, im.add(key0, im.c(keyChunk))));
}

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

/// The score kernel for `rows` against `columns`: pair dots on `dotUnit`
/// where pairDotFor allows it, else f32 outer products.
std::unique_ptr<ScoreKernel> chooseScoreKernel(const BF16PairDotUnit *dotUnit,
                                               Value rows, Value columns) {
  if (const BF16PairDotUnit *unit = pairDotFor(dotUnit, rows, columns))
    return std::make_unique<PairDotScores>(*unit);
  return std::make_unique<OuterProductScores>();
}

/// The keys of the chunk starting at `key0` (of `keyChunk` keys) as an i32
/// vector, to mask and bias a row's logits of the chunk.
struct ChunkKeys {
  OpBuilder &b;
  Location loc;
  int64_t keyChunk;
  Value keyIndex;

  ChunkKeys(OpBuilder &b, Location loc, Value key0, int64_t keyChunk)
      : b(b), loc(loc), keyChunk(keyChunk) {
    SmallVector<int32_t> offsets(keyChunk);
    for (int64_t j = 0; j < keyChunk; ++j)
      offsets[j] = static_cast<int32_t>(j);
    keyIndex = arith::AddIOp::create(
        b, loc, splatIndex(key0),
        arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(vectorType(), ArrayRef<int32_t>(offsets))));
  }

  VectorType vectorType() const {
    return VectorType::get({keyChunk}, b.getI32Type());
  }

  Value splatIndex(Value index) const {
    return vector::BroadcastOp::create(
        b, loc, vectorType(),
        arith::IndexCastOp::create(b, loc, b.getI32Type(), index));
  }

  /// A row's logits of the chunk with ALiBi applied (for that bias kind),
  /// and which of the chunk's keys the row sees.
  std::pair<Value, Value> biasAndMask(const AttentionConfig &c, Value head,
                                      const RowGeometry &g,
                                      Value logits) const {
    auto chunkType = VectorType::get({keyChunk}, b.getF32Type());
    if (c.biasKind == BiasKind::alibi) {
      SmallVector<Value> at = {head};
      if (cast<RankedTensorType>(c.slopes.getType()).getRank() == 2)
        at = {g.sequence, head};
      Value slope = tensor::ExtractOp::create(b, loc, c.slopes, at);
      // -slope * |i + diag - j|.
      Value distance =
          arith::SubIOp::create(b, loc, keyIndex, splatIndex(g.diagonal));
      Value magnitude = math::AbsIOp::create(b, loc, distance);
      logits = arith::SubFOp::create(
          b, loc, logits,
          arith::MulFOp::create(
              b, loc, splat(b, loc, slope, chunkType),
              arith::SIToFPOp::create(b, loc, chunkType, magnitude)));
    }
    Value visible = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, keyIndex,
                              splatIndex(g.lo)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, keyIndex,
                              splatIndex(g.hi)));
    return {logits, visible};
  }
};

/// scale * q as an f32 [b, h_q, s_q, d_qk] tensor: the rows of the blocked
/// paths' score outer products.
Value emitScaledQueries(OpBuilder &b, Location loc, const AttentionConfig &c,
                        int64_t headDim) {
  return generateF32(
      b, loc, {c.batches, c.headsQ, c.seqQ, headDim},
      [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
        return arith::MulFOp::create(
            b, loc, readElementF32(b, loc, c, c.q, i[0], i[2], i[1], i[3]),
            emitF32Constant(b, loc, c.scale));
      });
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

/// The P V micro-kernel of the blocked forward: for each row of a
/// micro-block, acc_i = correction_i * acc_i + sum_j p_ij v_j over one key
/// chunk, with the layout of V it reads and the scratch the weights p go
/// through. The steps are separate so that the loop can interleave them
/// with each row's softmax: writeWeights and loadScaled per row, then
/// accumulate for the block. f32 FMAs on register pieces today; a tile unit
/// (AMX) is another implementation.
class ValueKernel {
public:
  virtual ~ValueKernel() = default;
  /// V (head dimension `depth`) as accumulate reads it, padded with zero
  /// keys to whole chunks.
  virtual Value packValues(OpBuilder &b, Location loc, const AttentionConfig &c,
                           int64_t depth, BlockShape shape) const = 0;
  /// The scratch of a micro-block's weights.
  virtual Value createScratch(OpBuilder &b, Location loc,
                              BlockShape shape) const = 0;
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
                           Value batch, Value kvHead, Value key0, int64_t depth,
                           BlockShape shape) const = 0;
};

/// P V as f32 FMAs: V copied to f32 rows; each row's accumulators in
/// pieces of 16 floats (one AVX-512 register), in groups of up to
/// kGroupPieces pieces: for each key, the rows' broadcast weights and the
/// group's V pieces feed rows x pieces FMAs into registers.
class FMAValues final : public ValueKernel {
public:
  Value packValues(OpBuilder &b, Location loc, const AttentionConfig &c,
                   int64_t depth, BlockShape shape) const override {
    return emitPaddedRows(b, loc, c, c.v, depth, shape.keyChunk);
  }

  Value createScratch(OpBuilder &b, Location loc,
                      BlockShape shape) const override {
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
                   Value key0, int64_t depth, BlockShape shape) const override {
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

/// The blocked forward pass of one op: tiles of query rows of one (batch,
/// head), each tile going once over its key chunks, each chunk applied to
/// the tile's rows in micro-blocks.
struct BlockedForward {
  const AttentionConfig &c;
  RankedTensorType oType;
  int64_t headDimQK, headDimV;
  /// The kernel of S = scale q k^T, whose shape the loops take, and of
  /// O += P V.
  std::unique_ptr<ScoreKernel> scoreKernel;
  std::unique_ptr<ValueKernel> valueKernel = std::make_unique<FMAValues>();
  /// Keys per chunk, rows per micro-block and per tile (a multiple of
  /// rows).
  int64_t keyChunk, rows, tileRows;
  /// scale * q as [b, h_q, s_q, d_qk] where the kernel reads f32 rows; K
  /// and V packed by their kernels.
  Value qs, kt, vs;

  BlockedForward(const AttentionConfig &c, RankedTensorType oType,
                 const BF16PairDotUnit *dotUnit)
      : c(c), oType(oType),
        headDimQK(cast<RankedTensorType>(c.q.getType()).getShape().back()),
        headDimV(oType.getShape().back()),
        scoreKernel(chooseScoreKernel(dotUnit, c.q, c.k)),
        keyChunk(scoreKernel->getShape().keyChunk),
        rows(scoreKernel->getShape().blockRows),
        tileRows(std::min<int64_t>(kTileRows, llvm::alignTo(c.seqQ, rows))) {}

  void prepare(OpBuilder &b, Location loc) {
    if (scoreKernel->readsF32Rows())
      qs = emitScaledQueries(b, loc, c, headDimQK);
    kt = scoreKernel->packColumns(b, loc, c, c.k, headDimQK);
    vs = valueKernel->packValues(b, loc, c, headDimV, scoreKernel->getShape());
  }

  /// Query row `index` of the tile starting at `first`, clamped to the last
  /// row: rows past s_q repeat it (and write the same values again).
  Value tileRow(IndexMath &im, Value first, Value index) const {
    return im.min(im.add(first, index), im.c(c.seqQ - 1));
  }

  /// The tile of rows [first, first + tileRows) of (batch, head). Its online
  /// softmax state lives in small tensors: m and l [tileRows], the weighted
  /// V sums [tileRows, d_v].
  ForwardTile emitTile(OpBuilder &b, Location loc, Value batch, Value head,
                       Value kvHead, Value first, Value count,
                       ForwardTile results) {
    IndexMath im{b, loc};
    Type f32 = b.getF32Type();
    Value zero = im.c(0), one = im.c(1);
    // The keys any of the tile's rows sees.
    auto range = scf::ForOp::create(
        b, loc, zero, count, one, ValueRange{im.c(c.seqKV), zero},
        [&](OpBuilder &b, Location loc, Value i, ValueRange bounds) {
          IndexMath im{b, loc};
          RowGeometry g =
              computeRowGeometry(b, loc, c, batch, im.add(first, i));
          scf::YieldOp::create(
              b, loc,
              ValueRange{im.min(bounds[0], g.lo), im.max(bounds[1], g.hi)});
        });
    // An empty row's range may lie past s_kv (lo = hi >= s_kv): the chunks
    // stop at s_kv, where the copies of K and V end.
    Value hi = im.min(range.getResult(1), im.c(c.seqKV));
    Value lo = im.min(range.getResult(0), hi);

    SmallVector<Value> state = {
        filledTensor(b, loc, {tileRows}, f32, b.getF32FloatAttr(-INFINITY)),
        filledTensor(b, loc, {tileRows}, f32, b.getF32FloatAttr(0.0f)),
        filledTensor(b, loc, {tileRows, headDimV}, f32,
                     b.getF32FloatAttr(0.0f)),
        // Scratch for a micro-block's weights, so that the V accumulation
        // broadcasts them from memory.
        valueKernel->createScratch(b, loc, scoreKernel->getShape())};
    Value blockCount =
        im.mul(im.div(im.add(count, im.c(rows - 1)), im.c(rows)), im.c(rows));
    auto chunkLoop = scf::ForOp::create(
        b, loc, im.mul(im.div(lo, im.c(keyChunk)), im.c(keyChunk)), hi,
        im.c(keyChunk), state,
        [&](OpBuilder &b, Location loc, Value key0, ValueRange chunkState) {
          IndexMath im{b, loc};
          auto blockLoop = scf::ForOp::create(
              b, loc, im.c(0), blockCount, im.c(rows), chunkState,
              [&](OpBuilder &b, Location loc, Value block,
                  ValueRange blockState) {
                scf::YieldOp::create(b, loc,
                                     emitMicroBlock(b, loc, batch, head, kvHead,
                                                    first, block, key0,
                                                    blockState));
              });
          scf::YieldOp::create(b, loc, blockLoop.getResults());
        });

    auto accType = VectorType::get({headDimV}, f32);
    SmallVector<Value> tileResults = {results.o};
    if (results.lse)
      tileResults.push_back(results.lse);
    auto finish = scf::ForOp::create(
        b, loc, zero, count, one, tileResults,
        [&](OpBuilder &b, Location loc, Value i, ValueRange carried) {
          IndexMath im{b, loc};
          Value m = tensor::ExtractOp::create(b, loc, chunkLoop.getResult(0),
                                              ValueRange{i});
          Value l = tensor::ExtractOp::create(b, loc, chunkLoop.getResult(1),
                                              ValueRange{i});
          Value acc = vector::TransferReadOp::create(
              b, loc, accType, chunkLoop.getResult(2), ValueRange{i, im.c(0)},
              emitF32Constant(b, loc, 0.0), ArrayRef<bool>{true});
          ForwardTile tile{carried[0],
                           carried.size() > 1 ? carried[1] : Value()};
          tile.write(b, loc, i,
                     finishForwardRow(b, loc, c, oType, head, m, l, acc));
          SmallVector<Value> next = {tile.o};
          if (tile.lse)
            next.push_back(tile.lse);
          scf::YieldOp::create(b, loc, next);
        });
    return {finish.getResult(0), results.lse ? finish.getResult(1) : Value()};
  }

  /// The micro-block of tile rows [block, block + rows) against the keys
  /// [key0, key0 + keyChunk); skipped when none of its rows sees any of
  /// them. `state` is the tile's (m, l, acc).
  SmallVector<Value> emitMicroBlock(OpBuilder &b, Location loc, Value batch,
                                    Value head, Value kvHead, Value first,
                                    Value block, Value key0, ValueRange state) {
    IndexMath im{b, loc};
    SmallVector<Value> local, rowOf;
    SmallVector<RowGeometry> geometry;
    for (int64_t i = 0; i < rows; ++i) {
      local.push_back(im.add(block, im.c(i)));
      rowOf.push_back(tileRow(im, first, local.back()));
      geometry.push_back(computeRowGeometry(b, loc, c, batch, rowOf.back()));
    }
    Value sees = chunkIsSeen(b, loc, geometry, key0, keyChunk);
    auto ifOp = scf::IfOp::create(
        b, loc, sees,
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc,
                               emitChunk(b, loc, batch, head, kvHead, key0,
                                         local, rowOf, geometry, state));
        },
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc, state);
        });
    return ifOp.getResults();
  }

  /// The scores of the rows `rowOf` (tile rows `local`) against one key
  /// chunk, their softmax state update and the accumulation of the chunk's
  /// V rows.
  SmallVector<Value> emitChunk(OpBuilder &b, Location loc, Value batch,
                               Value head, Value kvHead, Value key0,
                               ArrayRef<Value> local, ArrayRef<Value> rowOf,
                               ArrayRef<RowGeometry> geometry,
                               ValueRange state) {
    IndexMath im{b, loc};
    Type f32 = b.getF32Type();
    auto chunkType = VectorType::get({keyChunk}, f32);
    Value negInf = emitF32Constant(b, loc, -INFINITY);
    Value zeroF = emitF32Constant(b, loc, 0.0);

    // scores[i] = scale * sum over columns t of q[row i, t] * K^T[t, chunk].
    Value chunk = im.div(key0, im.c(keyChunk));
    SmallVector<Value> scores =
        scoreKernel->emitScores(b, loc, c, c.q, qs, kt, headDimQK, c.scale,
                                batch, head, kvHead, chunk, rowOf);
    ChunkKeys keys(b, loc, key0, keyChunk);

    Value mState = state[0], lState = state[1], accState = state[2],
          weightState = state[3];
    SmallVector<SmallVector<Value>> acc;
    for (int64_t i = 0; i < rows; ++i) {
      auto [logits, visible] =
          keys.biasAndMask(c, head, geometry[i], scores[i]);
      logits = arith::SelectOp::create(b, loc, visible, logits,
                                       splat(b, loc, negInf, chunkType));

      Value m = tensor::ExtractOp::create(b, loc, mState, local[i]);
      Value l = tensor::ExtractOp::create(b, loc, lState, local[i]);
      Value chunkMax = vector::ReductionOp::create(
          b, loc, vector::CombiningKind::MAXIMUMF, logits);
      Value mNew = arith::MaximumFOp::create(b, loc, m, chunkMax);
      // While a row has seen no key, m stays -inf: shift by 0 then so that
      // exp gives 0 for the masked logits instead of NaN.
      Value mShift = arith::SelectOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew,
                                negInf),
          zeroF, mNew);
      Value correction =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, mShift));
      Value p = math::ExpOp::create(
          b, loc,
          arith::SubFOp::create(b, loc, logits,
                                splat(b, loc, mShift, chunkType)));
      Value pSum =
          vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, p,
                                      Value(), arith::FastMathFlags::reassoc);
      Value lNew = arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, l, correction), pSum);
      mState = tensor::InsertOp::create(b, loc, mNew, mState, local[i]);
      lState = tensor::InsertOp::create(b, loc, lNew, lState, local[i]);
      weightState = valueKernel->writeWeights(b, loc, weightState, i, p);
      acc.push_back(valueKernel->loadScaled(b, loc, accState, local[i],
                                            correction, headDimV));
    }
    // acc[i] += p[i][j] * v_j for the chunk's keys j.
    accState = valueKernel->accumulate(b, loc, accState, acc, local,
                                       weightState, vs, batch, kvHead, key0,
                                       headDimV, scoreKernel->getShape());
    return {mState, lState, accState, weightState};
  }
};

//===----------------------------------------------------------------------===//
// The blocked backward path
//===----------------------------------------------------------------------===//
//
// Under the conditions of the blocked forward (and without
// d_softmax_offset), the backward of one (batch, key/value head) goes over
// the keys in chunks of keyChunk: each chunk of K and V is applied to
// micro-blocks of blockRows query rows of every query head that shares it
// (the score kernels' shape, as in the forward), while the chunk and its
// gradient accumulators stay in the cache:
//   - S = scale q k^T and dP = dO v^T of the micro-block on the score
//     kernels (ScoreKernel), over the head dimensions;
//   - P = exp(S - LSE) and dS = P (dP - D) on vectors of keyChunk keys,
//     with D = dO . O of each row; keys outside a row's range weigh 0;
//   - dV_j += P_ij dO_i and dK_j += dS_ij (scale q_i) for the chunk's keys,
//     the micro-block's rows held in registers;
//   - dQ_i += scale dS_ij k_j, summed over the chunk in registers and added
//     to the row's f32 accumulator.
// Rows past s_q (the last micro-block's padding) weigh 0. dQ, dK and dV
// accumulate in f32 [h_group, s_q, d_qk] and [chunks * keyChunk, d]
// tensors of the iteration and are rounded to their types at the end.

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
                  weightsAt) const {
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
              updated = vector::TransferWriteOp::create(
                            b, loc, sum, updated, at, ArrayRef<bool>{true})
                            .getResult();
            }
            scf::YieldOp::create(b, loc, updated);
          });
      acc = keyLoop.getResult(0);
    }
    return acc;
  }

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
      const {
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

  const AttentionConfig &c;
  Value dO;
  int64_t headDimQK, headDimV, keyChunk, blockRows;
  /// K as packKeys left it.
  Value keys;
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

/// The backward's sums: pair dots on `dotUnit` when both score products
/// take it, the head dimensions are whole 16-float pieces and the rows of
/// a micro-block pair up; f32 FMAs otherwise.
std::unique_ptr<GradientKernel>
chooseGradientKernel(const BF16PairDotUnit *dotUnit, const AttentionConfig &c,
                     Value dO, BlockShape shape) {
  int64_t headDimQK = cast<RankedTensorType>(c.q.getType()).getShape().back();
  int64_t headDimV = cast<RankedTensorType>(c.v.getType()).getShape().back();
  if (pairDotFor(dotUnit, c.q, c.k) && pairDotFor(dotUnit, dO, c.v) &&
      headDimQK % 16 == 0 && headDimV % 16 == 0 && shape.blockRows % 2 == 0)
    return std::make_unique<PairDotGradients>(c, dO, shape, *dotUnit);
  return std::make_unique<FMAGradients>(c, dO, shape);
}

/// The blocked backward pass of one op.
struct BlockedBackward {
  const AttentionConfig &c;
  Value o, dO, lse;
  /// The kernels of S = scale q k^T and dP = dO v^T; the loops take their
  /// shape (the same for both).
  std::unique_ptr<ScoreKernel> scoreKernel, gradKernel;
  int64_t keyChunk, blockRows;
  int64_t headDimQK, headDimV, chunks, group;
  /// The kernel of the dQ, dK and dV sums.
  std::unique_ptr<GradientKernel> gradients;
  /// D = dO . O of every row, as f32 [b, h_q, s_q].
  Value deltas;
  /// K and V packed by their score kernels; where a kernel reads f32 rows,
  /// scale * q as [b, h_q, s_q, d_qk] and dO as [b, h_q, s_q, d_v].
  Value qs, kt, vt, dOs;

  BlockedBackward(const AttentionConfig &c, Value o, Value dO, Value lse,
                  const BF16PairDotUnit *dotUnit)
      : c(c), o(o), dO(dO), lse(lse),
        scoreKernel(chooseScoreKernel(dotUnit, c.q, c.k)),
        gradKernel(chooseScoreKernel(dotUnit, dO, c.v)),
        keyChunk(scoreKernel->getShape().keyChunk),
        blockRows(scoreKernel->getShape().blockRows),
        headDimQK(cast<RankedTensorType>(c.q.getType()).getShape().back()),
        headDimV(cast<RankedTensorType>(c.v.getType()).getShape().back()),
        chunks(llvm::divideCeil(c.seqKV, keyChunk)),
        group(c.headsQ / c.headsKV),
        gradients(
            chooseGradientKernel(dotUnit, c, dO, scoreKernel->getShape())) {
    assert(gradKernel->getShape().keyChunk == keyChunk &&
           gradKernel->getShape().blockRows == blockRows &&
           "both score kernels of the backward have one shape");
  }

  void prepare(OpBuilder &b, Location loc) {
    kt = scoreKernel->packColumns(b, loc, c, c.k, headDimQK);
    vt = gradKernel->packColumns(b, loc, c, c.v, headDimV);
    deltas = generateF32(b, loc, {c.batches, c.headsQ, c.seqQ},
                         [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
                           IndexMath im{b, loc};
                           SmallVector<Value> at =
                               rowIndices(c.layout, i[0], i[2], i[1], im.c(0));
                           return dotProduct(b, loc, readRow(b, loc, dO, at),
                                             readRow(b, loc, o, at));
                         });
    bool f32Rows = gradients->readsF32Rows() || scoreKernel->readsF32Rows() ||
                   gradKernel->readsF32Rows();
    if (f32Rows)
      qs = emitScaledQueries(b, loc, c, headDimQK);
    gradients->packKeys(b, loc);
    if (!f32Rows)
      return;
    dOs = generateF32(b, loc, {c.batches, c.headsQ, c.seqQ, headDimV},
                      [&](OpBuilder &b, Location loc, ArrayRef<Value> i) {
                        return readElementF32(b, loc, c, dO, i[0], i[2], i[1],
                                              i[3]);
                      });
  }

  /// The gradients of (batch, kvHead) into `local`: the iteration's slices
  /// of dQ [1 batch, its group's query heads] and of the f32 dK and dV [1
  /// batch, 1 head].
  SmallVector<Value> emitIteration(OpBuilder &b, Location loc, Value batch,
                                   Value kvHead, ValueRange local) {
    IndexMath im{b, loc};
    Type f32 = b.getF32Type();
    Value zero = im.c(0), one = im.c(1);
    SmallVector<Value> state = {
        filledTensor(b, loc, {group, c.seqQ, headDimQK}, f32,
                     b.getF32FloatAttr(0.0f)),
        filledTensor(b, loc, {chunks * keyChunk, headDimQK}, f32,
                     b.getF32FloatAttr(0.0f)),
        filledTensor(b, loc, {chunks * keyChunk, headDimV}, f32,
                     b.getF32FloatAttr(0.0f))};
    llvm::append_range(state, gradients->createScratch(b, loc));
    int64_t blockEnd = llvm::alignTo(c.seqQ, blockRows);
    auto chunkLoop = scf::ForOp::create(
        b, loc, zero, im.c(chunks * keyChunk), im.c(keyChunk), state,
        [&](OpBuilder &b, Location loc, Value key0, ValueRange chunkState) {
          IndexMath im{b, loc};
          auto headLoop = scf::ForOp::create(
              b, loc, im.c(0), im.c(group), im.c(1), chunkState,
              [&](OpBuilder &b, Location loc, Value g, ValueRange headState) {
                IndexMath im{b, loc};
                Value head = im.add(im.mul(kvHead, im.c(group)), g);
                auto blockLoop = scf::ForOp::create(
                    b, loc, im.c(0), im.c(blockEnd), im.c(blockRows), headState,
                    [&](OpBuilder &b, Location loc, Value first,
                        ValueRange blockState) {
                      scf::YieldOp::create(b, loc,
                                           emitMicroBlock(b, loc, batch, head,
                                                          kvHead, g, first,
                                                          key0, blockState));
                    });
                scf::YieldOp::create(b, loc, blockLoop.getResults());
              });
          scf::YieldOp::create(b, loc, headLoop.getResults());
        });
    Value accQ = chunkLoop.getResult(0), accK = chunkLoop.getResult(1),
          accV = chunkLoop.getResult(2);

    // The accumulators into the iteration's slices.
    Value zeroF = emitF32Constant(b, loc, 0.0);
    auto keyRows = scf::ForOp::create(
        b, loc, zero, im.c(c.seqKV), one, ValueRange{local[1], local[2]},
        [&](OpBuilder &b, Location loc, Value key, ValueRange slices) {
          IndexMath im{b, loc};
          SmallVector<Value> next;
          SmallVector<Value> accs = {accK, accV};
          SmallVector<int64_t> widths = {headDimQK, headDimV};
          for (auto [acc, slice, width] : llvm::zip(accs, slices, widths)) {
            Value row = vector::TransferReadOp::create(
                b, loc, VectorType::get({width}, f32), acc,
                ValueRange{key, im.c(0)}, zeroF, ArrayRef<bool>{true});
            next.push_back(
                vector::TransferWriteOp::create(
                    b, loc, row, slice,
                    rowIndices(c.layout, im.c(0), key, im.c(0), im.c(0)),
                    ArrayRef<bool>{true})
                    .getResult());
          }
          scf::YieldOp::create(b, loc, next);
        });
    Type qElement = cast<RankedTensorType>(c.q.getType()).getElementType();
    auto queryRows = scf::ForOp::create(
        b, loc, zero, im.c(group * c.seqQ), one, ValueRange{local[0]},
        [&](OpBuilder &b, Location loc, Value index, ValueRange slice) {
          IndexMath im{b, loc};
          Value g = im.div(index, im.c(c.seqQ));
          Value row = im.sub(index, im.mul(g, im.c(c.seqQ)));
          Value dq = vector::TransferReadOp::create(
              b, loc, VectorType::get({headDimQK}, f32), accQ,
              ValueRange{g, row, im.c(0)}, zeroF, ArrayRef<bool>{true});
          if (!qElement.isF32())
            dq = arith::TruncFOp::create(
                b, loc, VectorType::get({headDimQK}, qElement), dq);
          scf::YieldOp::create(
              b, loc,
              vector::TransferWriteOp::create(
                  b, loc, dq, slice[0],
                  rowIndices(c.layout, im.c(0), row, g, im.c(0)),
                  ArrayRef<bool>{true})
                  .getResult());
        });
    return {queryRows.getResult(0), keyRows.getResult(0), keyRows.getResult(1)};
  }

  /// The micro-block of query rows [first, first + blockRows) of `head`
  /// against the keys [key0, key0 + keyChunk); skipped when none of its
  /// rows sees any of them. `state` is (accQ, accK, accV, P, dS).
  SmallVector<Value> emitMicroBlock(OpBuilder &b, Location loc, Value batch,
                                    Value head, Value kvHead, Value g,
                                    Value first, Value key0, ValueRange state) {
    IndexMath im{b, loc};
    SmallVector<Value> rowOf, real;
    SmallVector<RowGeometry> geometry;
    for (int64_t i = 0; i < blockRows; ++i) {
      Value row = im.add(first, im.c(i));
      real.push_back(im.lt(row, im.c(c.seqQ)));
      rowOf.push_back(im.min(row, im.c(c.seqQ - 1)));
      geometry.push_back(computeRowGeometry(b, loc, c, batch, rowOf.back()));
    }
    Value sees = chunkIsSeen(b, loc, geometry, key0, keyChunk);
    auto ifOp = scf::IfOp::create(
        b, loc, sees,
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc,
                               emitChunk(b, loc, batch, head, kvHead, g, key0,
                                         rowOf, real, geometry, state));
        },
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc, state);
        });
    return ifOp.getResults();
  }

  SmallVector<Value> emitChunk(OpBuilder &b, Location loc, Value batch,
                               Value head, Value kvHead, Value g, Value key0,
                               ArrayRef<Value> rowOf, ArrayRef<Value> real,
                               ArrayRef<RowGeometry> geometry,
                               ValueRange state) {
    IndexMath im{b, loc};
    Type f32 = b.getF32Type();
    auto chunkType = VectorType::get({keyChunk}, f32);
    Value chunk = im.div(key0, im.c(keyChunk));
    Value zeroChunk = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(chunkType, b.getF32FloatAttr(0)));
    SmallVector<Value> scores =
        scoreKernel->emitScores(b, loc, c, c.q, qs, kt, headDimQK, c.scale,
                                batch, head, kvHead, chunk, rowOf);
    SmallVector<Value> dP =
        gradKernel->emitScores(b, loc, c, dO, dOs, vt, headDimV, 1.0f, batch,
                               head, kvHead, chunk, rowOf);

    ChunkKeys keys(b, loc, key0, keyChunk);

    SmallVector<Value> pRows, dsRows;
    for (int64_t i = 0; i < blockRows; ++i) {
      auto [logits, visible] =
          keys.biasAndMask(c, head, geometry[i], scores[i]);
      visible = arith::AndIOp::create(
          b, loc, visible,
          vector::BroadcastOp::create(
              b, loc, VectorType::get({keyChunk}, b.getI1Type()), real[i]));
      Value rowLse = tensor::ExtractOp::create(
          b, loc, lse, c.lseIndices(batch, rowOf[i], head, im.c(0)));
      Value p = arith::SelectOp::create(
          b, loc, visible,
          math::ExpOp::create(
              b, loc,
              arith::SubFOp::create(b, loc, logits,
                                    splat(b, loc, rowLse, chunkType))),
          zeroChunk);
      Value delta = tensor::ExtractOp::create(
          b, loc, deltas, ValueRange{batch, head, rowOf[i]});
      pRows.push_back(p);
      dsRows.push_back(arith::MulFOp::create(
          b, loc, p,
          arith::SubFOp::create(b, loc, dP[i],
                                splat(b, loc, delta, chunkType))));
    }
    return gradients->accumulate(b, loc, state, pRows, dsRows, qs, dOs, batch,
                                 head, kvHead, g, key0, rowOf);
  }
};

struct AttentionOpLowering : OpConversionPattern<AttentionOp> {
  AttentionOpLowering(MLIRContext *context, const BF16PairDotUnit *dotUnit)
      : OpConversionPattern(context), dotUnit(dotUnit) {}

  /// The target's bf16 dot unit, or null.
  const BF16PairDotUnit *dotUnit;

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason = getAttentionUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    AttentionConfig c = AttentionConfig::get(op, adaptor);
    RankedTensorType oType = op.getO().getType();
    Type f32 = b.getF32Type();
    auto accType = VectorType::get({oType.getShape().back()}, f32);

    auto lseType = op.getLse() ? cast<RankedTensorType>(op.getLse().getType())
                               : RankedTensorType();

    if (canUseBlockedForward(c)) {
      BlockedForward blocked(c, oType, dotUnit);
      blocked.prepare(b, loc);
      rewriter.replaceOp(
          op, forEachRowTile(b, loc, c, oType, lseType, blocked.tileRows,
                             [&](OpBuilder &b, Location loc, Value batch,
                                 Value head, Value kvHead, Value first,
                                 Value count, ForwardTile tile) {
                               return blocked.emitTile(b, loc, batch, head,
                                                       kvHead, first, count,
                                                       tile);
                             }));
      return success();
    }

    rewriter.replaceOp(
        op,
        forEachRowTile(
            b, loc, c, oType, lseType, kRowTile,
            [&](OpBuilder &b, Location loc, Value batch, Value head,
                Value kvHead, Value first, Value count, ForwardTile tile) {
              IndexMath im{b, loc};
              SmallVector<Value> init = {tile.o};
              if (tile.lse)
                init.push_back(tile.lse);
              auto rows = scf::ForOp::create(
                  b, loc, im.c(0), count, im.c(1), init,
                  [&](OpBuilder &b, Location loc, Value i, ValueRange carried) {
                    IndexMath im{b, loc};
                    ForwardTile next{carried[0],
                                     carried.size() > 1 ? carried[1] : Value()};
                    next.write(b, loc, i,
                               emitForwardRow(b, loc, c, oType, accType, batch,
                                              head, kvHead, im.add(first, i)));
                    SmallVector<Value> yielded = {next.o};
                    if (next.lse)
                      yielded.push_back(next.lse);
                    scf::YieldOp::create(b, loc, yielded);
                  });
              return ForwardTile{rows.getResult(0),
                                 tile.lse ? rows.getResult(1) : Value()};
            }));
    return success();
  }

  /// Query rows per parallel iteration of the per-row path.
  static constexpr int64_t kRowTile = 16;

  static std::pair<Value, Value>
  emitForwardRow(OpBuilder &b, Location loc, const AttentionConfig &c,
                 RankedTensorType oType, VectorType accType, Value batch,
                 Value head, Value kvHead, Value row) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    RowGeometry g = computeRowGeometry(b, loc, c, batch, row);
    SmallVector<Value> rowAt = rowIndices(c.layout, batch, row, head, zero);
    Value qRow = readRow(b, loc, c.q, rowAt);
    Value negInf = emitF32Constant(b, loc, -INFINITY);
    Value accInit = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));

    // Online softmax: running max m, denominator l, weighted sum of V rows.
    auto keyLoop = forEachVisibleKey(
        b, loc, c, g, head,
        ValueRange{negInf, emitF32Constant(b, loc, 0.0), accInit},
        [&](OpBuilder &b, Location loc, Value key, ValueRange state) {
          Value token = arith::AddIOp::create(b, loc, g.kvBase, key);
          SmallVector<Value> kvAt =
              rowIndices(c.layout, batch, token, kvHead,
                         arith::ConstantIndexOp::create(b, loc, 0));
          Value logit =
              emitLogit(b, loc, c, g, head, key,
                        dotProduct(b, loc, qRow, readRow(b, loc, c.k, kvAt)));
          Value m = state[0], l = state[1], acc = state[2];
          Value mNew = arith::MaximumFOp::create(b, loc, m, logit);
          Value correction = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, m, mNew));
          Value p = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, logit, mNew));
          Value lNew = arith::AddFOp::create(
              b, loc, arith::MulFOp::create(b, loc, l, correction), p);
          // Dropout scales the V row's weight, not the denominator.
          Value weight = p;
          if (c.rngState)
            weight = arith::MulFOp::create(
                b, loc, p,
                emitDropoutFactor(b, loc, c, batch, head, row, token));
          Value accNew = vector::FMAOp::create(
              b, loc, splat(b, loc, weight, accType),
              readRow(b, loc, c.v, kvAt),
              arith::MulFOp::create(b, loc, acc,
                                    splat(b, loc, correction, accType)));
          return SmallVector<Value>{mNew, lNew, accNew};
        });
    return finishForwardRow(b, loc, c, oType, head, keyLoop.getResult(0),
                            keyLoop.getResult(1), keyLoop.getResult(2));
  }
};

/// Gradients by recomputing P = exp(x - LSE) key by key (flash attention's
/// backward): dV_j += P_ij dO_i, dS_ij = P_ij (dO_i . v_j - D_i) with
/// D_i = dO_i . O_i, dQ_i += scale dS_ij k_j, dK_j += scale dS_ij q_i.
/// dK, dV, dbias and d_softmax_offset accumulate in f32 and are rounded to
/// their types at the end; each dQ row is written once.
struct AttentionBackwardOpLowering : OpConversionPattern<AttentionBackwardOp> {
  AttentionBackwardOpLowering(MLIRContext *context,
                              const BF16PairDotUnit *dotUnit)
      : OpConversionPattern(context), dotUnit(dotUnit) {}

  /// The target's bf16 dot unit, or null.
  const BF16PairDotUnit *dotUnit;

  LogicalResult
  matchAndRewrite(AttentionBackwardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason = getAttentionUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    AttentionConfig c = AttentionConfig::get(op, adaptor);
    Type f32 = b.getF32Type();
    TypedAttr zeroF = b.getF32FloatAttr(0.0f);
    auto qType = cast<RankedTensorType>(c.q.getType());
    auto kType = cast<RankedTensorType>(c.k.getType());
    auto vType = cast<RankedTensorType>(c.v.getType());
    bool hasBiasGrad = static_cast<bool>(op.getDBias());
    bool hasOffsetGrad = static_cast<bool>(op.getDSoftmaxOffset());

    SmallVector<Value> init = {
        filledTensor(b, loc, qType.getShape(), qType.getElementType(),
                     cast<TypedAttr>(b.getZeroAttr(qType.getElementType()))),
        filledTensor(b, loc, kType.getShape(), f32, zeroF),
        filledTensor(b, loc, vType.getShape(), f32, zeroF)};
    if (hasBiasGrad)
      init.push_back(filledTensor(
          b, loc, cast<RankedTensorType>(c.bias.getType()).getShape(), f32,
          zeroF));
    if (hasOffsetGrad)
      init.push_back(filledTensor(
          b, loc, cast<RankedTensorType>(c.softmaxOffset.getType()).getShape(),
          f32, zeroF));

    BackwardOperands operands{adaptor.getO(), adaptor.getDO(), adaptor.getLse(),
                              hasBiasGrad, hasOffsetGrad};
    std::optional<BlockedBackward> blocked;
    if (canUseBlockedForward(c) && !hasBiasGrad && !hasOffsetGrad) {
      blocked.emplace(c, operands.o, operands.dO, operands.lse, dotUnit);
      blocked->prepare(b, loc);
    }
    SmallVector<Value> grads = emitParallelBackward(
        b, loc, c, operands, init, blocked ? &*blocked : nullptr);

    SmallVector<Value> results = {grads[0],
                                  castAccumulator(b, loc, grads[1], kType),
                                  castAccumulator(b, loc, grads[2], vType)};
    size_t next = 3;
    if (hasBiasGrad)
      results.push_back(castAccumulator(
          b, loc, grads[next++], cast<RankedTensorType>(c.bias.getType())));
    if (hasOffsetGrad)
      results.push_back(grads[next++]);
    rewriter.replaceOp(op, results);
    return success();
  }

  struct BackwardOperands {
    Value o, dO, lse;
    bool hasBiasGrad, hasOffsetGrad;
  };

  /// The first batch, query head and key/value head of the gradient slices
  /// one parallel iteration owns.
  struct SliceBase {
    Value batch, head, kvHead;
  };

  /// The backward pass in parallel over (batch, key/value head): an
  /// iteration owns dK and dV of its key/value head and dQ of the query
  /// heads that share it, so no two iterations write the same element and
  /// dK and dV need no reduction across threads. A dbias broadcast over the
  /// batch (or the heads) is a sum over them, and so is d_softmax_offset
  /// over the batch: the batch (or the heads) then run in one iteration. `init`
  /// holds (dQ, dK, dV, [dbias], [d_softmax_offset]) with the accumulators
  /// zeroed.
  static SmallVector<Value> emitParallelBackward(OpBuilder &b, Location loc,
                                                 const AttentionConfig &c,
                                                 const BackwardOperands &in,
                                                 ValueRange init,
                                                 BlockedBackward *blocked) {
    int64_t batches = c.thd ? 1 : c.batches;
    int64_t group = c.headsQ / c.headsKV;
    ArrayRef<int64_t> biasShape;
    if (in.hasBiasGrad)
      biasShape = cast<RankedTensorType>(c.bias.getType()).getShape();
    // d_softmax_offset [1, h_q, 1, 1] is a sum over the batch.
    bool parallelBatches =
        (!in.hasBiasGrad || biasShape[0] != 1) && !in.hasOffsetGrad;
    bool parallelHeads = !in.hasBiasGrad || biasShape[1] != 1;
    int64_t sliceBatches = parallelBatches ? 1 : batches;
    int64_t sliceKVHeads = parallelHeads ? 1 : c.headsKV;

    auto forall = createForall(
        b, loc, {batches / sliceBatches, c.headsKV / sliceKVHeads}, init);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getTerminator());
    IndexMath im{b, loc};
    SmallVector<Value> ivs = forall.getInductionVars();
    SliceBase base;
    base.batch = im.mul(ivs[0], im.c(sliceBatches));
    base.kvHead = im.mul(ivs[1], im.c(sliceKVHeads));
    base.head = im.mul(base.kvHead, im.c(group));

    // The slice (offsets, sizes) of each gradient the iteration owns.
    Value zero = im.c(0);
    auto headSlice = [&](Value tensor, Value head, int64_t heads)
        -> std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>> {
      SmallVector<OpFoldResult> offsets, sizes;
      for (int64_t size : cast<RankedTensorType>(tensor.getType()).getShape()) {
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(b.getIndexAttr(size));
      }
      std::optional<unsigned> batchDim = batchDimension(c.layout);
      if (batchDim) {
        offsets[*batchDim] = base.batch;
        sizes[*batchDim] = b.getIndexAttr(sliceBatches);
      }
      unsigned headDim = headDimension(c.layout);
      offsets[headDim] = head;
      sizes[headDim] = b.getIndexAttr(heads);
      return {offsets, sizes};
    };
    SmallVector<std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>>
        slices = {headSlice(init[0], base.head, sliceKVHeads * group),
                  headSlice(init[1], base.kvHead, sliceKVHeads),
                  headSlice(init[2], base.kvHead, sliceKVHeads)};
    if (in.hasBiasGrad) {
      slices.emplace_back(
          SmallVector<OpFoldResult>{biasShape[0] == 1 ? zero : base.batch,
                                    biasShape[1] == 1 ? zero : base.head, zero,
                                    zero},
          SmallVector<OpFoldResult>{
              b.getIndexAttr(biasShape[0] == 1 ? 1 : sliceBatches),
              b.getIndexAttr(biasShape[1] == 1 ? 1 : sliceKVHeads * group),
              b.getIndexAttr(biasShape[2]), b.getIndexAttr(biasShape[3])});
    }
    if (in.hasOffsetGrad)
      slices.emplace_back(
          SmallVector<OpFoldResult>{zero, base.head, zero, zero},
          SmallVector<OpFoldResult>{b.getIndexAttr(1),
                                    b.getIndexAttr(sliceKVHeads * group),
                                    b.getIndexAttr(1), b.getIndexAttr(1)});
    ValueRange shared = forall.getRegionIterArgs();
    SmallVector<Value> local;
    for (auto [tensor, slice] : llvm::zip(shared, slices)) {
      SmallVector<OpFoldResult> strides(slice.first.size(), b.getIndexAttr(1));
      local.push_back(tensor::ExtractSliceOp::create(
          b, loc, tensor, slice.first, slice.second, strides));
    }

    SmallVector<Value> grads;
    if (blocked)
      // One (batch, key/value head) per iteration.
      grads = blocked->emitIteration(b, loc, base.batch, base.kvHead, local);
    else
      grads = emitRowLoops(b, loc, c, in, base, sliceBatches,
                           sliceKVHeads * group, local);

    b.setInsertionPointToEnd(forall.getTerminator().getBody());
    for (auto [result, tensor, slice] : llvm::zip(grads, shared, slices)) {
      SmallVector<OpFoldResult> strides(slice.first.size(), b.getIndexAttr(1));
      tensor::ParallelInsertSliceOp::create(b, loc, result, tensor, slice.first,
                                            slice.second, strides);
    }
    return forall.getResults();
  }

  /// The per-row backward over the iteration's slices `local`: batch, query
  /// head and row loops from `base`.
  static SmallVector<Value> emitRowLoops(OpBuilder &b, Location loc,
                                         const AttentionConfig &c,
                                         const BackwardOperands &in,
                                         const SliceBase &base, int64_t batches,
                                         int64_t heads, ValueRange local) {
    IndexMath im{b, loc};
    int64_t group = c.headsQ / c.headsKV;
    auto batchLoop = scf::ForOp::create(
        b, loc, base.batch, im.add(base.batch, im.c(batches)), im.c(1), local,
        [&](OpBuilder &b, Location loc, Value batch, ValueRange batchIter) {
          IndexMath im{b, loc};
          auto headLoop = scf::ForOp::create(
              b, loc, base.head, im.add(base.head, im.c(heads)), im.c(1),
              batchIter,
              [&](OpBuilder &b, Location loc, Value head, ValueRange headIter) {
                IndexMath im{b, loc};
                Value kvHead = im.div(head, im.c(group));
                auto rowLoop = scf::ForOp::create(
                    b, loc, im.c(0), im.c(c.seqQ), im.c(1), headIter,
                    [&](OpBuilder &b, Location loc, Value row,
                        ValueRange rowIter) {
                      scf::YieldOp::create(b, loc,
                                           emitBackwardRow(b, loc, c, in, base,
                                                           batch, head, kvHead,
                                                           row, rowIter));
                    });
                scf::YieldOp::create(b, loc, rowLoop.getResults());
              });
          scf::YieldOp::create(b, loc, headLoop.getResults());
        });
    return batchLoop.getResults();
  }

  /// One query row's contributions; `carried` is the iteration's slices of
  /// (dQ, dK, dV, [dbias], [d_softmax_offset]), which start at `base`.
  static SmallVector<Value> emitBackwardRow(OpBuilder &b, Location loc,
                                            const AttentionConfig &c,
                                            const BackwardOperands &in,
                                            const SliceBase &base, Value batch,
                                            Value head, Value kvHead, Value row,
                                            ValueRange carried) {
    Type f32 = b.getF32Type();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    RowGeometry g = computeRowGeometry(b, loc, c, batch, row);
    SmallVector<Value> rowAt = rowIndices(c.layout, batch, row, head, zero);
    // Indices into the iteration's slices of the gradients.
    Value localBatch = arith::SubIOp::create(b, loc, batch, base.batch);
    Value localHead = arith::SubIOp::create(b, loc, head, base.head);
    Value localKVHead = arith::SubIOp::create(b, loc, kvHead, base.kvHead);
    Value qRow = readRow(b, loc, c.q, rowAt);
    Value dORow = readRow(b, loc, in.dO, rowAt);
    Value delta = dotProduct(b, loc, dORow, readRow(b, loc, in.o, rowAt));
    Value lse = tensor::ExtractOp::create(b, loc, in.lse,
                                          c.lseIndices(batch, row, head, zero));
    Value scale = arith::ConstantFloatOp::create(b, loc, cast<FloatType>(f32),
                                                 APFloat(c.scale));
    auto dqkType = cast<VectorType>(qRow.getType());
    auto dvType = cast<VectorType>(dORow.getType());

    SmallVector<Value> init = {arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(dqkType, b.getF32FloatAttr(0.0f)))};
    init.append(carried.begin() + 1, carried.end());
    auto keyLoop = forEachVisibleKey(
        b, loc, c, g, head, init,
        [&](OpBuilder &b, Location loc, Value key, ValueRange state) {
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          Value token = arith::AddIOp::create(b, loc, g.kvBase, key);
          SmallVector<Value> kvAt =
              rowIndices(c.layout, batch, token, kvHead, zero);
          SmallVector<Value> localKVAt =
              rowIndices(c.layout, localBatch, token, localKVHead, zero);
          Value kRow = readRow(b, loc, c.k, kvAt);
          Value vRow = readRow(b, loc, c.v, kvAt);
          Value logit = emitLogit(b, loc, c, g, head, key,
                                  dotProduct(b, loc, qRow, kRow));
          Value p = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, logit, lse));
          // With dropout factor f, O_i = sum_j P_ij f_ij v_j: dV_j gets
          // P f dO_i, and P's gradient is f (dO_i . v_j).
          Value dP = dotProduct(b, loc, dORow, vRow);
          Value pV = p;
          if (c.rngState) {
            Value factor =
                emitDropoutFactor(b, loc, c, batch, head, row, token);
            dP = arith::MulFOp::create(b, loc, dP, factor);
            pV = arith::MulFOp::create(b, loc, p, factor);
          }
          Value dS = arith::MulFOp::create(
              b, loc, p, arith::SubFOp::create(b, loc, dP, delta));
          Value dDot = arith::MulFOp::create(b, loc, dS, scale);
          SmallVector<Value> next = {
              vector::FMAOp::create(b, loc, splat(b, loc, dDot, dqkType), kRow,
                                    state[0]),
              accumulateRow(b, loc, state[1], localKVAt,
                            arith::MulFOp::create(
                                b, loc, splat(b, loc, dDot, dqkType), qRow)),
              accumulateRow(b, loc, state[2], localKVAt,
                            arith::MulFOp::create(
                                b, loc, splat(b, loc, pV, dvType), dORow))};
          size_t index = 3;
          if (in.hasBiasGrad) {
            // x = scale * (qk + bias) for pre_scale, qk * scale + bias for
            // post_scale; the gradient sums over broadcast dimensions.
            Value dBias = c.biasKind == BiasKind::pre_scale ? dDot : dS;
            auto biasType = cast<RankedTensorType>(c.bias.getType());
            Value logical[] = {
                arith::SubIOp::create(b, loc, g.sequence, base.batch),
                localHead, g.position, key};
            SmallVector<Value> at;
            for (auto [size, value] : llvm::zip(biasType.getShape(), logical))
              at.push_back(size == 1 ? zero : value);
            next.push_back(
                accumulateElement(b, loc, state[index++], at, dBias));
          }
          if (in.hasOffsetGrad)
            next.push_back(state[index++]);
          return next;
        });

    Value dqRow = keyLoop.getResult(0);
    Type qElement = cast<RankedTensorType>(c.q.getType()).getElementType();
    if (!qElement.isF32())
      dqRow = arith::TruncFOp::create(
          b, loc, VectorType::get(dqkType.getShape(), qElement), dqRow);
    SmallVector<Value> updated = {
        vector::TransferWriteOp::create(
            b, loc, dqRow, carried[0],
            rowIndices(c.layout, localBatch, row, localHead, zero),
            ArrayRef<bool>{true})
            .getResult()};
    for (unsigned i = 1; i < keyLoop.getNumResults(); ++i)
      updated.push_back(keyLoop.getResult(i));
    if (in.hasOffsetGrad) {
      // The extra term is a key with logit alpha_h and a zero V row:
      // d alpha_h += exp(alpha_h - LSE_i) * (0 - D_i).
      Value alpha = emitExtraLogit(b, loc, c, head);
      Value pExtra = math::ExpOp::create(
          b, loc, arith::SubFOp::create(b, loc, alpha, lse));
      Value contribution = arith::NegFOp::create(
          b, loc, arith::MulFOp::create(b, loc, pExtra, delta));
      updated.back() = accumulateElement(
          b, loc, updated.back(), {zero, localHead, zero, zero}, contribution);
    }
    return updated;
  }
};

} // namespace

static std::optional<std::string>
getUnsupportedReason(AttentionOpInterface op) {
  std::string name = op->getName().getStringRef().str();
  for (Value value : op->getOperands())
    if (!cast<ShapedType>(value.getType()).hasStaticShape())
      return name + " with dynamic shapes has no CPU lowering yet";
  return std::nullopt;
}

std::optional<std::string>
mlir::te::getAttentionUnsupportedReason(AttentionOpInterface op) {
  return getUnsupportedReason(op);
}

void mlir::te::populateAttentionLoweringPatterns(
    RewritePatternSet &patterns, const BF16PairDotUnit *dotUnit) {
  patterns.add<AttentionOpLowering, AttentionBackwardOpLowering>(
      patterns.getContext(), dotUnit);
}
