//===- InitAllDialects.h - Every dialect te tools register ------*- C++ -*-===//
#ifndef TE_INITALLDIALECTS_H
#define TE_INITALLDIALECTS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "te/Dialect/TE/IR/TEDialect.h"

namespace mlir::te {

/// Registers the te dialect and the upstream dialects te programs use.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<TEDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect>();
}

} // namespace mlir::te

#endif // TE_INITALLDIALECTS_H
