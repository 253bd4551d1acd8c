//===- MatrixUnitTest.cpp - The matrix unit interface the kernels use -----===//
//
// WarpMMA16x8x16's fragment loads read what its maps say, from either
// staging of B, element by element or through a target's matrix load; the
// f32 FMA unit's product is C + A B where its maps place it; and
// the tiled kernels take a target's unit only when it is the shape their
// tiling is built for, declining others with a reason (MMALayoutTest checks
// the maps themselves on integers).
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToGPU/MatrixUnit.h"
#include "te/Conversion/TEToGPU/TEToGPU.h"
#include "te/InitAllDialects.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <gtest/gtest.h>

#include <vector>

using namespace mlir;
using namespace mlir::te;

namespace {

/// The 16x8x16 unit with element-by-element loads; its product is not
/// called here.
class ElementLoads : public WarpMMA16x8x16 {
public:
  std::string getName() const override { return "element loads"; }
  SmallVector<Value> multiplyAccumulate(OpBuilder &, Location, ArrayRef<Value>,
                                        ArrayRef<Value>,
                                        ArrayRef<Value> c) const override {
    return SmallVector<Value>(c.begin(), c.end());
  }
};

/// The same unit with a matrix load, which records the index each call
/// gets and returns the index (as f32 elements would be, any values do).
class MatrixLoads : public ElementLoads {
public:
  mutable std::vector<std::pair<Value, bool>> calls;

protected:
  bool hasLoadMatrix() const override { return true; }
  SmallVector<Value> loadMatrixX2(OpBuilder &b, Location loc, Value tile,
                                  Value index, bool transpose) const override {
    calls.push_back({index, transpose});
    Value element = memref::LoadOp::create(b, loc, tile, index);
    return {element, element, element, element};
  }
};

/// A unit of another shape (16x16x16 on 64 threads, as AMD's MFMA).
class OtherShape : public MatrixUnit {
public:
  std::string getName() const override { return "other"; }
  Shape getShape() const override { return {16, 16, 16, 64, 4, 4, 4}; }
  bool takesOperands(Type element) const override { return element.isBF16(); }
  TileCoord aElement(IndexExpr lane, int) const override {
    return {lane, lane};
  }
  TileCoord bElement(IndexExpr lane, int) const override {
    return {lane, lane};
  }
  TileCoord cElement(IndexExpr lane, int) const override {
    return {lane, lane};
  }
  mma::AccumulatorSource accumulatorForA(int i) const override {
    return {0, i};
  }
  SmallVector<Value> loadA(OpBuilder &, Location, Value, int64_t, IndexExpr,
                           IndexExpr, IndexExpr) const override {
    return {};
  }
  SmallVector<Value> loadB(OpBuilder &, Location, Value, int64_t, IndexExpr,
                           Staging, TileCoord) const override {
    return {};
  }
  SmallVector<Value> multiplyAccumulate(OpBuilder &, Location, ArrayRef<Value>,
                                        ArrayRef<Value>,
                                        ArrayRef<Value> c) const override {
    return SmallVector<Value>(c.begin(), c.end());
  }
};

/// A target with the given units and warp size.
class UnitTarget : public GPUTargetInfo {
public:
  UnitTarget(std::vector<const MatrixUnit *> units, unsigned warpSize)
      : units(std::move(units)), warpSize(warpSize) {}
  unsigned getWarpSize() const override { return warpSize; }
  std::string getDescription() const override { return "the test GPU"; }
  ArrayRef<const MatrixUnit *> getMatrixUnits() const override { return units; }

private:
  std::vector<const MatrixUnit *> units;
  unsigned warpSize;
};

class MatrixUnitTest : public ::testing::Test {
protected:
  MatrixUnitTest() : b(&ctx) {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  /// Builds a function that loads with `build` for the constant `lane` and
  /// returns the element indices its loads read once folded, in order.
  std::vector<int64_t> loadedIndices(
      int64_t lane,
      function_ref<SmallVector<Value>(OpBuilder &, Location, Value, IndexExpr)>
          build) {
    Location loc = b.getUnknownLoc();
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    auto tileType = MemRefType::get({4096}, b.getBF16Type());
    auto function =
        func::FuncOp::create(b, loc, "load", b.getFunctionType({tileType}, {}));
    Block *body = function.addEntryBlock();
    b.setInsertionPointToStart(body);
    Value laneValue = arith::ConstantIndexOp::create(b, loc, lane);
    // Returned, so that folding keeps the loads.
    SmallVector<Value> loaded =
        build(b, loc, body->getArgument(0), IndexExpr{&b, loc, laneValue});
    func::ReturnOp::create(b, loc, loaded);
    function.setType(
        b.getFunctionType({tileType}, ValueRange(loaded).getTypes()));
    // Folds the index arithmetic to constants.
    (void)applyPatternsGreedily(function, RewritePatternSet(&ctx));
    std::vector<int64_t> indices;
    function.walk([&](memref::LoadOp load) {
      auto constant =
          load.getIndices()[0].getDefiningOp<arith::ConstantIndexOp>();
      indices.push_back(constant ? constant.value() : -1);
    });
    return indices;
  }

  MLIRContext ctx;
  OpBuilder b;
};

constexpr int64_t kStride = 72;

IndexExpr constant(OpBuilder &b, Location loc, int64_t value) {
  return {&b, loc, arith::ConstantIndexOp::create(b, loc, value)};
}

// B element (k, n) is read at (row + k, col + n) of a [k][n] staging and
// at (row + n, col + k) of a [n][k] one; A element (r, k) at (row + r,
// col + k).
TEST_F(MatrixUnitTest, ElementLoadsReadWhatTheMapsSay) {
  ElementLoads unit;
  for (int64_t lane = 0; lane < 32; ++lane) {
    for (auto staging :
         {MatrixUnit::Staging::KRows, MatrixUnit::Staging::NRows}) {
      std::vector<int64_t> indices = loadedIndices(
          lane, [&](OpBuilder &b, Location loc, Value tile, IndexExpr l) {
            return unit.loadB(b, loc, tile, kStride, l, staging,
                              {constant(b, loc, 3), constant(b, loc, 40)});
          });
      ASSERT_EQ(indices.size(), static_cast<size_t>(mma::kBElements));
      for (int i = 0; i < mma::kBElements; ++i) {
        mma::Coord<int> e = mma::bElement(static_cast<int>(lane), i);
        int64_t expected = staging == MatrixUnit::Staging::KRows
                               ? (3 + e.row) * kStride + 40 + e.col
                               : (3 + e.col) * kStride + 40 + e.row;
        EXPECT_EQ(indices[i], expected) << "lane " << lane << " element " << i;
      }
    }
    std::vector<int64_t> indices = loadedIndices(
        lane, [&](OpBuilder &b, Location loc, Value tile, IndexExpr l) {
          return unit.loadA(b, loc, tile, kStride, l, constant(b, loc, 16),
                            constant(b, loc, 32));
        });
    ASSERT_EQ(indices.size(), static_cast<size_t>(mma::kAElements));
    for (int i = 0; i < mma::kAElements; ++i) {
      mma::Coord<int> e = mma::aElement(static_cast<int>(lane), i);
      EXPECT_EQ(indices[i], (16 + e.row) * kStride + 32 + e.col);
    }
  }
}

// With a matrix load, each lane supplies the row MMALayout.h's
// bFragmentRow and aFragmentRow give, offset by the fragment's origin, and
// B staged [k][n] is loaded transposed (MMALayoutTest shows that these
// loads give the fragments).
TEST_F(MatrixUnitTest, MatrixLoadsSupplyTheLaneRows) {
  for (int64_t lane = 0; lane < 32; ++lane) {
    for (bool kRows : {true, false}) {
      MatrixLoads unit;
      std::vector<int64_t> indices = loadedIndices(
          lane, [&](OpBuilder &b, Location loc, Value tile, IndexExpr l) {
            return unit.loadB(b, loc, tile, kStride, l,
                              kRows ? MatrixUnit::Staging::KRows
                                    : MatrixUnit::Staging::NRows,
                              {constant(b, loc, 3), constant(b, loc, 40)});
          });
      ASSERT_EQ(unit.calls.size(), 1u);
      EXPECT_EQ(unit.calls[0].second, kRows);
      mma::Coord<int> at = mma::bFragmentRow(static_cast<int>(lane), kRows);
      ASSERT_EQ(indices.size(), 1u);
      EXPECT_EQ(indices[0], (3 + at.row) * kStride + 40 + at.col);
    }
    MatrixLoads unit;
    std::vector<int64_t> indices = loadedIndices(
        lane, [&](OpBuilder &b, Location loc, Value tile, IndexExpr l) {
          return unit.loadA(b, loc, tile, kStride, l, constant(b, loc, 16),
                            constant(b, loc, 32));
        });
    ASSERT_EQ(indices.size(), 2u);
    for (int half = 0; half < 2; ++half) {
      mma::Coord<int> at = mma::aFragmentRow(static_cast<int>(lane), half);
      EXPECT_EQ(indices[half], (16 + at.row) * kStride + 32 + at.col);
      EXPECT_FALSE(unit.calls[half].second);
    }
  }
}

// The f32 FMA unit's product, evaluated: a lane's four accumulators after
// one multiplyAccumulate are C + A B at the places cElement gives (the
// 16-bit unit's), A read at (row + r, col + k) and B's (k, n) from either
// staging. The folded function is interpreted here: constants, the
// loads (at constant indices) and the FMAs.
TEST_F(MatrixUnitTest, FMAUnitMultipliesWhatTheMapsSay) {
  ThreadFMA16x8x16 unit;
  // Small integers: every product and sum is exact in f32 and double.
  std::vector<float> tileA(4096), tileB(4096);
  for (size_t i = 0; i < tileA.size(); ++i) {
    tileA[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6);
    tileB[i] = static_cast<float>(static_cast<int>(i * 5 % 11) - 5);
  }
  Location loc = b.getUnknownLoc();
  for (auto staging :
       {MatrixUnit::Staging::KRows, MatrixUnit::Staging::NRows}) {
    for (int lane = 0; lane < 32; ++lane) {
      OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
      b.setInsertionPointToEnd(module->getBody());
      auto tileType = MemRefType::get({4096}, b.getF32Type());
      SmallVector<Type> results(mma::kCElements, b.getF32Type());
      auto function = func::FuncOp::create(
          b, loc, "product", b.getFunctionType({tileType, tileType}, results));
      Block *body = function.addEntryBlock();
      b.setInsertionPointToStart(body);
      IndexExpr l = constant(b, loc, lane);
      SmallVector<Value> aFragment =
          unit.loadA(b, loc, body->getArgument(0), kStride, l,
                     constant(b, loc, 16), constant(b, loc, 32));
      SmallVector<Value> bFragment =
          unit.loadB(b, loc, body->getArgument(1), kStride, l, staging,
                     {constant(b, loc, 3), constant(b, loc, 40)});
      SmallVector<Value> c;
      for (int i = 0; i < mma::kCElements; ++i)
        c.push_back(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(i)));
      SmallVector<Value> d =
          unit.multiplyAccumulate(b, loc, aFragment, bFragment, c);
      func::ReturnOp::create(b, loc, d);
      (void)applyPatternsGreedily(function, RewritePatternSet(&ctx));

      DenseMap<Value, double> values;
      std::vector<double> got;
      bool understood = true;
      function.walk([&](Operation *op) {
        if (auto number = dyn_cast<arith::ConstantOp>(op)) {
          if (auto value = dyn_cast<FloatAttr>(number.getValue()))
            values[number] = value.getValueAsDouble();
          else if (auto value = dyn_cast<IntegerAttr>(number.getValue()))
            values[number] = static_cast<double>(value.getInt());
        } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
          auto index =
              load.getIndices()[0].getDefiningOp<arith::ConstantIndexOp>();
          auto tile = dyn_cast<BlockArgument>(load.getMemRef());
          if (!index || !tile) {
            understood = false;
            return;
          }
          const std::vector<float> &data =
              tile.getArgNumber() == 0 ? tileA : tileB;
          values[load] = data.at(index.value());
        } else if (auto fma = dyn_cast<math::FmaOp>(op)) {
          values[fma] = values.lookup(fma.getA()) * values.lookup(fma.getB()) +
                        values.lookup(fma.getC());
        } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
          for (Value value : ret.getOperands())
            got.push_back(values.lookup(value));
        } else if (!isa<func::FuncOp>(op)) {
          understood = false;
        }
      });
      ASSERT_TRUE(understood) << "lane " << lane;
      ASSERT_EQ(got.size(), static_cast<size_t>(mma::kCElements));
      for (int i = 0; i < mma::kCElements; ++i) {
        mma::Coord<int> e = mma::cElement(lane, i);
        double expected = i;
        for (int k = 0; k < mma::kK; ++k) {
          double a = tileA[(16 + e.row) * kStride + 32 + k];
          double bValue = staging == MatrixUnit::Staging::KRows
                              ? tileB[(3 + k) * kStride + 40 + e.col]
                              : tileB[(3 + e.col) * kStride + 40 + k];
          expected += a * bValue;
        }
        EXPECT_EQ(got[i], expected) << "lane " << lane << " element " << i;
      }
    }
  }
}

/// The first te op of `source`.
Operation *firstTEOp(ModuleOp module) {
  Operation *found = nullptr;
  module.walk([&](Operation *op) {
    if (!found && op->getDialect() && op->getDialect()->getNamespace() == "te")
      found = op;
  });
  return found;
}

// The tiled kernels take the 16x8x16 warp unit and nothing else: a target
// whose only unit has another shape, or whose warps are not the unit's
// thread group, is declined with the reason; with the unit they lower.
TEST_F(MatrixUnitTest, TiledKernelsTakeOnlyTheirUnit) {
  const char *programs[] = {
      R"(func.func @f(%q: tensor<1x16x2x16xbf16>) -> tensor<1x16x2x16xbf16> {
        %o = te.attention %q, %q, %q layout bshd
            : (tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>,
               tensor<1x16x2x16xbf16>) -> tensor<1x16x2x16xbf16>
        return %o : tensor<1x16x2x16xbf16>
      })",
      R"(func.func @f(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>,
                      %s: tensor<f32>) -> tensor<16x16xbf16> {
        %y = te.scaled_matmul %a, %b scales(%s, %s)
            : tensor<16x32xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>,
              tensor<f32> -> tensor<16x16xbf16>
        return %y : tensor<16x16xbf16>
      })"};
  const char *names[] = {"te.attention", "te.scaled_matmul"};
  OtherShape other;
  ElementLoads warpUnit;
  for (int p = 0; p < 2; ++p) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(programs[p], &ctx);
    ASSERT_TRUE(module);
    Operation *op = firstTEOp(*module);
    ASSERT_TRUE(op);
    std::string name = names[p];

    std::optional<std::string> reason =
        getGPUUnsupportedReason(op, UnitTarget({&other}, 64));
    ASSERT_TRUE(reason);
    EXPECT_EQ(*reason, name + " needs 16x8x16 matrix multiply-accumulate "
                              "units, which the test GPU lacks");

    reason = getGPUUnsupportedReason(op, UnitTarget({&other, &warpUnit}, 64));
    ASSERT_TRUE(reason);
    EXPECT_EQ(*reason, name + "'s GPU kernels run the 16x8x16 on 32 threads "
                              "unit on warps of its size; the test GPU has "
                              "64-lane warps");

    EXPECT_EQ(getGPUUnsupportedReason(op, UnitTarget({&other, &warpUnit}, 32)),
              std::nullopt);
  }
}

} // namespace
