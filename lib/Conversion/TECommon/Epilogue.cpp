//===- Epilogue.cpp - GEMM epilogue math as arith ops ---------------------===//

#include "te/Conversion/TECommon/Epilogue.h"

#include "te/Conversion/TECommon/FP8Codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

Value mlir::te::emitGelu(OpBuilder &b, Location loc, Value x) {
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
  Value tanh = arith::SubFOp::create(
      b, loc, emitF32Constant(b, loc, 1.0),
      arith::DivFOp::create(
          b, loc, emitF32Constant(b, loc, 2.0),
          arith::AddFOp::create(b, loc, e, emitF32Constant(b, loc, 1.0))));
  Value half = arith::MulFOp::create(b, loc, emitF32Constant(b, loc, 0.5), x);
  return arith::MulFOp::create(
      b, loc, half,
      arith::AddFOp::create(b, loc, emitF32Constant(b, loc, 1.0), tanh));
}
