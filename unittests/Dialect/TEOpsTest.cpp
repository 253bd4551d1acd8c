//===- TEOpsTest.cpp - C++ API of the te dialect --------------------------===//
//
// What frameworks and plugins see when they build te ops from C++: result
// type inference, the accessors that give named meaning to variadic results,
// and verifier diagnostics.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/InitAllDialects.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace mlir::te;

namespace {

class TEOpsTest : public ::testing::Test {
protected:
  TEOpsTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  /// Parses `source`, collecting diagnostics instead of printing them.
  OwningOpRef<ModuleOp> parse(StringRef source) {
    return parseSourceString<ModuleOp>(source, &ctx);
  }

  /// A function whose arguments have `types`, and a builder inside it.
  func::FuncOp makeFunc(TypeRange types) {
    OpBuilder b(&ctx);
    module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(b, b.getUnknownLoc(), "f",
                                   b.getFunctionType(types, {}));
    fn.addEntryBlock();
    return fn;
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elementType) {
    return RankedTensorType::get(shape, elementType);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

TEST_F(TEOpsTest, FP8MaxFollowsTheFormat) {
  EXPECT_EQ(*getFP8Max(Float8E4M3FNType::get(&ctx)), 448.0);
  EXPECT_EQ(*getFP8Max(Float8E5M2Type::get(&ctx)), 57344.0);
  EXPECT_TRUE(failed(getFP8Max(Float32Type::get(&ctx))));
}

TEST_F(TEOpsTest, MaskKindPredicates) {
  EXPECT_TRUE(isPaddingMask(MaskKind::padding_causal_bottom_right));
  EXPECT_FALSE(isPaddingMask(MaskKind::causal));
  EXPECT_TRUE(isCausalMask(MaskKind::padding_causal));
  EXPECT_FALSE(isCausalMask(MaskKind::arbitrary));
  EXPECT_TRUE(isBottomRightMask(MaskKind::causal_bottom_right));
  EXPECT_FALSE(isBottomRightMask(MaskKind::padding_causal));
}

// TE's DotProductAttention: the causal masks fix the diagonal, the others
// follow bottom_right_diagonal and default to bottom-right.
TEST(TEAttrsTest, BottomRightDiagonalResolution) {
  for (std::optional<bool> requested :
       {std::optional<bool>(), std::optional<bool>(true),
        std::optional<bool>(false)}) {
    EXPECT_FALSE(resolveBottomRightDiagonal(MaskKind::causal, requested));
    EXPECT_FALSE(
        resolveBottomRightDiagonal(MaskKind::padding_causal, requested));
    EXPECT_TRUE(
        resolveBottomRightDiagonal(MaskKind::causal_bottom_right, requested));
    EXPECT_TRUE(resolveBottomRightDiagonal(
        MaskKind::padding_causal_bottom_right, requested));
    for (MaskKind free :
         {MaskKind::no_mask, MaskKind::padding, MaskKind::arbitrary})
      EXPECT_EQ(resolveBottomRightDiagonal(free, requested),
                requested.value_or(true));
  }
  EXPECT_EQ(getForcedBottomRightDiagonal(MaskKind::causal), false);
  EXPECT_EQ(getForcedBottomRightDiagonal(MaskKind::causal_bottom_right), true);
  EXPECT_EQ(getForcedBottomRightDiagonal(MaskKind::padding), std::nullopt);
}

// Building attention without result types infers O (q's layout, d_v) and the
// LSE statistics from the operands.
TEST_F(TEOpsTest, AttentionBuilderInfersResultTypes) {
  Type bf16 = BFloat16Type::get(&ctx);
  auto q = tensor({2, 128, 16, 64}, bf16);
  auto k = tensor({2, 96, 4, 64}, bf16);
  auto v = tensor({2, 96, 4, 32}, bf16);
  func::FuncOp fn = makeFunc({q, k, v});
  OpBuilder b = OpBuilder::atBlockEnd(&fn.getBody().front());
  Block &body = fn.getBody().front();

  Value none;
  auto op = AttentionOp::create(
      b, b.getUnknownLoc(), body.getArgument(0), body.getArgument(1),
      body.getArgument(2), /*cu_seqlens_q=*/none, /*cu_seqlens_kv=*/none,
      /*seq_offsets_q=*/none, /*seq_offsets_kv=*/none, /*seqlens_q=*/none,
      /*seqlens_kv=*/none, /*mask=*/none, /*bias=*/none,
      /*alibi_slopes=*/none, /*rng_state=*/none, /*softmax_offset=*/none,
      QKVLayout::bshd, MaskKind::causal, /*window=*/nullptr,
      /*bottom_right_diagonal=*/nullptr, /*scale=*/nullptr, BiasKind::no_bias,
      SoftmaxKind::vanilla, APFloat(0.0f),
      /*return_lse=*/true);
  ASSERT_EQ(op->getNumResults(), 2u);
  EXPECT_EQ(op.getO().getType(), tensor({2, 128, 16, 32}, bf16));
  EXPECT_EQ(op.getLse().getType(),
            tensor({2, 16, 128, 1}, Float32Type::get(&ctx)));
  EXPECT_TRUE(succeeded(verify(op)));
  EXPECT_DOUBLE_EQ(*op.getEffectiveScale(), 1.0 / std::sqrt(64.0));
  EXPECT_EQ(op.getWindowBounds(), (std::pair<int64_t, int64_t>(-1, -1)));
}

TEST_F(TEOpsTest, AttentionScaleAndWindowAccessors) {
  auto module = parse(R"mlir(
    func.func @f(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x16xf32>) {
      %o = te.attention %q, %k, %v layout bshd window [4, 1] scale 0.5
          : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
      return
    })mlir");
  ASSERT_TRUE(module);
  AttentionOp op;
  module->walk([&](AttentionOp found) { op = found; });
  ASSERT_TRUE(op);
  EXPECT_DOUBLE_EQ(*op.getEffectiveScale(), 0.5);
  EXPECT_EQ(op.getWindowBounds(), (std::pair<int64_t, int64_t>(4, 1)));
}

// The variadic results of te.quantize get their names from the mode and usage.
TEST_F(TEOpsTest, QuantizeResultAccessors) {
  auto module = parse(R"mlir(
    func.func @f(%x: tensor<64x128xbf16>, %s: tensor<f32>) {
      %d, %dt, %si, %amax = te.quantize %x scale(%s) mode per_tensor usage both
          : tensor<64x128xbf16>, tensor<f32>
          -> tensor<64x128xf8E4M3FN>, tensor<128x64xf8E4M3FN>, tensor<f32>, tensor<f32>
      %m, %ms, %mc, %mcs = te.quantize %x mode mxfp8_1x32 usage both
          : tensor<64x128xbf16>
          -> tensor<64x128xf8E5M2>, tensor<64x4xf8E8M0FNU>, tensor<64x128xf8E5M2>, tensor<2x128xf8E8M0FNU>
      %c, %cs = te.quantize %x mode block_1x128 usage columnwise
          : tensor<64x128xbf16> -> tensor<128x64xf8E4M3FN>, tensor<128x1xf32>
      return
    })mlir");
  ASSERT_TRUE(module);
  SmallVector<QuantizeOp> ops;
  module->walk([&](QuantizeOp op) { ops.push_back(op); });
  ASSERT_EQ(ops.size(), 3u);

  QuantizeOp perTensor = ops[0];
  EXPECT_EQ(perTensor.getData(), perTensor.getResult(0));
  EXPECT_EQ(perTensor.getColumnwiseData(), perTensor.getResult(1));
  EXPECT_EQ(perTensor.getScaleInv(), perTensor.getResult(2));
  EXPECT_EQ(perTensor.getColumnwiseScaleInv(), perTensor.getResult(2));
  EXPECT_EQ(perTensor.getAmax(), perTensor.getResult(3));

  QuantizeOp mxfp8 = ops[1];
  EXPECT_EQ(mxfp8.getScaleInv(), mxfp8.getResult(1));
  EXPECT_EQ(mxfp8.getColumnwiseData(), mxfp8.getResult(2));
  EXPECT_EQ(mxfp8.getColumnwiseScaleInv(), mxfp8.getResult(3));
  EXPECT_FALSE(mxfp8.getAmax());

  QuantizeOp columnOnly = ops[2];
  EXPECT_FALSE(columnOnly.getData());
  EXPECT_FALSE(columnOnly.getScaleInv());
  EXPECT_EQ(columnOnly.getColumnwiseData(), columnOnly.getResult(0));
  EXPECT_EQ(columnOnly.getColumnwiseScaleInv(), columnOnly.getResult(1));

  EXPECT_EQ(QuantizeOp::getNumExpectedResults(ScalingMode::per_tensor,
                                              QuantizeUsage::rowwise),
            3u);
  EXPECT_EQ(QuantizeOp::getNumExpectedResults(ScalingMode::block_128x128,
                                              QuantizeUsage::both),
            4u);
}

TEST_F(TEOpsTest, BackwardParameterGradientAccessors) {
  auto module = parse(R"mlir(
    func.func @f(%q: tensor<1x8x2x16xf32>, %o: tensor<1x8x2x16xf32>, %lse: tensor<1x2x8x1xf32>,
                 %bias: tensor<1x2x8x8xf32>, %alpha: tensor<1x2x1x1xf32>) {
      %dq, %dk, %dv, %db, %da = te.attention_backward %q, %q, %q, %o, %o, %lse
          layout bshd bias post_scale softmax learnable bias_tensor(%bias) softmax_offset(%alpha)
          : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>,
             tensor<1x8x2x16xf32>, tensor<1x2x8x1xf32>, tensor<1x2x8x8xf32>, tensor<1x2x1x1xf32>)
          -> (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x8xf32>,
              tensor<1x2x1x1xf32>)
      return
    })mlir");
  ASSERT_TRUE(module);
  AttentionBackwardOp op;
  module->walk([&](AttentionBackwardOp found) { op = found; });
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getDBias(), op.getResult(3));
  EXPECT_EQ(op.getDSoftmaxOffset(), op.getResult(4));
}

// Verifier failures reach a diagnostic handler with the precise message.
TEST_F(TEOpsTest, VerifierNamesTheProblem) {
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto module = parse(R"mlir(
    func.func @f(%q: tensor<1x8x6x16xf32>, %k: tensor<1x8x4x16xf32>) {
      %o = te.attention %q, %k, %k layout bshd
          : (tensor<1x8x6x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>) -> tensor<1x8x6x16xf32>
      return
    })mlir");
  EXPECT_FALSE(module);
  EXPECT_NE(message.find("the number of query heads (6) must be a multiple "
                         "of the number of key/value heads (4)"),
            std::string::npos)
      << message;
}

TEST_F(TEOpsTest, CollectiveFindsItsProcessGroup) {
  auto module = parse(R"mlir(
    te.process_group @tp size 4
    func.func @f(%x: tensor<8x16xf32>) {
      %y = te.all_gather %x group @tp dim 1 : tensor<8x16xf32> -> tensor<8x64xf32>
      return
    })mlir");
  ASSERT_TRUE(module);
  AllGatherOp op;
  module->walk([&](AllGatherOp found) { op = found; });
  ASSERT_TRUE(op);
  ASSERT_TRUE(op.getProcessGroup());
  EXPECT_EQ(op.getProcessGroup().getSize(), 4u);
}

} // namespace
