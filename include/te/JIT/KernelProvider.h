//===- KernelProvider.h - Compile-or-load kernel libraries ------*- C++ -*-===//
//
// What te-run and embedders use to turn a te program into a loadable kernel
// library: look it up in the disk cache and, on a miss, load te-mlir's
// compiler (libTECompiler.so, through its C API) to build and publish it. A
// hit therefore loads neither MLIR nor LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef TE_JIT_KERNELPROVIDER_H
#define TE_JIT_KERNELPROVIDER_H

#include "te/JIT/KernelCache.h"
#include "te/Support/Expected.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace te::cache {

enum class CacheOutcome { DiskHit, Miss };

/// What kind of failure a KernelProvider's error is (support::Status::code),
/// so that callers map failures to their statuses without reading messages.
enum class ProviderFailure {
  /// The compiler library cannot be loaded, or is another build's.
  CompilerUnavailable = 1,
  /// The compiler refused the program or failed to compile it.
  Compile = 2,
  /// Plugins failed to load under NVTE_PLUGIN_STRICT=1.
  Plugins = 3,
  /// A file or directory of the compile (scratch space, the compiled
  /// library) could not be made or read.
  Files = 4,
};

/// A stage of a compile and how long it took.
struct CompileStage {
  std::string name;
  double milliseconds = 0;
};

struct ProvidedKernel {
  /// The kernel library's bytes, as compiled or as read and verified from
  /// the cache: load them with te_module_load_image, so that what runs is
  /// exactly what was checked (no file is reopened by name).
  std::string library;
  /// Where the library came from, for messages and te_module_load_image's
  /// display name: the cache entry, or "<source name> (compiled, not
  /// cached)".
  std::string libraryPath;
  CacheOutcome outcome = CacheOutcome::Miss;
  /// Time spent compiling (0 on a hit).
  double compileMilliseconds = 0;
  /// The source locations of the program's te ops, one per line, for
  /// te_module_set_source_locations: kernels are shared by every program
  /// with the same meaning, so their messages name ops by number.
  std::string sourceLocations;
  /// The cache keys: of the source text, and of the canonical IR ("" when
  /// not known: a miss of the source key before the compiler could say).
  std::string sourceKey, canonicalKey;
  /// True when the canonical key came from the source key's alias rather
  /// than from canonicalizing the program.
  bool canonicalKeyFromAlias = false;
  /// What was computed, in order: `canonicalize` (the canonical key), then
  /// the compiler's stages (te_compiler_compile_with_report). Empty on a
  /// hit of the source key.
  std::vector<CompileStage> stages;
};

/// `kernel` as te_jit_last_compile_report describes a load (see
/// te/JIT/Jit.h), `outcome` being "miss", "hit (disk)" or "hit
/// (memory)".
std::string formatCompileReport(const ProvidedKernel &kernel,
                                const std::string &outcome);

/// Parses te_compiler_compile_with_report's report ("<stage>\t<ms>" lines).
std::vector<CompileStage> parseCompileStages(const std::string &report);

/// The plugins loaded through KernelProvider::loadPlugins so far in this
/// process, in order.
std::vector<std::string> getLoadedPlugins();

/// getLoadedPlugins().size(), without the copy.
size_t getLoadedPluginCount();

/// A description of this machine's CPU for cache keys: architecture,
/// vendor, model and feature flags. Reads /proc/cpuinfo; no LLVM.
std::string describeHostCPU();

/// What else decides the code a compile for `device` makes, for the source
/// key (the canonical key has it from the target itself): every setting a
/// target's code generation reads (te/ABI/Environment.h: the processor or
/// GPU arch, the toolkit, the strategy policies), and for a device other
/// than the CPU the arch the runtime reports for it (te_device_target_arch,
/// asked once per device and process), which is what a compile without
/// TE_CUDA_ARCH targets and what the compiler is told.
std::string describeCodeGeneration(const std::string &device);

class KernelProvider {
public:
  /// `compilerLibrary`: path of libTECompiler.so; `warn` receives cache
  /// warnings.
  KernelProvider(std::string compilerLibrary, WarningSink warn);
  ~KernelProvider();

  /// A kernel library for the program `source` (MLIR text named
  /// `sourceName` in diagnostics). Compile errors come back as the
  /// compiler's diagnostics. With `reference`, the library is built by the
  /// reference pipeline (te_compiler_compile_reference: the dense reference
  /// decomposition of differential checks), cached under its own keys.
  /// `device` is the runtime device the kernel module is for: the compiler
  /// uses the target registered for it (te_compiler_compile_for).
  support::Expected<ProvidedKernel> provide(const std::string &source,
                                            const std::string &sourceName,
                                            bool reference = false,
                                            const std::string &device = "cpu");

  /// Compiles `source` for `device` up to `artifact` ("mlir", "llvm",
  /// "asm" or "obj", see te_compiler_emit) and writes it to `outputPath`
  /// ("-": stdout). Bypasses the cache: always compiles, stores nothing.
  /// Returns the compile's stages. Loads the compiler.
  support::Expected<std::vector<CompileStage>>
  emit(const std::string &source, const std::string &sourceName,
       const std::string &device, const std::string &artifact,
       const std::string &outputPath);

  /// Which backend lowers each te op of `source` for the target of
  /// `device` (see te_compiler_explain_for): (op, location, backend, notes)
  /// rows. Loads the compiler.
  support::Expected<std::vector<std::array<std::string, 4>>>
  explain(const std::string &source, const std::string &sourceName,
          const std::string &device = "cpu");

  /// The same table as the compiler prints it: a line per op, the four
  /// columns separated by tabs (te_compiler_explain_for).
  support::Expected<std::string> explainText(const std::string &source,
                                             const std::string &sourceName,
                                             const std::string &device = "cpu");

  /// Loads te-mlir plugins (comma-separated paths or names, as in
  /// NVTE_PLUGIN) into the compiler, for every later compile of this
  /// process (te_compiler_load_plugins); they join every provider's cache
  /// keys. Loads the compiler. Fails with the message of the first plugin
  /// that fails under NVTE_PLUGIN_STRICT=1, otherwise failures only warn.
  support::Status loadPlugins(const std::string &specs);

  /// The listed plugins and their states, one line each
  /// (te_compiler_plugin_states). Loads the compiler.
  support::Expected<std::string> pluginStates();

  /// The te-mlir build identity that keys the cache.
  const std::string &getBuildId() const { return buildId; }
  /// The disk cache.
  DiskCache &getDiskCache() { return cache; }

private:
  struct Compiler;
  support::Status loadCompiler();
  /// te_compiler_plugins of the loaded compiler.
  support::Expected<std::string> queryPlugins();

  std::string compilerLibrary;
  std::string buildId;
  WarningSink warn;
  DiskCache cache;
  std::unique_ptr<Compiler> compiler;
};

} // namespace te::cache

#endif // TE_JIT_KERNELPROVIDER_H
