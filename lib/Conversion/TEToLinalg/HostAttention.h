//===- HostAttention.h - What the host attention lowering shares -*- C++
//-*-===//
//
// Shared by the host attention lowering's loops (AttentionLowering.cpp)
// and its micro-kernels (AttentionMicroKernels.cpp): the op's
// configuration, index arithmetic and the tensor builders both use.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TETOLINALG_HOSTATTENTION_H
#define TE_LIB_CONVERSION_TETOLINALG_HOSTATTENTION_H

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <array>
#include <tuple>

namespace mlir::te::host_attention {

/// Small builders for the index arithmetic of the loop nest.
struct IndexMath {
  OpBuilder &b;
  Location loc;

  Value c(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value le(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// Element `index` of an i32 vector tensor, as an index.
  Value load(Value tensor, Value index) {
    Value element = tensor::ExtractOp::create(b, loc, tensor, index);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  }
};

/// Indices of the first element of the row (batch, position, head) of a
/// Q/K/V/O tensor in `layout`; for thd `position` is the token index.
inline SmallVector<Value> rowIndices(QKVLayout layout, Value batch,
                                     Value position, Value head, Value zero) {
  return llvm::to_vector(arrangeInLayout(layout, batch, position, head, zero));
}

/// Everything about an attention op (forward or backward) that the loops
/// need, with the operands already converted.
struct AttentionConfig {
  QKVLayout layout;
  MaskKind maskKind;
  bool thd, padding, causal;
  /// Whether the diagonal of the causal mask, the window and ALiBi is
  /// aligned bottom-right (at len_kv - len_q) rather than top-left.
  bool bottomRight;
  int64_t windowLeft, windowRight;
  BiasKind biasKind;
  SoftmaxKind softmax;
  float scale;
  /// Dropout probability; 0 when there is none.
  float dropout;
  int64_t batches, seqQ, headsQ, seqKV, headsKV, numSequences;
  Value q, k, v, cuQ, cuKV, offQ, offKV, lenQ, lenKV, mask, bias, slopes,
      softmaxOffset, rngState;

  template <typename OpT>
  static AttentionConfig get(OpT op, typename OpT::Adaptor adaptor) {
    AttentionConfig c;
    c.layout = op.getLayout();
    c.maskKind = op.getMaskKind();
    c.thd = c.layout == QKVLayout::thd;
    c.padding = isPaddingMask(c.maskKind) || c.thd;
    c.causal = isCausalMask(c.maskKind);
    c.bottomRight = op.isBottomRightDiagonal();
    std::tie(c.windowLeft, c.windowRight) = op.getWindowBounds();
    c.biasKind = op.getBiasKind();
    c.softmax = op.getSoftmaxKind();
    c.scale = static_cast<float>(*op.getEffectiveScale());
    c.dropout = op.getDropout().convertToFloat();
    c.rngState = adaptor.getRngState();
    c.q = adaptor.getQ();
    c.k = adaptor.getK();
    c.v = adaptor.getV();
    c.cuQ = adaptor.getCuSeqlensQ();
    c.cuKV = adaptor.getCuSeqlensKv();
    c.offQ = adaptor.getSeqOffsetsQ();
    c.offKV = adaptor.getSeqOffsetsKv();
    c.lenQ = adaptor.getSeqlensQ();
    c.lenKV = adaptor.getSeqlensKv();
    c.mask = adaptor.getMask();
    c.bias = adaptor.getBias();
    c.slopes = adaptor.getAlibiSlopes();
    c.softmaxOffset = adaptor.getSoftmaxOffset();
    std::array<int64_t, 3> qDims = c.dims(c.q), kDims = c.dims(c.k);
    c.batches = qDims[0];
    c.seqQ = qDims[1];
    c.headsQ = qDims[2];
    c.seqKV = kDims[1];
    c.headsKV = kDims[2];
    c.numSequences =
        c.thd ? cast<RankedTensorType>(c.cuQ.getType()).getDimSize(0) - 1
              : c.batches;
    return c;
  }

  /// (batch, sequence length, heads) of a Q/K/V tensor; thd: (1, tokens, h).
  std::array<int64_t, 3> dims(Value tensor) const {
    HeadTensorDims d = getHeadTensorDims(
        layout, cast<RankedTensorType>(tensor.getType()).getShape());
    return {layout == QKVLayout::thd ? 1 : d.batch, d.seq, d.heads};
  }

  /// Indices of the LSE element of (batch, row, head).
  SmallVector<Value> lseIndices(Value batch, Value row, Value head,
                                Value zero) const {
    if (thd)
      return {row, head, zero};
    return {batch, head, row, zero};
  }
};

Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type element, TypedAttr value);

/// `scalar` in every lane of `type`.
Value splat(OpBuilder &b, Location loc, Value scalar, VectorType type);

using ElementFn = function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)>;

/// A new tensor of `shape` and `elementType` whose element at `indices` is
/// `element(indices)`.
Value generateTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                     Type elementType, ElementFn element);

/// A new f32 tensor of `shape` whose element at `indices` is
/// `element(indices)`.
Value generateF32(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  ElementFn element);

/// K or V element (batch, token, head, column) in its own type, or 0 for
/// the padding tokens at and past s_kv.
Value readPaddedElement(OpBuilder &b, Location loc, const AttentionConfig &c,
                        Value tensor, Value batch, Value token, Value head,
                        Value column);

/// K or V element (batch, token, head, column) as f32, or 0 for the padding
/// tokens at and past s_kv.
Value readPaddedKV(OpBuilder &b, Location loc, const AttentionConfig &c,
                   Value tensor, Value batch, Value token, Value head,
                   Value column);

} // namespace mlir::te::host_attention

#endif // TE_LIB_CONVERSION_TETOLINALG_HOSTATTENTION_H
