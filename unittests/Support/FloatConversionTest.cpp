//===- FloatConversionTest.cpp - Bit-exact narrow float conversions -------===//
//
// Three kinds of evidence: exhaustive round trips over every bit pattern of
// the 16- and 8-bit formats; a reference rounding that works differently from
// the library (it searches a table of every finite value of the format for
// the nearest one, instead of manipulating bits) checked on millions of
// random inputs; and hand-computed expectations at the edges (ties, overflow
// and saturation thresholds, subnormal boundaries, signed zero, NaN).
//
//===----------------------------------------------------------------------===//

#include "te/Support/FloatConversion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace te::support;

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

double doubleOf(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

/// A format's parameters, written down independently of the library's.
struct Format {
  DType dtype;
  int exponentBits;
  int mantissaBits;
  int bias;
  bool hasInfinity; // IEEE-style; otherwise only all-ones is NaN ("FN").
  bool saturates;
  int totalBits() const { return 1 + exponentBits + mantissaBits; }
  uint32_t signBit() const { return 1u << (totalBits() - 1); }
  bool isNaN(uint32_t bits) const {
    uint32_t magnitude = bits & (signBit() - 1);
    uint32_t infBits = ((1u << exponentBits) - 1) << mantissaBits;
    return hasInfinity ? magnitude > infBits : magnitude == signBit() - 1;
  }
};

const Format kBF16 = {DType::BF16, 8, 7, 127, true, false};
const Format kF16 = {DType::F16, 5, 10, 15, true, false};
const Format kE4M3 = {DType::F8E4M3FN, 4, 3, 7, false, true};
const Format kE5M2 = {DType::F8E5M2, 5, 2, 15, true, true};
const Format kRoundedFormats[] = {kBF16, kF16, kE4M3, kE5M2};

/// Every finite non-negative value of `format`, indexed by its encoding,
/// plus one more entry: the value the next encoding would have had with an
/// unbounded exponent (inf, or NaN for f8E4M3FN). Rounding that picks the
/// extra entry has overflowed.
std::vector<double> finiteValues(const Format &format) {
  std::vector<double> values;
  int maxField = (1 << format.exponentBits) - 1;
  for (int field = 0; field <= maxField; ++field)
    for (int mantissa = 0; mantissa < (1 << format.mantissaBits); ++mantissa) {
      double value =
          field == 0
              ? std::ldexp(mantissa, 1 - format.bias - format.mantissaBits)
              : std::ldexp((1 << format.mantissaBits) + mantissa,
                           field - format.bias - format.mantissaBits);
      values.push_back(value);
      bool lastFinite =
          format.hasInfinity
              ? field == maxField - 1 &&
                    mantissa == (1 << format.mantissaBits) - 1
              : field == maxField && mantissa == (1 << format.mantissaBits) - 2;
      if (lastFinite) {
        // The next encoding's value: one more ulp.
        values.push_back(
            value + std::ldexp(1.0, field - format.bias - format.mantissaBits));
        return values;
      }
    }
  return values;
}

/// Reference rounding by search: the nearest table entry, ties to the even
/// encoding, then overflow handling. Only for non-NaN inputs.
uint32_t referenceRound(double value, const Format &format,
                        const std::vector<double> &table) {
  uint32_t sign = std::signbit(value) ? format.signBit() : 0;
  double magnitude = std::fabs(value);
  uint32_t maxFinite = static_cast<uint32_t>(table.size()) - 2;
  uint32_t overflow = format.saturates ? maxFinite
                                       : (((1u << format.exponentBits) - 1)
                                          << format.mantissaBits);
  if (magnitude >= table.back())
    return sign | overflow;
  auto upper = std::upper_bound(table.begin(), table.end(), magnitude);
  uint32_t above = static_cast<uint32_t>(upper - table.begin());
  uint32_t below = above - 1;
  double toBelow = magnitude - table[below];
  double toAbove = table[above] - magnitude;
  // Exact by Sterbenz's lemma wherever a tie is possible (neighbours are
  // within a factor of two); next to zero they are still ordered correctly.
  uint32_t nearest = toBelow < toAbove   ? below
                     : toAbove < toBelow ? above
                     : (below % 2 == 0)  ? below
                                         : above;
  return sign | (nearest > maxFinite ? overflow : nearest);
}

std::string hex(uint64_t bits) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(bits));
  return text;
}

//===----------------------------------------------------------------------===//
// Widening
//===----------------------------------------------------------------------===//

TEST(FloatConversionTest, WideningMatchesTheFormatDefinition) {
  for (const Format &format : kRoundedFormats) {
    std::vector<double> table = finiteValues(format);
    uint32_t patterns = 1u << format.totalBits();
    for (uint32_t bits = 0; bits < patterns; ++bits) {
      float value = floatBitsToF32(bits, format.dtype);
      SCOPED_TRACE(std::string(dtypeName(format.dtype)) + " " + hex(bits));
      uint32_t magnitude = bits & (format.signBit() - 1);
      bool negative = bits & format.signBit();
      EXPECT_EQ(std::signbit(value), negative);
      if (format.isNaN(bits)) {
        EXPECT_TRUE(std::isnan(value));
      } else if (magnitude + 1 < table.size()) {
        EXPECT_EQ(std::fabs(static_cast<double>(value)), table[magnitude]);
      } else {
        EXPECT_EQ(std::fabs(value), kInf);
      }
    }
  }
}

TEST(FloatConversionTest, WideningAnchors) {
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToF32(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(bf16ToF32(0x7f7f), floatOf(0x7f7f0000));
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToF32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToF32(0xfc00), -kInf);
  EXPECT_EQ(f8E4M3FNToF32(0x7e), 448.0f);
  EXPECT_EQ(f8E4M3FNToF32(0xfe), -448.0f);
  EXPECT_EQ(f8E4M3FNToF32(0x38), 1.0f);
  EXPECT_EQ(f8E4M3FNToF32(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(f8E4M3FNToF32(0x07), 7 * std::ldexp(1.0f, -9));
  EXPECT_EQ(f8E4M3FNToF32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(f8E4M3FNToF32(0x78), 256.0f); // 0x78 is a number, not inf.
  EXPECT_TRUE(std::isnan(f8E4M3FNToF32(0x7f)));
  EXPECT_EQ(f8E5M2ToF32(0x7b), 57344.0f);
  EXPECT_EQ(f8E5M2ToF32(0x3c), 1.0f);
  EXPECT_EQ(f8E5M2ToF32(0x7c), kInf);
  EXPECT_EQ(f8E5M2ToF32(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(f8E5M2ToF32(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(bitsOf(f8E5M2ToF32(0x80)), 0x80000000u);
  EXPECT_TRUE(std::isnan(f8E5M2ToF32(0x7d)));
}

TEST(FloatConversionTest, WideningKeepsNaNPayloads) {
  // bf16 is f32's top half, so its NaNs (signaling ones too) widen exactly.
  EXPECT_EQ(bitsOf(bf16ToF32(0x7f81)), 0x7f810000u);
  EXPECT_EQ(bitsOf(bf16ToF32(0xffc0)), 0xffc00000u);
  EXPECT_EQ(bitsOf(f16ToF32(0x7e01)), 0x7fc02000u);
  EXPECT_EQ(bitsOf(f16ToF32(0xfc01)), 0xff802000u);
  EXPECT_EQ(bitsOf(f8E5M2ToF32(0x7d)), 0x7fa00000u);
  EXPECT_EQ(bitsOf(f8E4M3FNToF32(0xff)), 0xffc00000u);
}

TEST(FloatConversionTest, E8M0IsAPowerOfTwoPerPattern) {
  for (uint32_t bits = 0; bits < 255; ++bits) {
    float value = f8E8M0FNUToF32(static_cast<uint8_t>(bits));
    EXPECT_EQ(value, std::ldexp(1.0f, static_cast<int>(bits) - 127)) << bits;
  }
  EXPECT_EQ(bitsOf(f8E8M0FNUToF32(0)), 0x00400000u); // 2^-127, f32 subnormal
  EXPECT_EQ(f8E8M0FNUToF32(127), 1.0f);
  EXPECT_EQ(bitsOf(f8E8M0FNUToF32(254)), 0x7f000000u); // 2^127
  EXPECT_TRUE(std::isnan(f8E8M0FNUToF32(255)));
}

//===----------------------------------------------------------------------===//
// Exhaustive round trips: narrow -> f32 -> narrow
//===----------------------------------------------------------------------===//

// Every non-NaN pattern, -0 and +-inf included, comes back unchanged. A NaN
// comes back as the same pattern with the quiet bit (the mantissa's top bit)
// set: sign and payload survive, a signaling NaN becomes quiet. f8E4M3FN's
// only NaNs, 0x7f and 0xff, come back unchanged. f8E5M2's infinities come
// back as +-max (0x7b, 0xfb): fp8 conversions saturate.
TEST(FloatConversionTest, RoundTripEveryPattern) {
  for (const Format &format : kRoundedFormats) {
    uint32_t patterns = 1u << format.totalBits();
    uint32_t quietBit = 1u << (format.mantissaBits - 1);
    int nanCount = 0, saturatedCount = 0;
    for (uint32_t bits = 0; bits < patterns; ++bits) {
      uint32_t back =
          roundToFloatBits(floatBitsToF32(bits, format.dtype), format.dtype);
      bool isNaN = format.isNaN(bits);
      nanCount += isNaN;
      uint32_t expected = isNaN && format.hasInfinity ? bits | quietBit : bits;
      if (format.saturates && std::isinf(floatBitsToF32(bits, format.dtype))) {
        expected = bits - 1; // the encoding just below infinity: +-max
        ++saturatedCount;
      }
      ASSERT_EQ(back, expected)
          << dtypeName(format.dtype) << " " << hex(bits) << " -> " << hex(back);
    }
    // Guards the NaN predicate the expectation depends on.
    int mantissas = 1 << format.mantissaBits;
    EXPECT_EQ(nanCount, format.hasInfinity ? 2 * (mantissas - 1) : 2)
        << dtypeName(format.dtype);
    EXPECT_EQ(saturatedCount, format.dtype == DType::F8E5M2 ? 2 : 0);
  }
}

//===----------------------------------------------------------------------===//
// Rounding against the search-based reference
//===----------------------------------------------------------------------===//

/// Inputs that stress every format: all f32 bit patterns at random, values
/// spread over the narrow formats' ranges, and exact midpoints between
/// neighbouring values of `format` (the ties), with their neighbours.
std::vector<double> interestingInputs(const Format &format, bool asFloat,
                                      std::mt19937_64 &rng) {
  std::vector<double> inputs;
  std::uniform_int_distribution<uint64_t> anyBits;
  std::uniform_real_distribution<double> exponent(-160, 140);
  for (int i = 0; i < 400000; ++i) {
    uint64_t bits = anyBits(rng);
    double value =
        asFloat ? floatOf(static_cast<uint32_t>(bits)) : doubleOf(bits);
    if (!std::isnan(value))
      inputs.push_back(value);
    double spread = std::exp2(exponent(rng)) * (bits & 1 ? -1 : 1);
    inputs.push_back(asFloat ? static_cast<float>(spread) : spread);
  }
  std::vector<double> table = finiteValues(format);
  for (size_t i = 0; i + 1 < table.size(); ++i) {
    double tie = (table[i] + table[i + 1]) / 2; // exact in double
    if (asFloat && static_cast<float>(tie) != tie)
      continue;
    for (double value : {tie, std::nextafter(tie, 0.0),
                         std::nextafter(tie, 1e300), table[i]}) {
      double narrowed = asFloat ? static_cast<float>(value) : value;
      inputs.push_back(narrowed);
      inputs.push_back(-narrowed);
    }
  }
  return inputs;
}

TEST(FloatConversionTest, F32RoundingMatchesReference) {
  std::mt19937_64 rng(20240611);
  for (const Format &format : kRoundedFormats) {
    std::vector<double> table = finiteValues(format);
    for (double input : interestingInputs(format, /*asFloat=*/true, rng)) {
      float value = static_cast<float>(input);
      ASSERT_EQ(value, input);
      uint32_t expected = referenceRound(value, format, table);
      ASSERT_EQ(roundToFloatBits(value, format.dtype), expected)
          << dtypeName(format.dtype) << " of f32 " << hex(bitsOf(value)) << " ("
          << value << ")";
    }
  }
}

TEST(FloatConversionTest, F64RoundingMatchesReference) {
  std::mt19937_64 rng(7);
  for (const Format &format : kRoundedFormats) {
    std::vector<double> table = finiteValues(format);
    for (double input : interestingInputs(format, /*asFloat=*/false, rng))
      ASSERT_EQ(roundToFloatBits(input, format.dtype),
                referenceRound(input, format, table))
          << dtypeName(format.dtype) << " of f64 " << hex(bitsOf(input)) << " ("
          << input << ")";
  }
}

// The hardware's own f64 -> f32 conversion is IEEE round to nearest even.
TEST(FloatConversionTest, F64ToF32MatchesHardware) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> anyBits;
  std::uniform_real_distribution<double> exponent(-155, 130);
  for (int i = 0; i < 2000000; ++i) {
    double value = i % 2 ? doubleOf(anyBits(rng)) : std::exp2(exponent(rng));
    float expected = static_cast<float>(value);
    float actual = f64ToF32(value);
    if (std::isnan(value)) {
      ASSERT_TRUE(std::isnan(actual));
      ASSERT_EQ(std::signbit(actual), std::signbit(value));
    } else {
      ASSERT_EQ(bitsOf(actual), bitsOf(expected)) << hex(bitsOf(value));
    }
  }
  // Ties between f32 neighbours, around 1 and in the subnormal range.
  EXPECT_EQ(bitsOf(f64ToF32(1.0 + std::ldexp(1.0, -24))), 0x3f800000u);
  EXPECT_EQ(bitsOf(f64ToF32(1.0 + 3 * std::ldexp(1.0, -24))), 0x3f800002u);
  EXPECT_EQ(bitsOf(f64ToF32(std::ldexp(1.0, -150))), 0u);
  EXPECT_EQ(bitsOf(f64ToF32(std::ldexp(3.0, -150))), 2u);
  EXPECT_EQ(bitsOf(f64ToF32(std::nextafter(std::ldexp(1.0, -150), 1.0))), 1u);
  EXPECT_EQ(f64ToF32(1e39), kInf);
  EXPECT_EQ(f64ToF32(-1e39), -kInf);
  EXPECT_EQ(bitsOf(f64ToF32(-0.0)), 0x80000000u);
}

//===----------------------------------------------------------------------===//
// Hand-computed edges
//===----------------------------------------------------------------------===//

TEST(FloatConversionTest, BF16Edges) {
  EXPECT_EQ(f32ToBF16(1.0f), 0x3f80);
  // Ties go to the even mantissa, anything above a tie goes up.
  EXPECT_EQ(f32ToBF16(floatOf(0x3f808000)), 0x3f80);
  EXPECT_EQ(f32ToBF16(floatOf(0x3f818000)), 0x3f82);
  EXPECT_EQ(f32ToBF16(floatOf(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32ToBF16(floatOf(0x3f807fff)), 0x3f80);
  // Overflow goes to inf, by rounding, exactly past max + half an ulp.
  EXPECT_EQ(f32ToBF16(floatOf(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(f32ToBF16(floatOf(0x7f7f8000)), 0x7f80);
  EXPECT_EQ(f32ToBF16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(f32ToBF16(kInf), 0x7f80);
  EXPECT_EQ(f32ToBF16(-kInf), 0xff80);
  // Subnormals: bf16 has f32's exponent range, so they round like normals.
  EXPECT_EQ(f32ToBF16(floatOf(0x00000001)), 0x0000);
  EXPECT_EQ(f32ToBF16(floatOf(0x00008000)), 0x0000);
  EXPECT_EQ(f32ToBF16(floatOf(0x00008001)), 0x0001);
  EXPECT_EQ(f32ToBF16(floatOf(0x00018000)), 0x0002);
  EXPECT_EQ(f32ToBF16(floatOf(0x007fffff)), 0x0080); // to the smallest normal
  EXPECT_EQ(f32ToBF16(floatOf(0x807fffff)), 0x8080);
  EXPECT_EQ(f32ToBF16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToBF16(kNaN), 0x7fc0);
  EXPECT_EQ(f32ToBF16(-kNaN), 0xffc0);
  // A NaN whose payload is all below bf16's bits stays NaN (not inf).
  EXPECT_EQ(f32ToBF16(floatOf(0x7f800001)) & 0x7fc0, 0x7fc0);
  EXPECT_EQ(f32ToBF16(floatOf(0x7fa00000)), 0x7fe0);
}

TEST(FloatConversionTest, F16Edges) {
  EXPECT_EQ(f32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(f32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32ToF16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)),
            0x3c01);
  EXPECT_EQ(f32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(f32ToF16(65520.0f), 0x7c00); // the tie goes to even: inf
  EXPECT_EQ(f32ToF16(-1e6f), 0xfc00);
  EXPECT_EQ(f32ToF16(kInf), 0x7c00);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -25)), 0x0000); // tie with zero
  EXPECT_EQ(f32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32ToF16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(f32ToF16(1023 * std::ldexp(1.0f, -24)), 0x03ff); // largest subn.
  EXPECT_EQ(f32ToF16(1023.5f * std::ldexp(1.0f, -24)), 0x0400);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  EXPECT_EQ(f32ToF16(floatOf(0x00000001)), 0x0000);
  EXPECT_EQ(f32ToF16(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(f32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToF16(kNaN), 0x7e00);
  EXPECT_EQ(f32ToF16(-kNaN), 0xfe00);
}

TEST(FloatConversionTest, F8E4M3FNEdges) {
  EXPECT_EQ(f32ToF8E4M3FN(1.0f), 0x38);
  EXPECT_EQ(f32ToF8E4M3FN(448.0f), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(-448.0f), 0xfe);
  EXPECT_EQ(f32ToF8E4M3FN(447.0f), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(424.0f), 0x7d); // below the 416/448 tie
  EXPECT_EQ(f32ToF8E4M3FN(432.0f), 0x7e); // the tie: 448 is even
  EXPECT_EQ(f32ToF8E4M3FN(416.0f), 0x7d);
  // Above max: saturate (480 would be the NaN encoding 0x7f).
  EXPECT_EQ(f32ToF8E4M3FN(std::nextafter(448.0f, 1e9f)), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(464.0f), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(480.0f), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(1e30f), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(-1e30f), 0xfe);
  EXPECT_EQ(f32ToF8E4M3FN(std::numeric_limits<float>::max()), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(kInf), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(-kInf), 0xfe);
  EXPECT_EQ(f32ToF8E4M3FN(kNaN), 0x7f);
  EXPECT_EQ(f32ToF8E4M3FN(-kNaN), 0xff);
  EXPECT_EQ(f32ToF8E4M3FN(floatOf(0x7f800001)), 0x7f);
  // Subnormals: quantum 2^-9 up to the smallest normal 2^-6.
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(f32ToF8E4M3FN(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(3.0f, -10)), 0x02);
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(7.0f, -9)), 0x07);
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(7.5f, -9)), 0x08);
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(1.0f, -6)), 0x08);
  EXPECT_EQ(f32ToF8E4M3FN(-std::ldexp(1.0f, -12)), 0x80);
  EXPECT_EQ(f32ToF8E4M3FN(-0.0f), 0x80);
  EXPECT_EQ(f32ToF8E4M3FN(0.0f), 0x00);
}

TEST(FloatConversionTest, F8E5M2Edges) {
  EXPECT_EQ(f32ToF8E5M2(1.0f), 0x3c);
  EXPECT_EQ(f32ToF8E5M2(1.125f), 0x3c); // tie: 1.0 is even
  EXPECT_EQ(f32ToF8E5M2(1.375f), 0x3e); // tie: 1.5 is even
  EXPECT_EQ(f32ToF8E5M2(57344.0f), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(-57344.0f), 0xfb);
  EXPECT_EQ(f32ToF8E5M2(std::nextafter(57344.0f, 0.0f)), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(53248.0f), 0x7a); // 49152/57344 tie: 49152 is even
  EXPECT_EQ(f32ToF8E5M2(std::nextafter(53248.0f, 1e9f)), 0x7b);
  // Above max: saturate, even where IEEE rounding would give inf.
  EXPECT_EQ(f32ToF8E5M2(std::nextafter(57344.0f, 1e9f)), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(61440.0f), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(65536.0f), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(1e30f), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(kInf), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(-kInf), 0xfb);
  EXPECT_EQ(f32ToF8E5M2(kNaN), 0x7e);
  EXPECT_EQ(f32ToF8E5M2(-kNaN), 0xfe);
  // Subnormals: quantum 2^-16 up to the smallest normal 2^-14.
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(1.0f, -16)), 0x01);
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(f32ToF8E5M2(std::nextafter(std::ldexp(1.0f, -17), 1.0f)), 0x01);
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(3.0f, -17)), 0x02);
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(3.5f, -16)), 0x04);
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(1.0f, -14)), 0x04);
  EXPECT_EQ(f32ToF8E5M2(-0.0f), 0x80);
}

// Narrowing f64 directly rounds once; going through f32 would round twice.
TEST(FloatConversionTest, F64NarrowsWithoutDoubleRounding) {
  double justAboveTie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  ASSERT_EQ(f32ToBF16(static_cast<float>(justAboveTie)), 0x3f80);
  EXPECT_EQ(roundToFloatBits(justAboveTie, DType::BF16), 0x3f81u);
  double f16Case = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(roundToFloatBits(f16Case, DType::F16), 0x3c01u);
  double e4m3Case = 1.0 + std::ldexp(1.0, -4) + std::ldexp(1.0, -40);
  EXPECT_EQ(roundToFloatBits(e4m3Case, DType::F8E4M3FN), 0x39u);
  EXPECT_EQ(roundToFloatBits(1e300, DType::F8E4M3FN), 0x7eu);
  EXPECT_EQ(roundToFloatBits(-1e300, DType::F16), 0xfc00u);
  EXPECT_EQ(roundToFloatBits(std::ldexp(1.0, -1070), DType::F16), 0u);
}

// A signaling f64 NaN whose payload lies entirely below the target's
// mantissa must not turn into infinity; f32 inputs cannot show this, as the
// hardware quiets them on the way to double.
TEST(FloatConversionTest, SignalingNaNsStayNaN) {
  double signaling = doubleOf(0x7ff0000000000001);
  double negativeSignaling = doubleOf(0xfff0000000000001);
  EXPECT_EQ(roundToFloatBits(signaling, DType::F32), 0x7fc00000u);
  EXPECT_EQ(roundToFloatBits(negativeSignaling, DType::F32), 0xffc00000u);
  EXPECT_EQ(roundToFloatBits(signaling, DType::BF16), 0x7fc0u);
  EXPECT_EQ(roundToFloatBits(signaling, DType::F16), 0x7e00u);
  EXPECT_EQ(roundToFloatBits(negativeSignaling, DType::F16), 0xfe00u);
  EXPECT_EQ(roundToFloatBits(signaling, DType::F8E5M2), 0x7eu);
  EXPECT_EQ(roundToFloatBits(signaling, DType::F8E4M3FN), 0x7fu);
  // A payload in the kept bits survives, with the quiet bit added.
  EXPECT_EQ(roundToFloatBits(doubleOf(0x7ff4000000000000), DType::F16),
            0x7f00u);
  EXPECT_TRUE(std::isnan(f64ToF32(signaling)));
}

TEST(FloatConversionTest, RoundingTargets) {
  for (DType dtype : kAllDTypes)
    EXPECT_EQ(isRoundingTarget(dtype),
              dtype == DType::F32 || dtype == DType::F16 ||
                  dtype == DType::BF16 || dtype == DType::F8E4M3FN ||
                  dtype == DType::F8E5M2)
        << dtypeName(dtype);
}

} // namespace
