//===- CPUTarget.h - The built-in cpu target ----------------------*- C++
//-*-===//
//
// The host CPU through LLVM: te ops become linalg on tensors
// (convert-te-to-linalg), are bufferized and lowered to loops and the LLVM
// dialect, and the module becomes a shared library that te-mlir's runtime
// loads without MLIR or LLVM: every public function becomes an entry point
// `void <name>__te_packed(void **args)` (args: the data pointers of the
// inputs, then of the outputs), described by the text manifest that the
// exported `te_kernel_manifest()` returns (format: include/te/Runtime).
//
// A plugin target for a host-like device may reuse the pipeline
// (buildCPUTargetPipeline) and the serializer (writeHostKernelLibrary).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_CPU_CPUTARGET_H
#define TE_TARGET_CPU_CPUTARGET_H

#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Target/Target.h"
#include "te/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::te {

/// Registers the built-in "cpu" target. Safe to call more than once.
void registerCPUTarget();

/// The cpu target's native lowering: convert-te-to-linalg's patterns, one
/// op at a time, with its reasons for the configurations it does not cover.
const plugin::NativeLowering &getCPUNativeLowering();

/// convert-te-to-linalg's options for the host (getHostTarget(), so
/// TE_CPU_ARCH included): its bf16 dot-product unit, if it has one.
ConvertTEToLinalgOptions getHostLoweringOptions();

/// The built-in "cpu" target itself (the one registerCPUTarget registers).
const plugin::TargetBackend &getCPUTarget();

/// The cpu target's own pipeline (TargetBackend::buildPipeline): the te
/// ops the dispatch left to linalg, bufferized (results become
/// out-parameters), to loops and on to the LLVM dialect with the
/// bare-pointer calling convention (static shapes only). te-lower-cpu
/// (registered by the plugin layer, which owns te-dispatch) is the common
/// skeleton (buildLoweringPipeline) around it. Plugin targets for
/// host-like devices may reuse it.
void buildCPUTargetPipeline(OpPassManager &pm);

/// te-lower-cpu with te-decompose-reference where te-dispatch runs: the
/// reference kernels of differential checks (te-run --check). Registered
/// as `te-lower-cpu-reference`.
void buildLowerToCPUReferencePipeline(OpPassManager &pm);

/// Registers te-lower-cpu-reference with the pass registry.
void registerCPUPipelines();

/// Adds the `<name>__te_packed` entry points and `te_kernel_manifest`
/// (returning `manifest` with the step plans of entry points cut around
/// library calls, te-cpu-host-steps) to a module that the cpu target's
/// pipeline has taken to the LLVM dialect. `finalManifest`, if given,
/// receives that manifest.
LogicalResult emitKernelABI(ModuleOp llvmModule, ArrayRef<KernelEntry> entries,
                            StringRef manifest,
                            std::string *finalManifest = nullptr);

struct HostLibraryOptions {
  /// LLVM optimization level of the generated code (0-3).
  unsigned optLevel = 3;
  /// The linker that turns the object file into a shared library.
  std::string linker = TE_MLIR_DEFAULT_LINKER;
  /// If set, receives the manifest the library carries: the one given with
  /// the entry points' step plans (te-cpu-host-steps). A device that keeps
  /// the manifest outside the library must keep this one: without the
  /// plans, an entry point with collectives runs nothing.
  std::string *manifest = nullptr;
};

/// Writes the host shared library of `llvmModule` (the cpu target's
/// pipeline output, in the LLVM dialect; changed in place) to `outputPath`:
/// the kernel ABI with `manifest` (TargetBackend::serialize's arguments),
/// code for the host CPU, linked with the module's
/// `te.link_libraries`. What the cpu target serializes; plugin targets for
/// host-like devices may wrap it. Diagnostics go to the module. Records its
/// stages (llvm-translate, llvm-optimize, llvm-codegen, link) and dumps
/// (the LLVM IR before and after optimization, the assembly) into the
/// current CompileRecorder, if any.
LogicalResult writeHostKernelLibrary(ModuleOp llvmModule,
                                     ArrayRef<KernelEntry> entries,
                                     StringRef manifest, StringRef outputPath,
                                     const HostLibraryOptions &options = {});

/// Where writeHostArtifact stops.
enum class HostArtifact {
  /// The LLVM IR after optimization, as text.
  LLVMIR,
  /// The host assembly, as text.
  Assembly,
  /// The object file, before linking.
  Object,
  /// The linked shared library: writeHostKernelLibrary.
  SharedLibrary,
};

/// writeHostKernelLibrary's stages up to `artifact`, which is written to
/// `outputPath` ("-": stdout).
LogicalResult writeHostArtifact(ModuleOp llvmModule,
                                ArrayRef<KernelEntry> entries,
                                StringRef manifest, HostArtifact artifact,
                                StringRef outputPath,
                                const HostLibraryOptions &options = {});

} // namespace mlir::te

#endif // TE_TARGET_CPU_CPUTARGET_H
