//===- CUDATarget.h - The built-in cuda target ------------------*- C++ -*-===//
//
// NVIDIA GPUs through MLIR's NVVM target: te ops become gpu kernels
// (te/Conversion/TEToGPU), the kernels NVVM and PTX, ptxas from the CUDA
// toolkit makes cubins, and the kernel module is a fatbin (the cubin for
// the arch plus its PTX, which newer GPUs compile when they load it) with
// the manifest as the global `te_kernel_manifest`. The host side of each
// entry point becomes the manifest's steps (manifest version 4): the
// kernels it launches, in order, with their geometry and the temporaries
// between them. Nothing CUDA is linked: the toolkit is used as files, the
// driver by the runtime's cuda device.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_CUDA_CUDATARGET_H
#define TE_TARGET_CUDA_CUDATARGET_H

#include "te/Target/Target.h"

#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace mlir::te {

/// Registers the cuda target (idempotent; also done when the library
/// loads).
void registerCUDATarget();

/// The archs code is generated for: sm_80, sm_86, sm_89, sm_90 and sm_90a.
const std::vector<std::string> &getSupportedCUDAArchs();

/// The arch compiles are for: te-lower-target's `arch=` option, else
/// TE_CUDA_ARCH, for ahead-of-time compiles (an error names the supported
/// ones if it is not one of them); else for the GPU of the runtime's cuda
/// device as the JIT reports it (TargetRegistry::setDeviceArch; sm_90a for
/// Hopper, the closest supported arch of its major version for Ampere and
/// Ada, sm_90, whose PTX newer GPUs compile, beyond; an error for GPUs
/// older than sm_80); else, with no GPU known, sm_80, whose PTX every
/// newer GPU compiles at load. The compiler never opens a device.
/// `isDefault`, if given, says whether the arch is only that default.
FailureOr<std::string> getCUDAArch(std::string *error = nullptr,
                                   bool *isDefault = nullptr);

/// The CUDA toolkit whose ptxas and fatbinary make the binaries:
/// TE_CUDA_PATH, else CUDA_HOME, else /usr/local/cuda.
std::string getCUDAToolkitPath();

/// The passes from a dispatched te module (GPU launches on tensors) to
/// what the serializer takes: bufferization, then the kernels' gpu.modules
/// lowered to NVVM for `arch`.
void buildCUDATargetPipeline(OpPassManager &pm, StringRef arch);

/// Registers the cuda pipeline's own passes (te-lower-to-cuda-libraries,
/// te-host-copies-to-gpu, te-cuda-manifest-module) and the cuda GPU target
/// of convert-te-to-gpu's target= option, so that the pipeline that
/// --dump-pass-pipeline prints replays and each stage runs alone.
void registerCUDAPipelinePasses();

} // namespace mlir::te

#endif // TE_TARGET_CUDA_CUDATARGET_H
