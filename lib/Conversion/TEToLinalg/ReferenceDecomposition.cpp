//===- ReferenceDecomposition.cpp - te ops as dense reference math --------===//
//
// te-decompose-reference: te.attention as the textbook dense computation,
// written independently of AttentionLowering.cpp so that the two can be
// checked against each other (te-run --check). The f32 score tensor
// [b, h_q, s_q, s_kv] is materialized by a contraction; visibility is
// computed per element from linalg.index values straight from the op's
// documented rules; the softmax is the two-pass one (row max, exp, row sum).
// Nothing here is shared with the production lowering on purpose: a helper
// used by both would make a bug in it invisible to the check.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
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
  if (isa<AttentionBackwardOp>(op))
    return std::string("no reference decomposition for te.attention_backward");
  auto attention = dyn_cast<AttentionOp>(op);
  if (!attention)
    return std::nullopt;
  if (attention.getLayout() == QKVLayout::thd)
    return std::string(
        "no reference decomposition for te.attention with layout thd");
  if (!attention.getDropout().isZero() || attention.getRngState())
    return std::string(
        "no reference decomposition for te.attention with dropout");
  for (Value value : op->getOperands())
    if (!cast<ShapedType>(value.getType()).hasStaticShape())
      return std::string(
          "no reference decomposition for te.attention with dynamic shapes");
  return std::nullopt;
}

namespace {

using utils::IteratorType;

/// The canonical iteration dimensions (batch, head, query row, x) mapped to
/// the positions of a [b, s, h, d]-like tensor in `layout`; `head` may be
/// the kv head (h floordiv group) and `row` the key index.
SmallVector<AffineExpr, 4> layoutExprs(QKVLayout layout, AffineExpr batch,
                                       AffineExpr head, AffineExpr row,
                                       AffineExpr x) {
  switch (layout) {
  case QKVLayout::bshd:
    return {batch, row, head, x};
  case QKVLayout::sbhd:
    return {row, batch, head, x};
  case QKVLayout::bhsd:
    return {batch, head, row, x};
  case QKVLayout::thd:
    break;
  }
  llvm_unreachable("thd has no reference decomposition");
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

struct AttentionOpReferenceDecomposition : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> gap = getReferenceDecompositionGap(op))
      return rewriter.notifyMatchFailure(op, *gap);
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    OpBuilder &b = rewriter;
    QKVLayout layout = op.getLayout();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto kType = cast<RankedTensorType>(op.getK().getType());
    RankedTensorType oType = op.getO().getType();

    // Sizes from the op's documented layouts.
    auto sizes = [&](RankedTensorType type) -> std::array<int64_t, 4> {
      ArrayRef<int64_t> s = type.getShape();
      switch (layout) {
      case QKVLayout::bshd:
        return {s[0], s[2], s[1], s[3]};
      case QKVLayout::sbhd:
        return {s[1], s[2], s[0], s[3]};
      default:
        return {s[0], s[1], s[2], s[3]};
      }
    }; // (batch, heads, seq, head dim)
    std::array<int64_t, 4> qSizes = sizes(qType), kSizes = sizes(kType);
    int64_t batches = qSizes[0], headsQ = qSizes[1], seqQ = qSizes[2];
    int64_t headsKV = kSizes[1], seqKV = kSizes[2];
    int64_t dV = sizes(oType)[3];
    int64_t group = headsQ / headsKV;

    MaskKind maskKind = op.getMaskKind();
    bool padding = maskKind == MaskKind::padding ||
                   maskKind == MaskKind::padding_causal ||
                   maskKind == MaskKind::padding_causal_bottom_right;
    bool causal = maskKind == MaskKind::causal ||
                  maskKind == MaskKind::causal_bottom_right ||
                  maskKind == MaskKind::padding_causal ||
                  maskKind == MaskKind::padding_causal_bottom_right;
    // TE's resolution of the diagonal's alignment (DotProductAttention's
    // bottom_right_diagonal): fixed by the causal masks, the attribute (true
    // when absent) for the others.
    bool bottomRight = op.getBottomRightDiagonal().value_or(true);
    if (maskKind == MaskKind::causal || maskKind == MaskKind::padding_causal)
      bottomRight = false;
    if (maskKind == MaskKind::causal_bottom_right ||
        maskKind == MaskKind::padding_causal_bottom_right)
      bottomRight = true;
    int64_t windowLeft, windowRight;
    std::tie(windowLeft, windowRight) = op.getWindowBounds();
    BiasKind biasKind = op.getBiasKind();
    SoftmaxKind softmax = op.getSoftmaxKind();
    double scale = *op.getEffectiveScale();

    SmallVector<int64_t> scoreShape = {batches, headsQ, seqQ, seqKV};
    SmallVector<int64_t> rowShape = {batches, headsQ, seqQ};

    // Loops (b, h, i, j, d) / (b, h, i, j, x): d0..d4.
    AffineExpr d0, d1, d2, d3, d4;
    bindDims(ctx, d0, d1, d2, d3, d4);
    AffineExpr kvHead = d1.floorDiv(group);
    AffineMap scores5 = AffineMap::get(5, 0, {d0, d1, d2, d3}, ctx);
    AffineMap rows4 = AffineMap::get(4, 0, {d0, d1, d2}, ctx);
    AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
    AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ctx);
    SmallVector<IteratorType> parallel4(4, IteratorType::parallel);
    SmallVector<IteratorType> parallel3(3, IteratorType::parallel);
    SmallVector<IteratorType> reduceLast4 = {
        IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
        IteratorType::reduction};
    Type f32 = b.getF32Type();

    // 1. Dense scores S[b, h, i, j] = sum_d q[b, i, h, d] k[b, j, h/g, d].
    Value scores =
        linalg::GenericOp::create(
            b, loc, TypeRange{RankedTensorType::get(scoreShape, f32)},
            ValueRange{op.getQ(), op.getK()},
            ValueRange{filled(b, loc, scoreShape, 0.0)},
            ArrayRef<AffineMap>{
                AffineMap::get(5, 0, layoutExprs(layout, d0, d1, d2, d4), ctx),
                AffineMap::get(5, 0, layoutExprs(layout, d0, kvHead, d3, d4),
                               ctx),
                scores5},
            ArrayRef<IteratorType>{
                IteratorType::parallel, IteratorType::parallel,
                IteratorType::parallel, IteratorType::parallel,
                IteratorType::reduction},
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value product = arith::MulFOp::create(
                  b, loc, toF32(b, loc, args[0]), toF32(b, loc, args[1]));
              linalg::YieldOp::create(
                  b, loc,
                  ValueRange{arith::AddFOp::create(b, loc, args[2], product)});
            })
            .getResult(0);

    // 2. Logits with bias and alibi; -inf where the key is not visible.
    SmallVector<Value> inputs = {scores};
    SmallVector<AffineMap> maps = {id4};
    SmallVector<AffineExpr> logical = {d0, d1, d2, d3};
    int biasAt = -1, maskAt = -1, slopesAt = -1, lenAt = -1;
    if (Value bias = op.getBias(); bias && (biasKind == BiasKind::pre_scale ||
                                            biasKind == BiasKind::post_scale)) {
      biasAt = inputs.size();
      inputs.push_back(bias);
      maps.push_back(broadcastMap(ctx, 4, bias, logical));
    }
    if (Value mask = op.getMask()) {
      maskAt = inputs.size();
      inputs.push_back(mask);
      maps.push_back(broadcastMap(ctx, 4, mask, logical));
    }
    if (biasKind == BiasKind::alibi) {
      Value slopes = op.getAlibiSlopes();
      slopesAt = inputs.size();
      inputs.push_back(slopes);
      bool perBatch = cast<RankedTensorType>(slopes.getType()).getRank() == 2;
      maps.push_back(perBatch ? AffineMap::get(4, 0, {d0, d1}, ctx)
                              : AffineMap::get(4, 0, {d1}, ctx));
    }
    if (padding) {
      lenAt = inputs.size();
      inputs.push_back(op.getSeqlensQ());
      inputs.push_back(op.getSeqlensKv());
      maps.push_back(AffineMap::get(4, 0, {d0}, ctx));
      maps.push_back(AffineMap::get(4, 0, {d0}, ctx));
    }
    maps.push_back(id4);
    Value logits =
        linalg::GenericOp::create(
            b, loc, TypeRange{RankedTensorType::get(scoreShape, f32)}, inputs,
            ValueRange{tensor::EmptyOp::create(b, loc, scoreShape, f32)}, maps,
            parallel4,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Type i64 = b.getI64Type();
              auto index = [&](unsigned dim) -> Value {
                return arith::IndexCastOp::create(
                    b, loc, i64, linalg::IndexOp::create(b, loc, dim));
              };
              auto c64 = [&](int64_t value) -> Value {
                return arith::ConstantIntOp::create(b, loc, i64, value);
              };
              auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) {
                return arith::CmpIOp::create(b, loc, pred, x, y).getResult();
              };
              auto both = [&](Value x, Value y) -> Value {
                return arith::AndIOp::create(b, loc, x, y);
              };
              Value i = index(2), j = index(3);
              Value lenQ = c64(seqQ), lenKV = c64(seqKV);
              if (lenAt >= 0) {
                lenQ = arith::ExtSIOp::create(b, loc, i64, args[lenAt]);
                lenKV = arith::ExtSIOp::create(b, loc, i64, args[lenAt + 1]);
              }
              // The diagonal key of row i: i + len_kv - len_q when aligned
              // bottom-right (actual lengths with padding), i otherwise. The
              // causal mask, the window and ALiBi are measured from it.
              Value shift = arith::SubIOp::create(b, loc, lenKV, lenQ);
              Value diagonal =
                  bottomRight ? arith::AddIOp::create(b, loc, i, shift) : i;

              Value dot = args[0];
              Value scaleValue = constantF32(b, loc, scale);
              Value x;
              if (biasKind == BiasKind::pre_scale)
                x = arith::MulFOp::create(
                    b, loc,
                    arith::AddFOp::create(b, loc, dot,
                                          toF32(b, loc, args[biasAt])),
                    scaleValue);
              else
                x = arith::MulFOp::create(b, loc, dot, scaleValue);
              if (biasKind == BiasKind::post_scale)
                x = arith::AddFOp::create(b, loc, x,
                                          toF32(b, loc, args[biasAt]));
              if (slopesAt >= 0) {
                // -slope * |i + diag - j|.
                Value distance = arith::SubIOp::create(b, loc, j, diagonal);
                Value magnitude = arith::MaxSIOp::create(
                    b, loc, distance,
                    arith::SubIOp::create(b, loc, c64(0), distance));
                Value penalty = arith::MulFOp::create(
                    b, loc, args[slopesAt],
                    arith::SIToFPOp::create(b, loc, f32, magnitude));
                x = arith::SubFOp::create(b, loc, x, penalty);
              }

              Value visible = arith::ConstantIntOp::create(b, loc, 1, 1);
              if (padding)
                visible =
                    both(both(visible, cmp(arith::CmpIPredicate::slt, i, lenQ)),
                         cmp(arith::CmpIPredicate::slt, j, lenKV));
              if (causal)
                visible =
                    both(visible, cmp(arith::CmpIPredicate::sle, j, diagonal));
              if (windowLeft >= 0)
                visible =
                    both(visible, cmp(arith::CmpIPredicate::sge, j,
                                      arith::SubIOp::create(b, loc, diagonal,
                                                            c64(windowLeft))));
              if (windowRight >= 0)
                visible =
                    both(visible, cmp(arith::CmpIPredicate::sle, j,
                                      arith::AddIOp::create(b, loc, diagonal,
                                                            c64(windowRight))));
              if (maskAt >= 0) // true excludes the key
                visible = both(visible,
                               arith::XOrIOp::create(
                                   b, loc, args[maskAt],
                                   arith::ConstantIntOp::create(b, loc, 1, 1)));
              linalg::YieldOp::create(
                  b, loc,
                  ValueRange{arith::SelectOp::create(
                      b, loc, visible, x, constantF32(b, loc, -INFINITY))});
            })
            .getResult(0);

    // The extra denominator term's logit e (off_by_one: 0, learnable:
    // alpha_h), per row; it starts both the row max and the row sum.
    Value extra;
    if (softmax == SoftmaxKind::off_by_one) {
      extra = filled(b, loc, rowShape, 0.0);
    } else if (softmax == SoftmaxKind::learnable) {
      AffineExpr zero = getAffineConstantExpr(0, ctx);
      extra = linalg::GenericOp::create(
                  b, loc, TypeRange{RankedTensorType::get(rowShape, f32)},
                  ValueRange{op.getSoftmaxOffset()},
                  ValueRange{tensor::EmptyOp::create(b, loc, rowShape, f32)},
                  ArrayRef<AffineMap>{
                      AffineMap::get(3, 0, {zero, d1, zero, zero}, ctx), id3},
                  parallel3,
                  [&](OpBuilder &b, Location loc, ValueRange args) {
                    linalg::YieldOp::create(b, loc, ValueRange{args[0]});
                  })
                  .getResult(0);
    }

    // 3. Row max m = max(e, max_j x).
    Value rowMax =
        linalg::GenericOp::create(
            b, loc, TypeRange{RankedTensorType::get(rowShape, f32)},
            ValueRange{logits},
            ValueRange{extra ? extra : filled(b, loc, rowShape, -INFINITY)},
            ArrayRef<AffineMap>{id4, rows4}, reduceLast4,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              linalg::YieldOp::create(b, loc,
                                      ValueRange{arith::MaximumFOp::create(
                                          b, loc, args[0], args[1])});
            })
            .getResult(0);

    // 4. p = exp(x - m); an invisible key (x = -inf) contributes 0 even
    // when the whole row is invisible (m = -inf).
    Value probs =
        linalg::GenericOp::create(
            b, loc, TypeRange{RankedTensorType::get(scoreShape, f32)},
            ValueRange{logits, rowMax},
            ValueRange{tensor::EmptyOp::create(b, loc, scoreShape, f32)},
            ArrayRef<AffineMap>{id4, rows4, id4}, parallel4,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value invisible = arith::CmpFOp::create(
                  b, loc, arith::CmpFPredicate::OEQ, args[0],
                  constantF32(b, loc, -INFINITY));
              Value p = math::ExpOp::create(
                  b, loc, arith::SubFOp::create(b, loc, args[0], args[1]));
              linalg::YieldOp::create(
                  b, loc,
                  ValueRange{arith::SelectOp::create(
                      b, loc, invisible, constantF32(b, loc, 0.0), p)});
            })
            .getResult(0);

    // 5. Row sum l = exp(e - m) + sum_j p.
    Value sumInit = filled(b, loc, rowShape, 0.0);
    if (extra)
      sumInit =
          linalg::GenericOp::create(
              b, loc, TypeRange{RankedTensorType::get(rowShape, f32)},
              ValueRange{extra, rowMax},
              ValueRange{tensor::EmptyOp::create(b, loc, rowShape, f32)},
              ArrayRef<AffineMap>{id3, id3, id3}, parallel3,
              [&](OpBuilder &b, Location loc, ValueRange args) {
                linalg::YieldOp::create(
                    b, loc,
                    ValueRange{math::ExpOp::create(
                        b, loc,
                        arith::SubFOp::create(b, loc, args[0], args[1]))});
              })
              .getResult(0);
    Value rowSum =
        linalg::GenericOp::create(
            b, loc, TypeRange{RankedTensorType::get(rowShape, f32)},
            ValueRange{probs}, ValueRange{sumInit},
            ArrayRef<AffineMap>{id4, rows4}, reduceLast4,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              linalg::YieldOp::create(
                  b, loc,
                  ValueRange{arith::AddFOp::create(b, loc, args[0], args[1])});
            })
            .getResult(0);

    // 6. Unnormalized P V: acc[b, h, i, x] = sum_j p[b, h, i, j] v[b, j,
    // h/g, x]. Loops (b, h, i, x, j).
    SmallVector<int64_t> accShape = {batches, headsQ, seqQ, dV};
    Value acc =
        linalg::GenericOp::create(
            b, loc, TypeRange{RankedTensorType::get(accShape, f32)},
            ValueRange{probs, op.getV()},
            ValueRange{filled(b, loc, accShape, 0.0)},
            ArrayRef<AffineMap>{
                AffineMap::get(5, 0, {d0, d1, d2, d4}, ctx),
                AffineMap::get(5, 0, layoutExprs(layout, d0, kvHead, d4, d3),
                               ctx),
                AffineMap::get(5, 0, {d0, d1, d2, d3}, ctx)},
            ArrayRef<IteratorType>{
                IteratorType::parallel, IteratorType::parallel,
                IteratorType::parallel, IteratorType::parallel,
                IteratorType::reduction},
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value product = arith::MulFOp::create(b, loc, args[0],
                                                    toF32(b, loc, args[1]));
              linalg::YieldOp::create(
                  b, loc,
                  ValueRange{arith::AddFOp::create(b, loc, args[2], product)});
            })
            .getResult(0);

    // 7. O = acc / l in q's layout and element type; a row that sees
    // nothing (l = 0, or only the extra term: acc = 0) is 0.
    Type oElement = oType.getElementType();
    Value o =
        linalg::GenericOp::create(
            b, loc, TypeRange{oType}, ValueRange{acc, rowSum},
            ValueRange{
                tensor::EmptyOp::create(b, loc, oType.getShape(), oElement)},
            ArrayRef<AffineMap>{
                id4, rows4,
                AffineMap::get(4, 0, layoutExprs(layout, d0, d1, d2, d3), ctx)},
            parallel4,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value seen =
                  arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                        args[1], constantF32(b, loc, 0.0));
              Value value = arith::SelectOp::create(
                  b, loc, seen, arith::DivFOp::create(b, loc, args[0], args[1]),
                  constantF32(b, loc, 0.0));
              if (!oElement.isF32())
                value = arith::TruncFOp::create(b, loc, oElement, value);
              linalg::YieldOp::create(b, loc, ValueRange{value});
            })
            .getResult(0);

    SmallVector<Value> results = {o};
    if (Value lseResult = op.getLse()) {
      // 8. LSE = m + log(l); l = 0 only when there is no extra term and the
      // row sees nothing: log E = log 0 = -inf.
      auto lseType = cast<RankedTensorType>(lseResult.getType());
      results.push_back(
          linalg::GenericOp::create(
              b, loc, TypeRange{lseType}, ValueRange{rowMax, rowSum},
              ValueRange{
                  tensor::EmptyOp::create(b, loc, lseType.getShape(), f32)},
              ArrayRef<AffineMap>{rows4, rows4, id4}, parallel4,
              [&](OpBuilder &b, Location loc, ValueRange args) {
                Value seen =
                    arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                          args[1], constantF32(b, loc, 0.0));
                Value lse = arith::AddFOp::create(
                    b, loc, args[0], math::LogOp::create(b, loc, args[1]));
                linalg::YieldOp::create(
                    b, loc,
                    ValueRange{arith::SelectOp::create(
                        b, loc, seen, lse, constantF32(b, loc, -INFINITY))});
              })
              .getResult(0));
    }
    rewriter.replaceOp(op, results);
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
  patterns.add<AttentionOpReferenceDecomposition>(patterns.getContext());
}
