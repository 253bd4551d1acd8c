//===- ActivationKernels.cpp - te.activation and its backward on a GPU ---===//
//
// One elementwise kernel per op over the [rows, width] view of the input:
// a grid-stride loop whose threads each take a 16-byte vector of outputs
// (never across a row), read the inputs they need (a gated kind's two
// halves of the row), compute TE's formulas in f32 (ActivationMath.h, the
// same as the host's) and round once. The backward of a gated kind writes
// both halves of dx from one read of the gradient and the input.
//
// Not generated yet (refused with the reason): the quantized outputs, the
// amax and dbias, which the host lowering fuses.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/ActivationMath.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

/// The [rows, width] view of an activation's input.
struct RowsShape {
  int64_t rows, width;

  static RowsShape of(Value input) {
    auto type = cast<RankedTensorType>(input.getType());
    int64_t width = type.getShape().back();
    return {width ? type.getNumElements() / width : 0, width};
  }
};

MemRefType argType(Value value) {
  return bufferType(cast<RankedTensorType>(value.getType()));
}

/// The positions of the output vector `i` (of `width` elements, a row
/// `outWidth` wide): its first output element, and that element's column
/// and row.
struct VectorPosition {
  Value first, row, column;

  static VectorPosition of(OpBuilder &b, Location loc, Value i, int64_t width,
                           int64_t outWidth) {
    Value first =
        arith::MulIOp::create(b, loc, i, indexConstant(b, loc, width));
    Value out = indexConstant(b, loc, outWidth);
    return {first, arith::DivUIOp::create(b, loc, first, out),
            arith::RemUIOp::create(b, loc, first, out)};
  }

  /// Element `column + offset` of the row in a buffer `rowWidth` wide.
  Value inRow(OpBuilder &b, Location loc, int64_t rowWidth,
              int64_t offset) const {
    Value start =
        arith::MulIOp::create(b, loc, row, indexConstant(b, loc, rowWidth));
    Value at = arith::AddIOp::create(b, loc, start, column);
    return offset ? arith::AddIOp::create(b, loc, at,
                                          indexConstant(b, loc, offset))
                  : at;
  }
};

/// `width` elements of the 1-D `buffer` from `index`, in f32.
SmallVector<Value> loadF32(OpBuilder &b, Location loc, Value buffer,
                           Value index, int64_t width) {
  SmallVector<Value> wide;
  for (Value v : loadElements(b, loc, buffer, index, width))
    wide.push_back(emitExtToF32(b, loc, v));
  return wide;
}

/// A vector's inputs in f32: the activated half's elements and, for a
/// gated kind, the gate half's (else empty), from `input` [rows, rowWidth].
std::pair<SmallVector<Value>, SmallVector<Value>>
loadActivationInputs(OpBuilder &b, Location loc, Value input,
                     const VectorPosition &at, bool gated, int64_t rowWidth,
                     int64_t width) {
  if (!gated)
    return {loadF32(b, loc, input, at.first, width), {}};
  return {
      loadF32(b, loc, input, at.inRow(b, loc, rowWidth, 0), width),
      loadF32(b, loc, input, at.inRow(b, loc, rowWidth, rowWidth / 2), width)};
}

LogicalResult lowerActivation(RewriterBase &rewriter, ActivationOp op,
                              const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  Activation activation = Activation::of(op);
  RowsShape shape = RowsShape::of(op.getInput());
  int64_t outWidth = activation.gated ? shape.width / 2 : shape.width;
  Type element = op.getInput().getType().getElementType();
  int64_t width = vectorWidth(element, outWidth);
  int64_t vectors = shape.rows * outWidth / width;

  // activation(input, output): output = act(input), or act(a) gate(g).
  KernelSet set(op, "activation", target);
  OpBuilder b(context);
  MemRefType inputType = argType(op.getInput());
  auto outputType = cast<RankedTensorType>(op.getOutput().getType());
  auto kernel =
      set.addKernel(b, "activation", {inputType, bufferType(outputType)});
  Value input = flatten(b, loc, kernel.getArgument(0));
  Value output = flatten(b, loc, kernel.getArgument(1));
  gridStrideLoop(
      b, loc, vectors, Value(),
      [&](OpBuilder &b, Location loc, Value i, Value) -> Value {
        auto at = VectorPosition::of(b, loc, i, width, outWidth);
        ActivationMath m{b, loc};
        auto [a, g] = loadActivationInputs(b, loc, input, at, activation.gated,
                                           shape.width, width);
        SmallVector<Value> y;
        for (int64_t k = 0; k < width; ++k)
          y.push_back(emitTruncFromF32(
              b, loc,
              activation.forward(m, a[k], activation.gated ? g[k] : Value()),
              outputType.getElementType()));
        storeElements(b, loc, output, at.first, y);
        return Value();
      });
  set.finish();

  OpBuilder &host = rewriter;
  Value in = readBuffer(host, loc, op.getInput());
  Value out = allocateOutput(host, loc, outputType);
  set.launch(host, kernel, blocksFor(vectors), kBlockSize, {in, out});
  replaceWithOutputs(rewriter, op, {out});
  return success();
}

LogicalResult lowerActivationBackward(RewriterBase &rewriter,
                                      ActivationBackwardOp op,
                                      const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  Activation activation = Activation::of(op);
  RowsShape shape = RowsShape::of(op.getInput());
  int64_t gradWidth = activation.gated ? shape.width / 2 : shape.width;
  Type element = op.getInput().getType().getElementType();
  int64_t width = vectorWidth(element, gradWidth);
  int64_t vectors = shape.rows * gradWidth / width;

  // activation_backward(grad, input, dx): dx = grad act'(input); a gated
  // kind writes both halves of its row of dx.
  KernelSet set(op, "activation_backward", target);
  OpBuilder b(context);
  auto dxType = cast<RankedTensorType>(op.getDx().getType());
  Type dxElement = dxType.getElementType();
  auto kernel = set.addKernel(
      b, "activation_backward",
      {argType(op.getGrad()), argType(op.getInput()), bufferType(dxType)});
  Value grad = flatten(b, loc, kernel.getArgument(0));
  Value input = flatten(b, loc, kernel.getArgument(1));
  Value dx = flatten(b, loc, kernel.getArgument(2));
  gridStrideLoop(
      b, loc, vectors, Value(),
      [&](OpBuilder &b, Location loc, Value i, Value) -> Value {
        auto at = VectorPosition::of(b, loc, i, width, gradWidth);
        ActivationMath m{b, loc};
        SmallVector<Value> dy = loadF32(b, loc, grad, at.first, width);
        auto [a, g] = loadActivationInputs(b, loc, input, at, activation.gated,
                                           shape.width, width);
        if (!activation.gated) {
          SmallVector<Value> out;
          for (int64_t k = 0; k < width; ++k)
            out.push_back(emitTruncFromF32(
                b, loc, activation.backward(m, dy[k], a[k], Value()).first,
                dxElement));
          storeElements(b, loc, dx, at.first, out);
          return Value();
        }
        SmallVector<Value> dAct, dGate;
        for (int64_t k = 0; k < width; ++k) {
          auto [da, dg] = activation.backward(m, dy[k], a[k], g[k]);
          dAct.push_back(emitTruncFromF32(b, loc, da, dxElement));
          dGate.push_back(emitTruncFromF32(b, loc, dg, dxElement));
        }
        storeElements(b, loc, dx, at.inRow(b, loc, shape.width, 0), dAct);
        storeElements(b, loc, dx, at.inRow(b, loc, shape.width, gradWidth),
                      dGate);
        return Value();
      });
  set.finish();

  OpBuilder &host = rewriter;
  Value gradBuffer = readBuffer(host, loc, op.getGrad());
  Value in = readBuffer(host, loc, op.getInput());
  Value out = allocateOutput(host, loc, dxType);
  set.launch(host, kernel, blocksFor(vectors), kBlockSize,
             {gradBuffer, in, out});
  replaceWithOutputs(rewriter, op, {out});
  return success();
}

} // namespace

bool gpu_lowering::isActivationOp(Operation *op) {
  return isa<ActivationOp, ActivationBackwardOp>(op);
}

std::optional<std::string>
gpu_lowering::getActivationUnsupportedReason(Operation *op,
                                             const GPUTargetInfo &target) {
  std::string name = op->getName().getStringRef().str();
  auto refuse = [&](StringRef what) {
    return name + " " + what.str() + " has no GPU code generation yet (" +
           target.getDescription() + "): only its high-precision output has";
  };
  if (auto forward = dyn_cast<ActivationOp>(op)) {
    if (forward.getQuantize())
      return refuse("with a quantized output");
    if (forward.getAmaxOutput())
      return refuse("with amax");
    return std::nullopt;
  }
  auto backward = cast<ActivationBackwardOp>(op);
  if (backward.getQuantize())
    return refuse("with a quantized output");
  if (backward.getAmaxOutput())
    return refuse("with amax");
  if (backward.getDbias())
    return refuse("with dbias");
  return std::nullopt;
}

LogicalResult gpu_lowering::lowerActivationOp(RewriterBase &rewriter,
                                              Operation *op,
                                              const GPUTargetInfo &target) {
  if (auto forward = dyn_cast<ActivationOp>(op))
    return lowerActivation(rewriter, forward, target);
  return lowerActivationBackward(rewriter, cast<ActivationBackwardOp>(op),
                                 target);
}
