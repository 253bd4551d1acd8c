//===- MaterializeChecks.cpp - te.check ops as a kernel status result -----===//
//
// te-materialize-checks: a kernel reports the first failing te.check through
// one extra result, its status (n, v0, v1, v2), which the runtime reads
// after the launch; the messages go into the module attribute that the
// kernel compiler copies into the manifest. The status is ordinary tensor
// data, so every target (the host CPU, GPUs, plugin devices) returns it the
// way it returns any other result.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/Transforms/Passes.h"

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEMATERIALIZECHECKS
#include "te/Dialect/TE/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

RankedTensorType mlir::te::getKernelStatusType(MLIRContext *ctx) {
  return RankedTensorType::get({4}, IntegerType::get(ctx, 64));
}

namespace {

/// The check's message with `{loc}` replaced: `{@k}` for a te op the
/// compiler numbered (markTEOpOrdinals), the location itself otherwise.
std::string renderLocation(CheckOp check) {
  std::optional<unsigned> ordinal = getTEOpOrdinal(check.getLoc());
  std::string location = ordinal ? "{@" + std::to_string(*ordinal) + "}"
                                 : formatSourceLocation(check.getLoc());
  std::string message = check.getMessage().str();
  for (size_t at = message.find("{loc}"); at != std::string::npos;
       at = message.find("{loc}", at + location.size()))
    message.replace(at, 5, location);
  return message;
}

/// Replaces the checks of `function` by its status result; returns their
/// messages in order, or failure (with a diagnostic) when a check sits
/// where no status can be returned from.
FailureOr<SmallVector<Attribute>> materializeChecks(func::FuncOp function) {
  SmallVector<CheckOp> checks;
  Block *entry = function.isExternal() ? nullptr : &function.front();
  WalkResult walk = function.walk([&](CheckOp check) {
    if (check->getBlock() != entry) {
      check.emitOpError("must be in the entry block of its function, where "
                        "the kernel's status is computed");
      return WalkResult::interrupt();
    }
    checks.push_back(check);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (checks.empty())
    return SmallVector<Attribute>();
  if (function.isPrivate() || !llvm::hasSingleElement(function.getBody()))
    return function.emitOpError("has te.check ops, which only a public "
                                "function with one block (a kernel entry "
                                "point) can report"),
           failure();

  MLIRContext *ctx = function.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToStart(entry);
  Location loc = function.getLoc();
  Type i64 = b.getI64Type();
  Value zero = arith::ConstantIntOp::create(b, loc, i64, 0);
  SmallVector<Value, 4> status(4, zero);
  SmallVector<Attribute> messages;
  for (auto [index, check] : llvm::enumerate(checks)) {
    b.setInsertionPoint(check);
    Location at = check.getLoc();
    Value first = arith::AndIOp::create(
        b, at, check.getFailed(),
        arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq, status[0],
                              zero));
    status[0] = arith::SelectOp::create(
        b, at, first,
        arith::ConstantIntOp::create(b, at, i64,
                                     static_cast<int64_t>(index) + 1),
        status[0]);
    for (auto [slot, value] : llvm::enumerate(check.getValues()))
      status[slot + 1] =
          arith::SelectOp::create(b, at, first, value, status[slot + 1]);
    messages.push_back(StringAttr::get(ctx, renderLocation(check)));
    check.erase();
  }

  auto ret = cast<func::ReturnOp>(entry->getTerminator());
  b.setInsertionPoint(ret);
  RankedTensorType statusType = getKernelStatusType(ctx);
  Value result = tensor::FromElementsOp::create(b, loc, statusType, status);
  ret.getOperandsMutable().append(result);
  SmallVector<Type> results(function.getResultTypes());
  results.push_back(statusType);
  function.setType(
      FunctionType::get(ctx, function.getArgumentTypes(), results));
  return messages;
}

struct TEMaterializeChecksPass
    : public te::impl::TEMaterializeChecksBase<TEMaterializeChecksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<NamedAttribute> table;
    for (auto function : module.getOps<func::FuncOp>()) {
      FailureOr<SmallVector<Attribute>> messages = materializeChecks(function);
      if (failed(messages))
        return signalPassFailure();
      if (!messages->empty())
        table.emplace_back(function.getSymNameAttr(),
                           ArrayAttr::get(&getContext(), *messages));
    }
    if (!table.empty())
      module->setAttr(kKernelChecksAttrName,
                      DictionaryAttr::get(&getContext(), table));
  }
};

} // namespace
