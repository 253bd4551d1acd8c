//===- Compare.h - Differential comparison of kernel outputs ----*- C++ -*-===//
//
// What `te-run --check` uses to compare a kernel's output with the reference
// kernel's: per element |actual - reference| <= rtol * |reference| + atol,
// with rtol and atol chosen by the element type (see checkTolerance); NaN
// matches only NaN, an infinity only the same infinity. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_COMPARE_H
#define TE_SUPPORT_COMPARE_H

#include "te/Support/DType.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace te::support {

struct Tolerance {
  /// Bit-for-bit equality (fp8, integers, booleans); rtol and atol unused.
  bool exact = false;
  double rtol = 0;
  double atol = 0;

  /// "exact", or "abs A + rel R" for the report.
  std::string describe() const;
};

/// The tolerance for outputs of element type `dtype` whose reference has
/// largest finite magnitude `referenceMax`, computed by a program whose
/// narrowest floating-point type is `computedIn` (see narrowestFloat): an
/// f32 result of a bf16 or f16 program is judged at that type's precision.
/// `partials` is how many separately rounded partial results an output
/// element may be the sum of: 1 for one process; the number of ranks for
/// a program with collectives (a ring's steps, a reduction's ranks). For
/// bf16 and f16 precision, each of more than one partial adds one ulp at
/// `referenceMax` to the absolute tolerance.
Tolerance checkTolerance(DType dtype, double referenceMax, DType computedIn,
                         int partials = 1);
inline Tolerance checkTolerance(DType dtype, double referenceMax) {
  return checkTolerance(dtype, referenceMax, dtype);
}

/// The narrowest of bf16, f16 and f32 among `types` (a program's
/// arguments and results): bf16 when one is bf16, else f16 when one is
/// f16, else f32. FP8 and integer types do not count; their values come
/// from bit-exact lowerings.
DType narrowestFloat(const DType *types, size_t count);

struct Comparison {
  double maxAbsError = 0;
  double maxRelError = 0;
  Tolerance tolerance;
  /// Elements outside the tolerance.
  size_t mismatches = 0;
  /// The first of them (its index, both values), when there is one.
  size_t firstMismatch = 0;
  double firstActual = 0, firstReference = 0;
  bool ok() const { return mismatches == 0; }
};

/// Compares `count` elements of `dtype` (raw bytes, the kernel ABI's
/// layout) of `actual` with `reference`, outputs of a program whose
/// narrowest floating-point type is `computedIn`, summed from at most
/// `partials` rounded partial results (checkTolerance).
Comparison compareOutputs(const uint8_t *actual, const uint8_t *reference,
                          size_t count, DType dtype, DType computedIn,
                          int partials = 1);
inline Comparison compareOutputs(const uint8_t *actual,
                                 const uint8_t *reference, size_t count,
                                 DType dtype) {
  return compareOutputs(actual, reference, count, dtype, dtype);
}

} // namespace te::support

#endif // TE_SUPPORT_COMPARE_H
