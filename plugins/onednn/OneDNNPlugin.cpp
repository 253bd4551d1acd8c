//===- OneDNNPlugin.cpp - te ops on oneDNN's CPU primitives ---------------===//
//
// The oneDNN plugin lowers the configurations of te.attention,
// te.scaled_matmul and te.norm that oneDNN's CPU primitives compute, and
// declines the rest with the reason, so they lower natively. Each lowering
// converts the op's operands to f32 in the fixed layout the runtime functions
// take (OneDNNRuntime.h), calls the function on the buffers, and converts the
// f32 result back to the op's type and layout; the kernel links the
// plugin's runtime library, libte-onednn-runtime.so, which sits next to
// this plugin.
//
//===----------------------------------------------------------------------===//

#include "OneDNNRuntime.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Plugin/Plugin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/DebugStringHelper.h"

#include <array>
#include <cstdio>
#include <dlfcn.h>
#include <optional>
#include <string>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::plugin;

namespace {

constexpr const char *kRuntimeLibrary = "libte-onednn-runtime.so";

/// The runtime library next to this plugin's own file (empty if this
/// file cannot be located).
const std::string &runtimeLibraryPath() {
  static const std::string path = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&runtimeLibraryPath), &info) ||
        !info.dli_fname)
      return std::string();
    std::string self = info.dli_fname;
    return self.substr(0, self.find_last_of('/') + 1) + kRuntimeLibrary;
  }();
  return path;
}

bool isWideFloat(Type type) {
  return type.isF32() || type.isBF16() || type.isF16();
}

//===----------------------------------------------------------------------===//
// IR helpers
//===----------------------------------------------------------------------===//

/// A new f32 tensor of `shape` whose element at output index (i...) is
/// `source` at `map`(i...), converted exactly to f32.
Value convertToF32(OpBuilder &b, Location loc, Value source,
                   ArrayRef<int64_t> shape, AffineMap map) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  Value init = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  SmallVector<utils::IteratorType> loops(shape.size(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, source, init,
             ArrayRef<AffineMap>{map, b.getMultiDimIdentityMap(shape.size())},
             loops,
             [](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(b, loc, emitExtToF32(b, loc, args[0]));
             })
      .getResult(0);
}

/// `result` (f32) as a tensor of `type`, element (i...) read from `result`
/// at `map`(i...), rounded to nearest even.
Value convertFromF32(OpBuilder &b, Location loc, Value result,
                     RankedTensorType type, AffineMap map) {
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<utils::IteratorType> loops(type.getRank(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, result, init,
             ArrayRef<AffineMap>{map, b.getMultiDimIdentityMap(type.getRank())},
             loops,
             [&](OpBuilder &b, Location loc, ValueRange args) {
               linalg::YieldOp::create(
                   b, loc,
                   emitTruncFromF32(b, loc, args[0], type.getElementType()));
             })
      .getResult(0);
}

/// The address of `memref`'s data as an !llvm.ptr.
Value pointerOf(OpBuilder &b, Location loc, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value address = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
}

/// The buffer of the (static, identity-layout) tensor `value`.
Value bufferOf(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), value,
      /*read_only=*/true);
}

/// Declares `name` with `type` in `module` (once).
void declare(ModuleOp module, StringRef name, FunctionType type) {
  if (SymbolTable::lookupSymbolIn(module, name))
    return;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto function = func::FuncOp::create(b, module.getLoc(), name, type);
  function.setPrivate();
}

/// What both providers require: the CPU backend, static shapes and the
/// runtime library. A decline, or nullopt when `op` meets them.
std::optional<Decision> checkCommon(Operation *op, const TargetInfo &target) {
  if (target.backend != "cpu")
    return Decision::decline("only the cpu backend");
  for (Value operand : op->getOperands())
    if (!cast<ShapedType>(operand.getType()).hasStaticShape())
      return Decision::decline("dynamic shapes");
  if (runtimeLibraryPath().empty())
    return Decision::decline("cannot locate " + std::string(kRuntimeLibrary));
  return std::nullopt;
}

/// Calls the runtime function `name` (declared in `op`'s module, which then
/// links the runtime library) with `args`; returns `output` (the buffer it
/// writes) as a tensor.
Value callRuntime(OpBuilder &b, Location loc, Operation *op, StringRef name,
                  ArrayRef<Value> args, Value output) {
  auto module = op->getParentOfType<ModuleOp>();
  SmallVector<Type> argTypes;
  for (Value arg : args)
    argTypes.push_back(arg.getType());
  declare(module, name, b.getFunctionType(argTypes, {b.getI32Type()}));
  Value code =
      func::CallOp::create(b, loc, name, TypeRange{b.getI32Type()}, args)
          .getResult(0);
  addLinkLibrary(module, runtimeLibraryPath());
  // A failing call fails the launch with the op, its location and oneDNN's
  // status (OneDNNRuntime.h).
  Value failed = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, code,
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0));
  Value code64 = arith::ExtSIOp::create(b, loc, b.getI64Type(), code);
  CheckOp::create(
      b, loc, failed, ValueRange{code64},
      (op->getName().getStringRef() + " at {loc}: the onednn plugin's " + name +
       " failed with dnnl_status_t {0} (1: out of memory, 2: invalid "
       "arguments, 3: unimplemented, 5: runtime error; -1: another error)")
          .str());
  auto type = cast<MemRefType>(output.getType());
  return bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
      output, /*restrict=*/true, /*writable=*/true);
}

Value i64Const(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), value);
}

/// A map of rank 4 from (batch, head, position, column) to the element of a
/// Q/K/V/O tensor in `layout`.
AffineMap canonicalToLayout(MLIRContext *ctx, QKVLayout layout) {
  AffineExpr n = getAffineDimExpr(0, ctx), h = getAffineDimExpr(1, ctx),
             s = getAffineDimExpr(2, ctx), d = getAffineDimExpr(3, ctx);
  switch (layout) {
  case QKVLayout::bshd:
    return AffineMap::get(4, 0, {n, s, h, d}, ctx);
  case QKVLayout::sbhd:
    return AffineMap::get(4, 0, {s, n, h, d}, ctx);
  case QKVLayout::bhsd:
    return AffineMap::get(4, 0, {n, h, s, d}, ctx);
  case QKVLayout::thd:
    break;
  }
  llvm_unreachable("thd is declined");
}

/// (batch, seq, heads, head dim) of a Q/K/V tensor.
std::array<int64_t, 4> dimsOf(Value value, QKVLayout layout) {
  HeadTensorDims dims = getHeadTensorDims(
      layout, cast<RankedTensorType>(value.getType()).getShape());
  return {dims.batch, dims.seq, dims.heads, dims.headDim};
}

//===----------------------------------------------------------------------===//
// te.attention
//===----------------------------------------------------------------------===//

class AttentionProvider : public LoweringProvider {
public:
  AttentionProvider() : LoweringProvider("attention", {"te.attention"}) {}

  Decision check(Operation *operation,
                 const TargetInfo &target) const override {
    auto op = cast<AttentionOp>(operation);
    if (std::optional<Decision> declined = checkCommon(op, target))
      return *declined;
    for (Value operand : {op.getQ(), op.getK(), op.getV()}) {
      Type element = cast<ShapedType>(operand.getType()).getElementType();
      if (!isWideFloat(element))
        return Decision::decline(debugString(element) +
                                 " inputs (oneDNN 2.x has no FP8 types)");
    }
    if (op.getLayout() == QKVLayout::thd)
      return Decision::decline("thd layout (ragged sequences)");
    MaskKind mask = op.getMaskKind();
    if (mask == MaskKind::arbitrary)
      return Decision::decline("arbitrary mask");
    if (isPaddingMask(mask))
      return Decision::decline("padding masks (per-sequence lengths)");
    auto [left, right] = op.getWindowBounds();
    bool causal = isCausalMask(mask);
    if (left >= 0 || (right >= 0 && !(causal && right == 0)))
      return Decision::decline("sliding window");
    if (op.getBiasKind() != BiasKind::no_bias)
      return Decision::decline("bias " +
                               stringifyBiasKind(op.getBiasKind()).str());
    if (op.getSoftmaxKind() != SoftmaxKind::vanilla)
      return Decision::decline("softmax " +
                               stringifySoftmaxKind(op.getSoftmaxKind()).str());
    if (!op.getDropout().isZero())
      return Decision::decline("dropout");
    if (op.getLse())
      return Decision::decline("LSE output");
    std::array<int64_t, 4> q = dimsOf(op.getQ(), op.getLayout());
    std::array<int64_t, 4> k = dimsOf(op.getK(), op.getLayout());
    if (causal && op.isBottomRightDiagonal() && q[1] > k[1])
      return Decision::decline("causal mask aligned bottom-right with s_q > "
                               "s_kv (query rows without keys)");
    return Decision::accept();
  }

  LogicalResult lower(Operation *operation, const NativeLowering &,
                      const TargetInfo &) const override {
    auto op = cast<AttentionOp>(operation);
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    QKVLayout layout = op.getLayout();
    std::array<int64_t, 4> q = dimsOf(op.getQ(), layout),
                           k = dimsOf(op.getK(), layout),
                           v = dimsOf(op.getV(), layout);
    int64_t batch = q[0], seqQ = q[1], headsQ = q[2], dQK = q[3], seqKV = k[1],
            headsKV = k[2], dV = v[3];
    AffineMap toLayout = canonicalToLayout(ctx, layout);

    Value qf =
        convertToF32(b, loc, op.getQ(), {batch, headsQ, seqQ, dQK}, toLayout);
    Value kf =
        convertToF32(b, loc, op.getK(), {batch, headsKV, seqKV, dQK}, toLayout);
    Value vf =
        convertToF32(b, loc, op.getV(), {batch, headsKV, seqKV, dV}, toLayout);
    auto oType = MemRefType::get({batch, headsQ, seqQ, dV}, b.getF32Type());
    Value oBuffer = memref::AllocOp::create(b, loc, oType);

    int64_t maskKind = TE_ONEDNN_MASK_NONE;
    if (isCausalMask(op.getMaskKind()))
      maskKind = op.isBottomRightDiagonal() ? TE_ONEDNN_MASK_CAUSAL_BOTTOM_RIGHT
                                            : TE_ONEDNN_MASK_CAUSAL;
    SmallVector<Value> args = {
        pointerOf(b, loc, bufferOf(b, loc, qf)),
        pointerOf(b, loc, bufferOf(b, loc, kf)),
        pointerOf(b, loc, bufferOf(b, loc, vf)),
        pointerOf(b, loc, oBuffer),
        i64Const(b, loc, batch),
        i64Const(b, loc, headsQ),
        i64Const(b, loc, headsKV),
        i64Const(b, loc, seqQ),
        i64Const(b, loc, seqKV),
        i64Const(b, loc, dQK),
        i64Const(b, loc, dV),
        arith::ConstantOp::create(
            b, loc,
            b.getF32FloatAttr(static_cast<float>(*op.getEffectiveScale()))),
        i64Const(b, loc, maskKind)};
    Value of =
        callRuntime(b, loc, op, "te_onednn_attention_f32", args, oBuffer);

    // Back to the op's layout: O's element (layout indices) is of at the
    // canonical (batch, head, position, column).
    RankedTensorType resultType = op.getO().getType();
    AffineMap fromLayout = inversePermutation(toLayout);
    op.getO().replaceAllUsesWith(
        convertFromF32(b, loc, of, resultType, fromLayout));
    op.erase();
    return success();
  }
};

//===----------------------------------------------------------------------===//
// te.scaled_matmul
//===----------------------------------------------------------------------===//

class ScaledMatmulProvider : public LoweringProvider {
public:
  ScaledMatmulProvider()
      : LoweringProvider("scaled_matmul", {"te.scaled_matmul"}) {}

  Decision check(Operation *operation,
                 const TargetInfo &target) const override {
    auto op = cast<ScaledMatmulOp>(operation);
    if (std::optional<Decision> declined = checkCommon(op, target))
      return *declined;
    Type out = op.getD().getType().getElementType();
    if (!isWideFloat(out))
      return Decision::decline(debugString(out) +
                               " output (oneDNN 2.x has no FP8 types)");
    if (op.hasFP8Operands() &&
        (op.getAScalingMode() != ScalingMode::per_tensor ||
         op.getBScalingMode() != ScalingMode::per_tensor))
      return Decision::decline(
          stringifyScalingMode(op.getAScalingMode() != ScalingMode::per_tensor
                                   ? op.getAScalingMode()
                                   : op.getBScalingMode())
              .str() +
          " scaling (this plugin's oneDNN matmul takes one scale per "
          "operand)");
    if (op.getC())
      return Decision::decline("accumulate (the plugin computes D alone)");
    if (op.getGeluInput() || op.getPreGelu() || op.getBiasGrad())
      return Decision::decline(
          "TE's dgelu, pre-GELU and bias-gradient epilogues (oneDNN's "
          "matmul post-ops add and activate only)");
    return Decision::accept();
  }

  LogicalResult lower(Operation *operation, const NativeLowering &,
                      const TargetInfo &) const override {
    auto op = cast<ScaledMatmulOp>(operation);
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    Type f32 = b.getF32Type();
    ArrayRef<int64_t> aShape = op.getA().getType().getShape();
    ArrayRef<int64_t> bShape = op.getB().getType().getShape();
    int64_t m = op.getTransposeA() ? aShape[1] : aShape[0];
    int64_t kDim = op.getTransposeA() ? aShape[0] : aShape[1];
    int64_t n = op.getTransposeB() ? bShape[0] : bShape[1];
    AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
    // The operands widened exactly (oneDNN 2.x has no FP8), as
    // row-major a [m, k] and b [k, n].
    Value af = convertToF32(b, loc, op.getA(), {m, kDim},
                            AffineMap::get(2, 0,
                                           op.getTransposeA()
                                               ? SmallVector<AffineExpr>{j, i}
                                               : SmallVector<AffineExpr>{i, j},
                                           ctx));
    Value bf = convertToF32(b, loc, op.getB(), {kDim, n},
                            AffineMap::get(2, 0,
                                           op.getTransposeB()
                                               ? SmallVector<AffineExpr>{j, i}
                                               : SmallVector<AffineExpr>{i, j},
                                           ctx));
    // per_tensor FP8 operands scale the product; others do not.
    Value alpha =
        op.hasFP8Operands()
            ? Value(arith::MulFOp::create(
                  b, loc, tensor::ExtractOp::create(b, loc, op.getAScaleInv()),
                  tensor::ExtractOp::create(b, loc, op.getBScaleInv())))
            : Value(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0)));
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Value bias = LLVM::ZeroOp::create(b, loc, ptr);
    if (Value biasTensor = op.getBias())
      bias = pointerOf(b, loc,
                       bufferOf(b, loc,
                                convertToF32(b, loc, biasTensor, {n},
                                             b.getMultiDimIdentityMap(1))));
    auto dType = MemRefType::get({m, n}, f32);
    Value dBuffer = memref::AllocOp::create(b, loc, dType);
    SmallVector<Value> args = {pointerOf(b, loc, bufferOf(b, loc, af)),
                               pointerOf(b, loc, bufferOf(b, loc, bf)),
                               bias,
                               pointerOf(b, loc, dBuffer),
                               i64Const(b, loc, m),
                               i64Const(b, loc, n),
                               i64Const(b, loc, kDim),
                               alpha,
                               i64Const(b, loc, op.getGelu() ? 1 : 0)};
    Value df = callRuntime(b, loc, op, "te_onednn_matmul_f32", args, dBuffer);
    RankedTensorType resultType = op.getD().getType();
    Value d = resultType.getElementType().isF32()
                  ? df
                  : convertFromF32(b, loc, df, resultType,
                                   b.getMultiDimIdentityMap(2));
    op.getD().replaceAllUsesWith(d);
    op.erase();
    return success();
  }
};

//===----------------------------------------------------------------------===//
// te.norm
//===----------------------------------------------------------------------===//

/// LayerNorm's forward on oneDNN's layer normalization primitive; the
/// backward and RMSNorm are declined (see check).
class NormProvider : public LoweringProvider {
public:
  NormProvider() : LoweringProvider("norm", {"te.norm", "te.norm_backward"}) {}

  Decision check(Operation *operation,
                 const TargetInfo &target) const override {
    if (std::optional<Decision> declined = checkCommon(operation, target))
      return *declined;
    if (isa<NormBackwardOp>(operation))
      return Decision::decline(
          "the backward (oneDNN's reads the variance, te.norm_backward "
          "rsigma = 1 / sqrt(variance + epsilon), from which the variance "
          "does not come back exactly)");
    auto op = cast<NormOp>(operation);
    if (!op.isLayerNorm())
      return Decision::decline(
          "rmsnorm (oneDNN 2.x's layer normalization has no RMS variant)");
    if (op.getQuantize() || op.getAmaxOutput())
      return Decision::decline("a quantized output or its amax (oneDNN 2.x "
                               "has no FP8 types)");
    return Decision::accept();
  }

  LogicalResult lower(Operation *operation, const NativeLowering &,
                      const TargetInfo &) const override {
    auto op = cast<NormOp>(operation);
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    int64_t hidden = inputType.getShape().back();
    int64_t rows = hidden ? inputType.getNumElements() / hidden : 0;
    // x as row-major [rows, hidden] f32: element (r, c) is x at the
    // leading dimensions of r, then c.
    SmallVector<AffineExpr> split;
    AffineExpr r = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx);
    ArrayRef<int64_t> lead = inputType.getShape().drop_back();
    int64_t stride = rows;
    for (int64_t size : lead) {
      stride = size ? stride / size : 0;
      split.push_back(size == 1
                          ? getAffineConstantExpr(0, ctx)
                          : (r.floorDiv(std::max<int64_t>(stride, 1)) % size));
    }
    split.push_back(c);
    AffineMap fromRows = AffineMap::get(2, 0, split, ctx);
    Value xf = convertToF32(b, loc, op.getInput(), {rows, hidden}, fromRows);
    // g in f32, plus 1 when zero-centered (TE adds it after the
    // conversion).
    Value gf = convertToF32(b, loc, op.getGamma(), {hidden},
                            b.getMultiDimIdentityMap(1));
    if (op.getZeroCenteredGamma()) {
      Value init = tensor::EmptyOp::create(b, loc, {hidden}, b.getF32Type());
      gf = linalg::GenericOp::create(
               b, loc, gf.getType(), gf, init,
               ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1),
                                   b.getMultiDimIdentityMap(1)},
               utils::IteratorType::parallel,
               [](OpBuilder &b, Location loc, ValueRange args) {
                 linalg::YieldOp::create(
                     b, loc,
                     arith::AddFOp::create(b, loc, args[0],
                                           emitF32Constant(b, loc, 1.0))
                         .getResult());
               })
               .getResult(0);
    }
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    Value beta = LLVM::ZeroOp::create(b, loc, ptr);
    if (Value betaTensor = op.getBeta())
      beta = pointerOf(b, loc,
                       bufferOf(b, loc,
                                convertToF32(b, loc, betaTensor, {hidden},
                                             b.getMultiDimIdentityMap(1))));
    Type f32 = b.getF32Type();
    Value zBuffer =
        memref::AllocOp::create(b, loc, MemRefType::get({rows, hidden}, f32));
    auto statType = MemRefType::get({rows}, f32);
    Value meanBuffer = memref::AllocOp::create(b, loc, statType);
    Value rsigmaBuffer = memref::AllocOp::create(b, loc, statType);
    SmallVector<Value> args = {
        pointerOf(b, loc, bufferOf(b, loc, xf)),
        pointerOf(b, loc, bufferOf(b, loc, gf)),
        beta,
        pointerOf(b, loc, zBuffer),
        pointerOf(b, loc, meanBuffer),
        pointerOf(b, loc, rsigmaBuffer),
        i64Const(b, loc, rows),
        i64Const(b, loc, hidden),
        arith::ConstantOp::create(b, loc, op.getEpsilonAttr())};
    Value zf =
        callRuntime(b, loc, op, "te_onednn_layer_norm_f32", args, zBuffer);
    auto statTensor = [&](Value buffer, Value result) -> Value {
      Value rowsTensor = bufferization::ToTensorOp::create(
          b, loc, RankedTensorType::get({rows}, f32), buffer,
          /*restrict=*/true, /*writable=*/true);
      return tensor::ReshapeOp::create(
          b, loc, result.getType(), rowsTensor,
          arith::ConstantOp::create(
              b, loc,
              DenseIntElementsAttr::get(
                  RankedTensorType::get({static_cast<int64_t>(lead.size())},
                                        b.getI64Type()),
                  lead)));
    };
    // z back in the input's shape and z's type.
    auto zType = cast<RankedTensorType>(op.getOutput().getType());
    SmallVector<AffineExpr> rowOf;
    AffineExpr rowIndex = getAffineConstantExpr(0, ctx);
    int64_t rank = zType.getRank();
    for (int64_t dim = 0; dim + 1 < rank; ++dim)
      rowIndex = rowIndex * zType.getDimSize(dim) + getAffineDimExpr(dim, ctx);
    AffineMap toRows = AffineMap::get(
        rank, 0, {rowIndex, getAffineDimExpr(rank - 1, ctx)}, ctx);
    SmallVector<Value> results = {convertFromF32(b, loc, zf, zType, toRows),
                                  statTensor(meanBuffer, op.getMean()),
                                  statTensor(rsigmaBuffer, op.getRsigma())};
    for (auto [result, value] : llvm::zip_equal(op->getResults(), results))
      result.replaceAllUsesWith(value);
    op.erase();
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

te_plugin_status registerOneDNN(te_plugin_registrar *handle, char *error,
                                size_t errorSize) {
  Registrar &registrar = Registrar::from(handle);
  registrar.addDialects([](DialectRegistry &registry) {
    registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                    func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect, tensor::TensorDialect>();
  });
  std::string problem;
  if (!registrar.addProvider(std::make_unique<AttentionProvider>(), &problem) ||
      !registrar.addProvider(std::make_unique<ScaledMatmulProvider>(),
                             &problem) ||
      !registrar.addProvider(std::make_unique<NormProvider>(), &problem)) {
    std::snprintf(error, errorSize, "%s", problem.c_str());
    return TE_PLUGIN_ERROR;
  }
  return TE_PLUGIN_OK;
}

/// Loads the runtime library (and with it oneDNN) on first use, so that a
/// missing or broken installation is reported before any kernel needs it.
te_plugin_status activateOneDNN(char *error, size_t errorSize) {
  std::string path = runtimeLibraryPath();
  if (path.empty()) {
    std::snprintf(error, errorSize, "cannot locate %s", kRuntimeLibrary);
    return TE_PLUGIN_ERROR;
  }
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    std::snprintf(error, errorSize, "%s", dlerror());
    return TE_PLUGIN_ERROR;
  }
  return TE_PLUGIN_OK;
}

} // namespace

TE_PLUGIN_DEFINE("onednn", "0.1.0", TE_PLUGIN_FEATURE_LOWERING, registerOneDNN,
                 activateOneDNN)
