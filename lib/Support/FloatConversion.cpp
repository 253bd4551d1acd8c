//===- FloatConversion.cpp - Bit-exact narrow float conversions -----------===//
//
// One rounding routine serves every target format: it decomposes the double
// into an integer significand and a power of two, picks the target's quantum
// for that magnitude (the subnormal quantum below the smallest normal) and
// rounds the significand to it, ties to even. The rounded significand then
// is the encoding's low bits, with a carry into the exponent field where
// rounding reached the next binade - the usual trick that makes the subnormal
// to normal and largest-finite to infinity transitions fall out for free.
//
//===----------------------------------------------------------------------===//

#include "te/Support/FloatConversion.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

using namespace te::support;

namespace {

/// A binary float format of at most 32 bits: sign, exponent field, mantissa.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;
  int bias;
  /// IEEE formats reserve the all-ones exponent for inf and NaN. The "FN"
  /// formats (f8E4M3FN) have no infinity and only all-ones is NaN.
  bool hasInfinity;
  /// Out of range values become +-max instead of +-inf (or NaN).
  bool saturates;

  uint32_t signBit() const { return 1u << (exponentBits + mantissaBits); }
  uint32_t exponentMask() const {
    return ((1u << exponentBits) - 1) << mantissaBits;
  }
  uint32_t mantissaMask() const { return (1u << mantissaBits) - 1; }
  uint32_t quietBit() const { return 1u << (mantissaBits - 1); }
  /// Largest finite magnitude's encoding: just below infinity, or just below
  /// the all-ones NaN where there is no infinity.
  uint32_t maxFinite() const {
    return hasInfinity ? exponentMask() - 1
                       : exponentMask() | (mantissaMask() - 1);
  }
  int minNormalExponent() const { return 1 - bias; }
};

constexpr FloatFormat kF32 = {8, 23, 127, true, false};
constexpr FloatFormat kF16 = {5, 10, 15, true, false};
constexpr FloatFormat kBF16 = {8, 7, 127, true, false};
constexpr FloatFormat kF8E4M3FN = {4, 3, 7, false, true};
constexpr FloatFormat kF8E5M2 = {5, 2, 15, true, true};

// Overflow without saturation goes to infinity, which these formats lack.
static_assert(kF8E4M3FN.saturates);

} // namespace

static const FloatFormat *formatOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return &kF32;
  case DType::F16:
    return &kF16;
  case DType::BF16:
    return &kBF16;
  case DType::F8E4M3FN:
    return &kF8E4M3FN;
  case DType::F8E5M2:
    return &kF8E5M2;
  default:
    return nullptr;
  }
}

bool te::support::isRoundingTarget(DType dtype) {
  return formatOf(dtype) != nullptr;
}

/// Rounds `significand` * 2^-shift to an integer, ties to even.
static uint64_t shiftRightRoundingToEven(uint64_t significand, int shift) {
  if (shift <= 0)
    return significand << -shift;
  // significand < 2^53, so it is below half of 2^shift for such shifts.
  if (shift >= 64)
    return 0;
  uint64_t kept = significand >> shift;
  uint64_t rest = significand & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (rest > half || (rest == half && (kept & 1)))
    ++kept;
  return kept;
}

static uint32_t roundToFormat(double value, const FloatFormat &format) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint32_t sign = (bits >> 63) ? format.signBit() : 0;
  int biasedExponent = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t fraction = bits & ((uint64_t(1) << 52) - 1);

  if (biasedExponent == 0x7ff && fraction != 0) {
    if (!format.hasInfinity)
      return sign | format.exponentMask() | format.mantissaMask();
    // Keep the leading payload bits, as hardware conversions do, and make
    // sure a signaling NaN does not lose all its payload and become inf.
    uint32_t payload =
        static_cast<uint32_t>(fraction >> (52 - format.mantissaBits));
    return sign | format.exponentMask() | format.quietBit() | payload;
  }
  if (biasedExponent == 0x7ff)
    return sign |
           (format.saturates ? format.maxFinite() : format.exponentMask());
  if (biasedExponent == 0 && fraction == 0)
    return sign;

  // value = significand * 2^exponent exactly, with the leading one at bit
  // `log2` of the significand.
  uint64_t significand =
      biasedExponent ? fraction | (uint64_t(1) << 52) : fraction;
  int exponent = (biasedExponent ? biasedExponent : 1) - 1075;
  int log2 = 63 - __builtin_clzll(significand) + exponent;

  // The target's quantum at this magnitude is 2^(binade - mantissaBits).
  int binade = std::max(log2, format.minNormalExponent());
  int quantumExponent = binade - format.mantissaBits;
  uint64_t rounded =
      shiftRightRoundingToEven(significand, quantumExponent - exponent);

  // `rounded` carries the implicit leading one for normal values (and may
  // have carried into the next binade), so adding it lands on the right
  // exponent; subnormal results (binade at the minimum) need no special case.
  uint64_t encoding =
      (uint64_t(binade - format.minNormalExponent()) << format.mantissaBits) +
      rounded;
  if (encoding > format.maxFinite())
    encoding = format.saturates ? format.maxFinite() : format.exponentMask();
  return sign | static_cast<uint32_t>(encoding);
}

uint32_t te::support::roundToFloatBits(double value, DType target) {
  const FloatFormat *format = formatOf(target);
  assert(format && "not a rounding target");
  return roundToFormat(value, *format);
}

static float f32FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

float te::support::f64ToF32(double value) {
  return f32FromBits(roundToFormat(value, kF32));
}

float te::support::floatBitsToF32(uint32_t bits, DType source) {
  if (source == DType::F8E8M0FNU) {
    bits &= 0xff;
    if (bits == 0xff)
      return f32FromBits(0x7fc00000);
    // 2^-127 is an f32 subnormal; ldexp is exact here.
    return std::ldexp(1.0f, static_cast<int>(bits) - 127);
  }
  const FloatFormat *format = formatOf(source);
  assert(format && "not a float type of at most 32 bits");
  if (source == DType::F32)
    return f32FromBits(bits);

  bool negative = bits & format->signBit();
  uint32_t exponentField =
      (bits & format->exponentMask()) >> format->mantissaBits;
  uint32_t mantissa = bits & format->mantissaMask();
  uint32_t f32Sign = negative ? 0x80000000u : 0;
  uint32_t allOnes = (1u << format->exponentBits) - 1;

  if (format->hasInfinity && exponentField == allOnes)
    // Infinity or NaN; the payload moves to the top of f32's mantissa.
    return f32FromBits(f32Sign | 0x7f800000u |
                       (mantissa << (23 - format->mantissaBits)));
  if (!format->hasInfinity && exponentField == allOnes &&
      mantissa == format->mantissaMask())
    return f32FromBits(f32Sign | 0x7fc00000u);

  // Every value of these formats is an f32 value, so this is exact.
  float magnitude =
      exponentField == 0
          ? std::ldexp(static_cast<float>(mantissa),
                       format->minNormalExponent() - format->mantissaBits)
          : std::ldexp(
                static_cast<float>(mantissa | (1u << format->mantissaBits)),
                static_cast<int>(exponentField) - format->bias -
                    format->mantissaBits);
  return negative ? -magnitude : magnitude;
}
