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

HeadTensorDims mlir::te::getHeadTensorDims(QKVLayout layout,
                                           ArrayRef<int64_t> s) {
  switch (layout) {
  case QKVLayout::bshd:
    return {s[0], s[1], s[2], s[3]};
  case QKVLayout::sbhd:
    return {s[1], s[0], s[2], s[3]};
  case QKVLayout::bhsd:
    return {s[0], s[2], s[1], s[3]};
  case QKVLayout::thd:
    return {ShapedType::kDynamic, s[0], s[1], s[2]};
  }
  llvm_unreachable("unknown QKV layout");
}
