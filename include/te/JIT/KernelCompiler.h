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

#include <optional>
#include <string>
#include <vector>

namespace mlir::te {

/// Adds the `<name>__te_packed` entry points and `te_kernel_manifest`
/// (returning `manifest`) to a module that the cpu target's pipeline has
/// taken to the LLVM dialect.
LogicalResult emitKernelABI(ModuleOp llvmModule, ArrayRef<KernelEntry> entries,
                            StringRef manifest);

/// What one compile records besides its output: how long each stage took
/// and, with a dump directory (TE_DUMP_DIR), the IR after each stage in
/// numbered files, `NN-<stage>.<ext>`. A compile makes its recorder the
/// current one of its thread while it runs (Scope), so that what a target's
/// serializer calls, writeHostKernelLibrary, records into it too without the
/// plugin interface having to carry it.
class CompileRecorder {
public:
  struct Stage {
    std::string name;
    double milliseconds;
  };

  /// `dumpDirectory`: where the stages' IR goes; "" for nowhere.
  explicit CompileRecorder(std::string dumpDirectory = "")
      : dumpDirectory(std::move(dumpDirectory)) {}

  /// The recorder of the compile running on this thread, or null.
  static CompileRecorder *getCurrent();

  /// Makes a recorder (or none) the current one of this thread for its
  /// lifetime.
  class Scope {
  public:
    explicit Scope(CompileRecorder *recorder);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    CompileRecorder *previous;
  };

  const std::vector<Stage> &getStages() const { return stages; }
  void addStage(StringRef name, double milliseconds);

  bool isDumping() const { return !dumpDirectory.empty(); }
  const std::string &getDumpDirectory() const { return dumpDirectory; }
  /// Creates the dump directory and removes the numbered files an earlier
  /// compile left there. Fails with *error set.
  LogicalResult prepareDumpDirectory(std::string *error);
  /// Writes the next numbered dump, `NN-<name>.<extension>`, with what
  /// `print` writes; nothing when not dumping. The first failure is kept
  /// (getDumpError) and ends dumping.
  void dump(StringRef name, StringRef extension,
            function_ref<void(raw_ostream &)> print);
  /// The first dump that could not be written ("" if none).
  const std::string &getDumpError() const { return dumpError; }

private:
  std::string dumpDirectory;
  std::string dumpError;
  unsigned nextDump = 0;
  std::vector<Stage> stages;
};

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

/// What emitKernelArtifact writes: a compile's intermediate stages.
enum class KernelArtifact {
  /// The module the target's pipeline produced (for the cpu target, the
  /// LLVM dialect).
  MLIR,
  /// The cpu target's LLVM IR after optimization.
  LLVMIR,
  /// The cpu target's host assembly.
  Assembly,
  /// The cpu target's object file, before linking.
  Object,
};

/// "mlir", "llvm", "asm", "obj"; std::nullopt for anything else.
std::optional<KernelArtifact> parseKernelArtifact(StringRef name);

/// compileKernelLibrary stopped at `artifact`, which is written to
/// `outputPath` ("-": stdout) instead of the kernel module. MLIR works for
/// every target; the others are the built-in cpu target's stages (a plugin
/// target's serializer is its own), and are refused with a diagnostic for
/// other devices.
LogicalResult emitKernelArtifact(ModuleOp module,
                                 const KernelCompileOptions &options,
                                 KernelArtifact artifact, StringRef outputPath);

/// The host target this process compiles for: "<triple> <cpu> <features>",
/// the part of a kernel's identity that depends on the machine.
std::string getHostTargetDescription();

/// Registers the built-in "cpu" target. Runs when this library loads; safe
/// to call again.
void registerBuiltinTargets();

} // namespace mlir::te

#endif // TE_JIT_KERNELCOMPILER_H
