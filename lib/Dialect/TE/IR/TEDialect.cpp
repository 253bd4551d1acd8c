//===- TEDialect.cpp - The te dialect -------------------------------------===//

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::te;

#include "te/Dialect/TE/IR/TEDialect.cpp.inc"

void TEDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "te/Dialect/TE/IR/TEOps.cpp.inc"
      >();
  registerAttributes();
}

std::string mlir::te::formatSourceLocation(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return llvm::formatv("{0}:{1}:{2}", fileLoc.getFilename().getValue(),
                         fileLoc.getLine(), fileLoc.getColumn())
        .str();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return formatSourceLocation(nameLoc.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return formatSourceLocation(fused.getLocations().front());
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

SmallVector<Operation *> mlir::te::getTEOpsInOrder(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa_and_nonnull<TEDialect>(op->getDialect()))
      ops.push_back(op);
  });
  return ops;
}

static constexpr llvm::StringLiteral kOrdinalPrefix = "te.op.";

void mlir::te::markTEOpOrdinals(Operation *root) {
  for (auto [ordinal, op] : llvm::enumerate(getTEOpsInOrder(root)))
    op->setLoc(
        NameLoc::get(StringAttr::get(op->getContext(),
                                     kOrdinalPrefix + std::to_string(ordinal)),
                     op->getLoc()));
}

std::optional<unsigned> mlir::te::getTEOpOrdinal(Location loc) {
  if (auto nameLoc = dyn_cast<NameLoc>(loc)) {
    StringRef name = nameLoc.getName().getValue();
    unsigned ordinal;
    if (name.consume_front(kOrdinalPrefix) && !name.getAsInteger(10, ordinal))
      return ordinal;
    return getTEOpOrdinal(nameLoc.getChildLoc());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::optional<unsigned> ordinal = getTEOpOrdinal(inner))
        return ordinal;
  return std::nullopt;
}
