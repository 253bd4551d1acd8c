//===- InitAllPasses.h - Every pass te tools register -----------*- C++ -*-===//
#ifndef TE_INITALLPASSES_H
#define TE_INITALLPASSES_H

#include "te/Conversion/Passes.h"
#include "te/Dialect/TE/Transforms/Passes.h"
#include "te/Plugin/Dispatch.h"
#include "te/Plugin/Passes.h"
#include "te/Target/CPU/CPUTarget.h"
#include "te/Target/CUDA/CUDATarget.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::te {

/// te's own pipelines, then its passes in the order the pipelines run them.
/// te-opt lists them at the top of --help (MLIR sorts its pass list by name,
/// which scatters them). Each is registered by registerTEPasses; the
/// te-opt/help.test lit test fails when one is missing here.
inline constexpr llvm::StringLiteral kTEPassArguments[] = {
    "te-lower-cpu",           "te-lower-cpu-reference",
    "te-lower-target",        "te-insert-checks",
    "te-fold-empty",          "te-dispatch",
    "te-explain-dispatch",    "te-materialize-checks",
    "te-decompose-reference", "convert-te-to-linalg",
    "te-unique-returns",      "te-cpu-host-steps",
    "te-approximate-math",    "te-cpu-parallel-loops",
    "te-cpu-openmp-threads",  "te-lower-to-cuda-libraries",
    "convert-te-to-gpu",      "te-host-copies-to-gpu",
    "te-cuda-manifest-module"};

/// Registers te's passes and pipelines.
inline void registerTEPasses() {
  registerTETransformsPasses();
  registerTEConversionPasses();
  registerTEPluginPasses();
  plugin::registerLoweringPipelines();
  registerCPUPipelines();
}

/// Registers the upstream passes te's CPU pipeline is made of
/// (lib/Target/CPU/CPUTarget.cpp, in its order, with the stages of the
/// buffer deallocation pipeline), so that each stage can be run on its own.
/// canonicalize and cse, which it also runs, are among the general passes.
inline void registerCPUPipelineStagePasses() {
  bufferization::registerOneShotBufferizePass();
  bufferization::registerBufferResultsToOutParamsPass();
  bufferization::registerBufferizationPipelines();
  memref::registerExpandReallocPass();
  bufferization::registerOwnershipBasedBufferDeallocationPass();
  bufferization::registerBufferDeallocationSimplificationPass();
  bufferization::registerLowerDeallocationsPass();
  registerConvertLinalgToLoopsPass();
  registerConvertLinalgToParallelLoopsPass();
  registerSCFForallToParallelLoop();
  registerConvertSCFToOpenMPPass();
  registerLowerAffinePass();
  registerConvertVectorToSCF();
  registerSCFToControlFlowPass();
  arith::registerArithExpandOpsPass();
  memref::registerExpandStridedMetadataPass();
  registerConvertVectorToLLVMPass();
  registerUBToLLVMConversionPass();
  registerFinalizeMemRefToLLVMConversionPass();
  registerConvertMathToLLVMPass();
  registerArithToLLVMConversionPass();
  registerConvertFuncToLLVMPass();
  registerConvertControlFlowToLLVMPass();
  registerConvertOpenMPToLLVMPass();
  registerReconcileUnrealizedCastsPass();
  LLVM::registerDIScopeForLLVMFuncOpPass();
}

/// The passes of the cuda target's pipeline (te/Target/CUDA/CUDATarget.h),
/// its own and the upstream ones, so that its stages can be run one by one.
inline void registerCUDAPipelineStagePasses() {
  registerCUDAPipelinePasses();
  registerGpuNVVMAttachTarget();
  registerConvertGpuOpsToNVVMOps();
  registerConvertNVVMToLLVMPass();
  registerConvertNVGPUToNVVMPass();
  registerGpuModuleToBinaryPass();
}

/// Registers the general-purpose upstream passes one expects of an mlir-opt:
/// cleanups and the printing / viewing passes.
inline void registerGeneralPasses() {
  registerCanonicalizer();
  registerCSE();
  registerInliner();
  registerSymbolDCE();
  registerSymbolPrivatize();
  registerLoopInvariantCodeMotion();
  registerSCCP();
  registerStripDebugInfo();
  registerPrintIRPass();
  registerPrintOpStats();
  registerViewOpGraph();
}

/// Registers what te tools offer: te's passes and pipelines, the upstream
/// passes its pipelines are made of, and a few general ones. Not every
/// upstream pass: those for other targets (other GPU backends, SPIR-V, ...)
/// would bury te's in te-opt --help.
inline void registerAllPasses() {
  registerTEPasses();
  registerCPUPipelineStagePasses();
  registerCUDAPipelineStagePasses();
  registerGeneralPasses();
}

} // namespace mlir::te

#endif // TE_INITALLPASSES_H
