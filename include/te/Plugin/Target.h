//===- Target.h - Targets: how lowered te modules become binaries -*- C++
//-*-===//
//
// A target turns a te module into a kernel module file that one runtime
// device loads (te_device_ops::load_module): the host CPU's shared
// libraries, a GPU's code objects, a vendor's binaries. te-mlir builds in
// the "cpu" target; a plugin adds others with Registrar::addTarget and
// ships the matching device as a runtime plugin (te/Runtime/Plugin.h).
//
// Compiling for a device runs, in order: the dispatch (te-dispatch, with
// the target's TargetInfo, so providers decide per target), the target's
// pipeline on what the providers left, then the target's serializer. The
// runtime finds the target by the name of the device it loads on, so it
// never needs MLIR to pick one.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_TARGET_H
#define TE_PLUGIN_TARGET_H

#include "te/Plugin/Plugin.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace mlir::te {

/// One entry point of a kernel module: a public function of the te module,
/// its arguments as inputs and its results as outputs.
struct KernelEntry {
  std::string name;
  SmallVector<RankedTensorType> inputs;
  SmallVector<RankedTensorType> outputs;
};

/// The entry points of `module`: every public function. Fails (with a
/// diagnostic on the function) when a signature cannot cross the kernel
/// ABI: non-tensor or dynamically shaped values, tensors without elements,
/// or element types the runtime does not know.
FailureOr<SmallVector<KernelEntry>> collectKernelEntries(ModuleOp module);

/// The run-time check messages of each kernel entry (te.check, see
/// te-materialize-checks), indexed like the entries; empty for an entry
/// without checks.
using KernelChecks = std::vector<std::vector<std::string>>;

/// Reads (and removes) the checks te-materialize-checks recorded in the
/// lowered module, and appends the status output (tensor<4xi64>) to each
/// entry that has checks: that entry's kernel returns its status last.
FailureOr<KernelChecks> takeKernelChecks(ModuleOp lowered,
                                         MutableArrayRef<KernelEntry> entries);

/// The role of each input of each entry (indexed like the entries and
/// their inputs), "" for none: what the te op that reads the argument needs
/// of its values, so that generated inputs make sense
/// (te/Support/RandomInputs.h): `cu_seqlens:<tokens>:<seq_offsets input or
/// -1>`, `seq_offsets:<tokens>:<cu_seqlens input>`, `seqlens:<max>`,
/// `positive`, `nonnegative`, `alibi_slopes` or `rng_state`.
using ArgumentRoles = std::vector<std::vector<std::string>>;
ArgumentRoles describeArgumentRoles(ModuleOp module,
                                    ArrayRef<KernelEntry> entries);

/// The text manifest the runtime parses (te/Runtime/Module.h), with each
/// entry's symbol `<name>__te_packed`, the inputs' roles, and for an entry
/// with checks its status argument and check messages. Every target's
/// module must hand it to the runtime through its device's get_manifest.
std::string formatKernelManifest(ArrayRef<KernelEntry> entries,
                                 const KernelChecks &checks = {},
                                 const ArgumentRoles &roles = {});

namespace plugin {

/// How a te module becomes a kernel module file for one runtime device.
/// Implementations must be thread safe: several compiles may use one
/// target at once, each with its own context.
class TargetBackend {
public:
  /// `name` identifies the target in listings ("cpu", "rocm");
  /// `deviceName` is the runtime device (te_device_ops::name) whose
  /// load_module takes what serialize writes. Both are 1 to 63 characters
  /// from [A-Za-z0-9_.-].
  TargetBackend(std::string name, std::string deviceName)
      : name(std::move(name)), deviceName(std::move(deviceName)) {}
  virtual ~TargetBackend();

  const std::string &getName() const { return name; }
  const std::string &getDeviceName() const { return deviceName; }

  /// What the dispatch and the lowering providers see. `backend` should be
  /// the target's name, so that providers can tell targets apart.
  virtual TargetInfo getTargetInfo() const = 0;

  /// Adds the passes that take a dispatched te module (plugin-lowered ops
  /// already replaced, the rest still te ops) to what serialize accepts.
  virtual void buildPipeline(OpPassManager &pm) const = 0;

  /// Writes the kernel module for `lowered` (the output of the pipeline) to
  /// `outputPath`. `entries` are the module's entry points as they were
  /// before lowering, with the status output of entries that have run-time
  /// checks appended (each such kernel function returns it last), and
  /// `manifest` is formatKernelManifest(entries, checks); the
  /// device must return exactly that text from get_manifest and resolve
  /// each entry's symbol with get_function. `optLevel` (0-3) is the
  /// requested optimization level. Fails with a diagnostic on `lowered`.
  virtual LogicalResult serialize(ModuleOp lowered,
                                  ArrayRef<KernelEntry> entries,
                                  StringRef manifest, StringRef outputPath,
                                  unsigned optLevel) const = 0;

private:
  std::string name, deviceName;
};

struct PluginRecord;

/// A registered target and who registered it.
struct TargetRef {
  const TargetBackend *target = nullptr;
  /// The plugin that registered it; null for a built-in target.
  PluginRecord *plugin = nullptr;

  explicit operator bool() const { return target != nullptr; }
  /// "cpu (built-in)" or "rocm (plugin amd 1.2)".
  std::string describe() const;
};

/// Adds a target that is part of te-mlir itself. Built-in targets are
/// registered when their library loads, so before any plugin; a plugin may
/// not register a target with a built-in target's name or device.
void registerBuiltinTarget(std::unique_ptr<TargetBackend> target);

} // namespace plugin
} // namespace mlir::te

#endif // TE_PLUGIN_TARGET_H
