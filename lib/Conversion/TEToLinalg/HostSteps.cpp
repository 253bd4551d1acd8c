//===- HostSteps.cpp - Entry points cut into steps around library calls ---===//
//
// The runtime runs a collective itself (te/Runtime/Collective.h), so an
// entry point with one is a list of steps: kernels of its own ops, and the
// calls between them. See te-cpu-host-steps in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/Manifest.h"
#include "te/Conversion/TECommon/LibraryCall.h"
#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::te {
#define GEN_PASS_DEF_CPUHOSTSTEPS
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// The library call `op` makes, if it is one.
std::optional<std::pair<StringRef, StringRef>> getLibraryCall(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call)
    return std::nullopt;
  return getLibraryFunction(
      SymbolTable::lookupNearestSymbolFrom(call, call.getCalleeAttr()));
}

/// Follows view ops (reshapes, casts, subviews) from `value` to the buffer
/// they view: an allocation or an argument.
Value getRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether `value` covers its whole root buffer with the same bytes in the
/// same order: dense reshapes and casts of it (a call may then take the
/// root itself).
bool isWholeBuffer(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (!isa<memref::CollapseShapeOp, memref::ExpandShapeOp, memref::CastOp>(
            op))
      return isa<memref::AllocOp>(op);
    auto type = dyn_cast<MemRefType>(value.getType());
    if (!type || !type.getLayout().isIdentity() || !type.hasStaticShape())
      return false;
    value = op->getOperand(0);
  }
  return true;
}

/// A call's output that is only copied into an argument afterwards (the
/// entry's result) is written there directly.
void writeOutputsInPlace(func::CallOp call) {
  for (OpOperand &operand : call->getOpOperands()) {
    auto alloc = operand.get().getDefiningOp<memref::AllocOp>();
    if (!alloc || !alloc.getResult().hasNUses(2))
      continue;
    memref::CopyOp copy;
    for (Operation *user : alloc->getUsers())
      if (auto candidate = dyn_cast<memref::CopyOp>(user))
        if (candidate.getSource() == alloc.getResult())
          copy = candidate;
    if (!copy || copy->getBlock() != call->getBlock() ||
        !call->isBeforeInBlock(copy))
      continue;
    auto target = dyn_cast<BlockArgument>(copy.getTarget());
    if (!target || !target.hasOneUse() || target.getType() != alloc.getType())
      continue;
    operand.set(target);
    copy.erase();
    alloc.erase();
  }
}

/// A buffer that an op with regions returns (an scf.if's result) is not an
/// allocation the runtime can keep between steps: where a later step uses
/// it, it is copied into one right after the op.
void copyRegionResultsAcrossCalls(Block &body) {
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (op.getNumRegions() == 0)
      continue;
    for (Value result : op.getResults()) {
      // A strided result cannot become a dense temporary in place of its
      // users (a call still copies its operands to whole buffers).
      auto type = dyn_cast<MemRefType>(result.getType());
      if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
          type.getMemorySpace())
        continue;
      bool crosses = false;
      for (Operation *user : result.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        for (Operation *it = op.getNextNode(); top && it != top && !crosses;
             it = it->getNextNode())
          crosses = getLibraryCall(it).has_value();
      }
      if (!crosses)
        continue;
      OpBuilder b(op.getContext());
      b.setInsertionPointAfter(&op);
      auto copy = memref::AllocOp::create(
          b, op.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()),
          b.getI64IntegerAttr(256));
      auto fill = memref::CopyOp::create(b, op.getLoc(), result, copy);
      result.replaceAllUsesExcept(copy, fill);
    }
  }
}

/// Whether `load`, at the top level of `body`, reads a buffer that no op
/// writes after it (calls write theirs): a later step may then repeat the
/// load instead of receiving its value.
bool isUnwrittenAfter(memref::LoadOp load, Block &body) {
  if (load->getBlock() != &body)
    return false;
  SmallVector<Value> views = {getRoot(load.getMemRef())};
  while (!views.empty()) {
    Value value = views.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<ViewLikeOpInterface>(user) && user->getNumResults() == 1) {
        views.push_back(user->getResult(0));
        continue;
      }
      if (isa<memref::LoadOp>(user))
        continue;
      // An op that passes the buffer on (an scf.if yielding it) makes an
      // alias whose writes this walk would not see.
      if (user->hasTrait<OpTrait::IsTerminator>() ||
          llvm::any_of(user->getResultTypes(),
                       [](Type type) { return isa<MemRefType>(type); }))
        return false;
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top || !top->isBeforeInBlock(load))
        return false;
    }
  }
  return true;
}

/// A scalar that a later step uses (a run-time check's status, computed
/// before a collective and returned after it) goes through a one-element
/// buffer the runtime keeps between steps: stored right after it is
/// computed, loaded where a later step needs it (an index as i64).
/// Constants are not spilled, nor the loads a later step repeats: of an
/// argument or a library call's buffer (te.group_rank's, a temporary of
/// the steps) that nothing writes after them, as StepCutter::isRereadable
/// decides once the temporaries are known.
void spillScalarsAcrossCalls(Block &body) {
  // How many library calls precede each op, so that "a call lies between"
  // is one comparison. The ops this function inserts sit right after the
  // op they spill or right before its user, with no call between, and are
  // not themselves visited.
  DenseMap<Operation *, unsigned> callsBefore;
  SmallVector<Operation *> original;
  unsigned calls = 0;
  for (Operation &op : body) {
    callsBefore[&op] = calls;
    original.push_back(&op);
    if (getLibraryCall(&op))
      ++calls;
  }
  for (Operation *op : original) {
    auto load = dyn_cast<memref::LoadOp>(op);
    if (op->hasTrait<OpTrait::ConstantLike>() || getLibraryCall(op))
      continue;
    if (load) {
      Value root = getRoot(load.getMemRef());
      bool callBuffer = llvm::any_of(root.getUsers(), [](Operation *user) {
        return getLibraryCall(user).has_value();
      });
      if ((isa<BlockArgument>(root) || callBuffer) &&
          isUnwrittenAfter(load, body))
        continue;
    }
    for (Value result : op->getResults()) {
      Type type = result.getType();
      if (!type.isIntOrIndexOrFloat())
        continue;
      SmallVector<OpOperand *> later;
      for (OpOperand &use : result.getUses()) {
        Operation *top = body.findAncestorOpInBlock(*use.getOwner());
        auto it = top ? callsBefore.find(top) : callsBefore.end();
        if (it != callsBefore.end() && it->second > callsBefore.lookup(op))
          later.push_back(&use);
      }
      if (later.empty())
        continue;
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      Location loc = op->getLoc();
      Type stored = type.isIndex() ? b.getI64Type() : type;
      Value slot = memref::AllocOp::create(b, loc, MemRefType::get({}, stored),
                                           b.getI64IntegerAttr(256));
      Value value = result;
      if (type.isIndex())
        value = arith::IndexCastOp::create(b, loc, stored, result);
      memref::StoreOp::create(b, loc, value, slot);
      for (OpOperand *use : later) {
        b.setInsertionPoint(body.findAncestorOpInBlock(*use->getOwner()));
        Value loaded = memref::LoadOp::create(b, loc, slot);
        if (type.isIndex())
          loaded = arith::IndexCastOp::create(b, loc, type, loaded);
        use->set(loaded);
      }
    }
  }
}

/// The plan of one entry point and the step functions made for it.
class StepCutter {
public:
  StepCutter(func::FuncOp entry) : entry(entry) {}

  FailureOr<ArrayAttr> run();

private:
  /// Makes the function of segment `index`, or returns "" when the segment
  /// has nothing to run.
  FailureOr<std::string> outline(ArrayRef<Operation *> segment, int index,
                                 SmallVectorImpl<Value> &roots);

  /// Whether `op` is a scalar load that a later step may repeat: of an
  /// argument or a temporary that nothing writes after it.
  bool isRereadable(Operation *op);

  func::FuncOp entry;
  /// Allocations the runtime provides, in order.
  llvm::SetVector<Value> temporaries;
  /// Which segment (or call, as -1) each top-level op is in.
  DenseMap<Operation *, int> segmentOf;
};

bool StepCutter::isRereadable(Operation *op) {
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load)
    return false;
  Value root = getRoot(load.getMemRef());
  return (isa<BlockArgument>(root) || temporaries.contains(root)) &&
         isUnwrittenAfter(load, entry.front());
}

FailureOr<std::string> StepCutter::outline(ArrayRef<Operation *> segment,
                                           int index,
                                           SmallVectorImpl<Value> &roots) {
  // Nothing to run: only constants, views and loads a later segment may
  // repeat, which the next segment clones where it needs them.
  if (llvm::all_of(segment, [&](Operation *op) {
        return isPure(op) || isa<ViewLikeOpInterface>(op) || isRereadable(op) ||
               (isa<memref::AllocOp>(op) &&
                temporaries.contains(op->getResult(0)));
      }))
    return std::string();

  // What the segment uses from outside: roots become arguments; constants
  // and views are cloned in.
  llvm::SetVector<Value> used;
  for (Operation *op : segment) {
    for (Value operand : op->getOperands())
      used.insert(operand);
    for (Region &region : op->getRegions()) {
      llvm::SetVector<Value> above;
      getUsedValuesDefinedAbove(region, above);
      used.insert(above.begin(), above.end());
    }
  }
  llvm::SetVector<Operation *> clones;
  llvm::SetVector<Value> arguments;
  std::function<LogicalResult(Value)> require =
      [&](Value value) -> LogicalResult {
    Operation *def = value.getDefiningOp();
    if (!def) {
      arguments.insert(value);
      return success();
    }
    if (segmentOf.lookup(def) == index && !temporaries.contains(value))
      return success();
    if (temporaries.contains(value)) {
      arguments.insert(value);
      return success();
    }
    if (def->getNumRegions() == 0 &&
        (isPure(def) || isa<ViewLikeOpInterface>(def) || isRereadable(def))) {
      for (Value operand : def->getOperands())
        if (failed(require(operand)))
          return failure();
      clones.insert(def);
      return success();
    }
    return def->emitError("the cpu target cuts this entry point into steps "
                          "around its collectives, but this value (not a "
                          "buffer) crosses from one step to another");
  };
  for (Value value : used)
    if (failed(require(value)))
      return failure();

  MLIRContext *ctx = entry.getContext();
  SmallVector<Type> types;
  for (Value value : arguments) {
    types.push_back(value.getType());
    roots.push_back(value);
  }
  OpBuilder b(ctx);
  b.setInsertionPointAfter(entry);
  std::string name = (entry.getSymName() + "__step" + Twine(index)).str();
  auto step = func::FuncOp::create(b, entry.getLoc(), name,
                                   b.getFunctionType(types, {}));
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping mapping;
  for (auto [value, argument] : llvm::zip(arguments, body->getArguments()))
    mapping.map(value, argument);
  // Clones in their original order, so that a view follows its source.
  SmallVector<Operation *> ordered(clones.begin(), clones.end());
  llvm::sort(ordered,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  for (Operation *op : ordered)
    b.clone(*op, mapping);
  for (Operation *op : segment) {
    if (isa<memref::AllocOp>(op) && temporaries.contains(op->getResult(0)))
      continue;
    b.clone(*op, mapping);
  }
  func::ReturnOp::create(b, entry.getLoc());
  return name + "__te_packed";
}

FailureOr<ArrayAttr> StepCutter::run() {
  if (!entry.getBody().hasOneBlock())
    return entry.emitError("the cpu target cuts entry points with "
                           "collectives into steps, but '")
           << entry.getSymName() << "' has control flow";
  Block &body = entry.front();
  SmallVector<func::CallOp> calls;
  for (Operation &op : body)
    if (getLibraryCall(&op))
      calls.push_back(cast<func::CallOp>(op));
  WalkResult nested = entry.walk([&](Operation *op) {
    if (op->getBlock() != &body && getLibraryCall(op)) {
      op->emitError("a collective inside a loop or region cannot run on the "
                    "cpu yet; call it at the top level of the function");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return failure();

  copyRegionResultsAcrossCalls(body);
  spillScalarsAcrossCalls(body);
  // Calls take whole buffers: a view that is not one is copied first.
  for (func::CallOp call : calls) {
    writeOutputsInPlace(call);
    OpBuilder b(call);
    for (OpOperand &operand : call->getOpOperands()) {
      Value value = operand.get();
      auto type = dyn_cast<MemRefType>(value.getType());
      if (!type || !type.hasStaticShape())
        return call.emitError("a library call's operand must be a buffer of "
                              "static shape");
      if (isWholeBuffer(value))
        continue;
      auto copy = memref::AllocOp::create(
          b, call.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()),
          b.getI64IntegerAttr(256));
      memref::CopyOp::create(b, call.getLoc(), value, copy);
      operand.set(copy);
    }
  }

  // Segments between the calls.
  SmallVector<SmallVector<Operation *>> segments(1);
  for (Operation &op : body.without_terminator()) {
    if (getLibraryCall(&op)) {
      segmentOf[&op] = -1;
      segments.emplace_back();
      continue;
    }
    segmentOf[&op] = static_cast<int>(segments.size()) - 1;
    segments.back().push_back(&op);
  }

  // Allocations used by a call or by another segment are temporaries.
  for (Operation &op : body.without_terminator()) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc)
      continue;
    int home = segmentOf[alloc];
    SmallVector<Value> views = {alloc.getResult()};
    bool shared = false;
    while (!views.empty() && !shared) {
      Value value = views.pop_back_val();
      for (Operation *user : value.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*user);
        if (!top || segmentOf.lookup(top) != home)
          shared = true;
        if (isa<ViewLikeOpInterface>(user) && user->getNumResults() == 1)
          views.push_back(user->getResult(0));
      }
    }
    if (shared) {
      if (!alloc.getType().hasStaticShape() ||
          !alloc.getType().getElementType().isIntOrFloat())
        return alloc.emitError("a buffer shared between steps needs a "
                               "static shape and integer or float elements");
      temporaries.insert(alloc.getResult());
    }
  }

  ::te::abi::StepPlan plan;
  for (Value temporary : temporaries) {
    auto type = cast<MemRefType>(temporary.getType());
    int64_t bytes =
        type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
    plan.addTemporary(std::max<int64_t>(bytes, 1));
  }
  using Operand = ::te::abi::ManifestOperand;
  auto operandOf = [&](Value root) {
    if (auto argument = dyn_cast<BlockArgument>(root))
      return Operand::argument(static_cast<int>(argument.getArgNumber()));
    return Operand::temporary(
        static_cast<int>(llvm::find(temporaries, root) - temporaries.begin()));
  };
  for (size_t k = 0; k < segments.size(); ++k) {
    SmallVector<Value> roots;
    FailureOr<std::string> symbol =
        outline(segments[k], static_cast<int>(k), roots);
    if (failed(symbol))
      return failure();
    if (!symbol->empty()) {
      // The host runs a step as one call: the geometry is 1x1x1.
      std::vector<Operand> operands;
      for (Value root : roots)
        operands.push_back(operandOf(root));
      plan.steps.push_back(::te::abi::ManifestStep::kernel(
          *symbol, ::te::abi::LaunchGeometry(), std::move(operands)));
    }
    if (k < calls.size()) {
      func::CallOp call = calls[k];
      auto [function, parameters] = *getLibraryCall(call);
      std::vector<Operand> operands;
      for (Value operand : call.getOperands()) {
        Value root = getRoot(operand);
        if (!isa<BlockArgument>(root) && !temporaries.contains(root))
          return call.emitError("a library call's operand is neither an "
                                "argument nor a buffer of the steps");
        operands.push_back(operandOf(root));
      }
      plan.steps.push_back(::te::abi::ManifestStep::call(
          function.str(), parameters.str(), std::move(operands)));
    }
  }

  // The runtime runs the steps; the entry itself is never called.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!op.hasTrait<OpTrait::IsTerminator>()) {
      op.dropAllUses();
      op.erase();
    }
  // The plan travels in the IR as its manifest lines, readable in te-opt's
  // output; the cpu target reads them back when it writes the manifest.
  Builder b(entry.getContext());
  SmallVector<Attribute> lines;
  for (const std::string &line : ::te::abi::writeStepPlan(plan))
    lines.push_back(b.getStringAttr(line));
  return b.getArrayAttr(lines);
}

struct CPUHostStepsPass : mlir::te::impl::CPUHostStepsBase<CPUHostStepsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The calls carry their groups' sizes: the declarations are dead.
    for (auto group :
         llvm::make_early_inc_range(module.getOps<ProcessGroupOp>()))
      group.erase();
    SmallVector<func::FuncOp> entries;
    for (func::FuncOp function : module.getOps<func::FuncOp>()) {
      if (function.isDeclaration())
        continue;
      Operation *call = nullptr;
      function.walk([&](Operation *op) {
        if (!getLibraryCall(op))
          return WalkResult::advance();
        call = op;
        return WalkResult::interrupt();
      });
      if (!call)
        continue;
      // The runtime runs the calls of entry points only.
      if (!function.isPublic()) {
        call->emitError("a collective in a private function cannot run on "
                        "the cpu; call it in the entry point itself");
        return signalPassFailure();
      }
      entries.push_back(function);
    }
    if (entries.empty())
      return;
    SmallVector<NamedAttribute> plans;
    for (func::FuncOp entry : entries) {
      FailureOr<ArrayAttr> plan = StepCutter(entry).run();
      if (failed(plan))
        return signalPassFailure();
      plans.emplace_back(entry.getSymNameAttr(), *plan);
    }
    module->setAttr(kHostStepsAttrName,
                    DictionaryAttr::get(module.getContext(), plans));
  }
};

} // namespace
