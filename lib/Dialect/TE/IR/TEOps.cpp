//===- TEOps.cpp - Verifiers, type inference and folds of te ops ----------===//
//
// Every diagnostic names the operand or attribute at fault, the value it has
// and what a valid op needs, so that a framework or plugin author can fix the
// IR without reading this file.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/ABI/Limits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::te;

namespace {

/// Emits errors on the op being verified or, during type inference (which
/// has no op yet and, from a builder, maybe no location), at `loc`.
struct Diag {
  std::optional<Location> loc;
  Operation *op = nullptr;

  explicit Diag(std::optional<Location> loc) : loc(loc) {}
  explicit Diag(Operation *op) : loc(op->getLoc()), op(op) {}

  template <typename... Args> LogicalResult operator()(Args &&...args) const {
    if (op) {
      InFlightDiagnostic diag = op->emitOpError();
      (diag << ... << std::forward<Args>(args));
      return diag;
    }
    return emitOptionalError(loc, std::forward<Args>(args)...);
  }
};

/// True when two dimension sizes are both known and differ.
bool dimsConflict(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// A dimension size for a diagnostic: `?` when dynamic.
std::string fmtDim(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

/// A float for a diagnostic in its shortest exact decimal form.
std::string fmtReal(double value) {
  SmallString<16> text;
  APFloat(value).toString(text);
  return std::string(text);
}

int64_t dimSize(Value value, unsigned dim) {
  return cast<ShapedType>(value.getType()).getDimSize(dim);
}

/// ceil(size / block) that keeps dynamic sizes dynamic.
int64_t ceilDivDim(int64_t size, int64_t block) {
  return ShapedType::isDynamic(size) ? size : llvm::divideCeil(size, block);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

HeadTensorDims getHeadTensorDims(QKVLayout layout, RankedTensorType type) {
  return mlir::te::getHeadTensorDims(layout, type.getShape());
}

std::string getLayoutShapeText(QKVLayout layout) {
  StringRef seq = layout == QKVLayout::thd ? "t" : "s";
  return "[" +
         llvm::join(arrangeInLayout<StringRef>(layout, "b", seq, "h", "d"),
                    ", ") +
         "]";
}

/// The sizes every attention operand is checked against.
struct AttentionDims {
  int64_t batch, seqQ, seqKV, headsQ, headsKV, headDimQK, headDimV;
};

std::pair<int64_t, int64_t>
windowBounds(std::optional<ArrayRef<int64_t>> window) {
  if (!window || window->size() != 2)
    return {-1, -1};
  return {(*window)[0], (*window)[1]};
}

/// Checks an i32 vector operand's length; `what` says what it holds.
LogicalResult checkVectorLength(const Diag &diag, Value value, StringRef name,
                                int64_t expected, StringRef what) {
  int64_t got = dimSize(value, 0);
  if (dimsConflict(got, expected))
    return diag("'", name, "' must have ", fmtDim(expected), " elements (",
                what, "), got ", value.getType());
  return success();
}

/// The Q, K and V operands: ranks for the layout, one element type, sizes
/// that agree, GQA's head ratio, head dimensions te lowers; their sizes.
template <typename AdaptorT>
FailureOr<AttentionDims> verifyAttentionTensors(AdaptorT adaptor,
                                                const Diag &diag) {
  QKVLayout layout = adaptor.getLayout();
  StringRef layoutName = stringifyQKVLayout(layout);
  bool isThd = layout == QKVLayout::thd;
  int64_t rank = isThd ? 3 : 4;

  auto qType = dyn_cast<RankedTensorType>(adaptor.getQ().getType());
  auto kType = dyn_cast<RankedTensorType>(adaptor.getK().getType());
  auto vType = dyn_cast<RankedTensorType>(adaptor.getV().getType());
  if (!qType || !kType || !vType)
    return diag("'q', 'k' and 'v' must be ranked tensors");
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"q", qType},
                            {"k", kType},
                            {"v", vType}}) {
    if (type.getRank() != rank)
      return diag("'", name, "' must have rank ", rank, " for layout ",
                  layoutName, " ", getLayoutShapeText(layout), ", got ", type);
  }
  if (qType.getElementType() != kType.getElementType() ||
      qType.getElementType() != vType.getElementType())
    return diag("'q', 'k' and 'v' must have one element type, got ",
                qType.getElementType(), ", ", kType.getElementType(), " and ",
                vType.getElementType());

  HeadTensorDims q = getHeadTensorDims(layout, qType);
  HeadTensorDims k = getHeadTensorDims(layout, kType);
  HeadTensorDims v = getHeadTensorDims(layout, vType);
  if (dimsConflict(k.batch, v.batch) || dimsConflict(k.seq, v.seq) ||
      dimsConflict(k.heads, v.heads))
    return diag("'k' (", kType, ") and 'v' (", vType,
                ") must have the same batch, sequence and head sizes");
  if (dimsConflict(q.batch, k.batch))
    return diag("'q' and 'k' must have the same batch size, got ", q.batch,
                " and ", k.batch);
  if (dimsConflict(q.headDim, k.headDim))
    return diag("'q' and 'k' must have the same head dimension d_qk, got ",
                q.headDim, " and ", k.headDim);
  if (!ShapedType::isDynamic(q.heads) && !ShapedType::isDynamic(k.heads) &&
      (k.heads == 0 || q.heads % k.heads != 0))
    return diag("the number of query heads (", q.heads,
                ") must be a multiple of the number of key/value heads (",
                k.heads, ")");

  AttentionDims dims{q.batch, q.seq,     k.seq,    q.heads,
                     k.heads, q.headDim, v.headDim};
  // Empty batches, sequences and query heads have defined results (see
  // te-fold-empty); a head of no features has no meaning in TE.
  if (dims.headDimQK == 0 || dims.headDimV == 0)
    return diag("the head dimensions d_qk (", fmtDim(dims.headDimQK),
                ") and d_v (", fmtDim(dims.headDimV),
                ") must be at least 1: attention over heads without "
                "features is undefined; empty batches and sequences are "
                "accepted");
  // The lowerings keep a head's row in vector registers; TE's fused
  // backends stop at 256 (512 for some cuDNN versions).
  constexpr int64_t kMaxHeadDim = 1024;
  if (dims.headDimQK > kMaxHeadDim || dims.headDimV > kMaxHeadDim)
    return diag("the head dimensions d_qk (", fmtDim(dims.headDimQK),
                ") and d_v (", fmtDim(dims.headDimV), ") must be at most ",
                kMaxHeadDim,
                ": te's attention lowerings hold a head's row in vector "
                "registers (TE's fused attention backends stop at 256)");
  return dims;
}

/// thd's cu_seqlens and seq_offsets, and the padding masks' seqlens, as the
/// layout and mask kind require; thd's batch is cu_seqlens' length - 1.
template <typename AdaptorT>
LogicalResult verifySequenceOperands(AdaptorT adaptor, const Diag &diag,
                                     AttentionDims &dims) {
  QKVLayout layout = adaptor.getLayout();
  StringRef layoutName = stringifyQKVLayout(layout);
  bool isThd = layout == QKVLayout::thd;
  MaskKind maskKind = adaptor.getMaskKind();
  StringRef maskName = stringifyMaskKind(maskKind);

  Value cuQ = adaptor.getCuSeqlensQ(), cuKV = adaptor.getCuSeqlensKv();
  Value offQ = adaptor.getSeqOffsetsQ(), offKV = adaptor.getSeqOffsetsKv();
  Value lenQ = adaptor.getSeqlensQ(), lenKV = adaptor.getSeqlensKv();
  if (isThd) {
    if (!cuQ || !cuKV)
      return diag("layout thd needs cu_seqlens(%cu_seqlens_q, "
                  "%cu_seqlens_kv), int32 [batch + 1] each");
    int64_t n = dimSize(cuQ, 0);
    if (failed(checkVectorLength(diag, cuKV, "cu_seqlens_kv", n,
                                 "batch + 1, as 'cu_seqlens_q'")))
      return failure();
    if (!ShapedType::isDynamic(n) && n < 2)
      return diag("'cu_seqlens_q' must have batch + 1 >= 2 elements, got ",
                  cuQ.getType());
    dims.batch = ShapedType::isDynamic(n) ? n : n - 1;
    if (bool(offQ) != bool(offKV))
      return diag("seq_offsets needs both %seq_offsets_q and %seq_offsets_kv");
    if (offQ && (failed(checkVectorLength(diag, offQ, "seq_offsets_q", n,
                                          "batch + 1, as 'cu_seqlens_q'")) ||
                 failed(checkVectorLength(diag, offKV, "seq_offsets_kv", n,
                                          "batch + 1, as 'cu_seqlens_q'"))))
      return failure();
    if (!isPaddingMask(maskKind))
      return diag("layout thd needs a padding mask kind (padding, "
                  "padding_causal or padding_causal_bottom_right), got ",
                  maskName);
    if (lenQ || lenKV)
      return diag("layout thd takes sequence lengths from cu_seqlens; "
                  "remove seqlens(...)");
  } else {
    if (cuQ || cuKV)
      return diag("cu_seqlens(...) is only valid with layout thd, got ",
                  layoutName);
    if (offQ || offKV)
      return diag("seq_offsets(...) is only valid with layout thd, got ",
                  layoutName);
    if (isPaddingMask(maskKind)) {
      if (!lenQ || !lenKV)
        return diag("mask ", maskName,
                    " needs seqlens(%seqlens_q, %seqlens_kv), int32 [batch] "
                    "each, for layout ",
                    layoutName);
      if (failed(checkVectorLength(diag, lenQ, "seqlens_q", dims.batch,
                                   "one per batch entry")) ||
          failed(checkVectorLength(diag, lenKV, "seqlens_kv", dims.batch,
                                   "one per batch entry")))
        return failure();
    } else if (lenQ || lenKV) {
      return diag("seqlens(...) is only valid with a padding mask kind, got "
                  "mask ",
                  maskName);
    }
  }

  return success();
}

/// The arbitrary mask's tensor: with mask arbitrary only, broadcastable to
/// [b, h_q, s_q, s_kv].
template <typename AdaptorT>
LogicalResult verifyMaskTensor(AdaptorT adaptor, const Diag &diag,
                               const AttentionDims &dims) {
  MaskKind maskKind = adaptor.getMaskKind();
  StringRef maskName = stringifyMaskKind(maskKind);
  if (Value mask = adaptor.getMask()) {
    if (maskKind != MaskKind::arbitrary)
      return diag("mask_tensor(...) is only valid with mask arbitrary, got "
                  "mask ",
                  maskName);
    auto maskType = cast<RankedTensorType>(mask.getType());
    int64_t expected[] = {dims.batch, dims.headsQ, dims.seqQ, dims.seqKV};
    if (maskType.getRank() != 4)
      return diag("'mask' must have rank 4, broadcastable to [b, h_q, s_q, "
                  "s_kv], got ",
                  maskType);
    for (auto [got, want] : llvm::zip(maskType.getShape(), expected))
      if (got != 1 && dimsConflict(got, want))
        return diag("'mask' ", maskType,
                    " is not broadcastable to [b, h_q, s_q, s_kv] = [",
                    fmtDim(dims.batch), ", ", fmtDim(dims.headsQ), ", ",
                    fmtDim(dims.seqQ), ", ", fmtDim(dims.seqKV),
                    "]: each dimension must be 1 or match");
  } else if (maskKind == MaskKind::arbitrary) {
    return diag("mask arbitrary needs mask_tensor(%mask), an i1 tensor "
                "broadcastable to [b, h_q, s_q, s_kv]");
  }

  return success();
}

/// The sliding window, the diagonal's alignment and the softmax scale.
template <typename AdaptorT>
LogicalResult verifyWindowAndScale(AdaptorT adaptor, const Diag &diag) {
  MaskKind maskKind = adaptor.getMaskKind();
  StringRef maskName = stringifyMaskKind(maskKind);
  if (std::optional<ArrayRef<int64_t>> window = adaptor.getWindow()) {
    if (window->size() != 2)
      return diag("'window' must be [left, right], got ", window->size(),
                  " values");
    auto [left, right] = windowBounds(window);
    if (left < -1 || right < -1)
      return diag("window bounds must be >= -1 (-1 is unbounded), got [", left,
                  ", ", right, "]");
    if (isCausalMask(maskKind) && right > 0)
      return diag("mask ", maskName,
                  " admits no keys after the diagonal: window right bound "
                  "must be -1 or 0, got ",
                  right);
    // TE's check_set_window_size: without a causal mask a window is
    // [-1, -1] (none) or bounded on both sides.
    if (!isCausalMask(maskKind) && (left < 0) != (right < 0))
      return diag("mask ", maskName,
                  " takes window [-1, -1] (no window) or [left >= 0, right "
                  ">= 0], got [",
                  left, ", ", right,
                  "]: a one-sided window needs a causal mask kind, as in "
                  "Transformer Engine");
  }

  if (std::optional<bool> requested = adaptor.getBottomRightDiagonal()) {
    std::optional<bool> forced = getForcedBottomRightDiagonal(maskKind);
    if (forced && *forced != *requested)
      return diag("mask ", maskName, " aligns the diagonal ",
                  *forced ? "bottom-right" : "top-left",
                  ", but bottom_right_diagonal is ",
                  *requested ? "true" : "false",
                  "; remove the attribute or choose the mask ",
                  *requested ? "causal_bottom_right / "
                               "padding_causal_bottom_right"
                             : "causal / padding_causal");
  }

  if (std::optional<APFloat> scale = adaptor.getScale()) {
    if (!scale->isFinite() || scale->isZero())
      return diag("softmax scale must be finite and non-zero, got ",
                  fmtReal(scale->convertToDouble()));
  }

  return success();
}

/// The bias kind's operands: a bias tensor of [1 or b, 1 or h_q, s_q, s_kv]
/// for pre_scale and post_scale, ALiBi's slopes for alibi.
template <typename AdaptorT>
LogicalResult verifyBias(AdaptorT adaptor, const Diag &diag,
                         const AttentionDims &dims) {
  bool isThd = adaptor.getLayout() == QKVLayout::thd;
  auto qType = cast<RankedTensorType>(adaptor.getQ().getType());
  Value bias = adaptor.getBias(), slopes = adaptor.getAlibiSlopes();
  BiasKind biasKind = adaptor.getBiasKind();
  StringRef biasName = stringifyBiasKind(biasKind);
  switch (biasKind) {
  case BiasKind::no_bias:
    if (bias || slopes)
      return diag("bias no_bias takes no bias_tensor or alibi_slopes");
    break;
  case BiasKind::pre_scale:
  case BiasKind::post_scale: {
    if (slopes)
      return diag("bias ", biasName,
                  " takes bias_tensor(...), not "
                  "alibi_slopes(...)");
    if (!bias)
      return diag("bias ", biasName,
                  " needs bias_tensor(%bias) of shape [1 or b, 1 or h_q, "
                  "s_q, s_kv]");
    if (isThd)
      return diag("bias ", biasName,
                  " is not defined for layout thd (sequences have no common "
                  "[s_q, s_kv] shape); use alibi or another layout");
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getElementType() != qType.getElementType() &&
        !biasType.getElementType().isF32())
      return diag("'bias' must have the element type of 'q' or f32, got ",
                  biasType.getElementType());
    ArrayRef<int64_t> s = biasType.getShape();
    if (biasType.getRank() != 4 ||
        (s[0] != 1 && dimsConflict(s[0], dims.batch)) ||
        (s[1] != 1 && dimsConflict(s[1], dims.headsQ)) ||
        dimsConflict(s[2], dims.seqQ) || dimsConflict(s[3], dims.seqKV))
      return diag("'bias' must have shape [1 or ", fmtDim(dims.batch),
                  ", 1 or ", fmtDim(dims.headsQ), ", ", fmtDim(dims.seqQ), ", ",
                  fmtDim(dims.seqKV), "], got ", biasType);
    break;
  }
  case BiasKind::alibi: {
    if (bias)
      return diag("bias alibi takes alibi_slopes(...), not bias_tensor(...)");
    if (!slopes)
      return diag("bias alibi needs alibi_slopes(%slopes), f32 [h_q] or "
                  "[b, h_q]");
    auto slopeType = cast<RankedTensorType>(slopes.getType());
    ArrayRef<int64_t> s = slopeType.getShape();
    bool valid = (s.size() == 1 && !dimsConflict(s[0], dims.headsQ)) ||
                 (s.size() == 2 && !dimsConflict(s[0], dims.batch) &&
                  !dimsConflict(s[1], dims.headsQ));
    if (!valid)
      return diag("'alibi_slopes' must have shape [", fmtDim(dims.headsQ),
                  "] or [", fmtDim(dims.batch), ", ", fmtDim(dims.headsQ),
                  "], got ", slopeType);
    break;
  }
  }

  return success();
}

/// Dropout's probability and rng_state, and the learnable softmax's
/// offsets.
template <typename AdaptorT>
LogicalResult verifyDropoutAndSoftmax(AdaptorT adaptor, const Diag &diag,
                                      const AttentionDims &dims) {
  double dropout = adaptor.getDropout().convertToDouble();
  if (!(dropout >= 0.0 && dropout < 1.0))
    return diag("dropout probability must be in [0, 1), got ",
                fmtReal(dropout));
  if (Value rng = adaptor.getRngState()) {
    if (dropout == 0.0)
      return diag("rng_state(...) is only valid with a non-zero dropout");
    if (dimsConflict(dimSize(rng, 0), 2))
      return diag("'rng_state' must be tensor<2xi64> (seed, offset), got ",
                  rng.getType());
  } else if (dropout != 0.0) {
    return diag("dropout ", fmtReal(dropout),
                " needs rng_state(%seed_offset), tensor<2xi64>");
  }

  Value offset = adaptor.getSoftmaxOffset();
  if (adaptor.getSoftmaxKind() == SoftmaxKind::learnable) {
    if (!offset)
      return diag("softmax learnable needs softmax_offset(%alpha), f32 [1, "
                  "h_q, 1, 1]");
    auto offsetType = cast<RankedTensorType>(offset.getType());
    ArrayRef<int64_t> s = offsetType.getShape();
    if (offsetType.getRank() != 4 || s[0] != 1 ||
        dimsConflict(s[1], dims.headsQ) || s[2] != 1 || s[3] != 1)
      return diag("'softmax_offset' must have shape [1, ", fmtDim(dims.headsQ),
                  ", 1, 1], got ", offsetType);
  } else if (offset) {
    return diag("softmax_offset(...) is only valid with softmax learnable, "
                "got softmax ",
                stringifySoftmaxKind(adaptor.getSoftmaxKind()));
  }
  return success();
}

/// Verifies everything the forward and backward attention ops share and
/// returns the problem sizes. Used by type inference, so it runs before any
/// result type is looked at.
template <typename AdaptorT>
FailureOr<AttentionDims> verifyAttentionConfig(AdaptorT adaptor,
                                               const Diag &diag) {
  FailureOr<AttentionDims> dims = verifyAttentionTensors(adaptor, diag);
  if (failed(dims) || failed(verifySequenceOperands(adaptor, diag, *dims)) ||
      failed(verifyMaskTensor(adaptor, diag, *dims)) ||
      failed(verifyWindowAndScale(adaptor, diag)) ||
      failed(verifyBias(adaptor, diag, *dims)) ||
      failed(verifyDropoutAndSoftmax(adaptor, diag, *dims)))
    return failure();
  return dims;
}

/// The output type: q's layout and element type, d_v as the head dim.
RankedTensorType getAttentionOutputType(RankedTensorType qType,
                                        const AttentionDims &dims) {
  SmallVector<int64_t> shape(qType.getShape());
  shape.back() = dims.headDimV;
  return RankedTensorType::get(shape, qType.getElementType());
}

/// The log-sum-exp statistics type: [b, h_q, s_q, 1] or, for thd, [t, h_q, 1].
RankedTensorType getAttentionLseType(QKVLayout layout,
                                     const AttentionDims &dims,
                                     MLIRContext *ctx) {
  Type f32 = Float32Type::get(ctx);
  if (layout == QKVLayout::thd)
    return RankedTensorType::get({dims.seqQ, dims.headsQ, 1}, f32);
  return RankedTensorType::get({dims.batch, dims.headsQ, dims.seqQ, 1}, f32);
}

template <typename OpT> std::optional<double> getEffectiveScaleImpl(OpT op) {
  if (std::optional<APFloat> scale = op.getScale())
    return scale->convertToDouble();
  int64_t headDim = op.getQ().getType().getShape().back();
  if (ShapedType::isDynamic(headDim) || headDim == 0)
    return std::nullopt;
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

/// Canonical window: under a causal mask a right bound of -1 means 0, and is
/// written 0; a window that restricts nothing the mask does not already
/// restrict ([-1, -1], or [-1, 0] under a causal mask) is dropped.
/// `bottom_right_diagonal` is dropped where it changes nothing: when it says
/// what the mask or the default says already, or when there is neither a
/// window nor ALiBi to align.
template <typename OpT>
LogicalResult canonicalizeAttentionWindow(OpT op, PatternRewriter &rewriter) {
  if (std::optional<bool> requested = op.getBottomRightDiagonal()) {
    bool aligned = op.getWindow() || op.getBiasKind() == BiasKind::alibi;
    if (!aligned ||
        *requested == resolveBottomRightDiagonal(op.getMaskKind(), {})) {
      rewriter.modifyOpInPlace(op, [&] { op.removeBottomRightDiagonalAttr(); });
      return success();
    }
  }
  if (!op.getWindow())
    return failure();
  std::pair<int64_t, int64_t> bounds = op.getWindowBounds();
  std::pair<int64_t, int64_t> canonical = bounds;
  bool causal = isCausalMask(op.getMaskKind());
  if (causal && canonical.second == -1)
    canonical.second = 0;
  std::pair<int64_t, int64_t> unrestricted(-1, causal ? 0 : -1);
  if (canonical == unrestricted) {
    rewriter.modifyOpInPlace(op, [&] { op.removeWindowAttr(); });
    return success();
  }
  if (canonical == bounds)
    return failure();
  int64_t window[] = {canonical.first, canonical.second};
  rewriter.modifyOpInPlace(op, [&] { op.setWindow(ArrayRef(window)); });
  return success();
}

} // namespace

LogicalResult
AttentionOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                              Adaptor adaptor,
                              SmallVectorImpl<Type> &inferredReturnTypes) {
  FailureOr<AttentionDims> dims = verifyAttentionConfig(adaptor, Diag(loc));
  if (failed(dims))
    return failure();
  auto qType = cast<RankedTensorType>(adaptor.getQ().getType());
  inferredReturnTypes.push_back(getAttentionOutputType(qType, *dims));
  if (adaptor.getReturnLse())
    inferredReturnTypes.push_back(
        getAttentionLseType(adaptor.getLayout(), *dims, ctx));
  return success();
}

LogicalResult AttentionOp::verifyBeforeTypeInference() {
  return verifyAttentionConfig(Adaptor(*this), Diag(getOperation()));
}

std::optional<double> AttentionOp::getEffectiveScale() {
  return getEffectiveScaleImpl(*this);
}

std::pair<int64_t, int64_t> AttentionOp::getWindowBounds() {
  return windowBounds(getWindow());
}

LogicalResult AttentionOp::canonicalize(AttentionOp op,
                                        PatternRewriter &rewriter) {
  return canonicalizeAttentionWindow(op, rewriter);
}

/// Checks the backward op's forward-pass operands (o, d_o, lse).
static LogicalResult
verifyAttentionBackwardOperands(AttentionBackwardOp::Adaptor adaptor,
                                const Diag &diag) {
  FailureOr<AttentionDims> dims = verifyAttentionConfig(adaptor, diag);
  if (failed(dims))
    return failure();
  auto qType = cast<RankedTensorType>(adaptor.getQ().getType());
  RankedTensorType outType = getAttentionOutputType(qType, *dims);
  if (adaptor.getO().getType() != outType)
    return diag("'o' must have the forward output type ", outType, ", got ",
                adaptor.getO().getType());
  if (adaptor.getDO().getType() != outType)
    return diag("'d_o' must have the forward output type ", outType, ", got ",
                adaptor.getDO().getType());
  RankedTensorType lseType =
      getAttentionLseType(adaptor.getLayout(), *dims, qType.getContext());
  if (adaptor.getLse().getType() != lseType)
    return diag("'lse' must have the forward statistics type ", lseType,
                ", got ", adaptor.getLse().getType());
  return success();
}

LogicalResult AttentionBackwardOp::verifyBeforeTypeInference() {
  return verifyAttentionBackwardOperands(Adaptor(*this), Diag(getOperation()));
}

LogicalResult AttentionBackwardOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  if (failed(verifyAttentionBackwardOperands(adaptor, Diag(loc))))
    return failure();
  inferredReturnTypes.push_back(adaptor.getQ().getType());
  inferredReturnTypes.push_back(adaptor.getK().getType());
  inferredReturnTypes.push_back(adaptor.getV().getType());
  if (Value bias = adaptor.getBias())
    inferredReturnTypes.push_back(bias.getType());
  if (Value offset = adaptor.getSoftmaxOffset())
    inferredReturnTypes.push_back(offset.getType());
  return success();
}

std::optional<double> AttentionBackwardOp::getEffectiveScale() {
  return getEffectiveScaleImpl(*this);
}

std::pair<int64_t, int64_t> AttentionBackwardOp::getWindowBounds() {
  return windowBounds(getWindow());
}

LogicalResult AttentionBackwardOp::canonicalize(AttentionBackwardOp op,
                                                PatternRewriter &rewriter) {
  return canonicalizeAttentionWindow(op, rewriter);
}

Value AttentionBackwardOp::getDBias() {
  return getBias() ? getParamGrads().front() : Value();
}

Value AttentionBackwardOp::getDSoftmaxOffset() {
  return getSoftmaxOffset() ? getParamGrads().back() : Value();
}

//===----------------------------------------------------------------------===//
// FP8 scaling
//===----------------------------------------------------------------------===//

LogicalResult
AmaxOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                         Adaptor adaptor,
                         SmallVectorImpl<Type> &inferredReturnTypes) {
  inferredReturnTypes.push_back(
      RankedTensorType::get({}, Float32Type::get(ctx)));
  return success();
}

/// An amax floor or block epsilon: finite and >= 0.
static LogicalResult verifyEpsilon(const Diag &diag, APFloat epsilon) {
  if (!epsilon.isFinite() || (epsilon.isNegative() && !epsilon.isZero()))
    return diag("'epsilon' must be finite and >= 0, got ",
                fmtReal(epsilon.convertToDouble()));
  return success();
}

LogicalResult
ComputeScaleOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferredReturnTypes) {
  inferredReturnTypes.push_back(adaptor.getAmax().getType());
  return success();
}

LogicalResult ComputeScaleOp::verify() {
  return verifyEpsilon(Diag(getOperation()), getEpsilon());
}

static LogicalResult
verifyDelayedScalingOperands(UpdateDelayedScalingOp::Adaptor adaptor,
                             const Diag &diag) {
  auto history = cast<RankedTensorType>(adaptor.getAmaxHistory().getType());
  auto amax = cast<RankedTensorType>(adaptor.getAmax().getType());
  auto scale = cast<RankedTensorType>(adaptor.getScale().getType());
  if (history.getRank() < 1)
    return diag("'amax_history' must have shape [history_len, ...], got ",
                history);
  if (history.getDimSize(0) == 0)
    return diag("'amax_history' must hold at least one step, got ", history);
  if (amax != scale || failed(verifyCompatibleShape(
                           history.getShape().drop_front(), amax.getShape())))
    return diag("'amax' and 'scale' must both have the shape of "
                "'amax_history' without its leading history dimension, got ",
                history, ", ", amax, " and ", scale);
  // The attribute is signless; read it signed so that -1 is not 4294967295.
  int64_t margin = adaptor.getMarginAttr().getInt();
  if (margin < 0)
    return diag("'margin' must be >= 0, got ", margin);
  return success();
}

LogicalResult UpdateDelayedScalingOp::verifyBeforeTypeInference() {
  return verifyDelayedScalingOperands(Adaptor(*this), Diag(getOperation()));
}

LogicalResult UpdateDelayedScalingOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  if (failed(verifyDelayedScalingOperands(adaptor, Diag(loc))))
    return failure();
  inferredReturnTypes.push_back(adaptor.getAmaxHistory().getType());
  inferredReturnTypes.push_back(adaptor.getScale().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Quantize / dequantize
//===----------------------------------------------------------------------===//

/// The scale_inv type of one quantized copy whose data has type `data`
/// (already transposed where the mode stores a transposed copy).
/// `mxfp8Columnwise` selects MXFP8's column-direction blocks.
static FailureOr<RankedTensorType> getScaleInvType(const Diag &diag,
                                                   ScalingMode mode,
                                                   bool mxfp8Columnwise,
                                                   RankedTensorType data) {
  MLIRContext *ctx = data.getContext();
  Type f32 = Float32Type::get(ctx);
  SmallVector<int64_t> shape(data.getShape());
  StringRef modeName = stringifyScalingMode(mode);
  switch (mode) {
  case ScalingMode::per_tensor:
    return RankedTensorType::get({}, f32);
  case ScalingMode::mxfp8_1x32: {
    int64_t axis = data.getRank() - (mxfp8Columnwise ? 2 : 1);
    if (axis < 0)
      return diag("mode mxfp8_1x32 ",
                  mxfp8Columnwise ? "column-wise needs rank >= 2"
                                  : "row-wise needs rank >= 1",
                  ", got ", data);
    if (!ShapedType::isDynamic(shape[axis]) && shape[axis] % 32 != 0)
      return diag("mode mxfp8_1x32 needs dimension ", axis, " (", shape[axis],
                  ") to be a multiple of 32 for ",
                  mxfp8Columnwise ? "column-wise" : "row-wise",
                  " scaling, got ", data);
    if (!ShapedType::isDynamic(shape[axis]))
      shape[axis] /= 32;
    return RankedTensorType::get(shape, Float8E8M0FNUType::get(ctx));
  }
  case ScalingMode::block_1x128:
  case ScalingMode::block_128x128: {
    if (data.getRank() != 2)
      return diag("mode ", modeName, " needs a 2-D tensor, got ", data);
    if (mode == ScalingMode::block_128x128)
      shape[0] = ceilDivDim(shape[0], 128);
    shape[1] = ceilDivDim(shape[1], 128);
    return RankedTensorType::get(shape, f32);
  }
  }
  llvm_unreachable("unknown scaling mode");
}

/// A 2-D tensor type with the two dimensions swapped.
static RankedTensorType getTransposedType(RankedTensorType type,
                                          Type elementType) {
  return RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)},
                               elementType);
}

static LogicalResult checkResultType(const Diag &diag, Value result,
                                     StringRef name, Type expected) {
  if (result.getType() != expected)
    return diag("result '", name, "' must be ", expected, ", got ",
                result.getType());
  return success();
}

unsigned QuantizeOp::getNumExpectedResults(ScalingMode mode,
                                           QuantizeUsage usage) {
  unsigned copies = usage == QuantizeUsage::both ? 2 : 1;
  // per_tensor shares one scale_inv between the copies and adds the amax.
  return mode == ScalingMode::per_tensor ? copies + 2 : copies * 2;
}

Value QuantizeOp::getData() {
  return hasRowwise() ? getResults().front() : Value();
}

Value QuantizeOp::getColumnwiseData() {
  if (!hasColumnwise())
    return {};
  if (!hasRowwise())
    return getResults().front();
  return getResults()[getMode() == ScalingMode::per_tensor ? 1 : 2];
}

Value QuantizeOp::getScaleInv() {
  if (getMode() == ScalingMode::per_tensor)
    return getResults()[getNumResults() - 2];
  return hasRowwise() ? getResults()[1] : Value();
}

Value QuantizeOp::getColumnwiseScaleInv() {
  if (getMode() == ScalingMode::per_tensor)
    return getScaleInv();
  return hasColumnwise() ? getResults().back() : Value();
}

Value QuantizeOp::getAmax() {
  return getMode() == ScalingMode::per_tensor ? getResults().back() : Value();
}

/// The attributes that shape the scales of `mode`, and the `scale`
/// operand: what te.quantize and a quantized te.norm accept.
static LogicalResult verifyQuantizeConfig(const Diag &diag, ScalingMode mode,
                                          bool hasScale, bool pow2Scales,
                                          APFloat epsilon,
                                          StringRef epsilonName) {
  StringRef modeName = stringifyScalingMode(mode);
  bool blockMode =
      mode == ScalingMode::block_1x128 || mode == ScalingMode::block_128x128;
  if (mode == ScalingMode::per_tensor && !hasScale)
    return diag("mode per_tensor needs scale(%scale), an f32 scalar tensor");
  if (mode != ScalingMode::per_tensor && hasScale)
    return diag("mode ", modeName,
                " computes its own scales; scale(...) is only valid with "
                "mode per_tensor");
  if (!blockMode && !pow2Scales)
    return diag("'pow2_scales false' is only valid with modes block_1x128 "
                "and block_128x128 (the other modes' scales are fixed by "
                "their format or given)");
  if (!blockMode && !epsilon.isZero())
    return diag("'", epsilonName,
                "' is only valid with modes block_1x128 and block_128x128");
  return verifyEpsilon(diag, epsilon);
}

/// The quantized results of `input` in `mode` and `usage`: their number
/// and types, in te.quantize's order ([data], [data_t], scale_inv, amax for
/// per_tensor; [data, scale_inv], [columnwise data, columnwise scale_inv]
/// for the others).
static LogicalResult verifyQuantizedResults(const Diag &diag, ScalingMode mode,
                                            QuantizeUsage usage,
                                            RankedTensorType input,
                                            ValueRange results) {
  StringRef modeName = stringifyScalingMode(mode);
  unsigned expected = QuantizeOp::getNumExpectedResults(mode, usage);
  bool perTensor = mode == ScalingMode::per_tensor;
  if (results.size() != expected) {
    const char *layout =
        perTensor ? "[data], [data_t], scale_inv, amax"
                  : "[data, scale_inv], [columnwise data, columnwise "
                    "scale_inv]";
    return diag("mode ", modeName, " with usage ",
                stringifyQuantizeUsage(usage), " produces ", expected,
                " results (", layout, "), got ", results.size());
  }
  bool rowwise = usage != QuantizeUsage::columnwise;
  bool columnwise = usage != QuantizeUsage::rowwise;
  Type fp8 = cast<RankedTensorType>(results[0].getType()).getElementType();
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(fp8))
    return diag("quantized data must be f8E4M3FN or f8E5M2, got ", fp8);

  unsigned next = 0;
  Value scaleInv = perTensor ? results[expected - 2] : Value();
  if (rowwise) {
    auto dataType = RankedTensorType::get(input.getShape(), fp8);
    FailureOr<RankedTensorType> scaleType =
        getScaleInvType(diag, mode, /*mxfp8Columnwise=*/false, dataType);
    Value data = results[next++];
    Value rowScale = perTensor ? scaleInv : results[next++];
    if (failed(scaleType) ||
        failed(checkResultType(diag, data, "data", dataType)) ||
        failed(checkResultType(diag, rowScale, "scale_inv", *scaleType)))
      return failure();
  }
  if (columnwise) {
    RankedTensorType dataType;
    if (mode == ScalingMode::mxfp8_1x32) {
      dataType = RankedTensorType::get(input.getShape(), fp8);
    } else {
      if (input.getRank() != 2)
        return diag("the column-wise copy of mode ", modeName,
                    " is stored transposed and needs a 2-D input; got ", input,
                    " (reshape to [rows, cols] first)");
      dataType = getTransposedType(input, fp8);
    }
    FailureOr<RankedTensorType> scaleType =
        getScaleInvType(diag, mode, mode == ScalingMode::mxfp8_1x32, dataType);
    Value data = results[next++];
    Value colScale = perTensor ? scaleInv : results[next++];
    if (failed(scaleType) ||
        failed(checkResultType(diag, data, "columnwise data", dataType)) ||
        failed(checkResultType(diag, colScale, "columnwise scale_inv",
                               *scaleType)))
      return failure();
  }
  if (perTensor &&
      failed(checkResultType(
          diag, results.back(), "amax",
          RankedTensorType::get({}, Float32Type::get(input.getContext())))))
    return failure();
  return success();
}

LogicalResult QuantizeOp::verify() {
  Diag diag(getOperation());
  if (failed(verifyQuantizeConfig(diag, getMode(),
                                  static_cast<bool>(getScale()),
                                  getPow2Scales(), getEpsilon(), "epsilon")))
    return failure();
  return verifyQuantizedResults(diag, getMode(), getUsage(),
                                getInput().getType(), getResults());
}

LogicalResult DequantizeOp::verify() {
  Diag diag(getOperation());
  ScalingMode mode = getMode();
  if (getColumnwise() && mode != ScalingMode::mxfp8_1x32)
    return diag("'columnwise' is only valid with mode mxfp8_1x32 (other "
                "modes store column-wise copies transposed)");
  RankedTensorType data = getData().getType();
  FailureOr<RankedTensorType> scaleType =
      getScaleInvType(diag, mode, getColumnwise(), data);
  if (failed(scaleType))
    return failure();
  if (getScaleInv().getType() != *scaleType)
    return diag("'scale_inv' must be ", *scaleType, " for mode ",
                stringifyScalingMode(mode), " and data ", data, ", got ",
                getScaleInv().getType());
  if (failed(verifyCompatibleShape(getResult().getType(), data)))
    return diag("the result must have the data's shape ", data, ", got ",
                getResult().getType());
  return success();
}

bool ScaledMatmulOp::hasFP8Operands() {
  return isa<Float8E4M3FNType, Float8E5M2Type>(
      getA().getType().getElementType());
}

bool ScaledMatmulOp::hasFP8Output() {
  return isa<Float8E4M3FNType, Float8E5M2Type>(
      getD().getType().getElementType());
}

namespace {
/// The side results of a te.scaled_matmul, in order: amax, pre_gelu,
/// bias_grad. Each is the index into side_results, or -1.
struct GemmSideResults {
  int amax = -1, preGelu = -1, biasGrad = -1;
  unsigned count = 0;
};

GemmSideResults getGemmSideResults(ScaledMatmulOp op) {
  GemmSideResults side;
  if (op.hasFP8Output())
    side.amax = side.count++;
  if (op.getPreGelu())
    side.preGelu = side.count++;
  if (op.getBiasGrad())
    side.biasGrad = side.count++;
  return side;
}

Value getSideResult(ScaledMatmulOp op, int index) {
  if (index < 0 || index >= static_cast<int>(op.getSideResults().size()))
    return nullptr;
  return op.getSideResults()[index];
}
} // namespace

Value ScaledMatmulOp::getAmax() {
  return getSideResult(*this, getGemmSideResults(*this).amax);
}

Value ScaledMatmulOp::getPreGeluResult() {
  return getSideResult(*this, getGemmSideResults(*this).preGelu);
}

Value ScaledMatmulOp::getBiasGradResult() {
  return getSideResult(*this, getGemmSideResults(*this).biasGrad);
}

void ScaledMatmulOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  setName(getD(), "d");
  GemmSideResults side = getGemmSideResults(*this);
  for (auto [index, name] :
       {std::pair{side.amax, "amax"}, std::pair{side.preGelu, "pre_gelu"},
        std::pair{side.biasGrad, "bias_grad"}})
    if (Value value = getSideResult(*this, index))
      setName(value, name);
}

std::array<int64_t, 3> ScaledMatmulOp::getProblemSize() {
  RankedTensorType a = getA().getType(), b = getB().getType();
  if (a.getRank() != 2 || b.getRank() != 2)
    return {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic};
  return {a.getDimSize(getTransposeA() ? 1 : 0),
          b.getDimSize(getTransposeB() ? 0 : 1),
          a.getDimSize(getTransposeA() ? 0 : 1)};
}

std::optional<std::string> ScaledMatmulOp::getFeatureBeyondPerTensorFP8() {
  if (!hasFP8Operands()) {
    std::string name;
    llvm::raw_string_ostream os(name);
    os << getA().getType().getElementType() << " operands";
    return name;
  }
  if (getAScalingMode() != ScalingMode::per_tensor)
    return (stringifyScalingMode(getAScalingMode()) + " scaling").str();
  if (getBScalingMode() != ScalingMode::per_tensor)
    return (stringifyScalingMode(getBScalingMode()) + " scaling").str();
  if (getC())
    return std::string("accumulate");
  if (getGeluInput())
    return std::string("dgelu");
  if (getPreGelu())
    return std::string("pre_gelu");
  if (getBiasGrad())
    return std::string("bias_grad");
  return std::nullopt;
}

namespace {

bool isBlockScaling(ScalingMode mode) {
  return mode == ScalingMode::block_1x128 || mode == ScalingMode::block_128x128;
}

/// The shape of the scale tensor of an FP8 operand stored as `stored`,
/// whose dimension `kDim` is the contraction, in scaling mode `mode`.
SmallVector<int64_t> getGemmScaleShape(RankedTensorType stored, unsigned kDim,
                                       ScalingMode mode) {
  SmallVector<int64_t> shape(stored.getShape());
  switch (mode) {
  case ScalingMode::per_tensor:
    return {};
  case ScalingMode::mxfp8_1x32:
    shape[kDim] = ceilDivDim(shape[kDim], 32);
    return shape;
  case ScalingMode::block_1x128:
    shape[kDim] = ceilDivDim(shape[kDim], 128);
    return shape;
  case ScalingMode::block_128x128:
    for (int64_t &size : shape)
      size = ceilDivDim(size, 128);
    return shape;
  }
  llvm_unreachable("unknown scaling mode");
}

/// Checks the scale operand `scale` (named `name`) of the FP8 operand
/// `stored`; `groups` leading dimensions come before the shape of one
/// GEMM's scales (a grouped GEMM's per-group scales).
LogicalResult verifyGemmScale(const Diag &diag, Value scale, StringRef name,
                              RankedTensorType stored, unsigned kDim,
                              ScalingMode mode, ArrayRef<int64_t> groups = {}) {
  auto type = cast<RankedTensorType>(scale.getType());
  Type expected = mode == ScalingMode::mxfp8_1x32
                      ? Type(Float8E8M0FNUType::get(scale.getContext()))
                      : Type(Float32Type::get(scale.getContext()));
  SmallVector<int64_t> shape(groups);
  llvm::append_range(shape, getGemmScaleShape(stored, kDim, mode));
  bool shapeOK = type.getRank() == static_cast<int64_t>(shape.size());
  for (unsigned i = 0; shapeOK && i < shape.size(); ++i)
    shapeOK = !dimsConflict(type.getDimSize(i), shape[i]);
  if (type.getElementType() != expected || !shapeOK)
    return diag("'", name, "' of a ", stringifyScalingMode(mode),
                " operand stored as ", stored, " must be ",
                RankedTensorType::get(shape, expected), ", got ", type);
  if (mode == ScalingMode::mxfp8_1x32 && !stored.isDynamicDim(kDim) &&
      stored.getDimSize(kDim) % 32 != 0)
    return diag("mxfp8_1x32 scales blocks of 32 along K, so K must be a "
                "multiple of 32, got ",
                stored.getDimSize(kDim));
  return success();
}

/// TE's rules on the precisions and scaling modes of the two operands
/// (CanonicalizeGemmInput and cublas_gemm in TE's cublaslt_gemm.cu), but
/// not the scales' shapes; `op` is te.scaled_matmul or te.grouped_matmul.
/// Sets `fp8` to whether the operands are FP8.
template <typename OpT>
LogicalResult verifyGemmPrecisions(OpT op, const Diag &diag, bool &fp8) {
  RankedTensorType a = op.getA().getType(), b = op.getB().getType();
  Type aElement = a.getElementType(), bElement = b.getElementType();
  bool fp8A = isa<Float8E4M3FNType, Float8E5M2Type>(aElement);
  bool fp8B = isa<Float8E4M3FNType, Float8E5M2Type>(bElement);
  if (fp8A != fp8B)
    return diag("'a' and 'b' must both be FP8 or both f32, f16 or bf16, got ",
                aElement, " and ", bElement,
                "; quantize the other operand or dequantize this one");
  fp8 = fp8A;
  if (!fp8A) {
    if (aElement != bElement)
      return diag("high-precision 'a' and 'b' must have one element type, "
                  "got ",
                  aElement, " and ", bElement);
    if (op.getAScaleInv() || op.getAScaling() || op.getBScaling())
      return diag("scales(...) and scaling modes are only valid with FP8 "
                  "operands, got ",
                  aElement);
    return success();
  }
  if (isa<Float8E5M2Type>(aElement) && isa<Float8E5M2Type>(bElement))
    return diag("TE's GEMM takes no e5m2 by e5m2 product; make one operand "
                "f8E4M3FN");
  if (!op.getAScaleInv() || !op.getBScaleInv())
    return diag("FP8 operands need scales(%a_scale_inv, %b_scale_inv)");
  ScalingMode aMode = op.getAScalingMode(), bMode = op.getBScalingMode();
  if (aMode != bMode && !(isBlockScaling(aMode) && isBlockScaling(bMode)))
    return diag("'a' and 'b' must use one scaling mode (only "
                "Float8BlockScaling mixes block_1x128 with block_128x128), "
                "got ",
                stringifyScalingMode(aMode), " and ",
                stringifyScalingMode(bMode));
  if (aMode == ScalingMode::block_128x128 &&
      bMode == ScalingMode::block_128x128)
    return diag("TE's GEMM takes 1D by 1D, 1D by 2D or 2D by 1D block "
                "scaling, not block_128x128 by block_128x128");
  return success();
}

/// verifyGemmPrecisions and the scales' shapes of te.scaled_matmul.
LogicalResult verifyGemmOperands(ScaledMatmulOp op, const Diag &diag) {
  bool fp8 = false;
  if (failed(verifyGemmPrecisions(op, diag, fp8)))
    return failure();
  if (!fp8)
    return success();
  RankedTensorType a = op.getA().getType(), b = op.getB().getType();
  ScalingMode aMode = op.getAScalingMode(), bMode = op.getBScalingMode();
  if (failed(verifyGemmScale(diag, op.getAScaleInv(), "a_scale_inv", a,
                             op.getTransposeA() ? 0 : 1, aMode)) ||
      failed(verifyGemmScale(diag, op.getBScaleInv(), "b_scale_inv", b,
                             op.getTransposeB() ? 1 : 0, bMode)))
    return failure();
  return success();
}

/// TE's epilogues and the results they add.
LogicalResult verifyGemmEpilogue(ScaledMatmulOp op, const Diag &diag, int64_t m,
                                 int64_t n) {
  RankedTensorType d = op.getD().getType();
  if (Value bias = op.getBias(); bias && dimsConflict(dimSize(bias, 0), n))
    return diag("'bias' must have shape [", fmtDim(n), "], got ",
                bias.getType());
  if (op.getBias() && op.getBiasGrad())
    return diag("'bias' (the forward epilogue's input) and 'bias_grad' (the "
                "backward's output) exclude each other, as TE's bias tensor "
                "is one or the other");
  if (op.getGelu() && op.getGeluInput())
    return diag("'gelu' (forward) and 'dgelu' (backward) exclude each other");
  if (op.getPreGelu() && !op.getGelu())
    return diag("'pre_gelu' returns the values before the GELU, so it needs "
                "'gelu'");
  if (op.getGelu() && op.getBiasGrad())
    return diag("'bias_grad' is a backward epilogue; with 'gelu' use "
                "'dgelu(%pre_gelu)' instead");
  auto sameShapeAsD = [&](Value value, StringRef name) -> LogicalResult {
    auto type = cast<RankedTensorType>(value.getType());
    if (dimsConflict(type.getDimSize(0), m) ||
        dimsConflict(type.getDimSize(1), n))
      return diag("'", name, "' must have shape [", fmtDim(m), ", ", fmtDim(n),
                  "], got ", type);
    return success();
  };
  if (Value input = op.getGeluInput();
      input && failed(sameShapeAsD(input, "dgelu")))
    return failure();
  if (Value c = op.getC()) {
    if (failed(sameShapeAsD(c, "accumulate")))
      return failure();
    if (op.hasFP8Output())
      return diag("'accumulate' needs a high-precision output: TE cannot add "
                  "into an FP8 D");
    if (cast<RankedTensorType>(c.getType()).getElementType() !=
        d.getElementType())
      return diag("'accumulate' must have D's element type ",
                  d.getElementType(), ", got ", c.getType());
  }
  if (op.hasFP8Operands() && (isBlockScaling(op.getAScalingMode()) ||
                              isBlockScaling(op.getBScalingMode()))) {
    if (op.getGelu() || op.getBiasGrad())
      return diag("with block scaling TE's GEMM (cuBLASLt) offers only the "
                  "bias and dgelu epilogues");
  }
  return success();
}

} // namespace

LogicalResult ScaledMatmulOp::verify() {
  Diag diag(getOperation());
  RankedTensorType a = getA().getType(), b = getB().getType();
  if (a.getRank() != 2 || b.getRank() != 2)
    return diag("'a' and 'b' must be 2-D, got ", a, " and ", b);
  int64_t m = a.getDimSize(getTransposeA() ? 1 : 0);
  int64_t kA = a.getDimSize(getTransposeA() ? 0 : 1);
  int64_t kB = b.getDimSize(getTransposeB() ? 1 : 0);
  int64_t n = b.getDimSize(getTransposeB() ? 0 : 1);
  if (dimsConflict(kA, kB))
    return diag("contraction sizes differ: op(a) is ", fmtDim(m), "x",
                fmtDim(kA), " and op(b) is ", fmtDim(kB), "x", fmtDim(n));
  RankedTensorType d = getD().getType();
  if (d.getRank() != 2 || dimsConflict(d.getDimSize(0), m) ||
      dimsConflict(d.getDimSize(1), n))
    return diag("result 'd' must have shape [", fmtDim(m), ", ", fmtDim(n),
                "], got ", d);
  if (failed(verifyGemmOperands(*this, diag)) ||
      failed(verifyGemmEpilogue(*this, diag, m, n)))
    return failure();

  bool fp8Out = hasFP8Output();
  if (fp8Out && !getOutScale())
    return diag("an FP8 output (", d.getElementType(),
                ") needs out_scale(%scale) and an amax result");
  if (!fp8Out && getOutScale())
    return diag("out_scale(...) and the amax result are only valid with an "
                "FP8 output, got ",
                d.getElementType());
  if (fp8Out &&
      (!hasFP8Operands() || getAScalingMode() != ScalingMode::per_tensor))
    return diag("an FP8 output needs per_tensor FP8 operands (TE fuses the "
                "output cast only for delayed scaling); compute D in high "
                "precision and te.quantize it");

  // The side results the attributes and output type call for, in order.
  GemmSideResults side = getGemmSideResults(*this);
  if (getSideResults().size() != side.count)
    return diag("expects ", side.count + 1, " results (D",
                fp8Out ? ", amax" : "", getPreGelu() ? ", pre_gelu" : "",
                getBiasGrad() ? ", bias_grad" : "", "), got ",
                getSideResults().size() + 1,
                "; amax comes with an FP8 output, pre_gelu and bias_grad "
                "with their keywords");
  auto checkSide = [&](int index, StringRef name,
                       ArrayRef<int64_t> shape) -> LogicalResult {
    if (index < 0)
      return success();
    auto type = cast<RankedTensorType>(getSideResults()[index].getType());
    bool ok = type.getRank() == static_cast<int64_t>(shape.size());
    for (unsigned i = 0; ok && i < shape.size(); ++i)
      ok = !dimsConflict(type.getDimSize(i), shape[i]);
    if (!ok)
      return diag("result '", name, "' must have shape [",
                  llvm::join(llvm::map_range(shape, fmtDim), ", "), "], got ",
                  type);
    return success();
  };
  if (side.amax >= 0 &&
      !cast<RankedTensorType>(getSideResults()[side.amax].getType())
           .getElementType()
           .isF32())
    return diag("result 'amax' must be f32, got ",
                getSideResults()[side.amax].getType());
  int64_t biasLength = getGeluInput() ? n : m;
  if (failed(checkSide(side.amax, "amax", {})) ||
      failed(checkSide(side.preGelu, "pre_gelu", {m, n})) ||
      failed(checkSide(side.biasGrad, "bias_grad", {biasLength})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// GroupedMatmulOp
//===----------------------------------------------------------------------===//

bool GroupedMatmulOp::hasFP8Operands() {
  return isa<Float8E4M3FNType, Float8E5M2Type>(
      getA().getType().getElementType());
}

LogicalResult GroupedMatmulOp::verify() {
  Diag diag(getOperation());
  RankedTensorType a = getA().getType(), b = getB().getType();
  if (a.getRank() != 2 || b.getRank() != 3)
    return diag("'a' must be 2-D (the tokens of every group, [T, K]) and "
                "'b' 3-D (one matrix per group), got ",
                a, " and ", b);
  int64_t tokens = a.getDimSize(0), kA = a.getDimSize(1);
  int64_t groups = b.getDimSize(0);
  bool transposeB = getTransposeB();
  int64_t kB = b.getDimSize(transposeB ? 2 : 1);
  int64_t n = b.getDimSize(transposeB ? 1 : 2);
  if (dimsConflict(kA, kB))
    return diag("contraction sizes differ: 'a' is ", fmtDim(tokens), "x",
                fmtDim(kA), " and each op(b[g]) is ", fmtDim(kB), "x",
                fmtDim(n));
  if (dimsConflict(dimSize(getSplits(), 0), groups))
    return diag("'splits' must have one entry per group of 'b' (",
                fmtDim(groups), "), got ", getSplits().getType());
  RankedTensorType d = getD().getType();
  if (dimsConflict(d.getDimSize(0), tokens) || dimsConflict(d.getDimSize(1), n))
    return diag("result 'd' must have shape [", fmtDim(tokens), ", ", fmtDim(n),
                "], got ", d);

  bool fp8 = false;
  if (failed(verifyGemmPrecisions(*this, diag, fp8)))
    return failure();
  if (fp8) {
    ScalingMode aMode = getAScalingMode(), bMode = getBScalingMode();
    if (aMode == ScalingMode::block_128x128)
      return diag("'a' of a grouped GEMM cannot be block_128x128: its "
                  "128-row blocks would straddle groups (TE scales "
                  "activations 1x128)");
    // One GEMM's B, and the leading [G] of per-group scales.
    auto perGroupB =
        RankedTensorType::get(b.getShape().drop_front(), b.getElementType());
    SmallVector<int64_t> groupDims = {groups};
    if (failed(verifyGemmScale(diag, getAScaleInv(), "a_scale_inv", a, 1, aMode,
                               aMode == ScalingMode::per_tensor
                                   ? ArrayRef<int64_t>(groupDims)
                                   : ArrayRef<int64_t>())) ||
        failed(verifyGemmScale(diag, getBScaleInv(), "b_scale_inv", perGroupB,
                               transposeB ? 1 : 0, bMode, groupDims)))
      return failure();
  }

  if (Value bias = getBias(); bias && (dimsConflict(dimSize(bias, 0), groups) ||
                                       dimsConflict(dimSize(bias, 1), n)))
    return diag("'bias' must have shape [", fmtDim(groups), ", ", fmtDim(n),
                "] (one bias per group), got ", bias.getType());
  if (Value c = getC()) {
    auto type = cast<RankedTensorType>(c.getType());
    if (type != d)
      return diag("'accumulate' must have D's type ", d, ", got ", type);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Outputs that may be quantized (te.norm, te.activation, its backward)
//===----------------------------------------------------------------------===//

QuantizedOutputLayout QuantizedOutputLayout::of(std::optional<ScalingMode> mode,
                                                QuantizeUsage usage, bool amax,
                                                unsigned numResults,
                                                unsigned trailing) {
  QuantizedOutputLayout layout;
  layout.numQuantized =
      mode ? QuantizeOp::getNumExpectedResults(*mode, usage) : 0;
  layout.hasAmax = amax;
  layout.trailing = trailing;
  layout.hasOutput = !mode || numResults > layout.sizeWithoutOutput();
  return layout;
}

/// The quantize attributes of `op` and its number of results: [out],
/// [quantized...], [amax], then the results `trailingNames` names. `what`
/// starts the messages ("kind rmsnorm"); `outputName` names the output.
template <typename OpT>
static LogicalResult
verifyQuantizableOutputConfig(const Diag &diag, OpT op, StringRef what,
                              StringRef outputName,
                              ArrayRef<StringRef> trailingNames) {
  std::optional<ScalingMode> mode = op.getQuantize();
  if (mode && op.getAmaxOutput())
    return diag("'amax' is for the high-precision output alone; a quantized "
                "output states its own scales (per_tensor's amax is among "
                "its results)");
  if (!mode && (op.getScale() || op.getUsage() != QuantizeUsage::rowwise ||
                !op.getPow2Scales() || !op.getAmaxEpsilon().isZero()))
    return diag("scale(...), 'usage', 'pow2_scales' and 'amax_epsilon' "
                "shape a quantized output; add 'quantize <mode>'");
  if (mode && failed(verifyQuantizeConfig(
                  diag, *mode, static_cast<bool>(op.getScale()),
                  op.getPow2Scales(), op.getAmaxEpsilon(), "amax_epsilon")))
    return failure();
  QuantizedOutputLayout layout = op.getLayout();
  unsigned without = layout.sizeWithoutOutput();
  unsigned count = op->getNumResults();
  if (count == without + 1 || (mode && count == without))
    return success();
  SmallVector<std::string> names;
  names.push_back(mode ? ("[" + outputName + "]").str() : outputName.str());
  if (mode)
    names.push_back(std::to_string(layout.numQuantized) +
                    " quantized (te.quantize's)");
  if (op.getAmaxOutput())
    names.push_back("amax");
  for (StringRef name : trailingNames)
    names.push_back(name.str());
  std::string list = names.back();
  if (names.size() > 1)
    list = llvm::join(ArrayRef(names).drop_back(), ", ") + " and " + list;
  std::string config =
      mode ? (" quantized " + stringifyScalingMode(*mode) + " usage " +
              stringifyQuantizeUsage(op.getUsage()))
                 .str()
           : std::string(op.getAmaxOutput() ? " with amax" : "");
  return diag(what, config, " has ",
              mode ? std::to_string(without) + " or " +
                         std::to_string(without + 1)
                   : std::to_string(without + 1),
              " results (", list, "), got ", count);
}

/// The quantized results and the amax of `op`, whose output has the shape
/// of `output`.
template <typename OpT>
static LogicalResult verifyQuantizableOutputTypes(const Diag &diag, OpT op,
                                                  RankedTensorType output) {
  QuantizedOutputLayout layout = op.getLayout();
  if (std::optional<ScalingMode> mode = op.getQuantize())
    if (failed(verifyQuantizedResults(diag, *mode, op.getUsage(), output,
                                      layout.getQuantized(op->getResults()))))
      return failure();
  if (Value amax = layout.getAmax(op->getResults()))
    return checkResultType(
        diag, amax, "amax",
        RankedTensorType::get({}, Float32Type::get(op.getContext())));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// The rows' shape of a normalized tensor: all but its last dimension.
static ArrayRef<int64_t> getNormRowsShape(RankedTensorType type) {
  return type.getShape().drop_back();
}

/// `input` ([..., H], rank >= 2), `gamma` and the optional `beta` or `add`
/// ([H]) and a statistic ([...], f32): their ranks and sizes.
static LogicalResult
verifyNormShapes(const Diag &diag, Value input, StringRef inputName,
                 Value gamma,
                 ArrayRef<std::pair<StringRef, Value>> statistics) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType.getRank() < 2)
    return diag("'", inputName,
                "' must have rank >= 2 ([rows..., hidden]; TE's [N, H]), "
                "got ",
                inputType);
  int64_t hidden = inputType.getShape().back();
  if (hidden == 0)
    return diag("'", inputName,
                "' must have a hidden dimension of at least 1, got ",
                inputType);
  auto gammaType = cast<RankedTensorType>(gamma.getType());
  if (gammaType.getRank() != 1 || dimsConflict(gammaType.getDimSize(0), hidden))
    return diag("'gamma' must have shape [", fmtDim(hidden),
                "] (the hidden dimension of '", inputName, "'), got ",
                gammaType);
  for (auto [name, value] : statistics) {
    auto type = cast<RankedTensorType>(value.getType());
    if (!type.getElementType().isF32() ||
        failed(verifyCompatibleShape(type.getShape(),
                                     getNormRowsShape(inputType))))
      return diag(
          "'", name, "' must be f32 of shape [",
          llvm::join(llvm::map_range(getNormRowsShape(inputType), fmtDim),
                     ", "),
          "] ('", inputName, "' without its last dimension), got ", type);
  }
  return success();
}

LogicalResult NormOp::verify() {
  Diag diag(getOperation());
  bool layerNorm = isLayerNorm();
  StringRef kind = stringifyNormKind(getKind());
  if (failed(verifyEpsilon(diag, getEpsilon())))
    return failure();
  if (getBeta() && !layerNorm)
    return diag("'beta' is for layernorm only (TE's RMSNorm has no bias)");
  SmallVector<StringRef> statisticsNames = {"rsigma"};
  if (layerNorm)
    statisticsNames.insert(statisticsNames.begin(), "mu");
  if (failed(verifyQuantizableOutputConfig(diag, *this, ("kind " + kind).str(),
                                           "z", statisticsNames)))
    return failure();
  SmallVector<std::pair<StringRef, Value>> statistics = {
      {"rsigma", getRsigma()}};
  if (layerNorm)
    statistics.insert(statistics.begin(), {"mu", getMean()});
  if (failed(
          verifyNormShapes(diag, getInput(), "input", getGamma(), statistics)))
    return failure();
  Type element = getInput().getType().getElementType();
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"gamma", getGamma()}, {"beta", getBeta()}})
    if (value && cast<ShapedType>(value.getType()) !=
                     cast<ShapedType>(getGamma().getType()).clone(element))
      return diag("'", name, "' must be ", getGamma().getType().clone(element),
                  " (the input's element type, as TE's kernels take it), got ",
                  value.getType());
  if (Value z = getOutput()) {
    auto zType = cast<RankedTensorType>(z.getType());
    if (failed(verifyCompatibleShape(zType, getInput().getType())))
      return diag("the result z must have the input's shape, got ", zType,
                  " for ", getInput().getType());
    Type zElement = zType.getElementType();
    if (!isa<Float32Type, Float16Type, BFloat16Type>(zElement) ||
        (zElement != element && !element.isF32()))
      return diag("the result z must be ", element,
                  " like the input (only an f32 input may give bf16 or f16, "
                  "as TE registers its kernels), got ",
                  zElement);
  }
  return verifyQuantizableOutputTypes(diag, *this, getInput().getType());
}

LogicalResult NormBackwardOp::verify() {
  Diag diag(getOperation());
  bool layerNorm = isLayerNorm();
  StringRef kind = stringifyNormKind(getKind());
  if (layerNorm != static_cast<bool>(getMu()))
    return diag(layerNorm ? "kind layernorm needs the forward's 'mean(%mu)'"
                          : "'mean' is for layernorm only (RMSNorm has no "
                            "mean)");
  if (getAdd() && layerNorm)
    return diag("'add' is for rmsnorm only (TE's nvte_rmsnorm_bwd_add)");
  unsigned expected = layerNorm ? 3 : 2;
  if (getResults().size() != expected)
    return diag("kind ", kind, " has ", expected, " results (",
                layerNorm ? "dx, dgamma and dbeta" : "dx and dgamma", "), got ",
                getResults().size());
  SmallVector<std::pair<StringRef, Value>> statistics = {
      {"rsigma", getRsigma()}};
  if (layerNorm)
    statistics.push_back({"mu", getMu()});
  if (failed(
          verifyNormShapes(diag, getInput(), "input", getGamma(), statistics)))
    return failure();
  auto inputType = cast<RankedTensorType>(getInput().getType());
  Type weight = getGamma().getType().getElementType();
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"dz", getDz()}, {"add", getAdd()}})
    if (value && cast<ShapedType>(value.getType()) !=
                     cast<ShapedType>(inputType.clone(weight)))
      return diag("'", name, "' must be ", inputType.clone(weight),
                  " (the input's shape, gamma's element type), got ",
                  value.getType());
  if (inputType.getElementType() != weight &&
      !inputType.getElementType().isF32())
    return diag("'input' must have gamma's element type ", weight,
                " or be f32 (as TE registers its kernels), got ", inputType);
  if (getDx().getType() != inputType)
    return diag("the result dx must be ", inputType,
                " (the input's type), got ", getDx().getType());
  for (auto [name, value] : {std::pair<StringRef, Value>{"dgamma", getDgamma()},
                             {"dbeta", getDbeta()}})
    if (value && value.getType() != getGamma().getType())
      return diag("the result ", name, " must be ", getGamma().getType(),
                  " (gamma's type), got ", value.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

static bool isGatedActivation(ActivationKind kind) {
  switch (kind) {
  case ActivationKind::gelu:
  case ActivationKind::qgelu:
  case ActivationKind::relu:
  case ActivationKind::srelu:
  case ActivationKind::silu:
    return false;
  case ActivationKind::geglu:
  case ActivationKind::qgeglu:
  case ActivationKind::reglu:
  case ActivationKind::sreglu:
  case ActivationKind::swiglu:
  case ActivationKind::clamped_swiglu:
  case ActivationKind::glu:
    return true;
  }
  llvm_unreachable("unknown activation kind");
}

bool ActivationOp::isGated() { return isGatedActivation(getKind()); }
bool ActivationBackwardOp::isGated() { return isGatedActivation(getKind()); }

/// The parameters of clamped_swiglu: `limit` given (> 0, finite) for it
/// and only for it; `alpha` and `linear_offset` finite and left at their
/// defaults by the other kinds.
template <typename OpT>
static LogicalResult verifyActivationParameters(const Diag &diag, OpT op) {
  bool clamped = op.getKind() == ActivationKind::clamped_swiglu;
  std::optional<APFloat> limit = op.getLimit();
  if (clamped && !limit)
    return diag("kind clamped_swiglu needs 'limit' (TE's limit, > 0)");
  if (clamped && (!limit->isFinite() || limit->convertToFloat() <= 0.0f))
    return diag("'limit' must be finite and > 0, got ",
                limit->convertToDouble());
  if (!clamped && (limit || op.getAlpha() != APFloat(1.702f) ||
                   op.getLinearOffset() != APFloat(1.0f)))
    return diag("'limit', 'alpha' and 'linear_offset' are the parameters of "
                "kind clamped_swiglu only");
  if (!op.getAlpha().isFinite() || !op.getLinearOffset().isFinite())
    return diag("'alpha' and 'linear_offset' must be finite");
  return success();
}

/// `input`'s rank and, for gated kinds, its even last dimension.
static LogicalResult verifyActivationInput(const Diag &diag, StringRef name,
                                           RankedTensorType input, bool gated,
                                           ActivationKind kind) {
  if (input.getRank() < 1)
    return diag("'", name, "' must have rank >= 1, got ", input);
  int64_t last = input.getShape().back();
  if (gated && !ShapedType::isDynamic(last) && last % 2 != 0)
    return diag("kind ", stringifyActivationKind(kind),
                " is gated: the last dimension of '", name,
                "' holds the activation's and the gate's halves [2H] and "
                "must be even, got ",
                input);
  return success();
}

/// A high-precision result of `shape`; any of f32, f16 and bf16.
static LogicalResult checkHighPrecisionResult(const Diag &diag, Value result,
                                              StringRef name,
                                              ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(result.getType());
  if (!isa<Float32Type, Float16Type, BFloat16Type>(type.getElementType()) ||
      failed(verifyCompatibleShape(type.getShape(), shape)))
    return diag("the result ", name, " must be f32, f16 or bf16 of shape [",
                llvm::join(llvm::map_range(shape, fmtDim), ", "), "], got ",
                type);
  return success();
}

SmallVector<int64_t> ActivationOp::getOutputShape() {
  SmallVector<int64_t> shape(getInput().getType().getShape());
  if (isGated() && !shape.empty() && !ShapedType::isDynamic(shape.back()))
    shape.back() /= 2;
  return shape;
}

LogicalResult ActivationOp::verify() {
  Diag diag(getOperation());
  StringRef kind = stringifyActivationKind(getKind());
  RankedTensorType input = getInput().getType();
  if (failed(verifyActivationParameters(diag, *this)) ||
      failed(
          verifyActivationInput(diag, "input", input, isGated(), getKind())) ||
      failed(verifyQuantizableOutputConfig(diag, *this, ("kind " + kind).str(),
                                           "y", {})))
    return failure();
  SmallVector<int64_t> shape = getOutputShape();
  if (Value y = getOutput())
    if (failed(checkHighPrecisionResult(diag, y, "y", shape)))
      return failure();
  return verifyQuantizableOutputTypes(
      diag, *this, RankedTensorType::get(shape, input.getElementType()));
}

LogicalResult ActivationBackwardOp::verify() {
  Diag diag(getOperation());
  StringRef kind = stringifyActivationKind(getKind());
  RankedTensorType input = getInput().getType();
  RankedTensorType grad = getGrad().getType();
  SmallVector<StringRef> trailing;
  if (getDbias())
    trailing.push_back("dbias");
  if (failed(verifyActivationParameters(diag, *this)) ||
      failed(verifyActivationInput(diag, "input", input, isGated(), getKind())))
    return failure();
  if (grad.getElementType() != input.getElementType())
    return diag("'grad' and 'input' must have one element type (TE's kernels "
                "read both as the input type), got ",
                grad.getElementType(), " and ", input.getElementType());
  if (getDbias() && isGated())
    return diag("'dbias' is for the plain activations (TE fuses the bias "
                "gradient with dgelu, dqgelu, drelu, dsrelu and dsilu, not "
                "with the gated kinds)");
  if (getDbias() && input.getRank() < 2)
    return diag("'dbias' sums over the leading dimensions of 'input', which "
                "needs rank >= 2, got ",
                input);
  SmallVector<int64_t> gradShape(input.getShape());
  if (isGated() && !ShapedType::isDynamic(gradShape.back()))
    gradShape.back() /= 2;
  if (failed(verifyCompatibleShape(grad.getShape(), gradShape)))
    return diag("'grad' must have shape [",
                llvm::join(llvm::map_range(gradShape, fmtDim), ", "), "] (",
                isGated() ? "the input's with its last dimension halved"
                          : "the input's",
                "), got ", grad);
  if (failed(verifyQuantizableOutputConfig(diag, *this, ("kind " + kind).str(),
                                           "dx", trailing)))
    return failure();
  if (Value dx = getDx())
    if (failed(checkHighPrecisionResult(diag, dx, "dx", input.getShape())))
      return failure();
  if (Value dbias = getDbiasResult())
    if (failed(checkResultType(diag, dbias, "dbias",
                               RankedTensorType::get({input.getShape().back()},
                                                     grad.getElementType()))))
      return failure();
  return verifyQuantizableOutputTypes(diag, *this, input);
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

template <typename OpT> static int64_t getRopeSequences(OpT op) {
  if (Value cu = op.getCuSeqlens()) {
    int64_t entries = cast<RankedTensorType>(cu.getType()).getDimSize(0);
    return ShapedType::isDynamic(entries) ? entries : entries - 1;
  }
  return op.getInput().getType().getDimSize(
      op.getFormat() == QKVLayout::sbhd ? 1 : 0);
}

int64_t RopeOp::getNumSequences() { return getRopeSequences(*this); }
int64_t RopeBackwardOp::getNumSequences() { return getRopeSequences(*this); }

template <typename OpT> static LogicalResult verifyRope(OpT op) {
  Diag diag(op.getOperation());
  QKVLayout format = op.getFormat();
  StringRef formatName = stringifyQKVLayout(format);
  if (format == QKVLayout::bhsd)
    return diag("format bhsd is not one of TE's RoPE formats (sbhd, bshd, "
                "thd)");
  RankedTensorType input = op.getInput().getType();
  bool thd = format == QKVLayout::thd;
  int64_t rank = thd ? 3 : 4;
  if (input.getRank() != rank)
    return diag("format ", formatName, " takes a rank-", rank, " input (",
                thd                    ? "[t, h, d]"
                : formatName == "sbhd" ? "[s, b, h, d]"
                                       : "[b, s, h, d]",
                "), got ", input);
  if (op.getResult().getType() != input)
    return diag("the result must have the input's type ", input, ", got ",
                op.getResult().getType());
  auto freqs = cast<RankedTensorType>(op.getFreqs().getType());
  int64_t d = input.getShape().back();
  if (freqs.getRank() != 4 || freqs.getDimSize(1) != 1 ||
      freqs.getDimSize(2) != 1)
    return diag("'freqs' must be f32 [s2, 1, 1, d2] (TE's "
                "RotaryPositionEmbedding output), got ",
                freqs);
  int64_t d2 = freqs.getDimSize(3);
  if (!ShapedType::isDynamic(d2) &&
      (d2 <= 0 || d2 % 2 != 0 || (!ShapedType::isDynamic(d) && d2 > d)))
    return diag("the rotary dimension d2 (the last of 'freqs', ", d2,
                ") must be even, > 0 and <= the head dimension d (", d, ")");
  if (thd != static_cast<bool>(op.getCuSeqlens()))
    return diag(thd ? "format thd needs cu_seqlens(%cu) (i32 [sequences + 1])"
                    : "cu_seqlens(...) is for format thd only");
  if (Value cu = op.getCuSeqlens()) {
    int64_t entries = cast<RankedTensorType>(cu.getType()).getDimSize(0);
    if (!ShapedType::isDynamic(entries) && entries < 2)
      return diag("'cu_seqlens' must have sequences + 1 >= 2 entries, got ",
                  cu.getType());
  }
  if (freqs.getDimSize(0) == 0)
    return diag("'freqs' must have at least one position, got ", freqs);
  // Signless attributes: read signed, so that -1 is not 4294967295.
  int64_t cpSize = op.getCpSizeAttr().getInt();
  int64_t cpRank = op.getCpRankAttr().getInt();
  if (cpSize < 1 || cpRank < 0 || cpRank >= cpSize)
    return diag("'cp_size' must be >= 1 and 'cp_rank' in [0, cp_size), got ",
                cpSize, " and ", cpRank);
  int64_t sequences = op.getNumSequences();
  if (Value start = op.getStartPositions()) {
    int64_t entries = cast<RankedTensorType>(start.getType()).getDimSize(0);
    if (dimsConflict(entries, sequences))
      return diag("'start_positions' must have one entry per sequence (",
                  sequences, "), got ", start.getType());
  }
  int64_t s2 = freqs.getDimSize(0);
  if (!thd) {
    int64_t s = input.getDimSize(op.getSequenceDim());
    if (cpSize > 1 && !ShapedType::isDynamic(s) && s % 2 != 0)
      return diag("with cp_size ", cpSize,
                  " each rank holds two chunks of every sequence, so the "
                  "sequence dimension must be even, got ",
                  s);
    if (!op.getStartPositions() && !ShapedType::isDynamic(s) &&
        !ShapedType::isDynamic(s2) && s * cpSize > s2)
      return diag("'freqs' has ", s2, " positions, fewer than the ", s * cpSize,
                  " the sequence needs (s", cpSize > 1 ? " * cp_size" : "",
                  ")");
  }
  return success();
}

LogicalResult RopeOp::verify() { return verifyRope(*this); }
LogicalResult RopeBackwardOp::verify() { return verifyRope(*this); }

namespace {
/// What te.qkv_rope and te.qkv_rope_backward share: the fused tensor, the
/// split parts (the forward's results, the backward's operands) and the
/// attributes.
struct QkvRopeParts {
  QKVLayout format;
  unsigned sequenceDim;
  ArrayRef<int64_t> split;
  RankedTensorType qkv, q, k, v, qFreqs, kFreqs;
  Value startPositions;
  int64_t cpSize, cpRank;
  StringRef qName, kName, vName, qkvName;
};
} // namespace

/// One freqs operand of te.qkv_rope: f32 [s2, 1, 1, d2]; returns d2, or
/// failure.
static FailureOr<int64_t> verifyQkvFreqs(const Diag &diag, StringRef name,
                                         RankedTensorType freqs, int64_t d) {
  if (freqs.getRank() != 4 || freqs.getDimSize(1) != 1 ||
      freqs.getDimSize(2) != 1 || freqs.getDimSize(0) == 0)
    return diag("'", name,
                "' must be f32 [s2, 1, 1, d2] with s2 >= 1 (TE's "
                "RotaryPositionEmbedding output), got ",
                freqs);
  int64_t d2 = freqs.getDimSize(3);
  if (!ShapedType::isDynamic(d2) && (d2 <= 0 || d2 % 2 != 0 || d2 > d))
    return diag("the rotary dimension d2 (the last of '", name, "', ", d2,
                ") must be even, > 0 and <= the head dimension d (the value "
                "size, ",
                d, ")");
  return d2;
}

static LogicalResult verifyQkvRope(Operation *op, const QkvRopeParts &p) {
  Diag diag(op);
  if (p.format != QKVLayout::sbhd && p.format != QKVLayout::bshd)
    return diag("format ", stringifyQKVLayout(p.format),
                " is not one of TE's fused QKV RoPE formats (sbhd, bshd)");
  if (p.qkv.getRank() != 4)
    return diag("'", p.qkvName, "' must be ",
                p.format == QKVLayout::sbhd ? "[s, b, h, q + k + v]"
                                            : "[b, s, h, q + k + v]",
                ", got ", p.qkv);
  if (llvm::is_contained(p.qkv.getShape(), 0))
    return diag("'", p.qkvName, "' must have no empty dimension, got ", p.qkv);
  if (p.split.size() != 3 ||
      llvm::any_of(p.split, [](int64_t n) { return n <= 0; }))
    return diag("'split' must be three sizes [q, k, v] > 0 (TE's "
                "qkv_split_arg_list), got [",
                llvm::join(llvm::map_range(p.split, fmtDim), ", "), "]");
  int64_t qSize = p.split[0], kSize = p.split[1], d = p.split[2];
  int64_t total = p.qkv.getShape().back();
  if (!ShapedType::isDynamic(total) && qSize + kSize + d != total)
    return diag("'split' [", qSize, ", ", kSize, ", ", d,
                "] must sum to the last dimension of '", p.qkvName, "' (",
                total, ")");
  if (qSize % kSize != 0 || kSize % d != 0)
    return diag("the query size ", qSize,
                " must be a multiple of the key size ", kSize,
                ", and that of the value size ", d, " (the head dimension)");
  FailureOr<int64_t> qd2 = verifyQkvFreqs(diag, "q_freqs", p.qFreqs, d);
  if (failed(qd2))
    return failure();
  FailureOr<int64_t> kd2 = verifyQkvFreqs(diag, "k_freqs", p.kFreqs, d);
  if (failed(kd2))
    return failure();
  if (dimsConflict(*qd2, *kd2))
    return diag("'q_freqs' and 'k_freqs' must rotate as many channels (TE "
                "takes d2 from q_freqs for both), got ",
                *qd2, " and ", *kd2);
  if (p.cpSize < 1 || p.cpRank < 0 || p.cpRank >= p.cpSize)
    return diag("'cp_size' must be >= 1 and 'cp_rank' in [0, cp_size), got ",
                p.cpSize, " and ", p.cpRank);
  int64_t s = p.qkv.getDimSize(p.sequenceDim),
          b = p.qkv.getDimSize(1 - p.sequenceDim);
  if (p.startPositions) {
    if (p.cpSize > 1)
      return diag("start_positions are for inference and exclude cp_size > 1 "
                  "(as TE asserts)");
    int64_t entries =
        cast<RankedTensorType>(p.startPositions.getType()).getDimSize(0);
    if (dimsConflict(entries, b))
      return diag("'start_positions' must have one entry per sequence (", b,
                  "), got ", p.startPositions.getType());
  }
  if (p.cpSize > 1 && !ShapedType::isDynamic(s) && s % 2 != 0)
    return diag("with cp_size ", p.cpSize,
                " each rank holds two chunks of every sequence, so the "
                "sequence dimension must be even, got ",
                s);
  for (auto [name, freqs] : {std::pair(StringRef("q_freqs"), p.qFreqs),
                             std::pair(StringRef("k_freqs"), p.kFreqs)}) {
    int64_t s2 = freqs.getDimSize(0);
    if (!p.startPositions && !ShapedType::isDynamic(s) &&
        !ShapedType::isDynamic(s2) && s * p.cpSize > s2)
      return diag("'", name, "' has ", s2, " positions, fewer than the ",
                  s * p.cpSize, " the sequence needs (s",
                  p.cpSize > 1 ? " * cp_size" : "", ")");
  }
  // TE's q_out [.., h q / k, k], k_out [.., h, k] and v_out [.., h, v].
  int64_t h = p.qkv.getDimSize(2);
  int64_t qHeads = ShapedType::isDynamic(h) ? h : h * (qSize / kSize);
  ArrayRef<int64_t> lead = p.qkv.getShape().take_front(2);
  Type element = p.qkv.getElementType();
  auto part = [&](int64_t heads, int64_t size) {
    SmallVector<int64_t> shape(lead);
    shape.append({heads, size});
    return RankedTensorType::get(shape, element);
  };
  for (auto [name, actual, expected] :
       {std::tuple(p.qName, p.q, part(qHeads, kSize)),
        std::tuple(p.kName, p.k, part(h, kSize)),
        std::tuple(p.vName, p.v, part(h, d))})
    if (failed(verifyCompatibleShape(actual, expected)) ||
        actual.getElementType() != element)
      return diag("'", name, "' must be ", expected, " (TE's layout of the ",
                  name == p.qName   ? "queries"
                  : name == p.kName ? "keys"
                                    : "values",
                  "), got ", actual);
  return success();
}

LogicalResult QkvRopeOp::verify() {
  return verifyQkvRope(*this, {getFormat(), getSequenceDim(), getSplit(),
                               getQkv().getType(), getQ().getType(),
                               getK().getType(), getV().getType(),
                               getQFreqs().getType(), getKFreqs().getType(),
                               getStartPositions(), getCpSizeAttr().getInt(),
                               getCpRankAttr().getInt(), "q", "k", "v", "qkv"});
}

int64_t QkvRopeOp::getPositionRows() {
  int64_t q = getQFreqs().getType().getDimSize(0);
  int64_t k = getKFreqs().getType().getDimSize(0);
  return ShapedType::isDynamic(q) || ShapedType::isDynamic(k)
             ? ShapedType::kDynamic
             : std::min(q, k);
}

LogicalResult QkvRopeBackwardOp::verify() {
  return verifyQkvRope(
      *this, {getFormat(), getSequenceDim(), getSplit(), getResult().getType(),
              getDq().getType(), getDk().getType(), getDv().getType(),
              getQFreqs().getType(), getKFreqs().getType(), Value(),
              getCpSizeAttr().getInt(), getCpRankAttr().getInt(), "dq", "dk",
              "dv", "result"});
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  Diag diag(getOperation());
  RankedTensorType logits = getLogits().getType();
  auto target = cast<RankedTensorType>(getTarget().getType());
  if (logits.getRank() < 2 || logits.getShape().back() == 0)
    return diag("'logits' must have rank >= 2 and at least one class "
                "([rows..., V], V >= 1), got ",
                logits);
  ArrayRef<int64_t> rows = logits.getShape().drop_back();
  if (failed(verifyCompatibleShape(target.getShape(), rows)))
    return diag("'target' must have shape [",
                llvm::join(llvm::map_range(rows, fmtDim), ", "),
                "] (one class per row of 'logits'), got ", target);
  float smoothing = getLabelSmoothing().convertToFloat();
  if (!(smoothing >= 0.0f && smoothing < 1.0f))
    return diag("'label_smoothing' must be in [0, 1), got ", smoothing);
  auto f32 = Float32Type::get(getContext());
  RankedTensorType lossType =
      getReduceLoss() ? RankedTensorType::get({}, f32)
                      : RankedTensorType::get(target.getShape(), f32);
  if (failed(checkResultType(diag, getLoss(), "loss", lossType)))
    return failure();
  // The gradient in f32 (TE's) or rounded to the logits' type.
  RankedTensorType grad = getGrad().getType();
  if (grad.getShape() != logits.getShape() ||
      (!grad.getElementType().isF32() &&
       grad.getElementType() != logits.getElementType()))
    return diag("result 'grad' must be ", logits.clone(f32), " or ", logits,
                " (f32, or the logits' type), got ", grad);
  return success();
}

LogicalResult CrossEntropyBackwardOp::verify() {
  Diag diag(getOperation());
  RankedTensorType grad = getGrad().getType();
  auto dloss = cast<RankedTensorType>(getDloss().getType());
  if (grad.getRank() < 2 || grad.getShape().back() == 0)
    return diag("'grad' must have rank >= 2 and at least one class "
                "([rows..., V], V >= 1), got ",
                grad);
  if (dloss.getRank() != 0 &&
      failed(
          verifyCompatibleShape(dloss.getShape(), grad.getShape().drop_back())))
    return diag("'dloss' must be an f32 scalar (reduce_loss) or one per row "
                "of 'grad', got ",
                dloss);
  // grad's type, or any high-precision type for an f32 grad.
  RankedTensorType result = getResult().getType();
  if (result.getShape() != grad.getShape() ||
      (result.getElementType() != grad.getElementType() &&
       !grad.getElementType().isF32()))
    return diag("result must be ", grad,
                grad.getElementType().isF32()
                    ? " in f32, f16 or bf16 (the logits' type)"
                    : " (grad's type)",
                ", got ", result);
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel checks
//===----------------------------------------------------------------------===//

LogicalResult CheckOp::verify() {
  constexpr unsigned kMaxValues = 3;
  if (getValues().size() > kMaxValues)
    return emitOpError("takes at most ")
           << kMaxValues << " values, got " << getValues().size();
  StringRef message = getMessage();
  if (message.empty())
    return emitOpError("needs a message saying what failed");
  for (char c : message)
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f)
      return emitOpError("message must be printable ASCII on one line");
  // Every placeholder names a value the check has, or its location.
  for (size_t at = message.find('{'); at != StringRef::npos;
       at = message.find('{', at + 1)) {
    size_t close = message.find('}', at);
    unsigned index;
    if (close != StringRef::npos && message.slice(at + 1, close) == "loc")
      continue;
    if (close == StringRef::npos ||
        message.slice(at + 1, close).getAsInteger(10, index))
      return emitOpError("message has a malformed placeholder at column ")
             << at + 1 << "; write {0}, {1}, {2} or {loc}";
    if (index >= getValues().size())
      return emitOpError("message refers to {")
             << index << "}, but the check has " << getValues().size()
             << " values";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult ProcessGroupOp::verify() {
  int64_t size = getSize();
  // The runtime's limit (te/ABI/Limits.h): a larger group would
  // compile and then fail to load.
  if (size > TE_MAX_WORLD_SIZE)
    return emitOpError("size ") << size << " exceeds the " << TE_MAX_WORLD_SIZE
                                << " ranks (2^20) a process group may have";
  std::optional<ArrayRef<int64_t>> ranks = getRanks();
  if (!ranks)
    return success();
  if (static_cast<int64_t>(ranks->size()) > TE_MAX_WORLD_SIZE)
    return emitOpError("'ranks' lists ")
           << ranks->size() << " ranks, more than the " << TE_MAX_WORLD_SIZE
           << " (2^20) a world may have";
  if (ranks->empty() || static_cast<int64_t>(ranks->size()) % size != 0)
    return emitOpError("'ranks' must list whole groups of ")
           << size << " ranks, got " << ranks->size();
  llvm::SmallVector<bool> seen(ranks->size(), false);
  for (int64_t rank : *ranks) {
    if (rank < 0 || rank >= static_cast<int64_t>(ranks->size()))
      return emitOpError("rank ")
             << rank << " in 'ranks' is outside the world of " << ranks->size()
             << " ranks the list describes";
    if (seen[rank])
      return emitOpError("rank ") << rank << " is listed twice in 'ranks'";
    seen[rank] = true;
  }
  return success();
}

static FailureOr<ProcessGroupOp>
lookupProcessGroup(Operation *op, FlatSymbolRefAttr group,
                   SymbolTableCollection &symbolTable) {
  auto pg = symbolTable.lookupNearestSymbolFrom<ProcessGroupOp>(op, group);
  if (!pg)
    return op->emitOpError("group ")
           << group << " does not name a te.process_group";
  return pg;
}

/// The group size for folds; 0 when the symbol does not resolve.
static int64_t getGroupSizeOrZero(Operation *op, FlatSymbolRefAttr group) {
  auto pg = SymbolTable::lookupNearestSymbolFrom<ProcessGroupOp>(op, group);
  return pg ? pg.getSize() : 0;
}

static LogicalResult verifyDimInRange(Operation *op, StringRef name,
                                      int64_t dim, int64_t rank) {
  if (dim >= rank)
    return op->emitOpError("'")
           << name << "' is " << dim << " but the input has rank " << rank;
  return success();
}

static LogicalResult verifyReduceKind(Operation *op, ReduceKind kind,
                                      Type elementType) {
  if (kind == ReduceKind::avg && !isa<FloatType>(elementType))
    return op->emitOpError(
               "reduce avg needs a floating-point element type, got ")
           << elementType;
  return success();
}

/// Checks the result against the input with `dim`'s size changed to
/// `expectedDim`; the other dimensions and the element type are unchanged.
static LogicalResult
verifyResizedResult(Operation *op, ShapedType input, ShapedType result,
                    ArrayRef<std::pair<int64_t, int64_t>> dimsAndSizes) {
  SmallVector<int64_t> expected(input.getShape());
  for (auto [dim, size] : dimsAndSizes)
    expected[dim] = size;
  auto expectedType = RankedTensorType::get(expected, input.getElementType());
  if (result != expectedType)
    return op->emitOpError("result must be ")
           << expectedType << ", got " << result;
  return success();
}

/// Multiplies or divides a dimension by the group size, keeping `?`; fails
/// (with a diagnostic) when the product does not fit a dimension size.
static FailureOr<int64_t> scaleDim(Operation *op, int64_t size,
                                   int64_t groupSize, bool multiply) {
  if (ShapedType::isDynamic(size))
    return size;
  if (!multiply)
    return size / groupSize;
  int64_t product;
  if (llvm::MulOverflow(size, groupSize, product) ||
      ShapedType::isDynamic(product))
    return op->emitOpError("dimension size ")
           << size << " times the group size " << groupSize
           << " does not fit a tensor dimension";
  return product;
}

static LogicalResult verifyDivisible(Operation *op, StringRef name, int64_t dim,
                                     int64_t size, int64_t groupSize) {
  if (!ShapedType::isDynamic(size) && size % groupSize != 0)
    return op->emitOpError("input dimension ")
           << dim << " ('" << name << "', size " << size
           << ") must be divisible by the group size " << groupSize;
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyReduceKind(*this, getKind(),
                          getInput().getType().getElementType());
}

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return lookupProcessGroup(*this, getGroupAttr(), symbolTable);
}

OpFoldResult AllReduceOp::fold(FoldAdaptor) {
  return getGroupSizeOrZero(*this, getGroupAttr()) == 1 ? getInput() : Value();
}

LogicalResult AllGatherOp::verify() {
  return verifyDimInRange(*this, "dim", getDim(),
                          getInput().getType().getRank());
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ProcessGroupOp> pg =
      lookupProcessGroup(*this, getGroupAttr(), symbolTable);
  if (failed(pg))
    return failure();
  int64_t dim = getDim();
  FailureOr<int64_t> gathered =
      scaleDim(*this, getInput().getType().getDimSize(dim), pg->getSize(),
               /*multiply=*/true);
  if (failed(gathered))
    return failure();
  return verifyResizedResult(*this, getInput().getType(), getResult().getType(),
                             {{dim, *gathered}});
}

OpFoldResult AllGatherOp::fold(FoldAdaptor) {
  bool identity = getGroupSizeOrZero(*this, getGroupAttr()) == 1 &&
                  getInput().getType() == getResult().getType();
  return identity ? getInput() : Value();
}

LogicalResult ReduceScatterOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyDimInRange(*this, "dim", getDim(), input.getRank())))
    return failure();
  return verifyReduceKind(*this, getKind(), input.getElementType());
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ProcessGroupOp> pg =
      lookupProcessGroup(*this, getGroupAttr(), symbolTable);
  if (failed(pg))
    return failure();
  int64_t dim = getDim();
  int64_t size = getInput().getType().getDimSize(dim);
  if (failed(verifyDivisible(*this, "dim", dim, size, pg->getSize())))
    return failure();
  FailureOr<int64_t> scattered =
      scaleDim(*this, size, pg->getSize(), /*multiply=*/false);
  if (failed(scattered))
    return failure();
  return verifyResizedResult(*this, getInput().getType(), getResult().getType(),
                             {{dim, *scattered}});
}

OpFoldResult ReduceScatterOp::fold(FoldAdaptor) {
  bool identity = getGroupSizeOrZero(*this, getGroupAttr()) == 1 &&
                  getInput().getType() == getResult().getType();
  return identity ? getInput() : Value();
}

LogicalResult AllToAllOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (failed(verifyDimInRange(*this, "split_dim", getSplitDim(), rank)) ||
      failed(verifyDimInRange(*this, "concat_dim", getConcatDim(), rank)))
    return failure();
  return success();
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ProcessGroupOp> pg =
      lookupProcessGroup(*this, getGroupAttr(), symbolTable);
  if (failed(pg))
    return failure();
  RankedTensorType input = getInput().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  int64_t groupSize = pg->getSize();
  if (failed(verifyDivisible(*this, "split_dim", split, input.getDimSize(split),
                             groupSize)))
    return failure();
  if (split == concat)
    return verifyResizedResult(*this, input, getResult().getType(), {});
  FailureOr<int64_t> splitSize =
      scaleDim(*this, input.getDimSize(split), groupSize, /*multiply=*/false);
  FailureOr<int64_t> concatSize =
      scaleDim(*this, input.getDimSize(concat), groupSize, /*multiply=*/true);
  if (failed(splitSize) || failed(concatSize))
    return failure();
  return verifyResizedResult(*this, input, getResult().getType(),
                             {{split, *splitSize}, {concat, *concatSize}});
}

OpFoldResult AllToAllOp::fold(FoldAdaptor) {
  bool identity = getGroupSizeOrZero(*this, getGroupAttr()) == 1 &&
                  getInput().getType() == getResult().getType();
  return identity ? getInput() : Value();
}

LogicalResult PermuteOp::verify() {
  if (getShift().has_value() == getPairs().has_value())
    return emitOpError("needs exactly one of 'shift' and 'pairs'");
  if (!getPairs())
    return success();
  ArrayRef<int64_t> pairs = *getPairs();
  if (pairs.empty() || pairs.size() % 2 != 0)
    return emitOpError("'pairs' must hold (source, target) rank pairs, got ")
           << pairs.size() << " values";
  llvm::SmallSet<int64_t, 8> sources, targets;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    int64_t src = pairs[i], dst = pairs[i + 1];
    if (src < 0 || dst < 0)
      return emitOpError("ranks in 'pairs' must be >= 0, got (")
             << src << ", " << dst << ")";
    if (!sources.insert(src).second)
      return emitOpError("rank ") << src << " is a source in two pairs";
    if (!targets.insert(dst).second)
      return emitOpError("rank ") << dst << " is a target in two pairs";
  }
  return success();
}

LogicalResult PermuteOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<ProcessGroupOp> pg =
      lookupProcessGroup(*this, getGroupAttr(), symbolTable);
  if (failed(pg))
    return failure();
  if (std::optional<ArrayRef<int64_t>> pairs = getPairs()) {
    for (int64_t rank : *pairs)
      if (rank >= static_cast<int64_t>(pg->getSize()))
        return emitOpError("rank ")
               << rank << " in 'pairs' is outside group " << getGroupAttr()
               << " of size " << pg->getSize();
  }
  return success();
}

OpFoldResult PermuteOp::fold(FoldAdaptor) {
  int64_t groupSize = getGroupSizeOrZero(*this, getGroupAttr());
  if (groupSize > 0 && getShift() && *getShift() % groupSize == 0)
    return getInput();
  return {};
}

LogicalResult
GroupRankOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return lookupProcessGroup(*this, getGroupAttr(), symbolTable);
}

LogicalResult
CrossEntropyOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!getGroupAttr())
    return success();
  FailureOr<ProcessGroupOp> pg =
      lookupProcessGroup(*this, getGroupAttr(), symbolTable);
  if (failed(pg))
    return failure();
  // The classes of the whole vocabulary must fit the target's integers.
  int64_t vocab = getLogits().getType().getShape().back(), classes = 0;
  int64_t groupSize = pg->getSize();
  if (ShapedType::isDynamic(vocab))
    return success();
  unsigned bits = getTarget().getType().getElementTypeBitWidth();
  if (llvm::MulOverflow(vocab, groupSize, classes) ||
      (bits == 32 && classes > std::numeric_limits<int32_t>::max()))
    return emitOpError("the vocabulary of ")
           << vocab << " classes per rank times the group size "
           << pg->getSize() << " does not fit the target's i" << bits;
  return success();
}

void CrossEntropyOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (!getGroupAttr())
    return;
  // Its lowering talks to the group's other ranks (te.all_gather), which
  // must all run it: never erased, merged or moved, as a collective.
  effects.emplace_back(MemoryEffects::Read::get());
  effects.emplace_back(MemoryEffects::Write::get());
}

Speculation::Speculatability CrossEntropyOp::getSpeculatability() {
  return getGroupAttr() ? Speculation::NotSpeculatable
                        : Speculation::Speculatable;
}

int64_t CrossEntropyOp::getVocabShards() {
  return getGroupAttr() ? getGroupSizeOrZero(*this, getGroupAttr()) : 1;
}

#define GET_OP_CLASSES
#include "te/Dialect/TE/IR/TEOps.cpp.inc"

#include "te/Dialect/TE/IR/TEInterfaces.cpp.inc"
