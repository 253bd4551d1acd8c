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
                                   const Tiles &tiles, int step, Type element) {
  SmallVector<Value> a;
  for (int i = 0; i < mma::kAElements; ++i) {
    mma::AccumulatorSource from = mma::accumulatorForA(i);
    a.push_back(arith::TruncFOp::create(
        b, loc, element, tiles[2 * step + from.tile][from.element]));
  }
  return a;
}

/// acc[nd] += A B for the k step `step` (rows 16 step .. 16 step + 15) of
/// a staged [k][n] tile with `stride` elements per row, over the `count`
/// columns from `first` (acc has count / 8 tiles).
void accumulateProducts(OpBuilder &b, Location loc, const GPUTargetInfo &target,
                        ArrayRef<Value> a, Value tile, int64_t stride,
                        IndexExpr lane, int step, IndexExpr first,
                        int64_t count, Tiles &acc) {
  for (int64_t nd = 0; nd < count / mma::kN; ++nd) {
    mma::Coord<IndexExpr> row =
        mma::FlashTiling::valueFragmentRow(lane, step, nd);
    row.col = row.col + first;
    SmallVector<Value> fragment = loadBFragment(
        b, loc, target, tile, stride, lane, row, /*transpose=*/true,
        [&](mma::Coord<IndexExpr> e) {
          return mma::Coord<IndexExpr>{e.row + step * mma::kK,
                                       e.col + first + nd * mma::kN};
        });
    acc[nd] = target.emitMMA16x8x16(b, loc, a, fragment, acc[nd]);
  }
}

/// S = A B^T for every 8-query tile of a staged [query][d] tile of `depth`
/// columns, with the warp's A fragments from `aFragment`(k) (columns
/// [k, k + 16) of the warp's rows): k outermost, so that one A fragment is
/// live at a time.
Tiles productsWithStaged(OpBuilder &b, Location loc,
                         const GPUTargetInfo &target,
                         function_ref<SmallVector<Value>(int64_t)> aFragment,
                         Value tile, int64_t rows, int64_t depth,
                         IndexExpr lane) {
  Tiles result = zeroTiles(b, loc, rows / mma::kN);
  for (int64_t kk = 0; kk < depth; kk += mma::kK) {
    SmallVector<Value> a = aFragment(kk);
    for (int64_t ni = 0; ni < rows / mma::kN; ++ni) {
      SmallVector<Value> fragment = loadBFragment(
          b, loc, target, tile, depth + Tiling::kPad, lane,
          mma::FlashTiling::keyFragmentRow(lane, static_cast<int>(ni),
                                           static_cast<int>(kk)),
          /*transpose=*/false, [&](mma::Coord<IndexExpr> e) {
            return mma::Coord<IndexExpr>{e.col + ni * mma::kN, e.row + kk};
          });
      result[ni] = target.emitMMA16x8x16(b, loc, a, fragment, result[ni]);
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

} // namespace

LogicalResult
gpu_lowering::lowerAttentionBackward(AttentionBackwardOp op,
                                     const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  FlashConfig c = FlashConfig::get(op);
  unsigned warpSize = target.getWarpSize();
  if (warpSize != mma::kWarpSize)
    return op.emitError(
        "te.attention_backward's GPU kernels need 32-lane warps");
  bool learnable = c.softmax == SoftmaxKind::learnable;
  Dims oDims = c.outputDims();
  int64_t dqk = c.q.headDim, dv = c.v.headDim;
  int64_t widest = std::max(dqk, dv);
  int64_t blockQ = Tiling::blockQ(widest);
  // Rows of the LSE, D and the dQ accumulator: [b, h, s_q], or [t, h].
  int64_t groups = c.thd ? 1 : c.q.batch;
  // `prepare` takes them in chunks of kPrepareRows of one head.
  constexpr int64_t kPrepareRows = 4 * Tiling::kThreads;
  int64_t prepareChunks = (c.q.seq + kPrepareRows - 1) / kPrepareRows;
  int64_t rows = groups * c.q.heads * c.q.seq;
  int64_t group = c.q.heads / c.k.heads;
  Type f32Type = Float32Type::get(context);

  KernelSet set(op, "attention_backward", target);
  OpBuilder b(context);
  auto tensorType = [](Value value) {
    return cast<RankedTensorType>(value.getType());
  };
  MemRefType qType = bufferType(tensorType(op.getQ()));
  MemRefType kType = bufferType(tensorType(op.getK()));
  MemRefType vType = bufferType(tensorType(op.getV()));
  MemRefType oType = bufferType(tensorType(op.getO()));
  MemRefType lseType = bufferType(tensorType(op.getLse()));
  auto deltaTensor = RankedTensorType::get({rows}, f32Type);
  auto dqAccTensor = RankedTensorType::get({rows * dqk}, f32Type);
  MemRefType deltaType = bufferType(deltaTensor);
  MemRefType dqAccType = bufferType(dqAccTensor);
  RankedTensorType offsetTensor =
      learnable ? tensorType(op.getSoftmaxOffset()) : RankedTensorType();
  // dbias sums dS over the bias's broadcast dimensions (and the key blocks
  // never meet, but the heads of a broadcast bias do): f32 atomics into an
  // accumulator of the bias's shape, then rounded to its type.
  RankedTensorType biasTensor =
      op.getBias() ? tensorType(op.getBias()) : RankedTensorType();
  RankedTensorType dbiasAccTensor =
      biasTensor ? RankedTensorType::get({biasTensor.getNumElements()}, f32Type)
                 : RankedTensorType();

  // zero_offsets: d alpha = 0 before `prepare` adds to it.
  gpu::GPUFuncOp zeroOffsets;
  if (learnable) {
    zeroOffsets = set.addKernel(b, "zero_offsets", {bufferType(offsetTensor)});
    Value flat = flatten(b, loc, zeroOffsets.getArgument(0));
    gridStrideLoop(b, loc, c.q.heads, Value(),
                   [&](OpBuilder &b, Location loc, Value i, Value) {
                     memref::StoreOp::create(b, loc, f32(b, loc, 0.0), flat, i);
                     return Value();
                   });
  }

  // zero_dbias and store_dbias: the accumulator zeroed, then rounded into
  // dbias (times the scale for pre_scale: the logit is scale (q . k +
  // bias)).
  gpu::GPUFuncOp zeroDbias, storeDbias;
  if (biasTensor) {
    int64_t count = biasTensor.getNumElements();
    zeroDbias = set.addKernel(b, "zero_dbias", {bufferType(dbiasAccTensor)});
    {
      Value acc = zeroDbias.getArgument(0);
      gridStrideLoop(b, loc, count, Value(),
                     [&](OpBuilder &b, Location loc, Value i, Value) {
                       memref::StoreOp::create(b, loc, f32(b, loc, 0.0), acc,
                                               i);
                       return Value();
                     });
    }
    storeDbias = set.addKernel(
        b, "store_dbias", {bufferType(dbiasAccTensor), bufferType(biasTensor)});
    {
      Value acc = storeDbias.getArgument(0);
      Value out = flatten(b, loc, storeDbias.getArgument(1));
      double factor = c.bias == BiasKind::pre_scale ? c.scale : 1.0;
      gridStrideLoop(
          b, loc, count, Value(),
          [&](OpBuilder &b, Location loc, Value i, Value) {
            Value value = memref::LoadOp::create(b, loc, acc, i);
            if (factor != 1.0)
              value = arith::MulFOp::create(b, loc, value, f32(b, loc, factor));
            memref::StoreOp::create(
                b, loc,
                emitTruncFromF32(b, loc, value, biasTensor.getElementType()),
                out, i);
            return Value();
          });
    }
  }

  // prepare: D, the zeroed dQ accumulator, d alpha.
  SmallVector<Type> prepareArguments = {oType, oType, deltaType, dqAccType};
  if (learnable)
    prepareArguments.append(
        {bufferType(offsetTensor), lseType, bufferType(offsetTensor)});
  auto prepare = set.addKernel(b, "prepare", prepareArguments);
  {
    Value oFlat = flatten(b, loc, prepare.getArgument(0));
    Value doFlat = flatten(b, loc, prepare.getArgument(1));
    Value delta = prepare.getArgument(2);
    Value dqAcc = prepare.getArgument(3);
    Value offsets, lseFlat, dOffsets;
    if (learnable) {
      offsets = flatten(b, loc, prepare.getArgument(4));
      lseFlat = flatten(b, loc, prepare.getArgument(5));
      dOffsets = flatten(b, loc, prepare.getArgument(6));
    }
    Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    IndexExpr block{&b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)};
    // A block per kPrepareRows rows of a (batch entry, head), or of a head
    // for thd (whose rows are tokens).
    IndexExpr chunk = block % prepareChunks;
    IndexExpr head = (block / prepareChunks) % c.q.heads;
    IndexExpr batch = block / (prepareChunks * c.q.heads);
    Value firstRow = (chunk * kPrepareRows).value;
    Value endRow = arith::MinSIOp::create(
        b, loc, (chunk * kPrepareRows + kPrepareRows).value,
        indexConstant(b, loc, c.q.seq));
    Value alpha;
    if (learnable)
      alpha = memref::LoadOp::create(b, loc, offsets, head.value);
    SmallVector<Value> init;
    if (learnable)
      init.push_back(f32(b, loc, 0.0));
    int64_t width = vectorWidth(c.element, dv);
    auto loop = blockStrideLoop(
        b, loc, firstRow, thread, Tiling::kThreads, endRow, init,
        [&](OpBuilder &b, Location loc, Value i,
            ValueRange carried) -> SmallVector<Value> {
          IndexExpr at =
              rowOffset(c.layout, oDims, IndexExpr{&b, loc, batch.value},
                        IndexExpr{&b, loc, i}, IndexExpr{&b, loc, head.value});
          Value sum = f32(b, loc, 0.0);
          for (int64_t d = 0; d < dv; d += width) {
            Value index = (at + d).value;
            SmallVector<Value> o = loadElements(b, loc, oFlat, index, width);
            SmallVector<Value> dO = loadElements(b, loc, doFlat, index, width);
            for (int64_t e = 0; e < width; ++e)
              sum = math::FmaOp::create(
                  b, loc, arith::ExtFOp::create(b, loc, f32Type, o[e]),
                  arith::ExtFOp::create(b, loc, f32Type, dO[e]), sum);
          }
          IndexExpr row = c.thd ? IndexExpr{&b, loc, i} * c.q.heads +
                                      IndexExpr{&b, loc, head.value}
                                : (IndexExpr{&b, loc, batch.value} * c.q.heads +
                                   IndexExpr{&b, loc, head.value}) *
                                          c.q.seq +
                                      IndexExpr{&b, loc, i};
          memref::StoreOp::create(b, loc, sum, delta, row.value);
          SmallVector<Value> zeros(4, f32(b, loc, 0.0));
          for (int64_t d = 0; d < dqk; d += 4)
            storeElements(b, loc, dqAcc, (row * dqk + d).value, zeros);
          if (!learnable)
            return {};
          Value lse = memref::LoadOp::create(b, loc, lseFlat, row.value);
          Value p = math::ExpOp::create(
              b, loc, arith::SubFOp::create(b, loc, alpha, lse));
          return {arith::SubFOp::create(b, loc, carried[0],
                                        arith::MulFOp::create(b, loc, p, sum))};
        });
    if (learnable) {
      Value total =
          reduceOverLanes(b, loc, loop.getResult(0), warpSize, warpSize,
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
  }

  // zero_kv_grads (thd): keys of no sequence get zero gradients, as on the
  // CPU; flash_backward writes the others.
  gpu::GPUFuncOp zeroKV;
  if (c.thd) {
    zeroKV = set.addKernel(b, "zero_kv_grads",
                           {bufferType(tensorType(op.getDk())),
                            bufferType(tensorType(op.getDv()))});
    Value dkFlat = flatten(b, loc, zeroKV.getArgument(0));
    Value dvFlat = flatten(b, loc, zeroKV.getArgument(1));
    Value zero =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(c.element, 0));
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
  }

  // flash_backward.
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  auto tileType = [&](int64_t tileRows, int64_t columns) {
    return MemRefType::get({tileRows * (columns + Tiling::kPad)}, c.element,
                           MemRefLayoutAttrInterface(), workgroup);
  };
  std::array<Value, 7> sequenceOperandList = getSequenceOperands(op);
  SmallVector<Type> flashArguments = {qType,
                                      kType,
                                      vType,
                                      oType,
                                      lseType,
                                      deltaType,
                                      dqAccType,
                                      bufferType(tensorType(op.getDk())),
                                      bufferType(tensorType(op.getDv()))};
  for (Value operand : sequenceOperandList)
    if (operand)
      flashArguments.push_back(bufferType(tensorType(operand)));
  std::array<Value, 3> elementOperandList = getElementOperands(op);
  for (Value operand : elementOperandList)
    if (operand)
      flashArguments.push_back(bufferType(tensorType(operand)));
  if (biasTensor)
    flashArguments.push_back(bufferType(dbiasAccTensor));
  // The kernel, with dV (`withValues`), dK and dQ (`withKeys`) or all three:
  // wide heads split them over two kernels, each recomputing S, so that the
  // accumulators of one stay in registers.
  auto buildFlash = [&](StringRef name, bool withValues, bool withKeys) {
    SmallVector<Type> tiles = {tileType(Tiling::kBlockKV, dqk),
                               tileType(blockQ, dqk), tileType(blockQ, dv)};
    // dS's tile, for dQ.
    if (withKeys)
      tiles.push_back(tileType(blockQ, Tiling::kBlockKV));
    auto flash = set.addKernel(b, name, flashArguments, tiles);
    Value qFlat = flatten(b, loc, flash.getArgument(0));
    Value kFlat = flatten(b, loc, flash.getArgument(1));
    Value vFlat = flatten(b, loc, flash.getArgument(2));
    Value doFlat = flatten(b, loc, flash.getArgument(3));
    Value lseFlat = flatten(b, loc, flash.getArgument(4));
    Value delta = flash.getArgument(5);
    Value dqAcc = flash.getArgument(6);
    Value dkFlat = flatten(b, loc, flash.getArgument(7));
    Value dvFlat = flatten(b, loc, flash.getArgument(8));
    Value kTile = flash.getWorkgroupAttributions()[0];
    Value qTile = flash.getWorkgroupAttributions()[1];
    Value doTile = flash.getWorkgroupAttributions()[2];
    Value dsTile =
        withKeys ? Value(flash.getWorkgroupAttributions()[3]) : Value();
    unsigned next = 9;
    SequenceOperands sequenceOperands;
    Value slopes;
    bindSequenceOperands(b, loc, flash, next, sequenceOperandList,
                         sequenceOperands, slopes);
    ElementOperands elementOperands =
        bindElementOperands(b, loc, flash, next, elementOperandList);
    Value dbiasAcc = biasTensor ? flash.getArgument(next++) : Value();

    // Block -> (key block, key/value head, sequence: the batch entry or
    // thd's sequence); for thd each sequence gets the key blocks of all
    // tokens, and those past its length see no query.
    int64_t keyBlocks = (c.k.seq + Tiling::kBlockKV - 1) / Tiling::kBlockKV;
    int64_t queryTiles = (c.q.seq + blockQ - 1) / blockQ;
    Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    IndexExpr block{&b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x)};
    IndexExpr keyBlock = block % keyBlocks;
    IndexExpr kvHead = (block / keyBlocks) % c.k.heads;
    IndexExpr batch = block / (keyBlocks * c.k.heads);
    IndexExpr t{&b, loc, thread};
    IndexExpr warp = t / mma::kWarpSize, lane = t % mma::kWarpSize;
    IndexExpr keyBase = keyBlock * Tiling::kBlockKV;
    IndexExpr warpKeys = warp * mma::kM;
    Signed s{b, loc};

    SequenceGeometry g =
        c.sequenceGeometry(b, loc, sequenceOperands, batch.value);
    auto token = [&](OpBuilder &b, Location loc, Value start, Value position,
                     int64_t extent) {
      Signed s{b, loc};
      return s.min(s.add(start, position), s.c(extent - 1));
    };
    stageRows(b, loc, target, c, c.k, kFlat, kTile, thread, batch.value,
              kvHead.value, s.add(g.kvStart, keyBase.value),
              s.add(g.kvStart, g.lenKV), Tiling::kBlockKV, Tiling::kThreads,
              Tiling::kPad);
    target.emitAsyncCommit(b, loc);
    target.emitAsyncWait(b, loc, 0);
    gpu::BarrierOp::create(b, loc);

    // The lane's two keys.
    std::array<Value, 2> keys;
    for (int r = 0; r < 2; ++r)
      keys[r] = (keyBase + warpKeys + (lane / 4 + 8 * r)).value;
    Value blockEnd = (keyBase + Tiling::kBlockKV).value;
    Value scaleLog2 = f32(b, loc, c.scale * kLog2e);
    int64_t dkTiles = withKeys ? dqk / mma::kN : 0;
    int64_t dvTiles = withValues ? dv / mma::kN : 0;
    SmallVector<Value> init = flatTiles(zeroTiles(b, loc, dkTiles + dvTiles));

    auto headLoop = scf::ForOp::create(
        b, loc, s.c(0), s.c(group), s.c(1), init,
        [&](OpBuilder &b, Location loc, Value member, ValueRange carried) {
          IndexExpr head = kvHead * group + IndexExpr{&b, loc, member};
          // The row of query `query` in the LSE, D and dQ's accumulator:
          // [b, h, s_q], or [t, h] (clamped into the tensor).
          auto rowIndex = [&](OpBuilder &b, Location loc, Value query) {
            Value at = token(b, loc, g.qStart, query, c.q.seq);
            if (c.thd)
              return IndexExpr{&b, loc, at} * c.q.heads + head;
            return (batch * c.q.heads + head) * c.q.seq +
                   IndexExpr{&b, loc, at};
          };
          Value slopeLog2 = c.loadSlopeLog2(b, loc, slopes, batch, head);
          // With sequence lengths, only the query tiles of the sequence, and
          // none for a key block past its keys (their gradients stay zero).
          Value tileEnd = indexConstant(b, loc, queryTiles);
          if (c.padding) {
            Signed s{b, loc};
            Value tilesOfSequence = arith::DivSIOp::create(
                b, loc, s.add(g.lenQ, s.c(blockQ - 1)), s.c(blockQ));
            tileEnd = arith::SelectOp::create(
                b, loc,
                s.compare(arith::CmpIPredicate::slt, keyBase.value, g.lenKV),
                tilesOfSequence, s.c(0));
          }
          auto tileLoop = scf::ForOp::create(
              b, loc, indexConstant(b, loc, 0), tileEnd,
              indexConstant(b, loc, 1), carried,
              [&](OpBuilder &b, Location loc, Value qt, ValueRange carried) {
                Signed s{b, loc};
                IndexExpr q0 = IndexExpr{&b, loc, qt} * blockQ;
                Value lastRow =
                    s.min((q0 + (blockQ - 1)).value, s.c(c.q.seq - 1));
                if (c.padding)
                  lastRow = arith::MaxSIOp::create(
                      b, loc, q0.value,
                      s.min(lastRow,
                            arith::SubIOp::create(b, loc, g.lenQ, s.c(1))));
                // Rows see growing key ranges: the tile's first row's lower
                // bound and its last row's upper bound enclose them all.
                Value lo = c.visibleKeys(b, loc, q0.value, g).lo;
                Value hi = c.visibleKeys(b, loc, lastRow, g).hi;
                Value seen = arith::AndIOp::create(
                    b, loc, s.compare(arith::CmpIPredicate::slt, lo, blockEnd),
                    s.compare(arith::CmpIPredicate::sgt, hi, keyBase.value));
                if (c.padding)
                  seen = arith::AndIOp::create(
                      b, loc, seen,
                      s.compare(arith::CmpIPredicate::slt, q0.value, g.lenQ));
                auto branch =
                    scf::IfOp::create(b, loc, carried.getTypes(), seen,
                                      /*withElseRegion=*/true);
                {
                  OpBuilder::InsertionGuard guard(b);
                  b.setInsertionPointToStart(branch.elseBlock());
                  scf::YieldOp::create(b, loc, carried);
                  b.setInsertionPointToStart(branch.thenBlock());
                }
                OpBuilder::InsertionGuard guard(b);
                b.setInsertionPointToStart(branch.thenBlock());
                Tiles dK = unflatTiles(carried.take_front(dkTiles * 4));
                Tiles dV = unflatTiles(carried.drop_front(dkTiles * 4));

                // The previous tile is done with Q, dO and dS.
                gpu::BarrierOp::create(b, loc);
                Value first = s.add(g.qStart, q0.value);
                Value limit = s.add(g.qStart, g.lenQ);
                stageRows(b, loc, target, c, c.q, qFlat, qTile, thread,
                          batch.value, head.value, first, limit, blockQ,
                          Tiling::kThreads, Tiling::kPad);
                stageRows(b, loc, target, c, oDims, doFlat, doTile, thread,
                          batch.value, head.value, first, limit, blockQ,
                          Tiling::kThreads, Tiling::kPad);
                target.emitAsyncCommit(b, loc);
                target.emitAsyncWait(b, loc, 0);
                gpu::BarrierOp::create(b, loc);
                IndexExpr l{&b, loc, lane.value};

                // dP^T = V dO^T for the warp's 16 keys (V rows from global
                // memory, keys clamped into the sequence: their P is
                // zero).
                Tiles dP;
                if (withKeys)
                  dP = productsWithStaged(
                      b, loc, target,
                      [&](int64_t kd) {
                        SmallVector<Value> fragment;
                        for (int i = 0; i < mma::kAElements; i += 2) {
                          mma::Coord<IndexExpr> e = mma::aElement(l, i);
                          Value key = token(b, loc, g.kvStart,
                                            (keyBase + warpKeys + e.row).value,
                                            c.k.seq);
                          IndexExpr at =
                              rowOffset(c.layout, c.v, batch,
                                        IndexExpr{&b, loc, key}, kvHead) +
                              e.col + kd;
                          SmallVector<Value> pair =
                              loadElements(b, loc, vFlat, at.value, 2);
                          fragment.append(pair.begin(), pair.end());
                        }
                        return fragment;
                      },
                      doTile, blockQ, dv, l);
                // S^T = K Q^T (K from the staged tile).
                Tiles scores = productsWithStaged(
                    b, loc, target,
                    [&](int64_t kk) {
                      return loadAFragment(b, loc, target, kTile,
                                           dqk + Tiling::kPad, l, warpKeys,
                                           IndexExpr{&b, loc, s.c(kk)});
                    },
                    qTile, blockQ, dqk, l);
                // P^T and dS^T, zero where the query does not see the key.
                Tiles p = scores, dS = scores;
                Value zero = f32(b, loc, 0.0), log2e = f32(b, loc, kLog2e);
                for (int64_t ni = 0; ni < blockQ / mma::kN; ++ni) {
                  for (int j = 0; j < 2; ++j) {
                    Value query = (q0 + ni * mma::kN + (l % 4) * 2 + j).value;
                    Value inside =
                        s.compare(arith::CmpIPredicate::slt, query, g.lenQ);
                    VisibleKeys visibleKeys = c.visibleKeys(b, loc, query, g);
                    Value qLo = visibleKeys.lo, qHi = visibleKeys.hi;
                    Value at = rowIndex(b, loc, query).value;
                    Value lse = arith::MulFOp::create(
                        b, loc, memref::LoadOp::create(b, loc, lseFlat, at),
                        log2e);
                    Value d = memref::LoadOp::create(b, loc, delta, at);
                    Value dropoutRow;
                    if (elementOperands.rngState)
                      dropoutRow =
                          dropoutRowState(b, loc, c, elementOperands, g,
                                          batch.value, head.value, query);
                    for (int r = 0; r < 2; ++r) {
                      int i = 2 * r + j;
                      Value visible =
                          applyMask(b, loc, c, elementOperands,
                                    arith::AndIOp::create(
                                        b, loc, inside,
                                        arith::AndIOp::create(
                                            b, loc,
                                            s.compare(arith::CmpIPredicate::sge,
                                                      keys[r], qLo),
                                            s.compare(arith::CmpIPredicate::slt,
                                                      keys[r], qHi))),
                                    batch.value, head.value, query, keys[r]);
                      Value dot = scores[ni][i];
                      if (elementOperands.bias)
                        dot = arith::AddFOp::create(
                            b, loc, dot,
                            loadBias(b, loc, c, elementOperands, batch.value,
                                     head.value, query, keys[r]));
                      Value logit =
                          arith::MulFOp::create(b, loc, dot, scaleLog2);
                      if (elementOperands.bias)
                        logit = clampToFinite(b, loc, logit);
                      if (slopeLog2)
                        logit = subtractAlibi(b, loc, logit, slopeLog2, keys[r],
                                              visibleKeys.diagonal);
                      Value e = math::Exp2Op::create(
                          b, loc, arith::SubFOp::create(b, loc, logit, lse));
                      // With dropout's factor f (0 or 1 / (1 - p)): V's
                      // weight is P f, and P's gradient dP f.
                      Value weight = e,
                            gradP = dP.empty() ? Value() : dP[ni][i];
                      if (dropoutRow) {
                        Value keep =
                            dropoutKeep(b, loc, c, g, dropoutRow, keys[r]);
                        Value factor = arith::SelectOp::create(
                            b, loc, keep, f32(b, loc, 1.0 / (1.0 - c.dropout)),
                            zero);
                        weight = arith::MulFOp::create(b, loc, e, factor);
                        if (gradP)
                          gradP = arith::MulFOp::create(b, loc, gradP, factor);
                      }
                      p[ni][i] = arith::SelectOp::create(b, loc, visible,
                                                         weight, zero);
                      if (!withKeys)
                        continue;
                      Value grad = arith::MulFOp::create(
                          b, loc, e, arith::SubFOp::create(b, loc, gradP, d));
                      dS[ni][i] =
                          arith::SelectOp::create(b, loc, visible, grad, zero);
                      // dbias += dS (the scale applied by store_dbias).
                      if (dbiasAcc) {
                        auto add = scf::IfOp::create(b, loc, visible,
                                                     /*withElseRegion=*/false);
                        OpBuilder::InsertionGuard guard(b);
                        b.setInsertionPointToStart(add.thenBlock());
                        atomicAdd(b, loc, grad, dbiasAcc,
                                  c.broadcastIndex(b, loc, c.biasShape,
                                                   batch.value, head.value,
                                                   query, keys[r]));
                      }
                    }
                  }
                }

                // dV += P^T dO and dK += dS^T Q, 16 queries per step.
                IndexExpr allColumns{&b, loc, s.c(0)};
                for (int step = 0; step < blockQ / mma::kK; ++step) {
                  if (withValues)
                    accumulateProducts(
                        b, loc, target,
                        accumulatorsAsA(b, loc, p, step, c.element), doTile,
                        dv + Tiling::kPad, l, step, allColumns, dv, dV);
                  if (withKeys)
                    accumulateProducts(
                        b, loc, target,
                        accumulatorsAsA(b, loc, dS, step, c.element), qTile,
                        dqk + Tiling::kPad, l, step, allColumns, dqk, dK);
                }
                if (withKeys) {

                  // dS, rounded, into the shared [query][key] tile.
                  int64_t dsStride = Tiling::kBlockKV + Tiling::kPad;
                  for (int64_t ni = 0; ni < blockQ / mma::kN; ++ni) {
                    for (int i = 0; i < mma::kCElements; ++i) {
                      mma::Coord<IndexExpr> e = mma::cElement(l, i);
                      // The accumulator's row is the key, its column the
                      // query.
                      IndexExpr at =
                          (e.col + ni * mma::kN) * dsStride + warpKeys + e.row;
                      memref::StoreOp::create(
                          b, loc,
                          arith::TruncFOp::create(b, loc, c.element, dS[ni][i]),
                          dsTile, at.value);
                    }
                  }
                  gpu::BarrierOp::create(b, loc);

                  // dQ += dS K over the warp's rows and column tiles, all
                  // keys. A tile past dqk (a warp with fewer tiles) reads
                  // the last one and adds nothing.
                  IndexExpr dqRow = Tiling::dqRow(warp, widest);
                  int64_t dqTiles =
                      Tiling::dqTiles(widest, static_cast<int>(dqk));
                  SmallVector<Value> dqColumns, dqInside;
                  for (int64_t nd = 0; nd < dqTiles; ++nd) {
                    Value column =
                        Tiling::dqColumn(warp, static_cast<int>(nd), widest,
                                         static_cast<int>(dqk))
                            .value;
                    dqInside.push_back(
                        s.compare(arith::CmpIPredicate::slt, column, s.c(dqk)));
                    dqColumns.push_back(s.min(column, s.c(dqk - mma::kN)));
                  }
                  Tiles dQ = zeroTiles(b, loc, dqTiles);
                  for (int step = 0; step < Tiling::kBlockKV / mma::kK;
                       ++step) {
                    SmallVector<Value> a = loadAFragment(
                        b, loc, target, dsTile, dsStride, l, dqRow,
                        IndexExpr{&b, loc, s.c(step * mma::kK)});
                    for (int64_t nd = 0; nd < dqTiles; ++nd) {
                      Tiles one = {dQ[nd]};
                      accumulateProducts(
                          b, loc, target, a, kTile, dqk + Tiling::kPad, l, step,
                          IndexExpr{&b, loc, dqColumns[nd]}, mma::kN, one);
                      dQ[nd] = one[0];
                    }
                  }
                  for (int r = 0; r < 2; ++r) {
                    IndexExpr query = q0 + dqRow + (l / 4 + 8 * r);
                    Value inside = s.compare(arith::CmpIPredicate::slt,
                                             query.value, g.lenQ);
                    IndexExpr rowStart = rowIndex(b, loc, query.value) * dqk;
                    for (int64_t nd = 0; nd < dqTiles; ++nd) {
                      auto add = scf::IfOp::create(
                          b, loc,
                          arith::AndIOp::create(b, loc, inside, dqInside[nd]),
                          /*withElseRegion=*/false);
                      OpBuilder::InsertionGuard guard(b);
                      b.setInsertionPointToStart(add.thenBlock());
                      for (int i = 2 * r; i < 2 * r + 2; ++i) {
                        mma::Coord<IndexExpr> e = mma::cElement(l, i);
                        atomicAdd(b, loc, dQ[nd][i], dqAcc,
                                  (rowStart +
                                   IndexExpr{&b, loc, dqColumns[nd]} + e.col)
                                      .value);
                      }
                    }
                  }
                }
                SmallVector<Value> next = flatTiles(dK);
                SmallVector<Value> nextV = flatTiles(dV);
                next.append(nextV.begin(), nextV.end());
                scf::YieldOp::create(b, loc, next);
                b.setInsertionPointAfter(branch);
                scf::YieldOp::create(b, loc, branch.getResults());
              });
          scf::YieldOp::create(b, loc, tileLoop.getResults());
        });

    // dK = scale * accumulator and dV, for the keys in the sequence.
    Value scale = f32(b, loc, c.scale);
    // Every key of the tensor is written (keys past a padded length get
    // zero gradients), but a thd sequence's keys only up to its length: the
    // tokens after it are another sequence's (or zero_kv_grads').
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
          mma::Coord<IndexExpr> e = mma::cElement(lane, 2 * r);
          IndexExpr at =
              rowOffset(c.layout, dims, batch,
                        IndexExpr{&b, loc, s.add(g.kvStart, keys[r])}, kvHead) +
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
    return flash;
  };
  bool split = widest > 64;
  SmallVector<gpu::GPUFuncOp> flashKernels;
  if (split) {
    flashKernels.push_back(buildFlash("flash_backward_dv", true, false));
    flashKernels.push_back(buildFlash("flash_backward_dk_dq", false, true));
  } else {
    flashKernels.push_back(buildFlash("flash_backward", true, true));
  }

  // store_dq: dQ = scale * accumulator in Q's layout.
  auto storeDq = set.addKernel(b, "store_dq", {dqAccType, qType});
  {
    Value dqAcc = storeDq.getArgument(0);
    Value dqFlat = flatten(b, loc, storeDq.getArgument(1));
    Value scale = f32(b, loc, c.scale);
    int64_t chunks = dqk / 8;
    gridStrideLoop(
        b, loc, rows * chunks, Value(),
        [&](OpBuilder &b, Location loc, Value index, Value) {
          IndexExpr e{&b, loc, index};
          IndexExpr chunk = e % chunks, row = e / chunks;
          // (batch, head, position), or (token, head) for thd.
          IndexExpr position = c.thd ? row / c.q.heads : row % c.q.seq;
          IndexExpr head =
              c.thd ? row % c.q.heads : (row / c.q.seq) % c.q.heads;
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
  }
  set.finish();

  OpBuilder host(op);
  Value q = readBuffer(host, loc, op.getQ());
  Value k = readBuffer(host, loc, op.getK());
  Value v = readBuffer(host, loc, op.getV());
  Value o = readBuffer(host, loc, op.getO());
  Value dO = readBuffer(host, loc, op.getDO());
  Value lse = readBuffer(host, loc, op.getLse());
  // Temporaries of the launches (not results).
  Value delta = allocateOutput(host, loc, deltaTensor);
  Value dqAcc = allocateOutput(host, loc, dqAccTensor);
  Value dq = allocateOutput(host, loc, tensorType(op.getDq()));
  Value dk = allocateOutput(host, loc, tensorType(op.getDk()));
  Value dvOut = allocateOutput(host, loc, tensorType(op.getDv()));
  SmallVector<Value> outputs = {dq, dk, dvOut};
  Value dbiasAcc, dbias;
  if (biasTensor) {
    dbiasAcc = allocateOutput(host, loc, dbiasAccTensor);
    dbias = allocateOutput(host, loc, biasTensor);
    set.launch(host, zeroDbias, blocksFor(biasTensor.getNumElements()),
               kBlockSize, {dbiasAcc});
    outputs.push_back(dbias);
  }
  SmallVector<Value> prepareOperands = {o, dO, delta, dqAcc};
  if (learnable) {
    Value dOffsets = allocateOutput(host, loc, offsetTensor);
    set.launch(host, zeroOffsets, 1, kBlockSize, {dOffsets});
    prepareOperands.append(
        {readBuffer(host, loc, op.getSoftmaxOffset()), lse, dOffsets});
    outputs.push_back(dOffsets);
  }
  set.launch(host, prepare, groups * c.q.heads * prepareChunks,
             Tiling::kThreads, prepareOperands);
  if (zeroKV)
    set.launch(host, zeroKV, blocksFor(c.k.seq * c.k.heads), kBlockSize,
               {dk, dvOut});
  int64_t keyBlocks = (c.k.seq + Tiling::kBlockKV - 1) / Tiling::kBlockKV;
  SmallVector<Value> flashOperands = {q,     k,     v,  dO,   lse,
                                      delta, dqAcc, dk, dvOut};
  for (Value operand : sequenceOperandList)
    if (operand)
      flashOperands.push_back(readBuffer(host, loc, operand));
  for (Value operand : elementOperandList)
    if (operand)
      flashOperands.push_back(readBuffer(host, loc, operand));
  if (dbiasAcc)
    flashOperands.push_back(dbiasAcc);
  for (gpu::GPUFuncOp flash : flashKernels)
    set.launch(host, flash, keyBlocks * c.k.heads * c.sequences,
               Tiling::kThreads, flashOperands);
  set.launch(host, storeDq, blocksFor(rows * (dqk / 8)), kBlockSize,
             {dqAcc, dq});
  if (storeDbias)
    set.launch(host, storeDbias, blocksFor(biasTensor.getNumElements()),
               kBlockSize, {dbiasAcc, dbias});
  replaceWithOutputs(host, op, outputs);
  return success();
}
