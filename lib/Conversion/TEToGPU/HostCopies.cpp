//===- HostCopies.cpp - Buffer copies of GPU entry points as kernels ------===//
//
// After bufferization an entry point that returns one of its inputs, or
// one value twice, copies a buffer into its output argument on the host
// (memref.copy). A GPU target's entry points are lists of kernel launches
// (the runtime's manifest steps), so each such copy becomes a launch of a
// copy kernel: a grid-stride loop of 16-byte accesses where the size
// allows.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

LogicalResult lowerHostCopy(memref::CopyOp copy, const GPUTargetInfo &target) {
  auto from = cast<MemRefType>(copy.getSource().getType());
  auto to = cast<MemRefType>(copy.getTarget().getType());
  if (!from.hasStaticShape() || from.getShape() != to.getShape() ||
      from.getElementType() != to.getElementType() ||
      !from.getLayout().isIdentity() || !to.getLayout().isIdentity())
    return copy.emitError("a GPU target copies whole buffers of one static "
                          "shape and element type only, not ")
           << from << " into " << to;
  Location loc = copy.getLoc();
  KernelSet set(copy, "copy", target);
  OpBuilder b(copy.getContext());
  auto kernel = set.addKernel(b, "copy", {from, to});
  Value source = kernel.getArgument(0), destination = kernel.getArgument(1);
  int64_t count = from.getNumElements(), items = 1;
  if (from.getRank() == 0) {
    ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
      memref::StoreOp::create(
          b, loc, memref::LoadOp::create(b, loc, source, ValueRange{}),
          destination, ValueRange{});
    });
  } else {
    int64_t width = vectorWidth(from.getElementType(), count);
    items = count / width;
    Value flatFrom = flatten(b, loc, source),
          flatTo = flatten(b, loc, destination);
    gridStrideLoop(b, loc, items, Value(),
                   [&](OpBuilder &b, Location loc, Value i, Value) {
                     Value at = arith::MulIOp::create(
                         b, loc, i, indexConstant(b, loc, width));
                     storeElements(b, loc, flatTo, at,
                                   loadElements(b, loc, flatFrom, at, width));
                     return Value();
                   });
  }
  set.finish();
  OpBuilder host(copy);
  set.launch(host, kernel, blocksFor(items), from.getRank() ? kBlockSize : 1,
             {copy.getSource(), copy.getTarget()});
  copy.erase();
  return success();
}

struct HostCopiesToGPUPass
    : PassWrapper<HostCopiesToGPUPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HostCopiesToGPUPass)

  explicit HostCopiesToGPUPass(std::shared_ptr<const GPUTargetInfo> target)
      : target(std::move(target)) {}
  StringRef getArgument() const override { return "te-host-copies-to-gpu"; }
  StringRef getDescription() const override {
    return "Copies of buffers in entry points as GPU kernel launches";
  }

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (copy->getParentOfType<func::FuncOp>())
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies)
      if (failed(lowerHostCopy(copy, *target)))
        return signalPassFailure();
  }

  std::shared_ptr<const GPUTargetInfo> target;
};

} // namespace

std::unique_ptr<Pass> mlir::te::createHostCopiesToGPUPass(
    std::shared_ptr<const GPUTargetInfo> target) {
  return std::make_unique<HostCopiesToGPUPass>(std::move(target));
}
