//===- TEToLinalgInternal.h - Shared by the host lowering files -*- C++ -*-===//
#ifndef TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H
#define TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H

#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>
#include <string>

namespace mlir::te {

/// The parts of getCPUUnsupportedReason that concern attention.
std::optional<std::string>
getAttentionUnsupportedReason(AttentionOpInterface op);

/// An scf.forall over [0, n) for each n of `upperBounds`, with `outputs` as
/// its shared outputs.
scf::ForallOp createForall(OpBuilder &b, Location loc,
                           ArrayRef<int64_t> upperBounds, ValueRange outputs);

/// A unit of the target that computes dot products of bf16 pairs with f32
/// accumulation: dst[i] = acc[i] + a[2i] b[2i] + a[2i+1] b[2i+1] for 16
/// accumulators. The products of two bf16 are exact in f32, so scores
/// computed this way are as accurate as f32 FMAs on the widened inputs, at
/// half the instructions. The attention lowering uses one for bf16 scores
/// when the target names it (convert-te-to-linalg's dot-unit option);
/// the units of an instruction set live in their own file.
class BF16PairDotUnit {
public:
  virtual ~BF16PairDotUnit();
  /// The name the dot-unit option gives it.
  virtual StringRef getName() const = 0;
  /// `acc` (vector<16xf32>) plus the pair dot products of `a` and `b`
  /// (vector<32xbf16> each).
  virtual Value emitDot(OpBuilder &b, Location loc, Value acc, Value lhs,
                        Value rhs) const = 0;
};

/// The unit called `name`, or null if there is none of that name.
const BF16PairDotUnit *getBF16PairDotUnit(StringRef name);

/// The names getBF16PairDotUnit knows, comma-separated, for error messages.
std::string getBF16PairDotUnitNames();

/// AVX512-BF16's vdpbf16ps (X86DotUnits.cpp).
const BF16PairDotUnit &getAVX512BF16DotUnit();

/// A unit of the target that multiplies bf16 matrices in tile registers
/// with f32 accumulation: C += A B for C of getRows() x getColumns() f32,
/// A of getRows() x getK() bf16 and B of getK() x getColumns() bf16. In
/// memory, A's rows are getK() contiguous elements; B is stored as getK() / 2
/// rows of column pairs, element (t, 2 j + e) being B(2 t + e, j), as the
/// GEMM packs B for pair dots. A tile's rows lie a stride apart: the stride
/// of the buffer's second innermost dimension. The products of two bf16 are
/// exact in f32. The host GEMM uses it for bf16 and FP8 operands when the
/// target names it (convert-te-to-linalg's tile-unit option); the units of
/// an instruction set live in their own file.
class BF16TileUnit {
public:
  virtual ~BF16TileUnit();
  /// The name the tile-unit option gives it.
  virtual StringRef getName() const = 0;
  virtual int64_t getRows() const = 0;
  virtual int64_t getColumns() const = 0;
  virtual int64_t getK() const = 0;
  /// A C tile of zeros.
  virtual Value emitZero(OpBuilder &b, Location loc) const = 0;
  /// The A tile at `indices` of `buffer` (a bf16 memref).
  virtual Value emitLoadA(OpBuilder &b, Location loc, Value buffer,
                          ValueRange indices) const = 0;
  /// The B tile (column pairs) at `indices` of `buffer`.
  virtual Value emitLoadB(OpBuilder &b, Location loc, Value buffer,
                          ValueRange indices) const = 0;
  /// acc + a b.
  virtual Value emitMultiply(OpBuilder &b, Location loc, Value acc, Value a,
                             Value bTile) const = 0;
  /// Stores C tile `acc` at `indices` of `buffer` (an f32 memref).
  virtual void emitStore(OpBuilder &b, Location loc, Value acc, Value buffer,
                         ValueRange indices) const = 0;
};

/// The tile unit called `name`, or null if there is none of that name.
const BF16TileUnit *getBF16TileUnit(StringRef name);

/// The names getBF16TileUnit knows, comma-separated, for error messages.
std::string getBF16TileUnitNames();

/// AMX-BF16's tdpbf16ps on 16x32 bf16 tiles (X86DotUnits.cpp).
const BF16TileUnit &getAMXBF16TileUnit();

/// The register micro-kernel of the host GEMM (GemmLowering.cpp): `rows`
/// rows of op(A) by `vectors` vectors of `lanes` f32 accumulators, either
/// bf16 pair dots on a BF16PairDotUnit (bf16 and FP8 operands, two K
/// elements a step), f32 FMAs (one a step), or tiles of a BF16TileUnit
/// (bf16 and FP8 operands, `rows` x `vectors * lanes` of tiles, whose sums
/// leave the tiles as vectors of `lanes`).
struct HostGemmKernel {
  enum class Kind { PairDot, FMA, Tile };
  Kind kind = Kind::FMA;
  const BF16PairDotUnit *unit = nullptr;
  const BF16TileUnit *tileUnit = nullptr;
  int64_t rows = 0, vectors = 0, lanes = 0;

  int64_t getColumns() const { return vectors * lanes; }
  /// Elements of K a packed row holds per row or column: pairs, or one.
  int64_t getKStep() const { return kind == Kind::FMA ? 1 : 2; }
  /// The element type the micro-kernel reads: bf16 or f32.
  Type getOperandType(MLIRContext *context) const;
  /// What --explain says about it.
  std::string describe() const;
};

/// The micro-kernel for operands of type `element`: tiles of `tileUnit`
/// when it is not null and the operands are bf16 or FP8, else pair dots on
/// `unit` when it is not null and they are, else f32 FMAs on vectors of
/// `lanes`.
HostGemmKernel chooseHostGemmKernel(Type element, const BF16PairDotUnit *unit,
                                    const BF16TileUnit *tileUnit,
                                    int64_t lanes);

/// The f32 product op(A) x op(B) of `op` (operands `a`, `b` and their
/// scales as converted values), with MXFP8 and block scales applied and
/// per_tensor scales not: an [M', N'] tensor, M' >= M and N' >= N, whose
/// [0, M) x [0, N) corner is the product.
Value buildHostGemmProduct(OpBuilder &b, Location loc, ScaledMatmulOp op,
                           Value a, Value bValue, Value aScaleInv,
                           Value bScaleInv, const HostGemmKernel &kernel);

/// The f32 products of a te.grouped_matmul (operands as converted values):
/// `product` holds each group's rows in panels of its own, and row r of A
/// (and D) is row `productRow[r]` of it, in group `rowGroup[r]` (index
/// tensors [T]). Per_tensor scales are not applied.
struct HostGroupedGemmProduct {
  Value product, productRow, rowGroup;
};
HostGroupedGemmProduct
buildHostGroupedGemmProduct(OpBuilder &b, Location loc, GroupedMatmulOp op,
                            Value a, Value bValue, Value splits,
                            Value aScaleInv, Value bScaleInv,
                            const HostGemmKernel &kernel);

/// `value` (static shape) viewed as 2-D [prod(leading dims), last dim].
Value viewAs2D(OpBuilder &b, Location loc, Value value);

/// The inverse of viewAs2D: the 2-D `matrix` as `type`.
Value viewAs(OpBuilder &b, Location loc, Value matrix, RankedTensorType type);

/// te.norm and te.norm_backward as row reductions and elementwise passes
/// in f32 (NormLowering.cpp).
void populateNormLoweringPatterns(RewritePatternSet &patterns);

/// `body(args)` (f32) over [N, H] loops, the inputs read through `maps`,
/// folded by `combine(accumulator, value)` from `init`: per row (over H;
/// an f32 [N] of `size` = N) when `perRow`, else per column (over the N
/// rows; an f32 [H] of `size` = H).
Value reduceOf(
    OpBuilder &b, Location loc, bool perRow, int64_t size, double init,
    ValueRange inputs, ArrayRef<AffineMap> maps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine);

/// reduceOf's sums. The additions may be reassociated (`reassoc`), so that
/// the compiler splits a row's sum over vector lanes, as TE's kernels
/// split it over a warp's threads; each row is still summed by one thread
/// in one order, whatever the thread count.
Value sumOf(OpBuilder &b, Location loc, bool perRow, int64_t size,
            ValueRange inputs, ArrayRef<AffineMap> maps,
            function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// The sum sumOf uses: `acc + value` with `reassoc`.
Value addReassociable(OpBuilder &b, Location loc, Value acc, Value value);

/// An elementwise function of `inputs` (read through `maps`) over `shape`,
/// of element type `type`.
Value mapElements(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type type, ValueRange inputs, ArrayRef<AffineMap> maps,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// te.activation and te.activation_backward as elementwise passes in f32,
/// dbias as column sums (ActivationLowering.cpp).
void populateActivationLoweringPatterns(RewritePatternSet &patterns);

/// te.rope and te.rope_backward: cos/sin tables, token positions, then one
/// elementwise pass (RopeLowering.cpp).
void populateRopeLoweringPatterns(RewritePatternSet &patterns);

/// te.cross_entropy and te.cross_entropy_backward: row reductions and
/// elementwise passes (CrossEntropyLowering.cpp).
void populateCrossEntropyLoweringPatterns(RewritePatternSet &patterns);

/// How an op whose output may be quantized asks for it (te.norm,
/// te.activation, te.activation_backward; see QuantizedOutputLayout).
struct QuantizedOutputRequest {
  QuantizedOutputLayout layout;
  ScalingModeAttr mode; // null: no quantized output
  QuantizeUsageAttr usage;
  BoolAttr pow2Scales;
  FloatAttr amaxEpsilon;
  Value scale;
  ResultRange results;

  template <typename OpT>
  static QuantizedOutputRequest of(OpT op, Value scale) {
    return {op.getLayout(),         op.getQuantizeAttr(),    op.getUsageAttr(),
            op.getPow2ScalesAttr(), op.getAmaxEpsilonAttr(), scale,
            op->getResults()};
  }
};

/// Appends the [out], [quantized...], [amax] results `request` asks for.
/// `compute(element)` builds the output's 2-D view with that element type
/// (f32 values rounded once); `type` is the output's shape with the type a
/// rounded output has when it is not a result (the input's). As the ops
/// state: per_tensor without the output casts the f32 values, the other
/// cases the rounded output; the amax is of the f32 values.
void emitQuantizableOutput(OpBuilder &b, Location loc,
                           const QuantizedOutputRequest &request,
                           RankedTensorType type,
                           function_ref<Value(Type)> compute,
                           SmallVectorImpl<Value> &results);

/// Lanes of the row kernels' vectors (buildAmax's rows, the fused
/// quantize, the norm's rows): one AVX-512 register of f32 or i32.
constexpr int64_t kAmaxLanes = 16;

/// How many vector accumulators a row reduction over `width` elements
/// (a multiple of kAmaxLanes) takes: 4, 2 or 1, as many as divide the row,
/// so that the additions of one do not wait on the last. Accumulator a of
/// k takes the vectors a, a + k, ...
inline int64_t getRowAccumulators(int64_t width) {
  return width % (4 * kAmaxLanes) == 0   ? 4
         : width % (2 * kAmaxLanes) == 0 ? 2
                                         : 1;
}

/// The vector<kAmaxLanes x f32> of the 2-D `matrix` at (row, col).
Value readLanesF32(OpBuilder &b, Location loc, Value matrix, Value row,
                   Value col);

/// emitAmaxBits on the kAmaxLanes f32 of `x`: the bits of |x|, NaN as 0.
Value emitAmaxBitsOfLanes(OpBuilder &b, Location loc, Value x);

/// A zero vector<kAmaxLanes x i32>, the start of a vector amax.
Value emitZeroAmaxBitsVector(OpBuilder &b, Location loc);

/// The max of the i32 `rowMax` [rows] (bits of |x|), as an f32 scalar
/// tensor: the second step of a two-step amax.
Value reduceRowMaxima(OpBuilder &b, Location loc, Value rowMax);

/// Row slices of 2-D tensors, the body of forEachRowInParallel.
using RowBody = function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                Value row, ValueRange slices)>;

/// An scf.forall over the rows [0, rows) of the 2-D `outputs` ([rows, w]
/// each): `body` gets a row's index and its slices (tensor<w x T>) and
/// returns them written. Returns the outputs.
SmallVector<Value> forEachRowInParallel(OpBuilder &b, Location loc,
                                        int64_t rows, ValueRange outputs,
                                        RowBody body);

/// `scalar` written into a row's slice of a [rows, 1] output of
/// forEachRowInParallel (in place: no allocation per row).
Value writeRowScalar(OpBuilder &b, Location loc, Value scalar, Value slice);

/// te.quantize's scale_inv of a per-tensor `scale` (f32 scalar tensor):
/// 1 / scale, in f32 as TE computes it.
Value buildScaleInv(OpBuilder &b, Location loc, Value scale);

/// te.attention as online-softmax loops over rows (AttentionLowering.cpp);
/// bf16 scores on `dotUnit` when it is not null.
void populateAttentionLoweringPatterns(RewritePatternSet &patterns,
                                       const BF16PairDotUnit *dotUnit);

} // namespace mlir::te

#endif // TE_LIB_CONVERSION_TETOLINALG_TETOLINALGINTERNAL_H
