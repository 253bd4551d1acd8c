//===- DType.h - Element types of runtime buffers and kernels -----*- C -*-===//
//
// The element types a te-mlir kernel can take, named exactly as MLIR spells
// them so that kernel manifests and diagnostics read like the IR they came
// from.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_DTYPE_H
#define TE_RUNTIME_DTYPE_H

#include "te/Runtime/Status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Element type of a buffer or kernel argument. The numeric values are part
/// of the ABI: new types are only ever appended.
typedef enum te_dtype {
  /// Not a type: returned by getters given NULL. Never accepted as input.
  TE_DTYPE_INVALID = -1,
  TE_DTYPE_F32 = 0,
  TE_DTYPE_F64,
  TE_DTYPE_F16,
  TE_DTYPE_BF16,
  TE_DTYPE_F8E4M3FN,
  TE_DTYPE_F8E5M2,
  TE_DTYPE_F8E8M0FNU,
  /// A boolean, stored as one byte holding 0 or 1.
  TE_DTYPE_I1,
  TE_DTYPE_I8,
  TE_DTYPE_I32,
  TE_DTYPE_I64
} te_dtype;

/// Returns the storage size of one element in bytes (1 for TE_DTYPE_I1), or 0
/// for a value that is not a valid te_dtype. Thread safe.
TE_RUNTIME_EXPORT size_t te_dtype_size(te_dtype dtype);

/// Returns the MLIR spelling of the type: "f32", "f64", "f16", "bf16",
/// "f8E4M3FN", "f8E5M2", "f8E8M0FNU", "i1", "i8", "i32" or "i64"; NULL for a
/// value that is not a valid te_dtype. The string is static. Thread safe.
TE_RUNTIME_EXPORT const char *te_dtype_name(te_dtype dtype);

/// Parses an MLIR type spelling (case sensitive, as returned by te_dtype_name)
/// into *out.
/// Errors: TE_ERROR_INVALID_ARGUMENT if name or out is NULL;
/// TE_ERROR_NOT_FOUND if name is not one of the supported types (the message
/// lists them). *out is left unchanged on error. Thread safe.
TE_RUNTIME_EXPORT te_status te_dtype_from_name(const char *name, te_dtype *out);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_DTYPE_H
