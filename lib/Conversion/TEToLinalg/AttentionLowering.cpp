//===- AttentionLowering.cpp - te.attention as online-softmax loops -------===//
//
// The host lowering of te.attention: for every (batch, query head, query
// row) one pass over the visible keys with the online softmax (running max
// m, running denominator l, running weighted sum of V rows), so memory stays
// O(s * d) and the [s_q, s_kv] score matrix never exists. Rows of Q, K and V
// are vectors of d elements; the key range of a row is computed from the
// mask, window and sequence lengths, so masked keys cost nothing (only the
// arbitrary mask is tested key by key).
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

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

Value f32Const(OpBuilder &b, Location loc, double value) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(static_cast<float>(value)));
}

/// Indices of the first element of the row (batch, position, head) of a
/// Q/K/V/O tensor in `layout`; for thd `position` is the token index.
SmallVector<Value> rowIndices(QKVLayout layout, Value batch, Value position,
                              Value head, Value zero) {
  switch (layout) {
  case QKVLayout::bshd:
    return {batch, position, head, zero};
  case QKVLayout::sbhd:
    return {position, batch, head, zero};
  case QKVLayout::bhsd:
    return {batch, head, position, zero};
  case QKVLayout::thd:
    return {position, head, zero};
  }
  llvm_unreachable("unknown layout");
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

struct AttentionOpLowering : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason = getAttentionUnsupportedReason(op))
      return rewriter.notifyMatchFailure(op, *reason);
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    IndexMath im{b, loc};
    Type f32 = b.getF32Type();

    QKVLayout layout = op.getLayout();
    bool thd = layout == QKVLayout::thd;
    MaskKind mask = op.getMaskKind();
    bool padding = isPaddingMask(mask) || thd;
    bool causal = isCausalMask(mask);
    bool bottomRight = isBottomRightMask(mask);
    std::pair<int64_t, int64_t> window = op.getWindowBounds();
    int64_t windowLeft = window.first, windowRight = window.second;
    BiasKind biasKind = op.getBiasKind();
    SoftmaxKind softmax = op.getSoftmaxKind();
    float scale = static_cast<float>(*op.getEffectiveScale());

    Value q = adaptor.getQ(), k = adaptor.getK();
    auto qType = cast<RankedTensorType>(q.getType());
    auto kType = cast<RankedTensorType>(k.getType());
    RankedTensorType oType = op.getO().getType();
    auto dims = [&](RankedTensorType type) {
      ArrayRef<int64_t> s = type.getShape();
      switch (layout) {
      case QKVLayout::bshd:
        return std::array<int64_t, 3>{s[0], s[1], s[2]};
      case QKVLayout::sbhd:
        return std::array<int64_t, 3>{s[1], s[0], s[2]};
      case QKVLayout::bhsd:
        return std::array<int64_t, 3>{s[0], s[2], s[1]};
      case QKVLayout::thd:
        return std::array<int64_t, 3>{1, s[0], s[1]};
      }
      llvm_unreachable("unknown layout");
    };
    std::array<int64_t, 3> qDims = dims(qType);
    int64_t batches = qDims[0], seqQ = qDims[1], headsQ = qDims[2];
    int64_t seqKV = dims(kType)[1], headsKV = dims(kType)[2];
    int64_t numSequences =
        thd ? cast<RankedTensorType>(adaptor.getCuSeqlensQ().getType())
                      .getDimSize(0) -
                  1
            : batches;

    Value zero = im.c(0), one = im.c(1);
    Value negInf = f32Const(b, loc, -INFINITY);

    // Results start as zeros / -inf; every row is written below.
    Value out = tensor::EmptyOp::create(b, loc, oType.getShape(),
                                        oType.getElementType());
    Value outZero = arith::ConstantOp::create(
        b, loc, b.getZeroAttr(oType.getElementType()));
    out = linalg::FillOp::create(b, loc, outZero, out).getResult(0);
    Value lse;
    if (Value lseResult = op.getLse()) {
      auto lseType = cast<RankedTensorType>(lseResult.getType());
      lse = tensor::EmptyOp::create(b, loc, lseType.getShape(), f32);
      lse = linalg::FillOp::create(b, loc, negInf, lse).getResult(0);
    }
    SmallVector<Value> results = {out};
    if (lse)
      results.push_back(lse);

    Value groupSize = im.c(headsQ / headsKV);
    int64_t headDimV = oType.getShape().back();
    auto accType = VectorType::get({headDimV}, f32);

    auto batchLoop = scf::ForOp::create(
        b, loc, zero, im.c(thd ? 1 : batches), one, results,
        [&](OpBuilder &b, Location loc, Value batch, ValueRange batchIter) {
          auto headLoop = scf::ForOp::create(
              b, loc, zero, im.c(headsQ), one, batchIter,
              [&](OpBuilder &b, Location loc, Value head, ValueRange headIter) {
                IndexMath im{b, loc};
                Value kvHead = im.div(head, groupSize);
                auto rowLoop = scf::ForOp::create(
                    b, loc, zero, im.c(seqQ), one, headIter,
                    [&](OpBuilder &b, Location loc, Value row,
                        ValueRange rowIter) {
                      SmallVector<Value> updated =
                          emitRow(b, loc, op, adaptor, batch, head, kvHead, row,
                                  rowIter, numSequences, seqQ, seqKV, padding,
                                  causal, bottomRight, windowLeft, windowRight,
                                  biasKind, softmax, scale, accType);
                      scf::YieldOp::create(b, loc, updated);
                    });
                scf::YieldOp::create(b, loc, rowLoop.getResults());
              });
          scf::YieldOp::create(b, loc, headLoop.getResults());
        });
    rewriter.replaceOp(op, batchLoop.getResults());
    return success();
  }

  /// Computes one output row (and its LSE) and returns the updated results.
  static SmallVector<Value>
  emitRow(OpBuilder &b, Location loc, AttentionOp op,
          AttentionOp::Adaptor adaptor, Value batch, Value head, Value kvHead,
          Value row, ValueRange results, int64_t numSequences, int64_t seqQ,
          int64_t seqKV, bool padding, bool causal, bool bottomRight,
          int64_t windowLeft, int64_t windowRight, BiasKind biasKind,
          SoftmaxKind softmax, float scale, VectorType accType) {
    IndexMath im{b, loc};
    QKVLayout layout = op.getLayout();
    bool thd = layout == QKVLayout::thd;
    Type f32 = b.getF32Type();
    Value zero = im.c(0);

    // Where this row sits: sequence, position in it, the lengths, and the
    // token where the sequence's keys start.
    Value sequence = batch, position = row, lenQ = im.c(seqQ),
          lenKV = im.c(seqKV), kvBase = zero;
    if (thd) {
      Value cuQ = adaptor.getCuSeqlensQ(), cuKV = adaptor.getCuSeqlensKv();
      Value offQ = adaptor.getSeqOffsetsQ(), offKV = adaptor.getSeqOffsetsKv();
      // Linear search: the sequence whose q tokens contain `row`. A token
      // of no sequence keeps lenKV = 0 (no keys: a zero row).
      SmallVector<Value> init = {zero, zero, zero, zero, zero};
      auto search = scf::ForOp::create(
          b, loc, zero, im.c(numSequences), im.c(1), init,
          [&](OpBuilder &b, Location loc, Value n, ValueRange found) {
            IndexMath im{b, loc};
            Value next = im.add(n, im.c(1));
            Value qLen = im.sub(im.load(cuQ, next), im.load(cuQ, n));
            Value kvLen = im.sub(im.load(cuKV, next), im.load(cuKV, n));
            Value qStart = offQ ? im.load(offQ, n) : im.load(cuQ, n);
            Value kvStart = offKV ? im.load(offKV, n) : im.load(cuKV, n);
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
    } else if (isPaddingMask(op.getMaskKind())) {
      lenQ = im.load(adaptor.getSeqlensQ(), batch);
      lenKV = im.load(adaptor.getSeqlensKv(), batch);
    }

    // The visible key range [lo, hi).
    Value shift = im.sub(lenKV, lenQ);
    Value lo = zero;
    Value hi = padding ? lenKV : im.c(seqKV);
    if (causal)
      hi = im.min(
          hi, im.add(position, bottomRight ? im.add(shift, im.c(1)) : im.c(1)));
    Value windowShift = bottomRight ? shift : zero;
    if (windowLeft >= 0)
      lo = im.max(lo, im.sub(im.add(position, windowShift), im.c(windowLeft)));
    if (windowRight >= 0)
      hi = im.min(hi,
                  im.add(im.add(position, windowShift), im.c(windowRight + 1)));
    if (padding) // query rows past the sequence see nothing
      hi = im.select(im.lt(position, lenQ), hi, lo);
    hi = im.max(hi, lo);

    Value qRow = readRow(b, loc, adaptor.getQ(),
                         rowIndices(layout, batch, row, head, zero));
    Value scaleF =
        arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(scale));
    Value negInf = f32Const(b, loc, -INFINITY);
    Value accInit = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));

    auto keyLoop = scf::ForOp::create(
        b, loc, lo, hi, im.c(1),
        ValueRange{negInf, f32Const(b, loc, 0.0), accInit},
        [&](OpBuilder &b, Location loc, Value key, ValueRange state) {
          IndexMath im{b, loc};
          Value token = im.add(kvBase, key);
          Value kRow =
              readRow(b, loc, adaptor.getK(),
                      rowIndices(layout, batch, token, kvHead, im.c(0)));
          Value dot = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::ADD,
              arith::MulFOp::create(b, loc, qRow, kRow),
              arith::FastMathFlags::reassoc);
          Value score;
          if (biasKind == BiasKind::pre_scale) {
            Value bias =
                emitExtToF32(b, loc,
                             readBroadcast(b, loc, adaptor.getBias(),
                                           {sequence, head, position, key}));
            score = arith::MulFOp::create(
                b, loc, arith::AddFOp::create(b, loc, dot, bias), scaleF);
          } else {
            score = arith::MulFOp::create(b, loc, dot, scaleF);
          }
          if (biasKind == BiasKind::post_scale) {
            Value bias =
                emitExtToF32(b, loc,
                             readBroadcast(b, loc, adaptor.getBias(),
                                           {sequence, head, position, key}));
            score = arith::AddFOp::create(b, loc, score, bias);
          }
          if (biasKind == BiasKind::alibi) {
            Value slopes = adaptor.getAlibiSlopes();
            SmallVector<Value> at = {head};
            if (cast<RankedTensorType>(slopes.getType()).getRank() == 2)
              at = {sequence, head};
            Value slope = tensor::ExtractOp::create(b, loc, slopes, at);
            // -slope * |j - i - (len_kv - len_q)|, bottom-right aligned.
            Value distance = im.sub(key, im.add(position, shift));
            Value magnitude = im.max(distance, im.sub(im.c(0), distance));
            Value distanceF = arith::UIToFPOp::create(
                b, loc, f32,
                arith::IndexCastOp::create(b, loc, b.getI64Type(), magnitude));
            score = arith::SubFOp::create(
                b, loc, score, arith::MulFOp::create(b, loc, slope, distanceF));
          }

          auto update = [&](OpBuilder &b, Location loc) {
            Value m = state[0], l = state[1], acc = state[2];
            Value mNew = arith::MaximumFOp::create(b, loc, m, score);
            Value correction = math::ExpOp::create(
                b, loc, arith::SubFOp::create(b, loc, m, mNew));
            Value p = math::ExpOp::create(
                b, loc, arith::SubFOp::create(b, loc, score, mNew));
            Value lNew = arith::AddFOp::create(
                b, loc, arith::MulFOp::create(b, loc, l, correction), p);
            Value vRow =
                readRow(b, loc, adaptor.getV(),
                        rowIndices(layout, batch, token, kvHead,
                                   arith::ConstantIndexOp::create(b, loc, 0)));
            Value correctionV =
                vector::BroadcastOp::create(b, loc, accType, correction);
            Value pV = vector::BroadcastOp::create(b, loc, accType, p);
            Value accNew = vector::FMAOp::create(
                b, loc, pV, vRow,
                arith::MulFOp::create(b, loc, acc, correctionV));
            return SmallVector<Value>{mNew, lNew, accNew};
          };

          if (Value maskTensor = adaptor.getMask()) {
            Value excluded = readBroadcast(b, loc, maskTensor,
                                           {sequence, head, position, key});
            auto ifOp = scf::IfOp::create(
                b, loc, excluded,
                [&](OpBuilder &b, Location loc) {
                  scf::YieldOp::create(b, loc, state);
                },
                [&](OpBuilder &b, Location loc) {
                  scf::YieldOp::create(b, loc, update(b, loc));
                });
            scf::YieldOp::create(b, loc, ifOp.getResults());
          } else {
            scf::YieldOp::create(b, loc, update(b, loc));
          }
        });
    Value m = keyLoop.getResult(0), l = keyLoop.getResult(1),
          acc = keyLoop.getResult(2);

    // The extra denominator term of off_by_one (e^0) and learnable
    // (e^alpha_h) softmax, folded in like a key whose value row is zero.
    if (softmax != SoftmaxKind::vanilla) {
      Value extra = f32Const(b, loc, 0.0);
      if (softmax == SoftmaxKind::learnable)
        extra = tensor::ExtractOp::create(b, loc, adaptor.getSoftmaxOffset(),
                                          ValueRange{zero, head, zero, zero});
      Value mNew = arith::MaximumFOp::create(b, loc, m, extra);
      Value correction =
          math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, mNew));
      l = arith::AddFOp::create(
          b, loc, arith::MulFOp::create(b, loc, l, correction),
          math::ExpOp::create(b, loc,
                              arith::SubFOp::create(b, loc, extra, mNew)));
      acc = arith::MulFOp::create(
          b, loc, acc,
          vector::BroadcastOp::create(b, loc, accType, correction));
      m = mNew;
    }

    // O = acc / l and LSE = m + log(l); a row that saw nothing (l = 0)
    // keeps O = 0 and LSE = -inf.
    Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, l,
                                       f32Const(b, loc, 0.0));
    Value safeL =
        arith::SelectOp::create(b, loc, seen, l, f32Const(b, loc, 1.0));
    Value rowOut = arith::DivFOp::create(
        b, loc, acc, vector::BroadcastOp::create(b, loc, accType, safeL));
    Value lseValue = arith::SelectOp::create(
        b, loc, seen,
        arith::AddFOp::create(b, loc, m, math::LogOp::create(b, loc, safeL)),
        negInf);

    RankedTensorType oType = op.getO().getType();
    Type outElement = oType.getElementType();
    if (!outElement.isF32())
      rowOut = arith::TruncFOp::create(
          b, loc, VectorType::get(accType.getShape(), outElement), rowOut);
    SmallVector<Value> updated;
    updated.push_back(vector::TransferWriteOp::create(
                          b, loc, rowOut, results[0],
                          rowIndices(layout, batch, row, head, zero),
                          ArrayRef<bool>{true})
                          .getResult());
    if (results.size() > 1) {
      SmallVector<Value> at = thd ? SmallVector<Value>{row, head, zero}
                                  : SmallVector<Value>{batch, head, row, zero};
      updated.push_back(
          tensor::InsertOp::create(b, loc, lseValue, results[1], at));
    }
    return updated;
  }
};

} // namespace

std::optional<std::string>
mlir::te::getAttentionUnsupportedReason(AttentionOp op) {
  if (!op.getDropout().isZero())
    return std::string("te.attention with dropout has no CPU lowering yet");
  for (Value value : op->getOperands())
    if (!cast<ShapedType>(value.getType()).hasStaticShape())
      return std::string(
          "te.attention with dynamic shapes has no CPU lowering yet");
  return std::nullopt;
}

void mlir::te::populateAttentionLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionOpLowering>(patterns.getContext());
}
