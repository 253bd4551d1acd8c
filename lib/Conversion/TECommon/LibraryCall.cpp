//===- LibraryCall.cpp - te ops as calls of a device's libraries ----------===//

#include "te/Conversion/TECommon/LibraryCall.h"

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

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

/// The parameters every call over a group has: the group, its size and rank
/// list.
std::string groupParameters(FlatSymbolRefAttr group,
                            ProcessGroupOp processGroup) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "group=" << group.getValue() << ",size=" << processGroup.getSize()
     << ",ranks=";
  if (std::optional<ArrayRef<int64_t>> ranks = processGroup.getRanks())
    llvm::interleave(*ranks, os, "_");
  else
    os << "blocks";
  return text;
}

/// The parameters every data collective has: the group's, then the input's
/// dtype and shape.
std::string commonParameters(FlatSymbolRefAttr group,
                             ProcessGroupOp processGroup, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  std::string text = groupParameters(group, processGroup);
  llvm::raw_string_ostream os(text);
  os << ",dtype=" << type.getElementType() << ",shape=";
  if (type.getRank() == 0)
    os << "scalar";
  llvm::interleave(type.getShape(), os, "x");
  return text;
}

} // namespace

LogicalResult mlir::te::lowerCollective(RewriterBase &rewriter, Operation *op) {
  if (std::optional<std::string> reason = getCollectiveUnsupportedReason(op))
    return op->emitError(*reason);
  std::string function, extra;
  Value input;
  FlatSymbolRefAttr group;
  ProcessGroupOp processGroup;
  auto reduce = [](ReduceKind kind) {
    return ",reduce=" + stringifyReduceKind(kind).str();
  };
  if (auto rank = dyn_cast<GroupRankOp>(op)) {
    if (!rank.getProcessGroup())
      return op->emitError("group ")
             << rank.getGroupAttr() << " does not name a te.process_group";
    return lowerToLibraryCall(
        rewriter, op, {}, "collective.group_rank",
        groupParameters(rank.getGroupAttr(), rank.getProcessGroup()));
  }
  if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    function = "collective.all_reduce";
    input = allReduce.getInput();
    group = allReduce.getGroupAttr();
    processGroup = allReduce.getProcessGroup();
    extra = reduce(allReduce.getKind());
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    function = "collective.all_gather";
    input = gather.getInput();
    group = gather.getGroupAttr();
    processGroup = gather.getProcessGroup();
    extra = ",dim=" + std::to_string(gather.getDim());
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    function = "collective.reduce_scatter";
    input = scatter.getInput();
    group = scatter.getGroupAttr();
    processGroup = scatter.getProcessGroup();
    extra =
        ",dim=" + std::to_string(scatter.getDim()) + reduce(scatter.getKind());
  } else if (auto allToAll = dyn_cast<AllToAllOp>(op)) {
    function = "collective.all_to_all";
    input = allToAll.getInput();
    group = allToAll.getGroupAttr();
    processGroup = allToAll.getProcessGroup();
    extra = ",split_dim=" + std::to_string(allToAll.getSplitDim()) +
            ",concat_dim=" + std::to_string(allToAll.getConcatDim());
  } else if (auto permute = dyn_cast<PermuteOp>(op)) {
    function = "collective.permute";
    input = permute.getInput();
    group = permute.getGroupAttr();
    processGroup = permute.getProcessGroup();
    if (std::optional<int64_t> shift = permute.getShift()) {
      extra = ",route=shift_" + std::to_string(*shift);
    } else {
      extra = ",route=pairs";
      ArrayRef<int64_t> pairs = *permute.getPairs();
      for (int64_t rank : pairs)
        extra += "_" + std::to_string(rank);
    }
  } else {
    return op->emitError("not a te collective");
  }
  if (!processGroup)
    return op->emitError("group ")
           << group << " does not name a te.process_group";
  std::string parameters = commonParameters(group, processGroup, input) + extra;
  return lowerToLibraryCall(rewriter, op, {input}, function, parameters);
}
