//===- KernelBuilder.h - Building one te op's GPU kernels -------*- C++ -*-===//
//
// Shared by the op families of the GPU lowering: the gpu.module that holds
// one op's kernels, their launches on the host side, and the loops and
// reductions every elementwise or reducing kernel is made of.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TETOGPU_KERNELBUILDER_H
#define TE_LIB_CONVERSION_TETOGPU_KERNELBUILDER_H

#include "te/Conversion/TEToGPU/MMALayout.h"
#include "te/Conversion/TEToGPU/TEToGPU.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>

namespace mlir::te::gpu_lowering {

/// Threads per block of the elementwise and reducing kernels.
constexpr int64_t kBlockSize = 256;

/// Blocks of kBlockSize threads for `items` work items, at most enough to
/// fill any current GPU several times over (1024): the kernels loop over
/// the rest with the whole grid, and fewer blocks mean fewer atomics.
int64_t blocksFor(int64_t items);

/// The kernels of one te op and their launches. Kernels are added first;
/// finish() names the module after its contents (identical kernels of two
/// ops share one module) and places it in the op's module; launches come
/// after that, on the host side, before the op.
class KernelSet {
public:
  /// `family` prefixes the module's name ("amax", "quantize").
  KernelSet(Operation *op, StringRef family, const GPUTargetInfo &target);

  /// A kernel taking `arguments`, with workgroup (shared) memory buffers of
  /// `workgroup` types; the builder is left at the start of its body, whose
  /// gpu.return is already there.
  gpu::GPUFuncOp addKernel(OpBuilder &b, StringRef name, TypeRange arguments,
                           TypeRange workgroup = {});

  void finish();

  /// Launches `kernel` (added to this set, after finish()) on a 1-D grid.
  void launch(OpBuilder &host, gpu::GPUFuncOp kernel, int64_t gridX,
              int64_t blockX, ValueRange operands);
  /// Launches `kernel` on a 2-D grid of 2-D blocks.
  void launch(OpBuilder &host, gpu::GPUFuncOp kernel,
              std::array<int64_t, 2> grid, std::array<int64_t, 2> block,
              ValueRange operands);

  const GPUTargetInfo &getTarget() const { return target; }
  /// The module the kernels go into (before finish(): for globals they
  /// read).
  gpu::GPUModuleOp getModule() const { return module; }

private:
  Operation *op;
  std::string family;
  const GPUTargetInfo &target;
  OwningOpRef<gpu::GPUModuleOp> owned;
  gpu::GPUModuleOp module;
};

/// A buffer of the tensor `value` for the kernels to read.
Value readBuffer(OpBuilder &host, Location loc, Value value);
/// A fresh buffer for an output of `type`.
Value allocateOutput(OpBuilder &host, Location loc, RankedTensorType type);
/// The tensor of an output buffer the kernels have written.
Value outputTensor(OpBuilder &host, Location loc, Value buffer,
                   RankedTensorType type);
/// Replaces `op` by the tensors of `buffers`, the kernels' outputs in the
/// order of its results (created where `rewriter` inserts).
void replaceWithOutputs(RewriterBase &rewriter, Operation *op,
                        ArrayRef<Value> buffers);
/// The memref type a kernel argument of tensor `type` has.
MemRefType bufferType(RankedTensorType type);
/// The memref type a kernel argument for the ranked tensor `value` has.
MemRefType bufferTypeOf(Value value);

Value indexConstant(OpBuilder &b, Location loc, int64_t value);
Value i32Constant(OpBuilder &b, Location loc, int64_t value);

/// `buffer` (static shape, rank >= 1) as a 1-D memref.
Value flatten(OpBuilder &b, Location loc, Value buffer);

/// blockIdx.x * blockDim.x + threadIdx.x and gridDim.x * blockDim.x.
Value globalThreadIndex(OpBuilder &b, Location loc);
Value globalThreadCount(OpBuilder &b, Location loc);

/// for (i = global thread; i < count; i += all threads) body(i, acc),
/// carrying `init` through the iterations (may be null for none). Returns
/// the carried value, or null.
Value gridStrideLoop(
    OpBuilder &b, Location loc, int64_t count, Value init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> body);

/// Runs `body` in thread 0 of the block only.
void ifFirstThread(OpBuilder &b, Location loc,
                   function_ref<void(OpBuilder &, Location)> body);

/// `amax_init(amax)`: sets the rank-0 f32 `amax` to 0, the launch before
/// kernels raise it with atomicMaxBits.
gpu::GPUFuncOp addAmaxInit(KernelSet &set, OpBuilder &b, Location loc);

/// `combine` over each group of `lanes` consecutive lanes of a warp (a
/// power of two up to the warp size), by a butterfly of XOR shuffles with
/// offsets lanes / 2, ..., 2, 1: every lane of the group gets the result.
/// All lanes of the warp must call it.
Value reduceOverLanes(OpBuilder &b, Location loc, Value value, unsigned lanes,
                      unsigned warpSize,
                      function_ref<Value(Value, Value)> combine);

/// The workgroup memory type for the block reduction: one i32 per warp of
/// a block of `threads`.
MemRefType reductionScratchType(MLIRContext *context, unsigned warpSize,
                                int64_t threads = kBlockSize);

/// The unsigned maximum of `bits` over the block's threads: a butterfly
/// over each warp's lanes, then over the warps' results through `scratch`
/// (reductionScratchType). Every thread of the block must call it; thread 0
/// gets the block's maximum.
Value blockMaxBits(OpBuilder &b, Location loc, Value bits, Value scratch,
                   unsigned warpSize, int64_t threads = kBlockSize);

/// Atomically raises the f32 at `amax` (a rank-0 f32 memref holding a
/// non-negative value) to the amax bit pattern `bits` (see emitAmaxBits):
/// for non-negative floats the unsigned order of the bits is their order.
void atomicMaxBits(OpBuilder &b, Location loc, Value amax, Value bits);

/// The index constant `value` as an IndexExpr.
inline IndexExpr indexExpr(OpBuilder &b, Location loc, int64_t value) {
  return {&b, loc, indexConstant(b, loc, value)};
}

/// Number of elements of one 16-byte vector access of `elementType` when
/// `count` elements split into them evenly, else 1.
int64_t vectorWidth(Type elementType, int64_t count);

/// Loads `width` consecutive elements from the 1-D `buffer` at element
/// `index` (a vector.load, or a scalar load for width 1) and returns them
/// as scalars.
SmallVector<Value> loadElements(OpBuilder &b, Location loc, Value buffer,
                                Value index, int64_t width);
/// loadElements, each element extended to f32.
SmallVector<Value> loadF32(OpBuilder &b, Location loc, Value buffer,
                           Value index, int64_t width);
/// Stores `values` at element `index` of the 1-D `buffer`.
void storeElements(OpBuilder &b, Location loc, Value buffer, Value index,
                   ArrayRef<Value> values);

/// The matrix unit te's tiled kernels (flash attention, the GEMM) are
/// built on: MMALayout.h's tilings are for the 16x8x16 warp unit, with the
/// unit's thread group a warp (the kernels' row reductions shuffle over
/// warps). Why `target` cannot run them (`name` is the op), or nullopt.
std::optional<std::string>
getTiledUnitUnsupportedReason(StringRef name, const GPUTargetInfo &target);
/// That unit; only when getTiledUnitUnsupportedReason has no reason.
const MatrixUnit &getTiledUnit(const GPUTargetInfo &target);

/// The registered GPU target a pass's `target=` option names (`spec`), or
/// null with the reason reported at `op`, prefixed by `passName`.
std::shared_ptr<const GPUTargetInfo>
lookUpPassTarget(Operation *op, StringRef passName, StringRef spec);

//===----------------------------------------------------------------------===//
// Row kernels (RowKernels.cpp): one warp per row of a [rows, width] view
//===----------------------------------------------------------------------===//

/// for (row = the warp's index in the grid; row < rows; row += the grid's
/// warps) body(row, lane). Every lane of a warp takes the same rows, so the
/// body may reduce over the warp (warpSum, warpMax). Launch it on
/// blocksFor(rows * warpSize) blocks of kBlockSize threads.
void forEachRowOfWarp(
    OpBuilder &b, Location loc, int64_t rows, unsigned warpSize,
    function_ref<void(OpBuilder &, Location, Value row, Value lane)> body);

/// for (v = lane; v < count; v += warpSize), carrying `inits` through the
/// iterations: `body(v, carried)` returns the next carried values. Returns
/// the last ones (each lane its own).
SmallVector<Value> forEachLaneItem(
    OpBuilder &b, Location loc, Value lane, int64_t count, unsigned warpSize,
    ValueRange inits,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
        body);

/// The f32 sum and maximum (NaN-propagating, arith.maximumf) over a warp's
/// lanes; every lane gets the result.
Value warpSum(OpBuilder &b, Location loc, Value value, unsigned warpSize);
Value warpMax(OpBuilder &b, Location loc, Value value, unsigned warpSize);

/// Runs `body` in lane 0 of the warp only.
void ifFirstLane(OpBuilder &b, Location loc, Value lane,
                 function_ref<void(OpBuilder &, Location)> body);

/// The column sums of a [rows, columns] buffer of any float type, in f32
/// and in a fixed order (each chunk of rows, then the chunks), rounded once
/// into a [columns] output: the weight gradients of te.norm_backward and
/// te.activation_backward's dbias. add() before the set's finish(),
/// launch() after it.
class ColumnSums {
public:
  /// Kernels `<name>_partial` and `<name>_finalize` summing `sourceType`
  /// (any shape whose last dimension is the columns) into `outType`.
  static ColumnSums add(KernelSet &set, OpBuilder &b, Location loc,
                        StringRef name, MemRefType sourceType,
                        MemRefType outType);
  /// Launches them: `source` summed into `out` (through an f32 temporary
  /// of one row of sums per chunk).
  void launch(OpBuilder &host, Location loc, Value source, Value out) const;

private:
  KernelSet *set = nullptr;
  gpu::GPUFuncOp partial, finalize;
  int64_t rows = 0, columns = 0, chunks = 0;
};

/// An op's quantizable output (te.norm, te.activation,
/// te.activation_backward) on a GPU, as QuantizedOutputLayout and the ops'
/// descriptions define it: the op's kernels write the output in the
/// element types getElementTypes() lists, each into its own buffer of the
/// output's shape; replaceOp() then finishes the quantized results and the
/// amax with te.quantize and te.amax of those buffers, lowered by the FP8
/// kernels (per_tensor without the high-precision output casts the f32
/// values, every other mode the rounded ones; the amax is of the f32
/// values).
class QuantizableOutput {
public:
  /// `shape` is the output's shape and `rounded` the type a rounded output
  /// has when it is not a result (the input's); `wantF32` asks for the f32
  /// values even where no result needs them (dbias sums them).
  QuantizableOutput(const QuantizedOutputLayout &layout, ResultRange results,
                    ScalingModeAttr mode, QuantizeUsageAttr usage,
                    BoolAttr pow2Scales, FloatAttr amaxEpsilon, Value scale,
                    ArrayRef<int64_t> shape, Type rounded, bool wantF32);
  template <typename OpT>
  static QuantizableOutput of(OpT op, Value scale, ArrayRef<int64_t> shape,
                              Type rounded, bool wantF32 = false) {
    return QuantizableOutput(op.getLayout(), op->getResults(),
                             op.getQuantizeAttr(), op.getUsageAttr(),
                             op.getPow2ScalesAttr(), op.getAmaxEpsilonAttr(),
                             scale, shape, rounded, wantF32);
  }

  /// The element types the kernels write, in order.
  ArrayRef<Type> getElementTypes() const { return elements; }
  /// Fresh buffers for them, in that order (kept for replaceOp).
  SmallVector<Value> allocate(OpBuilder &host, Location loc);
  /// The buffer of the f32 values (after allocate), or null.
  Value getF32Buffer() const { return f32 >= 0 ? buffers[f32] : Value(); }

  /// Replaces `op` by [output], [quantized...], [amax] and then the tensors
  /// of `trailing` (buffers of its remaining results, in order), lowering
  /// the te.quantize and te.amax that finish them.
  LogicalResult replaceOp(RewriterBase &rewriter, Operation *op,
                          ArrayRef<Value> trailing,
                          const GPUTargetInfo &target);

private:
  RankedTensorType typeOf(Type element) const;

  QuantizedOutputLayout layout;
  ResultRange results;
  ScalingModeAttr mode;
  QuantizeUsageAttr usage;
  BoolAttr pow2Scales;
  FloatAttr amaxEpsilon;
  Value scale;
  SmallVector<int64_t> shape;
  SmallVector<Type> elements;
  int roundedIndex = -1, f32 = -1;
  bool castFromF32 = false;
  SmallVector<Value> buffers;
};

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//
//
// Each lowering builds its kernels and creates the host side (buffers,
// launches, the op's replacement) with `rewriter`, whose insertion point
// lowerTEOpToGPU has put before the op.

/// FP8 scaling and quantization: amax, compute_scale,
/// update_delayed_scaling, quantize and dequantize.
bool isFP8Op(Operation *op);
std::optional<std::string> getFP8UnsupportedReason(Operation *op);
LogicalResult lowerFP8Op(RewriterBase &rewriter, Operation *op,
                         const GPUTargetInfo &target);
/// The block scaling modes of te.quantize and te.dequantize.
LogicalResult lowerBlockQuantize(RewriterBase &rewriter, QuantizeOp op,
                                 const GPUTargetInfo &target);
LogicalResult lowerBlockDequantize(RewriterBase &rewriter, DequantizeOp op,
                                   const GPUTargetInfo &target);

/// te.activation and te.activation_backward as elementwise kernels.
bool isActivationOp(Operation *op);
LogicalResult lowerActivationOp(RewriterBase &rewriter, Operation *op,
                                const GPUTargetInfo &target);

/// te.norm and te.norm_backward as row kernels (NormKernels.cpp).
bool isNormOp(Operation *op);
LogicalResult lowerNormOp(RewriterBase &rewriter, Operation *op,
                          const GPUTargetInfo &target);

/// te.cross_entropy and its backward (CrossEntropyKernels.cpp).
bool isCrossEntropyOp(Operation *op);
LogicalResult lowerCrossEntropyOp(RewriterBase &rewriter, Operation *op,
                                  const GPUTargetInfo &target);

/// te.rope and te.rope_backward (RopeKernels.cpp).
bool isRopeOp(Operation *op);
LogicalResult lowerRopeOp(RewriterBase &rewriter, Operation *op,
                          const GPUTargetInfo &target);

/// Why the flash-attention kernels cannot take `op` (forward or backward)
/// on `target`, or nullopt.
std::optional<std::string>
getAttentionUnsupportedReason(AttentionOpInterface op,
                              const GPUTargetInfo &target);
/// te.attention (forward) as a flash-attention kernel on the matrix units.
LogicalResult lowerAttention(RewriterBase &rewriter, AttentionOp op,
                             const GPUTargetInfo &target);
/// te.attention_backward as flash-attention kernels (the gradients from P
/// recomputed tile by tile).
LogicalResult lowerAttentionBackward(RewriterBase &rewriter,
                                     AttentionBackwardOp op,
                                     const GPUTargetInfo &target);

/// te.scaled_matmul on the matrix units.
std::optional<std::string>
getMatmulUnsupportedReason(ScaledMatmulOp op, const GPUTargetInfo &target);
LogicalResult lowerScaledMatmul(RewriterBase &rewriter, ScaledMatmulOp op,
                                const GPUTargetInfo &target);
/// te.grouped_matmul (MatmulKernels.cpp): the GEMM kernel with one group's
/// rows per block.
std::optional<std::string>
getGroupedMatmulUnsupportedReason(GroupedMatmulOp op,
                                  const GPUTargetInfo &target);
LogicalResult lowerGroupedMatmul(RewriterBase &rewriter, GroupedMatmulOp op,
                                 const GPUTargetInfo &target);

} // namespace mlir::te::gpu_lowering

#endif // TE_LIB_CONVERSION_TETOGPU_KERNELBUILDER_H
