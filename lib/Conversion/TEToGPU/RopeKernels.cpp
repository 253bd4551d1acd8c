//===- RopeKernels.cpp - te.rope and te.rope_backward on a GPU ------------===//
//
// Three kernels, as the host lowering's passes: the cos and sin tables of
// freqs ([s2, d2] in f32, RopeMath.h's values, so that both targets rotate
// by the same numbers), the freqs row of every token (sbhd/bshd per batch
// and index; thd per token, by a search of cu_seqlens, -1 past the last
// sequence), then the rotation: each thread a 16-byte vector of channels
// (all rotating or all passing through, since the vector width divides
// d2/2, d2 and d), the partner channels a second vector load, or, for
// interleaved pairs, the same vector. Channels that do not rotate are
// copied bit for bit. Every index is clamped into its buffer, so bad start
// positions or cu_seqlens (reported by te-insert-checks) never read out of
// bounds.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Conversion/TECommon/RopeMath.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <numeric>

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

namespace {

/// i32 and index arithmetic in a kernel body.
struct Ints {
  OpBuilder &b;
  Location loc;

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value index(int64_t v) { return indexConstant(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, index(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, index(y));
  }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  Value toI32(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
  }
  /// The i32 `v` clamped into [0, size).
  Value clamp(Value v, int64_t size) {
    Value low = arith::MaxSIOp::create(b, loc, v, i32(0));
    return arith::MinSIOp::create(b, loc, low, i32(size - 1));
  }
  /// Entry `i` (an index clamped into the vector) of the 1-D `buffer`.
  Value at(Value buffer, Value i, int64_t size) {
    Value clamped = arith::MinUIOp::create(b, loc, i, index(size - 1));
    return memref::LoadOp::create(b, loc, buffer, clamped);
  }
};

/// One te.rope or te.rope_backward: its shapes and attributes, and a
/// builder for each of its three kernels.
struct RopeLowering {
  bool backward, thd, interleaved, hasStart, hasCu;
  RankedTensorType type;
  int64_t s2, d2, d, headsTimesD, cpSize, cpRank, sequences, s, batch, tokens;
  unsigned seqDim;
  /// Channels per thread: a divisor of d, d2 and (not interleaved) d2 / 2,
  /// so that a vector rotates whole with its partners.
  int64_t width, vectors;
  /// Interleaved pairs (2m, 2m + 1) lie within a vector of two or more.
  bool pairsInVector;
  RankedTensorType tableType, positionsType;

  template <typename OpT> static RopeLowering of(OpT op) {
    RopeLowering r;
    r.backward = std::is_same_v<OpT, RopeBackwardOp>;
    r.type = cast<RankedTensorType>(op.getInput().getType());
    auto freqsType = cast<RankedTensorType>(op.getFreqs().getType());
    r.s2 = freqsType.getDimSize(0);
    r.d2 = freqsType.getDimSize(3);
    r.d = r.type.getShape().back();
    r.headsTimesD = r.type.getShape().drop_back().back() * r.d;
    r.thd = op.isThd();
    r.interleaved = op.getInterleaved();
    r.cpSize = op.getCpSizeAttr().getInt();
    r.cpRank = op.getCpRankAttr().getInt();
    r.seqDim = op.getSequenceDim();
    r.sequences = op.getNumSequences();
    r.s = r.type.getDimSize(r.seqDim);
    r.batch = r.thd ? 1 : r.type.getDimSize(r.seqDim == 0 ? 1 : 0);
    r.tokens = r.thd ? r.type.getDimSize(0) : r.batch * r.s;
    r.hasStart = static_cast<bool>(op.getStartPositions());
    r.hasCu = static_cast<bool>(op.getCuSeqlens());
    r.width = vectorWidth(
        r.type.getElementType(),
        std::gcd(r.d, r.interleaved ? r.d2 : std::max<int64_t>(r.d2 / 2, 1)));
    r.pairsInVector = r.interleaved && r.width >= 2;
    r.vectors = r.type.getNumElements() / r.width;
    MLIRContext *context = op.getContext();
    r.tableType =
        RankedTensorType::get({r.s2 * r.d2}, Float32Type::get(context));
    r.positionsType =
        RankedTensorType::get({r.tokens}, IntegerType::get(context, 32));
    return r;
  }

  /// rope_tables(freqs, cos, sin).
  gpu::GPUFuncOp addTables(KernelSet &set, OpBuilder &b, Location loc,
                           MemRefType freqsType) const {
    auto kernel = set.addKernel(
        b, "rope_tables",
        {freqsType, bufferType(tableType), bufferType(tableType)});
    Value freqs = flatten(b, loc, kernel.getArgument(0));
    gridStrideLoop(
        b, loc, s2 * d2, Value(),
        [&](OpBuilder &b, Location loc, Value i, Value) -> Value {
          auto [sinValue, cosValue] =
              emitRopeSinCos(b, loc, memref::LoadOp::create(b, loc, freqs, i));
          memref::StoreOp::create(b, loc, cosValue, kernel.getArgument(1), i);
          memref::StoreOp::create(b, loc, sinValue, kernel.getArgument(2), i);
          return Value();
        });
    return kernel;
  }

  /// rope_positions([cu_seqlens], [start_positions], positions): the freqs
  /// row of every token, batch-major (batch * s + index) for sbhd/bshd.
  gpu::GPUFuncOp addPositions(KernelSet &set, OpBuilder &b, Location loc,
                              MemRefType cuType, MemRefType startType) const {
    SmallVector<Type> arguments;
    if (hasCu)
      arguments.push_back(cuType);
    if (hasStart)
      arguments.push_back(startType);
    arguments.push_back(bufferType(positionsType));
    auto kernel = set.addKernel(b, "rope_positions", arguments);
    unsigned next = 0;
    Value cu = hasCu ? kernel.getArgument(next++) : Value();
    Value starts = hasStart ? kernel.getArgument(next++) : Value();
    Value positions = kernel.getArgument(next++);
    gridStrideLoop(
        b, loc, tokens, Value(),
        [&](OpBuilder &b, Location loc, Value token, Value) -> Value {
          Value p = thd ? packedPosition(b, loc, cu, starts, token)
                        : paddedPosition(b, loc, starts, token);
          memref::StoreOp::create(b, loc, p, positions, token);
          return Value();
        });
    return kernel;
  }

  /// thd: the sequence holding the token (the last with begin <= t), its
  /// index in it and its start position; -1 past the last sequence.
  Value packedPosition(OpBuilder &b, Location loc, Value cu, Value starts,
                       Value token) const {
    Ints i{b, loc};
    Value t = i.toI32(token);
    Value cp = i.i32(cpSize);
    int64_t entries = sequences + 1;
    auto search = scf::ForOp::create(
        b, loc, i.index(0), i.index(sequences), i.index(1),
        ValueRange{i.i32(-1), i.i32(0), i.i32(0)},
        [&](OpBuilder &b, Location loc, Value seq, ValueRange found) {
          Ints j{b, loc};
          Value begin =
              arith::DivSIOp::create(b, loc, j.at(cu, seq, entries), cp);
          Value end = arith::DivSIOp::create(
              b, loc, j.at(cu, j.add(seq, j.index(1)), entries), cp);
          Value inside = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, t,
                                    begin),
              j.lt(t, end));
          scf::YieldOp::create(
              b, loc,
              ValueRange{j.select(inside, j.toI32(seq), found[0]),
                         j.select(inside, begin, found[1]),
                         j.select(inside, j.sub(end, begin), found[2])});
        });
    Value seq = search.getResult(0);
    Value start = i.i32(0);
    if (starts)
      start =
          i.at(starts, i.toIndex(arith::MaxSIOp::create(b, loc, seq, i.i32(0))),
               sequences);
    Value p = emitRopePosition(b, loc, i.sub(t, search.getResult(1)),
                               search.getResult(2), start, cpSize, cpRank);
    return i.select(i.lt(seq, i.i32(0)), i.i32(-1), i.clamp(p, s2));
  }

  /// sbhd/bshd: token = batch * s + index.
  Value paddedPosition(OpBuilder &b, Location loc, Value starts,
                       Value token) const {
    Ints i{b, loc};
    Value batchIndex = i.div(token, s);
    Value sId = i.toI32(i.rem(token, s));
    Value start = starts ? i.at(starts, batchIndex, batch) : i.i32(0);
    return i.clamp(
        emitRopePosition(b, loc, sId, i.i32(s), start, cpSize, cpRank), s2);
  }

  /// rope / rope_backward(input, cos, sin, positions, output).
  gpu::GPUFuncOp addRotation(KernelSet &set, OpBuilder &b, Location loc) const {
    auto kernel = set.addKernel(b, backward ? "rope_backward" : "rope",
                                {bufferType(type), bufferType(tableType),
                                 bufferType(tableType),
                                 bufferType(positionsType), bufferType(type)});
    Value input = flatten(b, loc, kernel.getArgument(0));
    Value output = flatten(b, loc, kernel.getArgument(4));
    gridStrideLoop(
        b, loc, vectors, Value(),
        [&](OpBuilder &b, Location loc, Value v, Value) -> Value {
          Ints i{b, loc};
          Value first = i.mul(v, i.index(width));
          Value p = memref::LoadOp::create(b, loc, kernel.getArgument(3),
                                           tokenOf(b, loc, first));
          storeElements(b, loc, output, first,
                        rotateVector(b, loc, input, kernel.getArgument(1),
                                     kernel.getArgument(2), first, p));
          return Value();
        });
    return kernel;
  }

  /// The token (positions' index) of the element `first`.
  Value tokenOf(OpBuilder &b, Location loc, Value first) const {
    Ints i{b, loc};
    Value outer = i.div(first, headsTimesD);
    if (thd)
      return outer;
    Value sIndex = seqDim == 0 ? i.div(outer, batch) : i.rem(outer, s);
    Value bIndex = seqDim == 0 ? i.rem(outer, batch) : i.div(outer, s);
    return i.add(i.mul(bIndex, i.index(s)), sIndex);
  }

  /// The vector of channels at element `first` of a token whose freqs row
  /// is `p`, rotated (or copied bit for bit where it does not rotate).
  SmallVector<Value> rotateVector(OpBuilder &b, Location loc, Value input,
                                  Value cosTable, Value sinTable, Value first,
                                  Value p) const {
    Ints i{b, loc};
    Value j0 = i.rem(first, d);
    Value rotates = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j0,
                                          i.index(d2));
    if (thd)
      rotates = arith::AndIOp::create(
          b, loc, rotates,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, p,
                                i.i32(0)));
    // Indices for the reads, in bounds whether or not it rotates.
    Value j = i.select(rotates, j0, i.index(0));
    Value row = i.toIndex(i.clamp(p, s2));
    Value firstHalf, k;
    if (pairsInVector) {
      firstHalf = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      k = j;
    } else if (interleaved) {
      firstHalf = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        i.rem(j, 2), i.index(0));
      k = i.select(firstHalf, i.add(j, i.index(1)), i.sub(j, i.index(1)));
    } else {
      firstHalf = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j,
                                        i.index(d2 / 2));
      k = i.select(firstHalf, i.add(j, i.index(d2 / 2)),
                   i.sub(j, i.index(d2 / 2)));
    }
    SmallVector<Value> raw = loadElements(b, loc, input, first, width);
    SmallVector<Value> partnerRaw =
        pairsInVector
            ? raw
            : loadElements(b, loc, input, i.add(i.sub(first, j0), k), width);
    Value tableRow = i.mul(row, i.index(d2));
    SmallVector<Value> cosValues =
        loadElements(b, loc, cosTable, i.add(tableRow, j), width);
    SmallVector<Value> sinValues = loadElements(
        b, loc, sinTable, i.add(tableRow, backward ? k : j), width);
    SmallVector<Value> out;
    for (int64_t c = 0; c < width; ++c) {
      Value x = emitExtToF32(b, loc, raw[c]);
      Value partner, isFirst = firstHalf, sine = sinValues[c];
      if (pairsInVector) {
        partner = emitExtToF32(b, loc, raw[c ^ 1]);
        isFirst =
            arith::ConstantIntOp::create(b, loc, b.getI1Type(), c % 2 == 0);
        if (backward)
          sine = sinValues[c ^ 1];
      } else {
        partner = emitExtToF32(b, loc, partnerRaw[c]);
      }
      Value y = emitRopeRotation(b, loc, backward, x, partner, isFirst,
                                 cosValues[c], sine);
      out.push_back(i.select(
          rotates, emitTruncFromF32(b, loc, y, type.getElementType()), raw[c]));
    }
    return out;
  }
};

template <typename OpT>
LogicalResult lowerRope(RewriterBase &rewriter, OpT op,
                        const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  RopeLowering r = RopeLowering::of(op);
  KernelSet set(op, r.backward ? "rope_backward" : "rope", target);
  OpBuilder b(op.getContext());
  auto tables = r.addTables(set, b, loc, bufferTypeOf(op.getFreqs()));
  auto positionsKernel = r.addPositions(
      set, b, loc, r.hasCu ? bufferTypeOf(op.getCuSeqlens()) : MemRefType(),
      r.hasStart ? bufferTypeOf(op.getStartPositions()) : MemRefType());
  auto rotate = r.addRotation(set, b, loc);
  set.finish();

  OpBuilder &host = rewriter;
  Value cosBuffer = allocateOutput(host, loc, r.tableType);
  Value sinBuffer = allocateOutput(host, loc, r.tableType);
  Value positions = allocateOutput(host, loc, r.positionsType);
  Value out = allocateOutput(host, loc, r.type);
  set.launch(host, tables, blocksFor(r.s2 * r.d2), kBlockSize,
             {readBuffer(host, loc, op.getFreqs()), cosBuffer, sinBuffer});
  SmallVector<Value> positionOperands;
  if (r.hasCu)
    positionOperands.push_back(readBuffer(host, loc, op.getCuSeqlens()));
  if (r.hasStart)
    positionOperands.push_back(readBuffer(host, loc, op.getStartPositions()));
  positionOperands.push_back(positions);
  set.launch(host, positionsKernel, blocksFor(r.tokens), kBlockSize,
             positionOperands);
  set.launch(host, rotate, blocksFor(r.vectors), kBlockSize,
             {readBuffer(host, loc, op.getInput()), cosBuffer, sinBuffer,
              positions, out});
  replaceWithOutputs(rewriter, op, {out});
  return success();
}

} // namespace

bool gpu_lowering::isRopeOp(Operation *op) {
  return isa<RopeOp, RopeBackwardOp>(op);
}

LogicalResult gpu_lowering::lowerRopeOp(RewriterBase &rewriter, Operation *op,
                                        const GPUTargetInfo &target) {
  if (auto forward = dyn_cast<RopeOp>(op))
    return lowerRope(rewriter, forward, target);
  return lowerRope(rewriter, cast<RopeBackwardOp>(op), target);
}
