//===- TEDialect.h - The te dialect -----------------------------*- C++ -*-===//
#ifndef TE_DIALECT_TE_IR_TEDIALECT_H
#define TE_DIALECT_TE_IR_TEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "te/Dialect/TE/IR/TEDialect.h.inc"

#endif // TE_DIALECT_TE_IR_TEDIALECT_H
