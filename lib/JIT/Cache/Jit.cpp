//===- Jit.cpp - Compile, cache and load te programs (C API) --------------===//

#include "te/JIT/Jit.h"

#include "te/JIT/KernelProvider.h"
#include "te/JIT/Sha256.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

using namespace te;

namespace {

thread_local std::string lastError;
thread_local std::string lastCompileReport;

te_status failJit(te_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// `text` in memory the caller frees with te_jit_free.
te_status copyOut(const char *function, const std::string &text, char **out) {
  *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (!*out)
    return failJit(TE_ERROR_OUT_OF_MEMORY,
                   std::string(function) + ": out of memory");
  std::memcpy(*out, text.c_str(), text.size() + 1);
  return TE_OK;
}

/// A provider failure as a status, by its kind (cache::ProviderFailure):
/// the compiler missing is a load failure; everything else failed the
/// compile.
te_status compilerStatus(int failure) {
  return failure == int(cache::ProviderFailure::CompilerUnavailable)
             ? TE_ERROR_LOAD_FAILED
             : TE_ERROR_COMPILE_FAILED;
}

/// Runs `body`, turning exceptions into statuses: none may cross the C API.
template <typename Body> te_status guarded(const char *function, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return failJit(TE_ERROR_OUT_OF_MEMORY,
                   std::string(function) + ": out of memory");
  } catch (...) {
    return failJit(TE_ERROR_INTERNAL,
                   std::string(function) +
                       ": unexpected C++ exception; this is a bug");
  }
}

} // namespace

struct te_jit {
  explicit te_jit(std::string compilerLibrary)
      : provider(std::move(compilerLibrary), [](const std::string &warning) {
          std::fprintf(stderr, "%s\n", warning.c_str());
        }) {}

  ~te_jit() { releaseModules(std::move(modules)); }

  /// Drops the references of a module map (unloading what nobody else
  /// holds).
  template <typename Map> static void releaseModules(Map modules) {
    for (auto &entry : modules)
      te_module_release(entry.second);
  }

  /// One compile at a time per context: the compiler library and the
  /// provider's scratch state are shared. Cache hits in memory do not wait
  /// for it.
  std::mutex compileMutex;
  std::mutex modulesMutex;
  cache::KernelProvider provider;
  /// (device, sha256 of the source, its name, number of plugins loaded
  /// through the API) -> a loaded module (one reference).
  std::map<std::tuple<te_device *, std::string, std::string, size_t>,
           te_module *>
      modules;
};

te_status te_jit_create(const char *compiler_library, te_jit **out) {
  if (!out)
    return failJit(TE_ERROR_INVALID_ARGUMENT, "te_jit_create: out is NULL");
  std::string library;
  if (compiler_library)
    library = compiler_library;
  else if (const char *env = std::getenv("TE_COMPILER_LIBRARY"))
    library = env;
  if (library.empty())
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_create: no compiler library given; pass the path "
                   "of libTECompiler.so or set TE_COMPILER_LIBRARY");
  try {
    *out = new te_jit(library);
  } catch (...) {
    return failJit(TE_ERROR_OUT_OF_MEMORY, "te_jit_create: out of memory");
  }
  return TE_OK;
}

te_status te_jit_load(te_jit *jit, te_device *device, const char *source,
                      size_t size, const char *source_name, te_module **module,
                      te_cache_outcome *outcome, double *compile_ms) {
  if (!jit || !device || !source || !module)
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_load: jit, device, source and module must not be "
                   "NULL");
  return guarded("te_jit_load", [&]() -> te_status {
    std::string text(source, size);
    std::string name = source_name ? source_name : "<te program>";
    // Plugins loaded since change what a compile produces; the name is in
    // the module's source locations.
    auto key = std::make_tuple(device, cache::sha256Hex(text.data(), size),
                               name, cache::getLoadedPluginCount());
    auto memoryHit = [&] {
      std::lock_guard<std::mutex> lock(jit->modulesMutex);
      auto it = jit->modules.find(key);
      if (it == jit->modules.end())
        return false;
      te_module_retain(it->second);
      *module = it->second;
      if (outcome)
        *outcome = TE_CACHE_HIT_MEMORY;
      if (compile_ms)
        *compile_ms = 0;
      lastCompileReport = "outcome\thit (memory)\n";
      return true;
    };
    if (memoryHit())
      return TE_OK;
    std::lock_guard<std::mutex> compileLock(jit->compileMutex);
    // Another thread may have loaded it while this one waited.
    if (memoryHit())
      return TE_OK;
    support::Expected<cache::ProvidedKernel> provided = jit->provider.provide(
        text, name, /*reference=*/false, te_device_name(device));
    if (!provided)
      return failJit(compilerStatus(provided.code()), provided.message());
    // The bytes the provider compiled or verified, not the file again: a
    // file renamed over the entry in between is never loaded.
    te_module *loaded = nullptr;
    if (te_status status = te_module_load_image(
            device, provided->library.data(), provided->library.size(),
            provided->libraryPath.c_str(), &loaded);
        status != TE_OK)
      return failJit(status, te_last_error_message());
    if (te_status status = te_module_set_source_locations(
            loaded, provided->sourceLocations.c_str())) {
      te_module_release(loaded);
      return failJit(status, te_last_error_message());
    }
    {
      // The caller's reference first: te_jit_clear_cache may drop the
      // cache's as soon as the lock is released.
      std::lock_guard<std::mutex> lock(jit->modulesMutex);
      te_module_retain(loaded);
      jit->modules[key] = loaded;
    }
    *module = loaded;
    if (outcome)
      *outcome = provided->outcome == cache::CacheOutcome::DiskHit
                     ? TE_CACHE_HIT_DISK
                     : TE_CACHE_MISS;
    if (compile_ms)
      *compile_ms = provided->compileMilliseconds;
    lastCompileReport = cache::formatCompileReport(
        *provided, provided->outcome == cache::CacheOutcome::DiskHit
                       ? "hit (disk)"
                       : "miss");
    return TE_OK;
  });
}

const char *te_jit_last_error_message(void) { return lastError.c_str(); }

const char *te_jit_last_compile_report(void) {
  return lastCompileReport.c_str();
}

void te_jit_release(te_jit *jit) { delete jit; }

te_status te_jit_load_plugins(te_jit *jit, const char *specs) {
  if (!jit || !specs)
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_load_plugins: jit and specs must not be NULL");
  return guarded("te_jit_load_plugins", [&]() -> te_status {
    std::lock_guard<std::mutex> compileLock(jit->compileMutex);
    support::Status status = jit->provider.loadPlugins(specs);
    if (!status.ok())
      return failJit(TE_ERROR_LOAD_FAILED, status.message());
    return TE_OK;
  });
}

te_status te_jit_explain(te_jit *jit, const char *device_name,
                         const char *source, size_t size,
                         const char *source_name, char **table) {
  if (!jit || !device_name || !source || !table)
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_explain: jit, device_name, source and table must "
                   "not be NULL");
  *table = nullptr;
  return guarded("te_jit_explain", [&]() -> te_status {
    std::lock_guard<std::mutex> compileLock(jit->compileMutex);
    support::Expected<std::string> explained = jit->provider.explainText(
        std::string(source, size), source_name ? source_name : "<te program>",
        device_name);
    if (!explained)
      return failJit(compilerStatus(explained.code()), explained.message());
    return copyOut("te_jit_explain", *explained, table);
  });
}

te_status te_jit_plugin_states(te_jit *jit, char **table) {
  if (!jit || !table)
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_plugin_states: jit and table must not be NULL");
  *table = nullptr;
  return guarded("te_jit_plugin_states", [&]() -> te_status {
    std::lock_guard<std::mutex> compileLock(jit->compileMutex);
    support::Expected<std::string> states = jit->provider.pluginStates();
    if (!states)
      return failJit(TE_ERROR_LOAD_FAILED, states.message());
    return copyOut("te_jit_plugin_states", *states, table);
  });
}

te_status te_jit_get_cache_info(te_jit *jit, te_jit_cache_info *info) {
  if (!jit || !info)
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_get_cache_info: jit and info must not be NULL");
  if (info->struct_size != sizeof(te_jit_cache_info))
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_get_cache_info: info->struct_size is " +
                       std::to_string(info->struct_size) +
                       ", not sizeof(te_jit_cache_info) (" +
                       std::to_string(sizeof(te_jit_cache_info)) +
                       "); set it, and build against this te-mlir's headers");
  return guarded("te_jit_get_cache_info", [&]() -> te_status {
    *info = te_jit_cache_info{};
    info->struct_size = sizeof(te_jit_cache_info);
    {
      std::lock_guard<std::mutex> lock(jit->modulesMutex);
      info->memory_modules = jit->modules.size();
    }
    std::lock_guard<std::mutex> lock(jit->compileMutex);
    cache::DiskCache &disk = jit->provider.getDiskCache();
    const cache::CacheConfig &config = disk.getConfig();
    info->disk_enabled = disk.isUsable();
    std::snprintf(info->disk_directory, sizeof(info->disk_directory), "%s",
                  config.directory.c_str());
    cache::DiskCache::Usage usage = disk.getUsage();
    info->disk_entries = usage.entries;
    info->disk_bytes = usage.bytes;
    info->disk_max_bytes = config.maxBytes;
    return TE_OK;
  });
}

te_status te_jit_clear_cache(te_jit *jit, int disk) {
  if (!jit)
    return failJit(TE_ERROR_INVALID_ARGUMENT,
                   "te_jit_clear_cache: jit must not be NULL");
  return guarded("te_jit_clear_cache", [&]() -> te_status {
    decltype(jit->modules) dropped;
    {
      std::lock_guard<std::mutex> lock(jit->modulesMutex);
      dropped.swap(jit->modules);
    }
    // Released outside the lock: an unload must not hold up cache hits.
    te_jit::releaseModules(std::move(dropped));
    if (disk) {
      std::lock_guard<std::mutex> lock(jit->compileMutex);
      jit->provider.getDiskCache().clear();
    }
    return TE_OK;
  });
}

void te_jit_free(char *text) { std::free(text); }
