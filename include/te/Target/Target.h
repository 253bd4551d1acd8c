//===- Target.h - Targets: how te modules become kernel modules -*- C++ -*-===//
//
// A target turns a te module into a kernel module file that one runtime
// device loads (te_device_ops::load_module): the host CPU's shared
// libraries, a GPU's code objects, a vendor's binaries. te-mlir builds in
// its own targets (lib/Target/<name>, registered through
// te/Target/InitAllTargets.h); a plugin adds others with
// Registrar::addTarget and ships the matching device as a runtime plugin
// (te/Runtime/Plugin.h). Common code (the dispatch, the JIT, the tools)
// asks a target, never a backend directly: its native lowering and why
// that cannot take an op, what identifies its pipeline in the kernel cache,
// its pipeline and its serializer.
//
// Compiling for a device runs, in order: the dispatch (te-dispatch, with
// the target's TargetInfo, so providers decide per target, and with the
// target's native lowering for the ops no provider takes), the target's
// pipeline on what the providers left, then the target's serializer. The
// runtime finds the target by the name of the device it loads on, so it
// never needs MLIR to pick one.
//
// The classes a plugin sees stay in namespace te::plugin, where plugin ABI
// 1.0 put them: plugins built then refer to them by those names.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_TARGET_H
#define TE_TARGET_TARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::te {
namespace plugin {

/// The target an op is being lowered for.
struct TargetInfo {
  /// The name of the target: "cpu" for the host, "cuda" for NVIDIA GPUs,
  /// or the name a plugin registered its target under ("rocm").
  std::string backend;
  /// LLVM target triple, e.g. "x86_64-unknown-linux-gnu" or
  /// "nvptx64-nvidia-cuda".
  std::string triple;
  /// The architecture code is generated for: a processor name
  /// ("sapphirerapids") or a GPU arch ("sm_90a"). Kernels for different
  /// archs never share a cache entry.
  std::string cpu;
  /// LLVM feature string, e.g. "+avx2,+avx512f,..." or "+ptx80".
  std::string features;

  /// Whether `feature` (without the sign, e.g. "avx512f") is enabled.
  bool hasFeature(llvm::StringRef feature) const;
};

/// The host CPU as a lowering target: this machine's processor and
/// features, or the processor TE_CPU_ARCH names (an LLVM processor name such
/// as x86-64-v3 or znver4, for ahead-of-time compiles for other machines and
/// for testing the paths of hosts without this one's features).
const TargetInfo &getHostTarget();

/// Why TE_CPU_ARCH cannot be compiled for (or TE_CPU_AMX has a value it does
/// not take), or nullopt if it is unset or LLVM knows the processor it names.
std::optional<std::string> getHostTargetError();

/// TE_CPU_AMX=emulate: getHostTarget has AMX's tile features whatever the
/// processor, and host code generation lowers the tile instructions to
/// scalar loops (LLVM's scalar AMX lowering, which needs unoptimized code
/// generation), so that the tile kernels run, slowly, on any x86-64 host.
bool isEmulatingHostTiles();

/// Why getHostTarget has no AMX tile features although the processor
/// (this host's, TE_CPU_ARCH unset) has them: TE_CPU_AMX=off, or the OS's
/// refusal (te/ABI/HostTiles.h). nullopt otherwise.
std::optional<std::string> getHostTileRefusal();

/// One way a native lowering can take an op (code generation, a vendor
/// library), for --explain.
struct LoweringStrategy {
  /// "code generation", "cuBLASLt", ...
  std::string name;
  /// Why it cannot take the op (its own words, a policy variable's
  /// choice included), or nullopt if it can.
  std::optional<std::string> unsupported;
};

/// A target's own lowering of single te ops: what the dispatch leaves ops
/// to when no plugin provider takes them, and what providers may extend or
/// wrap (what TE's `_nv` alias gives its Python plugins).
class NativeLowering {
public:
  virtual ~NativeLowering();
  /// Why this lowering cannot take `op` in its configuration, in the
  /// target's own words, or nullopt if it can.
  virtual std::optional<std::string>
  getUnsupportedReason(Operation *op) const = 0;
  /// Lowers `op` in place exactly as the native backend does; the op is
  /// replaced. Fails (with a diagnostic on the op) if native cannot.
  virtual LogicalResult lower(Operation *op) const = 0;
  /// The strategies the lowering chooses among for `op`, in order of
  /// preference (the first that can take the op lowers it); empty when it
  /// has one way only. Plugin ABI 1.3: called only on lowerings of targets
  /// built for 1.3 or later.
  virtual std::vector<LoweringStrategy> getStrategies(Operation *op) const;
};

} // namespace plugin

/// One entry point of a kernel module: a public function of the te module,
/// its arguments as inputs and its results as outputs.
struct KernelEntry {
  std::string name;
  SmallVector<RankedTensorType> inputs;
  SmallVector<RankedTensorType> outputs;
};

/// The runtime's name of element type `type` (its te_dtype spelling, from
/// te/ABI/ElementTypes.def: "f32", "bf16", "f8E4M3FN", ...), or nullopt
/// when kernels cannot take it: what library-call parameters and plugins
/// name types by.
std::optional<std::string> getKernelElementTypeName(Type type);

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

/// Shared libraries the kernel must be linked against (and find at run
/// time: each one's directory goes into the kernel's rpath), for lowerings
/// that call functions of a plugin's runtime library. Recorded on the
/// module as the string array attribute `te.link_libraries`; the dispatch
/// carries it from a provider's scratch module to the real one, and a
/// target's serializer links them.
namespace plugin {
inline constexpr llvm::StringLiteral kLinkLibrariesAttrName =
    "te.link_libraries";
} // namespace plugin

/// The plugin ABI minor (te/Plugin/PluginABI.h) whose TargetBackend this
/// header declares: what a built-in target implements. A plugin's target
/// implements the members of the minor it was built for (TargetRef).
inline constexpr unsigned kTargetInterfaceMinor = 3;

/// Adds the one-shot bufferization of a lowered module's entry points into
/// the kernel ABI every target shares: tensor arguments become buffers with
/// identity layouts and results become out-parameters (statically shaped
/// allocations that are returned are hoisted into them), so that each
/// entry takes its inputs, then its outputs.
void addKernelBufferization(OpPassManager &pm);

/// The manifest the runtime reads (te/Runtime/Module.h), written through
/// te/ABI/Manifest.h, with each entry's symbol `<name>__te_packed`, the
/// inputs' roles, and for an entry with checks its status argument and
/// check messages. Every target's module must hand it to the runtime
/// through its device's get_manifest. Fails at `loc` when an entry cannot
/// be stated (a name the runtime would refuse).
FailureOr<std::string> formatKernelManifest(Location loc,
                                            ArrayRef<KernelEntry> entries,
                                            const KernelChecks &checks = {},
                                            const ArgumentRoles &roles = {});

namespace plugin {

/// How a te module becomes a kernel module file for one runtime device.
/// Implementations must be thread safe: several compiles may use one
/// target at once, each with its own context.
class TargetBackend {
public:
  /// `name` identifies the target in listings ("cpu", "cuda", "rocm");
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

  // Since plugin ABI 1.2 (appended, so the vtable of a 1.1 target keeps
  // its layout; the host calls these only on targets of plugins built for
  // 1.2 or later, see TargetRef).

  /// The target's own lowering of the te ops no provider takes, or null
  /// when it has none (then every op must be lowered by a plugin provider,
  /// and --explain says so).
  virtual const NativeLowering *getNativeLowering() const;

  /// What identifies the code the pipeline and serializer make, beyond the
  /// te-mlir build and the TargetInfo: a kernel cache entry is reused only
  /// for the same identity. Change it whenever generated code changes
  /// without the build changing (e.g. a toolchain version read at run
  /// time). Default: the target's name.
  virtual std::string getPipelineIdentity() const;

  /// The dialects the native lowering creates, so that passes can declare
  /// them before they run. Default: none.
  virtual void getDependentDialects(DialectRegistry &registry) const;

  /// Adds the passes of the target's reference build (the dense
  /// decomposition differential checks compare against), or returns false
  /// when the target has none (the default).
  virtual bool buildReferencePipeline(OpPassManager &pm) const;

  /// The intermediate files the serializer can stop at ("llvm", "asm",
  /// "obj"; "ptx", "cubin"), for te-run --emit. Default: none.
  virtual std::vector<std::string> getArtifactNames() const;

  /// Writes the intermediate `artifact` (one of getArtifactNames()) of
  /// `lowered` to `outputPath` ("-": stdout) instead of the kernel module;
  /// the other arguments as for serialize. Default: an error on `lowered`.
  virtual LogicalResult emitArtifact(ModuleOp lowered,
                                     ArrayRef<KernelEntry> entries,
                                     StringRef manifest, StringRef artifact,
                                     StringRef outputPath,
                                     unsigned optLevel) const;

private:
  std::string name, deviceName;
};

} // namespace plugin

/// Adds what every compile for `target` runs, in order: te-insert-checks
/// (index checks, before any lowering, so that every lowering is checked),
/// te-fold-empty (zero-size problems reach no lowering), `addOpLowering`'s
/// stage, which decides how te ops lower (the plugin layer's te-dispatch;
/// a reference build's te-decompose-reference; null: none, the target's
/// own pipeline lowers every op), te-materialize-checks (the checks'
/// status result, so that targets see plain tensors), then the target's
/// pipeline (TargetBackend::buildPipeline). The one place that order is
/// written: te-lower-cpu, te-lower-target, the reference build and the JIT
/// all build their pipelines here.
void buildLoweringPipeline(OpPassManager &pm,
                           const plugin::TargetBackend &target,
                           function_ref<void(OpPassManager &)> addOpLowering);
} // namespace mlir::te

#endif // TE_TARGET_TARGET_H
