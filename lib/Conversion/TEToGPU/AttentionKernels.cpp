//===- AttentionKernels.cpp - te.attention as a flash-attention kernel ----===//
//
// The forward pass as one kernel on the target's 16x8x16 matrix units
// (MMALayout.h's FlashTiling): a block of four warps takes 64 query rows of
// one (batch, head), each warp 16 rows whose Q fragments stay in registers.
// The block walks the key tiles its rows can see (the causal diagonal and
// the window bound the range, so masked tiles cost nothing), staging each
// tile's K and V through shared memory with the target's asynchronous
// 16-byte copies, K one tile ahead of V (FlashAttention-2's schedule). Per tile
// each warp computes S = Q K^T on the matrix units, scales and masks it on
// the accumulator fragments, updates its rows' running maximum and sum
// (the online softmax, in base 2; a row's four lanes combine their maxima
// with two shuffles), and multiplies the probabilities, rounded to the
// input type, by V: the accumulator fragments of S are already the A
// fragments of that product (accumulatorForA), so P never leaves the
// registers. The epilogue divides by the row sums, writes O, and the LSE.
//
// The visibility rule is the CPU lowering's (te/Conversion/TECommon's
// AttentionMath): query position i of a sequence sees keys
// [max(0, d - left), min(len_kv, d + 1 (causal), d + right + 1)) with d =
// i + (len_kv - len_q if the diagonal is bottom-right); the lengths are
// the tensors' extents, or per sequence with the padding masks and thd,
// whose geometry (FlashConfig::sequenceGeometry) each block reads from
// the index operands. ALiBi subtracts slope |key - d| from the logits;
// the extra softmax term of off_by_one (0) and learnable (alpha_h) starts
// the running maximum and sum. An arbitrary mask removes keys on top of
// the rule, a bias tensor starts the scores' sums, and dropout (te's
// documented hash, TECommon's) zeroes probabilities before P V. What the
// kernel does not cover is declined with its reason.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "te/Conversion/TECommon/AttentionMath.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TEToGPU/MMALayout.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;
using namespace mlir::te::gpu_lowering::flash;

//===----------------------------------------------------------------------===//
// What the forward and backward kernels share
//===----------------------------------------------------------------------===//

Dims flash::dimsOf(Value tensor, QKVLayout layout) {
  return getHeadTensorDims(layout,
                           cast<RankedTensorType>(tensor.getType()).getShape());
}

IndexExpr flash::rowOffset(QKVLayout layout, const Dims &d, IndexExpr batch,
                           IndexExpr position, IndexExpr head) {
  // Row-major over the layout's dimensions, the row's first element (the
  // head dim's index 0); for thd the position is a token and there is no
  // batch.
  SmallVector<std::optional<IndexExpr>, 4> index =
      arrangeInLayout<std::optional<IndexExpr>>(layout, batch, position, head,
                                                std::nullopt);
  SmallVector<int64_t, 4> size =
      arrangeInLayout(layout, d.batch, d.seq, d.heads, d.headDim);
  IndexExpr offset = *index[0];
  for (size_t i = 1; i + 1 < index.size(); ++i)
    offset = offset * size[i] + *index[i];
  return offset * size.back();
}

static FlashConfig configOf(AttentionOpInterface op) {
  FlashConfig c;
  c.layout = op.getLayout();
  c.q = dimsOf(op.getQ(), c.layout);
  c.k = dimsOf(op.getK(), c.layout);
  c.v = dimsOf(op.getV(), c.layout);
  c.thd = c.layout == QKVLayout::thd;
  c.padding = c.thd || isPaddingMask(op.getMaskKind());
  c.sequences =
      c.thd
          ? cast<RankedTensorType>(op.getCuSeqlensQ().getType()).getDimSize(0) -
                1
          : c.q.batch;
  c.causal = isCausalMask(op.getMaskKind());
  c.bottomRight = op.isBottomRightDiagonal();
  std::tie(c.windowLeft, c.windowRight) = op.getWindowBounds();
  c.softmax = op.getSoftmaxKind();
  c.bias = op.getBiasKind();
  c.slopesPerSequence =
      op.getAlibiSlopes() &&
      cast<RankedTensorType>(op.getAlibiSlopes().getType()).getRank() == 2;
  c.scale = *op.getEffectiveScale();
  c.element = cast<RankedTensorType>(op.getQ().getType()).getElementType();
  if (Value mask = op.getMask())
    c.maskShape.assign(cast<RankedTensorType>(mask.getType()).getShape());
  if (Value bias = op.getBias())
    c.biasShape.assign(cast<RankedTensorType>(bias.getType()).getShape());
  // As the CPU: without rng_state there is nothing to drop.
  c.dropout = op.getRngState() ? op.getDropout().convertToDouble() : 0.0;
  return c;
}

std::array<Value, 7> flash::getSequenceOperands(AttentionOpInterface op) {
  return {op.getCuSeqlensQ(),   op.getCuSeqlensKv(), op.getSeqOffsetsQ(),
          op.getSeqOffsetsKv(), op.getSeqlensQ(),    op.getSeqlensKv(),
          op.getAlibiSlopes()};
}

void flash::bindSequenceOperands(OpBuilder &b, Location loc,
                                 gpu::GPUFuncOp kernel, unsigned &next,
                                 ArrayRef<Value> operands,
                                 SequenceOperands &sequence, Value &slopes) {
  Value *slots[] = {&sequence.cuSeqlensQ,
                    &sequence.cuSeqlensKV,
                    &sequence.seqOffsetsQ,
                    &sequence.seqOffsetsKV,
                    &sequence.seqlensQ,
                    &sequence.seqlensKV,
                    &slopes};
  for (auto [slot, operand] : llvm::zip_equal(slots, operands))
    if (operand)
      *slot = flatten(b, loc, kernel.getArgument(next++));
}

std::array<Value, 3> flash::getElementOperands(AttentionOpInterface op) {
  return {op.getMask(), op.getBias(), op.getRngState()};
}

ElementOperands flash::bindElementOperands(OpBuilder &b, Location loc,
                                           gpu::GPUFuncOp kernel,
                                           unsigned &next,
                                           ArrayRef<Value> operands) {
  ElementOperands bound;
  if (operands[0])
    bound.mask = flatten(b, loc, kernel.getArgument(next++));
  if (operands[1])
    bound.bias = flatten(b, loc, kernel.getArgument(next++));
  if (operands[2])
    bound.rngState = kernel.getArgument(next++);
  return bound;
}

FlashConfig FlashConfig::get(AttentionOp op) { return configOf(op); }
FlashConfig FlashConfig::get(AttentionBackwardOp op) { return configOf(op); }

SequenceGeometry FlashConfig::wholeSequences(OpBuilder &b, Location loc) const {
  Value zero = indexConstant(b, loc, 0);
  return {zero, indexConstant(b, loc, q.seq), zero,
          indexConstant(b, loc, k.seq)};
}

SequenceGeometry FlashConfig::sequenceGeometry(OpBuilder &b, Location loc,
                                               const SequenceOperands &operands,
                                               Value sequence) const {
  SequenceGeometry g = wholeSequences(b, loc);
  Signed s{b, loc};
  auto load = [&](Value buffer, Value at) -> Value {
    return arith::IndexCastOp::create(
        b, loc, b.getIndexType(), memref::LoadOp::create(b, loc, buffer, at));
  };
  auto clamp = [&](Value x, Value hi) {
    return s.min(arith::MaxSIOp::create(b, loc, x, s.c(0)), hi);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return arith::SubIOp::create(b, loc, x, y);
  };
  if (thd) {
    Value next = s.add(sequence, s.c(1));
    auto side = [&](Value cu, Value offsets, int64_t tokens, Value &start,
                    Value &length) {
      start = clamp(offsets ? load(offsets, sequence) : load(cu, sequence),
                    s.c(tokens));
      length = clamp(sub(load(cu, next), load(cu, sequence)),
                     sub(s.c(tokens), start));
    };
    side(operands.cuSeqlensQ, operands.seqOffsetsQ, q.seq, g.qStart, g.lenQ);
    side(operands.cuSeqlensKV, operands.seqOffsetsKV, k.seq, g.kvStart,
         g.lenKV);
  } else if (padding) {
    g.lenQ = clamp(load(operands.seqlensQ, sequence), s.c(q.seq));
    g.lenKV = clamp(load(operands.seqlensKV, sequence), s.c(k.seq));
  }
  return g;
}

VisibleKeys FlashConfig::visibleKeys(OpBuilder &b, Location loc, Value row,
                                     const SequenceGeometry &g) const {
  return emitVisibleKeys(
      b, loc, {padding, causal, bottomRight, windowLeft, windowRight}, row,
      g.lenQ, g.lenKV, indexConstant(b, loc, k.seq));
}

Value FlashConfig::broadcastIndex(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> shape, Value batch,
                                  Value head, Value row, Value key) const {
  Signed s{b, loc};
  row = s.min(row, s.c(q.seq - 1));
  key = s.min(key, s.c(k.seq - 1));
  IndexExpr at{&b, loc, s.c(0)};
  for (auto [extent, index] :
       llvm::zip_equal(shape, std::array<Value, 4>{batch, head, row, key}))
    at = extent == 1 ? at : at * extent + IndexExpr{&b, loc, index};
  return at.value;
}

Value flash::applyMask(OpBuilder &b, Location loc, const FlashConfig &c,
                       const ElementOperands &operands, Value visible,
                       Value batch, Value head, Value row, Value key) {
  if (!operands.mask)
    return visible;
  Value excluded = memref::LoadOp::create(
      b, loc, operands.mask,
      c.broadcastIndex(b, loc, c.maskShape, batch, head, row, key));
  return arith::AndIOp::create(
      b, loc, visible,
      arith::XOrIOp::create(
          b, loc, excluded,
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
}

Value flash::clampToFinite(OpBuilder &b, Location loc, Value logit) {
  constexpr double kMax = std::numeric_limits<float>::max();
  return arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, logit, f32(b, loc, -kMax)),
      f32(b, loc, kMax));
}

Value flash::loadBias(OpBuilder &b, Location loc, const FlashConfig &c,
                      const ElementOperands &operands, Value batch, Value head,
                      Value row, Value key) {
  Value bias = emitExtToF32(
      b, loc,
      memref::LoadOp::create(
          b, loc, operands.bias,
          c.broadcastIndex(b, loc, c.biasShape, batch, head, row, key)));
  if (c.bias == BiasKind::post_scale)
    bias = arith::MulFOp::create(b, loc, bias, f32(b, loc, 1.0 / c.scale));
  return bias;
}

Value ScoreModifiers::visible(OpBuilder &b, Location loc, Value key, Value lo,
                              Value hi, Value batch, Value head, Value row,
                              Value extra) const {
  Signed s{b, loc};
  Value atLeast = s.compare(arith::CmpIPredicate::sge, key, lo);
  Value below = s.compare(arith::CmpIPredicate::slt, key, hi);
  Value inRange = arith::AndIOp::create(b, loc, atLeast, below);
  if (extra)
    inRange = arith::AndIOp::create(b, loc, extra, inRange);
  return applyMask(b, loc, c, operands, inRange, batch, head, row, key);
}

Value ScoreModifiers::addBias(OpBuilder &b, Location loc, Value dot,
                              Value batch, Value head, Value row,
                              Value key) const {
  if (!operands.bias)
    return dot;
  Value bias = loadBias(b, loc, c, operands, batch, head, row, key);
  return arith::AddFOp::create(b, loc, dot, bias);
}

Value ScoreModifiers::logit(OpBuilder &b, Location loc, Value dot, Value key,
                            Value diagonal) const {
  Value logit = arith::MulFOp::create(b, loc, dot, scaleLog2);
  if (operands.bias)
    logit = clampToFinite(b, loc, logit);
  if (slopeLog2)
    logit = subtractAlibi(b, loc, logit, slopeLog2, key, diagonal);
  return logit;
}

Value flash::dropoutRowState(OpBuilder &b, Location loc, const FlashConfig &c,
                             const ElementOperands &operands,
                             const SequenceGeometry &g, Value sequence,
                             Value head, Value row) {
  Signed s{b, loc};
  Value batch = c.thd ? s.c(0) : sequence;
  if (c.thd)
    row = s.add(g.qStart, row);
  Value seed =
      memref::LoadOp::create(b, loc, operands.rngState, ValueRange{s.c(0)});
  Value offset =
      memref::LoadOp::create(b, loc, operands.rngState, ValueRange{s.c(1)});
  return emitDropoutRowState(b, loc, seed, offset, batch, head, row, c.q.heads,
                             c.q.seq, c.k.seq);
}

Value flash::dropoutKeep(OpBuilder &b, Location loc, const FlashConfig &c,
                         const SequenceGeometry &g, Value rowState, Value key) {
  if (c.thd)
    key = arith::AddIOp::create(b, loc, g.kvStart, key);
  return emitDropoutKeep(b, loc, rowState, key, c.dropout);
}

Value FlashConfig::loadSlopeLog2(OpBuilder &b, Location loc, Value slopes,
                                 IndexExpr sequence, IndexExpr head) const {
  if (bias != BiasKind::alibi)
    return Value();
  IndexExpr at = slopesPerSequence ? sequence * q.heads + head : head;
  return arith::MulFOp::create(b, loc,
                               memref::LoadOp::create(b, loc, slopes, at.value),
                               emitF32Constant(b, loc, kLog2e));
}

Value flash::subtractAlibi(OpBuilder &b, Location loc, Value logit,
                           Value slopeLog2, Value key, Value diagonal) {
  Value distance = arith::SubIOp::create(b, loc, key, diagonal);
  Value magnitude = arith::MaxSIOp::create(
      b, loc, distance,
      arith::SubIOp::create(b, loc, indexConstant(b, loc, 0), distance));
  Value distanceF = arith::SIToFPOp::create(
      b, loc, b.getF32Type(),
      arith::IndexCastOp::create(b, loc, b.getI64Type(), magnitude));
  return arith::SubFOp::create(
      b, loc, logit, arith::MulFOp::create(b, loc, slopeLog2, distanceF));
}

Value flash::f32(OpBuilder &b, Location loc, double value) {
  return emitF32Constant(b, loc, value);
}

Value flash::overRowLanes(OpBuilder &b, Location loc, Value value,
                          unsigned warpSize,
                          function_ref<Value(Value, Value)> combine) {
  // Offsets 1 then 2 (reduceOverLanes goes 2 then 1): the order the row
  // sums were checked on a GPU with.
  for (int offset : {1, 2})
    value =
        combine(value, gpu::ShuffleOp::create(b, loc, value, offset, warpSize,
                                              gpu::ShuffleMode::XOR)
                           .getShuffleResult());
  return value;
}

void flash::stageRows(OpBuilder &b, Location loc, const GPUTargetInfo &target,
                      const FlashConfig &c, const Dims &d, Value flat,
                      Value tile, Value thread, Value batch, Value head,
                      Value first, Value limit, int64_t rows, int64_t threads,
                      int64_t pad) {
  int64_t chunks = d.headDim / 8;
  int64_t total = rows * chunks;
  int64_t copies = (total + threads - 1) / threads;
  scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, copies),
      indexConstant(b, loc, 1), ValueRange{},
      [&](OpBuilder &b, Location loc, Value j, ValueRange) {
        IndexExpr e =
            IndexExpr{&b, loc, thread} + IndexExpr{&b, loc, j} * threads;
        // The last round of copies may have fewer than `threads`.
        scf::IfOp guard;
        if (total % threads != 0) {
          guard = scf::IfOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e.value,
                                    indexConstant(b, loc, total)),
              /*withElseRegion=*/false);
          b.setInsertionPointToStart(guard.thenBlock());
        }
        IndexExpr row = e / chunks, chunk = e % chunks;
        Value position = arith::AddIOp::create(b, loc, first, row.value);
        Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                             position, limit);
        // Clamped, so that the address stays in bounds; rows outside are
        // zero filled.
        Value clamped = arith::MinSIOp::create(
            b, loc, position, indexConstant(b, loc, d.seq - 1));
        IndexExpr from =
            rowOffset(c.layout, d, IndexExpr{&b, loc, batch},
                      IndexExpr{&b, loc, clamped}, IndexExpr{&b, loc, head}) +
            chunk * 8;
        IndexExpr to = row * (d.headDim + pad) + chunk * 8;
        target.emitAsyncCopy(b, loc, tile, to.value, flat, from.value, 8,
                             inside);
        if (guard)
          b.setInsertionPointAfter(guard);
        scf::YieldOp::create(b, loc);
      });
}

std::optional<std::string>
gpu_lowering::getAttentionUnsupportedReason(AttentionOpInterface op,
                                            const GPUTargetInfo &target) {
  std::string name = op->getName().getStringRef().str();
  std::string prefix = name + " with ";
  std::string suffix = " has no GPU kernel yet (" + target.getDescription() +
                       "; the CPU lowers it)";
  if (std::optional<std::string> reason =
          getTiledUnitUnsupportedReason(name, target))
    return reason;
  const MatrixUnit &unit = getTiledUnit(target);
  QKVLayout layout = op.getLayout();
  // The verifier gives Q, K, V (O and dO) one element type.
  Type element = cast<RankedTensorType>(op.getQ().getType()).getElementType();
  if (!unit.takesOperands(element))
    return prefix + "element type f32" + suffix +
           ": the matrix units multiply bf16 and f16";
  for (Value operand : {op.getQ(), op.getV()}) {
    int64_t dim = dimsOf(operand, layout).headDim;
    if (dim % 16 != 0 || dim > mma::FlashTiling::kMaxHeadDim)
      return prefix + "head dimension " + std::to_string(dim) + suffix +
             ": the kernel takes multiples of 16 up to " +
             std::to_string(mma::FlashTiling::kMaxHeadDim);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The forward kernel
//===----------------------------------------------------------------------===//

namespace {

using Tiling = mma::FlashTiling;
/// The lane's accumulator tiles of a product, one list per 16x8 tile.
using Tiles = SmallVector<SmallVector<Value>>;

constexpr double kLn2 = 0.6931471805599453;

/// The types of te.attention's operands the kernels take, and their values
/// on the host side: Q, K, V, the learnable softmax offsets, the index
/// operands and slopes (SequenceOperands' order), the mask, bias tensor and
/// rng_state, then O and the LSE.
struct ForwardSignature {
  ForwardSignature(AttentionOp op, const FlashConfig &c);

  RankedTensorType oTensor, lseTensor;
  bool learnable, returnLse;
  std::array<Value, 7> sequenceOperands;
  std::array<Value, 3> elementOperands;
  /// The present ones of sequenceOperands and elementOperands, in order.
  SmallVector<Value> indexOperands;
  SmallVector<Type> arguments;
};

ForwardSignature::ForwardSignature(AttentionOp op, const FlashConfig &c)
    : oTensor(cast<RankedTensorType>(op.getO().getType())),
      learnable(c.softmax == SoftmaxKind::learnable),
      returnLse(op.getReturnLse()), sequenceOperands(getSequenceOperands(op)),
      elementOperands(getElementOperands(op)) {
  auto bufferOf = [](Value value) {
    return bufferType(cast<RankedTensorType>(value.getType()));
  };
  arguments = {bufferOf(op.getQ()), bufferOf(op.getK()), bufferOf(op.getV())};
  if (learnable)
    arguments.push_back(bufferOf(op.getSoftmaxOffset()));
  for (Value operand : sequenceOperands)
    if (operand) {
      indexOperands.push_back(operand);
      arguments.push_back(bufferOf(operand));
    }
  for (Value operand : elementOperands)
    if (operand) {
      indexOperands.push_back(operand);
      arguments.push_back(bufferOf(operand));
    }
  arguments.push_back(bufferType(oTensor));
  if (returnLse) {
    lseTensor = cast<RankedTensorType>(op.getLse().getType());
    arguments.push_back(bufferType(lseTensor));
  }
}

/// thd's `fill_empty_rows`: tokens of no sequence get the row of a query
/// that sees nothing (O = 0; the LSE of the extra softmax term alone, -inf
/// for vanilla), as on the CPU; the flash kernel overwrites the others.
gpu::GPUFuncOp buildFillEmptyRows(OpBuilder &b, Location loc, KernelSet &set,
                                  AttentionOp op, const FlashConfig &c,
                                  const ForwardSignature &signature) {
  SmallVector<Type> fillArguments = {bufferType(signature.oTensor)};
  if (signature.returnLse)
    fillArguments.push_back(bufferType(signature.lseTensor));
  if (signature.learnable)
    fillArguments.push_back(
        bufferType(cast<RankedTensorType>(op.getSoftmaxOffset().getType())));
  gpu::GPUFuncOp fill = set.addKernel(b, "fill_empty_rows", fillArguments);
  Value oFlat = flatten(b, loc, fill.getArgument(0));
  Value lseFlat =
      signature.returnLse ? flatten(b, loc, fill.getArgument(1)) : Value();
  Value alphas = signature.learnable
                     ? flatten(b, loc, fill.getArguments().back())
                     : Value();
  int64_t width = vectorWidth(c.element, c.v.headDim);
  gridStrideLoop(
      b, loc, c.q.seq * c.q.heads, Value(),
      [&](OpBuilder &b, Location loc, Value i, Value) {
        IndexExpr row{&b, loc, i};
        Value zero =
            arith::ConstantOp::create(b, loc, b.getFloatAttr(c.element, 0));
        for (int64_t d = 0; d < c.v.headDim; d += width)
          storeElements(b, loc, oFlat, (row * c.v.headDim + d).value,
                        SmallVector<Value>(width, zero));
        if (lseFlat) {
          Value empty = f32(b, loc, -std::numeric_limits<double>::infinity());
          if (c.softmax == SoftmaxKind::off_by_one)
            empty = f32(b, loc, 0.0);
          if (alphas)
            empty =
                memref::LoadOp::create(b, loc, alphas, (row % c.q.heads).value);
          memref::StoreOp::create(b, loc, empty, lseFlat, i);
        }
        return Value();
      });
  return fill;
}

/// te.attention's `flash_forward` kernel, built in its parts: the block's
/// place and its Q fragments, the key range its rows see, then per key
/// tile dropout's keep bits, the scores (S = Q K^T), their modifiers
/// (ScoreModifiers), the online softmax and O += P V; the epilogue.
class ForwardKernel {
public:
  ForwardKernel(OpBuilder &b, Location loc, const FlashConfig &c,
                const GPUTargetInfo &target, const ForwardSignature &signature)
      : b(b), loc(loc), c(c), target(target), unit(getTiledUnit(target)),
        signature(signature), warpSize(target.getWarpSize()),
        queryBlocks((c.q.seq + Tiling::kBlockQ - 1) / Tiling::kBlockQ),
        dTiles(c.v.headDim / mma::kN) {}

  /// Adds the kernel to `set` and builds its body.
  gpu::GPUFuncOp build(KernelSet &set);
  /// Blocks of the launch.
  int64_t getGridSize() const { return queryBlocks * c.q.heads * c.sequences; }

private:
  void bindArguments(gpu::GPUFuncOp kernel);
  void placeBlock();
  void loadQueryFragments();
  void findKeyRange();
  SmallVector<Value> initialState();
  void stage(OpBuilder &b, Location loc, const Dims &dims, Value flat,
             Value tile, Value kt);
  SmallVector<Value> emitKeyTile(OpBuilder &b, Location loc, Value kt,
                                 ValueRange carried);
  Value drawKeepBits(OpBuilder &b, Location loc, Value kt);
  Tiles computeScores(OpBuilder &b, Location loc, Value kt);
  std::array<Value, 2> modifyScores(OpBuilder &b, Location loc, Value kt,
                                    Tiles &scores);
  Tiles updateSoftmax(OpBuilder &b, Location loc, Tiles &scores,
                      std::array<Value, 2> tileMax, Value keepBits,
                      ValueRange carried, SmallVector<Value> &next);
  void prefetchNextKeys(OpBuilder &b, Location loc, Value kt);
  void accumulateValues(OpBuilder &b, Location loc, const Tiles &probabilities,
                        SmallVector<Value> &next);
  void emitEpilogue(scf::ForOp keyLoop);

  OpBuilder &b;
  Location loc;
  const FlashConfig &c;
  const GPUTargetInfo &target;
  const MatrixUnit &unit;
  const ForwardSignature &signature;
  unsigned warpSize;
  int64_t queryBlocks, dTiles;

  Value qFlat, kFlat, vFlat, offsets, oFlat, lseFlat, kTile, vTile, slopes;
  SequenceOperands sequenceOperands;
  ElementOperands elementOperands;
  /// The block's place: thread; query block, head, sequence (batch), the
  /// K/V head; the thread's lane and its warp's first row.
  Value thread, queryBlock, head, batch, kvHead, lane, warpRow;
  SequenceGeometry g;
  SmallVector<SmallVector<Value>> qFragments;
  /// The lane's two rows, the keys [lo, hi) each sees and its diagonal.
  std::array<Value, 2> rows, lo, hi, diagonal;
  /// The block's key tiles: [tileStart, blockHi).
  Value tileStart, blockHi;
  Value minusInf, scaleLog2, slopeLog2, kvLimit;
};

gpu::GPUFuncOp ForwardKernel::build(KernelSet &set) {
  MLIRContext *context = b.getContext();
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  auto tileType = [&](int64_t dim) {
    return MemRefType::get({Tiling::kBlockKV * (dim + Tiling::kPad)}, c.element,
                           MemRefLayoutAttrInterface(), workgroup);
  };
  gpu::GPUFuncOp kernel =
      set.addKernel(b, "flash_forward", signature.arguments,
                    {tileType(c.k.headDim), tileType(c.v.headDim)});
  bindArguments(kernel);
  placeBlock();
  loadQueryFragments();
  findKeyRange();
  SmallVector<Value> init = initialState();

  // The tiles arrive through asynchronous copies, K one step ahead of V:
  // K of a tile is copied while the previous tile's P V is computed, V
  // while its own S = Q K^T and softmax are (FlashAttention-2's schedule,
  // with one K and one V buffer).
  kvLimit = arith::AddIOp::create(b, loc, g.kvStart, g.lenKV);
  stage(b, loc, c.k, kFlat, kTile, tileStart);
  target.emitAsyncCommit(b, loc);
  auto keyLoop = scf::ForOp::create(
      b, loc, tileStart, blockHi, indexConstant(b, loc, Tiling::kBlockKV), init,
      [&](OpBuilder &b, Location loc, Value kt, ValueRange carried) {
        scf::YieldOp::create(b, loc, emitKeyTile(b, loc, kt, carried));
      });
  // Nothing stays in flight (the first K when the block saw no tile).
  target.emitAsyncWait(b, loc, 0);
  emitEpilogue(keyLoop);
  return kernel;
}

void ForwardKernel::bindArguments(gpu::GPUFuncOp kernel) {
  unsigned next = 0;
  qFlat = flatten(b, loc, kernel.getArgument(next++));
  kFlat = flatten(b, loc, kernel.getArgument(next++));
  vFlat = flatten(b, loc, kernel.getArgument(next++));
  if (signature.learnable)
    offsets = flatten(b, loc, kernel.getArgument(next++));
  bindSequenceOperands(b, loc, kernel, next, signature.sequenceOperands,
                       sequenceOperands, slopes);
  elementOperands =
      bindElementOperands(b, loc, kernel, next, signature.elementOperands);
  oFlat = flatten(b, loc, kernel.getArgument(next++));
  if (signature.returnLse)
    lseFlat = flatten(b, loc, kernel.getArgument(next++));
  kTile = kernel.getWorkgroupAttributions()[0];
  vTile = kernel.getWorkgroupAttributions()[1];
}

/// Block -> (query block, head, sequence: the batch entry or thd's
/// sequence); thread -> (warp, lane). For thd, every sequence gets the
/// query blocks of all tokens, and those past its length see nothing.
void ForwardKernel::placeBlock() {
  thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  IndexExpr block{&b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)};
  IndexExpr blockQuery = block % queryBlocks;
  IndexExpr blockHead = (block / queryBlocks) % c.q.heads;
  IndexExpr blockBatch = block / (queryBlocks * c.q.heads);
  kvHead = (blockHead / (c.q.heads / c.k.heads)).value;
  IndexExpr t{&b, loc, thread};
  IndexExpr warp = t / mma::kWarpSize, threadLane = t % mma::kWarpSize;
  warpRow = (blockQuery * Tiling::kBlockQ + warp * mma::kM).value;
  queryBlock = blockQuery.value;
  head = blockHead.value;
  batch = blockBatch.value;
  lane = threadLane.value;
  g = c.sequenceGeometry(b, loc, sequenceOperands, batch);
}

/// Q fragments for the whole head dimension, rows clamped into the
/// sequence (rows past it are computed and not written).
void ForwardKernel::loadQueryFragments() {
  Signed s{b, loc};
  IndexExpr l{&b, loc, lane};
  for (int64_t kk = 0; kk < c.q.headDim; kk += mma::kK) {
    SmallVector<Value> fragment;
    for (int i = 0; i < mma::kAElements; i += 2) {
      TileCoord e = unit.aElement(l, i);
      Value row =
          s.min(s.add(g.qStart, (IndexExpr{&b, loc, warpRow} + e.row).value),
                s.c(c.q.seq - 1));
      IndexExpr at =
          rowOffset(c.layout, c.q, IndexExpr{&b, loc, batch},
                    IndexExpr{&b, loc, row}, IndexExpr{&b, loc, head}) +
          e.col + kk;
      SmallVector<Value> pair = loadElements(b, loc, qFlat, at.value, 2);
      fragment.append(pair.begin(), pair.end());
    }
    qFragments.push_back(fragment);
  }
}

/// The lane's two rows and the keys each sees; the block's key range.
void ForwardKernel::findKeyRange() {
  Signed s{b, loc};
  IndexExpr l{&b, loc, lane};
  for (int r = 0; r < 2; ++r) {
    rows[r] = (IndexExpr{&b, loc, warpRow} + unit.cElement(l, 2 * r).row).value;
    VisibleKeys keys = c.visibleKeys(b, loc, rows[r], g);
    lo[r] = keys.lo;
    hi[r] = keys.hi;
    diagonal[r] = keys.diagonal;
  }
  // Rows see growing key ranges (rows past the length see none, and an
  // empty range does not widen the block's): the block's range is its first
  // row's lower bound to the upper bound of its last row that has keys.
  Value firstRow = (IndexExpr{&b, loc, queryBlock} * Tiling::kBlockQ).value;
  Value lastRow =
      s.min(s.add(firstRow, s.c(Tiling::kBlockQ - 1)), s.c(c.q.seq - 1));
  if (c.padding)
    lastRow = arith::MaxSIOp::create(
        b, loc, firstRow,
        s.min(lastRow, arith::SubIOp::create(b, loc, g.lenQ, s.c(1))));
  Value blockLo = c.visibleKeys(b, loc, firstRow, g).lo;
  blockHi = c.visibleKeys(b, loc, lastRow, g).hi;
  tileStart = arith::MulIOp::create(
      b, loc, arith::DivSIOp::create(b, loc, blockLo, s.c(Tiling::kBlockKV)),
      s.c(Tiling::kBlockKV));
  // A block whose rows are all past its sequence's length walks no tile.
  if (c.padding)
    blockHi = arith::SelectOp::create(
        b, loc, s.compare(arith::CmpIPredicate::slt, firstRow, g.lenQ), blockHi,
        tileStart);
}

/// Running maximum (base 2) and sum of each row, and the O accumulators.
/// off_by_one and learnable add a term exp(alpha) to every row's sum
/// (alpha = 0 for off_by_one): the maximum starts at it and the sum at
/// its 1, counted once per row (by the row's first lane).
SmallVector<Value> ForwardKernel::initialState() {
  minusInf = f32(b, loc, -std::numeric_limits<double>::infinity());
  Value mInit = minusInf, lInit = f32(b, loc, 0.0);
  if (c.softmax != SoftmaxKind::vanilla) {
    mInit = f32(b, loc, 0.0);
    if (signature.learnable)
      mInit = arith::MulFOp::create(
          b, loc, memref::LoadOp::create(b, loc, offsets, head),
          f32(b, loc, kLog2e));
    Value firstLane = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, (IndexExpr{&b, loc, lane} % 4).value,
        indexConstant(b, loc, 0));
    lInit = arith::SelectOp::create(b, loc, firstLane, f32(b, loc, 1.0),
                                    f32(b, loc, 0.0));
  }
  SmallVector<Value> init = {mInit, mInit, lInit, lInit};
  init.append(dTiles * mma::kCElements, f32(b, loc, 0.0));
  scaleLog2 = f32(b, loc, c.scale * kLog2e);
  slopeLog2 = c.loadSlopeLog2(b, loc, slopes, IndexExpr{&b, loc, batch},
                              IndexExpr{&b, loc, head});
  return init;
}

void ForwardKernel::stage(OpBuilder &b, Location loc, const Dims &dims,
                          Value flat, Value tile, Value kt) {
  stageRows(b, loc, target, c, dims, flat, tile, thread, batch, kvHead,
            arith::AddIOp::create(b, loc, g.kvStart, kt), kvLimit,
            Tiling::kBlockKV, Tiling::kThreads, Tiling::kPad);
}

/// One key tile: the carried state (row maxima, row sums, O accumulators)
/// updated with keys [kt, kt + kBlockKV).
SmallVector<Value> ForwardKernel::emitKeyTile(OpBuilder &b, Location loc,
                                              Value kt, ValueRange carried) {
  Value keepBits = drawKeepBits(b, loc, kt);
  stage(b, loc, c.v, vFlat, vTile, kt);
  target.emitAsyncCommit(b, loc);
  // This tile's K (the group before V's) is in.
  target.emitAsyncWait(b, loc, 1);
  gpu::BarrierOp::create(b, loc);
  Tiles scores = computeScores(b, loc, kt);
  std::array<Value, 2> tileMax = modifyScores(b, loc, kt, scores);
  SmallVector<Value> next(carried.begin(), carried.end());
  Tiles probabilities =
      updateSoftmax(b, loc, scores, tileMax, keepBits, carried, next);
  prefetchNextKeys(b, loc, kt);
  accumulateValues(b, loc, probabilities, next);
  // The next tile overwrites V.
  gpu::BarrierOp::create(b, loc);
  return next;
}

/// Dropout's keep bits of the lane's 32 elements of the tile (null without
/// dropout), drawn before the scores take the registers, in a loop over
/// the 8-key tiles: unrolled, the 32 hashes' 64-bit temporaries would be
/// live together.
Value ForwardKernel::drawKeepBits(OpBuilder &b, Location loc, Value kt) {
  static_assert(Tiling::kTilesKV * mma::kCElements <= 32,
                "a lane's keep bits of a tile fit in 32 bits");
  if (!elementOperands.rngState)
    return Value();
  Type i32 = b.getI32Type();
  std::array<Value, 2> dropoutRows;
  for (int r = 0; r < 2; ++r)
    dropoutRows[r] =
        dropoutRowState(b, loc, c, elementOperands, g, batch, head, rows[r]);
  Signed s{b, loc};
  auto bitsLoop = scf::ForOp::create(
      b, loc, s.c(0), s.c(Tiling::kTilesKV), s.c(1),
      ValueRange{arith::ConstantIntOp::create(b, loc, i32, 0)},
      [&](OpBuilder &b, Location loc, Value ni, ValueRange bits) {
        Value word = bits[0];
        IndexExpr tile{&b, loc, ni};
        for (int i = 0; i < mma::kCElements; ++i) {
          IndexExpr column =
              unit.cElement(IndexExpr{&b, loc, lane}, i).col + tile * mma::kN;
          Value key = arith::AddIOp::create(b, loc, kt, column.value);
          Value shift = arith::IndexCastOp::create(
              b, loc, i32, (tile * mma::kCElements + i).value);
          Value bit = arith::ShLIOp::create(
              b, loc,
              arith::ExtUIOp::create(
                  b, loc, i32,
                  dropoutKeep(b, loc, c, g, dropoutRows[i / 2], key)),
              shift);
          word = arith::OrIOp::create(b, loc, word, bit);
        }
        scf::YieldOp::create(b, loc, word);
      });
  return bitsLoop.getResult(0);
}

/// S = Q K^T, one 16x8 tile per 8 keys. A bias tensor starts the sums (in
/// q . k's units): no registers beyond the scores' own.
Tiles ForwardKernel::computeScores(OpBuilder &b, Location loc, Value kt) {
  IndexExpr l{&b, loc, lane};
  Tiles scores;
  for (int ni = 0; ni < Tiling::kTilesKV; ++ni) {
    SmallVector<Value> acc(mma::kCElements, f32(b, loc, 0.0));
    if (elementOperands.bias)
      for (int i = 0; i < mma::kCElements; ++i) {
        TileCoord e = unit.cElement(l, i);
        acc[i] = loadBias(
            b, loc, c, elementOperands, batch, head, rows[i / 2],
            arith::AddIOp::create(b, loc, kt, (e.col + ni * mma::kN).value));
      }
    for (int64_t kk = 0; kk < c.k.headDim; kk += mma::kK) {
      SmallVector<Value> fragment =
          unit.loadB(b, loc, kTile, c.k.headDim + Tiling::kPad, l,
                     MatrixUnit::Staging::NRows,
                     {indexExpr(b, loc, ni * mma::kN), indexExpr(b, loc, kk)});
      acc = unit.multiplyAccumulate(b, loc, qFragments[kk / mma::kK], fragment,
                                    acc);
    }
    scores.push_back(acc);
  }
  return scores;
}

/// The scores as base-2 logits, -inf where the key does not count
/// (ScoreModifiers); returns each row's maximum over the tile.
std::array<Value, 2> ForwardKernel::modifyScores(OpBuilder &b, Location loc,
                                                 Value kt, Tiles &scores) {
  Signed s{b, loc};
  IndexExpr l{&b, loc, lane};
  ScoreModifiers modifiers{c, elementOperands, scaleLog2, slopeLog2};
  std::array<Value, 2> tileMax = {minusInf, minusInf};
  for (int ni = 0; ni < Tiling::kTilesKV; ++ni) {
    for (int i = 0; i < mma::kCElements; ++i) {
      int r = i / 2;
      TileCoord e = unit.cElement(l, i);
      Value key = s.add(kt, (e.col + ni * mma::kN).value);
      Value visible =
          modifiers.visible(b, loc, key, lo[r], hi[r], batch, head, rows[r]);
      Value logit = modifiers.logit(b, loc, scores[ni][i], key, diagonal[r]);
      scores[ni][i] = arith::SelectOp::create(b, loc, visible, logit, minusInf);
      tileMax[r] = arith::MaximumFOp::create(b, loc, tileMax[r], scores[ni][i]);
    }
  }
  return tileMax;
}

/// The online softmax: the rows' new maxima and sums into `next` (the O
/// accumulators rescaled), and P = exp2(S - max), rounded to the input
/// type for the product, dropped elements zero.
Tiles ForwardKernel::updateSoftmax(OpBuilder &b, Location loc, Tiles &scores,
                                   std::array<Value, 2> tileMax, Value keepBits,
                                   ValueRange carried,
                                   SmallVector<Value> &next) {
  std::array<Value, 2> base, correction, rowSum;
  for (int r = 0; r < 2; ++r) {
    Value m = arith::MaximumFOp::create(
        b, loc, carried[r],
        overRowLanes(b, loc, tileMax[r], warpSize,
                     [&](Value x, Value y) -> Value {
                       return arith::MaximumFOp::create(b, loc, x, y);
                     }));
    next[r] = m;
    // A row that has seen no key yet keeps exponents finite.
    Value none =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, minusInf);
    base[r] = arith::SelectOp::create(b, loc, none, f32(b, loc, 0.0), m);
    correction[r] = math::Exp2Op::create(
        b, loc, arith::SubFOp::create(b, loc, carried[r], base[r]));
    rowSum[r] = f32(b, loc, 0.0);
  }
  Tiles probabilities;
  for (int ni = 0; ni < Tiling::kTilesKV; ++ni) {
    SmallVector<Value> p;
    for (int i = 0; i < mma::kCElements; ++i) {
      int r = i / 2;
      Value e = math::Exp2Op::create(
          b, loc, arith::SubFOp::create(b, loc, scores[ni][i], base[r]));
      rowSum[r] = arith::AddFOp::create(b, loc, rowSum[r], e);
      // Dropout weighs V's rows, not the denominator: a dropped element
      // adds nothing, 1 / (1 - p) is applied at the end.
      if (keepBits) {
        Type i32 = b.getI32Type();
        Value bit = arith::AndIOp::create(
            b, loc,
            arith::ShRUIOp::create(b, loc, keepBits,
                                   arith::ConstantIntOp::create(
                                       b, loc, i32, ni * mma::kCElements + i)),
            arith::ConstantIntOp::create(b, loc, i32, 1));
        Value keep =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bit,
                                  arith::ConstantIntOp::create(b, loc, i32, 0));
        e = arith::SelectOp::create(b, loc, keep, e, f32(b, loc, 0.0));
      }
      p.push_back(arith::TruncFOp::create(b, loc, c.element, e));
    }
    probabilities.push_back(p);
  }
  for (int r = 0; r < 2; ++r)
    next[2 + r] = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, carried[2 + r], correction[r]),
        rowSum[r]);
  for (int64_t nd = 0; nd < dTiles; ++nd)
    for (int i = 0; i < mma::kCElements; ++i) {
      Value &acc = next[4 + nd * mma::kCElements + i];
      acc = arith::MulFOp::create(b, loc, acc, correction[i / 2]);
    }
  return probabilities;
}

/// V is in, and every warp is done with K: the next tile's K may come.
void ForwardKernel::prefetchNextKeys(OpBuilder &b, Location loc, Value kt) {
  Signed s{b, loc};
  target.emitAsyncWait(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
  {
    Value nextTile = s.add(kt, s.c(Tiling::kBlockKV));
    auto more = scf::IfOp::create(
        b, loc, s.compare(arith::CmpIPredicate::slt, nextTile, blockHi),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(more.thenBlock());
    stage(b, loc, c.k, kFlat, kTile, nextTile);
  }
  target.emitAsyncCommit(b, loc);
}

/// O += P V, 16 keys per step: the accumulator fragments of S are the A
/// fragments of the product (accumulatorForA).
void ForwardKernel::accumulateValues(OpBuilder &b, Location loc,
                                     const Tiles &probabilities,
                                     SmallVector<Value> &next) {
  IndexExpr l{&b, loc, lane};
  for (int step = 0; step < Tiling::kBlockKV / mma::kK; ++step) {
    SmallVector<Value> a;
    for (int i = 0; i < mma::kAElements; ++i) {
      mma::AccumulatorSource from = unit.accumulatorForA(i);
      a.push_back(probabilities[2 * step + from.tile][from.element]);
    }
    for (int64_t nd = 0; nd < dTiles; ++nd) {
      SmallVector<Value> fragment = unit.loadB(
          b, loc, vTile, c.v.headDim + Tiling::kPad, l,
          MatrixUnit::Staging::KRows,
          {indexExpr(b, loc, step * mma::kK), indexExpr(b, loc, nd * mma::kN)});
      SmallVector<Value> acc(next.begin() + 4 + nd * mma::kCElements,
                             next.begin() + 4 + (nd + 1) * mma::kCElements);
      acc = unit.multiplyAccumulate(b, loc, a, fragment, acc);
      std::copy(acc.begin(), acc.end(),
                next.begin() + 4 + nd * mma::kCElements);
    }
  }
}

/// O = acc / sum (0 for a row that saw nothing), and the LSE.
void ForwardKernel::emitEpilogue(scf::ForOp keyLoop) {
  Signed s{b, loc};
  IndexExpr l{&b, loc, lane};
  // The token of a query position, clamped into Q.
  auto queryToken = [&](Value position) {
    return s.min(s.add(g.qStart, position), s.c(c.q.seq - 1));
  };
  std::array<Value, 2> inverse, inside;
  for (int r = 0; r < 2; ++r) {
    Value sum = overRowLanes(b, loc, keyLoop.getResult(2 + r), warpSize,
                             [&](Value x, Value y) -> Value {
                               return arith::AddFOp::create(b, loc, x, y);
                             });
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum,
                                        f32(b, loc, 0.0));
    inverse[r] = arith::SelectOp::create(
        b, loc, empty, f32(b, loc, 0.0),
        arith::DivFOp::create(b, loc, f32(b, loc, 1.0 / (1.0 - c.dropout)),
                              sum));
    // Every row of the tensor is written (rows past a padded length see
    // nothing: O = 0), but a thd sequence's rows only up to its length:
    // the tokens after it are another sequence's (or fill_empty_rows').
    inside[r] = s.compare(arith::CmpIPredicate::slt, rows[r],
                          c.thd ? g.lenQ : s.c(c.q.seq));
    if (!signature.returnLse)
      continue;
    // (max + log2(sum)) ln 2; -inf for a vanilla row that saw nothing.
    Value lse = arith::MulFOp::create(
        b, loc,
        arith::AddFOp::create(b, loc, keyLoop.getResult(r),
                              math::Log2Op::create(b, loc, sum)),
        f32(b, loc, kLn2));
    Value firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            (l % 4).value, s.c(0));
    auto store = scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, inside[r], firstLane),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    // LSE is [b, h, s_q, 1], or [t, h, 1] for thd.
    IndexExpr at = c.thd ? IndexExpr{&b, loc, queryToken(rows[r])} * c.q.heads +
                               IndexExpr{&b, loc, head}
                         : (IndexExpr{&b, loc, batch} * c.q.heads +
                            IndexExpr{&b, loc, head}) *
                                   c.q.seq +
                               IndexExpr{&b, loc, rows[r]};
    memref::StoreOp::create(b, loc, lse, lseFlat, at.value);
  }
  Dims oDims = c.outputDims();
  for (int64_t nd = 0; nd < dTiles; ++nd) {
    for (int r = 0; r < 2; ++r) {
      SmallVector<Value> pair;
      for (int i = 2 * r; i < 2 * r + 2; ++i) {
        Value value = arith::MulFOp::create(
            b, loc, keyLoop.getResult(4 + nd * mma::kCElements + i),
            inverse[r]);
        pair.push_back(emitTruncFromF32(b, loc, value, c.element));
      }
      TileCoord e = unit.cElement(l, 2 * r);
      auto store = scf::IfOp::create(b, loc, inside[r],
                                     /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      IndexExpr at = rowOffset(c.layout, oDims, IndexExpr{&b, loc, batch},
                               IndexExpr{&b, loc, queryToken(rows[r])},
                               IndexExpr{&b, loc, head}) +
                     e.col + nd * mma::kN;
      storeElements(b, loc, oFlat, at.value, pair);
    }
  }
}

} // namespace

LogicalResult gpu_lowering::lowerAttention(RewriterBase &rewriter,
                                           AttentionOp op,
                                           const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  FlashConfig c = FlashConfig::get(op);

  KernelSet set(op, "attention", target);
  OpBuilder b(op.getContext());
  ForwardSignature signature(op, c);
  gpu::GPUFuncOp fill;
  if (c.thd)
    fill = buildFillEmptyRows(b, loc, set, op, c, signature);
  ForwardKernel flash(b, loc, c, target, signature);
  gpu::GPUFuncOp kernel = flash.build(set);
  set.finish();

  OpBuilder &host = rewriter;
  SmallVector<Value> operands = {readBuffer(host, loc, op.getQ()),
                                 readBuffer(host, loc, op.getK()),
                                 readBuffer(host, loc, op.getV())};
  Value alphas;
  if (signature.learnable) {
    alphas = readBuffer(host, loc, op.getSoftmaxOffset());
    operands.push_back(alphas);
  }
  for (Value operand : signature.indexOperands)
    operands.push_back(readBuffer(host, loc, operand));
  Value o = allocateOutput(host, loc, signature.oTensor);
  operands.push_back(o);
  SmallVector<Value> outputs = {o};
  if (signature.returnLse) {
    Value lse = allocateOutput(host, loc, signature.lseTensor);
    operands.push_back(lse);
    outputs.push_back(lse);
  }
  if (fill) {
    SmallVector<Value> fillOperands(outputs);
    if (signature.learnable)
      fillOperands.push_back(alphas);
    set.launch(host, fill, blocksFor(c.q.seq * c.q.heads), kBlockSize,
               fillOperands);
  }
  set.launch(host, kernel, flash.getGridSize(), Tiling::kThreads, operands);
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}
