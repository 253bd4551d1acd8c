//===- CPUTarget.cpp - The built-in cpu target ----------------------------===//
//
// The pipelines are built from pass constructors rather than a pipeline
// string so that they work in any process that links te-mlir, registered
// passes or not.
//
//===----------------------------------------------------------------------===//

#include "te/Target/CPU/CPUTarget.h"
#include "te/Target/TargetRegistry.h"

#include "te/Conversion/Passes.h"
#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;
using namespace mlir::te;

ConvertTEToLinalgOptions mlir::te::getHostLoweringOptions() {
  ConvertTEToLinalgOptions options;
  // bf16 scores on the dot-product unit the host has (the features are
  // part of the kernel cache key); without one, f32 FMAs.
  const plugin::TargetInfo &host = plugin::getHostTarget();
  if (host.hasFeature("avx512bf16"))
    options.dotUnit = "avx512-bf16";
  // bf16 and FP8 GEMMs on AMX's tiles where the target has them (the OS's
  // permission included: getHostTarget drops the features without it).
  if (host.hasFeature("amx-tile") && host.hasFeature("amx-bf16"))
    options.tileUnit = "amx-bf16";
  options.vectorLanes = host.hasFeature("avx512f") ? 16
                        : host.hasFeature("avx2")  ? 8
                                                   : 4;
  return options;
}

void mlir::te::buildCPUTargetPipeline(OpPassManager &pm) {
  pm.addPass(te::createConvertTEToLinalg(getHostLoweringOptions()));
  pm.addPass(createCanonicalizerPass());

  // Kernels write their results into caller-provided buffers.
  addKernelBufferization(pm);
  // An entry point with collectives becomes steps around them, which the
  // runtime runs in order with the collectives between them.
  pm.addPass(createCPUHostSteps());
  bufferization::BufferDeallocationPipelineOptions deallocation;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);

  // linalg's parallel dimensions and the attention lowering's scf.forall
  // become scf.parallel; the loops worth it run on OpenMP threads.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createCPUParallelLoops());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(createCPUOpenMPThreads());
  // exp and log as arith code: no libm calls in the kernels.
  pm.addPass(createApproximateMathForCPU());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  // bf16 <-> f32 as integer arithmetic (round-to-nearest-even), which every
  // host handles.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  // The offsets of views with run-time offsets (a parallel iteration's
  // rows) come out of expand-strided-metadata as affine.apply.
  pm.addPass(createLowerAffinePass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  // The x86vector ops of the dot units; 16x16 transposes of 32-bit words
  // (the GEMM's packing of B) by AVX-512 shuffles.
  vectorToLLVM.x86Vector = true;
  // The amx ops of the tile units.
  vectorToLLVM.amx = true;
  vectorToLLVM.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  // The poison lanes of vector transposes and masked reads.
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  // Static shapes: kernel arguments are bare data pointers.
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // Line tables from the te program's locations: the generated code's
  // assembly and object say which te op each instruction comes from
  // (.loc directives; a debugger or profiler shows the program's lines).
  pm.addPass(LLVM::createDIScopeForLLVMFuncOpPass());
}

void mlir::te::buildLowerToCPUReferencePipeline(OpPassManager &pm) {
  // The reference refuses bad index operands exactly as the kernels do:
  // the same skeleton, with the dense decomposition for the dispatch.
  buildLoweringPipeline(pm, getCPUTarget(), [](OpPassManager &nested) {
    nested.addPass(createTEDecomposeReference());
  });
}

void mlir::te::registerCPUPipelines() {
  PassPipelineRegistration<>(
      "te-lower-cpu-reference",
      "te-lower-cpu with te-decompose-reference in place of te-dispatch: "
      "the dense reference formulation that te-run --check compares against",
      buildLowerToCPUReferencePipeline);
}

//===----------------------------------------------------------------------===//
// The target
//===----------------------------------------------------------------------===//

namespace {

/// convert-te-to-linalg's patterns applied to one op.
class CPUNativeLowering : public plugin::NativeLowering {
public:
  std::optional<std::string>
  getUnsupportedReason(Operation *op) const override {
    return getCPUUnsupportedReason(op);
  }
  LogicalResult lower(Operation *op) const override {
    if (std::optional<std::string> reason = getCPUUnsupportedReason(op))
      return op->emitError(*reason);
    return applyTEToLinalgConversion(op, getHostLoweringOptions());
  }
  /// The GEMM's micro-kernels, so that --explain names the one it runs.
  std::vector<plugin::LoweringStrategy>
  getStrategies(Operation *op) const override {
    if (getCPUUnsupportedReason(op))
      return {};
    // A processor whose tiles are off says why.
    std::optional<std::string> noTiles;
    if (std::optional<std::string> refusal = plugin::getHostTileRefusal())
      noTiles = "AMX tiles are not used: " + *refusal;
    std::vector<plugin::LoweringStrategy> strategies;
    for (auto &[name, unsupported] :
         getHostGemmKernelChoices(op, getHostLoweringOptions(), noTiles))
      strategies.push_back({name, unsupported});
    return strategies;
  }
};

/// The host CPU, through LLVM, as shared libraries.
class CPUTarget : public plugin::TargetBackend {
public:
  CPUTarget() : TargetBackend("cpu", "cpu") {}

  plugin::TargetInfo getTargetInfo() const override {
    return plugin::getHostTarget();
  }

  void buildPipeline(OpPassManager &pm) const override {
    buildCPUTargetPipeline(pm);
  }

  LogicalResult serialize(ModuleOp lowered, ArrayRef<KernelEntry> entries,
                          StringRef manifest, StringRef outputPath,
                          unsigned optLevel) const override {
    HostLibraryOptions options;
    options.optLevel = optLevel;
    return writeHostKernelLibrary(lowered, entries, manifest, outputPath,
                                  options);
  }

  const plugin::NativeLowering *getNativeLowering() const override {
    return &getCPUNativeLowering();
  }

  /// The pipeline is part of the te-mlir build (its build id covers it);
  /// the ABI version names the kernel calling convention.
  std::string getPipelineIdentity() const override {
    return "te-lower-cpu abi=4";
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    createConvertTEToLinalg()->getDependentDialects(registry);
  }

  bool buildReferencePipeline(OpPassManager &pm) const override {
    buildLowerToCPUReferencePipeline(pm);
    return true;
  }

  std::vector<std::string> getArtifactNames() const override {
    return {"llvm", "asm", "obj"};
  }

  LogicalResult emitArtifact(ModuleOp lowered, ArrayRef<KernelEntry> entries,
                             StringRef manifest, StringRef artifact,
                             StringRef outputPath,
                             unsigned optLevel) const override {
    HostLibraryOptions options;
    options.optLevel = optLevel;
    HostArtifact stop = artifact == "llvm"  ? HostArtifact::LLVMIR
                        : artifact == "asm" ? HostArtifact::Assembly
                                            : HostArtifact::Object;
    return writeHostArtifact(lowered, entries, manifest, stop, outputPath,
                             options);
  }
};

/// Registered when the library loads, before any plugin can claim the
/// name.
[[maybe_unused]] const bool cpuTargetRegistered = (registerCPUTarget(), true);

} // namespace

const plugin::TargetBackend &mlir::te::getCPUTarget() {
  registerCPUTarget();
  // Built-in targets come first in the registry.
  return *TargetRegistry::get().find("cpu").target;
}

const plugin::NativeLowering &mlir::te::getCPUNativeLowering() {
  static const CPUNativeLowering lowering;
  return lowering;
}

void mlir::te::registerCPUTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    TargetRegistry::get().addBuiltin(std::make_unique<CPUTarget>());
  });
}
