//===- NormLowering.cpp - te.norm and te.norm_backward on the host --------===//
//
// LayerNorm and RMSNorm as TE states them (te.norm's description), in f32,
// the input viewed as [N, H]. For H a multiple of 16, row kernels in
// vectors: the forward per row (statistics, then one pass that writes z,
// the fused FP8 cast and the amax), the backward per block of rows (dx and
// partial column sums of dgamma and dbeta). Otherwise row sums over H and
// elementwise passes as linalg.generic ops, the rows parallel, and the
// backward's column sums over the rows.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"

#include <array>
#include <cassert>

using namespace mlir;
using namespace mlir::te;

namespace {

using utils::IteratorType;

/// The [N, H] view of a normalized tensor and its sizes.
struct RowsView {
  Value matrix;
  int64_t rows, hidden;
};

RowsView viewRows(OpBuilder &b, Location loc, Value value) {
  Value matrix = viewAs2D(b, loc, value);
  auto type = cast<RankedTensorType>(matrix.getType());
  return {matrix, type.getDimSize(0), type.getDimSize(1)};
}

/// A [N] statistic as `type` (the leading dimensions), or back.
Value reshapeRows(OpBuilder &b, Location loc, Value value,
                  RankedTensorType type) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from.getShape() == type.getShape())
    return value;
  ReassociationIndices all;
  for (int64_t i = 0; i < std::max(from.getRank(), type.getRank()); ++i)
    all.push_back(i);
  if (from.getRank() < type.getRank())
    return tensor::ExpandShapeOp::create(b, loc, type, value,
                                         ArrayRef<ReassociationIndices>{all});
  return tensor::CollapseShapeOp::create(b, loc, type, value,
                                         ArrayRef<ReassociationIndices>{all});
}

/// Maps of the [N, H] loops: an [N, H] operand, a [N] one (a row's), a [H]
/// one (a column's).
struct NormMaps {
  AffineMap full, row, column;
  explicit NormMaps(MLIRContext *ctx)
      : full(AffineMap::getMultiDimIdentityMap(2, ctx)),
        row(AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx)),
        column(AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx)) {}
};

Value sumRows(OpBuilder &b, Location loc, int64_t rows, ValueRange inputs,
              ArrayRef<AffineMap> maps,
              function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  return sumOf(b, loc, /*perRow=*/true, rows, inputs, maps, body);
}

Value sumColumns(OpBuilder &b, Location loc, int64_t hidden, ValueRange inputs,
                 ArrayRef<AffineMap> maps,
                 function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  return sumOf(b, loc, /*perRow=*/false, hidden, inputs, maps, body);
}

Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}

// TE's formulas (te.norm's description), on f32 scalars or vectors: the
// general form and the row kernels both build them here, so that their
// values agree bit for bit.

/// rsigma = 1 / sqrt(sum / H + epsilon) of a row's f32 sum (a scalar).
Value rsigmaOf(OpBuilder &b, Location loc, Value sum, int64_t hidden,
               float epsilon) {
  Value mean = arith::DivFOp::create(
      b, loc, sum, emitF32Constant(b, loc, static_cast<double>(hidden)));
  Value shifted =
      arith::AddFOp::create(b, loc, mean, emitF32Constant(b, loc, epsilon));
  return arith::DivFOp::create(b, loc, emitF32Constant(b, loc, 1.0),
                               math::SqrtOp::create(b, loc, shifted));
}

/// xhat = rsigma (x - mu); rsigma x for RMSNorm (`mu` null).
Value xhatOf(OpBuilder &b, Location loc, Value x, Value mu, Value rsigma) {
  return mul(b, loc, rsigma, mu ? sub(b, loc, x, mu) : x);
}

/// z = g xhat [+ beta] (g: gamma, plus 1 if zero-centered).
Value zOf(OpBuilder &b, Location loc, Value g, Value xhat, Value beta) {
  Value z = mul(b, loc, g, xhat);
  return beta ? arith::AddFOp::create(b, loc, z, beta) : z;
}

/// dx = rsigma (dy - (slope xhat + offset)) [+ add], slope = sum(dy xhat)
/// / H and offset = sum(dy) / H (null for RMSNorm).
Value dxOf(OpBuilder &b, Location loc, Value rsigma, Value dy, Value xhat,
           Value slope, Value offset, Value add) {
  Value correction = mul(b, loc, slope, xhat);
  if (offset)
    correction = arith::AddFOp::create(b, loc, correction, offset);
  Value dx = mul(b, loc, rsigma, sub(b, loc, dy, correction));
  return add ? arith::AddFOp::create(b, loc, dx, add) : dx;
}

/// rsigmaOf per row.
Value rowsRsigma(OpBuilder &b, Location loc, Value sums, int64_t hidden,
                 float epsilon) {
  auto type = cast<RankedTensorType>(sums.getType());
  AffineMap identity = b.getMultiDimIdentityMap(1);
  return mapElements(b, loc, type.getShape(), b.getF32Type(), sums, {identity},
                     [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                       return rsigmaOf(b, loc, args[0], hidden, epsilon);
                     });
}

/// gamma in f32, plus 1 for zero-centered gamma (in f32, as TE adds it).
Value emitGamma(OpBuilder &b, Location loc, Value gamma, bool zeroCentered) {
  Value g = emitExtToF32(b, loc, gamma);
  return zeroCentered
             ? arith::AddFOp::create(b, loc, g, emitF32Constant(b, loc, 1.0))
             : g;
}

/// What te.norm's row kernel reads: x's [N, H] view, gamma, beta (or
/// null) and the attributes.
struct NormRows {
  RowsView x;
  Value gamma, beta;
  bool layerNorm, zeroCentered;
  float epsilon;
};

/// What it writes besides the statistics: z rounded to `z` (null: none);
/// TE's fused cast of z's f32 values, cast(z_f32 * scale) to `fp8` (null:
/// none); the amax of z's f32 values.
struct NormRowOutputs {
  Type z;
  FloatType fp8;
  Value scale;
  bool amax = false;
};

/// z and data as [N, H], amax as an f32 scalar tensor, mu (LayerNorm) and
/// rsigma as [N]; null where not asked for.
struct NormRowResults {
  Value z, data, amax, mu, rsigma;
};

/// Vector helpers over rows of H elements, H a multiple of kAmaxLanes: the
/// row kernels' common part.
class RowVectors {
protected:
  RowVectors(MLIRContext *ctx, int64_t hidden)
      : hidden(hidden),
        lanes(VectorType::get({kAmaxLanes}, Float32Type::get(ctx))) {}

  Value splat(OpBuilder &b, Location loc, Value scalar) const {
    return vector::BroadcastOp::create(b, loc, lanes, scalar);
  }
  /// The kAmaxLanes f32 of a [H] operand at `col`.
  Value readColumns(OpBuilder &b, Location loc, Value operand,
                    Value col) const {
    Type element = getElementTypeOrSelf(operand.getType());
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
    Value read = vector::TransferReadOp::create(
        b, loc, VectorType::get({kAmaxLanes}, element), operand,
        ValueRange{col}, zero, ArrayRef<bool>{true});
    return emitExtToF32(b, loc, read);
  }
  /// A loop over the row, `vectors` vectors a step, from `init`; `step`
  /// returns the carried values updated.
  scf::ForOp
  overRow(OpBuilder &b, Location loc, ValueRange init, int64_t vectors,
          function_ref<SmallVector<Value>(OpBuilder &, Location, Value col,
                                          ValueRange carried)>
              step) const {
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    return scf::ForOp::create(
        b, loc, index(0), index(hidden), index(vectors * kAmaxLanes), init,
        [&](OpBuilder &b, Location loc, Value col, ValueRange carried) {
          scf::YieldOp::create(b, loc, step(b, loc, col, carried));
        });
  }
  /// A zero vector of kAmaxLanes f32.
  Value zeroLanes(OpBuilder &b, Location loc) const {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(lanes, b.getF32FloatAttr(0.0f)));
  }
  /// The sum of the lanes of `v`, in order.
  static Value sumLanes(OpBuilder &b, Location loc, Value v) {
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v);
  }
  /// The sum of a row's accumulators (getRowAccumulators: a power of two
  /// of them), added pairwise, then its lanes in order: one fixed order.
  static Value sumAccumulators(OpBuilder &b, Location loc,
                               ValueRange accumulators) {
    SmallVector<Value> partial(accumulators);
    while (partial.size() > 1) {
      SmallVector<Value> halved;
      for (size_t i = 0; i < partial.size(); i += 2)
        halved.push_back(
            arith::AddFOp::create(b, loc, partial[i], partial[i + 1]));
      partial = halved;
    }
    return sumLanes(b, loc, partial[0]);
  }

  int64_t hidden;
  VectorType lanes;
};

/// te.norm's forward as one kernel over the rows of x, H a multiple of
/// kAmaxLanes: per row (in parallel), the statistics from vectors of
/// kAmaxLanes (a pass over the row for LayerNorm's mean, one for the
/// squares; the row stays in the cache) and then one pass that computes
/// z's f32 values and feeds each output from them: TE's fused norm + cast
/// + amax in one sweep. The sums have one fixed order (sumRow), whatever
/// the thread count.
/// Every path of te.norm for such rows takes z from here, so the fused
/// and unfused outputs round the same f32 values.
class NormRowKernel : RowVectors {
public:
  explicit NormRowKernel(const NormRows &norm)
      : RowVectors(norm.gamma.getContext(), norm.x.hidden), norm(norm) {}

  NormRowResults build(OpBuilder &b, Location loc,
                       const NormRowOutputs &outputs) const;

private:
  /// The f32 sum of term(x) over row `row`.
  Value sumRow(OpBuilder &b, Location loc, Value row,
               function_ref<Value(OpBuilder &, Location, Value)> term) const;
  /// The row's values written: [z], [data], [amax bits], [mu], rsigma.
  SmallVector<Value> emitRow(OpBuilder &b, Location loc, Value row,
                             ValueRange slices, const NormRowOutputs &outputs,
                             Value scale) const;

  const NormRows &norm;
};

Value NormRowKernel::sumRow(
    OpBuilder &b, Location loc, Value row,
    function_ref<Value(OpBuilder &, Location, Value)> term) const {
  // k accumulators (getRowAccumulators), added pairwise, then the lanes
  // in order.
  int64_t k = getRowAccumulators(hidden);
  SmallVector<Value> init(k, zeroLanes(b, loc));
  scf::ForOp loop =
      overRow(b, loc, init, k,
              [&](OpBuilder &b, Location loc, Value col, ValueRange acc) {
                SmallVector<Value> sums;
                for (int64_t a = 0; a < k; ++a) {
                  Value at = arith::AddIOp::create(
                      b, loc, col,
                      arith::ConstantIndexOp::create(b, loc, a * kAmaxLanes));
                  Value x = readLanesF32(b, loc, norm.x.matrix, row, at);
                  sums.push_back(
                      arith::AddFOp::create(b, loc, acc[a], term(b, loc, x)));
                }
                return sums;
              });
  return sumAccumulators(b, loc, loop.getResults());
}

SmallVector<Value> NormRowKernel::emitRow(OpBuilder &b, Location loc, Value row,
                                          ValueRange slices,
                                          const NormRowOutputs &outputs,
                                          Value scale) const {
  Value count = emitF32Constant(b, loc, static_cast<double>(hidden));
  Value mu;
  if (norm.layerNorm)
    mu = arith::DivFOp::create(
        b, loc,
        sumRow(b, loc, row, [](OpBuilder &, Location, Value x) { return x; }),
        count);
  Value muLanes = mu ? splat(b, loc, mu) : Value();
  Value squares = sumRow(b, loc, row, [&](OpBuilder &b, Location loc, Value x) {
    Value v = muLanes ? sub(b, loc, x, muLanes) : x;
    return mul(b, loc, v, v);
  });
  Value rsigma = rsigmaOf(b, loc, squares, hidden, norm.epsilon);

  // z's f32 values, vector by vector, into the outputs.
  SmallVector<Value> init;
  if (outputs.amax)
    init.push_back(emitZeroAmaxBitsVector(b, loc));
  size_t firstSlice = init.size();
  unsigned next = 0;
  if (outputs.z)
    init.push_back(slices[next++]);
  if (outputs.fp8)
    init.push_back(slices[next++]);
  Value rsigmaLanes = splat(b, loc, rsigma);
  Value scaleLanes = scale ? splat(b, loc, scale) : Value();
  Value one =
      norm.zeroCentered ? splat(b, loc, emitF32Constant(b, loc, 1.0)) : Value();
  scf::ForOp loop = overRow(
      b, loc, init, /*vectors=*/1,
      [&](OpBuilder &b, Location loc, Value col, ValueRange carried) {
        Value x = readLanesF32(b, loc, norm.x.matrix, row, col);
        Value g = readColumns(b, loc, norm.gamma, col);
        if (one)
          g = arith::AddFOp::create(b, loc, g, one);
        Value out =
            zOf(b, loc, g, xhatOf(b, loc, x, muLanes, rsigmaLanes),
                norm.beta ? readColumns(b, loc, norm.beta, col) : Value());
        SmallVector<Value> updated;
        if (outputs.amax)
          updated.push_back(arith::MaxUIOp::create(
              b, loc, carried[0], emitAmaxBitsOfLanes(b, loc, out)));
        auto write = [&](Value lanesOut, Value slice) {
          updated.push_back(vector::TransferWriteOp::create(
                                b, loc, lanesOut, slice, ValueRange{col},
                                ArrayRef<bool>{true})
                                .getResult());
        };
        unsigned k = firstSlice;
        if (outputs.z)
          write(emitTruncFromF32(b, loc, out, outputs.z), carried[k++]);
        if (outputs.fp8)
          write(emitF32ToFP8(b, loc, mul(b, loc, out, scaleLanes), outputs.fp8),
                carried[k++]);
        return updated;
      });

  SmallVector<Value> results(loop.getResults().drop_front(firstSlice));
  auto store = [&](Value scalar) {
    results.push_back(writeRowScalar(b, loc, scalar, slices[next++]));
  };
  if (outputs.amax)
    store(vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXUI,
                                      loop.getResult(0)));
  if (mu)
    store(mu);
  store(rsigma);
  return results;
}

NormRowResults NormRowKernel::build(OpBuilder &b, Location loc,
                                    const NormRowOutputs &outputs) const {
  int64_t n = norm.x.rows, h = norm.x.hidden;
  Type f32 = b.getF32Type();
  SmallVector<Value> inits;
  auto empty = [&](int64_t width, Type element) {
    inits.push_back(
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{n, width}, element));
  };
  if (outputs.z)
    empty(h, outputs.z);
  if (outputs.fp8)
    empty(h, outputs.fp8);
  if (outputs.amax)
    empty(1, b.getI32Type());
  if (norm.layerNorm)
    empty(1, f32);
  empty(1, f32);
  Value scale;
  if (outputs.fp8)
    scale = tensor::ExtractOp::create(b, loc, outputs.scale, ValueRange{});
  SmallVector<Value> rows = forEachRowInParallel(
      b, loc, n, inits,
      [&](OpBuilder &b, Location loc, Value index, ValueRange slices) {
        return emitRow(b, loc, index, slices, outputs, scale);
      });

  auto column = [&](Value matrix) -> Value {
    auto type = cast<RankedTensorType>(matrix.getType());
    return tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({n}, type.getElementType()), matrix,
        ArrayRef<ReassociationIndices>{{0, 1}});
  };
  NormRowResults results;
  unsigned next = 0;
  if (outputs.z)
    results.z = rows[next++];
  if (outputs.fp8)
    results.data = rows[next++];
  if (outputs.amax)
    results.amax = reduceRowMaxima(b, loc, column(rows[next++]));
  if (norm.layerNorm)
    results.mu = column(rows[next++]);
  results.rsigma = column(rows[next]);
  return results;
}

struct NormOpLowering : OpConversionPattern<NormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    RowsView x = viewRows(b, loc, adaptor.getInput());
    if (x.hidden % kAmaxLanes == 0)
      return lowerByRows(op, adaptor, rewriter, x);
    NormMaps maps(op.getContext());
    bool layerNorm = op.isLayerNorm(), zeroCentered = op.getZeroCenteredGamma();
    float epsilon = op.getEpsilon().convertToFloat();
    double hidden = static_cast<double>(x.hidden);

    // The statistics: two passes over each row for LayerNorm.
    Value mu;
    if (layerNorm) {
      Value sums = sumRows(b, loc, x.rows, x.matrix, {maps.full},
                           [](OpBuilder &b, Location loc, ValueRange args) {
                             return emitExtToF32(b, loc, args[0]);
                           });
      mu = mapElements(b, loc, {x.rows}, b.getF32Type(), sums,
                       {b.getMultiDimIdentityMap(1)},
                       [&](OpBuilder &b, Location loc, ValueRange args) {
                         return arith::DivFOp::create(
                             b, loc, args[0], emitF32Constant(b, loc, hidden));
                       });
    }
    SmallVector<Value> statInputs = {x.matrix};
    SmallVector<AffineMap> statMaps = {maps.full};
    if (mu) {
      statInputs.push_back(mu);
      statMaps.push_back(maps.row);
    }
    Value squares = sumRows(b, loc, x.rows, statInputs, statMaps,
                            [&](OpBuilder &b, Location loc, ValueRange args) {
                              Value v = emitExtToF32(b, loc, args[0]);
                              if (args.size() > 1)
                                v = sub(b, loc, v, args[1]);
                              return mul(b, loc, v, v);
                            });
    Value rsigma = rowsRsigma(b, loc, squares, x.hidden, epsilon);

    // z = g * rsigma * (x - mu) + beta in f32, stored as `element`.
    SmallVector<Value> inputs = {x.matrix, rsigma, adaptor.getGamma()};
    SmallVector<AffineMap> inputMaps = {maps.full, maps.row, maps.column};
    int muIndex = -1, betaIndex = -1;
    if (mu) {
      muIndex = inputs.size();
      inputs.push_back(mu);
      inputMaps.push_back(maps.row);
    }
    if (Value beta = adaptor.getBeta()) {
      betaIndex = inputs.size();
      inputs.push_back(beta);
      inputMaps.push_back(maps.column);
    }
    auto normalized = [&](Type element) {
      return mapElements(
          b, loc, {x.rows, x.hidden}, element, inputs, inputMaps,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            Value xhat =
                xhatOf(b, loc, emitExtToF32(b, loc, args[0]),
                       muIndex >= 0 ? args[muIndex] : Value(), args[1]);
            Value out =
                zOf(b, loc, emitGamma(b, loc, args[2], zeroCentered), xhat,
                    betaIndex >= 0 ? emitExtToF32(b, loc, args[betaIndex])
                                   : Value());
            return emitTruncFromF32(b, loc, out, element);
          });
    };

    SmallVector<Value> results;
    emitQuantizableOutput(
        b, loc, QuantizedOutputRequest::of(op, adaptor.getScale()),
        cast<RankedTensorType>(op.getInput().getType()), normalized, results);
    if (mu)
      results.push_back(reshapeRows(
          b, loc, mu, cast<RankedTensorType>(op.getMean().getType())));
    results.push_back(reshapeRows(
        b, loc, rsigma, cast<RankedTensorType>(op.getRsigma().getType())));
    rewriter.replaceOp(op, results);
    return success();
  }

  /// Rows that split into whole vectors: NormRowKernel, with TE's fused
  /// per-tensor cast (and the plain output with its amax) in its sweep;
  /// the other quantized outputs quantize the z it writes.
  LogicalResult lowerByRows(NormOp op, OpAdaptor adaptor,
                            ConversionPatternRewriter &rewriter,
                            const RowsView &x) const {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    NormRows norm{x,
                  adaptor.getGamma(),
                  adaptor.getBeta(),
                  op.isLayerNorm(),
                  op.getZeroCenteredGamma(),
                  op.getEpsilon().convertToFloat()};
    NormRowKernel kernel(norm);
    QuantizedOutputRequest request =
        QuantizedOutputRequest::of(op, adaptor.getScale());
    ResultRange quantized = op.getQuantized();
    SmallVector<Value> results;
    NormRowResults rows;
    if (!request.mode) {
      auto zType = cast<RankedTensorType>(op.getOutput().getType());
      rows = kernel.build(b, loc,
                          {zType.getElementType(), FloatType(), Value(),
                           request.layout.hasAmax});
      results.push_back(viewAs(b, loc, rows.z, zType));
      if (rows.amax)
        results.push_back(rows.amax);
    } else if (request.mode.getValue() == ScalingMode::per_tensor &&
               !request.layout.hasOutput &&
               op.getUsage() == QuantizeUsage::rowwise &&
               quantized.size() == 3) {
      // [data, scale_inv, amax], as te.quantize gives them.
      auto dataType = cast<RankedTensorType>(quantized[0].getType());
      rows = kernel.build(b, loc,
                          {Type(), cast<FloatType>(dataType.getElementType()),
                           adaptor.getScale(), /*amax=*/true});
      results.push_back(viewAs(b, loc, rows.data, dataType));
      results.push_back(buildScaleInv(b, loc, adaptor.getScale()));
      results.push_back(rows.amax);
    } else {
      emitQuantizableOutput(
          b, loc, request, cast<RankedTensorType>(op.getInput().getType()),
          [&](Type element) {
            // Once: with a quantize mode there is no amax output, so
            // emitQuantizableOutput wants either z or its f32 values.
            assert(!rows.rsigma && "z built twice");
            rows = kernel.build(b, loc, {element, FloatType(), Value(), false});
            return rows.z;
          },
          results);
    }
    if (rows.mu)
      results.push_back(reshapeRows(
          b, loc, rows.mu, cast<RankedTensorType>(op.getMean().getType())));
    results.push_back(reshapeRows(
        b, loc, rows.rsigma, cast<RankedTensorType>(op.getRsigma().getType())));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// What te.norm_backward's row kernel reads: x's [N, H] view, dz and add
/// (or null) as [N, H], rsigma and mu (or null) as [N], gamma.
struct NormBackwardRows {
  RowsView x;
  Value dz, add, rsigma, mu, gamma;
  bool zeroCentered;
  Type dxElement;
};

/// te.norm_backward as one kernel over blocks of rows, H a multiple of
/// kAmaxLanes. Blocks of R rows run in parallel (R divides N and depends on
/// N alone, so the sums have one order whatever the thread count); per row,
/// in vectors of kAmaxLanes, one pass sums dy * xhat (and dy for
/// LayerNorm) and one writes dx and adds dz * xhat (and dz) into the
/// block's partial column sums, a row of [N / R, H] f32 that stays in the
/// cache. dgamma and dbeta are then the column sums of the partials: the
/// [N, H] operands are read twice per row from memory instead of five
/// times, and never down their columns.
class NormBackwardRowKernel : RowVectors {
public:
  NormBackwardRowKernel(const NormBackwardRows &norm, int64_t blockRows)
      : RowVectors(norm.gamma.getContext(), norm.x.hidden), norm(norm),
        blockRows(blockRows) {}

  /// The rows of a block for N rows, or 0 where the blocks would be too
  /// many (N with no divisor near N / 64), which the general form takes.
  static int64_t chooseBlockRows(int64_t rows) {
    if (rows == 0)
      return 0;
    for (int64_t r = (rows + kBlocks - 1) / kBlocks; r >= 1; --r)
      if (rows % r == 0)
        return rows / r <= 16 * kBlocks ? r : 0;
    return 0;
  }

  /// dx [N, H] and the partial sums of dz * xhat and (LayerNorm) dz, each
  /// [N / R, H] f32.
  SmallVector<Value> build(OpBuilder &b, Location loc) const;

private:
  /// About this many blocks: enough for every thread, few partial rows.
  static constexpr int64_t kBlocks = 64;

  /// A row's rsigma and mu (null for RMSNorm) in every lane, and 1 for
  /// zero-centered gamma (else null).
  struct RowLanes {
    Value rsigma, mu, one;
  };
  /// xhat, dy and dz (f32) at (row, col).
  std::array<Value, 3> terms(OpBuilder &b, Location loc, Value row, Value col,
                             const RowLanes &lanes) const;
  /// Row `row` of the block: dx written into `dx` (the block's [R, H]) at
  /// `local`, the partial sums updated. Returns them.
  SmallVector<Value> emitRow(OpBuilder &b, Location loc, Value row, Value local,
                             ValueRange carried) const;

  const NormBackwardRows &norm;
  int64_t blockRows;
};

std::array<Value, 3> NormBackwardRowKernel::terms(OpBuilder &b, Location loc,
                                                  Value row, Value col,
                                                  const RowLanes &lanes) const {
  Value x = readLanesF32(b, loc, norm.x.matrix, row, col);
  Value dz = readLanesF32(b, loc, norm.dz, row, col);
  Value g = readColumns(b, loc, norm.gamma, col);
  if (lanes.one)
    g = arith::AddFOp::create(b, loc, g, lanes.one);
  // dy = g dz, as the general form.
  return {xhatOf(b, loc, x, lanes.mu, lanes.rsigma), mul(b, loc, g, dz), dz};
}

SmallVector<Value> NormBackwardRowKernel::emitRow(OpBuilder &b, Location loc,
                                                  Value row, Value local,
                                                  ValueRange carried) const {
  RowLanes lanes;
  lanes.rsigma = splat(
      b, loc, tensor::ExtractOp::create(b, loc, norm.rsigma, ValueRange{row}));
  if (norm.mu)
    lanes.mu = splat(
        b, loc, tensor::ExtractOp::create(b, loc, norm.mu, ValueRange{row}));
  if (norm.zeroCentered)
    lanes.one = splat(b, loc, emitF32Constant(b, loc, 1.0));
  // Per row: sum(dy * xhat), and for LayerNorm sum(dy), each in k
  // accumulators: one chain of dependent additions would bound the pass.
  int64_t k = getRowAccumulators(hidden);
  int64_t count = norm.mu ? 2 : 1;
  SmallVector<Value> init(count * k, zeroLanes(b, loc));
  scf::ForOp sums =
      overRow(b, loc, init, k,
              [&](OpBuilder &b, Location loc, Value col, ValueRange acc) {
                SmallVector<Value> next(acc);
                for (int64_t a = 0; a < k; ++a) {
                  Value at = arith::AddIOp::create(
                      b, loc, col,
                      arith::ConstantIndexOp::create(b, loc, a * kAmaxLanes));
                  auto [xhat, dy, dz] = terms(b, loc, row, at, lanes);
                  next[a] = arith::AddFOp::create(b, loc, acc[a],
                                                  mul(b, loc, dy, xhat));
                  if (norm.mu)
                    next[k + a] = arith::AddFOp::create(b, loc, acc[k + a], dy);
                }
                return next;
              });
  // dx = rsigma * (dy - (sum(dy xhat) / H xhat + sum(dy) / H)) [+ add].
  Value inv = emitF32Constant(b, loc, 1.0 / static_cast<double>(hidden));
  ValueRange results = sums.getResults();
  Value slope = splat(
      b, loc, mul(b, loc, sumAccumulators(b, loc, results.take_front(k)), inv));
  Value offset =
      norm.mu ? splat(b, loc,
                      mul(b, loc,
                          sumAccumulators(b, loc, results.drop_front(k)), inv))
              : Value();
  scf::ForOp pass = overRow(
      b, loc, carried, 1,
      [&](OpBuilder &b, Location loc, Value col, ValueRange blockValues) {
        auto [xhat, dy, dz] = terms(b, loc, row, col, lanes);
        Value out =
            dxOf(b, loc, lanes.rsigma, dy, xhat, slope, offset,
                 norm.add ? readLanesF32(b, loc, norm.add, row, col) : Value());
        SmallVector<Value> next = {
            vector::TransferWriteOp::create(
                b, loc, emitTruncFromF32(b, loc, out, norm.dxElement),
                blockValues[0], ValueRange{local, col}, ArrayRef<bool>{true})
                .getResult()};
        // The block's partial column sums, read and written in place.
        auto accumulate = [&](Value partial, Value term) {
          Value sum = arith::AddFOp::create(
              b, loc, readColumns(b, loc, partial, col), term);
          next.push_back(vector::TransferWriteOp::create(b, loc, sum, partial,
                                                         ValueRange{col},
                                                         ArrayRef<bool>{true})
                             .getResult());
        };
        accumulate(blockValues[1], mul(b, loc, dz, xhat));
        if (norm.mu)
          accumulate(blockValues[2], dz);
        return next;
      });
  return SmallVector<Value>(pass.getResults());
}

SmallVector<Value> NormBackwardRowKernel::build(OpBuilder &b,
                                                Location loc) const {
  int64_t n = norm.x.rows, blocks = n / blockRows;
  Type f32 = b.getF32Type();
  SmallVector<Value> outputs = {tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{n, hidden}, norm.dxElement)};
  for (int i = 0; i < (norm.mu ? 2 : 1); ++i)
    outputs.push_back(tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{blocks, hidden}, f32));
  scf::ForallOp forall = createForall(b, loc, {blocks}, outputs);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value block = forall.getInductionVar(0);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value first = arith::MulIOp::create(b, loc, block, index(blockRows));
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  SmallVector<SmallVector<OpFoldResult>> offsets, sizes;
  SmallVector<Value> slices;
  for (auto [i, shared] : llvm::enumerate(forall.getRegionIterArgs())) {
    // dx: the block's rows; a partial sum: the block's row, zeroed.
    bool dx = i == 0;
    offsets.push_back({dx ? first : block, b.getIndexAttr(0)});
    sizes.push_back(
        {b.getIndexAttr(dx ? blockRows : 1), b.getIndexAttr(hidden)});
    Type element = cast<RankedTensorType>(shared.getType()).getElementType();
    auto type = dx ? RankedTensorType::get({blockRows, hidden}, element)
                   : RankedTensorType::get({hidden}, element);
    Value slice = tensor::ExtractSliceOp::create(
        b, loc, type, shared, offsets.back(), sizes.back(), strides);
    if (!dx)
      slice =
          linalg::FillOp::create(b, loc, emitF32Constant(b, loc, 0.0), slice)
              .getResult(0);
    slices.push_back(slice);
  }
  auto rowsLoop = scf::ForOp::create(
      b, loc, index(0), index(blockRows), index(1), slices,
      [&](OpBuilder &b, Location loc, Value local, ValueRange carried) {
        Value row = arith::AddIOp::create(b, loc, first, local);
        scf::YieldOp::create(b, loc, emitRow(b, loc, row, local, carried));
      });
  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  for (auto [i, written] : llvm::enumerate(rowsLoop.getResults()))
    tensor::ParallelInsertSliceOp::create(b, loc, written,
                                          forall.getRegionIterArgs()[i],
                                          offsets[i], sizes[i], strides);
  return SmallVector<Value>(forall.getResults());
}

struct NormBackwardOpLowering : OpConversionPattern<NormBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NormBackwardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    RowsView x = viewRows(b, loc, adaptor.getInput());
    Value dz = viewAs2D(b, loc, adaptor.getDz());
    auto rowsType = RankedTensorType::get({x.rows}, b.getF32Type());
    Value rsigma = reshapeRows(b, loc, adaptor.getRsigma(), rowsType);
    Value mu = adaptor.getMu() ? reshapeRows(b, loc, adaptor.getMu(), rowsType)
                               : Value();
    NormMaps maps(op.getContext());
    bool zeroCentered = op.getZeroCenteredGamma();
    double hidden = static_cast<double>(x.hidden);
    auto dxType = cast<RankedTensorType>(op.getDx().getType());
    Type weight = op.getGamma().getType().getElementType();
    auto roundTo = [&](Value sums) {
      return mapElements(b, loc, {x.hidden}, weight, sums,
                         {b.getMultiDimIdentityMap(1)},
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           return emitTruncFromF32(b, loc, args[0], weight);
                         });
    };

    int64_t blockRows = NormBackwardRowKernel::chooseBlockRows(x.rows);
    if (x.hidden % kAmaxLanes == 0 && blockRows > 0) {
      Value add =
          adaptor.getAdd() ? viewAs2D(b, loc, adaptor.getAdd()) : Value();
      NormBackwardRows rows{x,
                            dz,
                            add,
                            rsigma,
                            mu,
                            adaptor.getGamma(),
                            zeroCentered,
                            dxType.getElementType()};
      SmallVector<Value> made =
          NormBackwardRowKernel(rows, blockRows).build(b, loc);
      SmallVector<Value> results = {viewAs(b, loc, made[0], dxType)};
      for (Value partial : ArrayRef<Value>(made).drop_front())
        results.push_back(
            roundTo(sumColumns(b, loc, x.hidden, partial, {maps.full},
                               [](OpBuilder &b, Location loc, ValueRange args) {
                                 return args[0];
                               })));
      rewriter.replaceOp(op, results);
      return success();
    }

    // Operands of every pass: x, dz, rsigma, gamma[, mu]; xhat and dy are
    // recomputed where they are needed.
    SmallVector<Value> inputs = {x.matrix, dz, rsigma, adaptor.getGamma()};
    SmallVector<AffineMap> inputMaps = {maps.full, maps.full, maps.row,
                                        maps.column};
    if (mu) {
      inputs.push_back(mu);
      inputMaps.push_back(maps.row);
    }
    auto xhatAt = [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
      return xhatOf(b, loc, emitExtToF32(b, loc, args[0]),
                    mu ? args[4] : Value(), args[2]);
    };
    auto dyOf = [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
      return mul(b, loc, emitGamma(b, loc, args[3], zeroCentered),
                 emitExtToF32(b, loc, args[1]));
    };

    // Per row: mean(dy * xhat), and for LayerNorm mean(dy).
    Value dyXhat =
        sumRows(b, loc, x.rows, inputs, inputMaps,
                [&](OpBuilder &b, Location loc, ValueRange args) {
                  return mul(b, loc, dyOf(b, loc, args), xhatAt(b, loc, args));
                });
    Value dySum;
    if (mu)
      dySum = sumRows(b, loc, x.rows, inputs, inputMaps, dyOf);

    // dx = rsigma * (dy - (mean(dy xhat) xhat + mean(dy))) [+ add].
    SmallVector<Value> dxInputs(inputs);
    SmallVector<AffineMap> dxMaps(inputMaps);
    int dySumIndex = -1, addIndex = -1;
    int dyXhatIndex = dxInputs.size();
    dxInputs.push_back(dyXhat);
    dxMaps.push_back(maps.row);
    if (dySum) {
      dySumIndex = dxInputs.size();
      dxInputs.push_back(dySum);
      dxMaps.push_back(maps.row);
    }
    if (Value add = adaptor.getAdd()) {
      addIndex = dxInputs.size();
      dxInputs.push_back(viewAs2D(b, loc, add));
      dxMaps.push_back(maps.full);
    }
    Value dx = mapElements(
        b, loc, {x.rows, x.hidden}, dxType.getElementType(), dxInputs, dxMaps,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value inv = emitF32Constant(b, loc, 1.0 / hidden);
          Value out = dxOf(
              b, loc, args[2], dyOf(b, loc, args), xhatAt(b, loc, args),
              mul(b, loc, args[dyXhatIndex], inv),
              dySumIndex >= 0 ? mul(b, loc, args[dySumIndex], inv) : Value(),
              addIndex >= 0 ? emitExtToF32(b, loc, args[addIndex]) : Value());
          return emitTruncFromF32(b, loc, out, dxType.getElementType());
        });

    // Over the rows: dgamma = sum(dz xhat), dbeta = sum(dz).
    SmallVector<Value> results = {viewAs(b, loc, dx, dxType)};
    results.push_back(
        roundTo(sumColumns(b, loc, x.hidden, inputs, inputMaps,
                           [&](OpBuilder &b, Location loc, ValueRange args) {
                             return mul(b, loc, emitExtToF32(b, loc, args[1]),
                                        xhatAt(b, loc, args));
                           })));
    if (op.isLayerNorm())
      results.push_back(
          roundTo(sumColumns(b, loc, x.hidden, inputs, inputMaps,
                             [](OpBuilder &b, Location loc, ValueRange args) {
                               return emitExtToF32(b, loc, args[1]);
                             })));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

Value mlir::te::reduceOf(
    OpBuilder &b, Location loc, bool perRow, int64_t size, double init,
    ValueRange inputs, ArrayRef<AffineMap> maps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  NormMaps norm(b.getContext());
  SmallVector<AffineMap> all(maps);
  all.push_back(perRow ? norm.row : norm.column);
  Value empty = tensor::EmptyOp::create(b, loc, {size}, b.getF32Type());
  Value start =
      linalg::FillOp::create(b, loc, emitF32Constant(b, loc, init), empty)
          .getResult(0);
  SmallVector<IteratorType> loops = {IteratorType::parallel,
                                     IteratorType::reduction};
  if (!perRow)
    std::swap(loops[0], loops[1]);
  return linalg::GenericOp::create(
             b, loc, start.getType(), inputs, start, all, loops,
             [&](OpBuilder &b, Location loc, ValueRange args) {
               Value term = body(b, loc, args.drop_back());
               linalg::YieldOp::create(b, loc,
                                       combine(b, loc, args.back(), term));
             })
      .getResult(0);
}

Value mlir::te::addReassociable(OpBuilder &b, Location loc, Value acc,
                                Value value) {
  return arith::AddFOp::create(b, loc, acc, value,
                               arith::FastMathFlags::reassoc)
      .getResult();
}

Value mlir::te::sumOf(
    OpBuilder &b, Location loc, bool perRow, int64_t size, ValueRange inputs,
    ArrayRef<AffineMap> maps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  return reduceOf(b, loc, perRow, size, 0.0, inputs, maps, body,
                  addReassociable);
}

Value mlir::te::mapElements(
    OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type type,
    ValueRange inputs, ArrayRef<AffineMap> maps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  Value init = tensor::EmptyOp::create(b, loc, shape, type);
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(shape.size()));
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, init, all,
             SmallVector<IteratorType>(shape.size(), IteratorType::parallel),
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(b, loc, body(b, loc, args.drop_back()));
             })
      .getResult(0);
}

void mlir::te::emitQuantizableOutput(OpBuilder &b, Location loc,
                                     const QuantizedOutputRequest &request,
                                     RankedTensorType type,
                                     function_ref<Value(Type)> compute,
                                     SmallVectorImpl<Value> &results) {
  const QuantizedOutputLayout &layout = request.layout;
  Value output = layout.getOutput(request.results);
  auto outputType =
      output ? cast<RankedTensorType>(output.getType()) : RankedTensorType();
  Type element = output ? outputType.getElementType() : type.getElementType();
  bool castFromF32 = request.mode &&
                     request.mode.getValue() == ScalingMode::per_tensor &&
                     !output;
  // The rounded output where it is a result or the quantizer's input; its
  // f32 values where the amax or per_tensor's fused cast take them.
  Value rounded, f32Values;
  if (output || (request.mode && !castFromF32))
    rounded = compute(element);
  if (layout.hasAmax || castFromF32)
    f32Values = rounded && element.isF32() ? rounded : compute(b.getF32Type());

  if (output)
    results.push_back(viewAs(b, loc, rounded, outputType));
  if (request.mode) {
    Value source = castFromF32 ? f32Values : rounded;
    source =
        viewAs(b, loc, source,
               type.clone(cast<ShapedType>(source.getType()).getElementType()));
    auto quantize = QuantizeOp::create(
        b, loc, layout.getQuantized(request.results).getTypes(), source,
        request.scale, request.mode, request.usage, request.pow2Scales,
        request.amaxEpsilon);
    llvm::append_range(results, quantize.getResults());
  }
  if (layout.hasAmax)
    results.push_back(AmaxOp::create(b, loc, f32Values).getResult());
}

void mlir::te::populateNormLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<NormOpLowering, NormBackwardOpLowering>(patterns.getContext());
}
