//===- ActivationMath.h - TE's activations as scalar arith ops --*- C++ -*-===//
//
// The formulas of te.activation and te.activation_backward (TE's
// util/math.h and gated_act_kernel) on f32 scalars, shared by every
// target's lowering so that each computes the same values: the plain
// kinds, the gated kinds' activated half and gate, and their derivatives.
// Emits arith and math ops only.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TECOMMON_ACTIVATIONMATH_H
#define TE_CONVERSION_TECOMMON_ACTIVATIONMATH_H

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::te {

/// The scalar f32 arithmetic the activations are made of.
struct ActivationMath {
  OpBuilder &b;
  Location loc;

  Value constant(double value);
  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  /// fmaxf / fminf: the number when one operand is NaN, as CUDA's.
  Value max(Value x, Value y);
  Value min(Value x, Value y);
  Value positive(Value x);
  Value select(Value condition, Value x, Value y);
  /// 1 / (1 + exp(-v)).
  Value sigmoid(Value v);
  /// v s (1 - s) + s with s = sigmoid(v) (d/dv of v sigmoid(v)); `scaled`
  /// is alpha v for qgelu's and clamped_swiglu's alpha.
  Value dScaledSilu(Value scaled);
  /// gelu: v (0.5 + 0.5 tanh(y)), y = v (0.79788456 + 0.03567741 v^2),
  /// as v sigmoid(2 y).
  Value gelu(Value v);
  /// dgelu with t = tanh(y'), y' = 0.79788456 v (1 + 0.044715 v^2):
  /// 0.5 v (1 - t^2) k + 0.5 (1 + t), k = 0.79788456 + 0.1070322243 v^2;
  /// with s = sigmoid(2 y'), 0.5 (1 - t^2) = 2 s (1 - s), 0.5 (1 + t) = s.
  Value dgelu(Value v);
};

/// The activation of a gated kind's first half, or of a plain kind.
enum class BaseFunction {
  gelu,
  qgelu,
  relu,
  srelu,
  silu,
  clampedSilu,
  sigmoid
};

/// An activation: its base function, whether it is gated, and
/// clamped_swiglu's limit, alpha and linear offset.
struct Activation {
  BaseFunction base;
  bool gated;
  double limit = 0.0, alpha = 1.702, linearOffset = 1.0;

  /// The activation of te.activation or te.activation_backward (whether
  /// it is gated, as the op says).
  template <typename OpT> static Activation of(OpT op) {
    Activation a{baseOf(op.getKind()), op.isGated()};
    if (std::optional<APFloat> limit = op.getLimit())
      a.limit = limit->convertToDouble();
    a.alpha = op.getAlpha().convertToDouble();
    a.linearOffset = op.getLinearOffset().convertToDouble();
    return a;
  }
  /// The base function of `kind` (a gated kind's activated half's).
  static BaseFunction baseOf(ActivationKind kind);

  /// The base function of v.
  Value act(ActivationMath &m, Value v) const;
  /// Its derivative at v.
  Value dact(ActivationMath &m, Value v) const;
  /// The gate's factor: g, or clamp(g, -limit, limit) + linear_offset.
  Value gate(ActivationMath &m, Value g) const;
  /// 1 where the gate's derivative is 1, 0 where the clamp cuts it.
  Value gatePasses(ActivationMath &m, Value g) const;

  /// The forward value in f32: act(a), or act(a) gate(g) for gated kinds
  /// (`g` null for plain kinds).
  Value forward(ActivationMath &m, Value a, Value g) const;
  /// The backward values in f32 from dy: dx for a plain kind (`g` null);
  /// for a gated kind the activated half's and the gate half's gradients.
  std::pair<Value, Value> backward(ActivationMath &m, Value dy, Value a,
                                   Value g) const;
};

} // namespace mlir::te

#endif // TE_CONVERSION_TECOMMON_ACTIVATIONMATH_H
