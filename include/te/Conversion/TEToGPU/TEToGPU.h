//===- TEToGPU.h - Lowering te ops to GPU kernels ---------------*- C++ -*-===//
//
// The GPU targets' lowering of te ops: each op becomes the launches of
// kernels (gpu.launch_func on buffers) and the kernels themselves, in a
// gpu.module of their own (gpu.func with gpu, arith, vector, memref and
// scf ops). What differs between GPU vendors (the warp size, conversion
// instructions, the target attribute of the modules) comes from a
// GPUTargetInfo, so CUDA and ROCm share this code the way MLIR's GPUToNVVM
// and GPUToROCDL share GPUCommon.
//
// The lowering works on tensors, op by op, as the dispatch asks for it:
// inputs become buffers (bufferization.to_buffer read_only), outputs fresh
// allocations that the kernels write (bufferization.to_tensor restrict), so
// that one-shot bufferization then turns the function's tensors into
// arguments, outputs and temporaries.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TETOGPU_TETOGPU_H
#define TE_CONVERSION_TETOGPU_TETOGPU_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"
#include "te/Conversion/TECommon/LibraryCall.h"
#include "te/Conversion/TEToGPU/MatrixUnit.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mlir::te {

#define GEN_PASS_DECL_CONVERTTETOGPU
#include "te/Conversion/Passes.h.inc"

/// What the GPU lowering asks of the GPU it generates code for.
class GPUTargetInfo {
public:
  virtual ~GPUTargetInfo();

  /// Threads of a warp (32 on NVIDIA GPUs, 64 on most AMD ones).
  virtual unsigned getWarpSize() const = 0;

  /// The target in messages, e.g. "cuda sm_80".
  virtual std::string getDescription() const = 0;

  /// How convert-te-to-gpu's `target=` option names it, so that a dumped
  /// pipeline replays: "<name>:<arch>" of registerGPUTargetInfo. Empty for
  /// a target that is not registered.
  virtual std::string getRegisteredSpec() const { return ""; }

  /// The matrix units the kernels may multiply on
  /// (te/Conversion/TEToGPU/MatrixUnit.h); none by default. A kernel takes
  /// the one of the shape its tiling is built for (findMatrixUnit).
  virtual ArrayRef<const MatrixUnit *> getMatrixUnits() const { return {}; }

  /// Copies `elements` consecutive elements (16 bytes in all) of the 1-D
  /// global buffer `src` at element `srcIndex` to the 1-D workgroup buffer
  /// `dst` at `dstIndex`, or zeros there when the i1 `valid` is false (the
  /// source address must still be in bounds). The copy may complete
  /// asynchronously: the copies a thread started before its last
  /// emitAsyncCommit form a group, and emitAsyncWait(n) waits until at most
  /// the n most recent groups are in flight; a barrier after that makes them
  /// visible to the block. The default copies synchronously through
  /// registers (its commit and wait do nothing), so a kernel written for
  /// asynchronous copies is correct on every target.
  virtual void emitAsyncCopy(OpBuilder &b, Location loc, Value dst,
                             Value dstIndex, Value src, Value srcIndex,
                             int64_t elements, Value valid) const;
  virtual void emitAsyncCommit(OpBuilder &b, Location loc) const {}
  virtual void emitAsyncWait(OpBuilder &b, Location loc, int pending) const {}

  /// Why code cannot be generated for this target at all (an unsupported
  /// arch, say), or nullopt. convert-te-to-gpu fails with it.
  virtual std::optional<std::string> getConfigurationError() const {
    return std::nullopt;
  }

  /// f32 -> FP8 exactly as te's codec (te/Conversion/TECommon/FP8Codec.h):
  /// round to nearest even, saturation to the largest finite value, NaN to
  /// the canonical NaN. The default is the codec's integer routine; a
  /// target with conversion instructions that give the same bits may use
  /// them.
  virtual Value emitF32ToFP8(OpBuilder &b, Location loc, Value f32Value,
                             FloatType fp8Type) const;
};

/// Makes a registered GPU target's GPUTargetInfo for `arch` ("" for the
/// target's default), or null with `*error` set.
using GPUTargetInfoFactory = std::function<std::shared_ptr<const GPUTargetInfo>(
    StringRef arch, std::string *error)>;
/// Registers the GPU target `name` for convert-te-to-gpu's and
/// te-host-copies-to-gpu's `target=` option (idempotent for one name).
void registerGPUTargetInfo(StringRef name, GPUTargetInfoFactory factory);
/// The target `spec` names ("<name>" or "<name>:<arch>"), or null with
/// `*error` saying why (naming the registered targets).
std::shared_ptr<const GPUTargetInfo> lookUpGPUTargetInfo(StringRef spec,
                                                         std::string *error);

/// `target`'s matrix unit of `shape`, or null.
const MatrixUnit *findMatrixUnit(const GPUTargetInfo &target,
                                 const MatrixUnit::Shape &shape);

/// Why the GPU lowering cannot take `op`, or nullopt if it can.
std::optional<std::string> getGPUUnsupportedReason(Operation *op,
                                                   const GPUTargetInfo &target);

/// Replaces `op` by the launches of its kernels and adds the kernels to the
/// enclosing module (which becomes a gpu.container_module). Fails with a
/// diagnostic on `op` when getGPUUnsupportedReason has a reason.
LogicalResult lowerTEOpToGPU(RewriterBase &rewriter, Operation *op,
                             const GPUTargetInfo &target);
/// lowerTEOpToGPU outside a pattern rewrite.
LogicalResult lowerTEOpToGPU(Operation *op, const GPUTargetInfo &target);

/// The patterns of convert-te-to-gpu for `target`, one per te op, grouped
/// by family (FP8 scaling and quantization, attention, the GEMM,
/// collectives). An op the GPU lowering cannot take does not match
/// (getGPUUnsupportedReason says why).
void populateTEToGPUPatterns(RewritePatternSet &patterns,
                             std::shared_ptr<const GPUTargetInfo> target);

/// lowerToLibraryCall (te/Conversion/TECommon/LibraryCall.h) outside a
/// pattern rewrite.
LogicalResult lowerToLibraryCall(Operation *op, ArrayRef<Value> inputs,
                                 StringRef library, StringRef parameters);

/// After bufferization: each copy of a buffer in an entry point (an input
/// returned, or one value returned twice) as the launch of a copy kernel,
/// since a GPU target's entry points are lists of kernel launches.
/// Registered as te-host-copies-to-gpu{target=...} (a registered GPU
/// target, as convert-te-to-gpu's).
std::unique_ptr<Pass>
createHostCopiesToGPUPass(std::shared_ptr<const GPUTargetInfo> target);
void registerHostCopiesToGPUPass();

/// convert-te-to-gpu for `target` (what a GPU target's pipeline runs).
std::unique_ptr<Pass>
createConvertTEToGPUPass(std::shared_ptr<const GPUTargetInfo> target);

} // namespace mlir::te

#endif // TE_CONVERSION_TETOGPU_TETOGPU_H
