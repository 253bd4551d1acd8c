//===- TEToLinalgInternal.h - Shared by the host lowering files -*- C++ -*-===//
#ifndef TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H
#define TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <string>

namespace mlir::te {

/// Why the host lowering cannot take `op` (a te op) yet, or nullopt when it
/// can. Patterns bail out on exactly these, and the pass reports them.
std::optional<std::string> getCPUUnsupportedReason(Operation *op);

/// The parts of getCPUUnsupportedReason that concern attention.
std::optional<std::string> getAttentionUnsupportedReason(AttentionOp op);
std::optional<std::string>
getAttentionUnsupportedReason(AttentionBackwardOp op);

/// te.attention as online-softmax loops over rows (AttentionLowering.cpp).
void populateAttentionLoweringPatterns(RewritePatternSet &patterns);

} // namespace mlir::te

#endif // TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H
