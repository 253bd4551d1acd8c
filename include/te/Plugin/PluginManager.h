//===- PluginManager.h - Loading, activating and listing plugins -*- C++
//-*-===//
//
// The host side of the plugin contract. The process-wide PluginManager loads
// the libraries named by NVTE_PLUGIN (and --te-plugin, and the C API),
// checks the handshake, runs each plugin's register callback into a record
// of its own, and hands the registered providers to the dispatch pass in
// priority order. A plugin is `available` once registered and `active` once
// its activate callback ran (lazily, the first time one of its providers
// accepts an op). Any failure drops everything the plugin registered, prints
// one warning, and leaves the native lowering in charge -- or, with
// NVTE_PLUGIN_STRICT=1, is an error.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_PLUGINMANAGER_H
#define TE_PLUGIN_PLUGINMANAGER_H

#include "te/Plugin/Plugin.h"
#include "te/Target/TargetRegistry.h"

#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlir::te::plugin {

/// The host's plugin ABI version, "1.0".
std::string getHostABIVersion();

/// Whether `name` may name a plugin or a provider: 1 to 63 characters from
/// [A-Za-z0-9_.-].
bool isValidPluginName(StringRef name);

/// Whether `name` ("te.attention") is an op of the te dialect.
bool isTEOpName(StringRef name);

enum class PluginState { Available, Active, Failed };

/// One entry of the plugin list, loaded or not.
struct PluginRecord {
  /// As listed ("onednn", "/opt/x/libfoo.so") and where it came from
  /// ("NVTE_PLUGIN", "--te-plugin", "te_compiler_load_plugins").
  std::string spec, source;
  /// The library file, once found.
  std::string path;
  /// From te_plugin_info, once queried.
  std::string name, version, llvmVersion, buildId;
  unsigned abiMajor = 0, abiMinor = 0;
  uint64_t features = 0;
  PluginState state = PluginState::Failed;
  /// For a failed plugin: the step that failed ("load", "query",
  /// "handshake", "register", "activate") and the error.
  std::string failedStep, error;
  std::vector<std::unique_ptr<LoweringProvider>> providers;
  /// The targets registered during the register callback, until it
  /// succeeded and they moved to the TargetRegistry (with this record as
  /// their owner).
  std::vector<std::unique_ptr<TargetBackend>> targets;
  /// What the plugin registered before it failed: withdrawn, but kept
  /// alive for threads that looked them up before the failure.
  std::vector<std::unique_ptr<LoweringProvider>> retiredProviders;
  std::vector<std::unique_ptr<TargetBackend>> retiredTargets;
  std::vector<std::function<void(DialectRegistry &)>> dialects;
  te_plugin_activate_fn activate = nullptr;
  void *handle = nullptr;

  /// "name version" for messages, or the spec before the query.
  std::string describe() const;
};

/// A provider with the plugin it belongs to.
struct ProviderRef {
  PluginRecord *plugin;
  const LoweringProvider *provider;
  /// "plugin/provider".
  std::string qualifiedName() const;
};

class PluginManager {
public:
  /// The process-wide manager. NVTE_PLUGIN_STRICT is read on creation.
  static PluginManager &get();

  /// Loads the plugins of NVTE_PLUGIN, once per process; later calls only
  /// return the result of that load again. See load for the result.
  LogicalResult loadFromEnvironment(std::string *error = nullptr);

  /// Loads a comma-separated list of plugins (paths, or names looked up in
  /// TE_PLUGIN_PATH and the installed plugin directory) after those already
  /// loaded; list order is priority. `source` names the list in messages.
  /// A plugin that fails is recorded as failed with a warning; in strict
  /// mode the first failure also makes this return failure with the
  /// message in *error. Entries already loaded are skipped with a warning.
  LogicalResult load(StringRef specs, StringRef source,
                     std::string *error = nullptr);

  /// Runs the plugin's activate callback if it has not run yet. On failure
  /// the plugin is marked failed (its registrations dropped) with a warning,
  /// and the error is returned in *error.
  LogicalResult activate(PluginRecord &plugin, std::string *error = nullptr);

  /// "plugin failed at <step>: <error>" if `plugin` has failed, else "".
  /// Read under the manager's lock: another thread may be failing it.
  std::string describeFailure(const PluginRecord &plugin) const;

  /// One line per listed plugin that failed, in list order: "<source>:
  /// plugin <plugin> failed at <step>: <error>". Empty when none did.
  std::vector<std::string> getFailures() const;

  /// Providers of available and active plugins that take `opName`, in
  /// priority order (plugin list order, then registration order).
  std::vector<ProviderRef> getProviders(StringRef opName) const;

  /// The available or active plugin named `name`, or null.
  PluginRecord *lookup(StringRef name) const;

  /// The target that produces kernel modules for the runtime device
  /// `deviceName` (TargetRegistry::find): a built-in one, else that of the
  /// first available or active plugin (in priority order) that registered
  /// one. Empty if none.
  TargetRef findTarget(StringRef deviceName) const;

  /// The plugin that registered `ref`, or null for a built-in target.
  PluginRecord *ownerOf(const TargetRef &ref) const;

  /// The target of `deviceName`, with its plugin started (activated), as a
  /// compile for that device needs it. Fails with *error saying why there
  /// is none: no target for the device (naming those that exist), or the
  /// plugin whose target it was failed (its step and error).
  FailureOr<TargetRef> startTarget(StringRef deviceName, std::string *error);

  /// Built-in targets, then those of available and active plugins in
  /// priority order (TargetRegistry::getTargets).
  std::vector<TargetRef> getTargets() const;

  /// The device names of getTargets(), for "available: ..." messages.
  std::string describeTargets() const;

  /// Registers the dialects of available and active plugins.
  void registerDialects(DialectRegistry &registry) const;

  /// The plugins' part of the kernel cache key, encoded as
  /// te/ABI/PluginFingerprint.h says: the available and active plugins'
  /// names and versions, the dispatch settings `policy` and `deny`, strict
  /// mode, and the plugins loaded through te_compiler_load_plugins and
  /// those that failed, in list order (a kernel cache keyed on the
  /// environment alone must not trust its key while either is not what it
  /// assumed).
  std::string describeFingerprint(StringRef policy, StringRef deny) const;

  /// The table of --te-print-plugin-info.
  void printInfo(llvm::raw_ostream &os) const;

  /// One line per listed plugin, in priority order, tab-separated:
  /// spec, source, state ("available", "active", "failed"), name, version,
  /// library path, why it failed ("<step>: <error>", or ""), and its
  /// providers ("<provider>: <op> <op>...", separated by "; "). Fields a
  /// plugin never reached are empty; tabs and newlines in them become
  /// spaces.
  std::string describeStates() const;

  bool isStrict() const { return strict; }

  /// Prints a one-line warning on stderr.
  void warn(StringRef message) const;

  PluginManager(const PluginManager &) = delete;
  PluginManager &operator=(const PluginManager &) = delete;

private:
  PluginManager();
  ~PluginManager();
  void loadOne(StringRef spec, StringRef source);
  void fail(PluginRecord &record, StringRef step, StringRef error);

  mutable std::recursive_mutex mutex;
  std::vector<std::unique_ptr<PluginRecord>> records;
  bool strict = false;
  bool environmentLoaded = false;
  /// Why loading NVTE_PLUGIN failed in strict mode ("" if it did not).
  std::string environmentError;
  /// The first failure of the current load() call, for strict mode.
  std::string firstFailure;
};

} // namespace mlir::te::plugin

#endif // TE_PLUGIN_PLUGINMANAGER_H
