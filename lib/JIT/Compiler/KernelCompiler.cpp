//===- KernelCompiler.cpp - te modules to loadable kernel libraries -------===//

#include "te/JIT/KernelCompiler.h"

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Plugin/Dispatch.h"
#include "te/Plugin/PluginManager.h"
#include "te/Target/InitAllTargets.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <chrono>
#include <mutex>

using namespace mlir;
using namespace mlir::te;

std::string mlir::te::getHostTargetDescription() {
  const plugin::TargetInfo &host = plugin::getHostTarget();
  return host.triple + " " + host.cpu + " " + host.features;
}

namespace {

/// The dump file name of a pass: its command-line argument, else its name,
/// in the characters file names take everywhere.
std::string dumpNameOf(const Pass &pass) {
  std::string name =
      (pass.getArgument().empty() ? pass.getName() : pass.getArgument()).str();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '-' && c != '_' && c != '.')
      c = '_';
  return name;
}

/// Dumps the module after every pass of the pipeline. Passes nested on
/// functions run once per function; the module is dumped once, when the
/// pass manager that runs them on the module is done, under their names.
class DumpAfterEachPass : public PassInstrumentation {
public:
  DumpAfterEachPass(CompileRecorder &recorder, Operation *root)
      : recorder(recorder), root(root) {}

  void runAfterPass(Pass *pass, Operation *op) override {
    dumpAfter(pass, op, "");
  }

  /// The IR a pass failed on, for the diagnostics that follow.
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    dumpAfter(pass, op, "-failed");
  }

private:
  void dumpAfter(Pass *pass, Operation *op, StringRef suffix) {
    // Nested passes may run on several functions at once.
    std::lock_guard<std::mutex> lock(mutex);
    if (op != root) {
      std::string name = dumpNameOf(*pass) + suffix.str();
      if (!llvm::is_contained(nested, name))
        nested.push_back(name);
      return;
    }
    // The adaptor that ran nested passes has no argument of its own.
    std::string name = pass->getArgument().empty() && !nested.empty()
                           ? llvm::join(nested, "+")
                           : dumpNameOf(*pass) + suffix.str();
    nested.clear();
    recorder.dump(name, "mlir", [&](raw_ostream &os) { op->print(os); });
  }

  CompileRecorder &recorder;
  Operation *root;
  std::mutex mutex;
  SmallVector<std::string> nested;
};

/// A module lowered by a target's pipeline, with what its serializer takes.
struct LoweredModule {
  OwningOpRef<ModuleOp> module;
  SmallVector<KernelEntry> entries;
  std::string manifest;
  TargetRef target;
};

/// The part of a compile that every output shares: the entries, the
/// target of `options.device`, its pipeline (or the reference pipeline)
/// on a clone of `module`, the manifest. Records the pipeline's time and
/// dumps into options.recorder, which is current while it runs.
FailureOr<LoweredModule> lowerForTarget(ModuleOp module,
                                        const KernelCompileOptions &options) {
  FailureOr<SmallVector<KernelEntry>> entries = collectKernelEntries(module);
  if (failed(entries))
    return failure();

  registerBuiltinTargets();
  plugin::PluginManager &plugins = plugin::PluginManager::get();
  std::string error;
  if (failed(plugins.loadFromEnvironment(&error)))
    return mlir::emitError(module.getLoc(), error);
  // A plugin's toolchain starts on first use.
  FailureOr<TargetRef> started = plugins.startTarget(options.device, &error);
  if (failed(started))
    return mlir::emitError(module.getLoc(), error);

  CompileRecorder *recorder = options.recorder;
  if (recorder && failed(recorder->prepareDumpDirectory(&error)))
    return mlir::emitError(module.getLoc(), error);
  if (recorder)
    recorder->dump("input", "mlir",
                   [&](raw_ostream &os) { module->print(os); });

  LoweredModule result{module.clone(), std::move(*entries), "", *started};
  // What the kernel says about an op (its checks' messages) names it by
  // number, so the kernel serves every program it is cached for.
  markTEOpOrdinals(*result.module);
  PassManager pm(module.getContext());
  if (options.reference) {
    if (!result.target.buildReferencePipeline(pm))
      return mlir::emitError(module.getLoc(), "target ")
             << result.target.describe() << " for device '" << options.device
             << "' has no reference pipeline; reference kernels are built "
                "for the cpu device";
  } else {
    plugin::buildTargetPipeline(pm, result.target);
  }
  if (recorder && recorder->isDumping())
    pm.addInstrumentation(std::make_unique<DumpAfterEachPass>(
        *recorder, result.module->getOperation()));
  {
    StageTimer stage("mlir-passes");
    if (failed(pm.run(*result.module)))
      return failure();
  }
  FailureOr<KernelChecks> checks =
      takeKernelChecks(*result.module, result.entries);
  if (failed(checks))
    return failure();
  FailureOr<std::string> manifest =
      formatKernelManifest(module.getLoc(), result.entries, *checks,
                           describeArgumentRoles(module, result.entries));
  if (failed(manifest))
    return failure();
  result.manifest = std::move(*manifest);
  return result;
}

/// A failed dump is an error: the user asked for the files.
LogicalResult checkDumps(ModuleOp module, const CompileRecorder *recorder) {
  if (recorder && !recorder->getDumpError().empty())
    return mlir::emitError(module.getLoc(), recorder->getDumpError());
  return success();
}

} // namespace

FailureOr<std::string>
mlir::te::compileKernelLibrary(ModuleOp module,
                               const KernelCompileOptions &options,
                               StringRef outputPath) {
  CompileRecorder::Scope scope(options.recorder);
  FailureOr<LoweredModule> lowered = lowerForTarget(module, options);
  if (failed(lowered))
    return failure();
  size_t stagesBefore =
      options.recorder ? options.recorder->getStages().size() : 0;
  auto start = std::chrono::steady_clock::now();
  if (failed(lowered->target.target->serialize(
          *lowered->module, lowered->entries, lowered->manifest, outputPath,
          options.optLevel)))
    return mlir::emitError(module.getLoc(), "target ")
           << lowered->target.describe()
           << " could not write the kernel module for device '"
           << options.device << "'";
  // A serializer that does not build on writeHostKernelLibrary is one
  // stage.
  if (options.recorder && options.recorder->getStages().size() == stagesBefore)
    options.recorder->addStage("serialize",
                               std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
  if (failed(checkDumps(module, options.recorder)))
    return failure();
  return lowered->manifest;
}

LogicalResult mlir::te::emitKernelArtifact(ModuleOp module,
                                           const KernelCompileOptions &options,
                                           StringRef artifact,
                                           StringRef outputPath) {
  CompileRecorder::Scope scope(options.recorder);
  FailureOr<LoweredModule> lowered = lowerForTarget(module, options);
  if (failed(lowered))
    return failure();
  if (artifact == "mlir") {
    std::string text;
    llvm::raw_string_ostream os(text);
    lowered->module->print(os);
    if (failed(writeOutputFile(module.getLoc(), outputPath, text)))
      return failure();
    return checkDumps(module, options.recorder);
  }
  // The kernel module itself, as the device loads it: what ahead-of-time
  // compiles ship (to a machine without MLIR, say).
  if (artifact == "module") {
    if (failed(lowered->target.target->serialize(
            *lowered->module, lowered->entries, lowered->manifest, outputPath,
            options.optLevel)))
      return failure();
    return checkDumps(module, options.recorder);
  }
  // Every other stage is the target's serializer's own.
  std::vector<std::string> names = lowered->target.getArtifactNames();
  if (!llvm::is_contained(names, artifact)) {
    names.insert(names.begin(), {"mlir", "module"});
    return mlir::emitError(module.getLoc(), "device '")
           << options.device << "' is compiled by target "
           << lowered->target.describe() << ", which cannot stop at '"
           << artifact << "'; it can emit " << llvm::join(names, ", ");
  }
  if (failed(lowered->target.target->emitArtifact(
          *lowered->module, lowered->entries, lowered->manifest, artifact,
          outputPath, options.optLevel)))
    return failure();
  return checkDumps(module, options.recorder);
}
