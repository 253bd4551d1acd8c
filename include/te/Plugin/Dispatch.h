//===- Dispatch.h - Assigning te ops to lowering providers ------*- C++ -*-===//
//
// The dispatch decides, op by op, who lowers each te op: the first plugin
// provider (in priority order, filtered by the policy and the deny list)
// that accepts the op's configuration, or the native backend. Plugin
// lowerings run here; native ones are left for the target's conversion.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_DISPATCH_H
#define TE_PLUGIN_DISPATCH_H

#include "te/Plugin/PluginManager.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::te::plugin {

/// NVTE_PLUGIN_POLICY and NVTE_PLUGIN_DENY, parsed.
struct DispatchPolicy {
  /// Op key ("attention", the op name without "te.") -> candidate plugins
  /// in order; "native" ends the list.
  llvm::StringMap<std::vector<std::string>> order;
  /// Plugins denied for every op, and (plugin, op key) pairs.
  std::vector<std::string> deniedPlugins;
  std::vector<std::pair<std::string, std::string>> deniedOps;

  /// Parses `policy` ("op=a,b,native;op2=native") and `deny`
  /// ("a,b:attention"). On a malformed entry (bad syntax, an op that is not
  /// a te op, a name that is not a plugin name, a name after "native")
  /// returns failure with *error naming the variable, the entry and what is
  /// expected.
  static LogicalResult parse(StringRef policy, StringRef deny,
                             DispatchPolicy &out, std::string *error);

  /// The policy of NVTE_PLUGIN_POLICY / NVTE_PLUGIN_DENY, or of the given
  /// strings where they are not empty.
  static LogicalResult fromEnvironment(StringRef policyOverride,
                                       StringRef denyOverride,
                                       DispatchPolicy &out, std::string *error);

  bool isDenied(StringRef plugin, StringRef opKey) const;
};

/// What happened to one op.
struct DispatchRecord {
  std::string opName, location;
  /// "plugin/provider", or "native".
  std::string provider;
  /// Providers that were asked and declined, or were skipped, with why.
  std::vector<std::pair<std::string, std::string>> declined;
  /// Why an accepted plugin lowering was replaced by the native one.
  std::string fallback;
  /// For an op left to native: why the native backend cannot lower it
  /// either (empty when it can).
  std::string nativeUnsupported;
  /// For an op left to native: the strategies its lowering chose among
  /// (NativeLowering::getStrategies), empty when it has one.
  std::vector<LoweringStrategy> strategies;

  /// The declines ("provider: reason") and the fallback ("fallback: ..."),
  /// one note each, as the explain tables print them.
  std::vector<std::string> notes() const;

  /// The explain tables' backend column for a dispatch for the target
  /// named `targetName`: "plugin P/provider", "<target> (native)", or
  /// "none: <why>" when the native lowering cannot take the op either.
  std::string describeBackend(llvm::StringRef targetName) const;
};

/// Dispatches every te op of `module` for `target`: plugin-lowered ops are
/// replaced in place, the rest are left for the target's native lowering
/// `native` (null: the target has none), whose reasons fill
/// DispatchRecord::nativeUnsupported and which providers may wrap.
/// Warnings go through the PluginManager. Fails (with diagnostics) only in
/// strict mode, when a plugin lowering had to fall back.
/// With `nativeHasStrategies` (a lowering of a target built for plugin ABI
/// 1.3 or later), DispatchRecord::strategies is filled in too.
FailureOr<std::vector<DispatchRecord>>
dispatchModule(ModuleOp module, const TargetInfo &target,
               const NativeLowering *native, const DispatchPolicy &policy,
               bool nativeHasStrategies = false);

/// What a dispatch for runtime device `device` needs: NVTE_PLUGIN loaded,
/// the policy (`policyOverride` / `denyOverride` where not empty, else the
/// environment) and the device's target with its plugin started. An empty
/// device is the host CPU ("cpu").
struct DispatchSetup {
  DispatchPolicy policy;
  TargetInfo target;
  /// The target's name ("cpu" for the host).
  std::string targetName;
  /// The target's native lowering (TargetRef::getNativeLowering); null
  /// when it has none.
  const NativeLowering *native = nullptr;
  /// Whether `native` has getStrategies (plugin ABI 1.3).
  bool nativeHasStrategies = false;
};
FailureOr<DispatchSetup> prepareDispatch(StringRef device,
                                         StringRef policyOverride,
                                         StringRef denyOverride,
                                         std::string *error);

/// Adds what compiling for `target`'s device runs before serializing:
/// buildLoweringPipeline (te/Target/Target.h) with te-dispatch for that
/// device as the stage that decides how te ops lower.
void buildTargetPipeline(OpPassManager &pm, const TargetRef &target);

/// buildTargetPipeline for the built-in cpu target: the plugins' lowerings,
/// then the host's. Registered as `te-lower-cpu` (registerLoweringPipelines).
void buildLowerToCPUPipeline(OpPassManager &pm);

/// What compiling for runtime device `device` runs before serializing, as
/// the pipeline te-lower-target{device=... arch=...}: te-dispatch for the
/// device's target (the built-in cpu or cuda, or a plugin's, see
/// docs/PluginAPI.md), then the target's own pipeline on what the
/// providers left, pass by pass, so that --dump-pass-pipeline prints them
/// and --pass-pipeline replays them. A target's plugin starts (activates)
/// first. `arch` names the processor to compile for, as a JIT would for
/// the device it runs on (te-opt --te-lower-target="device=cuda
/// arch=sm_90a" lowers for Hopper without a GPU); it overrides the
/// environment (TE_CUDA_ARCH) for the rest of the process. No device, a
/// device without a target, or a plugin that fails to start give a
/// pipeline that reports it at the module when it runs.
void buildLowerTargetPipeline(OpPassManager &pm, StringRef device,
                              StringRef arch);

/// Registers te-lower-cpu and te-lower-target with the pass registry.
void registerLoweringPipelines();

/// The explain table of a dispatch for the target named `targetName`
/// (te/Support/ExplainTable.h): what --te-explain-dispatch prints, in the
/// format of te-run --explain.
void printDispatchTable(llvm::raw_ostream &os, ArrayRef<DispatchRecord> records,
                        StringRef targetName);

} // namespace mlir::te::plugin

#endif // TE_PLUGIN_DISPATCH_H
