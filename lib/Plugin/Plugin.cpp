//===- Plugin.cpp - Out-of-line parts of the plugin interfaces ------------===//

#include "te/Plugin/Plugin.h"
#include "te/Plugin/PluginManager.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::te::plugin;

// The target interface (te/Target/Target.h) is part of the plugin ABI:
// a plugin built for this ABI minor implements all of it.
static_assert(mlir::te::kTargetInterfaceMinor == TE_PLUGIN_ABI_MINOR,
              "te/Target/Target.h changed: bump the plugin ABI minor with it");

LoweringProvider::~LoweringProvider() = default;
Registrar::~Registrar() = default;

Registrar &Registrar::from(te_plugin_registrar *registrar) {
  return *reinterpret_cast<Registrar *>(registrar);
}

void mlir::te::plugin::addLinkLibrary(Operation *op, llvm::StringRef path) {
  auto module =
      isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  llvm::SmallVector<Attribute> libraries;
  if (auto existing = module->getAttrOfType<ArrayAttr>(kLinkLibrariesAttrName))
    libraries.append(existing.begin(), existing.end());
  auto entry = StringAttr::get(module.getContext(), path);
  if (!llvm::is_contained(libraries, entry))
    libraries.push_back(entry);
  module->setAttr(kLinkLibrariesAttrName,
                  ArrayAttr::get(module.getContext(), libraries));
}

std::string mlir::te::plugin::getHostABIVersion() {
  return std::to_string(TE_PLUGIN_ABI_MAJOR) + "." +
         std::to_string(TE_PLUGIN_ABI_MINOR);
}
