//===- Epilogue.cpp - GEMM epilogue math as arith ops ---------------------===//

#include "te/Conversion/TECommon/Epilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

static Value f32Const(OpBuilder &b, Location loc, double value) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(static_cast<float>(value)));
}

Value mlir::te::emitGelu(OpBuilder &b, Location loc, Value x) {
  Value cube =
      arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
  Value inner = arith::MulFOp::create(
      b, loc, f32Const(b, loc, 0.7978845608028654),
      arith::AddFOp::create(
          b, loc, x,
          arith::MulFOp::create(b, loc, f32Const(b, loc, 0.044715), cube)));
  Value e = math::ExpOp::create(
      b, loc, arith::MulFOp::create(b, loc, f32Const(b, loc, 2.0), inner));
  Value tanh = arith::SubFOp::create(
      b, loc, f32Const(b, loc, 1.0),
      arith::DivFOp::create(
          b, loc, f32Const(b, loc, 2.0),
          arith::AddFOp::create(b, loc, e, f32Const(b, loc, 1.0))));
  Value half = arith::MulFOp::create(b, loc, f32Const(b, loc, 0.5), x);
  return arith::MulFOp::create(
      b, loc, half, arith::AddFOp::create(b, loc, f32Const(b, loc, 1.0), tanh));
}
