//===- TEAttrs.cpp - Attributes and enums of the te dialect ---------------===//

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::te;

#include "te/Dialect/TE/IR/TEEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "te/Dialect/TE/IR/TEAttrs.cpp.inc"

void TEDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "te/Dialect/TE/IR/TEAttrs.cpp.inc"
      >();
}

bool mlir::te::isPaddingMask(MaskKind kind) {
  return kind == MaskKind::padding || kind == MaskKind::padding_causal ||
         kind == MaskKind::padding_causal_bottom_right;
}

bool mlir::te::isCausalMask(MaskKind kind) {
  return kind == MaskKind::causal || kind == MaskKind::causal_bottom_right ||
         kind == MaskKind::padding_causal ||
         kind == MaskKind::padding_causal_bottom_right;
}

bool mlir::te::isBottomRightMask(MaskKind kind) {
  return kind == MaskKind::causal_bottom_right ||
         kind == MaskKind::padding_causal_bottom_right;
}

std::optional<bool> mlir::te::getForcedBottomRightDiagonal(MaskKind kind) {
  if (kind == MaskKind::causal || kind == MaskKind::padding_causal)
    return false;
  if (isBottomRightMask(kind))
    return true;
  return std::nullopt;
}

bool mlir::te::resolveBottomRightDiagonal(MaskKind kind,
                                          std::optional<bool> requested) {
  return getForcedBottomRightDiagonal(kind).value_or(requested.value_or(true));
}

FailureOr<double> mlir::te::getFP8Max(Type fp8Type) {
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(fp8Type))
    return failure();
  const llvm::fltSemantics &sem = cast<FloatType>(fp8Type).getFloatSemantics();
  return llvm::APFloat::getLargest(sem).convertToDouble();
}

ArrayRef<HeadTensorDim> mlir::te::getLayoutOrder(QKVLayout layout) {
  using D = HeadTensorDim;
  static constexpr D bshd[] = {D::Batch, D::Seq, D::Heads, D::HeadDim};
  static constexpr D sbhd[] = {D::Seq, D::Batch, D::Heads, D::HeadDim};
  static constexpr D bhsd[] = {D::Batch, D::Heads, D::Seq, D::HeadDim};
  static constexpr D thd[] = {D::Seq, D::Heads, D::HeadDim};
  switch (layout) {
  case QKVLayout::bshd:
    return bshd;
  case QKVLayout::sbhd:
    return sbhd;
  case QKVLayout::bhsd:
    return bhsd;
  case QKVLayout::thd:
    return thd;
  }
  llvm_unreachable("unknown QKV layout");
}

std::optional<unsigned> mlir::te::getLayoutPosition(QKVLayout layout,
                                                    HeadTensorDim dim) {
  ArrayRef<HeadTensorDim> order = getLayoutOrder(layout);
  const HeadTensorDim *found = llvm::find(order, dim);
  if (found == order.end())
    return std::nullopt;
  return static_cast<unsigned>(found - order.begin());
}

HeadTensorDims mlir::te::getHeadTensorDims(QKVLayout layout,
                                           ArrayRef<int64_t> shape) {
  int64_t logical[] = {ShapedType::kDynamic, 0, 0, 0};
  for (auto [dim, size] : llvm::zip(getLayoutOrder(layout), shape))
    logical[static_cast<unsigned>(dim)] = size;
  return {logical[0], logical[1], logical[2], logical[3]};
}
