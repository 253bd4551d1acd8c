//===- ActivationMath.cpp - TE's activations as scalar arith ops ---------===//
//
// See ActivationMath.h. The formulas are TE's util/math.h, in f32; tanh is
// computed as a sigmoid (0.5 (1 + tanh y) = sigmoid(2 y)).
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TECommon/ActivationMath.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::te;

Value ActivationMath::constant(double value) {
  return emitF32Constant(b, loc, value);
}
Value ActivationMath::add(Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
Value ActivationMath::sub(Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value ActivationMath::mul(Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}
Value ActivationMath::max(Value x, Value y) {
  return arith::MaxNumFOp::create(b, loc, x, y);
}
Value ActivationMath::min(Value x, Value y) {
  return arith::MinNumFOp::create(b, loc, x, y);
}
Value ActivationMath::positive(Value x) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                               constant(0.0));
}
Value ActivationMath::select(Value condition, Value x, Value y) {
  return arith::SelectOp::create(b, loc, condition, x, y);
}
Value ActivationMath::sigmoid(Value v) {
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, v));
  return arith::DivFOp::create(b, loc, constant(1.0), add(constant(1.0), e));
}
Value ActivationMath::dScaledSilu(Value scaled) {
  Value s = sigmoid(scaled);
  return add(mul(scaled, mul(s, sub(constant(1.0), s))), s);
}
Value ActivationMath::gelu(Value v) {
  Value y =
      mul(v, add(constant(0.79788456), mul(constant(0.03567741), mul(v, v))));
  return mul(v, sigmoid(mul(constant(2.0), y)));
}
Value ActivationMath::dgelu(Value v) {
  Value v2 = mul(v, v);
  Value y = mul(mul(constant(0.79788456), v),
                add(constant(1.0), mul(constant(0.044715), v2)));
  Value s = sigmoid(mul(constant(2.0), y));
  Value k = add(constant(0.79788456), mul(constant(0.1070322243), v2));
  Value slope = mul(constant(2.0), mul(s, sub(constant(1.0), s)));
  return add(mul(mul(v, slope), k), s);
}

BaseFunction Activation::baseOf(ActivationKind kind) {
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
  case ActivationKind::glu:
    return BaseFunction::sigmoid;
  }
  llvm_unreachable("unknown activation kind");
}

Value Activation::act(ActivationMath &m, Value v) const {
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
  case BaseFunction::sigmoid:
    return m.sigmoid(v);
  }
  llvm_unreachable("unknown activation");
}

Value Activation::dact(ActivationMath &m, Value v) const {
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
    Value inside = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OLE,
                                         v, m.constant(limit));
    Value c = m.min(m.constant(limit), v);
    return m.select(inside, m.dScaledSilu(m.mul(m.constant(alpha), c)),
                    m.constant(0.0));
  }
  case BaseFunction::sigmoid: {
    // TE's dsigmoid: s (1 - s).
    Value s = m.sigmoid(v);
    return m.mul(s, m.sub(m.constant(1.0), s));
  }
  }
  llvm_unreachable("unknown activation");
}

Value Activation::gate(ActivationMath &m, Value g) const {
  if (base != BaseFunction::clampedSilu)
    return g;
  Value clamped = m.min(m.max(m.constant(-limit), g), m.constant(limit));
  return m.add(clamped, m.constant(linearOffset));
}

Value Activation::gatePasses(ActivationMath &m, Value g) const {
  Value low = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OGE, g,
                                    m.constant(-limit));
  Value high = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OLE, g,
                                     m.constant(limit));
  return arith::AndIOp::create(m.b, m.loc, low, high);
}

Value Activation::forward(ActivationMath &m, Value a, Value g) const {
  Value y = act(m, a);
  return gated ? m.mul(y, gate(m, g)) : y;
}

std::pair<Value, Value> Activation::backward(ActivationMath &m, Value dy,
                                             Value a, Value g) const {
  if (!gated)
    return {m.mul(dy, dact(m, a)), Value()};
  Value dAct = m.mul(m.mul(dact(m, a), dy), gate(m, g));
  Value dGate = m.mul(act(m, a), dy);
  if (base == BaseFunction::clampedSilu)
    dGate = m.select(gatePasses(m, g), dGate, m.constant(0.0));
  return {dAct, dGate};
}
