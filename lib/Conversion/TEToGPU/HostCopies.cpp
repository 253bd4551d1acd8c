//===- HostCopies.cpp - Buffer copies of GPU entry points as kernels ------===//
//
// After bufferization an entry point that returns one of its inputs, or
// one value twice, copies a buffer into its output argument on the host
// (memref.copy), and a constant tensor is a host global (memref.get_global
// of a memref.global). A GPU target's entry points are lists of kernel
// launches (the runtime's manifest steps), so each copy becomes a launch
// of a copy kernel (a grid-stride loop of 16-byte accesses where the size
// allows), and each constant a temporary that a kernel fills from a copy
// of the global in its own gpu.module.
//
// The run-time checks of te ops' index operands (te-insert-checks, then
// te-materialize-checks) are scalar code on the host: loads of cu_seqlens
// or seqlens, loops over them, and the stores of the kernel status. They
// become one kernel run by a single thread, launched after the code's
// operands exist, so that the status reaches the runtime the way any
// output does.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

/// Copies `source` into `destination` (one static shape, identity layouts,
/// rank 0 included) with a grid-stride loop; returns the number of work
/// items the launch covers.
int64_t emitCopyLoop(OpBuilder &b, Location loc, Value source,
                     Value destination) {
  auto type = cast<MemRefType>(source.getType());
  if (type.getRank() == 0) {
    ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
      memref::StoreOp::create(
          b, loc, memref::LoadOp::create(b, loc, source, ValueRange{}),
          destination, ValueRange{});
    });
    return 1;
  }
  int64_t count = type.getNumElements();
  int64_t width = vectorWidth(type.getElementType(), count);
  Value flatFrom = flatten(b, loc, source);
  Value flatTo = flatten(b, loc, destination);
  gridStrideLoop(b, loc, count / width, Value(),
                 [&](OpBuilder &b, Location loc, Value i, Value) {
                   Value at = arith::MulIOp::create(
                       b, loc, i, indexConstant(b, loc, width));
                   storeElements(b, loc, flatTo, at,
                                 loadElements(b, loc, flatFrom, at, width));
                   return Value();
                 });
  return count / width;
}

bool isPlainStatic(MemRefType type) {
  return type.hasStaticShape() && type.getLayout().isIdentity();
}

/// Launches `kernel` of `set` (finished) for `items` work items of
/// emitCopyLoop, before `op`.
void launchCopy(KernelSet &set, gpu::GPUFuncOp kernel, Operation *op,
                int64_t items, bool scalar, ValueRange operands) {
  OpBuilder host(op);
  set.launch(host, kernel, blocksFor(items), scalar ? 1 : kBlockSize, operands);
}

LogicalResult lowerHostCopy(memref::CopyOp copy, const GPUTargetInfo &target) {
  auto from = cast<MemRefType>(copy.getSource().getType());
  auto to = cast<MemRefType>(copy.getTarget().getType());
  if (!isPlainStatic(from) || !isPlainStatic(to) ||
      from.getShape() != to.getShape() ||
      from.getElementType() != to.getElementType())
    return copy.emitError("a GPU target copies whole buffers of one static "
                          "shape and element type only, not ")
           << from << " into " << to;
  KernelSet set(copy, "copy", target);
  OpBuilder b(copy.getContext());
  auto kernel = set.addKernel(b, "copy", {from, to});
  int64_t items = emitCopyLoop(b, copy.getLoc(), kernel.getArgument(0),
                               kernel.getArgument(1));
  set.finish();
  launchCopy(set, kernel, copy, items, from.getRank() == 0,
             {copy.getSource(), copy.getTarget()});
  copy.erase();
  return success();
}

/// A constant of the entry point as a temporary that a kernel fills from
/// the global's copy in the kernel's module.
LogicalResult lowerHostConstant(memref::GetGlobalOp get,
                                const GPUTargetInfo &target) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  MemRefType type = get.getType();
  if (!global || !global.getConstant() || !global.getInitialValue() ||
      !isPlainStatic(type))
    return get.emitError("a GPU target takes the constants of an entry point "
                         "as constant globals of static shape only");
  Location loc = get.getLoc();
  KernelSet set(get, "constant", target);
  OpBuilder b(get.getContext());
  b.setInsertionPointToStart(set.getModule().getBody());
  auto copy = cast<memref::GlobalOp>(b.clone(*global));
  copy.setPrivate();
  auto kernel = set.addKernel(b, "fill", {type});
  Value source = memref::GetGlobalOp::create(b, loc, type, copy.getSymName());
  int64_t items = emitCopyLoop(b, loc, source, kernel.getArgument(0));
  set.finish();
  OpBuilder host(get);
  // 256-byte aligned, as the runtime's allocations.
  Value buffer =
      memref::AllocOp::create(host, loc, type, host.getI64IntegerAttr(256));
  launchCopy(set, kernel, get, items, type.getRank() == 0, {buffer});
  get.replaceAllUsesWith(buffer);
  get.erase();
  return success();
}

/// The host function's scalar code (every memref.store at its top level and
/// what computes the stored values and indices) as one single-thread kernel
/// on the buffers it reads and writes.
LogicalResult lowerHostScalarCode(func::FuncOp function,
                                  const GPUTargetInfo &target) {
  if (function.isExternal())
    return success();
  Block &body = function.front();
  SmallVector<Operation *> roots;
  for (Operation &op : body)
    if (isa<memref::StoreOp>(op))
      roots.push_back(&op);
  if (roots.empty())
    return success();

  // What the stores need, within the function's block: buffers (arguments
  // and allocations) become kernel arguments, everything else moves.
  SetVector<Operation *> moved;
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  // Values the loops' bodies use from the function's block move too.
  options.omitUsesFromAbove = false;
  options.filter = [&](Operation *op) {
    return op->getBlock() == &body && !isa<memref::AllocOp>(op);
  };
  for (Operation *root : roots) {
    SetVector<Operation *> slice;
    if (failed(getBackwardSlice(root, &slice, options)))
      return root->emitError("cannot move the host code of this store into "
                             "a GPU kernel");
    moved.insert(slice.begin(), slice.end());
    moved.insert(root);
  }
  SmallVector<Operation *> ordered(moved.begin(), moved.end());
  llvm::sort(ordered,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });

  // Buffers the moved code uses from outside, in order of first use.
  SetVector<Value> buffers;
  for (Operation *op : ordered) {
    WalkResult walk = op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands()) {
        Operation *definer = operand.getDefiningOp();
        if (definer && moved.contains(definer))
          continue;
        if (definer && op->isAncestor(definer))
          continue;
        if (auto block = dyn_cast<BlockArgument>(operand);
            block && block.getOwner() != &body)
          continue;
        if (!isa<MemRefType>(operand.getType())) {
          nested->emitError("a GPU target runs the scalar code of an entry "
                            "point as a kernel, which cannot take this "
                            "operand of type ")
              << operand.getType();
          return WalkResult::interrupt();
        }
        buffers.insert(operand);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }

  // The kernel runs where the last store was, after the launches between
  // the code's first and last op. That keeps its meaning as long as none of
  // them writes what the code reads: the code may read the entry's
  // arguments, which kernels read (te's checks read index operands, which
  // are inputs), but not a buffer it stores into or a temporary.
  SmallPtrSet<Value, 4> stored;
  for (Operation *root : roots)
    stored.insert(cast<memref::StoreOp>(root).getMemRef());
  for (Operation *op = ordered.front(); op != ordered.back();
       op = op->getNextNode())
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
      for (Value operand : launch.getKernelOperands())
        if (buffers.contains(operand) &&
            (stored.contains(operand) || !isa<BlockArgument>(operand)))
          return launch.emitError(
              "a GPU target runs the scalar code of an entry point as one "
              "kernel after its last store, but this launch, inside that "
              "code, uses a buffer the code writes, or a temporary it reads");

  Location loc = roots.front()->getLoc();
  KernelSet set(roots.front(), "host_code", target);
  OpBuilder b(function.getContext());
  SmallVector<Type> types;
  for (Value buffer : buffers)
    types.push_back(buffer.getType());
  auto kernel = set.addKernel(b, "run", types);
  ifFirstThread(b, loc, [&](OpBuilder &b, Location) {
    IRMapping mapping;
    for (auto [buffer, argument] :
         llvm::zip_equal(buffers, kernel.getArguments()))
      mapping.map(buffer, argument);
    for (Operation *op : ordered)
      b.clone(*op, mapping);
  });
  set.finish();
  OpBuilder host(function.getContext());
  host.setInsertionPointAfter(ordered.back());
  set.launch(host, kernel, 1, 1, buffers.getArrayRef());
  for (Operation *op : llvm::reverse(ordered))
    if (op->use_empty())
      op->erase();
  return success();
}

struct HostCopiesToGPUPass
    : PassWrapper<HostCopiesToGPUPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HostCopiesToGPUPass)

  HostCopiesToGPUPass() = default;
  HostCopiesToGPUPass(const HostCopiesToGPUPass &other)
      : PassWrapper(other), target(other.target) {}
  explicit HostCopiesToGPUPass(std::shared_ptr<const GPUTargetInfo> target)
      : target(std::move(target)) {
    // Printed with the pipeline, so that it replays on the same target.
    targetSpec = this->target->getRegisteredSpec();
  }
  StringRef getArgument() const override { return "te-host-copies-to-gpu"; }
  StringRef getName() const override { return "TEHostCopiesToGPU"; }
  StringRef getDescription() const override {
    return "Copies of buffers, constants and scalar code (run-time checks) "
           "in entry points as GPU kernel launches";
  }

  void runOnOperation() override {
    std::shared_ptr<const GPUTargetInfo> info = target;
    if (!info && targetSpec.empty()) {
      mlir::emitError(getOperation().getLoc(),
                      "te-host-copies-to-gpu needs a GPU target, e.g. "
                      "target=cuda:sm_90a");
      return signalPassFailure();
    }
    if (!info && !(info = lookUpPassTarget(
                       getOperation(), "te-host-copies-to-gpu", targetSpec)))
      return signalPassFailure();
    SmallVector<memref::CopyOp> copies;
    SmallVector<memref::GetGlobalOp> constants;
    getOperation().walk([&](Operation *op) {
      if (!op->getParentOfType<func::FuncOp>())
        return;
      if (auto copy = dyn_cast<memref::CopyOp>(op))
        copies.push_back(copy);
      if (auto get = dyn_cast<memref::GetGlobalOp>(op))
        constants.push_back(get);
    });
    for (memref::GetGlobalOp get : constants)
      if (failed(lowerHostConstant(get, *info)))
        return signalPassFailure();
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (failed(lowerHostScalarCode(function, *info)))
        return signalPassFailure();
    for (memref::CopyOp copy : copies)
      if (failed(lowerHostCopy(copy, *info)))
        return signalPassFailure();
  }

  Option<std::string> targetSpec{
      *this, "target",
      llvm::cl::desc("A registered GPU target and its arch (cuda:sm_90a)"),
      llvm::cl::init("")};
  std::shared_ptr<const GPUTargetInfo> target;
};

} // namespace

std::unique_ptr<Pass> mlir::te::createHostCopiesToGPUPass(
    std::shared_ptr<const GPUTargetInfo> target) {
  return std::make_unique<HostCopiesToGPUPass>(std::move(target));
}

void mlir::te::registerHostCopiesToGPUPass() {
  PassRegistration<HostCopiesToGPUPass>();
}
