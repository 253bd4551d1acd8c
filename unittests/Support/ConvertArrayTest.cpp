//===- ConvertArrayTest.cpp - te-run's rule for typing input arrays -------===//

#include "te/Support/ConvertArray.h"
#include "te/Support/FloatConversion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace te::support;

namespace {

template <typename T>
NpyArray arrayOf(DType dtype, std::vector<int64_t> shape,
                 const std::vector<T> &values) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.data.resize(values.size() * sizeof(T));
  if (!values.empty()) // memcpy's pointers must not be null, even for 0 bytes
    std::memcpy(array.data.data(), values.data(), array.data.size());
  return array;
}

template <typename T> std::vector<T> valuesOf(const NpyArray &array) {
  std::vector<T> values(array.data.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

const float kInf = std::numeric_limits<float>::infinity();

const std::vector<float> kF32Values = {
    1.0f,   -2.5f,       0.1f,      -0.0f,
    1e-30f, 500.0f,      -70000.0f, kInf,
    -kInf,  1.00390625f, 3.0e38f,   std::numeric_limits<float>::quiet_NaN()};

TEST(ConvertArrayTest, SameDTypeIsUnchanged) {
  for (DType dtype : kAllDTypes) {
    NpyArray array;
    array.dtype = dtype;
    array.shape = {2, 2};
    for (size_t i = 0; i < 4 * dtypeSize(dtype); ++i)
      array.data.push_back(static_cast<uint8_t>(i * 53 + 1));
    Expected<NpyArray> result = convertArray(array, dtype, "x.npy");
    ASSERT_TRUE(result.ok()) << result.message();
    EXPECT_EQ(result->dtype, dtype);
    EXPECT_EQ(result->shape, array.shape);
    EXPECT_EQ(result->data, array.data);
  }
}

TEST(ConvertArrayTest, F32RoundsElementwise) {
  NpyArray src = arrayOf(DType::F32, {3, 4}, kF32Values);
  struct Case {
    DType target;
    uint32_t (*expected)(float);
  } cases[] = {
      {DType::BF16, [](float v) -> uint32_t { return f32ToBF16(v); }},
      {DType::F16, [](float v) -> uint32_t { return f32ToF16(v); }},
      {DType::F8E4M3FN, [](float v) -> uint32_t { return f32ToF8E4M3FN(v); }},
      {DType::F8E5M2, [](float v) -> uint32_t { return f32ToF8E5M2(v); }},
  };
  for (const Case &c : cases) {
    Expected<NpyArray> result = convertArray(src, c.target, "x.npy");
    ASSERT_TRUE(result.ok()) << result.message();
    EXPECT_EQ(result->dtype, c.target);
    EXPECT_EQ(result->shape, src.shape);
    ASSERT_EQ(result->data.size(), kF32Values.size() * dtypeSize(c.target));
    for (size_t i = 0; i < kF32Values.size(); ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, result->data.data() + i * dtypeSize(c.target),
                  dtypeSize(c.target));
      EXPECT_EQ(bits, c.expected(kF32Values[i]))
          << dtypeName(c.target) << " element " << i;
    }
  }
  // Spot checks that tie the table to concrete bits.
  std::vector<uint16_t> bf16 =
      valuesOf<uint16_t>(*convertArray(src, DType::BF16, "x.npy"));
  EXPECT_EQ(bf16[0], 0x3f80);
  EXPECT_EQ(bf16[9], 0x3f80); // the 1/1.0078125 tie goes to even
  std::vector<uint8_t> e4m3 =
      valuesOf<uint8_t>(*convertArray(src, DType::F8E4M3FN, "x.npy"));
  EXPECT_EQ(e4m3[5], 0x7e); // 500 saturates to 448
  EXPECT_EQ(e4m3[6], 0xfe);
  EXPECT_EQ(e4m3[7], 0x7e);
  EXPECT_EQ(e4m3[11], 0x7f);

  std::vector<double> widened =
      valuesOf<double>(*convertArray(src, DType::F64, "x.npy"));
  for (size_t i = 0; i + 1 < kF32Values.size(); ++i)
    EXPECT_EQ(widened[i], static_cast<double>(kF32Values[i]));
  EXPECT_TRUE(std::isnan(widened.back()));
}

TEST(ConvertArrayTest, F64RoundsOnce) {
  double justAboveTie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  NpyArray src = arrayOf<double>(DType::F64, {}, {justAboveTie});
  EXPECT_EQ(valuesOf<uint16_t>(*convertArray(src, DType::BF16, "x")),
            std::vector<uint16_t>{0x3f81});
  EXPECT_EQ(valuesOf<float>(*convertArray(src, DType::F32, "x")),
            std::vector<float>{static_cast<float>(justAboveTie)});
  NpyArray big = arrayOf<double>(DType::F64, {2}, {1e300, -1e300});
  EXPECT_EQ(valuesOf<float>(*convertArray(big, DType::F32, "x")),
            (std::vector<float>{kInf, -kInf}));
  EXPECT_EQ(valuesOf<uint8_t>(*convertArray(big, DType::F8E5M2, "x")),
            (std::vector<uint8_t>{0x7b, 0xfb}));
}

TEST(ConvertArrayTest, RawBitsForNarrowFloats) {
  NpyArray u16 = arrayOf<uint16_t>(DType::U16, {2}, {0x3f80, 0xffc1});
  for (DType target : {DType::BF16, DType::F16}) {
    Expected<NpyArray> result = convertArray(u16, target, "x.npy");
    ASSERT_TRUE(result.ok()) << result.message();
    EXPECT_EQ(result->dtype, target);
    EXPECT_EQ(result->data, u16.data);
  }
  NpyArray u8 = arrayOf<uint8_t>(DType::U8, {1, 3}, {0x7f, 0x00, 0xfe});
  for (DType target : {DType::F8E4M3FN, DType::F8E5M2, DType::F8E8M0FNU}) {
    Expected<NpyArray> result = convertArray(u8, target, "x.npy");
    ASSERT_TRUE(result.ok()) << result.message();
    EXPECT_EQ(result->dtype, target);
    EXPECT_EQ(result->shape, u8.shape);
    EXPECT_EQ(result->data, u8.data);
  }
}

TEST(ConvertArrayTest, ZeroSizeAndRankZero) {
  NpyArray empty = arrayOf<float>(DType::F32, {0, 3}, {});
  Expected<NpyArray> result = convertArray(empty, DType::F16, "x");
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_EQ(result->shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(result->data.empty());
  NpyArray scalar = arrayOf<float>(DType::F32, {}, {-3.0f});
  EXPECT_EQ(valuesOf<uint16_t>(*convertArray(scalar, DType::F16, "x")),
            std::vector<uint16_t>{0xc200});
}

/// Expects the conversion to fail with a message naming the context, both
/// types and what would have been accepted.
void expectRejected(DType source, DType target, const std::string &accepted) {
  NpyArray src;
  src.dtype = source;
  src.shape = {1};
  src.data.resize(dtypeSize(source));
  Expected<NpyArray> result = convertArray(src, target, "inputs/q.npy");
  ASSERT_FALSE(result.ok()) << dtypeName(source) << " -> " << dtypeName(target);
  std::string prefix = "inputs/q.npy: cannot use " +
                       std::string(dtypeName(source)) + " data as " +
                       std::string(dtypeName(target)) + "; expected ";
  EXPECT_EQ(result.message().rfind(prefix, 0), 0u) << result.message();
  EXPECT_NE(result.message().find(accepted), std::string::npos)
      << result.message();
}

TEST(ConvertArrayTest, RejectsEverythingElse) {
  // Integers and booleans must match exactly.
  expectRejected(DType::I32, DType::I64, "numpy dtype '<i8'");
  expectRejected(DType::I64, DType::I32, "numpy dtype '<i4'");
  expectRejected(DType::U8, DType::I8, "numpy dtype '|i1'");
  expectRejected(DType::I8, DType::I1, "numpy dtype '|b1'");
  expectRejected(DType::I1, DType::I8, "numpy dtype '|i1'");
  expectRejected(DType::F32, DType::I32, "numpy dtype '<i4'");
  // Floats only come from f32/f64 values or raw bits of the right width.
  expectRejected(DType::I32, DType::F32, "an f32 or f64 array");
  expectRejected(DType::F16, DType::F32, "an f32 or f64 array");
  expectRejected(DType::BF16, DType::F32, "an f32 or f64 array");
  expectRejected(DType::U16, DType::F32, "an f32 or f64 array");
  expectRejected(DType::U8, DType::BF16, "raw bits as ui16");
  expectRejected(DType::I16, DType::F16, "raw bits as ui16");
  expectRejected(DType::F16, DType::BF16, "raw bits as ui16");
  expectRejected(DType::U16, DType::F8E4M3FN, "raw bits as ui8");
  expectRejected(DType::I8, DType::F8E5M2, "raw bits as ui8");
  expectRejected(DType::F8E5M2, DType::F8E4M3FN, "raw bits as ui8");
  // Rounding to a power of two is not offered.
  expectRejected(DType::F32, DType::F8E8M0FNU, "values are not rounded");
  expectRejected(DType::F64, DType::F8E8M0FNU, "raw bits as ui8");
}

} // namespace
