//===- KernelCompiler.h - te modules to loadable kernel libraries -*- C++
//-*-===//
//
// Compiles a te module into a shared library that te-mlir's runtime loads
// without MLIR or LLVM: every public function becomes an entry point
// `void <name>__te_packed(void **args)` (args: the data pointers of the
// inputs, then of the outputs), described by the text manifest that the
// exported `te_kernel_manifest()` returns (format: include/te/Runtime).
//
//===----------------------------------------------------------------------===//

#ifndef TE_JIT_KERNELCOMPILER_H
#define TE_JIT_KERNELCOMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "te/Version.h"

#include <string>

namespace mlir::te {

/// One entry point of a kernel library: a public function of the module.
struct KernelEntry {
  std::string name;
  SmallVector<RankedTensorType> inputs;
  SmallVector<RankedTensorType> outputs;
};

/// The entry points of `module`: every public function, its arguments as
/// inputs and its results as outputs. Fails (with a diagnostic on the
/// function) when a signature cannot cross the kernel ABI: non-tensor or
/// dynamically shaped values, or element types the runtime does not know.
FailureOr<SmallVector<KernelEntry>> collectKernelEntries(ModuleOp module);

/// The text manifest the runtime parses (see include/te/Runtime).
std::string formatKernelManifest(ArrayRef<KernelEntry> entries);

/// Adds the `<name>__te_packed` entry points and `te_kernel_manifest` to a
/// module that `te-lower-cpu` has taken to the LLVM dialect.
LogicalResult emitKernelABI(ModuleOp llvmModule, ArrayRef<KernelEntry> entries);

struct KernelCompileOptions {
  /// LLVM optimization level of the generated code (0-3).
  unsigned optLevel = 3;
  /// The linker that turns the object file into a shared library.
  std::string linker = TE_MLIR_DEFAULT_LINKER;
  /// Lower with te-lower-cpu-reference (the dense reference decomposition
  /// of differential checks) instead of te-lower-cpu.
  bool reference = false;
};

/// Lowers a verified te module (a clone; `module` is not changed) for the
/// host CPU and writes the shared library to `outputPath`. Returns the
/// manifest. Diagnostics go to the module's context; link errors are
/// emitted on the module too.
FailureOr<std::string> compileKernelLibrary(ModuleOp module,
                                            const KernelCompileOptions &options,
                                            StringRef outputPath);

/// The host target this process compiles for: "<triple> <cpu> <features>",
/// the part of a kernel's identity that depends on the machine.
std::string getHostTargetDescription();

} // namespace mlir::te

#endif // TE_JIT_KERNELCOMPILER_H
