//===- PluginABI.h - The C handshake between te-mlir and a plugin -*- C -*-===//
//
// A te-mlir plugin is a shared library that exports one C function,
// te_plugin_query. The host calls it with its own ABI version; the plugin
// returns a static te_plugin_info describing itself: who it is, what it was
// built against, and the callbacks through which it registers what it
// provides. Everything version-sensitive crosses this boundary as plain C so
// that a mismatch is detected and refused with a message naming both sides,
// instead of crashing inside C++ code built against another library.
//
// docs/PluginAPI.md is the full contract (lifetimes, threading, versioning
// policy, failure semantics, environment variables).
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_PLUGINABI_H
#define TE_PLUGIN_PLUGINABI_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TE_PLUGIN_EXPORT __declspec(dllexport)
#else
#define TE_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// The plugin ABI this header describes. The host accepts a plugin whose
/// abi_major equals its own and whose abi_minor is at most its own: minors
/// only append fields to te_plugin_info (found through struct_size) and add
/// registrar functions, so a plugin built for 1.0 runs on a 1.3 host but
/// not the other way round. History: 1.0 the handshake, lowering
/// providers and dialects; 1.1 added Registrar::addTarget (Target.h); 1.2
/// appended TargetBackend's getNativeLowering, getPipelineIdentity,
/// getDependentDialects, buildReferencePipeline, getArtifactNames and
/// emitArtifact (te/Target/Target.h), which the host calls only on targets
/// of plugins built for 1.2 or later; 1.3 appended NativeLowering's
/// getStrategies, likewise.
#define TE_PLUGIN_ABI_MAJOR 1
#define TE_PLUGIN_ABI_MINOR 3

/// The name of the one symbol a plugin exports.
#define TE_PLUGIN_QUERY_SYMBOL "te_plugin_query"

/// Feature bits of te_plugin_info::features: what the plugin registers.
/// Informational (shown by --te-print-plugin-info); the registrations are
/// what counts.
#define TE_PLUGIN_FEATURE_LOWERING (UINT64_C(1) << 0)
#define TE_PLUGIN_FEATURE_TARGET (UINT64_C(1) << 1)
#define TE_PLUGIN_FEATURE_DEVICE (UINT64_C(1) << 2)

/// Returned by the plugin's callbacks.
typedef enum te_plugin_status {
  TE_PLUGIN_OK = 0,
  TE_PLUGIN_ERROR = 1,
} te_plugin_status;

/// The host's registration object for one plugin. Opaque in C; C++ plugins
/// use te::plugin::Registrar (te/Plugin/Plugin.h) through
/// te::plugin::Registrar::from(registrar).
typedef struct te_plugin_registrar te_plugin_registrar;

/// Registers the plugin's lowering providers (and, in later ABI minors,
/// targets and devices) with `registrar`. Called once, when the plugin
/// becomes available. On failure it writes a NUL-terminated reason of at
/// most `error_size` bytes to `error` and returns TE_PLUGIN_ERROR; the host
/// then drops everything this call registered. C++ exceptions that escape
/// are caught by the host and treated the same way.
typedef te_plugin_status (*te_plugin_register_fn)(
    te_plugin_registrar *registrar, char *error, size_t error_size);

/// Prepares the plugin's vendor toolchain or libraries. Optional (NULL: no
/// preparation). Called at most once per process, the first time one of the
/// plugin's providers accepts an op, never at load time, so an installed
/// plugin costs nothing until it is used. Same error convention as
/// te_plugin_register_fn; a failure deactivates the plugin.
typedef te_plugin_status (*te_plugin_activate_fn)(char *error,
                                                  size_t error_size);

/// What te_plugin_query returns. The struct and every string it points to
/// must stay valid until the library is unloaded (a static object).
typedef struct te_plugin_info {
  /// sizeof(te_plugin_info) as the plugin was compiled. The host reads only
  /// the fields that fit in it.
  size_t struct_size;
  /// TE_PLUGIN_ABI_MAJOR / TE_PLUGIN_ABI_MINOR as the plugin was compiled.
  uint32_t abi_major;
  uint32_t abi_minor;
  /// The plugin's name: 1 to 63 characters from [A-Za-z0-9_.-]. Used in
  /// NVTE_PLUGIN_POLICY and NVTE_PLUGIN_DENY, in warnings, in --explain
  /// tables and in the kernel cache key.
  const char *name;
  /// The plugin's own version, free form (e.g. "1.2.0"). Part of the kernel
  /// cache key: change it whenever the generated code changes.
  const char *version;
  /// LLVM_VERSION_STRING of the LLVM/MLIR the plugin was built against
  /// (te/Plugin/Plugin.h fills it in). Must equal the host's exactly.
  const char *llvm_version;
  /// te_compiler_build_id() of the te-mlir it was built against (recorded
  /// and shown; a different build of the same ABI is accepted).
  const char *te_build_id;
  /// TE_PLUGIN_FEATURE_* bits.
  uint64_t features;
  /// Required.
  te_plugin_register_fn register_plugin;
  /// Optional.
  te_plugin_activate_fn activate;
} te_plugin_info;

/// The one exported symbol. `host_abi_major` / `host_abi_minor` are the
/// host's TE_PLUGIN_ABI_MAJOR / MINOR; a plugin may return NULL to refuse a
/// host it cannot work with (the host reports that). Must not register
/// anything or initialise vendor libraries: that is what register_plugin and
/// activate are for.
typedef const te_plugin_info *(*te_plugin_query_fn)(uint32_t host_abi_major,
                                                    uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif // TE_PLUGIN_PLUGINABI_H
