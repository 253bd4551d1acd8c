//===- TemplatePlugin.cpp - A minimal te-mlir plugin to copy --------------===//
//
// The smallest complete plugin: it lowers te.quantize with per-tensor
// scaling through a conversion pass of its own and declines every other
// configuration, which the native backend then lowers. A vendor copies this
// directory, renames the plugin, and replaces the pass with calls into its
// own kernels; docs/PluginAPI.md explains each piece.
//
// The lowering is the per-tensor recipe of Transformer Engine:
//   data      = fp8(x * scale)   round to nearest even, saturating
//   scale_inv = 1 / scale
//   amax      = max |x|          over the non-NaN elements (TE's fmaxf)
// written as three linalg.generic ops; the native backend takes them on to
// machine code like its own.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Plugin/Plugin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::plugin;

namespace {

//===----------------------------------------------------------------------===//
// The lowering: a pattern and the pass that applies it.
//===----------------------------------------------------------------------===//

/// A map from a rank-`rank` iteration space to a 0-d tensor.
AffineMap scalarMap(MLIRContext *context, unsigned rank) {
  return AffineMap::get(rank, 0, context);
}

struct QuantizePerTensorLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getMode() != ScalingMode::per_tensor || op.getColumnwiseData() ||
        !op.getData())
      return rewriter.notifyMatchFailure(op, "not row-wise per-tensor");
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    Value input = adaptor.getInput();
    Value scale = adaptor.getScale();
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    auto fp8Type = cast<FloatType>(dataType.getElementType());
    unsigned rank = dataType.getRank();
    Type f32 = rewriter.getF32Type(), i32 = rewriter.getI32Type();
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    SmallVector<utils::IteratorType> reduction(rank,
                                               utils::IteratorType::reduction);
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);

    // data = fp8(x * scale), with te-mlir's bit-exact codec.
    Value dataInit =
        tensor::EmptyOp::create(rewriter, loc, dataType.getShape(), fp8Type);
    Value data =
        linalg::GenericOp::create(
            rewriter, loc, dataType, ValueRange{input, scale}, dataInit,
            ArrayRef<AffineMap>{identity, scalarMap(context, rank), identity},
            parallel,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value scaled = arith::MulFOp::create(
                  b, loc, emitExtToF32(b, loc, args[0]), args[1]);
              linalg::YieldOp::create(b, loc,
                                      emitF32ToFP8(b, loc, scaled, fp8Type));
            })
            .getResult(0);

    // scale_inv = 1 / scale.
    Value scalarInit =
        tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{}, f32);
    Value scaleInv =
        linalg::GenericOp::create(
            rewriter, loc, scalarInit.getType(), scale, scalarInit,
            ArrayRef<AffineMap>{scalarMap(context, 0), scalarMap(context, 0)},
            ArrayRef<utils::IteratorType>{},
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value one =
                  arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
              linalg::YieldOp::create(
                  b, loc, Value(arith::DivFOp::create(b, loc, one, args[0])));
            })
            .getResult(0);

    // amax = max |x| over the non-NaN elements: the unsigned maximum of
    // te-mlir's amax bit patterns (emitAmaxBits), then back to f32.
    Value zero = arith::ConstantIntOp::create(rewriter, loc, i32, 0);
    Value bitsEmpty =
        tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{}, i32);
    Value bitsInit =
        linalg::FillOp::create(rewriter, loc, zero, bitsEmpty).getResult(0);
    Value maxBits =
        linalg::GenericOp::create(
            rewriter, loc, bitsInit.getType(), input, bitsInit,
            ArrayRef<AffineMap>{identity, scalarMap(context, rank)}, reduction,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value magnitude =
                  emitAmaxBits(b, loc, emitExtToF32(b, loc, args[0]));
              linalg::YieldOp::create(
                  b, loc,
                  Value(arith::MaxUIOp::create(b, loc, args[1], magnitude)));
            })
            .getResult(0);
    Value amax =
        linalg::GenericOp::create(
            rewriter, loc, scalarInit.getType(), maxBits, scalarInit,
            ArrayRef<AffineMap>{scalarMap(context, 0), scalarMap(context, 0)},
            ArrayRef<utils::IteratorType>{},
            [&](OpBuilder &b, Location loc, ValueRange args) {
              linalg::YieldOp::create(
                  b, loc,
                  Value(arith::BitcastOp::create(b, loc, f32, args[0])));
            })
            .getResult(0);

    rewriter.replaceOp(op, {data, scaleInv, amax});
    return success();
  }
};

/// The plugin's conversion pass: te.quantize (row-wise, per-tensor) to
/// linalg. Other te ops are left alone.
struct TemplateLowerQuantizePass
    : PassWrapper<TemplateLowerQuantizePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TemplateLowerQuantizePass)

  StringRef getArgument() const override { return "template-lower-quantize"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    tensor::TensorDialect>();
  }
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addIllegalOp<QuantizeOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    patterns.add<QuantizePerTensorLowering>(&getContext());
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

//===----------------------------------------------------------------------===//
// The provider: which configurations it takes, and how it lowers one.
//===----------------------------------------------------------------------===//

class QuantizeProvider : public LoweringProvider {
public:
  QuantizeProvider() : LoweringProvider("quantize", {"te.quantize"}) {}

  /// Every configuration the pass cannot take is declined here, with a
  /// reason the user sees in --explain.
  Decision check(Operation *op, const TargetInfo &target) const override {
    auto quantize = cast<QuantizeOp>(op);
    if (target.backend != "cpu")
      return Decision::decline("only the cpu backend");
    if (quantize.getMode() != ScalingMode::per_tensor)
      return Decision::decline("only per-tensor scaling, not " +
                               stringifyScalingMode(quantize.getMode()).str());
    if (quantize.getColumnwiseData() || !quantize.getData())
      return Decision::decline("only row-wise usage");
    if (!cast<ShapedType>(quantize.getInput().getType()).hasStaticShape())
      return Decision::decline("only static shapes");
    return Decision::accept();
  }

  /// `op` sits alone in a scratch module: run the plugin's pass on it.
  LogicalResult lower(Operation *op, const NativeLowering &native,
                      const TargetInfo &target) const override {
    auto module = op->getParentOfType<ModuleOp>();
    PassManager pm(module.getContext());
    pm.addPass(std::make_unique<TemplateLowerQuantizePass>());
    return pm.run(module);
  }
};

//===----------------------------------------------------------------------===//
// Registration.
//===----------------------------------------------------------------------===//

te_plugin_status registerTemplate(te_plugin_registrar *handle, char *error,
                                  size_t errorSize) {
  Registrar &registrar = Registrar::from(handle);
  registrar.addDialects([](DialectRegistry &registry) {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect,
                    tensor::TensorDialect>();
  });
  std::string problem;
  if (!registrar.addProvider(std::make_unique<QuantizeProvider>(), &problem)) {
    std::snprintf(error, errorSize, "%s", problem.c_str());
    return TE_PLUGIN_ERROR;
  }
  return TE_PLUGIN_OK;
}

/// Where a vendor plugin would open its device or load its libraries; it
/// runs once, the first time a provider of this plugin accepts an op.
te_plugin_status activateTemplate(char *error, size_t errorSize) {
  return TE_PLUGIN_OK;
}

} // namespace

TE_PLUGIN_DEFINE("template", "0.1.0", TE_PLUGIN_FEATURE_LOWERING,
                 registerTemplate, activateTemplate)
