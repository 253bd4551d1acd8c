//===- TEOps.h - Operations of the te dialect -------------------*- C++ -*-===//
#ifndef TE_DIALECT_TE_IR_TEOPS_H
#define TE_DIALECT_TE_IR_TEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#define GET_OP_CLASSES
#include "te/Dialect/TE/IR/TEOps.h.inc"

#endif // TE_DIALECT_TE_IR_TEOPS_H
