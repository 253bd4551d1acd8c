//===- KernelCompiler.h - te modules to loadable kernel libraries -*- C++
//-*-===//
//
// Compiles a te module into a kernel module for a runtime device. For the
// built-in "cpu" target that is a shared library that te-mlir's runtime
// loads without MLIR or LLVM: every public function becomes an entry point
// `void <name>__te_packed(void **args)` (args: the data pointers of the
// inputs, then of the outputs), described by the text manifest that the
// exported `te_kernel_manifest()` returns (format: include/te/Runtime).
// Plugin targets write whatever their device loads.
//
//===----------------------------------------------------------------------===//

#ifndef TE_JIT_KERNELCOMPILER_H
#define TE_JIT_KERNELCOMPILER_H

#include "te/Plugin/Target.h"
#include "te/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::te {

/// Adds the `<name>__te_packed` entry points and `te_kernel_manifest`
/// (returning `manifest`) to a module that the cpu target's pipeline has
/// taken to the LLVM dialect.
LogicalResult emitKernelABI(ModuleOp llvmModule, ArrayRef<KernelEntry> entries,
                            StringRef manifest);

struct HostLibraryOptions {
  /// LLVM optimization level of the generated code (0-3).
  unsigned optLevel = 3;
  /// The linker that turns the object file into a shared library.
  std::string linker = TE_MLIR_DEFAULT_LINKER;
};

/// Writes the host shared library of `llvmModule` (the cpu target's
/// pipeline output, in the LLVM dialect; changed in place) to `outputPath`:
/// the kernel ABI with `manifest` (TargetBackend::serialize's arguments),
/// code for the host CPU, linked with the module's
/// `te.link_libraries`. What the cpu target serializes; plugin targets for
/// host-like devices may wrap it. Diagnostics go to the module.
LogicalResult writeHostKernelLibrary(ModuleOp llvmModule,
                                     ArrayRef<KernelEntry> entries,
                                     StringRef manifest, StringRef outputPath,
                                     const HostLibraryOptions &options = {});

struct KernelCompileOptions {
  /// LLVM optimization level of the generated code (0-3).
  unsigned optLevel = 3;
  /// The runtime device the kernel module is for; the compiler uses the
  /// target registered for it (Target.h): "cpu" is built in, plugins add
  /// others.
  std::string device = "cpu";
  /// Lower with te-lower-cpu-reference (the dense reference decomposition
  /// of differential checks) instead of te-lower-cpu. Only for "cpu".
  bool reference = false;
};

/// Lowers a verified te module (a clone; `module` is not changed) for the
/// target of `options.device` -- the dispatch, the target's pipeline, its
/// serializer -- and writes the kernel module to `outputPath`. Returns the
/// manifest. Diagnostics go to the module's context.
FailureOr<std::string> compileKernelLibrary(ModuleOp module,
                                            const KernelCompileOptions &options,
                                            StringRef outputPath);

/// The host target this process compiles for: "<triple> <cpu> <features>",
/// the part of a kernel's identity that depends on the machine.
std::string getHostTargetDescription();

/// Registers the built-in "cpu" target. Runs when this library loads; safe
/// to call again.
void registerBuiltinTargets();

} // namespace mlir::te

#endif // TE_JIT_KERNELCOMPILER_H
