//===- GPUHostPlan.cpp - GPU entry points as manifest steps ---------------===//

#include "te/Target/GPUHostPlan.h"

#include "te/Conversion/TECommon/LibraryCall.h"
#include "te/Target/KernelManifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::te;
using ::te::abi::LaunchGeometry;
using ::te::abi::ManifestOperand;
using ::te::abi::ManifestStep;
using ::te::abi::StepPlan;

namespace {

/// Reads the host function of `entry`: its allocations become temporaries
/// and its launches steps. With `hasStatus`, the entry's last output is the
/// status of its run-time checks (takeKernelChecks appended it), which the
/// steps take as the status operand.
FailureOr<StepPlan> planEntry(func::FuncOp function, const KernelEntry &entry,
                              bool hasStatus, StringRef targetName) {
  StepPlan plan;
  llvm::DenseMap<Value, ManifestOperand> operands;
  size_t arguments =
      entry.inputs.size() + entry.outputs.size() - (hasStatus ? 1 : 0);
  for (BlockArgument argument : function.getArguments()) {
    if (argument.getArgNumber() < arguments)
      operands[argument] =
          ManifestOperand::argument(static_cast<int>(argument.getArgNumber()));
    else if (hasStatus && argument.getArgNumber() == arguments)
      operands[argument] = ManifestOperand::status();
  }
  if (!function.getBody().hasOneBlock())
    return function.emitError("the ")
           << targetName
           << " target runs entry points as a list of kernel launches; '"
           << function.getName() << "' has control flow on the host";
  // A step's or call's operands: arguments, temporaries or the status.
  auto mapOperands =
      [&](Operation *user,
          ValueRange values) -> FailureOr<std::vector<ManifestOperand>> {
    std::vector<ManifestOperand> mapped;
    for (Value operand : values) {
      auto it = operands.find(operand);
      if (it == operands.end())
        return user->emitError("an operand that is neither an argument of "
                               "the entry point nor one of its temporaries");
      mapped.push_back(it->second);
    }
    return mapped;
  };
  for (Operation &op : function.getBody().front()) {
    if (isa<arith::ConstantOp, memref::DeallocOp>(op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands())
        return ret.emitError("an entry point returns values after "
                             "bufferization; the ")
               << targetName
               << " target needs them written into output arguments";
      continue;
    }
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape())
        return alloc.emitError("a temporary of dynamic size on the host");
      int64_t bytes =
          type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
      operands[alloc] = plan.addTemporary(std::max<int64_t>(bytes, 1));
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      auto constant = [&](Value value) -> std::optional<int64_t> {
        return value ? getConstantIntValue(value) : std::optional<int64_t>(0);
      };
      LaunchGeometry geometry;
      Value sizes[2][3] = {
          {launch.getGridSizeX(), launch.getGridSizeY(), launch.getGridSizeZ()},
          {launch.getBlockSizeX(), launch.getBlockSizeY(),
           launch.getBlockSizeZ()}};
      unsigned *dims[2] = {geometry.grid, geometry.block};
      for (int kind = 0; kind < 2; ++kind) {
        for (int d = 0; d < 3; ++d) {
          std::optional<int64_t> size = constant(sizes[kind][d]);
          if (!size || *size < 1 || *size > INT32_MAX)
            return launch.emitError("the ")
                   << targetName
                   << " target needs launch sizes that are positive constants "
                      "below 2^31";
          dims[kind][d] = static_cast<unsigned>(*size);
        }
      }
      std::optional<int64_t> shared =
          constant(launch.getDynamicSharedMemorySize());
      if (!shared || *shared < 0)
        return launch.emitError("dynamic shared memory of unknown size");
      geometry.sharedMemoryBytes = static_cast<size_t>(*shared);
      FailureOr<std::vector<ManifestOperand>> stepOperands =
          mapOperands(launch, launch.getKernelOperands());
      if (failed(stepOperands))
        return failure();
      plan.steps.push_back(ManifestStep::kernel(
          launch.getKernelName().str(), geometry, std::move(*stepOperands)));
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      auto library =
          callee ? callee->getAttrOfType<StringAttr>(kLibraryFunctionAttr)
                 : StringAttr();
      auto parameters =
          callee ? callee->getAttrOfType<StringAttr>(kLibraryParametersAttr)
                 : StringAttr();
      if (!library || !parameters)
        return call.emitError("the ")
               << targetName
               << " target runs calls of library functions only "
                  "(declarations with "
               << kLibraryFunctionAttr << ")";
      FailureOr<std::vector<ManifestOperand>> callOperands =
          mapOperands(call, call.getOperands());
      if (failed(callOperands))
        return failure();
      plan.steps.push_back(ManifestStep::call(library.str(), parameters.str(),
                                              std::move(*callOperands)));
      continue;
    }
    if (isa<memref::CopyOp>(op))
      return op.emitError("the ")
             << targetName
             << " target cannot yet copy buffers on the host: an entry point "
                "returns one of its inputs, or one value twice; return only "
                "results of te ops, each once";
    return op.emitError("the ")
           << targetName << " target cannot run '" << op.getName()
           << "' on the host; entry points may only "
           << "allocate temporaries and launch kernels";
  }
  return plan;
}

} // namespace

FailureOr<std::string> mlir::te::planGPUHostSteps(ModuleOp lowered,
                                                  ArrayRef<KernelEntry> entries,
                                                  StringRef manifest,
                                                  StringRef targetName) {
  FailureOr<::te::abi::Manifest> stated =
      readKernelManifest(manifest, entries, lowered.getLoc());
  if (failed(stated))
    return failure();
  for (auto [entry, statedEntry] : llvm::zip(entries, stated->entries)) {
    auto function = lowered.lookupSymbol<func::FuncOp>(entry.name);
    if (!function)
      return lowered.emitError("entry point '")
             << entry.name << "' is missing from the lowered module";
    FailureOr<StepPlan> plan =
        planEntry(function, entry, statedEntry.hasStatus, targetName);
    if (failed(plan))
      return failure();
    statedEntry.plan = std::move(*plan);
  }
  return writeKernelManifest(*stated, lowered.getLoc());
}

LogicalResult mlir::te::mergeGPUKernelModules(ModuleOp module,
                                              StringRef manifest,
                                              StringRef targetName,
                                              unsigned addressSpace) {
  gpu::GPUModuleOp merged;
  for (auto kernels :
       llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
    if (!merged) {
      merged = kernels;
      continue;
    }
    SymbolTable symbols(merged);
    for (Operation &op :
         llvm::make_early_inc_range(kernels.getBody()->getOperations())) {
      auto symbol = dyn_cast<SymbolOpInterface>(op);
      // Declarations (of intrinsics' library functions) repeat.
      if (symbol && symbols.lookup(symbol.getNameAttr()))
        continue;
      op.moveBefore(merged.getBody(), merged.getBody()->end());
    }
    kernels.erase();
  }
  if (!merged)
    return module.emitError("the module has no kernels for the ")
           << targetName << " target";
  OpBuilder b = OpBuilder::atBlockBegin(merged.getBody());
  std::string text = manifest.str();
  text.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  // In the device's global memory, where its driver finds module globals
  // (cuModuleGetGlobal on cuda).
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External, "te_kernel_manifest",
                         b.getStringAttr(text), /*alignment=*/1, addressSpace);
  return success();
}
