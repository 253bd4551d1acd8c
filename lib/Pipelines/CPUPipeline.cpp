//===- CPUPipeline.cpp - te -> LLVM dialect for the host CPU --------------===//
//
// Built from pass constructors rather than a pipeline string so that it works
// in any process that links te-mlir, registered passes or not.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/Passes.h"
#include "te/Dialect/TE/Transforms/Passes.h"
#include "te/Pipelines/Pipelines.h"
#include "te/Plugin/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::te::buildCPUTargetPipeline(OpPassManager &pm) {
  pm.addPass(te::createConvertTEToLinalg());
  pm.addPass(createCanonicalizerPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Kernels write their results into caller-provided buffers.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::BufferDeallocationPipelineOptions deallocation;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
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
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  // Static shapes: kernel arguments are bare data pointers.
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::te::buildLowerToCPUPipeline(OpPassManager &pm) {
  // Plugins first: the ops they lower are gone before the native lowering.
  pm.addPass(createTEInsertChecks());
  pm.addPass(createTEDispatch());
  pm.addPass(createTEMaterializeChecks());
  buildCPUTargetPipeline(pm);
}

void mlir::te::buildLowerToCPUReferencePipeline(OpPassManager &pm) {
  // The reference refuses bad index operands exactly as the kernels do.
  pm.addPass(createTEInsertChecks());
  pm.addPass(createTEDecomposeReference());
  pm.addPass(createTEMaterializeChecks());
  buildCPUTargetPipeline(pm);
}

void mlir::te::registerPipelines() {
  PassPipelineRegistration<>(
      "te-lower-cpu",
      "Lower te ops to the LLVM dialect for the host CPU (te -> linalg -> "
      "bufferized loops -> llvm)",
      buildLowerToCPUPipeline);
  PassPipelineRegistration<>(
      "te-lower-cpu-reference",
      "te-lower-cpu with te-decompose-reference first: the dense reference "
      "formulation that te-run --check compares against",
      buildLowerToCPUReferencePipeline);
}
