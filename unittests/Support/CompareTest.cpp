//===- CompareTest.cpp - te-run --check's output comparison ---------------===//

#include "te/Support/Compare.h"

#include "te/Support/FloatConversion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace te::support;

namespace {

std::vector<uint8_t> bytesOf(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> bf16Bytes(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = f32ToBF16(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bytes;
}

Comparison compareF32(const std::vector<float> &actual,
                      const std::vector<float> &reference) {
  std::vector<uint8_t> a = bytesOf(actual), r = bytesOf(reference);
  return compareOutputs(a.data(), r.data(), actual.size(), DType::F32);
}

TEST(CompareTest, F32ToleranceScalesWithTheReference) {
  // max |ref| = 4: atol = 4e-5.
  Comparison close = compareF32({1.00003f, -4.0f}, {1.0f, -4.0f});
  EXPECT_TRUE(close.ok());
  EXPECT_NEAR(close.tolerance.atol, 4e-5, 1e-12);
  EXPECT_NEAR(close.maxAbsError, 3e-5, 1e-6);
  EXPECT_NEAR(close.maxRelError, 3e-5, 1e-6);

  Comparison far = compareF32({1.0001f, -4.0f}, {1.0f, -4.0f});
  EXPECT_FALSE(far.ok());
  EXPECT_EQ(far.mismatches, 1u);

  // Small references: the tolerance floor is 1e-5, not 1e-5 * max |ref|.
  EXPECT_TRUE(compareF32({0.001f + 9e-6f}, {0.001f}).ok());
  EXPECT_FALSE(compareF32({0.001f + 2e-5f}, {0.001f}).ok());
}

TEST(CompareTest, TheFirstElementOutsideIsNamed) {
  Comparison result =
      compareF32({1.0f, 2.5f, NAN, 4.0f}, {1.0f, 2.0f, 3.0f, 4.0f});
  EXPECT_EQ(result.mismatches, 2u);
  EXPECT_EQ(result.firstMismatch, 1u);
  EXPECT_EQ(result.firstActual, 2.5);
  EXPECT_EQ(result.firstReference, 2.0);
}

TEST(CompareTest, NaNAndInfinityMatchOnlyThemselves) {
  EXPECT_TRUE(compareF32({NAN, -INFINITY}, {NAN, -INFINITY}).ok());
  Comparison nan = compareF32({NAN}, {0.0f});
  EXPECT_FALSE(nan.ok());
  EXPECT_TRUE(std::isinf(nan.maxAbsError));
  EXPECT_FALSE(compareF32({0.0f}, {NAN}).ok());
  EXPECT_FALSE(compareF32({-INFINITY}, {-3.0f}).ok());
  EXPECT_FALSE(compareF32({INFINITY}, {-INFINITY}).ok());
}

TEST(CompareTest, BF16AllowsOneUlp) {
  // 1.0 and its upper neighbour 1 + 2^-7: one ulp, within 2^-7 relative.
  std::vector<uint8_t> a = bf16Bytes({1.0078125f}), r = bf16Bytes({1.0f});
  EXPECT_TRUE(compareOutputs(a.data(), r.data(), 1, DType::BF16).ok());
  // Two ulp is not.
  a = bf16Bytes({1.015625f});
  Comparison two = compareOutputs(a.data(), r.data(), 1, DType::BF16);
  EXPECT_FALSE(two.ok());
  EXPECT_NEAR(two.maxRelError, 0.015625, 1e-12);
}

TEST(CompareTest, BF16SmallElementsAreAsExactAsTheOutputsScale) {
  // max |ref| = 4: a small element may be off by half a bf16 ulp of 4
  // (2^-8 * 4 = 2^-6) as it inherits the rounding of larger intermediates,
  // but not by a sizeable part of the scale.
  std::vector<uint8_t> r = bf16Bytes({0.0009765625f, 4.0f});
  std::vector<uint8_t> a = bf16Bytes({0.0009765625f + 0.015625f, 4.0f});
  Comparison close = compareOutputs(a.data(), r.data(), 2, DType::BF16);
  EXPECT_TRUE(close.ok());
  EXPECT_DOUBLE_EQ(close.tolerance.atol, 0.015625);
  a = bf16Bytes({0.0009765625f + 0.0625f, 4.0f});
  EXPECT_FALSE(compareOutputs(a.data(), r.data(), 2, DType::BF16).ok());
}

TEST(CompareTest, FP8AndIntegersAreExact) {
  uint8_t a[] = {0x38, 0x40}, r[] = {0x38, 0x41};
  Comparison fp8 = compareOutputs(a, r, 2, DType::F8E4M3FN);
  EXPECT_TRUE(fp8.tolerance.exact);
  EXPECT_EQ(fp8.mismatches, 1u);
  EXPECT_EQ(fp8.tolerance.describe(), "exact");
  EXPECT_TRUE(compareOutputs(a, a, 2, DType::F8E4M3FN).ok());

  int32_t x[] = {-3, 7}, y[] = {-3, 8};
  Comparison ints =
      compareOutputs(reinterpret_cast<const uint8_t *>(x),
                     reinterpret_cast<const uint8_t *>(y), 2, DType::I32);
  EXPECT_FALSE(ints.ok());
  EXPECT_DOUBLE_EQ(ints.maxAbsError, 1.0);
}

TEST(CompareTest, ToleranceByType) {
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F32, 0.5).atol, 1e-5);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F32, 0.5).rtol, 0);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::BF16, 8).rtol, 1.0 / 128);
  // Half a bf16 / f16 ulp at max |reference|, at least the f32 atol.
  EXPECT_DOUBLE_EQ(checkTolerance(DType::BF16, 8).atol, 8.0 / 256);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::BF16, 0).atol, 1e-5);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F16, 1).rtol, 1.0 / 1024);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F16, 1).atol, 1.0 / 2048);
  EXPECT_TRUE(checkTolerance(DType::F8E5M2, 1).exact);
  EXPECT_TRUE(checkTolerance(DType::I1, 1).exact);
}

// An f32 output of a bf16 or f16 program (an attention backward's d alpha)
// is judged at that type's precision; of an f32 or FP8 program, at f32's.
TEST(CompareTest, F32OutputsOfHalfProgramsAtTheirPrecision) {
  DType bf16Program[] = {DType::BF16, DType::F32, DType::F16};
  DType f16Program[] = {DType::F32, DType::F16, DType::F8E4M3FN};
  DType f32Program[] = {DType::F8E4M3FN, DType::F32, DType::I32};
  EXPECT_EQ(narrowestFloat(bf16Program, 3), DType::BF16);
  EXPECT_EQ(narrowestFloat(f16Program, 3), DType::F16);
  EXPECT_EQ(narrowestFloat(f32Program, 3), DType::F32);
  EXPECT_EQ(narrowestFloat(nullptr, 0), DType::F32);

  Tolerance ofBF16 = checkTolerance(DType::F32, 8, DType::BF16);
  EXPECT_DOUBLE_EQ(ofBF16.rtol, 1.0 / 128);
  EXPECT_DOUBLE_EQ(ofBF16.atol, 8.0 / 256);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F32, 1, DType::F16).atol, 1.0 / 2048);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F32, 8, DType::F32).atol, 8e-5);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F32, 8, DType::F32).rtol, 0);

  // Seen on an H200: d alpha 7.65013 against the CPU's 7.65109 after each
  // device ran the bf16 forward itself. Outside f32's tolerance, within
  // bf16's; a wrong result (7.8) is outside both.
  float gpu[] = {7.65013f}, cpu[] = {7.65109f}, wrong[] = {7.8f};
  auto bytes = [](const float *x) {
    return reinterpret_cast<const uint8_t *>(x);
  };
  EXPECT_FALSE(compareOutputs(bytes(gpu), bytes(cpu), 1, DType::F32).ok());
  EXPECT_TRUE(
      compareOutputs(bytes(gpu), bytes(cpu), 1, DType::F32, DType::BF16).ok());
  EXPECT_FALSE(
      compareOutputs(bytes(wrong), bytes(cpu), 1, DType::F32, DType::BF16)
          .ok());
}

// The failure of ring_attention_cp4_backward's dV on 4 ranks (max abs err
// 4 against 3.11): an element that sums one bf16 partial per step, where
// the two pipelines' f32 partials straddle a rounding midpoint (518, between
// 516 and 520) and the partials cancel to a small element. One ulp of the
// partial is 4; the element's own ulp is tiny.
TEST(CompareTest, BF16SumsOfRoundedPartialsOnSeveralRanks) {
  auto roundedSum = [](std::vector<float> partials) {
    float sum = 0;
    for (float partial : partials)
      sum += bf16ToF32(f32ToBF16(partial));
    return sum;
  };
  float reference = roundedSum({517.99f, -510.0f, 1.5f, -1.5f});
  float actual = roundedSum({518.01f, -510.0f, 1.5f, -1.5f});
  ASSERT_EQ(reference, 6.0f);
  ASSERT_EQ(actual, 10.0f);
  // Another element sets max |reference| = 796, as in the failing run.
  std::vector<uint8_t> r = bf16Bytes({reference, 796.0f});
  std::vector<uint8_t> a = bf16Bytes({actual, 796.0f});

  // One process: half an ulp at 796 (3.11) does not cover it.
  Comparison alone = compareOutputs(a.data(), r.data(), 2, DType::BF16);
  EXPECT_DOUBLE_EQ(alone.tolerance.atol, 796.0 / 256);
  EXPECT_FALSE(alone.ok());
  // Four ranks, four partials: one ulp at 796 each, 2^-5 * 796 = 24.9.
  Comparison ring =
      compareOutputs(a.data(), r.data(), 2, DType::BF16, DType::BF16, 4);
  EXPECT_DOUBLE_EQ(ring.tolerance.atol, 4 * 796.0 / 128);
  EXPECT_TRUE(ring.ok()) << ring.maxAbsError;
  // Two ranks: 2^-6 * 796.
  EXPECT_DOUBLE_EQ(checkTolerance(DType::BF16, 796, DType::BF16, 2).atol,
                   2 * 796.0 / 128);
  // f16 and f32 outputs of a bf16 program scale the same way.
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F16, 1, DType::F16, 4).atol,
                   4.0 / 1024);
  EXPECT_DOUBLE_EQ(checkTolerance(DType::F32, 8, DType::BF16, 4).atol,
                   4 * 8.0 / 128);
  // A real error (a missing step: a tenth of the scale) still fails.
  std::vector<uint8_t> wrong = bf16Bytes({reference + 80.0f, 796.0f});
  EXPECT_FALSE(
      compareOutputs(wrong.data(), r.data(), 2, DType::BF16, DType::BF16, 4)
          .ok());
  // FP8 and integers stay exact whatever the ranks.
  EXPECT_TRUE(checkTolerance(DType::F8E4M3FN, 1, DType::F8E4M3FN, 4).exact);
}

} // namespace
