//===- FoldEmpty.cpp - te ops on zero-size tensors ------------------------===//
//
// te-fold-empty: an empty micro-batch or an empty key/value cache gives te
// ops zero-size operands. Their results are defined (docs/TEDialect.md,
// "Zero-size tensors") and need no kernel: this pass writes them as
// constants before the dispatch, so that neither the native lowerings nor
// plugins ever meet a zero-size problem, whose loops and tilings would
// divide by zero or index out of bounds.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/Transforms/Passes.h"

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::te {
#define GEN_PASS_DEF_TEFOLDEMPTY
#include "te/Dialect/TE/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// Whether `type` is a tensor with a static size of 0 (a size, not the
/// element count, which overflows for huge shapes).
bool hasNoElements(Type type) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  return tensorType && llvm::is_contained(tensorType.getShape(), 0);
}

/// A constant tensor of `type` with every element `value` (0 for integer
/// and float elements alike).
Value splat(OpBuilder &b, Location loc, Type type, double value = 0.0) {
  auto tensorType = cast<RankedTensorType>(type);
  Type element = tensorType.getElementType();
  // Nothing to fill: a constant would still be materialized (the GPU
  // target copies constants with a kernel, which has no work here).
  if (hasNoElements(tensorType))
    return tensor::EmptyOp::create(b, loc, tensorType.getShape(), element);
  TypedAttr scalar;
  if (auto floatType = dyn_cast<FloatType>(element))
    scalar = b.getFloatAttr(floatType, value);
  else
    scalar = b.getIntegerAttr(element, static_cast<int64_t>(value));
  return arith::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(tensorType, scalar));
}

/// Whether the attention problem of `op` is empty: no batch entries, no
/// query heads, no queries or no keys (static sizes only; a dynamic size
/// is left to the kernels).
bool isEmptyAttention(AttentionOpInterface op) {
  QKVLayout layout = op.getLayout();
  auto q = getHeadTensorDims(
      layout, cast<RankedTensorType>(op.getQ().getType()).getShape());
  auto k = getHeadTensorDims(
      layout, cast<RankedTensorType>(op.getK().getType()).getShape());
  // `thd` has no batch dimension in the tensors (cu_seqlens has >= 2
  // entries, so at least one sequence).
  bool noBatch = layout != QKVLayout::thd && q.batch == 0;
  return noBatch || q.heads == 0 || q.seq == 0 || k.seq == 0;
}

/// The LSE of query rows that see no key: the log of the softmax's extra
/// denominator term, broadcast from alpha_h ([1, h, 1, 1]) for `learnable`.
Value noKeyLse(OpBuilder &b, AttentionOp op, RankedTensorType lseType) {
  Location loc = op.getLoc();
  switch (op.getSoftmaxKind()) {
  case SoftmaxKind::vanilla:
    return splat(b, loc, lseType, -std::numeric_limits<double>::infinity());
  case SoftmaxKind::off_by_one:
    return splat(b, loc, lseType, 0.0);
  case SoftmaxKind::learnable:
    break;
  }
  // LSE is [b, h, s_q, 1], or [t_q, h, 1] for thd: the head is dimension 1
  // either way.
  int64_t rank = lseType.getRank();
  MLIRContext *context = b.getContext();
  AffineExpr zero = getAffineConstantExpr(0, context);
  AffineMap offsetMap = AffineMap::get(
      rank, 0, {zero, getAffineDimExpr(1, context), zero, zero}, context);
  SmallVector<AffineMap> maps = {offsetMap, b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(b, loc, lseType.getShape(),
                                       lseType.getElementType());
  auto broadcast = linalg::GenericOp::create(
      b, loc, TypeRange{lseType}, ValueRange{op.getSoftmaxOffset()},
      ValueRange{init}, maps, iterators,
      [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc, args[0]);
      });
  return broadcast.getResult(0);
}

void foldEmptyAttention(AttentionOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> results = {splat(b, loc, op.getO().getType())};
  if (Value lse = op.getLse()) {
    auto lseType = cast<RankedTensorType>(lse.getType());
    // Only s_kv can be 0 with query rows left: they see no key.
    results.push_back(hasNoElements(lseType) ? splat(b, loc, lseType)
                                             : noKeyLse(b, op, lseType));
  }
  op->replaceAllUsesWith(results);
  op->erase();
}

/// Replaces every result of `op` by a zero constant of its type.
void replaceWithZeros(Operation *op) {
  OpBuilder b(op);
  SmallVector<Value> results;
  for (Value result : op->getResults())
    results.push_back(splat(b, op->getLoc(), result.getType()));
  op->replaceAllUsesWith(results);
  op->erase();
}

/// Whether `op`'s results on zero-size operands are all 0 (and the op is
/// one this pass folds): see the pass description.
bool foldsToZeros(Operation *op) {
  if (auto attention = dyn_cast<AttentionBackwardOp>(op))
    return isEmptyAttention(attention);
  // The amax of no elements is 0, as TE's reduction starts from 0.
  if (auto amax = dyn_cast<AmaxOp>(op))
    return hasNoElements(amax.getInput().getType());
  // Block-scaled casts of an empty tensor: empty data and empty scales.
  // (per_tensor's scale_inv is 1 / scale, which its lowering computes.)
  if (auto quantize = dyn_cast<QuantizeOp>(op))
    return quantize.getMode() != ScalingMode::per_tensor &&
           hasNoElements(quantize.getInput().getType());
  if (auto dequantize = dyn_cast<DequantizeOp>(op))
    return hasNoElements(dequantize.getData().getType());
  // No rows or no columns: an empty product, whose FP8 amax is 0.
  if (auto matmul = dyn_cast<ScaledMatmulOp>(op))
    return hasNoElements(matmul.getD().getType());
  if (auto grouped = dyn_cast<GroupedMatmulOp>(op))
    return hasNoElements(grouped.getD().getType());
  return false;
}

struct TEFoldEmptyPass : public te::impl::TEFoldEmptyBase<TEFoldEmptyPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<TEDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        if (isEmptyAttention(attention))
          foldEmptyAttention(attention);
      } else if (foldsToZeros(op)) {
        replaceWithZeros(op);
      }
    }
  }
};

} // namespace
