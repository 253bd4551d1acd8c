//===- TEDialect.h - The te dialect -----------------------------*- C++ -*-===//
#ifndef TE_DIALECT_TE_IR_TEDIALECT_H
#define TE_DIALECT_TE_IR_TEDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include "te/Dialect/TE/IR/TEDialect.h.inc"

#include <optional>
#include <string>

namespace mlir::te {

/// A location as users read it in messages: `file:line:col` for file
/// locations (looking through name and fused locations), MLIR's printed
/// form otherwise.
std::string formatSourceLocation(Location loc);

/// The te ops of `root` in pre-order: the numbering by which compiled
/// kernels refer to the ops of their program (see markTEOpOrdinals), which
/// te_compiler_source_locations reproduces from the source.
SmallVector<Operation *> getTEOpsInOrder(Operation *root);

/// Wraps each te op's location in a NameLoc "te.op.<k>" (k from
/// getTEOpsInOrder), so that what the kernel records about an op (the
/// messages of its run-time checks) names the op by number and stays valid
/// for every program that compiles to the same kernel; the runtime puts the
/// loading program's own locations back in.
void markTEOpOrdinals(Operation *root);

/// The ordinal markTEOpOrdinals gave the op at `loc`, if any.
std::optional<unsigned> getTEOpOrdinal(Location loc);

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEDIALECT_H
