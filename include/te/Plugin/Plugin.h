//===- Plugin.h - What a te-mlir plugin implements and registers -*- C++
//-*-===//
//
// The C++ side of the plugin contract. A plugin links the host's shared
// libMLIR and libTEPlugin (never a copy of its own), exports te_plugin_query
// (PluginABI.h; TE_PLUGIN_DEFINE below writes it), and in its register
// callback adds LoweringProviders (and targets, Target.h) to the Registrar.
//
// A provider is asked, op by op, whether it lowers that op in its full
// configuration for the target at hand (Decision), and if it accepts, to
// lower it. The op it lowers sits alone in a scratch module, so a provider
// may rewrite it with patterns, run a whole pass pipeline on that module,
// or ask for the native lowering and wrap it. The host verifies the result
// before splicing it into the real module; anything invalid sends the op
// back to the native backend (or is an error in strict mode).
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_PLUGIN_H
#define TE_PLUGIN_PLUGIN_H

#include "te/Plugin/PluginABI.h"
#include "te/Target/Target.h"
#include "te/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Config/llvm-config.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::te::plugin {

/// A provider's answer for one op: accepted, or declined with a reason that
/// --explain shows to the user ("sliding window not supported").
class Decision {
public:
  static Decision accept() { return Decision(true, {}); }
  static Decision decline(std::string reason) {
    return Decision(false, std::move(reason));
  }
  bool isAccepted() const { return accepted; }
  const std::string &getReason() const { return reason; }

private:
  Decision(bool accepted, std::string reason)
      : accepted(accepted), reason(std::move(reason)) {}
  bool accepted;
  std::string reason;
};

/// Lowers some te ops for some targets.
class LoweringProvider {
public:
  /// `name` is unique within the plugin and shown as "plugin/name";
  /// `opNames` are the ops it may be offered ("te.attention").
  LoweringProvider(std::string name, std::vector<std::string> opNames)
      : name(std::move(name)), opNames(std::move(opNames)) {}
  virtual ~LoweringProvider();

  const std::string &getName() const { return name; }
  const std::vector<std::string> &getOpNames() const { return opNames; }

  /// Whether this provider lowers `op` as it stands (dtypes, layout, mask,
  /// window, head dims, ...) for `target`. Must not modify anything. Called
  /// for every op of the listed kinds, so keep it cheap.
  virtual Decision check(Operation *op, const TargetInfo &target) const = 0;

  /// Lowers `op`, which check() accepted. `op` is the only operation (with
  /// its func.return) of a function in a scratch module: replace it, using
  /// patterns, passes on the scratch module, or `native`. Symbols the
  /// lowering adds to the scratch module (declarations of runtime functions,
  /// helper functions) are moved into the real module. Returning failure,
  /// leaving an op named like `op` behind, or producing IR that does not
  /// verify sends the op to the native backend instead.
  virtual LogicalResult lower(Operation *op, const NativeLowering &native,
                              const TargetInfo &target) const = 0;

private:
  std::string name;
  std::vector<std::string> opNames;
};

/// Adds `path` (absolute) to the link libraries of `op`'s module
/// (kLinkLibrariesAttrName, te/Target/Target.h).
void addLinkLibrary(Operation *op, llvm::StringRef path);

/// What a plugin registers into during its register callback. Everything
/// added here belongs to that plugin and is dropped if the plugin fails.
class Registrar {
public:
  virtual ~Registrar();
  /// The C++ view of the handle passed to te_plugin_register_fn.
  static Registrar &from(te_plugin_registrar *registrar);

  /// Adds a lowering provider. Fails (returns false, with a reason for the
  /// plugin's error message in `error`) if the name is empty, already used
  /// by this plugin, or the op list is empty or names an unknown op.
  virtual bool addProvider(std::unique_ptr<LoweringProvider> provider,
                           std::string *error = nullptr) = 0;

  /// Dialects the plugin's lowerings create; they are registered in every
  /// context the host lowers in while the plugin is active.
  virtual void addDialects(std::function<void(DialectRegistry &)> add) = 0;

  /// Since plugin ABI 1.1 (appended, so 1.0 plugins keep their vtable
  /// layout). Adds a target (te/Target/Target.h): how te modules become kernel
  /// modules for the runtime device target->getDeviceName(). Fails (returns
  /// false, with a reason in `error`) if a name is malformed, the name or the
  /// device is a built-in target's, or this plugin already has a target of that
  /// name or for that device. A target of a lower-priority plugin for a device
  /// that another plugin serves too stays registered, unused until that
  /// plugin fails (with its warning).
  virtual bool addTarget(std::unique_ptr<TargetBackend> target,
                         std::string *error = nullptr) = 0;
};

} // namespace mlir::te::plugin

/// Defines te_plugin_query for a plugin named NAME (a string literal) at
/// VERSION, with the given register and (possibly null) activate callbacks,
/// recording the LLVM and te-mlir versions this translation unit is compiled
/// against.
#define TE_PLUGIN_DEFINE(NAME, VERSION, FEATURES, REGISTER, ACTIVATE)          \
  extern "C" TE_PLUGIN_EXPORT const te_plugin_info *te_plugin_query(           \
      uint32_t, uint32_t) {                                                    \
    static const te_plugin_info info = {sizeof(te_plugin_info),                \
                                        TE_PLUGIN_ABI_MAJOR,                   \
                                        TE_PLUGIN_ABI_MINOR,                   \
                                        NAME,                                  \
                                        VERSION,                               \
                                        LLVM_VERSION_STRING,                   \
                                        TE_MLIR_BUILD_ID,                      \
                                        FEATURES,                              \
                                        REGISTER,                              \
                                        ACTIVATE};                             \
    return &info;                                                              \
  }

#endif // TE_PLUGIN_PLUGIN_H
