//===- ActivationKernels.cpp - te.activation and its backward on a GPU ---===//
//
// One elementwise kernel per op over the [rows, width] view of the input:
// a grid-stride loop whose threads each take a 16-byte vector of outputs
// (never across a row), read the inputs they need (a gated kind's two
// halves of the row), compute TE's formulas in f32 (ActivationMath.h, the
// same as the host's) and round once into every element type the results
// need (QuantizableOutput: the output, and the f32 values the amax, a
// per_tensor cast or dbias take). The backward of a gated kind writes both
// halves of dx from one read of the gradient and the input.
//
// The quantized outputs and the amax are finished by the FP8 kernels from
// those buffers, and dbias is a column sum of dx's f32 values: passes that
// TE fuses into the activation's own.
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

/// The shape of an activation's output for `input`: gated kinds halve the
/// last dimension.
SmallVector<int64_t> outputShape(Value input, bool gated) {
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(input.getType()).getShape());
  if (gated)
    shape.back() /= 2;
  return shape;
}

/// `values` (f32) rounded to each of `elements` and stored at `index` of
/// the matching buffer of `buffers`.
void storeRounded(OpBuilder &b, Location loc, ArrayRef<Value> values,
                  ArrayRef<Value> buffers, ArrayRef<Type> elements,
                  Value index) {
  for (auto [buffer, element] : llvm::zip_equal(buffers, elements)) {
    SmallVector<Value> rounded;
    for (Value value : values)
      rounded.push_back(emitTruncFromF32(b, loc, value, element));
    storeElements(b, loc, buffer, index, rounded);
  }
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
  SmallVector<int64_t> outShape = outputShape(op.getInput(), activation.gated);
  auto output = QuantizableOutput::of(op, op.getScale(), outShape, element);

  // activation(input, outputs...): output = act(input), or act(a) gate(g),
  // in each element type the results need.
  KernelSet set(op, "activation", target);
  OpBuilder b(context);
  SmallVector<Type> arguments = {bufferTypeOf(op.getInput())};
  for (Type type : output.getElementTypes())
    arguments.push_back(bufferType(RankedTensorType::get(outShape, type)));
  auto kernel = set.addKernel(b, "activation", arguments);
  Value input = flatten(b, loc, kernel.getArgument(0));
  SmallVector<Value> outputs;
  for (unsigned i = 1; i < kernel.getNumArguments(); ++i)
    outputs.push_back(flatten(b, loc, kernel.getArgument(i)));
  gridStrideLoop(
      b, loc, vectors, Value(),
      [&](OpBuilder &b, Location loc, Value i, Value) -> Value {
        auto at = VectorPosition::of(b, loc, i, width, outWidth);
        ActivationMath m{b, loc};
        auto [a, g] = loadActivationInputs(b, loc, input, at, activation.gated,
                                           shape.width, width);
        SmallVector<Value> y;
        for (int64_t k = 0; k < width; ++k)
          y.push_back(
              activation.forward(m, a[k], activation.gated ? g[k] : Value()));
        storeRounded(b, loc, y, outputs, output.getElementTypes(), at.first);
        return Value();
      });
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands = {readBuffer(host, loc, op.getInput())};
  llvm::append_range(operands, output.allocate(host, loc));
  set.launch(host, kernel, blocksFor(vectors), kBlockSize, operands);
  return output.replaceOp(rewriter, op, {}, target);
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
  ArrayRef<int64_t> dxShape = op.getInput().getType().getShape();
  // dbias sums dx's f32 values.
  bool dbias = static_cast<bool>(op.getDbiasResult());
  auto output = QuantizableOutput::of(op, op.getScale(), dxShape, element,
                                      /*wantF32=*/dbias);

  // activation_backward(grad, input, dx...): dx = grad act'(input), in each
  // element type the results need; a gated kind writes both halves of its
  // row of dx.
  KernelSet set(op, "activation_backward", target);
  OpBuilder b(context);
  SmallVector<Type> arguments = {bufferTypeOf(op.getGrad()),
                                 bufferTypeOf(op.getInput())};
  for (Type type : output.getElementTypes())
    arguments.push_back(bufferType(RankedTensorType::get(dxShape, type)));
  auto kernel = set.addKernel(b, "activation_backward", arguments);
  Value grad = flatten(b, loc, kernel.getArgument(0));
  Value input = flatten(b, loc, kernel.getArgument(1));
  SmallVector<Value> dx;
  for (unsigned i = 2; i < kernel.getNumArguments(); ++i)
    dx.push_back(flatten(b, loc, kernel.getArgument(i)));
  ArrayRef<Type> dxElements = output.getElementTypes();
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
            out.push_back(activation.backward(m, dy[k], a[k], Value()).first);
          storeRounded(b, loc, out, dx, dxElements, at.first);
          return Value();
        }
        SmallVector<Value> dAct, dGate;
        for (int64_t k = 0; k < width; ++k) {
          auto [da, dg] = activation.backward(m, dy[k], a[k], g[k]);
          dAct.push_back(da);
          dGate.push_back(dg);
        }
        storeRounded(b, loc, dAct, dx, dxElements,
                     at.inRow(b, loc, shape.width, 0));
        storeRounded(b, loc, dGate, dx, dxElements,
                     at.inRow(b, loc, shape.width, gradWidth));
        return Value();
      });
  std::optional<ColumnSums> sums;
  RankedTensorType dbiasType;
  if (dbias) {
    dbiasType = cast<RankedTensorType>(op.getDbiasResult().getType());
    sums = ColumnSums::add(
        set, b, loc, "dbias",
        bufferType(RankedTensorType::get(dxShape, Float32Type::get(context))),
        bufferType(dbiasType));
  }
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands = {readBuffer(host, loc, op.getGrad()),
                                 readBuffer(host, loc, op.getInput())};
  llvm::append_range(operands, output.allocate(host, loc));
  set.launch(host, kernel, blocksFor(vectors), kBlockSize, operands);
  SmallVector<Value> trailing;
  if (sums) {
    trailing.push_back(allocateOutput(host, loc, dbiasType));
    sums->launch(host, loc, output.getF32Buffer(), trailing.back());
  }
  return output.replaceOp(rewriter, op, trailing, target);
}

} // namespace

bool gpu_lowering::isActivationOp(Operation *op) {
  return isa<ActivationOp, ActivationBackwardOp>(op);
}

LogicalResult gpu_lowering::lowerActivationOp(RewriterBase &rewriter,
                                              Operation *op,
                                              const GPUTargetInfo &target) {
  if (auto forward = dyn_cast<ActivationOp>(op))
    return lowerActivation(rewriter, forward, target);
  return lowerActivationBackward(rewriter, cast<ActivationBackwardOp>(op),
                                 target);
}
