//===- LibraryCall.cpp - te ops as calls of a device's libraries ----------===//

#include "te/Conversion/TECommon/LibraryCall.h"
#include "te/ABI/LibraryCalls.h"

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

#include <functional>

using namespace mlir;
using namespace mlir::te;

LogicalResult mlir::te::lowerToLibraryCall(RewriterBase &rewriter,
                                           Operation *op,
                                           ArrayRef<Value> inputs,
                                           StringRef library,
                                           StringRef parameters) {
  Location loc = op->getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  SmallVector<Value> operands, outputs;
  for (Value input : inputs) {
    if (!input)
      continue;
    auto type = cast<RankedTensorType>(input.getType());
    auto read = bufferization::ToBufferOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        input);
    read.setReadOnly(true);
    operands.push_back(read);
  }
  for (Value result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    // 256-byte alignment: what vector accesses need, and what the runtime's
    // device allocations give.
    outputs.push_back(memref::AllocOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        rewriter.getI64IntegerAttr(256)));
    operands.push_back(outputs.back());
  }

  auto module = op->getParentOfType<ModuleOp>();
  SmallVector<Type> types;
  std::string key = (library + ";" + parameters).str();
  for (Value operand : operands) {
    types.push_back(operand.getType());
    llvm::raw_string_ostream(key) << ";" << operand.getType();
  }
  std::string name;
  llvm::raw_string_ostream(name)
      << "te_" << library.split('.').first << "_"
      << llvm::format_hex_no_prefix(llvm::xxh3_64bits(key), 16);
  if (!module.lookupSymbol<func::FuncOp>(name)) {
    OpBuilder::InsertionGuard top(rewriter);
    rewriter.setInsertionPointToEnd(module.getBody());
    auto declaration = func::FuncOp::create(
        rewriter, loc, name, rewriter.getFunctionType(types, {}));
    declaration.setPrivate();
    declaration->setAttr(kLibraryFunctionAttr, rewriter.getStringAttr(library));
    declaration->setAttr(kLibraryParametersAttr,
                         rewriter.getStringAttr(parameters));
  }
  func::CallOp::create(rewriter, loc, name, TypeRange{}, operands);
  SmallVector<Value> tensors;
  for (auto [result, buffer] : llvm::zip_equal(op->getResults(), outputs))
    tensors.push_back(bufferization::ToTensorOp::create(
        rewriter, loc, result.getType(), buffer, /*restrict=*/true,
        /*writable=*/true));
  rewriter.replaceOp(op, tensors);
  return success();
}

std::optional<std::pair<StringRef, StringRef>>
mlir::te::getLibraryFunction(Operation *callee) {
  auto library = callee
                     ? callee->getAttrOfType<StringAttr>(kLibraryFunctionAttr)
                     : StringAttr();
  auto parameters =
      callee ? callee->getAttrOfType<StringAttr>(kLibraryParametersAttr)
             : StringAttr();
  if (!library || !parameters)
    return std::nullopt;
  return std::make_pair(library.getValue(), parameters.getValue());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

bool mlir::te::isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, PermuteOp,
             GroupRankOp>(op);
}

std::optional<std::string>
mlir::te::getCollectiveUnsupportedReason(Operation *op) {
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (!cast<ShapedType>(value.getType()).hasStaticShape())
      return op->getName().getStringRef().str() +
             " with dynamic shapes cannot run yet";
  return std::nullopt;
}

namespace {

/// The group part of a collective's call: the group's name, size and rank
/// list (empty: consecutive blocks).
::te::abi::CollectiveCall callOverGroup(FlatSymbolRefAttr group,
                                        ProcessGroupOp processGroup) {
  ::te::abi::CollectiveCall call;
  call.group = group.getValue().str();
  call.size = processGroup.getSize();
  if (std::optional<ArrayRef<int64_t>> ranks = processGroup.getRanks())
    call.ranks.assign(ranks->begin(), ranks->end());
  return call;
}

::te::abi::CollectiveCall::Reduce reductionOf(ReduceKind kind) {
  using Reduce = ::te::abi::CollectiveCall::Reduce;
  switch (kind) {
  case ReduceKind::sum:
    return Reduce::Sum;
  case ReduceKind::max:
    return Reduce::Max;
  case ReduceKind::min:
    return Reduce::Min;
  case ReduceKind::avg:
    return Reduce::Avg;
  }
  llvm_unreachable("unknown reduce kind");
}

} // namespace

LogicalResult mlir::te::lowerCollective(RewriterBase &rewriter, Operation *op) {
  using Call = ::te::abi::CollectiveCall;
  if (std::optional<std::string> reason = getCollectiveUnsupportedReason(op))
    return op->emitError(*reason);
  if (auto rank = dyn_cast<GroupRankOp>(op)) {
    if (!rank.getProcessGroup())
      return op->emitError("group ")
             << rank.getGroupAttr() << " does not name a te.process_group";
    Call call = callOverGroup(rank.getGroupAttr(), rank.getProcessGroup());
    call.op = Call::Op::GroupRank;
    return lowerToLibraryCall(rewriter, op, {}, call.getFunction(),
                              call.encode());
  }
  Value input;
  FlatSymbolRefAttr group;
  ProcessGroupOp processGroup;
  // The op's own parameters, set on the call once the group is known.
  std::function<void(Call &)> own;
  if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    input = allReduce.getInput();
    group = allReduce.getGroupAttr();
    processGroup = allReduce.getProcessGroup();
    own = [=](Call &call) mutable {
      call.op = Call::Op::AllReduce;
      call.reduce = reductionOf(allReduce.getKind());
    };
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    input = gather.getInput();
    group = gather.getGroupAttr();
    processGroup = gather.getProcessGroup();
    own = [=](Call &call) mutable {
      call.op = Call::Op::AllGather;
      call.dim = gather.getDim();
    };
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    input = scatter.getInput();
    group = scatter.getGroupAttr();
    processGroup = scatter.getProcessGroup();
    own = [=](Call &call) mutable {
      call.op = Call::Op::ReduceScatter;
      call.dim = scatter.getDim();
      call.reduce = reductionOf(scatter.getKind());
    };
  } else if (auto allToAll = dyn_cast<AllToAllOp>(op)) {
    input = allToAll.getInput();
    group = allToAll.getGroupAttr();
    processGroup = allToAll.getProcessGroup();
    own = [=](Call &call) mutable {
      call.op = Call::Op::AllToAll;
      call.dim = allToAll.getSplitDim();
      call.concatDim = allToAll.getConcatDim();
    };
  } else if (auto permute = dyn_cast<PermuteOp>(op)) {
    input = permute.getInput();
    group = permute.getGroupAttr();
    processGroup = permute.getProcessGroup();
    own = [=](Call &call) mutable {
      call.op = Call::Op::Permute;
      if (std::optional<int64_t> shift = permute.getShift()) {
        call.shift = *shift;
      } else {
        call.shifted = false;
        ArrayRef<int64_t> pairs = *permute.getPairs();
        call.pairs.assign(pairs.begin(), pairs.end());
      }
    };
  } else {
    return op->emitError("not a te collective");
  }
  if (!processGroup)
    return op->emitError("group ")
           << group << " does not name a te.process_group";
  Call call = callOverGroup(group, processGroup);
  auto type = cast<RankedTensorType>(input.getType());
  llvm::raw_string_ostream(call.dtype) << type.getElementType();
  call.shape.assign(type.getShape().begin(), type.getShape().end());
  own(call);
  return lowerToLibraryCall(rewriter, op, {input}, call.getFunction(),
                            call.encode());
}
