//===- AsyncCopyTest.cpp - GPUTargetInfo's default staging copy -----------===//
//
// Kernels stage tiles with GPUTargetInfo::emitAsyncCopy, commit and wait.
// A target without asynchronous copies gets the default: a synchronous
// copy through registers, zeros where the copy is not valid, and no-op
// commits and waits, so that the same kernel is correct on it. The cuda
// target's cp.async form is checked on its PTX (test/Target/CUDA).
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToGPU/TEToGPU.h"
#include "te/InitAllDialects.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::te;

namespace {

/// A target that keeps every default.
class PlainTarget : public GPUTargetInfo {
public:
  unsigned getWarpSize() const override { return 32; }
  std::string getDescription() const override { return "plain"; }
};

TEST(AsyncCopyTest, DefaultCopiesThroughRegistersAndZeroesInvalidRows) {
  MLIRContext ctx;
  DialectRegistry registry;
  registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type bf16 = b.getBF16Type();
  auto source = MemRefType::get({64}, bf16);
  auto tile = MemRefType::get({72}, bf16);
  auto function =
      func::FuncOp::create(b, loc, "stage",
                           b.getFunctionType({source, tile, b.getIndexType(),
                                              b.getIndexType(), b.getI1Type()},
                                             {}));
  Block *body = function.addEntryBlock();
  b.setInsertionPointToStart(body);
  PlainTarget target;
  target.emitAsyncCopy(b, loc, body->getArgument(1), body->getArgument(2),
                       body->getArgument(0), body->getArgument(3), 8,
                       body->getArgument(4));
  target.emitAsyncCommit(b, loc);
  target.emitAsyncWait(b, loc, 0);
  func::ReturnOp::create(b, loc);
  ASSERT_TRUE(succeeded(verify(*module)));

  // One 16-byte load from the source at its index, one select per element
  // on the validity flag (the other arm zero), one 16-byte store to the
  // tile at its index; commit and wait add nothing.
  SmallVector<Operation *> ops;
  for (Operation &op : body->without_terminator())
    ops.push_back(&op);
  int loads = 0, selects = 0, stores = 0, others = 0;
  for (Operation *op : ops) {
    if (auto load = dyn_cast<vector::LoadOp>(op)) {
      ++loads;
      EXPECT_EQ(load.getBase(), body->getArgument(0));
      EXPECT_EQ(load.getIndices()[0], body->getArgument(3));
      EXPECT_EQ(load.getVectorType(), VectorType::get({8}, bf16));
    } else if (auto select = dyn_cast<arith::SelectOp>(op)) {
      ++selects;
      EXPECT_EQ(select.getCondition(), body->getArgument(4));
      auto zero = select.getFalseValue().getDefiningOp<arith::ConstantOp>();
      ASSERT_TRUE(zero);
      EXPECT_TRUE(cast<FloatAttr>(zero.getValue()).getValue().isZero());
    } else if (auto store = dyn_cast<vector::StoreOp>(op)) {
      ++stores;
      EXPECT_EQ(store.getBase(), body->getArgument(1));
      EXPECT_EQ(store.getIndices()[0], body->getArgument(2));
    } else if (!isa<arith::ConstantOp, vector::ExtractOp,
                    vector::FromElementsOp>(op)) {
      ++others;
      ADD_FAILURE() << "unexpected op " << op->getName().getStringRef().str();
    }
  }
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(selects, 8);
  EXPECT_EQ(stores, 1);
  EXPECT_EQ(others, 0);
}

} // namespace
