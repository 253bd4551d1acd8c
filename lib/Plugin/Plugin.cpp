//===- Plugin.cpp - Out-of-line parts of the plugin interfaces ------------===//

#include "te/Plugin/Plugin.h"
#include "te/Plugin/PluginManager.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir::te::plugin;

NativeLowering::~NativeLowering() = default;
LoweringProvider::~LoweringProvider() = default;
Registrar::~Registrar() = default;

Registrar &Registrar::from(te_plugin_registrar *registrar) {
  return *reinterpret_cast<Registrar *>(registrar);
}

bool TargetInfo::hasFeature(llvm::StringRef feature) const {
  llvm::SmallVector<llvm::StringRef> enabled;
  llvm::StringRef(features).split(enabled, ',', -1, false);
  for (llvm::StringRef entry : enabled)
    if (entry.consume_front("+") && entry == feature)
      return true;
  return false;
}

const TargetInfo &mlir::te::plugin::getHostTarget() {
  static const TargetInfo host = [] {
    llvm::SubtargetFeatures features;
    for (const llvm::StringMapEntry<bool> &feature :
         llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.first(), feature.second);
    return TargetInfo{"cpu", llvm::sys::getProcessTriple(),
                      llvm::sys::getHostCPUName().str(), features.getString()};
  }();
  return host;
}

std::string mlir::te::plugin::getHostABIVersion() {
  return std::to_string(TE_PLUGIN_ABI_MAJOR) + "." +
         std::to_string(TE_PLUGIN_ABI_MINOR);
}
