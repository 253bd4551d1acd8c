//===- DTypeTest.cpp - Element type names and sizes -----------------------===//

#include "RuntimeTestUtils.h"

using namespace te::runtime::testing;

namespace {

struct DTypeCase {
  te_dtype dtype;
  const char *name;
  size_t size;
};

const DTypeCase kAllDTypes[] = {
    {TE_DTYPE_F32, "f32", 4},
    {TE_DTYPE_F64, "f64", 8},
    {TE_DTYPE_F16, "f16", 2},
    {TE_DTYPE_BF16, "bf16", 2},
    {TE_DTYPE_F8E4M3FN, "f8E4M3FN", 1},
    {TE_DTYPE_F8E5M2, "f8E5M2", 1},
    {TE_DTYPE_F8E8M0FNU, "f8E8M0FNU", 1},
    {TE_DTYPE_I1, "i1", 1},
    {TE_DTYPE_I8, "i8", 1},
    {TE_DTYPE_I32, "i32", 4},
    {TE_DTYPE_I64, "i64", 8},
};

TEST(DTypeTest, NamesAndSizesFollowMLIR) {
  for (const DTypeCase &c : kAllDTypes) {
    EXPECT_STREQ(te_dtype_name(c.dtype), c.name);
    EXPECT_EQ(te_dtype_size(c.dtype), c.size) << c.name;
  }
}

TEST(DTypeTest, NamesParseBack) {
  for (const DTypeCase &c : kAllDTypes) {
    te_dtype parsed = TE_DTYPE_INVALID;
    EXPECT_EQ(te_dtype_from_name(c.name, &parsed), TE_OK) << c.name;
    EXPECT_EQ(parsed, c.dtype) << c.name;
  }
}

TEST(DTypeTest, InvalidValuesHaveNoNameOrSize) {
  EXPECT_EQ(te_dtype_name(TE_DTYPE_INVALID), nullptr);
  EXPECT_EQ(te_dtype_size(TE_DTYPE_INVALID), 0u);
  EXPECT_EQ(te_dtype_name(static_cast<te_dtype>(15)), nullptr);
  EXPECT_EQ(te_dtype_size(static_cast<te_dtype>(15)), 0u);
}

TEST(DTypeTest, UnknownNameIsNotFoundAndListsTheTypes) {
  te_dtype dtype = TE_DTYPE_I8;
  expectError([&] { return te_dtype_from_name("F32", &dtype); },
              TE_ERROR_NOT_FOUND, {"'F32'", "f32, f64", "i64"});
  EXPECT_EQ(dtype, TE_DTYPE_I8) << "output changed on error";
  expectError([&] { return te_dtype_from_name("", &dtype); },
              TE_ERROR_NOT_FOUND, {"''"});
}

TEST(DTypeTest, NullArgumentsAreRejected) {
  te_dtype dtype;
  expectError([&] { return te_dtype_from_name(nullptr, &dtype); },
              TE_ERROR_INVALID_ARGUMENT, {"name"});
  expectError([&] { return te_dtype_from_name("f32", nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"out"});
}

} // namespace
