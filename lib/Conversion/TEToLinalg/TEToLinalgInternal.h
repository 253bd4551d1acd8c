//===- TEToLinalgInternal.h - Shared by the host lowering files -*- C++ -*-===//
#ifndef TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H
#define TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H

#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <string>

namespace mlir::te {

/// The parts of getCPUUnsupportedReason that concern attention.
std::optional<std::string> getAttentionUnsupportedReason(AttentionOp op);
std::optional<std::string>
getAttentionUnsupportedReason(AttentionBackwardOp op);

/// te.attention as online-softmax loops over rows (AttentionLowering.cpp).
void populateAttentionLoweringPatterns(RewritePatternSet &patterns);

} // namespace mlir::te

#endif // TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H
