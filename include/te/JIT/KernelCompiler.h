//===- KernelCompiler.h - te modules to loadable kernel modules -*- C++ -*-===//
//
// Compiles a te module into a kernel module for a runtime device, through
// the target registered for that device (te/Target/Target.h): the
// dispatch, the target's pipeline, its serializer. Nothing here knows a
// backend: the cpu target's shared libraries are described in
// te/Target/CPU/CPUTarget.h, a plugin target writes whatever its device
// loads.
//
//===----------------------------------------------------------------------===//

#ifndef TE_JIT_KERNELCOMPILER_H
#define TE_JIT_KERNELCOMPILER_H

#include "te/Target/CompileRecorder.h"
#include "te/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::te {

struct KernelCompileOptions {
  /// LLVM optimization level of the generated code (0-3).
  unsigned optLevel = 3;
  /// The runtime device the kernel module is for; the compiler uses the
  /// target registered for it (Target.h): "cpu" is built in, plugins add
  /// others.
  std::string device = "cpu";
  /// Build the target's reference kernels (the dense decomposition of
  /// differential checks, TargetBackend::buildReferencePipeline) instead of
  /// its production ones: te-lower-cpu-reference for "cpu".
  bool reference = false;
  /// Receives the compile's stage times and writes its dumps (may be null).
  CompileRecorder *recorder = nullptr;
};

/// Lowers a verified te module (a clone; `module` is not changed) for the
/// target of `options.device` -- the dispatch, the target's pipeline, its
/// serializer -- and writes the kernel module to `outputPath`. Returns the
/// manifest. Diagnostics go to the module's context.
FailureOr<std::string> compileKernelLibrary(ModuleOp module,
                                            const KernelCompileOptions &options,
                                            StringRef outputPath);

/// compileKernelLibrary stopped at `artifact`, which is written to
/// `outputPath` ("-": stdout) instead of the kernel module: "mlir", the
/// module the target's pipeline produced, for every target; otherwise one
/// of the target's intermediate files (TargetBackend::getArtifactNames; for
/// cpu "llvm", "asm", "obj"). Anything else is a diagnostic naming what
/// the target can emit.
LogicalResult emitKernelArtifact(ModuleOp module,
                                 const KernelCompileOptions &options,
                                 StringRef artifact, StringRef outputPath);

/// The host target this process compiles for: "<triple> <cpu> <features>",
/// the part of a kernel's identity that depends on the machine.
std::string getHostTargetDescription();

} // namespace mlir::te

#endif // TE_JIT_KERNELCOMPILER_H
