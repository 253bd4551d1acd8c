//===- KernelManifest.h - Manifests as the compiler handles them -*- C++
//-*-===//
//
// The compiler's side of te/ABI/Manifest.h: a target that adds to the
// manifest formatKernelManifest wrote (the steps of its entries) reads it
// into the struct, changes the struct and writes it again, with failures
// reported as diagnostics.
//
// Include this header from .cpp files only: te/ABI's namespace is `te`,
// which would make `te::` ambiguous in a header read under
// `using namespace mlir`.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_KERNELMANIFEST_H
#define TE_TARGET_KERNELMANIFEST_H

#include "te/ABI/Manifest.h"
#include "te/Target/Target.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::te {

/// Reads `text`, a manifest the compiler wrote (formatKernelManifest's)
/// for the module's `entries`, one manifest entry each, in order; a
/// failure is an error at `loc`.
FailureOr<::te::abi::Manifest>
readKernelManifest(StringRef text, ArrayRef<KernelEntry> entries, Location loc);

/// Writes `manifest`; one that the runtime would not read back as written
/// is an error at `loc`.
FailureOr<std::string> writeKernelManifest(const ::te::abi::Manifest &manifest,
                                           Location loc);

} // namespace mlir::te

#endif // TE_TARGET_KERNELMANIFEST_H
