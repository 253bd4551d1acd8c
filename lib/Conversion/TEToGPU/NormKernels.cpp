//===- NormKernels.cpp - te.norm and te.norm_backward on a GPU ------------===//
//
// One warp per row of the [N, H] view, its lanes taking 16-byte vectors of
// the row and combining their f32 sums by XOR shuffles, in the passes the
// ops' descriptions state: LayerNorm's mean, then the sum of squares of
// x - mu, then z = g * rsigma * (x - mu) + beta written in every element
// type the results need. The quantized outputs and z's amax are finished
// by the FP8 kernels from those buffers (QuantizableOutput). The backward's
// warp writes dx from the row's two sums and keeps dz * xhat in f32 for
// dgamma; the weight gradients are column sums in a fixed order.
//
// TE's fused norm + cast writes the FP8 data in the norm's own pass; here
// the cast is a second pass over the written output.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

/// f32 arithmetic in a kernel body.
struct F32Math {
  OpBuilder &b;
  Location loc;

  Value constant(double v) { return emitF32Constant(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  /// g as the norms use it: gamma in f32, plus 1 when zero-centered.
  Value gamma(Value g, bool zeroCentered) {
    Value wide = emitExtToF32(b, loc, g);
    return zeroCentered ? add(wide, constant(1.0)) : wide;
  }
};

/// A row's vectors: `width` elements each, `count` of them in a row of
/// `hidden`.
struct RowVectors {
  int64_t hidden, width, count;

  static RowVectors of(Type element, int64_t hidden) {
    int64_t width = vectorWidth(element, hidden);
    return {hidden, width, hidden / width};
  }
  /// The first element of vector `v` of `row` in the flat [N * H] buffer,
  /// and its first column.
  std::pair<Value, Value> at(OpBuilder &b, Location loc, Value row,
                             Value v) const {
    Value column =
        arith::MulIOp::create(b, loc, v, indexConstant(b, loc, width));
    Value start =
        arith::MulIOp::create(b, loc, row, indexConstant(b, loc, hidden));
    return {arith::AddIOp::create(b, loc, start, column), column};
  }
};

/// The f32 sum over a warp's row of `term(values)` for every element, the
/// values being the row's elements of `buffers` at each vector.
Value sumOverRow(
    OpBuilder &b, Location loc, const RowVectors &vectors, Value row,
    Value lane, unsigned warpSize, ArrayRef<Value> buffers,
    function_ref<Value(F32Math &, ArrayRef<Value>, int64_t)> term) {
  SmallVector<Value> acc = forEachLaneItem(
      b, loc, lane, vectors.count, warpSize,
      ValueRange{emitF32Constant(b, loc, 0.0)},
      [&](OpBuilder &b, Location loc, Value v,
          ValueRange carried) -> SmallVector<Value> {
        auto [index, column] = vectors.at(b, loc, row, v);
        SmallVector<SmallVector<Value>> loaded;
        for (Value buffer : buffers)
          loaded.push_back(loadF32(b, loc, buffer, index, vectors.width));
        F32Math m{b, loc};
        Value sum = carried[0];
        for (int64_t k = 0; k < vectors.width; ++k) {
          SmallVector<Value> values;
          for (auto &one : loaded)
            values.push_back(one[k]);
          sum = m.add(sum, term(m, values, k));
        }
        return {sum};
      });
  return warpSum(b, loc, acc[0], warpSize);
}

LogicalResult lowerNorm(RewriterBase &rewriter, NormOp op,
                        const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  int64_t hidden = inputType.getShape().back();
  int64_t rows = hidden ? inputType.getNumElements() / hidden : 0;
  RowVectors vectors = RowVectors::of(inputType.getElementType(), hidden);
  bool layerNorm = op.isLayerNorm(), zeroCentered = op.getZeroCenteredGamma();
  bool hasBeta = static_cast<bool>(op.getBeta());
  float epsilon = op.getEpsilon().convertToFloat();
  unsigned warpSize = target.getWarpSize();
  auto output = QuantizableOutput::of(op, op.getScale(), inputType.getShape(),
                                      inputType.getElementType());

  // norm(input, gamma, [beta], outputs..., [mu], rsigma).
  KernelSet set(op, "norm", target);
  OpBuilder b(context);
  SmallVector<Type> arguments = {bufferTypeOf(op.getInput()),
                                 bufferTypeOf(op.getGamma())};
  if (hasBeta)
    arguments.push_back(bufferTypeOf(op.getBeta()));
  for (Type element : output.getElementTypes())
    arguments.push_back(bufferType(inputType.clone(element)));
  if (layerNorm)
    arguments.push_back(bufferTypeOf(op.getMean()));
  arguments.push_back(bufferTypeOf(op.getRsigma()));
  auto kernel = set.addKernel(b, "norm_forward", arguments);
  unsigned next = 0;
  Value input = flatten(b, loc, kernel.getArgument(next++));
  Value gamma = kernel.getArgument(next++);
  Value beta = hasBeta ? kernel.getArgument(next++) : Value();
  SmallVector<Value> outputs;
  for (size_t i = 0; i < output.getElementTypes().size(); ++i)
    outputs.push_back(flatten(b, loc, kernel.getArgument(next++)));
  Value mean =
      layerNorm ? flatten(b, loc, kernel.getArgument(next++)) : Value();
  Value rsigmaOut = flatten(b, loc, kernel.getArgument(next++));

  forEachRowOfWarp(
      b, loc, rows, warpSize,
      [&](OpBuilder &b, Location loc, Value row, Value lane) {
        F32Math m{b, loc};
        Value size = m.constant(static_cast<double>(hidden));
        Value mu;
        if (layerNorm)
          mu = m.div(sumOverRow(b, loc, vectors, row, lane, warpSize, {input},
                                [](F32Math &, ArrayRef<Value> x, int64_t) {
                                  return x[0];
                                }),
                     size);
        Value squares =
            sumOverRow(b, loc, vectors, row, lane, warpSize, {input},
                       [&](F32Math &m, ArrayRef<Value> x, int64_t) {
                         Value v = mu ? m.sub(x[0], mu) : x[0];
                         return m.mul(v, v);
                       });
        Value shifted = m.add(m.div(squares, size), m.constant(epsilon));
        Value rsigma =
            m.div(m.constant(1.0), math::SqrtOp::create(b, loc, shifted));
        forEachLaneItem(
            b, loc, lane, vectors.count, warpSize, ValueRange{},
            [&](OpBuilder &b, Location loc, Value v,
                ValueRange) -> SmallVector<Value> {
              F32Math m{b, loc};
              auto [index, column] = vectors.at(b, loc, row, v);
              SmallVector<Value> x =
                  loadF32(b, loc, input, index, vectors.width);
              SmallVector<Value> g =
                  loadElements(b, loc, gamma, column, vectors.width);
              SmallVector<Value> bias;
              if (beta)
                bias = loadF32(b, loc, beta, column, vectors.width);
              SmallVector<Value> z;
              for (int64_t k = 0; k < vectors.width; ++k) {
                Value y = m.mul(rsigma, mu ? m.sub(x[k], mu) : x[k]);
                Value out = m.mul(m.gamma(g[k], zeroCentered), y);
                z.push_back(beta ? m.add(out, bias[k]) : out);
              }
              for (auto [buffer, element] :
                   llvm::zip_equal(outputs, output.getElementTypes())) {
                SmallVector<Value> rounded;
                for (Value value : z)
                  rounded.push_back(emitTruncFromF32(b, loc, value, element));
                storeElements(b, loc, buffer, index, rounded);
              }
              return {};
            });
        ifFirstLane(b, loc, lane, [&](OpBuilder &b, Location loc) {
          if (mean)
            memref::StoreOp::create(b, loc, mu, mean, row);
          memref::StoreOp::create(b, loc, rsigma, rsigmaOut, row);
        });
      });
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands = {readBuffer(host, loc, op.getInput()),
                                 readBuffer(host, loc, op.getGamma())};
  if (hasBeta)
    operands.push_back(readBuffer(host, loc, op.getBeta()));
  llvm::append_range(operands, output.allocate(host, loc));
  SmallVector<Value> statistics;
  if (layerNorm)
    statistics.push_back(allocateOutput(
        host, loc, cast<RankedTensorType>(op.getMean().getType())));
  statistics.push_back(allocateOutput(
      host, loc, cast<RankedTensorType>(op.getRsigma().getType())));
  llvm::append_range(operands, statistics);
  set.launch(host, kernel, blocksFor(rows * warpSize), kBlockSize, operands);
  return output.replaceOp(rewriter, op, statistics, target);
}

LogicalResult lowerNormBackward(RewriterBase &rewriter, NormBackwardOp op,
                                const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  int64_t hidden = inputType.getShape().back();
  int64_t rows = hidden ? inputType.getNumElements() / hidden : 0;
  // Vectors as wide as the narrower of the input's and dz's types allow.
  Type dzElement = op.getDz().getType().getElementType();
  RowVectors vectors =
      RowVectors::of(dzElement.getIntOrFloatBitWidth() >
                             inputType.getElementType().getIntOrFloatBitWidth()
                         ? dzElement
                         : inputType.getElementType(),
                     hidden);
  bool layerNorm = op.isLayerNorm(), zeroCentered = op.getZeroCenteredGamma();
  bool hasAdd = static_cast<bool>(op.getAdd());
  unsigned warpSize = target.getWarpSize();
  auto dxType = cast<RankedTensorType>(op.getDx().getType());
  auto productsType = inputType.clone(Float32Type::get(context));

  // norm_backward(dz, input, rsigma, gamma, [mu], [add], dx, dz_xhat):
  // dz_xhat = dz * xhat in f32, which dgamma sums.
  KernelSet set(op, "norm_backward", target);
  OpBuilder b(context);
  SmallVector<Type> arguments = {
      bufferTypeOf(op.getDz()), bufferTypeOf(op.getInput()),
      bufferTypeOf(op.getRsigma()), bufferTypeOf(op.getGamma())};
  if (layerNorm)
    arguments.push_back(bufferTypeOf(op.getMu()));
  if (hasAdd)
    arguments.push_back(bufferTypeOf(op.getAdd()));
  arguments.push_back(bufferType(dxType));
  arguments.push_back(bufferType(productsType));
  auto kernel = set.addKernel(b, "norm_backward", arguments);
  {
    unsigned next = 0;
    Value dz = flatten(b, loc, kernel.getArgument(next++));
    Value input = flatten(b, loc, kernel.getArgument(next++));
    Value rsigmaIn = flatten(b, loc, kernel.getArgument(next++));
    Value gamma = kernel.getArgument(next++);
    Value muIn =
        layerNorm ? flatten(b, loc, kernel.getArgument(next++)) : Value();
    Value add = hasAdd ? flatten(b, loc, kernel.getArgument(next++)) : Value();
    Value dx = flatten(b, loc, kernel.getArgument(next++));
    Value products = flatten(b, loc, kernel.getArgument(next++));
    forEachRowOfWarp(
        b, loc, rows, warpSize,
        [&](OpBuilder &b, Location loc, Value row, Value lane) {
          F32Math m{b, loc};
          Value rsigma = memref::LoadOp::create(b, loc, rsigmaIn, row);
          Value mu = muIn
                         ? memref::LoadOp::create(b, loc, muIn, row).getResult()
                         : Value();
          auto xhatOf = [&](F32Math &m, Value x) {
            return m.mul(rsigma, mu ? m.sub(x, mu) : x);
          };
          // Per element: dz, x; gamma by column.
          auto dyOf = [&](F32Math &m, Value g, Value dzValue) {
            return m.mul(m.gamma(g, zeroCentered), dzValue);
          };
          // The row's sums of dy * xhat and, for LayerNorm, of dy.
          auto rowSum = [&](bool withXhat) {
            SmallVector<Value> acc = forEachLaneItem(
                b, loc, lane, vectors.count, warpSize,
                ValueRange{emitF32Constant(b, loc, 0.0)},
                [&](OpBuilder &b, Location loc, Value v,
                    ValueRange carried) -> SmallVector<Value> {
                  F32Math m{b, loc};
                  auto [index, column] = vectors.at(b, loc, row, v);
                  SmallVector<Value> d =
                      loadF32(b, loc, dz, index, vectors.width);
                  SmallVector<Value> g =
                      loadElements(b, loc, gamma, column, vectors.width);
                  SmallVector<Value> x;
                  if (withXhat)
                    x = loadF32(b, loc, input, index, vectors.width);
                  Value sum = carried[0];
                  for (int64_t k = 0; k < vectors.width; ++k) {
                    Value dy = dyOf(m, g[k], d[k]);
                    sum =
                        m.add(sum, withXhat ? m.mul(dy, xhatOf(m, x[k])) : dy);
                  }
                  return {sum};
                });
            return warpSum(b, loc, acc[0], warpSize);
          };
          Value dyXhat = rowSum(true);
          Value dySum = layerNorm ? rowSum(false) : Value();
          Value inv = m.constant(1.0 / static_cast<double>(hidden));
          forEachLaneItem(
              b, loc, lane, vectors.count, warpSize, ValueRange{},
              [&](OpBuilder &b, Location loc, Value v,
                  ValueRange) -> SmallVector<Value> {
                F32Math m{b, loc};
                auto [index, column] = vectors.at(b, loc, row, v);
                SmallVector<Value> d =
                    loadF32(b, loc, dz, index, vectors.width);
                SmallVector<Value> x =
                    loadF32(b, loc, input, index, vectors.width);
                SmallVector<Value> g =
                    loadElements(b, loc, gamma, column, vectors.width);
                SmallVector<Value> residual;
                if (add)
                  residual = loadF32(b, loc, add, index, vectors.width);
                SmallVector<Value> dxValues, productValues;
                for (int64_t k = 0; k < vectors.width; ++k) {
                  Value xhat = xhatOf(m, x[k]);
                  Value correction = m.mul(m.mul(dyXhat, inv), xhat);
                  if (dySum)
                    correction = m.add(correction, m.mul(dySum, inv));
                  Value out =
                      m.mul(rsigma, m.sub(dyOf(m, g[k], d[k]), correction));
                  if (add)
                    out = m.add(out, residual[k]);
                  dxValues.push_back(
                      emitTruncFromF32(b, loc, out, dxType.getElementType()));
                  productValues.push_back(m.mul(d[k], xhat));
                }
                storeElements(b, loc, dx, index, dxValues);
                storeElements(b, loc, products, index, productValues);
                return {};
              });
        });
  }
  Type weight = op.getGamma().getType().getElementType();
  auto weightType = RankedTensorType::get({hidden}, weight);
  ColumnSums dgammaSums = ColumnSums::add(
      set, b, loc, "dgamma", bufferType(productsType), bufferType(weightType));
  std::optional<ColumnSums> dbetaSums;
  if (layerNorm)
    dbetaSums = ColumnSums::add(set, b, loc, "dbeta", bufferTypeOf(op.getDz()),
                                bufferType(weightType));
  set.finish();

  OpBuilder &host = rewriter;
  Value dzBuffer = readBuffer(host, loc, op.getDz());
  SmallVector<Value> operands = {dzBuffer, readBuffer(host, loc, op.getInput()),
                                 readBuffer(host, loc, op.getRsigma()),
                                 readBuffer(host, loc, op.getGamma())};
  if (layerNorm)
    operands.push_back(readBuffer(host, loc, op.getMu()));
  if (hasAdd)
    operands.push_back(readBuffer(host, loc, op.getAdd()));
  Value dx = allocateOutput(host, loc, dxType);
  Value products = allocateOutput(host, loc, productsType);
  operands.push_back(dx);
  operands.push_back(products);
  set.launch(host, kernel, blocksFor(rows * warpSize), kBlockSize, operands);
  SmallVector<Value> outputs = {dx, allocateOutput(host, loc, weightType)};
  dgammaSums.launch(host, loc, products, outputs.back());
  if (dbetaSums) {
    outputs.push_back(allocateOutput(host, loc, weightType));
    dbetaSums->launch(host, loc, dzBuffer, outputs.back());
  }
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}

} // namespace

bool gpu_lowering::isNormOp(Operation *op) {
  return isa<NormOp, NormBackwardOp>(op);
}

LogicalResult gpu_lowering::lowerNormOp(RewriterBase &rewriter, Operation *op,
                                        const GPUTargetInfo &target) {
  if (auto forward = dyn_cast<NormOp>(op))
    return lowerNorm(rewriter, forward, target);
  return lowerNormBackward(rewriter, cast<NormBackwardOp>(op), target);
}
