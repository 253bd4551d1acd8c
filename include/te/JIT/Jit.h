/*===- Jit.h - Compile, cache and load te programs (C API) ----------------===*\
|*                                                                            *|
|* What a framework embeds: hand te-mlir a program (MLIR text) and get a      *|
|* loaded kernel module back. Modules are cached in memory (per te_jit, per   *|
|* device) and on disk (the kernel cache, see README: TE_CACHE_DIR,           *|
|* TE_CACHE_DISABLE, TE_CACHE_MAX_BYTES). A disk hit loads the stored library *|
|* without MLIR or LLVM; a miss loads te-mlir's compiler library.             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_JIT_JIT_H
#define TE_JIT_JIT_H

#include "te/Runtime/Device.h"
#include "te/Runtime/Module.h"
#include "te/Runtime/Status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A compile-and-cache context. Thread safe: any number of threads may call
/// te_jit_load on one te_jit at once.
typedef struct te_jit te_jit;

/// Where te_jit_load found the module.
typedef enum te_cache_outcome {
  TE_CACHE_HIT_MEMORY = 0,
  TE_CACHE_HIT_DISK = 1,
  TE_CACHE_MISS = 2
} te_cache_outcome;

/// Creates a JIT context. `compiler_library` is the path of
/// libTECompiler.so, loaded on the first cache miss; NULL means
/// $TE_COMPILER_LIBRARY. Cache warnings (a corrupted entry, an unwritable
/// directory) go to stderr, once each.
TE_RUNTIME_EXPORT te_status te_jit_create(const char *compiler_library,
                                          te_jit **out);

/// Returns a module for the program `source` (`size` bytes of MLIR text;
/// `source_name` names it in diagnostics) loaded on `device`, compiling it
/// on a miss for the target registered for te_device_name(device) ("cpu"
/// is built in; a plugin's target serves its device, see
/// docs/PluginAPI.md). The caller owns one reference to *module
/// (te_module_release). `outcome` (may be NULL) says where it came from;
/// `compile_ms` (may be NULL) receives the compile time (0 on a hit). Errors:
/// TE_ERROR_INVALID_ARGUMENT for NULL arguments, TE_ERROR_COMPILE_FAILED with
/// the compiler's diagnostics, TE_ERROR_LOAD_FAILED when the compiler cannot be
/// loaded or the library cannot; te_jit_last_error_message() has the text.
TE_RUNTIME_EXPORT te_status te_jit_load(te_jit *jit, te_device *device,
                                        const char *source, size_t size,
                                        const char *source_name,
                                        te_module **module,
                                        te_cache_outcome *outcome,
                                        double *compile_ms);

/// What this thread's last successful te_jit_load did, as text (static
/// thread-local storage, valid until this thread's next te_jit_load; "" if
/// none): one line per fact, fields separated by tabs,
///   outcome        miss | hit (disk) | hit (memory)
///   source-key     <the cache key of the source text>
///   canonical-key  <the key of the canonical IR>  alias | computed
///   stage          <name>  <milliseconds>
/// The keys are absent on a memory hit; canonical-key says whether the key
/// came from the source key's alias or from canonicalizing the program.
/// Stages are what was computed, in order: `canonicalize` (the canonical
/// key), then the compiler's (te_compiler_compile_with_report in
/// te/JIT/Compiler.h: mlir-passes, llvm-translate, llvm-optimize,
/// llvm-codegen, link); a hit of the source key computes nothing, and a
/// hit of the canonical key only `canonicalize`. te-run -v prints it.
TE_RUNTIME_EXPORT const char *te_jit_last_compile_report(void);

/// Loads te-mlir plugins (`specs`: comma-separated paths or names, searched
/// like NVTE_PLUGIN's) into the compiler, after those of NVTE_PLUGIN, for
/// every later compile of this process; list order is priority. Loads the
/// compiler. The plugins join the kernel cache keys, and modules loaded
/// before are not reused from memory afterwards. A plugin that fails is
/// reported on stderr and skipped; with NVTE_PLUGIN_STRICT=1 the first
/// failure makes this return TE_ERROR_LOAD_FAILED with its message. See
/// docs/PluginAPI.md.
TE_RUNTIME_EXPORT te_status te_jit_load_plugins(te_jit *jit, const char *specs);

/// Which backend lowers each te op of `source` when it is compiled for the
/// device named `device_name` ("cpu", or a plugin's device): sets `*table`
/// to one line per op, "<op>\t<file:line:col>\t<backend>\t<notes>" (see
/// te_compiler_explain in te/JIT/Compiler.h). Loads the compiler. Free
/// the table with te_jit_free. Errors: TE_ERROR_INVALID_ARGUMENT for NULL
/// arguments, TE_ERROR_COMPILE_FAILED with the diagnostics,
/// TE_ERROR_LOAD_FAILED when the compiler cannot be loaded.
TE_RUNTIME_EXPORT te_status te_jit_explain(te_jit *jit, const char *device_name,
                                           const char *source, size_t size,
                                           const char *source_name,
                                           char **table);

/// What a context's caches hold.
typedef struct te_jit_cache_info {
  /// sizeof(te_jit_cache_info) as the caller was compiled.
  size_t struct_size;
  /// Modules in the context's memory cache.
  uint64_t memory_modules;
  /// Whether the disk cache is in use (not TE_CACHE_DISABLE=1, and its
  /// directory is usable), its directory (NUL-terminated; truncated to
  /// fit), its entries (compiled libraries), their bytes, and its bound
  /// (TE_CACHE_MAX_BYTES; 0: none).
  int disk_enabled;
  char disk_directory[4096];
  uint64_t disk_entries;
  uint64_t disk_bytes;
  uint64_t disk_max_bytes;
} te_jit_cache_info;

/// Fills *info (whose struct_size the caller sets). Errors:
/// TE_ERROR_INVALID_ARGUMENT for NULL or a struct_size other than this
/// header's.
TE_RUNTIME_EXPORT te_status te_jit_get_cache_info(te_jit *jit,
                                                  te_jit_cache_info *info);

/// Empties the context's memory cache (modules stay alive while callers
/// hold references) and, when `disk` is nonzero, removes every entry and
/// alias of the disk cache directory (its *.so and *.ref files, nothing
/// else; other processes using it compile again). Errors:
/// TE_ERROR_INVALID_ARGUMENT for NULL.
TE_RUNTIME_EXPORT te_status te_jit_clear_cache(te_jit *jit, int disk);

/// The plugins listed (NVTE_PLUGIN, te_jit_load_plugins) and their states:
/// sets `*table` to one line per plugin, in priority order, "<spec>\t
/// <source>\t<state>\t<name>\t<version>\t<library>\t<failure>\t<providers>",
/// state being available, active (started for a compile) or failed,
/// failure "<step>: <error>" for a failed one, providers "<provider>: <op>
/// <op>..." separated by "; " (te_compiler_plugin_states). Loads the
/// compiler. Free the table with te_jit_free. Errors:
/// TE_ERROR_INVALID_ARGUMENT for NULL; TE_ERROR_LOAD_FAILED when the
/// compiler cannot be loaded, or under NVTE_PLUGIN_STRICT=1 when a plugin
/// of NVTE_PLUGIN fails.
TE_RUNTIME_EXPORT te_status te_jit_plugin_states(te_jit *jit, char **table);

/// Frees a string returned by te_jit_explain or te_jit_plugin_states; NULL
/// is ignored.
TE_RUNTIME_EXPORT void te_jit_free(char *text);

/// The message of this thread's last failing te_jit_* call ("" if none).
TE_RUNTIME_EXPORT const char *te_jit_last_error_message(void);

/// Releases the context and its in-memory cache (modules stay alive while
/// callers hold references). NULL is ignored.
TE_RUNTIME_EXPORT void te_jit_release(te_jit *jit);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* TE_JIT_JIT_H */
