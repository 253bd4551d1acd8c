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
/// largest finite magnitude `referenceMax`.
Tolerance checkTolerance(DType dtype, double referenceMax);

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
/// layout) of `actual` with `reference`.
Comparison compareOutputs(const uint8_t *actual, const uint8_t *reference,
                          size_t count, DType dtype);

} // namespace te::support

#endif // TE_SUPPORT_COMPARE_H
