//===- Plugin.h - Runtime plugins: devices from shared libraries --*- C -*-===//
//
// The runtime half of a te-mlir plugin: a shared library, free of MLIR,
// that exports te_runtime_plugin_query and contributes devices (te_device_ops
// tables, see Device.h). Deployments that only run kernels load it with
// te_runtime_load_plugin; the compiler half of a plugin (te/Plugin/) is not
// needed for that. docs/PluginAPI.md describes both halves.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_PLUGIN_H
#define TE_RUNTIME_PLUGIN_H

#include "te/Runtime/Device.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The runtime plugin ABI. Same policy as the compiler plugin ABI: equal
/// major, a minor not newer than the runtime's.
#define TE_RUNTIME_PLUGIN_ABI_MAJOR 1
#define TE_RUNTIME_PLUGIN_ABI_MINOR 0

/// The one symbol a runtime plugin exports.
#define TE_RUNTIME_PLUGIN_QUERY_SYMBOL "te_runtime_plugin_query"

/// What te_runtime_plugin_query returns: static storage, valid for the life
/// of the library.
typedef struct te_runtime_plugin_info {
  /// sizeof(te_runtime_plugin_info) as the plugin was compiled.
  size_t struct_size;
  /// TE_RUNTIME_PLUGIN_ABI_MAJOR / MINOR as compiled.
  uint32_t abi_major;
  uint32_t abi_minor;
  /// The plugin's name and version (as in te_plugin_info).
  const char *name;
  const char *version;
  /// `device_count` device tables, each with its context (device_contexts
  /// may be NULL: every context NULL). Registered all together or not at
  /// all.
  int device_count;
  const te_device_ops *const *devices;
  void *const *device_contexts;
} te_runtime_plugin_info;

typedef const te_runtime_plugin_info *(*te_runtime_plugin_query_fn)(
    uint32_t runtime_abi_major, uint32_t runtime_abi_minor);

/// Loads the runtime plugin at `path` and registers its devices. Loading the
/// same library again is a no-op returning TE_OK.
/// Errors (nothing is registered on any of them): TE_ERROR_INVALID_ARGUMENT
/// for a NULL path; TE_ERROR_LOAD_FAILED if the library cannot be loaded,
/// does not export te_runtime_plugin_query, refuses this runtime, or has
/// another ABI major or a newer minor (the message names both versions);
/// TE_ERROR_INVALID_ARGUMENT if a device table is invalid or its name is
/// taken (as te_device_register). Thread safe.
TE_RUNTIME_EXPORT te_status te_runtime_load_plugin(const char *path);

#ifdef __cplusplus
}
#endif

#endif // TE_RUNTIME_PLUGIN_H
