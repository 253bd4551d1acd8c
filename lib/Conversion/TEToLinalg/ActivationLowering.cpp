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

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::te;

namespace {

/// The scalar arithmetic of the activations, in f32.
struct ActivationMath {
  OpBuilder &b;
  Location loc;

  Value constant(double value) { return emitF32Constant(b, loc, value); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// fmaxf / fminf: the number when one operand is NaN, as CUDA's.
  Value max(Value x, Value y) { return arith::MaxNumFOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinNumFOp::create(b, loc, x, y); }
  Value positive(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                 constant(0.0));
  }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, loc, condition, x, y);
  }
  /// 1 / (1 + exp(-v)).
  Value sigmoid(Value v) {
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, v));
    return arith::DivFOp::create(b, loc, constant(1.0), add(constant(1.0), e));
  }
  /// v s (1 - s) + s with s = sigmoid(v) (d/dv of v sigmoid(v)); `scaled`
  /// is alpha v for qgelu's and clamped_swiglu's alpha.
  Value dScaledSilu(Value scaled) {
    Value s = sigmoid(scaled);
    return add(mul(scaled, mul(s, sub(constant(1.0), s))), s);
  }

  /// gelu: v (0.5 + 0.5 tanh(y)), y = v (0.79788456 + 0.03567741 v^2),
  /// as v sigmoid(2 y).
  Value gelu(Value v) {
    Value y =
        mul(v, add(constant(0.79788456), mul(constant(0.03567741), mul(v, v))));
    return mul(v, sigmoid(mul(constant(2.0), y)));
  }
  /// dgelu with t = tanh(y'), y' = 0.79788456 v (1 + 0.044715 v^2):
  /// 0.5 v (1 - t^2) k + 0.5 (1 + t), k = 0.79788456 + 0.1070322243 v^2;
  /// with s = sigmoid(2 y'), 0.5 (1 - t^2) = 2 s (1 - s), 0.5 (1 + t) = s.
  Value dgelu(Value v) {
    Value v2 = mul(v, v);
    Value y = mul(mul(constant(0.79788456), v),
                  add(constant(1.0), mul(constant(0.044715), v2)));
    Value s = sigmoid(mul(constant(2.0), y));
    Value k = add(constant(0.79788456), mul(constant(0.1070322243), v2));
    Value slope = mul(constant(2.0), mul(s, sub(constant(1.0), s)));
    return add(mul(mul(v, slope), k), s);
  }
};

/// The activation of a gated kind's first half, or of a plain kind.
enum class BaseFunction { gelu, qgelu, relu, srelu, silu, clampedSilu };

BaseFunction getBase(ActivationKind kind) {
  switch (kind) {
  case ActivationKind::gelu:
  case ActivationKind::geglu:
    return BaseFunction::gelu;
  case ActivationKind::qgelu:
  case ActivationKind::qgeglu:
    return BaseFunction::qgelu;
  case ActivationKind::relu:
  case ActivationKind::reglu:
    return BaseFunction::relu;
  case ActivationKind::srelu:
  case ActivationKind::sreglu:
    return BaseFunction::srelu;
  case ActivationKind::silu:
  case ActivationKind::swiglu:
    return BaseFunction::silu;
  case ActivationKind::clamped_swiglu:
    return BaseFunction::clampedSilu;
  }
  llvm_unreachable("unknown activation kind");
}

/// The parameters of an activation: kind and clamped_swiglu's limit,
/// alpha and linear offset.
struct Activation {
  BaseFunction base;
  bool gated;
  double limit = 0.0, alpha = 1.702, linearOffset = 1.0;

  template <typename OpT> static Activation of(OpT op) {
    Activation a{getBase(op.getKind()), op.isGated()};
    if (std::optional<APFloat> limit = op.getLimit())
      a.limit = limit->convertToDouble();
    a.alpha = op.getAlpha().convertToDouble();
    a.linearOffset = op.getLinearOffset().convertToDouble();
    return a;
  }

  Value act(ActivationMath &m, Value v) const {
    switch (base) {
    case BaseFunction::gelu:
      return m.gelu(v);
    case BaseFunction::qgelu:
      return m.mul(v, m.sigmoid(m.mul(m.constant(1.702), v)));
    case BaseFunction::relu:
      return m.max(v, m.constant(0.0));
    case BaseFunction::srelu:
      return m.select(m.positive(v), m.mul(v, v), m.constant(0.0));
    case BaseFunction::silu:
      return m.mul(v, m.sigmoid(v));
    case BaseFunction::clampedSilu: {
      Value c = m.min(m.constant(limit), v);
      return m.mul(c, m.sigmoid(m.mul(m.constant(alpha), c)));
    }
    }
    llvm_unreachable("unknown activation");
  }

  Value dact(ActivationMath &m, Value v) const {
    switch (base) {
    case BaseFunction::gelu:
      return m.dgelu(v);
    case BaseFunction::qgelu:
      return m.dScaledSilu(m.mul(m.constant(1.702), v));
    case BaseFunction::relu:
      return m.select(m.positive(v), m.constant(1.0), m.constant(0.0));
    case BaseFunction::srelu:
      return m.max(m.mul(m.constant(2.0), v), m.constant(0.0));
    case BaseFunction::silu:
      return m.dScaledSilu(v);
    case BaseFunction::clampedSilu: {
      // 0 above the limit (the clamp's derivative; NaN compares false).
      Value inside = arith::CmpFOp::create(
          m.b, m.loc, arith::CmpFPredicate::OLE, v, m.constant(limit));
      Value c = m.min(m.constant(limit), v);
      return m.select(inside, m.dScaledSilu(m.mul(m.constant(alpha), c)),
                      m.constant(0.0));
    }
    }
    llvm_unreachable("unknown activation");
  }

  /// The gate's factor: g, or clamp(g, -limit, limit) + linear_offset.
  Value gate(ActivationMath &m, Value g) const {
    if (base != BaseFunction::clampedSilu)
      return g;
    Value clamped = m.min(m.max(m.constant(-limit), g), m.constant(limit));
    return m.add(clamped, m.constant(linearOffset));
  }

  /// 1 where the gate's derivative is 1, 0 where the clamp cuts it.
  Value gatePasses(ActivationMath &m, Value g) const {
    Value low = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OGE, g,
                                      m.constant(-limit));
    Value high = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OLE, g,
                                       m.constant(limit));
    return arith::AndIOp::create(m.b, m.loc, low, high);
  }
};

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
      return mapElements(
          b, loc, {in.rows, width}, element, inputs,
          identities(b, inputs.size()),
          [&](OpBuilder &b, Location loc, ValueRange args) {
            ActivationMath m{b, loc};
            Value y = activation.act(m, emitExtToF32(b, loc, args[0]));
            if (activation.gated)
              y = m.mul(y, activation.gate(m, emitExtToF32(b, loc, args[1])));
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
      return m.mul(emitExtToF32(b, loc, args[0]),
                   activation.dact(m, emitExtToF32(b, loc, args[1])));
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
        return mapElements(b, loc, {in.rows, half}, element,
                           {grad, in.act, in.gate}, identities(b, 3),
                           [&](OpBuilder &b, Location loc, ValueRange args) {
                             ActivationMath m{b, loc};
                             Value dy = emitExtToF32(b, loc, args[0]);
                             Value a = emitExtToF32(b, loc, args[1]);
                             Value g = emitExtToF32(b, loc, args[2]);
                             Value out;
                             if (gateHalf) {
                               out = m.mul(activation.act(m, a), dy);
                               if (activation.base == BaseFunction::clampedSilu)
                                 out = m.select(activation.gatePasses(m, g),
                                                out, m.constant(0.0));
                             } else {
                               out = m.mul(m.mul(activation.dact(m, a), dy),
                                           activation.gate(m, g));
                             }
                             return emitTruncFromF32(b, loc, out, element);
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
