//===- TEOpsTest.cpp - Builders and helpers of the te dialect -------------===//
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/InitAllDialects.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::te;

TEST(TEAttrs, FP8Max) {
  MLIRContext ctx;
  EXPECT_EQ(*getFP8Max(Float8E4M3FNType::get(&ctx)), 448.0);
  EXPECT_EQ(*getFP8Max(Float8E5M2Type::get(&ctx)), 57344.0);
  EXPECT_TRUE(failed(getFP8Max(Float32Type::get(&ctx))));
}
