//===- Epilogue.cpp - GEMM epilogue math as arith ops ---------------------===//

#include "te/Conversion/TECommon/Epilogue.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace mlir::te {
namespace {
/// tanh(sqrt(2 / pi) (x + 0.044715 x^3)) as 1 - 2 / (exp(2y) + 1).
Value emitGeluTanh(OpBuilder &b, Location loc, Value x) {
  Value cube =
      arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
  Value inner = arith::MulFOp::create(
      b, loc, emitF32Constant(b, loc, 0.7978845608028654),
      arith::AddFOp::create(
          b, loc, x,
          arith::MulFOp::create(b, loc, emitF32Constant(b, loc, 0.044715),
                                cube)));
  Value e = math::ExpOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, emitF32Constant(b, loc, 2.0), inner));
  return arith::SubFOp::create(
      b, loc, emitF32Constant(b, loc, 1.0),
      arith::DivFOp::create(
          b, loc, emitF32Constant(b, loc, 2.0),
          arith::AddFOp::create(b, loc, e, emitF32Constant(b, loc, 1.0))));
}
} // namespace
} // namespace mlir::te

Value mlir::te::emitGelu(OpBuilder &b, Location loc, Value x) {
  Value tanh = emitGeluTanh(b, loc, x);
  Value half = arith::MulFOp::create(b, loc, emitF32Constant(b, loc, 0.5), x);
  return arith::MulFOp::create(
      b, loc, half,
      arith::AddFOp::create(b, loc, emitF32Constant(b, loc, 1.0), tanh));
}

Value mlir::te::emitGeluGrad(OpBuilder &b, Location loc, Value x) {
  Value tanh = emitGeluTanh(b, loc, x);
  auto c = [&](double value) { return emitF32Constant(b, loc, value); };
  Value square = arith::MulFOp::create(b, loc, x, x);
  // d/dx of the inner argument: sqrt(2 / pi) (1 + 3 * 0.044715 x^2).
  Value slope = arith::AddFOp::create(
      b, loc, c(0.7978845608028654),
      arith::MulFOp::create(b, loc, c(0.1070322243), square));
  Value sech2 = arith::SubFOp::create(
      b, loc, c(1.0), arith::MulFOp::create(b, loc, tanh, tanh));
  Value left =
      arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, c(0.5), x),
                            arith::MulFOp::create(b, loc, sech2, slope));
  Value right = arith::MulFOp::create(
      b, loc, c(0.5), arith::AddFOp::create(b, loc, c(1.0), tanh));
  return arith::AddFOp::create(b, loc, left, right);
}
