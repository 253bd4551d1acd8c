//===- GPUHostPlan.h - GPU entry points as manifest steps -------*- C++ -*-===//
//
// What every GPU target's serializer shares, whatever the vendor: after the
// pipeline, an entry point is a host function that only allocates
// temporaries, launches kernels (gpu.launch_func) and calls library
// functions (te/Conversion/TECommon/LibraryCall.h). planGPUHostSteps turns
// each into the manifest's `temp`, `step` and `call` lines (te/Runtime/
// Module.h), and mergeGPUKernelModules puts every kernel into one
// gpu.module with the manifest as the global te_kernel_manifest, ready for
// the vendor's serialization (NVVM's for the cuda target; ROCDL's for a
// ROCm one).
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_GPUHOSTPLAN_H
#define TE_TARGET_GPUHOSTPLAN_H

#include "te/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::te {

/// `manifest` (formatKernelManifest's text) with the temporaries and steps
/// of each entry of `lowered`, read from its host function and written
/// through te/ABI/Manifest.h. What a host
/// function does besides allocating, launching and calling library
/// functions is an error at that op naming `targetName`.
FailureOr<std::string> planGPUHostSteps(ModuleOp lowered,
                                        ArrayRef<KernelEntry> entries,
                                        StringRef manifest,
                                        StringRef targetName);

/// Moves the kernels of every gpu.module of `module` into the first (their
/// names are unique: each module's are prefixed by its contents' hash;
/// repeated declarations are kept once) and adds `manifest` to it as the
/// NUL-terminated global te_kernel_manifest in `addressSpace`, the device's
/// global memory (1 on NVPTX and AMDGPU).
LogicalResult mergeGPUKernelModules(ModuleOp module, StringRef manifest,
                                    StringRef targetName,
                                    unsigned addressSpace = 1);

} // namespace mlir::te

#endif // TE_TARGET_GPUHOSTPLAN_H
