//===- Passes.h - te conversion passes --------------------------*- C++ -*-===//
#ifndef TE_CONVERSION_PASSES_H
#define TE_CONVERSION_PASSES_H

#include "te/Conversion/TEToGPU/TEToGPU.h"
#include "te/Conversion/TEToLinalg/TEToLinalg.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {

#define GEN_PASS_REGISTRATION
#include "te/Conversion/Passes.h.inc"

} // namespace mlir::te

#endif // TE_CONVERSION_PASSES_H
