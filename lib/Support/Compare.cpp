//===- Compare.cpp - Differential comparison of kernel outputs ------------===//

#include "te/Support/Compare.h"

#include "te/Support/FloatConversion.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace te::support;

std::string Tolerance::describe() const {
  if (exact)
    return "exact";
  char text[64];
  std::snprintf(text, sizeof(text), "abs %.3g + rel %.3g", atol, rtol);
  return text;
}

namespace {

/// For a type of `bits` significant bits: one ulp of the element as
/// relative tolerance; as absolute tolerance, half an ulp at
/// `referenceMax`, or one ulp there for each of `partials` > 1 rounded
/// partial results an element sums (checkTolerance says why).
Tolerance halfPrecisionTolerance(int bits, double atol, double referenceMax,
                                 int partials) {
  Tolerance tolerance;
  tolerance.rtol = std::ldexp(1.0, -(bits - 1));
  double ulpAtMax = std::ldexp(referenceMax, -(bits - 1));
  tolerance.atol = std::max(atol, ulpAtMax / 2);
  if (partials > 1)
    tolerance.atol = std::max(tolerance.atol, partials * ulpAtMax);
  return tolerance;
}

int significantBits(DType dtype) { return dtype == DType::BF16 ? 8 : 11; }

bool isHalf(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

double elementValue(const uint8_t *data, size_t index, DType dtype) {
  size_t size = dtypeSize(dtype);
  const uint8_t *at = data + index * size;
  if (dtype == DType::F64) {
    double value;
    std::memcpy(&value, at, 8);
    return value;
  }
  if (isFloat(dtype)) {
    uint32_t bits = 0;
    std::memcpy(&bits, at, size);
    return floatBitsToF32(bits, dtype);
  }
  int64_t integer = 0;
  std::memcpy(&integer, at, size);
  bool isSigned = dtype == DType::I8 || dtype == DType::I16 ||
                  dtype == DType::I32 || dtype == DType::I64;
  if (isSigned && size < 8 && ((integer >> (8 * size - 1)) & 1))
    integer -= int64_t(1) << (8 * size);
  return double(integer);
}

} // namespace

Tolerance te::support::checkTolerance(DType dtype, double referenceMax,
                                      DType computedIn, int partials) {
  Tolerance tolerance;
  // The reference sums in another order than the production kernels (te
  // attention: a vector reduction for q.k and an online softmax that
  // rescales its running sums at every new row max, against one ordered
  // sum and one normalization), so f32 results differ by a few ulp of the
  // output's scale per accumulated term. 1e-5 of max(1, max |reference|) is
  // ~80 f32 ulp of that scale: room for sums over thousands of keys, far
  // below any real error (a wrong mask or scale moves outputs by O(1)).
  double atol = 1e-5 * std::max(1.0, referenceMax);
  switch (dtype) {
  case DType::F32:
  case DType::F64:
    // An f32 result of a program that rounds values to bf16 or f16 on the
    // way (an attention backward's d alpha = -sum P_sink (dO . O), with O
    // the forward's bf16 output) inherits their one-ulp differences
    // between the two pipelines, summed: it is only as exact as that type.
    if (isHalf(computedIn))
      return halfPrecisionTolerance(significantBits(computedIn), atol,
                                    referenceMax, partials);
    tolerance.atol = atol;
    return tolerance;
  case DType::BF16:
  case DType::F16:
    // The f32 values differ by the above; rounding both to the output type
    // can then land on neighbouring values, one ulp apart: at most
    // 2^-(mantissa bits) |reference|. And where a program rounds an
    // intermediate to this type and goes on with it (a forward's O read by
    // the backward, D = dO . O), the two pipelines' intermediates may differ
    // by one ulp, which moves results by about one ulp of the output's own
    // scale, not of the element's: an element that is a sum of cancelling
    // terms (a small dQ entry) is only as exact as its terms. So atol is
    // also half an ulp at max |reference|: 2^-8 of it for bf16 (8
    // significant bits), 2^-11 for f16. Real errors (a wrong mask, scale or
    // index) move outputs by a sizeable part of max |reference|.
    //
    // An output that sums n > 1 partial results, each rounded to this type
    // on both sides (a ring attention's per-step gradients, each rounded
    // by its step's te.attention_backward and added up over the cp ranks;
    // a reduction over ranks), inherits each partial's rounding: the two
    // pipelines' f32 partials differ by a fraction of an ulp (within a
    // step the production kernel rounds P to bf16 for its sum over the
    // queries and the reference does not: about 2^-9 of the scale), so
    // their roundings are equal or neighbours, one ulp apart, and that
    // ulp is of the partial's magnitude, up to 2^-(mantissa bits) of
    // max |reference|. The partials may cancel to an element far smaller
    // than any of them, whose own ulp (rtol) covers none of it. Hence n
    // ulps at max |reference|, n = the number of ranks: 2^-5 of it for
    // bf16 on 4 ranks, 2^-6 on 2. (With one partial, the element's
    // rounding is that partial's, which rtol covers.)
    return halfPrecisionTolerance(significantBits(dtype), atol, referenceMax,
                                  partials);
  default:
    // fp8 and integers come from bit-exact lowerings on both sides.
    tolerance.exact = true;
    return tolerance;
  }
}

DType te::support::narrowestFloat(const DType *types, size_t count) {
  DType narrowest = DType::F32;
  for (size_t i = 0; i < count; ++i) {
    if (types[i] == DType::BF16)
      return DType::BF16;
    if (types[i] == DType::F16)
      narrowest = DType::F16;
  }
  return narrowest;
}

Comparison te::support::compareOutputs(const uint8_t *actual,
                                       const uint8_t *reference, size_t count,
                                       DType dtype, DType computedIn,
                                       int partials) {
  double referenceMax = 0;
  for (size_t i = 0; i < count; ++i) {
    double value = std::fabs(elementValue(reference, i, dtype));
    if (std::isfinite(value))
      referenceMax = std::max(referenceMax, value);
  }
  Comparison result;
  result.tolerance = checkTolerance(dtype, referenceMax, computedIn, partials);
  size_t size = dtypeSize(dtype);
  for (size_t i = 0; i < count; ++i) {
    double a = elementValue(actual, i, dtype);
    double r = elementValue(reference, i, dtype);
    double absError = 0, relError = 0;
    bool within;
    if (std::isnan(a) || std::isnan(r)) {
      within = std::isnan(a) && std::isnan(r);
      absError = relError = within ? 0 : INFINITY;
    } else if (a == r) {
      within = true; // equal values, infinities included
    } else {
      absError = std::fabs(a - r); // inf when one side is infinite
      relError = r != 0 ? absError / std::fabs(r) : INFINITY;
      within = std::isfinite(absError) &&
               absError <=
                   result.tolerance.rtol * std::fabs(r) + result.tolerance.atol;
    }
    if (result.tolerance.exact)
      within = std::memcmp(actual + i * size, reference + i * size, size) == 0;
    result.maxAbsError = std::max(result.maxAbsError, absError);
    result.maxRelError = std::max(result.maxRelError, relError);
    if (!within && result.mismatches++ == 0) {
      result.firstMismatch = i;
      result.firstActual = a;
      result.firstReference = r;
    }
  }
  return result;
}
