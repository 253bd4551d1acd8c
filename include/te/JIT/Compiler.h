/*===- Compiler.h - C API of te-mlir's kernel compiler --------------------===*\
|*                                                                            *|
|* Compiles te programs (MLIR text) into kernel libraries that the runtime    *|
|* loads (include/te/Runtime). Tools load this library on demand, so that a   *|
|* kernel cache hit never loads MLIR or LLVM. No MLIR or LLVM types cross     *|
|* this interface; every function may be called from any thread.             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_JIT_COMPILER_H
#define TE_JIT_COMPILER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TE_COMPILER_EXPORT __attribute__((visibility("default")))

/// What the te_compiler_* functions that return int return: 0 on success,
/// otherwise the kind of failure, so that callers act on the kind without
/// reading the message (which is for people).
enum te_compiler_status {
  TE_COMPILER_OK = 0,
  /// The program does not parse or verify; the diagnostics name the line.
  TE_COMPILER_ERROR_PROGRAM = 1,
  /// The program is valid but could not be compiled: an op no backend of
  /// the target lowers, a target that failed, a file that could not be
  /// written, LLVM failing, or no memory.
  TE_COMPILER_ERROR_COMPILE = 2,
  /// A plugin failed to load under NVTE_PLUGIN_STRICT=1.
  TE_COMPILER_ERROR_PLUGINS = 3,
  /// An argument was NULL or named nothing the function knows.
  TE_COMPILER_ERROR_ARGUMENT = 4,
};

/// The te-mlir build this compiler belongs to, e.g. "0.1.0+abc123 LLVM
/// 22.1.8". Static storage.
TE_COMPILER_EXPORT const char *te_compiler_build_id(void);

/// The host target kernels are compiled for ("<triple> <cpu> <features>").
/// Static storage.
TE_COMPILER_EXPORT const char *te_compiler_host_target(void);

/// Parses and verifies `source` (`size` bytes of MLIR text; `source_name`
/// names it in diagnostics) and returns its canonical form: the generic
/// printout without locations, which two programs share exactly when they
/// mean the same thing. Returns 0 on success. On failure, returns non-zero
/// and sets `*error` to the diagnostics. Free strings with te_compiler_free.
TE_COMPILER_EXPORT int te_compiler_canonicalize(const char *source, size_t size,
                                                const char *source_name,
                                                char **canonical, char **error);

/// Parses and verifies `source` and returns the source location
/// (`file:line:col`) of each of its te ops, one per line, in the order
/// compiled kernels number them: what a kernel's error messages refer to as
/// `{@k}` (te_module_set_source_locations). Returns 0 on success; on
/// failure non-zero with `*error` set. Free strings with te_compiler_free.
TE_COMPILER_EXPORT int te_compiler_source_locations(const char *source,
                                                    size_t size,
                                                    const char *source_name,
                                                    char **locations,
                                                    char **error);

/// Compiles `source` for the host CPU into the kernel library
/// `output_path`. On success returns 0 and sets `*manifest` to the kernel
/// manifest; on failure returns non-zero and sets `*error` to the
/// diagnostics (file:line:col: error: ...). Free strings with
/// te_compiler_free.
TE_COMPILER_EXPORT int te_compiler_compile(const char *source, size_t size,
                                           const char *source_name,
                                           const char *output_path,
                                           char **manifest, char **error);

/// te_compiler_compile for the runtime device `device` ("cpu", or a device
/// a plugin's target serves; see te_compiler_targets): the kernel module is
/// whatever that device's load_module takes. Fails with a diagnostic
/// naming the devices that have targets when `device` has none.
TE_COMPILER_EXPORT int te_compiler_compile_for(const char *device,
                                               const char *source, size_t size,
                                               const char *source_name,
                                               const char *output_path,
                                               char **manifest, char **error);

/// te_compiler_compile with the reference pipeline (te-lower-cpu-reference):
/// te.attention and te.attention_backward become the dense reference
/// decomposition that differential checks (te-run --check) compare the
/// production kernels against; other ops lower as usual. Fails with a
/// diagnostic naming what has no reference (attention with dynamic shapes).
TE_COMPILER_EXPORT int
te_compiler_compile_reference(const char *source, size_t size,
                              const char *source_name, const char *output_path,
                              char **manifest, char **error);

/// te_compiler_compile_for (with `reference` non-zero, the reference pipeline
/// of te_compiler_compile_reference, for "cpu" only) that also says how long
/// each stage took: when `report` is not NULL, `*report` is set, on success
/// and on failure, to one line per stage run, in order,
/// "<stage>\t<milliseconds>": mlir-passes (the target's pipeline), then for
/// the cpu target llvm-translate, llvm-optimize, llvm-codegen and link; a
/// plugin target's serializer that does not build on te-mlir's host library
/// is one stage, serialize. Free strings with te_compiler_free.
///
/// Every compile (this and the functions above) writes, when TE_DUMP_DIR is
/// set, the IR of each stage to TE_DUMP_DIR/<program> (the source name
/// without directory and `.mlir`; `.<device>` added for devices other than
/// cpu, `.reference` for the reference pipeline), replacing the numbered
/// files of an earlier compile: 00-input.mlir (the te module), one
/// NN-<pass>.mlir after each pass of the pipeline, and for the cpu target
/// NN-llvm.ll and NN-llvm-optimized.ll (before and after LLVM's
/// optimization) and NN-assembly.s, for the cuda target NN-manifest.txt,
/// NN-nvvm.ll, NN-nvvm-optimized.ll and NN-ptx.ptx. A directory that cannot
/// be written fails the compile.
TE_COMPILER_EXPORT int te_compiler_compile_with_report(
    const char *device, int reference, const char *source, size_t size,
    const char *source_name, const char *output_path, char **manifest,
    char **report, char **error);

/// Compiles `source` for the runtime device `device` like
/// te_compiler_compile_for, but stops at `artifact` and writes it to
/// `output_path` ("-": stdout) instead of a kernel module: "mlir", the module
/// the target's pipeline produced (for cpu, the LLVM dialect), for every
/// target; or one of the target's intermediate files, for cpu "llvm" (the
/// LLVM IR after optimization), "asm" (the host assembly) and "obj" (the
/// object file before linking). Anything else fails with a diagnostic
/// naming what the device's target can emit.
/// `report` (may be NULL) and dumps as in te_compiler_compile_with_report.
/// Returns 0 on success; on failure non-zero with `*error` set.
TE_COMPILER_EXPORT int
te_compiler_emit(const char *device, const char *artifact, const char *source,
                 size_t size, const char *source_name, const char *output_path,
                 char **report, char **error);

/// Parses and verifies `source` and sets `*table` to one line per te op:
/// "<op>\t<file:line:col>\t<backend>\t<notes>", where backend is
/// "plugin <plugin>/<provider>" (a plugin lowers it), "<target> (native)"
/// (the target's own lowering, e.g. "cpu (native)"), or
/// "none: <why the op cannot be lowered yet>", and notes lists the plugin
/// providers that declined the op, each as "<provider>: <reason>",
/// separated by "; " (empty if none). Plugins are those of NVTE_PLUGIN (see
/// te_compiler_plugins). Returns 0 on success; on failure non-zero with
/// `*error` set.
TE_COMPILER_EXPORT int te_compiler_explain(const char *source, size_t size,
                                           const char *source_name,
                                           char **table, char **error);

/// te_compiler_explain for the target of runtime device `device`:
/// providers decide for that target, and ops they leave show as
/// "<target> (native)".
TE_COMPILER_EXPORT int te_compiler_explain_for(const char *device,
                                               const char *source, size_t size,
                                               const char *source_name,
                                               char **table, char **error);

/// Loads the plugins of NVTE_PLUGIN and sets `*list` to one line per
/// target: "<device>\t<target>\t<origin>\t<pipeline>\t<triple> <cpu>
/// <features>", origin being "built-in" or "plugin <name> <version>",
/// pipeline what identifies the target's code generation beyond the build
/// (TargetBackend::getPipelineIdentity), the last column what the target
/// compiles for (its TargetInfo); built-in targets first,
/// then plugins' in priority order. The first line for a device is the target
/// compiles for it use. Returns non-zero with `*error` set only where
/// te_compiler_plugins would.
TE_COMPILER_EXPORT int te_compiler_targets(char **list, char **error);

/// Loads the plugins of NVTE_PLUGIN (once per process; compile and explain
/// do so too) and sets `*fingerprint` to what of them changes generated
/// code: "<name>=<version>;" for each available plugin in priority order,
/// then the dispatch settings ("policy=...;deny=...;strict=...;"), then
/// how the plugins came to be ("api=<specs>;failed=<specs>;": those loaded
/// through te_compiler_load_plugins, and those that failed, so far), as
/// te/ABI/PluginFingerprint.h encodes it (a ';', ',', '=' or '%' inside a
/// value escaped as %XX). Kernel caches key their entries on it, and decode
/// it with the same struct. Returns 0 on success; with
/// NVTE_PLUGIN_STRICT=1 a plugin that fails to load makes it return non-zero
/// with `*error` set. Failures otherwise only warn (on stderr).
TE_COMPILER_EXPORT int te_compiler_plugins(char **fingerprint, char **error);

/// Loads the plugins of NVTE_PLUGIN (as te_compiler_plugins does) and sets
/// `*states` to one line per listed plugin, in priority order: what
/// PluginManager::describeStates says (spec, source, state, name, version,
/// path, failure, providers; tab-separated). Returns non-zero with
/// `*error` set only where te_compiler_plugins would.
TE_COMPILER_EXPORT int te_compiler_plugin_states(char **states, char **error);

/// Loads the plugins of `specs` (comma-separated paths or names, as in
/// NVTE_PLUGIN) after those of NVTE_PLUGIN, for every later compile and
/// explain of this process; list order is priority. A plugin that fails is
/// reported on stderr and skipped; with NVTE_PLUGIN_STRICT=1 the first
/// failure makes this return non-zero with `*error` set. Note that kernel
/// caches key their entries on te_compiler_plugins, which covers plugins
/// loaded this way too.
TE_COMPILER_EXPORT int te_compiler_load_plugins(const char *specs,
                                                char **error);

/// Tells the compiler the arch of runtime device `device`'s hardware as the
/// runtime reports it (te_device_target_arch, e.g. "sm_90" for a cuda
/// device): what compiles for that device's target generate code for when
/// nothing asks for another arch (TE_CUDA_ARCH). The compiler never opens
/// a device itself; the JIT, which does, tells it. Process-wide; a later
/// call for the same device replaces the arch; NULL or "" forgets it.
TE_COMPILER_EXPORT void te_compiler_set_device_arch(const char *device,
                                                    const char *arch);

/// A parsed and verified te program, prepared for compiles for one device:
/// what a kernel cache needs on a miss, from one parse. Create it, read
/// what the cache keys on (te_compiler_program_canonical and the others),
/// and compile it only when no entry has that key. A program is used by
/// one thread at a time; different programs may be used concurrently.
typedef struct te_compiler_program te_compiler_program;

/// Parses and verifies `source` (as te_compiler_canonicalize) once and
/// prepares it for compiles for `device` (`reference` non-zero: the
/// reference pipeline of te_compiler_compile_reference): loads the plugins
/// of NVTE_PLUGIN and describes the device's target. Tell the compiler the
/// device's arch (te_compiler_set_device_arch) before, as for any compile.
/// Returns TE_COMPILER_OK and sets `*program`, or a failure with `*error`
/// set (TE_COMPILER_ERROR_PROGRAM for a program that does not parse or
/// verify, TE_COMPILER_ERROR_PLUGINS under NVTE_PLUGIN_STRICT=1).
TE_COMPILER_EXPORT int te_compiler_program_create(
    const char *device, int reference, const char *source, size_t size,
    const char *source_name, te_compiler_program **program, char **error);

/// The program's canonical form (te_compiler_canonicalize's text). Owned by
/// the program.
TE_COMPILER_EXPORT const char *
te_compiler_program_canonical(const te_compiler_program *program);

/// The source location of each of the program's te ops, one per line
/// (te_compiler_source_locations' text). Owned by the program.
TE_COMPILER_EXPORT const char *
te_compiler_program_source_locations(const te_compiler_program *program);

/// The plugin fingerprint (te_compiler_plugins' text) when the program was
/// created; "" for the reference pipeline, which no plugin changes. Owned
/// by the program.
TE_COMPILER_EXPORT const char *
te_compiler_program_plugins(const te_compiler_program *program);

/// The te_compiler_targets line of the target the device gets, without its
/// newline; "" when no target serves the device (compiling then fails with
/// the diagnostic that says so). Owned by the program.
TE_COMPILER_EXPORT const char *
te_compiler_program_target(const te_compiler_program *program);

/// Compiles the program into the kernel module `output_path`, as
/// te_compiler_compile_with_report does (report, TE_DUMP_DIR dumps),
/// without parsing it again. May be called more than once. Returns
/// TE_COMPILER_OK and sets `*manifest`, or a failure with `*error` set.
TE_COMPILER_EXPORT int te_compiler_program_compile(te_compiler_program *program,
                                                   const char *output_path,
                                                   char **manifest,
                                                   char **report, char **error);

/// Frees a program; NULL is ignored.
TE_COMPILER_EXPORT void
te_compiler_program_release(te_compiler_program *program);

/// How many times this compiler has parsed a program in this process: every
/// function above that takes source text parses it once. For tests and
/// profiles of what a cache miss costs.
TE_COMPILER_EXPORT unsigned long long te_compiler_parse_count(void);

/// Frees a string returned by this API; NULL is ignored.
TE_COMPILER_EXPORT void te_compiler_free(char *text);

#ifdef __cplusplus
}
#endif

#endif /* TE_JIT_COMPILER_H */
