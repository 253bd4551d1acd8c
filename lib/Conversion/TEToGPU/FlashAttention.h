//===- FlashAttention.h - Pieces of the flash-attention kernels -*- C++ -*-===//
//
// What te.attention's forward and backward kernels share: the geometry of
// Q/K/V tensors in their layouts, the op's configuration and visibility
// rule, staging rows of a head through shared memory, MMA fragments loaded
// from the staged tiles, and the configurations the kernels decline.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TETOGPU_FLASHATTENTION_H
#define TE_LIB_CONVERSION_TETOGPU_FLASHATTENTION_H

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/AttentionMath.h"
#include "te/Conversion/TEToGPU/MMALayout.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace mlir::te::gpu_lowering::flash {

/// (batch, sequence, heads, head dim) of a Q/K/V tensor; for thd the
/// sequence is the tokens and the batch is dynamic (unused).
using Dims = HeadTensorDims;
Dims dimsOf(Value tensor, QKVLayout layout);

/// Element offset of (batch, position, head, 0) in a flattened tensor.
IndexExpr rowOffset(QKVLayout layout, const Dims &d, IndexExpr batch,
                    IndexExpr position, IndexExpr head);

/// Signed index arithmetic of the row and key bounds.
struct Signed {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return indexConstant(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value compare(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }
};

/// The index operands of the op, as 1-D buffers inside a kernel (null where
/// the op has none): thd's cu_seqlens and seq_offsets, the padding masks'
/// seqlens.
struct SequenceOperands {
  Value cuSeqlensQ, cuSeqlensKV, seqOffsetsQ, seqOffsetsKV, seqlensQ, seqlensKV;
};

/// The op's index operands and ALiBi slopes, in SequenceOperands' order
/// then the slopes, null where absent.
std::array<Value, 7> getSequenceOperands(AttentionOpInterface op);

/// The kernel arguments of the present ones of `operands` (in order, from
/// argument `next`, which advances), flattened: the index operands into
/// `sequence`, the slopes into `slopes`.
void bindSequenceOperands(OpBuilder &b, Location loc, gpu::GPUFuncOp kernel,
                          unsigned &next, ArrayRef<Value> operands,
                          SequenceOperands &sequence, Value &slopes);

/// Where one sequence (a batch entry, or a thd sequence) lies: its query
/// positions [0, lenQ) are tokens qStart + position of Q's sequence axis,
/// its keys [0, lenKV) tokens kvStart + key of K's. Clamped into the
/// tensors whatever the index operands hold, so that no access leaves
/// them. Valid operands (those te-insert-checks lets through) need no
/// clamping; for invalid query offsets the CPU, which clamps only the key
/// side, computes other (equally meaningless) rows.
struct SequenceGeometry {
  Value qStart, lenQ, kvStart, lenKV;
};

/// What the kernels need of the op (te.attention or its backward).
struct FlashConfig {
  QKVLayout layout;
  Dims q, k, v;
  /// thd, or a padding mask: keys and rows are bounded by the lengths.
  bool thd, padding;
  /// Sequences of the grid: the batch, or thd's cu_seqlens entries - 1.
  int64_t sequences;
  bool causal, bottomRight;
  int64_t windowLeft, windowRight;
  SoftmaxKind softmax;
  BiasKind bias;
  /// ALiBi slopes per (sequence, head) rather than per head.
  bool slopesPerSequence;
  double scale;
  Type element;
  /// The shapes of the arbitrary mask and of the bias tensor (each
  /// broadcastable to [b, h_q, s_q, s_kv]), empty without them.
  SmallVector<int64_t, 4> maskShape, biasShape;
  /// Dropout's probability; 0 without dropout (or without rng_state).
  double dropout;

  static FlashConfig get(AttentionOp op);
  static FlashConfig get(AttentionBackwardOp op);

  /// Sequence `sequence`'s geometry from the index operands (whole
  /// sequences without them).
  SequenceGeometry sequenceGeometry(OpBuilder &b, Location loc,
                                    const SequenceOperands &operands,
                                    Value sequence) const;
  /// Every sequence whole: what an op without index operands has.
  SequenceGeometry wholeSequences(OpBuilder &b, Location loc) const;

  /// The keys [lo, hi) that query position `row` of a sequence sees, and
  /// its diagonal (te/Conversion/TECommon's rule, as the CPU lowering
  /// applies it).
  VisibleKeys visibleKeys(OpBuilder &b, Location loc, Value row,
                          const SequenceGeometry &g) const;
  /// ALiBi's slope of (sequence, head) times log2(e), or null without
  /// ALiBi; `slopes` is the flattened slopes operand.
  Value loadSlopeLog2(OpBuilder &b, Location loc, Value slopes,
                      IndexExpr sequence, IndexExpr head) const;
  /// The flat index of element (batch, head, row, key) of a tensor of
  /// `shape` broadcastable to [b, h_q, s_q, s_kv] (dimensions of size 1
  /// read index 0); row and key are clamped into the tensor.
  Value broadcastIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       Value batch, Value head, Value row, Value key) const;
  /// O's (and dO's) dimensions: Q's with V's head dimension.
  Dims outputDims() const {
    Dims o = q;
    o.headDim = v.headDim;
    return o;
  }
};

constexpr double kLog2e = 1.4426950408889634;

Value f32(OpBuilder &b, Location loc, double value);

/// ALiBi on a base-2 logit: logit - slopeLog2 |key - diagonal| (key and
/// diagonal index values of the sequence).
Value subtractAlibi(OpBuilder &b, Location loc, Value logit, Value slopeLog2,
                    Value key, Value diagonal);

/// `combine` over the four lanes that hold one accumulator row (every lane
/// gets the result).
Value overRowLanes(OpBuilder &b, Location loc, Value value, unsigned warpSize,
                   function_ref<Value(Value, Value)> combine);

/// The per-element operands of an attention kernel (null where absent): the
/// arbitrary mask (i1), the bias tensor and rng_state (i64 seed, offset).
struct ElementOperands {
  Value mask, bias, rngState;
};

/// Binds the kernel arguments of the op's mask, bias tensor and rng_state
/// (those present, in that order, from argument `next`, which advances).
ElementOperands bindElementOperands(OpBuilder &b, Location loc,
                                    gpu::GPUFuncOp kernel, unsigned &next,
                                    ArrayRef<Value> operands);
/// The op's mask, bias tensor and rng_state, null where absent.
std::array<Value, 3> getElementOperands(AttentionOpInterface op);

/// A base-2 logit made with a bias tensor, clamped to the finite f32
/// range: additive masks of the most negative finite value (finfo.min)
/// times log2(e) (or over a small scale) overflow to -inf, which would
/// empty a row the CPU, computing scale q . k + bias in natural units,
/// averages uniformly; clamped, such a row is uniform here too (its LSE
/// then differs from the CPU's, which the backward reproduces from this
/// same clamp).
Value clampToFinite(OpBuilder &b, Location loc, Value logit);

/// `visible` and not excluded by the arbitrary mask (`visible` itself
/// without one), for element (batch, head, row, key) of a non-thd op.
Value applyMask(OpBuilder &b, Location loc, const FlashConfig &c,
                const ElementOperands &operands, Value visible, Value batch,
                Value head, Value row, Value key);

/// The bias tensor's element (batch, head, row, key) as an f32 in the units
/// of q . k: the bias for pre_scale, bias / scale for post_scale, so that
/// the logit is (q . k + it) * scale for both.
Value loadBias(OpBuilder &b, Location loc, const FlashConfig &c,
               const ElementOperands &operands, Value batch, Value head,
               Value row, Value key);

/// The modifiers of a score S[row][key] = q . k, as both kernels apply
/// them: the visibility rule and the arbitrary mask decide whether the key
/// counts; the bias tensor, the scale and ALiBi make the base-2 logit. A
/// new score modifier goes here, once for the forward and the backward.
struct ScoreModifiers {
  const FlashConfig &c;
  const ElementOperands &operands;
  /// The scale times log2(e); ALiBi's slope of the (sequence, head) times
  /// log2(e), null without ALiBi.
  Value scaleLog2, slopeLog2;

  /// Whether `key` counts for query position `row`: in [lo, hi) (the
  /// visibility rule), `extra` where given (the backward's row bound), and
  /// not excluded by the arbitrary mask.
  Value visible(OpBuilder &b, Location loc, Value key, Value lo, Value hi,
                Value batch, Value head, Value row, Value extra = {}) const;
  /// `dot` plus the bias tensor's element (row, key) in q . k's units
  /// (loadBias); `dot` itself without a bias tensor.
  Value addBias(OpBuilder &b, Location loc, Value dot, Value batch, Value head,
                Value row, Value key) const;
  /// The base-2 logit of `dot` (q . k with its bias): scaled, clamped to the
  /// finite range with a bias tensor (clampToFinite), ALiBi's distance of
  /// `key` to `diagonal` subtracted.
  Value logit(OpBuilder &b, Location loc, Value dot, Value key,
              Value diagonal) const;
};

/// Dropout (TECommon's hash) for query position `row` of sequence
/// `sequence` (the batch entry, or thd's, whose rows and keys become tokens
/// from qStart and kvStart): the row's state (rng_state read where it is
/// called: a kernel computes it per tile, as held across the key loop it
/// would take registers from the accumulators), then whether key position
/// `key` is kept. A kept element weighs 1 / (1 - p), which the kernels
/// apply to the sums they weigh with it.
Value dropoutRowState(OpBuilder &b, Location loc, const FlashConfig &c,
                      const ElementOperands &operands,
                      const SequenceGeometry &g, Value sequence, Value head,
                      Value row);
Value dropoutKeep(OpBuilder &b, Location loc, const FlashConfig &c,
                  const SequenceGeometry &g, Value rowState, Value key);

/// Copies positions [first, first + rows) of head `head` of a tensor of
/// dimensions `d` (tokens for thd) into the shared tile
/// [rows][d.headDim + pad], 8 elements per access by `threads` threads,
/// zeros at and past position `limit`, through the target's asynchronous
/// copies: the caller commits, waits and synchronises the block before
/// reading the tile (GPUTargetInfo::emitAsyncCopy).
void stageRows(OpBuilder &b, Location loc, const GPUTargetInfo &target,
               const FlashConfig &c, const Dims &d, Value flat, Value tile,
               Value thread, Value batch, Value head, Value first, Value limit,
               int64_t rows, int64_t threads, int64_t pad);

} // namespace mlir::te::gpu_lowering::flash

#endif // TE_LIB_CONVERSION_TETOGPU_FLASHATTENTION_H
