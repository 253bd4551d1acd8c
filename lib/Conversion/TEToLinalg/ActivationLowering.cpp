//===- ActivationLowering.cpp - te.activation and its backward on the host ===//
//
// TE's activations as their description states them: one elementwise
// linalg.generic in f32 over the [N, W] view of the input (gated kinds
// read the two halves of the last dimension as two [N, H] slices), the
// result rounded once; the backward's dbias is a column sum of the f32
// gradient. Quantized outputs go through emitQuantizableOutput.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "te/Conversion/TECommon/ActivationMath.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::te;

namespace {

/// The [N, W] view of `value` and, for gated kinds, its halves.
struct ActivationInput {
  Value matrix, act, gate;
  int64_t rows, width;
};

ActivationInput viewInput(OpBuilder &b, Location loc, Value value, bool gated) {
  ActivationInput in;
  in.matrix = viewAs2D(b, loc, value);
  auto type = cast<RankedTensorType>(in.matrix.getType());
  in.rows = type.getDimSize(0);
  in.width = type.getDimSize(1);
  if (gated) {
    int64_t half = in.width / 2;
    auto slice = [&](int64_t offset) -> Value {
      return tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({in.rows, half}, type.getElementType()),
          in.matrix, ValueRange{}, ValueRange{}, ValueRange{},
          b.getDenseI64ArrayAttr({0, offset}),
          b.getDenseI64ArrayAttr({in.rows, half}),
          b.getDenseI64ArrayAttr({1, 1}));
    };
    in.act = slice(0);
    in.gate = slice(half);
  }
  return in;
}

SmallVector<AffineMap> identities(OpBuilder &b, unsigned count) {
  return SmallVector<AffineMap>(count, b.getMultiDimIdentityMap(2));
}

struct ActivationOpLowering : OpConversionPattern<ActivationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ActivationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Activation activation = Activation::of(op);
    ActivationInput in =
        viewInput(b, loc, adaptor.getInput(), activation.gated);
    SmallVector<Value> inputs = activation.gated
                                    ? SmallVector<Value>{in.act, in.gate}
                                    : SmallVector<Value>{in.matrix};
    int64_t width = activation.gated ? in.width / 2 : in.width;
    auto compute = [&](Type element) {
      return mapElements(b, loc, {in.rows, width}, element, inputs,
                         identities(b, inputs.size()),
                         [&](OpBuilder &b, Location loc, ValueRange args) {
                           ActivationMath m{b, loc};
                           Value gate = activation.gated
                                            ? emitExtToF32(b, loc, args[1])
                                            : Value();
                           Value y = activation.forward(
                               m, emitExtToF32(b, loc, args[0]), gate);
                           return emitTruncFromF32(b, loc, y, element);
                         });
    };
    RankedTensorType inputType = op.getInput().getType();
    SmallVector<Value> results;
    emitQuantizableOutput(
        b, loc, QuantizedOutputRequest::of(op, adaptor.getScale()),
        RankedTensorType::get(op.getOutputShape(), inputType.getElementType()),
        compute, results);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct ActivationBackwardOpLowering
    : OpConversionPattern<ActivationBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ActivationBackwardOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Activation activation = Activation::of(op);
    ActivationInput in =
        viewInput(b, loc, adaptor.getInput(), activation.gated);
    Value grad = viewAs2D(b, loc, adaptor.getGrad());

    // Plain kinds: grad * dact(x). Gated: the two halves, each its own
    // pass, written into one [N, 2H] tensor.
    auto plain = [&](OpBuilder &b, Location loc, ValueRange args) {
      ActivationMath m{b, loc};
      return activation
          .backward(m, emitExtToF32(b, loc, args[0]),
                    emitExtToF32(b, loc, args[1]), Value())
          .first;
    };
    auto compute = [&](Type element) -> Value {
      if (!activation.gated)
        return mapElements(
            b, loc, {in.rows, in.width}, element, {grad, in.matrix},
            identities(b, 2), [&](OpBuilder &b, Location loc, ValueRange args) {
              return emitTruncFromF32(b, loc, plain(b, loc, args), element);
            });
      int64_t half = in.width / 2;
      auto pass = [&](bool gateHalf) {
        return mapElements(
            b, loc, {in.rows, half}, element, {grad, in.act, in.gate},
            identities(b, 3), [&](OpBuilder &b, Location loc, ValueRange args) {
              ActivationMath m{b, loc};
              Value dy = emitExtToF32(b, loc, args[0]);
              Value a = emitExtToF32(b, loc, args[1]);
              Value g = emitExtToF32(b, loc, args[2]);
              auto [dAct, dGate] = activation.backward(m, dy, a, g);
              return emitTruncFromF32(b, loc, gateHalf ? dGate : dAct, element);
            });
      };
      Value full =
          tensor::EmptyOp::create(b, loc, {in.rows, in.width}, element);
      auto insert = [&](Value part, int64_t offset) -> Value {
        return tensor::InsertSliceOp::create(
            b, loc, part, full, ValueRange{}, ValueRange{}, ValueRange{},
            b.getDenseI64ArrayAttr({0, offset}),
            b.getDenseI64ArrayAttr({in.rows, half}),
            b.getDenseI64ArrayAttr({1, 1}));
      };
      full = insert(pass(false), 0);
      return insert(pass(true), half);
    };

    RankedTensorType inputType = op.getInput().getType();
    SmallVector<Value> results;
    emitQuantizableOutput(b, loc,
                          QuantizedOutputRequest::of(op, adaptor.getScale()),
                          inputType, compute, results);
    if (Value dbias = op.getDbiasResult()) {
      // The column sums of the f32 gradient, rounded once.
      AffineMap full = b.getMultiDimIdentityMap(2);
      Value sums = sumOf(b, loc, /*perRow=*/false, in.width, {grad, in.matrix},
                         {full, full}, plain);
      Type element = cast<ShapedType>(dbias.getType()).getElementType();
      results.push_back(mapElements(
          b, loc, {in.width}, element, sums, {b.getMultiDimIdentityMap(1)},
          [&](OpBuilder &b, Location loc, ValueRange args) {
            return emitTruncFromF32(b, loc, args[0], element);
          }));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::te::populateActivationLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ActivationOpLowering, ActivationBackwardOpLowering>(
      patterns.getContext());
}
