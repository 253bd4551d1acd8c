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

#include "AttentionMicroKernels.h"
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
using namespace mlir::te::host_attention;

//===----------------------------------------------------------------------===//
// Shared with the micro-kernels (HostAttention.h)
//===----------------------------------------------------------------------===//

Value host_attention::filledTensor(OpBuilder &b, Location loc,
                                   ArrayRef<int64_t> shape, Type element,
                                   TypedAttr value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, element);
  Value fill = arith::ConstantOp::create(b, loc, value);
  return linalg::FillOp::create(b, loc, fill, empty).getResult(0);
}

Value host_attention::splat(OpBuilder &b, Location loc, Value scalar,
                            VectorType type) {
  return vector::BroadcastOp::create(b, loc, type, scalar);
}

/// A new tensor of `shape` and `elementType` whose element at `indices` is
/// `element(indices)`.
Value host_attention::generateTensor(OpBuilder &b, Location loc,
                                     ArrayRef<int64_t> shape, Type elementType,
                                     ElementFn element) {
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
Value host_attention::generateF32(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> shape, ElementFn element) {
  return generateTensor(b, loc, shape, b.getF32Type(), element);
}

/// K or V element (batch, token, head, column) in its own type, or 0 for
/// the padding tokens at and past s_kv.
Value host_attention::readPaddedElement(OpBuilder &b, Location loc,
                                        const AttentionConfig &c, Value tensor,
                                        Value batch, Value token, Value head,
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
Value host_attention::readPaddedKV(OpBuilder &b, Location loc,
                                   const AttentionConfig &c, Value tensor,
                                   Value batch, Value token, Value head,
                                   Value column) {
  return emitExtToF32(
      b, loc, readPaddedElement(b, loc, c, tensor, batch, token, head, column));
}

namespace {

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

/// Query rows per tile: each chunk of K and V is used by this many rows
/// while it is in the L1/L2 cache.
constexpr int64_t kTileRows = 64;
bool canUseBlockedForward(const AttentionConfig &c) {
  return !c.thd && !c.mask && !c.rngState &&
         (c.biasKind == BiasKind::no_bias || c.biasKind == BiasKind::alibi);
}

/// Element `column` of the row (batch, position, head) of a Q/K/V tensor,
/// as f32.
Value readElementF32(OpBuilder &b, Location loc, const AttentionConfig &c,
                     Value tensor, Value batch, Value position, Value head,
                     Value column) {
  SmallVector<Value> at = rowIndices(c.layout, batch, position, head, column);
  return emitExtToF32(b, loc, tensor::ExtractOp::create(b, loc, tensor, at));
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
  std::unique_ptr<ValueKernel> valueKernel;
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
        valueKernel(chooseValueKernel(scoreKernel->getShape())),
        keyChunk(scoreKernel->getShape().keyChunk),
        rows(scoreKernel->getShape().blockRows),
        tileRows(std::min<int64_t>(kTileRows, llvm::alignTo(c.seqQ, rows))) {}

  void prepare(OpBuilder &b, Location loc) {
    if (scoreKernel->readsF32Rows())
      qs = emitScaledQueries(b, loc, c, headDimQK);
    kt = scoreKernel->packColumns(b, loc, c, c.k, headDimQK);
    vs = valueKernel->packValues(b, loc, c, headDimV);
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
        valueKernel->createScratch(b, loc)};
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
    accState =
        valueKernel->accumulate(b, loc, accState, acc, local, weightState, vs,
                                batch, kvHead, key0, headDimV);
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
