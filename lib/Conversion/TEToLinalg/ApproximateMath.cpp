//===- ApproximateMath.cpp - Polynomial exp/log for the host --------------===//

#include "te/Conversion/TEToLinalg/TEToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::te {
#define GEN_PASS_DEF_APPROXIMATEMATHFORCPU
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;

namespace {

struct ApproximateMathForCPUPass
    : te::impl::ApproximateMathForCPUBase<ApproximateMathForCPUPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The predicate sees the op name with or without the dialect prefix,
    // depending on the pattern; accept both.
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "exp" || name == "log";
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
