//===- RuntimePlugin.cpp - Loading runtime plugins ------------------------===//
//
// Handshake first, then all of the plugin's devices in one registration, so
// that a plugin is either fully present or, with an error naming it, not at
// all. A library whose devices are registered stays loaded (the registry
// holds pointers into it); one that failed is closed again.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/Plugin.h"
#include "te/Support/FileTrust.h"

#include "DeviceImpl.h"
#include "Error.h"

#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace te::runtime;

namespace {

/// The plugins loaded so far: handles (dlopen returns the same handle for
/// the same library) and the files they came from.
std::mutex loadedMutex;
struct LoadedPlugin {
  void *handle;
  dev_t device;
  ino_t inode;
  te::support::LoadedLibrary library;
};
std::vector<LoadedPlugin> &loadedPlugins() {
  static auto *loaded = new std::vector<LoadedPlugin>();
  return *loaded;
}

} // namespace

extern "C" te_status te_runtime_load_plugin(const char *path) {
  const char *fn = "te_runtime_load_plugin";
  if (!path)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: path must not be NULL", fn);
  std::lock_guard<std::mutex> lock(loadedMutex);
  te::support::LoadedLibrary library;
  dev_t device = 0;
  ino_t inode = 0;
  if (std::strchr(path, '/')) {
    // A plugin is code run with the caller's rights: the file is opened
    // once, refused if someone else could have written it or its directory
    // (or if it is a FIFO or a device), and the file checked is what gets
    // loaded (te/Support/FileTrust.h).
    te::support::FileProblem problem;
    std::string why;
    te::support::CheckedFile file = te::support::openChecked(
        path, te::support::FileRules::library(), problem, why);
    if (!file) {
      if (problem == te::support::FileProblem::Untrusted)
        return fail(TE_ERROR_LOAD_FAILED,
                    "%s: refusing to load %.200s: it %s; a plugin runs with "
                    "your rights, so only you or root may be able to write "
                    "it",
                    fn, path, why.c_str());
      if (problem == te::support::FileProblem::Missing ||
          problem == te::support::FileProblem::CannotOpen)
        return fail(TE_ERROR_LOAD_FAILED, "%s: cannot load %.200s: it %s", fn,
                    path, why.c_str());
      return fail(TE_ERROR_LOAD_FAILED, "%s: refusing to load %.200s: it %s",
                  fn, path, why.c_str());
    }
    device = file.status().st_dev;
    inode = file.status().st_ino;
    for (const LoadedPlugin &plugin : loadedPlugins())
      if (plugin.library.fd >= 0 && plugin.device == device &&
          plugin.inode == inode)
        return TE_OK; // this very file is loaded already
    if (!te::support::loadLibrary(std::move(file), path,
                                  te::support::FileRules::library(),
                                  RTLD_NOW | RTLD_LOCAL, library, problem, why))
      return fail(TE_ERROR_LOAD_FAILED,
                  problem == te::support::FileProblem::LoadFailed
                      ? "%s: cannot load %.200s: %.300s"
                      : "%s: refusing to load %.200s: it %.300s",
                  fn, path, why.c_str());
  } else {
    // A name without '/' is a system library, found by the dynamic loader
    // in the system's library directories, as the loader finds any.
    dlerror();
    library.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library.handle) {
      const char *reason = dlerror();
      return fail(TE_ERROR_LOAD_FAILED, "%s: cannot load %.200s: %.300s", fn,
                  path, reason ? reason : "dlopen failed");
    }
  }
  void *handle = library.handle;
  for (const LoadedPlugin &plugin : loadedPlugins())
    if (plugin.handle == handle) {
      te::support::unloadLibrary(library); // drop the extra reference
      return TE_OK;
    }
  // Every refusal closes the library and returns fail()'s status.
  auto refuse = [&](te_status status) {
    te::support::unloadLibrary(library);
    return status;
  };
  auto query = reinterpret_cast<te_runtime_plugin_query_fn>(
      dlsym(handle, TE_RUNTIME_PLUGIN_QUERY_SYMBOL));
  if (!query)
    return refuse(
        fail(TE_ERROR_LOAD_FAILED,
             "%s: %.200s does not export " TE_RUNTIME_PLUGIN_QUERY_SYMBOL
             " (is it a te-mlir runtime plugin?)",
             fn, path));
  const te_runtime_plugin_info *info =
      query(TE_RUNTIME_PLUGIN_ABI_MAJOR, TE_RUNTIME_PLUGIN_ABI_MINOR);
  if (!info)
    return refuse(fail(TE_ERROR_LOAD_FAILED,
                       "%s: %.200s refuses this runtime (runtime plugin ABI "
                       "%d.%d)",
                       fn, path, TE_RUNTIME_PLUGIN_ABI_MAJOR,
                       TE_RUNTIME_PLUGIN_ABI_MINOR));
  if (info->struct_size < sizeof(te_runtime_plugin_info))
    return refuse(fail(TE_ERROR_LOAD_FAILED,
                       "%s: %.200s: te_runtime_plugin_info is %zu bytes, "
                       "smaller than runtime plugin ABI 1.0's %zu",
                       fn, path, info->struct_size,
                       sizeof(te_runtime_plugin_info)));
  const char *name = info->name ? info->name : "?";
  if (info->abi_major != TE_RUNTIME_PLUGIN_ABI_MAJOR ||
      info->abi_minor > TE_RUNTIME_PLUGIN_ABI_MINOR)
    return refuse(
        fail(TE_ERROR_LOAD_FAILED,
             "%s: plugin '%.64s' (%.200s) is built for runtime plugin ABI "
             "%u.%u, this runtime implements %d.%d; rebuild the plugin "
             "against this runtime",
             fn, name, path, info->abi_major, info->abi_minor,
             TE_RUNTIME_PLUGIN_ABI_MAJOR, TE_RUNTIME_PLUGIN_ABI_MINOR));
  if (info->device_count < 0 || (info->device_count > 0 && !info->devices))
    return refuse(fail(TE_ERROR_INVALID_ARGUMENT,
                       "%s: plugin '%.64s' (%.200s) lists %d devices without "
                       "their tables",
                       fn, name, path, info->device_count));
  for (int i = 0; i < info->device_count; ++i)
    if (!info->devices[i])
      return refuse(fail(TE_ERROR_INVALID_ARGUMENT,
                         "%s: plugin '%.64s' (%.200s): device table %d is "
                         "NULL",
                         fn, name, path, i));
  te_status status = registerDeviceGroup(info->devices, info->device_contexts,
                                         info->device_count, fn);
  if (status != TE_OK) {
    // Keep the registry's message, with the plugin named in front.
    std::string message = te_last_error_message();
    return refuse(fail(status, "plugin '%.64s' (%.200s): %.600s", name, path,
                       message.c_str()));
  }
  loadedPlugins().push_back({handle, device, inode, std::move(library)});
  return TE_OK;
}
