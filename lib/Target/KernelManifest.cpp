//===- KernelManifest.cpp - Manifests as the compiler writes them ---------===//

#include "te/Target/KernelManifest.h"
#include "te/Target/Target.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
namespace abi = ::te::abi;

namespace {

/// A kernel's tensor as a manifest argument; collectKernelEntries has
/// checked that its type crosses the kernel ABI.
abi::ManifestArgument describeArgument(RankedTensorType type, bool isOutput) {
  abi::ManifestArgument argument;
  argument.isOutput = isOutput;
  std::optional<abi::ElementType> elementType = abi::lookUpElementType(
      mlir::te::getKernelElementTypeName(type.getElementType()).value_or(""));
  assert(elementType && "collectKernelEntries admits kernel types only");
  argument.elementType = elementType.value_or(abi::ElementType::F32);
  argument.rank = static_cast<int>(type.getRank());
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    argument.dims[d] = size;
  return argument;
}

} // namespace

FailureOr<std::string>
mlir::te::formatKernelManifest(Location loc, ArrayRef<KernelEntry> entries,
                               const KernelChecks &checks,
                               const ArgumentRoles &roles) {
  abi::Manifest manifest;
  for (auto [index, entry] : llvm::enumerate(entries)) {
    abi::ManifestEntry &stated = manifest.entries.emplace_back();
    stated.name = entry.name;
    stated.symbol = entry.name + "__te_packed";
    if (index < checks.size())
      stated.checks = checks[index];
    // A kernel with checks returns its status last; the runtime supplies
    // that buffer, so it is not an output of the manifest.
    stated.hasStatus = !stated.checks.empty();
    ArrayRef<RankedTensorType> outputs = entry.outputs;
    if (stated.hasStatus)
      outputs = outputs.drop_back();
    for (auto [input, type] : llvm::enumerate(entry.inputs)) {
      abi::ManifestArgument &argument = stated.arguments.emplace_back(
          describeArgument(type, /*isOutput=*/false));
      if (index < roles.size() && input < roles[index].size())
        argument.role = roles[index][input];
    }
    for (RankedTensorType type : outputs)
      stated.arguments.push_back(describeArgument(type, /*isOutput=*/true));
  }
  return writeKernelManifest(manifest, loc);
}

FailureOr<abi::Manifest>
mlir::te::readKernelManifest(StringRef text, ArrayRef<KernelEntry> entries,
                             Location loc) {
  abi::Manifest manifest;
  std::string error;
  if (!abi::readManifest(text.str().c_str(), manifest, error))
    return emitError(loc, "the kernel manifest does not read: ") << error;
  for (auto [index, entry] : llvm::enumerate(entries))
    if (index >= manifest.entries.size() ||
        manifest.entries[index].name != entry.name)
      return emitError(loc, "the kernel manifest does not state entry '")
             << entry.name << "' as entry " << index;
  if (manifest.entries.size() != entries.size())
    return emitError(loc, "the kernel manifest states ")
           << manifest.entries.size() << " entries, the module has "
           << entries.size();
  return manifest;
}

FailureOr<std::string>
mlir::te::writeKernelManifest(const abi::Manifest &manifest, Location loc) {
  std::string error;
  std::string text = abi::writeManifest(manifest, error);
  if (!error.empty())
    return emitError(loc, "cannot state the kernel manifest: ") << error;
  return text;
}
