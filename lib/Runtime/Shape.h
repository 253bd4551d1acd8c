//===- Shape.h - Tensor type helpers shared by the runtime ------*- C++ -*-===//
//
// Buffers and manifest arguments describe tensors the same way; these helpers
// keep their validation and their spelling in messages identical.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_SHAPE_H
#define TE_LIB_RUNTIME_SHAPE_H

#include "te/Runtime/DType.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace te::runtime {

/// Whether `dtype` is one of the enumerators (TE_DTYPE_INVALID is not).
bool isValidDType(te_dtype dtype);

/// Finds the te_dtype spelled `name` (its MLIR spelling).
bool lookupDType(std::string_view name, te_dtype &dtype);

/// All type spellings for messages: "f32, f64, ..., i64".
const char *dtypeNameList();

/// Computes the byte size of a dense tensor, or returns false if it does not
/// fit in size_t. Dimensions must already be known to be non-negative.
bool computeByteSize(te_dtype dtype, int rank, const int64_t *dims,
                     size_t &bytes);

/// Spells the dimensions as in a manifest: "2x128x16x64", or "scalar".
std::string formatDims(int rank, const int64_t *dims);

/// Spells a tensor type for messages: "bf16 2x128x16x64".
std::string formatTensorType(te_dtype dtype, int rank, const int64_t *dims);

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_SHAPE_H
