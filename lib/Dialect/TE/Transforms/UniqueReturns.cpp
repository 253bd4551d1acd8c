//===- UniqueReturns.cpp - One producer per returned buffer ---------------===//
//
// te-unique-returns: kernels return their results through out-parameters,
// one buffer each. A tensor returned twice would need one allocation to be
// two out-parameters, which buffer-results-to-out-params cannot hoist (MLIR
// 22 crashes on it), so every repeat becomes a copy before bufferization.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEUNIQUERETURNS
#include "te/Dialect/TE/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;

namespace {
struct TEUniqueReturnsPass
    : te::impl::TEUniqueReturnsBase<TEUniqueReturnsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 4> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        auto type = dyn_cast<RankedTensorType>(operand.get().getType());
        if (!type || seen.insert(operand.get()).second)
          continue;
        operand.set(bufferization::AllocTensorOp::create(
            b, ret.getLoc(), type, ValueRange{}, operand.get()));
      }
    });
  }
};
} // namespace
