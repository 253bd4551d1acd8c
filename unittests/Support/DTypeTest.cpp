//===- DTypeTest.cpp - Names and sizes of te::support element types -------===//

#include "te/Support/DType.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace te::support;

namespace {

TEST(DTypeTest, NamesAreMLIRSpellingsAndParseBack) {
  const std::pair<DType, const char *> expected[] = {
      {DType::F32, "f32"},
      {DType::F64, "f64"},
      {DType::F16, "f16"},
      {DType::BF16, "bf16"},
      {DType::F8E4M3FN, "f8E4M3FN"},
      {DType::F8E5M2, "f8E5M2"},
      {DType::F8E8M0FNU, "f8E8M0FNU"},
      {DType::I1, "i1"},
      {DType::I8, "i8"},
      {DType::U8, "ui8"},
      {DType::I16, "i16"},
      {DType::U16, "ui16"},
      {DType::I32, "i32"},
      {DType::I64, "i64"}};
  ASSERT_EQ(std::size(expected), std::size(kAllDTypes));
  for (const auto &[dtype, name] : expected) {
    EXPECT_EQ(dtypeName(dtype), name);
    EXPECT_EQ(parseDType(name), dtype) << name;
    EXPECT_NE(dtypeNameList().find(name), std::string_view::npos) << name;
  }
}

TEST(DTypeTest, ParseRejectsOtherSpellings) {
  for (const char *name : {"", "F32", "float32", "ui32", "u8", "bf16 ", "i"})
    EXPECT_EQ(parseDType(name), std::nullopt) << '"' << name << '"';
}

TEST(DTypeTest, SizesAndKinds) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F8E4M3FN), 1u);
  EXPECT_EQ(dtypeSize(DType::F8E5M2), 1u);
  EXPECT_EQ(dtypeSize(DType::F8E8M0FNU), 1u);
  EXPECT_EQ(dtypeSize(DType::I1), 1u);
  EXPECT_EQ(dtypeSize(DType::I8), 1u);
  EXPECT_EQ(dtypeSize(DType::U8), 1u);
  EXPECT_EQ(dtypeSize(DType::I16), 2u);
  EXPECT_EQ(dtypeSize(DType::U16), 2u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  std::set<DType> floats;
  for (DType dtype : kAllDTypes)
    if (isFloat(dtype))
      floats.insert(dtype);
  EXPECT_EQ(floats, (std::set<DType>{DType::F32, DType::F64, DType::F16,
                                     DType::BF16, DType::F8E4M3FN,
                                     DType::F8E5M2, DType::F8E8M0FNU}));
}

} // namespace
