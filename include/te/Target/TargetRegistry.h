//===- TargetRegistry.h - The targets a process can compile for -*- C++ -*-===//
//
// One registry per process of every target: the built-in ones (registered
// when their library loads, before any plugin) and those plugins register.
// It is not the plugin manager: it knows targets and who registered them,
// and answers "which target makes modules for device D"; the plugin manager
// decides when a plugin's targets enter (after its registration succeeded),
// starts a plugin before its target is used and withdraws its targets when
// it fails.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_TARGETREGISTRY_H
#define TE_TARGET_TARGETREGISTRY_H

#include "te/Target/Target.h"

#include "llvm/ADT/StringMap.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlir::te {

/// A registered target and who registered it.
struct TargetRef {
  const plugin::TargetBackend *target = nullptr;
  /// The registrant (the plugin manager's record of a plugin); null for a
  /// built-in target.
  const void *owner = nullptr;
  /// "built-in", or "plugin <name> <version>".
  std::string origin;
  /// The plugin ABI minor the target was compiled for: what of
  /// TargetBackend it implements. Built-in targets have the host's.
  unsigned abiMinor = 0;

  explicit operator bool() const { return target != nullptr; }
  bool isBuiltin() const { return owner == nullptr; }
  /// "cpu (built-in)" or "rocm (plugin amd 1.2)".
  std::string describe() const;

  /// The target's native lowering (TargetBackend::getNativeLowering). A
  /// target of a plugin built for ABI 1.1 or older predates it: as then,
  /// its native lowering is the host CPU's.
  const plugin::NativeLowering *getNativeLowering() const;
  /// TargetBackend::getPipelineIdentity, or the name before ABI 1.2.
  std::string getPipelineIdentity() const;
  /// TargetBackend::buildReferencePipeline; false before ABI 1.2.
  bool buildReferencePipeline(OpPassManager &pm) const;
  /// TargetBackend::getArtifactNames; none before ABI 1.2.
  std::vector<std::string> getArtifactNames() const;
};

class TargetRegistry {
public:
  /// The process-wide registry.
  static TargetRegistry &get();

  /// Adds a target that is part of te-mlir itself. A second built-in target
  /// of the same name or device is a programming error (fatal).
  void addBuiltin(std::unique_ptr<plugin::TargetBackend> target);

  /// What is wrong with a registrant adding `target`, or "" when nothing
  /// is: a malformed name, or a clash with a built-in target. (Clashes
  /// within one plugin are the plugin manager's to check.)
  std::string validate(const plugin::TargetBackend *target) const;

  /// Adds the targets of `owner` after those already registered (so
  /// registration order is priority order).
  void add(std::unique_ptr<plugin::TargetBackend> target, const void *owner,
           std::string origin, unsigned abiMinor);

  /// Withdraws the targets of `owner`. They stay alive (a compile on
  /// another thread may hold one) and findWithdrawn still sees them.
  void withdraw(const void *owner);

  /// Built-in targets by name, then the others in registration order.
  std::vector<TargetRef> getTargets() const;
  /// The registered targets of `owner`.
  std::vector<TargetRef> getTargetsOf(const void *owner) const;
  /// The target that makes modules for `deviceName`: a built-in one, else
  /// the first registered. Empty if none.
  TargetRef find(StringRef deviceName) const;
  /// The first withdrawn target for `deviceName` (to say why a device that
  /// had a target has none now). Empty if none.
  TargetRef findWithdrawn(StringRef deviceName) const;
  /// The device names that have targets, "a, b", or "none".
  std::string describeDevices() const;

  /// The arch of `device`'s hardware, as the runtime reports it
  /// (te_device_target_arch): the JIT, which opens devices, says it
  /// (te_compiler_set_device_arch), so that targets never open one. ""
  /// forgets it.
  void setDeviceArch(StringRef device, StringRef arch);
  /// What setDeviceArch said of `device`, or "" when nothing did.
  std::string getDeviceArch(StringRef device) const;
  /// The arch a tool's option asks compiles for `device` to use
  /// (te-lower-target's `arch=`), above the environment and the device's
  /// own; "" forgets it.
  void setArchOverride(StringRef device, StringRef arch);
  /// What setArchOverride said of `device`, or "" when nothing did.
  std::string getArchOverride(StringRef device) const;

  /// Adds the dialects every registered target's native lowering creates.
  void getDependentDialects(DialectRegistry &registry) const;

  TargetRegistry(const TargetRegistry &) = delete;
  TargetRegistry &operator=(const TargetRegistry &) = delete;

private:
  TargetRegistry() = default;

  struct Entry {
    std::unique_ptr<plugin::TargetBackend> target;
    TargetRef ref;
    bool withdrawn = false;
  };
  mutable std::mutex mutex;
  /// Never shrinks: withdrawn entries stay, marked.
  std::vector<std::unique_ptr<Entry>> entries;
  /// setDeviceArch's and setArchOverride's archs by device.
  llvm::StringMap<std::string> deviceArchs, archOverrides;
};

} // namespace mlir::te

#endif // TE_TARGET_TARGETREGISTRY_H
