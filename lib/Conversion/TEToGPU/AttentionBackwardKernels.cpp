//===- AttentionBackwardKernels.cpp - te.attention_backward on the GPU ----===//
//
// Flash attention's backward pass (P recomputed from the forward's LSE,
// never stored) as launches of:
//
// 1. `zero_offsets` (learnable softmax) and `zero_kv_grads` (thd: keys of
//    no sequence get zero gradients, as on the CPU).
// 2. `prepare`, a block per 512 rows of a (batch, head), or of a head for
//    thd: D_i = dO_i . O_i for every query row, the f32 dQ accumulator of
//    the row zeroed, and for the learnable softmax d alpha_h +=
//    -exp(alpha_h - LSE_i) D_i (the extra term is a key with logit alpha_h
//    and a zero V row).
// 3. `flash_backward`, a block per (sequence: batch entry or thd sequence,
//    key/value head, 64 keys), four warps of 16 keys (MMALayout.h's
//    FlashBackwardTiling). The block reads its sequence's geometry (as the
//    forward does), stages its K rows once; each warp reads its V rows' A
//    fragments from global memory per tile (held across tiles they would
//    crowd the accumulators out of the registers). For every query head of
//    the group and every query tile the keys can see, Q and dO are staged;
//    per warp S^T = K Q^T and dP^T = V dO^T on the matrix units, P^T =
//    exp(scale S^T (- ALiBi) - LSE) and dS^T = P^T (dP^T - D) on the
//    accumulators (zero where the query does not see the key), dV += P^T
//    dO and dK += dS^T Q with the accumulators fed back as A fragments. dS
//    goes through shared memory, and the block adds dS K to the dQ
//    accumulator (f32 atomics: the key blocks of a query row meet there).
//    dK (times the scale) and dV leave the registers once, at the end: no
//    atomics for them, as one block owns all their contributions. Heads
//    wider than 64 split the kernel in two, `flash_backward_dv` and
//    `flash_backward_dk_dq`, each recomputing S: one set of accumulators
//    each keeps them in registers.
// 4. `store_dq`: dQ = scale * accumulator, rounded to Q's type, in Q's
//    layout.
//
// The visibility rule is the forward's (te/Conversion/TECommon's
// AttentionMath), query by query, with the arbitrary mask, bias tensors and
// dropout's kept elements as in the forward; dbias gathers dS through f32
// atomics (`zero_dbias`, `store_dbias`). It takes and declines the
// forward's configurations.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TEToGPU/MMALayout.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <tuple>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;
using namespace mlir::te::gpu_lowering::flash;

namespace {

using Tiling = mma::FlashBackwardTiling;

/// The four lanes' accumulator tiles of a product, as flat lists.
using Tiles = SmallVector<SmallVector<Value>>;

Tiles zeroTiles(OpBuilder &b, Location loc, int64_t count) {
  return Tiles(count, SmallVector<Value>(mma::kCElements, f32(b, loc, 0.0)));
}

SmallVector<Value> flatTiles(const Tiles &tiles) {
  SmallVector<Value> flat;
  for (const SmallVector<Value> &tile : tiles)
    flat.append(tile.begin(), tile.end());
  return flat;
}

Tiles unflatTiles(ValueRange flat) {
  Tiles tiles;
  for (size_t i = 0; i < flat.size(); i += mma::kCElements)
    tiles.emplace_back(flat.begin() + i, flat.begin() + i + mma::kCElements);
  return tiles;
}

/// The A fragment of a product whose A is the transposed accumulators
/// `tiles` (k step `step`), rounded to `element`.
SmallVector<Value> accumulatorsAsA(OpBuilder &b, Location loc,
                                   const MatrixUnit &unit, const Tiles &tiles,
                                   int step, Type element) {
  SmallVector<Value> a;
  for (int i = 0; i < mma::kAElements; ++i) {
    mma::AccumulatorSource from = unit.accumulatorForA(i);
    a.push_back(arith::TruncFOp::create(
        b, loc, element, tiles[2 * step + from.tile][from.element]));
  }
  return a;
}

/// acc[nd] += A B for the k step `step` (rows 16 step .. 16 step + 15) of
/// a staged [k][n] tile with `stride` elements per row, over the `count`
/// columns from `first` (acc has count / 8 tiles).
void accumulateProducts(OpBuilder &b, Location loc, const MatrixUnit &unit,
                        ArrayRef<Value> a, Value tile, int64_t stride,
                        IndexExpr lane, int step, IndexExpr first,
                        int64_t count, Tiles &acc) {
  for (int64_t nd = 0; nd < count / mma::kN; ++nd) {
    SmallVector<Value> fragment =
        unit.loadB(b, loc, tile, stride, lane, MatrixUnit::Staging::KRows,
                   {indexExpr(b, loc, step * mma::kK), first + nd * mma::kN});
    acc[nd] = unit.multiplyAccumulate(b, loc, a, fragment, acc[nd]);
  }
}

/// S = A B^T for every 8-query tile of a staged [query][d] tile of `depth`
/// columns, with the warp's A fragments from `aFragment`(k) (columns
/// [k, k + 16) of the warp's rows): k outermost, so that one A fragment is
/// live at a time.
Tiles productsWithStaged(OpBuilder &b, Location loc, const MatrixUnit &unit,
                         function_ref<SmallVector<Value>(int64_t)> aFragment,
                         Value tile, int64_t rows, int64_t depth,
                         IndexExpr lane) {
  Tiles result = zeroTiles(b, loc, rows / mma::kN);
  for (int64_t kk = 0; kk < depth; kk += mma::kK) {
    SmallVector<Value> a = aFragment(kk);
    for (int64_t ni = 0; ni < rows / mma::kN; ++ni) {
      SmallVector<Value> fragment = unit.loadB(
          b, loc, tile, depth + Tiling::kPad, lane, MatrixUnit::Staging::NRows,
          {indexExpr(b, loc, ni * mma::kN), indexExpr(b, loc, kk)});
      result[ni] = unit.multiplyAccumulate(b, loc, a, fragment, result[ni]);
    }
  }
  return result;
}

/// for (i = first + thread; i < end; i += threads) body(i, carried).
scf::ForOp blockStrideLoop(
    OpBuilder &b, Location loc, Value first, Value thread, int64_t threads,
    Value end, ValueRange init,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
        body) {
  return scf::ForOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, thread), end,
      indexConstant(b, loc, threads), init,
      [&](OpBuilder &b, Location loc, Value i, ValueRange carried) {
        scf::YieldOp::create(b, loc, body(b, loc, i, carried));
      });
}

void atomicAdd(OpBuilder &b, Location loc, Value value, Value buffer,
               Value index) {
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, value, buffer,
                              ValueRange{index});
}

/// What te.attention_backward's kernels share: the shapes and types of
/// the operands, results and temporaries, and the flash kernels' arguments.
struct BackwardPlan {
  BackwardPlan(AttentionBackwardOp op, const FlashConfig &c);

  /// `prepare` takes the rows in chunks of kPrepareRows of one head.
  static constexpr int64_t kPrepareRows = 4 * Tiling::kThreads;

  mutable AttentionBackwardOp op;
  const FlashConfig &c;
  bool learnable;
  Dims oDims;
  int64_t dqk, dv, widest, blockQ;
  /// Rows of the LSE, D and the dQ accumulator: [b, h, s_q], or [t, h].
  int64_t groups, prepareChunks, rows;
  /// Query heads per K/V head.
  int64_t group;
  Type f32Type;
  MemRefType qType, kType, vType, oType, lseType, deltaType, dqAccType;
  RankedTensorType deltaTensor, dqAccTensor, offsetTensor;
  /// dbias sums dS over the bias's broadcast dimensions (and the key blocks
  /// never meet, but the heads of a broadcast bias do): f32 atomics into an
  /// accumulator of the bias's shape, then rounded to its type.
  RankedTensorType biasTensor, dbiasAccTensor;
  std::array<Value, 7> sequenceOperands;
  std::array<Value, 3> elementOperands;
  SmallVector<Type> flashArguments;
};

RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

BackwardPlan::BackwardPlan(AttentionBackwardOp op, const FlashConfig &c)
    : op(op), c(c), learnable(c.softmax == SoftmaxKind::learnable),
      oDims(c.outputDims()), dqk(c.q.headDim), dv(c.v.headDim),
      widest(std::max(dqk, dv)), blockQ(Tiling::blockQ(widest)),
      groups(c.thd ? 1 : c.q.batch),
      prepareChunks((c.q.seq + kPrepareRows - 1) / kPrepareRows),
      rows(groups * c.q.heads * c.q.seq), group(c.q.heads / c.k.heads),
      f32Type(Float32Type::get(op.getContext())),
      sequenceOperands(getSequenceOperands(op)),
      elementOperands(getElementOperands(op)) {
  qType = bufferType(tensorTypeOf(op.getQ()));
  kType = bufferType(tensorTypeOf(op.getK()));
  vType = bufferType(tensorTypeOf(op.getV()));
  oType = bufferType(tensorTypeOf(op.getO()));
  lseType = bufferType(tensorTypeOf(op.getLse()));
  deltaTensor = RankedTensorType::get({rows}, f32Type);
  dqAccTensor = RankedTensorType::get({rows * dqk}, f32Type);
  deltaType = bufferType(deltaTensor);
  dqAccType = bufferType(dqAccTensor);
  if (learnable)
    offsetTensor = tensorTypeOf(op.getSoftmaxOffset());
  if (op.getBias()) {
    biasTensor = tensorTypeOf(op.getBias());
    dbiasAccTensor =
        RankedTensorType::get({biasTensor.getNumElements()}, f32Type);
  }
  flashArguments = {qType,
                    kType,
                    vType,
                    oType,
                    lseType,
                    deltaType,
                    dqAccType,
                    bufferType(tensorTypeOf(op.getDk())),
                    bufferType(tensorTypeOf(op.getDv()))};
  for (Value operand : sequenceOperands)
    if (operand)
      flashArguments.push_back(bufferType(tensorTypeOf(operand)));
  for (Value operand : elementOperands)
    if (operand)
      flashArguments.push_back(bufferType(tensorTypeOf(operand)));
  if (biasTensor)
    flashArguments.push_back(bufferType(dbiasAccTensor));
}

/// zero_offsets: d alpha = 0 before `prepare` adds to it.
gpu::GPUFuncOp buildZeroOffsets(OpBuilder &b, Location loc, KernelSet &set,
                                const BackwardPlan &p) {
  gpu::GPUFuncOp zeroOffsets =
      set.addKernel(b, "zero_offsets", {bufferType(p.offsetTensor)});
  Value flat = flatten(b, loc, zeroOffsets.getArgument(0));
  gridStrideLoop(b, loc, p.c.q.heads, Value(),
                 [&](OpBuilder &b, Location loc, Value i, Value) {
                   memref::StoreOp::create(b, loc, f32(b, loc, 0.0), flat, i);
                   return Value();
                 });
  return zeroOffsets;
}

/// zero_dbias and store_dbias: the accumulator zeroed, then rounded into
/// dbias (times the scale for pre_scale: the logit is scale (q . k +
/// bias)).
std::pair<gpu::GPUFuncOp, gpu::GPUFuncOp>
buildDbiasKernels(OpBuilder &b, Location loc, KernelSet &set,
                  const BackwardPlan &p) {
  int64_t count = p.biasTensor.getNumElements();
  gpu::GPUFuncOp zeroDbias =
      set.addKernel(b, "zero_dbias", {bufferType(p.dbiasAccTensor)});
  {
    Value acc = zeroDbias.getArgument(0);
    gridStrideLoop(b, loc, count, Value(),
                   [&](OpBuilder &b, Location loc, Value i, Value) {
                     memref::StoreOp::create(b, loc, f32(b, loc, 0.0), acc, i);
                     return Value();
                   });
  }
  gpu::GPUFuncOp storeDbias =
      set.addKernel(b, "store_dbias",
                    {bufferType(p.dbiasAccTensor), bufferType(p.biasTensor)});
  Value acc = storeDbias.getArgument(0);
  Value out = flatten(b, loc, storeDbias.getArgument(1));
  double factor = p.c.bias == BiasKind::pre_scale ? p.c.scale : 1.0;
  gridStrideLoop(
      b, loc, count, Value(), [&](OpBuilder &b, Location loc, Value i, Value) {
        Value value = memref::LoadOp::create(b, loc, acc, i);
        if (factor != 1.0)
          value = arith::MulFOp::create(b, loc, value, f32(b, loc, factor));
        memref::StoreOp::create(
            b, loc,
            emitTruncFromF32(b, loc, value, p.biasTensor.getElementType()), out,
            i);
        return Value();
      });
  return {zeroDbias, storeDbias};
}

/// prepare: D = dO . O per query row, the dQ accumulator's row zeroed, and
/// for the learnable softmax d alpha_h += -exp(alpha_h - LSE_i) D_i.
gpu::GPUFuncOp buildPrepare(OpBuilder &b, Location loc, KernelSet &set,
                            const GPUTargetInfo &target,
                            const BackwardPlan &p) {
  const FlashConfig &c = p.c;
  SmallVector<Type> prepareArguments = {p.oType, p.oType, p.deltaType,
                                        p.dqAccType};
  if (p.learnable)
    prepareArguments.append(
        {bufferType(p.offsetTensor), p.lseType, bufferType(p.offsetTensor)});
  gpu::GPUFuncOp prepare = set.addKernel(b, "prepare", prepareArguments);
  Value oFlat = flatten(b, loc, prepare.getArgument(0));
  Value doFlat = flatten(b, loc, prepare.getArgument(1));
  Value delta = prepare.getArgument(2);
  Value dqAcc = prepare.getArgument(3);
  Value offsets, lseFlat, dOffsets;
  if (p.learnable) {
    offsets = flatten(b, loc, prepare.getArgument(4));
    lseFlat = flatten(b, loc, prepare.getArgument(5));
    dOffsets = flatten(b, loc, prepare.getArgument(6));
  }
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  IndexExpr block{&b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)};
  // A block per kPrepareRows rows of a (batch entry, head), or of a head
  // for thd (whose rows are tokens).
  constexpr int64_t kPrepareRows = BackwardPlan::kPrepareRows;
  IndexExpr chunk = block % p.prepareChunks;
  IndexExpr head = (block / p.prepareChunks) % c.q.heads;
  IndexExpr batch = block / (p.prepareChunks * c.q.heads);
  Value firstRow = (chunk * kPrepareRows).value;
  Value endRow = arith::MinSIOp::create(
      b, loc, (chunk * kPrepareRows + kPrepareRows).value,
      indexConstant(b, loc, c.q.seq));
  Value alpha;
  if (p.learnable)
    alpha = memref::LoadOp::create(b, loc, offsets, head.value);
  SmallVector<Value> init;
  if (p.learnable)
    init.push_back(f32(b, loc, 0.0));
  int64_t width = vectorWidth(c.element, p.dv);
  auto loop = blockStrideLoop(
      b, loc, firstRow, thread, Tiling::kThreads, endRow, init,
      [&](OpBuilder &b, Location loc, Value i,
          ValueRange carried) -> SmallVector<Value> {
        IndexExpr at =
            rowOffset(c.layout, p.oDims, IndexExpr{&b, loc, batch.value},
                      IndexExpr{&b, loc, i}, IndexExpr{&b, loc, head.value});
        Value sum = f32(b, loc, 0.0);
        for (int64_t d = 0; d < p.dv; d += width) {
          Value index = (at + d).value;
          SmallVector<Value> o = loadElements(b, loc, oFlat, index, width);
          SmallVector<Value> dO = loadElements(b, loc, doFlat, index, width);
          for (int64_t e = 0; e < width; ++e)
            sum = math::FmaOp::create(
                b, loc, arith::ExtFOp::create(b, loc, p.f32Type, o[e]),
                arith::ExtFOp::create(b, loc, p.f32Type, dO[e]), sum);
        }
        IndexExpr row = c.thd ? IndexExpr{&b, loc, i} * c.q.heads +
                                    IndexExpr{&b, loc, head.value}
                              : (IndexExpr{&b, loc, batch.value} * c.q.heads +
                                 IndexExpr{&b, loc, head.value}) *
                                        c.q.seq +
                                    IndexExpr{&b, loc, i};
        memref::StoreOp::create(b, loc, sum, delta, row.value);
        SmallVector<Value> zeros(4, f32(b, loc, 0.0));
        for (int64_t d = 0; d < p.dqk; d += 4)
          storeElements(b, loc, dqAcc, (row * p.dqk + d).value, zeros);
        if (!p.learnable)
          return {};
        Value lse = memref::LoadOp::create(b, loc, lseFlat, row.value);
        Value weight = math::ExpOp::create(
            b, loc, arith::SubFOp::create(b, loc, alpha, lse));
        return {arith::SubFOp::create(
            b, loc, carried[0], arith::MulFOp::create(b, loc, weight, sum))};
      });
  if (p.learnable) {
    unsigned warpSize = target.getWarpSize();
    Value total = reduceOverLanes(b, loc, loop.getResult(0), warpSize, warpSize,
                                  [&](Value x, Value y) -> Value {
                                    return arith::AddFOp::create(b, loc, x, y);
                                  });
    Value firstLane = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        (IndexExpr{&b, loc, thread} % mma::kWarpSize).value,
        indexConstant(b, loc, 0));
    auto add = scf::IfOp::create(b, loc, firstLane, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(add.thenBlock());
    atomicAdd(b, loc, total, dOffsets, head.value);
  }
  return prepare;
}

/// zero_kv_grads (thd): keys of no sequence get zero gradients, as on the
/// CPU; flash_backward writes the others.
gpu::GPUFuncOp buildZeroKVGrads(OpBuilder &b, Location loc, KernelSet &set,
                                const BackwardPlan &p) {
  const FlashConfig &c = p.c;
  gpu::GPUFuncOp zeroKV =
      set.addKernel(b, "zero_kv_grads",
                    {bufferType(tensorTypeOf(p.op.getDk())),
                     bufferType(tensorTypeOf(p.op.getDv()))});
  Value dkFlat = flatten(b, loc, zeroKV.getArgument(0));
  Value dvFlat = flatten(b, loc, zeroKV.getArgument(1));
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(c.element, 0));
  int64_t dqk = p.dqk, dv = p.dv;
  gridStrideLoop(b, loc, c.k.seq * c.k.heads, Value(),
                 [&](OpBuilder &b, Location loc, Value i, Value) {
                   IndexExpr row{&b, loc, i};
                   for (auto [flat, dim] :
                        {std::pair(dkFlat, dqk), std::pair(dvFlat, dv)})
                     for (int64_t d = 0; d < dim; d += 8)
                       storeElements(b, loc, flat, (row * dim + d).value,
                                     SmallVector<Value>(8, zero));
                   return Value();
                 });
  return zeroKV;
}

/// store_dq: dQ = scale * accumulator in Q's layout.
gpu::GPUFuncOp buildStoreDq(OpBuilder &b, Location loc, KernelSet &set,
                            const BackwardPlan &p) {
  const FlashConfig &c = p.c;
  gpu::GPUFuncOp storeDq = set.addKernel(b, "store_dq", {p.dqAccType, p.qType});
  Value dqAcc = storeDq.getArgument(0);
  Value dqFlat = flatten(b, loc, storeDq.getArgument(1));
  Value scale = f32(b, loc, c.scale);
  int64_t dqk = p.dqk;
  int64_t chunks = dqk / 8;
  gridStrideLoop(
      b, loc, p.rows * chunks, Value(),
      [&](OpBuilder &b, Location loc, Value index, Value) {
        IndexExpr e{&b, loc, index};
        IndexExpr chunk = e % chunks, row = e / chunks;
        // (batch, head, position), or (token, head) for thd.
        IndexExpr position = c.thd ? row / c.q.heads : row % c.q.seq;
        IndexExpr head = c.thd ? row % c.q.heads : (row / c.q.seq) % c.q.heads;
        IndexExpr batch = row / (c.q.seq * c.q.heads);
        SmallVector<Value> values;
        for (int half = 0; half < 2; ++half) {
          SmallVector<Value> four = loadElements(
              b, loc, dqAcc, (row * dqk + chunk * 8 + half * 4).value, 4);
          for (Value value : four)
            values.push_back(emitTruncFromF32(
                b, loc, arith::MulFOp::create(b, loc, value, scale),
                c.element));
        }
        IndexExpr at =
            rowOffset(c.layout, c.q, batch, position, head) + chunk * 8;
        storeElements(b, loc, dqFlat, at.value, values);
        return Value();
      });
  return storeDq;
}

/// A flash_backward kernel: with dV (`withValues`), dK and dQ
/// (`withKeys`), or all three. Built in its parts: the block's place and
/// its staged K rows; per query head of the group and query tile, Q and dO
/// staged, dP^T and S^T on the matrix units, the elements weighed (P^T and
/// dS^T, with the ScoreModifiers the forward applies), dV and dK
/// accumulated, dQ through shared memory and atomics; then dK and dV
/// written.
class FlashBackwardKernel {
public:
  FlashBackwardKernel(OpBuilder &b, Location loc, const GPUTargetInfo &target,
                      const BackwardPlan &p, bool withValues, bool withKeys)
      : b(b), loc(loc), target(target), unit(getTiledUnit(target)), p(p),
        c(p.c), withValues(withValues), withKeys(withKeys), dqk(p.dqk),
        dv(p.dv), blockQ(p.blockQ), dkTiles(withKeys ? dqk / mma::kN : 0),
        dvTiles(withValues ? dv / mma::kN : 0),
        keyBlocks((c.k.seq + Tiling::kBlockKV - 1) / Tiling::kBlockKV),
        queryTiles((c.q.seq + blockQ - 1) / blockQ) {}

  gpu::GPUFuncOp build(KernelSet &set, StringRef name);

private:
  IndexExpr ix(Value value) const { return IndexExpr{&b, loc, value}; }
  /// min(start + position, extent - 1).
  Value token(Value start, Value position, int64_t extent) const {
    Signed s{b, loc};
    return s.min(s.add(start, position), s.c(extent - 1));
  }
  /// The row of query `query` in the LSE, D and dQ's accumulator: [b, h,
  /// s_q], or [t, h] (clamped into the tensor).
  IndexExpr rowIndex(IndexExpr head, Value query) const;

  void bindArguments(gpu::GPUFuncOp flash);
  void placeBlock();
  SmallVector<Value> emitHead(Value member, ValueRange carried);
  SmallVector<Value> emitQueryTile(IndexExpr head, Value slopeLog2, Value qt,
                                   ValueRange carried);
  SmallVector<Value> emitVisibleTile(IndexExpr head, Value slopeLog2,
                                     IndexExpr q0, ValueRange carried);
  Tiles computeValueProducts(IndexExpr l);
  Tiles computeScores(IndexExpr l);
  void weighElements(IndexExpr head, Value slopeLog2, IndexExpr q0, IndexExpr l,
                     const Tiles &scores, const Tiles &dP, Tiles &probabilities,
                     Tiles &dS);
  void accumulateQueryGradients(IndexExpr head, IndexExpr q0, IndexExpr l,
                                const Tiles &dS);
  void writeKeyGradients(scf::ForOp headLoop);

  OpBuilder &b;
  Location loc;
  const GPUTargetInfo &target;
  const MatrixUnit &unit;
  const BackwardPlan &p;
  const FlashConfig &c;
  bool withValues, withKeys;
  int64_t dqk, dv, blockQ, dkTiles, dvTiles, keyBlocks, queryTiles;

  Value qFlat, kFlat, vFlat, doFlat, lseFlat, delta, dqAcc, dkFlat, dvFlat;
  Value kTile, qTile, doTile, dsTile, slopes, dbiasAcc;
  SequenceOperands sequenceOperands;
  ElementOperands elementOperands;
  /// The block's place: thread; key block, K/V head, sequence (batch); the
  /// thread's warp and lane, the block's first key, the warp's first.
  Value thread, keyBlock, kvHead, batch, warp, lane, keyBase, warpKeys;
  SequenceGeometry g;
  /// The lane's two keys; the block's end.
  std::array<Value, 2> keys;
  Value blockEnd, scaleLog2;
};

IndexExpr FlashBackwardKernel::rowIndex(IndexExpr head, Value query) const {
  Value at = token(g.qStart, query, c.q.seq);
  if (c.thd)
    return ix(at) * c.q.heads + head;
  return (ix(batch) * c.q.heads + head) * c.q.seq + ix(at);
}

gpu::GPUFuncOp FlashBackwardKernel::build(KernelSet &set, StringRef name) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto tileType = [&](int64_t tileRows, int64_t columns) {
    return MemRefType::get({tileRows * (columns + Tiling::kPad)}, c.element,
                           MemRefLayoutAttrInterface(), workgroup);
  };
  SmallVector<Type> tiles = {tileType(Tiling::kBlockKV, dqk),
                             tileType(blockQ, dqk), tileType(blockQ, dv)};
  // dS's tile, for dQ.
  if (withKeys)
    tiles.push_back(tileType(blockQ, Tiling::kBlockKV));
  gpu::GPUFuncOp flash = set.addKernel(b, name, p.flashArguments, tiles);
  bindArguments(flash);
  placeBlock();
  SmallVector<Value> init = flatTiles(zeroTiles(b, loc, dkTiles + dvTiles));
  Signed s{b, loc};
  auto headLoop = scf::ForOp::create(
      b, loc, s.c(0), s.c(p.group), s.c(1), init,
      [&](OpBuilder &, Location, Value member, ValueRange carried) {
        scf::YieldOp::create(b, loc, emitHead(member, carried));
      });
  writeKeyGradients(headLoop);
  return flash;
}

void FlashBackwardKernel::bindArguments(gpu::GPUFuncOp flash) {
  qFlat = flatten(b, loc, flash.getArgument(0));
  kFlat = flatten(b, loc, flash.getArgument(1));
  vFlat = flatten(b, loc, flash.getArgument(2));
  doFlat = flatten(b, loc, flash.getArgument(3));
  lseFlat = flatten(b, loc, flash.getArgument(4));
  delta = flash.getArgument(5);
  dqAcc = flash.getArgument(6);
  dkFlat = flatten(b, loc, flash.getArgument(7));
  dvFlat = flatten(b, loc, flash.getArgument(8));
  kTile = flash.getWorkgroupAttributions()[0];
  qTile = flash.getWorkgroupAttributions()[1];
  doTile = flash.getWorkgroupAttributions()[2];
  if (withKeys)
    dsTile = flash.getWorkgroupAttributions()[3];
  unsigned next = 9;
  bindSequenceOperands(b, loc, flash, next, p.sequenceOperands,
                       sequenceOperands, slopes);
  elementOperands = bindElementOperands(b, loc, flash, next, p.elementOperands);
  if (p.biasTensor)
    dbiasAcc = flash.getArgument(next++);
}

/// Block -> (key block, key/value head, sequence: the batch entry or thd's
/// sequence); for thd each sequence gets the key blocks of all tokens, and
/// those past its length see no query. The block's K rows are staged once.
void FlashBackwardKernel::placeBlock() {
  thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  IndexExpr block{&b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)};
  IndexExpr blockKeys = block % keyBlocks;
  IndexExpr blockHead = (block / keyBlocks) % c.k.heads;
  IndexExpr blockBatch = block / (keyBlocks * c.k.heads);
  IndexExpr t{&b, loc, thread};
  IndexExpr threadWarp = t / mma::kWarpSize, threadLane = t % mma::kWarpSize;
  IndexExpr base = blockKeys * Tiling::kBlockKV;
  IndexExpr firstKey = threadWarp * mma::kM;
  keyBlock = blockKeys.value;
  kvHead = blockHead.value;
  batch = blockBatch.value;
  warp = threadWarp.value;
  lane = threadLane.value;
  keyBase = base.value;
  warpKeys = firstKey.value;
  Signed s{b, loc};

  g = c.sequenceGeometry(b, loc, sequenceOperands, batch);
  stageRows(b, loc, target, c, c.k, kFlat, kTile, thread, batch, kvHead,
            s.add(g.kvStart, keyBase), s.add(g.kvStart, g.lenKV),
            Tiling::kBlockKV, Tiling::kThreads, Tiling::kPad);
  target.emitAsyncCommit(b, loc);
  target.emitAsyncWait(b, loc, 0);
  gpu::BarrierOp::create(b, loc);

  // The lane's two keys.
  for (int r = 0; r < 2; ++r)
    keys[r] =
        (ix(keyBase) + ix(warpKeys) + unit.cElement(ix(lane), 2 * r).row).value;
  blockEnd = (ix(keyBase) + Tiling::kBlockKV).value;
  scaleLog2 = f32(b, loc, c.scale * kLog2e);
}

/// Query head `member` of the K/V head's group: its query tiles.
SmallVector<Value> FlashBackwardKernel::emitHead(Value member,
                                                 ValueRange carried) {
  IndexExpr head = ix(kvHead) * p.group + ix(member);
  Value slopeLog2 = c.loadSlopeLog2(b, loc, slopes, ix(batch), head);
  // With sequence lengths, only the query tiles of the sequence, and none
  // for a key block past its keys (their gradients stay zero).
  Value tileEnd = indexConstant(b, loc, queryTiles);
  if (c.padding) {
    Signed s{b, loc};
    Value tilesOfSequence = arith::DivSIOp::create(
        b, loc, s.add(g.lenQ, s.c(blockQ - 1)), s.c(blockQ));
    tileEnd = arith::SelectOp::create(
        b, loc, s.compare(arith::CmpIPredicate::slt, keyBase, g.lenKV),
        tilesOfSequence, s.c(0));
  }
  auto tileLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), tileEnd, indexConstant(b, loc, 1),
      carried, [&](OpBuilder &, Location, Value qt, ValueRange carried) {
        scf::YieldOp::create(b, loc,
                             emitQueryTile(head, slopeLog2, qt, carried));
      });
  return tileLoop.getResults();
}

/// Query tile `qt`: skipped unless one of its queries sees one of the
/// block's keys.
SmallVector<Value> FlashBackwardKernel::emitQueryTile(IndexExpr head,
                                                      Value slopeLog2, Value qt,
                                                      ValueRange carried) {
  Signed s{b, loc};
  IndexExpr q0 = ix(qt) * blockQ;
  Value lastRow = s.min((q0 + (blockQ - 1)).value, s.c(c.q.seq - 1));
  if (c.padding)
    lastRow = arith::MaxSIOp::create(
        b, loc, q0.value,
        s.min(lastRow, arith::SubIOp::create(b, loc, g.lenQ, s.c(1))));
  // Rows see growing key ranges: the tile's first row's lower bound and
  // its last row's upper bound enclose them all.
  Value lo = c.visibleKeys(b, loc, q0.value, g).lo;
  Value hi = c.visibleKeys(b, loc, lastRow, g).hi;
  Value seen = arith::AndIOp::create(
      b, loc, s.compare(arith::CmpIPredicate::slt, lo, blockEnd),
      s.compare(arith::CmpIPredicate::sgt, hi, keyBase));
  if (c.padding)
    seen = arith::AndIOp::create(
        b, loc, seen, s.compare(arith::CmpIPredicate::slt, q0.value, g.lenQ));
  auto branch = scf::IfOp::create(b, loc, carried.getTypes(), seen,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, carried);
    b.setInsertionPointToStart(branch.thenBlock());
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  scf::YieldOp::create(b, loc, emitVisibleTile(head, slopeLog2, q0, carried));
  b.setInsertionPointAfter(branch);
  return branch.getResults();
}

/// A query tile some of whose queries see the block's keys: the carried dK
/// and dV accumulators updated, dQ and dbias added to.
SmallVector<Value> FlashBackwardKernel::emitVisibleTile(IndexExpr head,
                                                        Value slopeLog2,
                                                        IndexExpr q0,
                                                        ValueRange carried) {
  Signed s{b, loc};
  Tiles dK = unflatTiles(carried.take_front(dkTiles * 4));
  Tiles dV = unflatTiles(carried.drop_front(dkTiles * 4));

  // The previous tile is done with Q, dO and dS.
  gpu::BarrierOp::create(b, loc);
  Value first = s.add(g.qStart, q0.value);
  Value limit = s.add(g.qStart, g.lenQ);
  stageRows(b, loc, target, c, c.q, qFlat, qTile, thread, batch, head.value,
            first, limit, blockQ, Tiling::kThreads, Tiling::kPad);
  stageRows(b, loc, target, c, p.oDims, doFlat, doTile, thread, batch,
            head.value, first, limit, blockQ, Tiling::kThreads, Tiling::kPad);
  target.emitAsyncCommit(b, loc);
  target.emitAsyncWait(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
  IndexExpr l = ix(lane);

  Tiles dP;
  if (withKeys)
    dP = computeValueProducts(l);
  Tiles scores = computeScores(l);
  // P^T and dS^T, zero where the query does not see the key.
  Tiles probabilities = scores, dS = scores;
  weighElements(head, slopeLog2, q0, l, scores, dP, probabilities, dS);

  // dV += P^T dO and dK += dS^T Q, 16 queries per step.
  IndexExpr allColumns = ix(s.c(0));
  for (int step = 0; step < blockQ / mma::kK; ++step) {
    if (withValues)
      accumulateProducts(
          b, loc, unit,
          accumulatorsAsA(b, loc, unit, probabilities, step, c.element), doTile,
          dv + Tiling::kPad, l, step, allColumns, dv, dV);
    if (withKeys)
      accumulateProducts(
          b, loc, unit, accumulatorsAsA(b, loc, unit, dS, step, c.element),
          qTile, dqk + Tiling::kPad, l, step, allColumns, dqk, dK);
  }
  if (withKeys)
    accumulateQueryGradients(head, q0, l, dS);
  SmallVector<Value> next = flatTiles(dK);
  SmallVector<Value> nextV = flatTiles(dV);
  next.append(nextV.begin(), nextV.end());
  return next;
}

/// dP^T = V dO^T for the warp's 16 keys (V rows from global memory, keys
/// clamped into the sequence: their P is zero).
Tiles FlashBackwardKernel::computeValueProducts(IndexExpr l) {
  return productsWithStaged(
      b, loc, unit,
      [&](int64_t kd) {
        SmallVector<Value> fragment;
        for (int i = 0; i < mma::kAElements; i += 2) {
          TileCoord e = unit.aElement(l, i);
          Value key = token(
              g.kvStart, (ix(keyBase) + ix(warpKeys) + e.row).value, c.k.seq);
          IndexExpr at =
              rowOffset(c.layout, c.v, ix(batch), ix(key), ix(kvHead)) + e.col +
              kd;
          SmallVector<Value> pair = loadElements(b, loc, vFlat, at.value, 2);
          fragment.append(pair.begin(), pair.end());
        }
        return fragment;
      },
      doTile, blockQ, dv, l);
}

/// S^T = K Q^T (K from the staged tile).
Tiles FlashBackwardKernel::computeScores(IndexExpr l) {
  Signed s{b, loc};
  return productsWithStaged(
      b, loc, unit,
      [&](int64_t kk) {
        return unit.loadA(b, loc, kTile, dqk + Tiling::kPad, l, ix(warpKeys),
                          ix(s.c(kk)));
      },
      qTile, blockQ, dqk, l);
}

/// P^T = exp2(logit - LSE) (the logit by ScoreModifiers) and dS^T = P^T
/// (dP^T - D), zero where the query does not see the key; with dropout's
/// factor f (0 or 1 / (1 - p)), V's weight is P f and P's gradient dP f.
/// dbias gathers dS (the scale applied by store_dbias).
void FlashBackwardKernel::weighElements(IndexExpr head, Value slopeLog2,
                                        IndexExpr q0, IndexExpr l,
                                        const Tiles &scores, const Tiles &dP,
                                        Tiles &probabilities, Tiles &dS) {
  Signed s{b, loc};
  ScoreModifiers modifiers{c, elementOperands, scaleLog2, slopeLog2};
  Value zero = f32(b, loc, 0.0), log2e = f32(b, loc, kLog2e);
  for (int64_t ni = 0; ni < blockQ / mma::kN; ++ni) {
    for (int j = 0; j < 2; ++j) {
      Value query = (q0 + ni * mma::kN + unit.cElement(l, j).col).value;
      Value inside = s.compare(arith::CmpIPredicate::slt, query, g.lenQ);
      VisibleKeys visibleKeys = c.visibleKeys(b, loc, query, g);
      Value at = rowIndex(head, query).value;
      Value lse = arith::MulFOp::create(
          b, loc, memref::LoadOp::create(b, loc, lseFlat, at), log2e);
      Value d = memref::LoadOp::create(b, loc, delta, at);
      Value dropoutRow;
      if (elementOperands.rngState)
        dropoutRow = dropoutRowState(b, loc, c, elementOperands, g, batch,
                                     head.value, query);
      for (int r = 0; r < 2; ++r) {
        int i = 2 * r + j;
        Value visible =
            modifiers.visible(b, loc, keys[r], visibleKeys.lo, visibleKeys.hi,
                              batch, head.value, query, inside);
        Value dot = modifiers.addBias(b, loc, scores[ni][i], batch, head.value,
                                      query, keys[r]);
        Value logit =
            modifiers.logit(b, loc, dot, keys[r], visibleKeys.diagonal);
        Value e = math::Exp2Op::create(
            b, loc, arith::SubFOp::create(b, loc, logit, lse));
        Value weight = e, gradP = dP.empty() ? Value() : dP[ni][i];
        if (dropoutRow) {
          Value keep = dropoutKeep(b, loc, c, g, dropoutRow, keys[r]);
          Value factor = arith::SelectOp::create(
              b, loc, keep, f32(b, loc, 1.0 / (1.0 - c.dropout)), zero);
          weight = arith::MulFOp::create(b, loc, e, factor);
          if (gradP)
            gradP = arith::MulFOp::create(b, loc, gradP, factor);
        }
        probabilities[ni][i] =
            arith::SelectOp::create(b, loc, visible, weight, zero);
        if (!withKeys)
          continue;
        Value grad = arith::MulFOp::create(
            b, loc, e, arith::SubFOp::create(b, loc, gradP, d));
        dS[ni][i] = arith::SelectOp::create(b, loc, visible, grad, zero);
        if (dbiasAcc) {
          auto add = scf::IfOp::create(b, loc, visible,
                                       /*withElseRegion=*/false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(add.thenBlock());
          atomicAdd(b, loc, grad, dbiasAcc,
                    c.broadcastIndex(b, loc, c.biasShape, batch, head.value,
                                     query, keys[r]));
        }
      }
    }
  }
}

/// dS, rounded, into the shared [query][key] tile; then dQ += dS K over
/// the warp's rows and column tiles, all keys, added to the accumulator
/// with f32 atomics (the key blocks of a query row meet there). A tile
/// past dqk (a warp with fewer tiles) reads the last one and adds nothing.
void FlashBackwardKernel::accumulateQueryGradients(IndexExpr head, IndexExpr q0,
                                                   IndexExpr l,
                                                   const Tiles &dS) {
  Signed s{b, loc};
  int64_t dsStride = Tiling::kBlockKV + Tiling::kPad;
  for (int64_t ni = 0; ni < blockQ / mma::kN; ++ni) {
    for (int i = 0; i < mma::kCElements; ++i) {
      TileCoord e = unit.cElement(l, i);
      // The accumulator's row is the key, its column the query.
      IndexExpr at = (e.col + ni * mma::kN) * dsStride + ix(warpKeys) + e.row;
      memref::StoreOp::create(
          b, loc, arith::TruncFOp::create(b, loc, c.element, dS[ni][i]), dsTile,
          at.value);
    }
  }
  gpu::BarrierOp::create(b, loc);

  IndexExpr dqRow = Tiling::dqRow(ix(warp), p.widest);
  int64_t dqTiles = Tiling::dqTiles(p.widest, static_cast<int>(dqk));
  SmallVector<Value> dqColumns, dqInside;
  for (int64_t nd = 0; nd < dqTiles; ++nd) {
    Value column = Tiling::dqColumn(ix(warp), static_cast<int>(nd), p.widest,
                                    static_cast<int>(dqk))
                       .value;
    dqInside.push_back(s.compare(arith::CmpIPredicate::slt, column, s.c(dqk)));
    dqColumns.push_back(s.min(column, s.c(dqk - mma::kN)));
  }
  Tiles dQ = zeroTiles(b, loc, dqTiles);
  for (int step = 0; step < Tiling::kBlockKV / mma::kK; ++step) {
    SmallVector<Value> a =
        unit.loadA(b, loc, dsTile, dsStride, l, dqRow, ix(s.c(step * mma::kK)));
    for (int64_t nd = 0; nd < dqTiles; ++nd) {
      Tiles one = {dQ[nd]};
      accumulateProducts(b, loc, unit, a, kTile, dqk + Tiling::kPad, l, step,
                         ix(dqColumns[nd]), mma::kN, one);
      dQ[nd] = one[0];
    }
  }
  for (int r = 0; r < 2; ++r) {
    IndexExpr query = q0 + dqRow + unit.cElement(l, 2 * r).row;
    Value inside = s.compare(arith::CmpIPredicate::slt, query.value, g.lenQ);
    IndexExpr rowStart = rowIndex(head, query.value) * dqk;
    for (int64_t nd = 0; nd < dqTiles; ++nd) {
      auto add = scf::IfOp::create(
          b, loc, arith::AndIOp::create(b, loc, inside, dqInside[nd]),
          /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(add.thenBlock());
      for (int i = 2 * r; i < 2 * r + 2; ++i) {
        TileCoord e = unit.cElement(l, i);
        atomicAdd(b, loc, dQ[nd][i], dqAcc,
                  (rowStart + ix(dqColumns[nd]) + e.col).value);
      }
    }
  }
}

/// dK = scale * accumulator and dV, for the keys in the sequence. Every key
/// of the tensor is written (keys past a padded length get zero
/// gradients), but a thd sequence's keys only up to its length: the tokens
/// after it are another sequence's (or zero_kv_grads').
void FlashBackwardKernel::writeKeyGradients(scf::ForOp headLoop) {
  Signed s{b, loc};
  Value scale = f32(b, loc, c.scale);
  Value keyLimit = c.thd ? g.lenKV : s.c(c.k.seq);
  auto writeRows = [&](ValueRange acc, const Dims &dims, Value flat,
                       Value factor) {
    for (int64_t nd = 0; nd < dims.headDim / mma::kN; ++nd) {
      for (int r = 0; r < 2; ++r) {
        SmallVector<Value> pair;
        for (int i = 2 * r; i < 2 * r + 2; ++i) {
          Value value = acc[nd * mma::kCElements + i];
          if (factor)
            value = arith::MulFOp::create(b, loc, value, factor);
          pair.push_back(emitTruncFromF32(b, loc, value, c.element));
        }
        auto store = scf::IfOp::create(
            b, loc, s.compare(arith::CmpIPredicate::slt, keys[r], keyLimit),
            /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(store.thenBlock());
        TileCoord e = unit.cElement(ix(lane), 2 * r);
        IndexExpr at = rowOffset(c.layout, dims, ix(batch),
                                 ix(s.add(g.kvStart, keys[r])), ix(kvHead)) +
                       e.col + nd * mma::kN;
        storeElements(b, loc, flat, at.value, pair);
      }
    }
  };
  if (withKeys)
    writeRows(headLoop.getResults().take_front(dkTiles * 4), c.k, dkFlat,
              scale);
  if (withValues)
    writeRows(headLoop.getResults().drop_front(dkTiles * 4), c.v, dvFlat,
              Value());
}

} // namespace

LogicalResult
gpu_lowering::lowerAttentionBackward(RewriterBase &rewriter,
                                     AttentionBackwardOp op,
                                     const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  FlashConfig c = FlashConfig::get(op);
  BackwardPlan p(op, c);

  KernelSet set(op, "attention_backward", target);
  OpBuilder b(op.getContext());
  gpu::GPUFuncOp zeroOffsets, zeroDbias, storeDbias, zeroKV;
  if (p.learnable)
    zeroOffsets = buildZeroOffsets(b, loc, set, p);
  if (p.biasTensor)
    std::tie(zeroDbias, storeDbias) = buildDbiasKernels(b, loc, set, p);
  gpu::GPUFuncOp prepare = buildPrepare(b, loc, set, target, p);
  if (c.thd)
    zeroKV = buildZeroKVGrads(b, loc, set, p);
  // Heads wider than 64 split dV from dK and dQ over two kernels, each
  // recomputing S, so that the accumulators of one stay in registers.
  SmallVector<gpu::GPUFuncOp> flashKernels;
  if (p.widest > 64) {
    flashKernels.push_back(FlashBackwardKernel(b, loc, target, p, true, false)
                               .build(set, "flash_backward_dv"));
    flashKernels.push_back(FlashBackwardKernel(b, loc, target, p, false, true)
                               .build(set, "flash_backward_dk_dq"));
  } else {
    flashKernels.push_back(FlashBackwardKernel(b, loc, target, p, true, true)
                               .build(set, "flash_backward"));
  }
  gpu::GPUFuncOp storeDq = buildStoreDq(b, loc, set, p);
  set.finish();

  OpBuilder &host = rewriter;
  Value q = readBuffer(host, loc, op.getQ());
  Value k = readBuffer(host, loc, op.getK());
  Value v = readBuffer(host, loc, op.getV());
  Value o = readBuffer(host, loc, op.getO());
  Value dO = readBuffer(host, loc, op.getDO());
  Value lse = readBuffer(host, loc, op.getLse());
  // Temporaries of the launches (not results).
  Value delta = allocateOutput(host, loc, p.deltaTensor);
  Value dqAcc = allocateOutput(host, loc, p.dqAccTensor);
  Value dq = allocateOutput(host, loc, tensorTypeOf(op.getDq()));
  Value dk = allocateOutput(host, loc, tensorTypeOf(op.getDk()));
  Value dvOut = allocateOutput(host, loc, tensorTypeOf(op.getDv()));
  SmallVector<Value> outputs = {dq, dk, dvOut};
  Value dbiasAcc, dbias;
  if (p.biasTensor) {
    dbiasAcc = allocateOutput(host, loc, p.dbiasAccTensor);
    dbias = allocateOutput(host, loc, p.biasTensor);
    set.launch(host, zeroDbias, blocksFor(p.biasTensor.getNumElements()),
               kBlockSize, {dbiasAcc});
    outputs.push_back(dbias);
  }
  SmallVector<Value> prepareOperands = {o, dO, delta, dqAcc};
  if (p.learnable) {
    Value dOffsets = allocateOutput(host, loc, p.offsetTensor);
    set.launch(host, zeroOffsets, 1, kBlockSize, {dOffsets});
    prepareOperands.append(
        {readBuffer(host, loc, op.getSoftmaxOffset()), lse, dOffsets});
    outputs.push_back(dOffsets);
  }
  set.launch(host, prepare, p.groups * c.q.heads * p.prepareChunks,
             Tiling::kThreads, prepareOperands);
  if (zeroKV)
    set.launch(host, zeroKV, blocksFor(c.k.seq * c.k.heads), kBlockSize,
               {dk, dvOut});
  int64_t keyBlocks = (c.k.seq + Tiling::kBlockKV - 1) / Tiling::kBlockKV;
  SmallVector<Value> flashOperands = {q,     k,     v,  dO,   lse,
                                      delta, dqAcc, dk, dvOut};
  for (Value operand : p.sequenceOperands)
    if (operand)
      flashOperands.push_back(readBuffer(host, loc, operand));
  for (Value operand : p.elementOperands)
    if (operand)
      flashOperands.push_back(readBuffer(host, loc, operand));
  if (dbiasAcc)
    flashOperands.push_back(dbiasAcc);
  for (gpu::GPUFuncOp flash : flashKernels)
    set.launch(host, flash, keyBlocks * c.k.heads * c.sequences,
               Tiling::kThreads, flashOperands);
  set.launch(host, storeDq, blocksFor(p.rows * (p.dqk / 8)), kBlockSize,
             {dqAcc, dq});
  if (storeDbias)
    set.launch(host, storeDbias, blocksFor(p.biasTensor.getNumElements()),
               kBlockSize, {dbiasAcc, dbias});
  replaceWithOutputs(rewriter, op, outputs);
  return success();
}
