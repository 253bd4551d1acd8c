//===- Target.cpp - Kernel entry points and target references -------------===//

#include "te/Plugin/Target.h"
#include "te/Plugin/PluginManager.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::te;

plugin::TargetBackend::~TargetBackend() = default;

std::string plugin::TargetRef::describe() const {
  if (!target)
    return "no target";
  if (!plugin)
    return target->getName() + " (built-in)";
  return target->getName() + " (plugin " + plugin->name + " " +
         plugin->version + ")";
}

namespace {

/// The element types the runtime's manifest parser knows, by MLIR spelling.
bool isKernelElementType(Type type) {
  return type.isF32() || type.isF64() || type.isF16() || type.isBF16() ||
         isa<Float8E4M3FNType, Float8E5M2Type, Float8E8M0FNUType>(type) ||
         type.isSignlessInteger(1) || type.isSignlessInteger(8) ||
         type.isSignlessInteger(32) || type.isSignlessInteger(64);
}

LogicalResult checkKernelType(func::FuncOp func, Type type, StringRef role,
                              unsigned index) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && tensor.hasStaticShape() && tensor.getNumElements() == 0)
    return func.emitError("kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type << " with no elements; kernels take and return tensors "
           << "with at least one element";
  if (!tensor || !tensor.hasStaticShape() ||
      !isKernelElementType(tensor.getElementType()))
    return func.emitError("kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type
           << "; kernels take and return statically shaped tensors of f32, "
              "f64, f16, bf16, f8E4M3FN, f8E5M2, f8E8M0FNU, i1, i8, i32 or "
              "i64";
  return success();
}

void printTensorType(llvm::raw_ostream &os, RankedTensorType type) {
  os << type.getElementType() << ' ';
  if (type.getRank() == 0) {
    os << "scalar";
    return;
  }
  llvm::interleave(type.getShape(), os, "x");
}

} // namespace

FailureOr<SmallVector<KernelEntry>>
mlir::te::collectKernelEntries(ModuleOp module) {
  SmallVector<KernelEntry> entries;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    KernelEntry entry{func.getSymName().str(), {}, {}};
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      if (failed(checkKernelType(func, type, "argument", i)))
        return failure();
      entry.inputs.push_back(cast<RankedTensorType>(type));
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      if (failed(checkKernelType(func, type, "result", i)))
        return failure();
      entry.outputs.push_back(cast<RankedTensorType>(type));
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty())
    return mlir::emitError(module.getLoc(),
                           "the module has no public function to compile "
                           "as a kernel entry point");
  return entries;
}

std::string mlir::te::formatKernelManifest(ArrayRef<KernelEntry> entries) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "te-kernel-abi 1\n";
  for (const KernelEntry &entry : entries) {
    os << "entry " << entry.name << ' ' << entry.name << "__te_packed\n";
    for (RankedTensorType type : entry.inputs) {
      os << "in ";
      printTensorType(os, type);
      os << '\n';
    }
    for (RankedTensorType type : entry.outputs) {
      os << "out ";
      printTensorType(os, type);
      os << '\n';
    }
    os << "end\n";
  }
  return text;
}
