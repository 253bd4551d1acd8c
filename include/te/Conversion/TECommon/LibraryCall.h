//===- LibraryCall.h - te ops as calls of a device's libraries --*- C++ -*-===//
//
// Some te ops are not kernels a target generates but calls the runtime's
// device makes: cuBLASLt's matmul on the cuda device, the collectives on
// every device. Their lowering is a call of a private declaration that says
// which function the device runs and with which parameters; the target's
// serializer writes it as a `call` line of the kernel manifest
// (te/Runtime/Module.h).
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_LIBRARYCALL_H
#define TE_CONVERSION_TECOMMON_LIBRARYCALL_H

#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <string>

namespace mlir::te {

/// The attributes that make a private function declaration a call of a
/// library the runtime's device runs (cuBLASLt, cuDNN, collectives; a
/// vendor's for a plugin target): the function's name for the device and
/// its parameters.
constexpr const char *kLibraryFunctionAttr = "te.library_function";
constexpr const char *kLibraryParametersAttr = "te.library_parameters";

/// Replaces `op` by a call of `library(parameters)` on buffers: `inputs`
/// (null ones skipped) read-only, then one fresh allocation per result that
/// the call writes. The callee is a private declaration carrying
/// kLibraryFunctionAttr and kLibraryParametersAttr, named after the
/// library, its parameters and operand types (one per distinct call), for
/// the target's serializer.
LogicalResult lowerToLibraryCall(RewriterBase &rewriter, Operation *op,
                                 ArrayRef<Value> inputs, StringRef library,
                                 StringRef parameters);

/// The library attributes of `callee` if it is such a declaration.
std::optional<std::pair<StringRef, StringRef>>
getLibraryFunction(Operation *callee);

/// Whether `op` is a te collective (all_reduce, all_gather, reduce_scatter,
/// all_to_all, permute) or asks its group for its rank (group_rank): ops
/// the runtime runs over a process group.
bool isCollective(Operation *op);

/// Why `op` (a te collective) cannot become a library call, or nullopt.
std::optional<std::string> getCollectiveUnsupportedReason(Operation *op);

/// Replaces a te collective by its library call (`collective.<op>` with the
/// group, dtype, shape and attributes as parameters; `collective.group_rank`
/// with the group's only), which the runtime runs on every device with
/// collectives (te/Runtime/Collective.h).
LogicalResult lowerCollective(RewriterBase &rewriter, Operation *op);

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_LIBRARYCALL_H
