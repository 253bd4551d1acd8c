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
// te.qkv_rope and its backward run the same three kernels for the query
// and the key part, each reading (forward) or writing (backward) its part
// of the fused [.., h, q + k + v] tensor in place, and one copy kernel for
// the value part: no slice of the fused tensor is ever materialized.
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

/// Where a part of te.qkv_rope's fused tensor lies in it: element e of the
/// part, whose rows of `rowElements` are groups of `channels` (one group
/// per head of the fused tensor), is element
/// outer * fusedRow + group * fusedChannels + offset + c of the fused one.
/// Without a fused tensor (te.rope) an element is where it is.
struct FusedPart {
  int64_t rowElements = 0, channels = 0, fusedRow = 0, fusedChannels = 0,
          offset = 0;

  explicit operator bool() const { return channels != 0; }

  Value at(OpBuilder &b, Location loc, Value e) const {
    if (!*this)
      return e;
    Ints i{b, loc};
    Value outer = i.div(e, rowElements);
    Value within = i.rem(e, rowElements);
    Value group = i.div(within, channels);
    return i.add(i.add(i.mul(outer, i.index(fusedRow)),
                       i.mul(group, i.index(fusedChannels))),
                 i.add(i.index(offset), i.rem(within, channels)));
  }

  /// Part `part` ([q, k, v] of `split`) of the fused [A, B, h, q + k + v].
  static FusedPart of(RankedTensorType fused, ArrayRef<int64_t> split,
                      unsigned part) {
    FusedPart f;
    int64_t heads = fused.getDimSize(2);
    f.channels = split[part];
    f.rowElements = heads * f.channels;
    f.fusedChannels = fused.getDimSize(3);
    f.fusedRow = heads * f.fusedChannels;
    for (unsigned p = 0; p < part; ++p)
      f.offset += split[p];
    return f;
  }
};

/// One te.rope or te.rope_backward, or the query or key part of a
/// te.qkv_rope or its backward: its shapes and attributes, and a builder
/// for each of its three kernels.
struct RopeLowering {
  bool backward, thd, interleaved, hasStart, hasCu;
  /// The rotated tensor as heads: [.., h', d].
  RankedTensorType type;
  /// The buffers the rotation reads and writes: `type`'s, or for a part of
  /// te.qkv_rope the fused tensor on its side (`fused` says where the part
  /// lies in it) and the part's own result or gradient on the other.
  RankedTensorType inputType, outputType;
  FusedPart fused;
  /// Prefixes the kernels' names (a part's: "q_" or "k_").
  std::string prefix;
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
    r.thd = op.isThd();
    r.interleaved = op.getInterleaved();
    r.hasStart = static_cast<bool>(op.getStartPositions());
    r.hasCu = static_cast<bool>(op.getCuSeqlens());
    r.sequences = op.getNumSequences();
    auto type = cast<RankedTensorType>(op.getInput().getType());
    r.inputType = r.outputType = type;
    r.init(type, cast<RankedTensorType>(op.getFreqs().getType()),
           op.getSequenceDim(), op.getCpSizeAttr().getInt(),
           op.getCpRankAttr().getInt());
    return r;
  }

  /// Part `part` (0: queries, 1: keys) of a te.qkv_rope or its backward,
  /// whose fused tensor is `fusedType`, rotated by `freqs`; its own result
  /// or gradient is `partType`.
  template <typename OpT>
  static RopeLowering ofQkvPart(OpT op, unsigned part,
                                RankedTensorType fusedType,
                                RankedTensorType partType, Value freqs) {
    RopeLowering r;
    r.backward = std::is_same_v<OpT, QkvRopeBackwardOp>;
    r.thd = false;
    r.interleaved = op.getInterleaved();
    r.hasCu = false;
    r.sequences = 0;
    if constexpr (std::is_same_v<OpT, QkvRopeOp>)
      r.hasStart = static_cast<bool>(op.getStartPositions());
    else
      r.hasStart = false;
    ArrayRef<int64_t> split = op.getSplit();
    r.fused = FusedPart::of(fusedType, split, part);
    r.inputType = r.backward ? partType : fusedType;
    r.outputType = r.backward ? fusedType : partType;
    r.prefix = part == 0 ? "q_" : "k_";
    // The part's heads of d (= v) channels, as te.rope rotates them.
    int64_t d = split[2];
    auto heads =
        RankedTensorType::get({fusedType.getDimSize(0), fusedType.getDimSize(1),
                               fusedType.getDimSize(2) * split[part] / d, d},
                              fusedType.getElementType());
    r.init(heads, cast<RankedTensorType>(freqs.getType()), op.getSequenceDim(),
           op.getCpSizeAttr().getInt(), op.getCpRankAttr().getInt());
    return r;
  }

  /// The shapes of rotating `heads` ([.., h', d]) by `freqsType` with the
  /// sequence in dimension `sequenceDim`.
  void init(RankedTensorType heads, RankedTensorType freqsType,
            unsigned sequenceDim, int64_t cpSizeValue, int64_t cpRankValue) {
    type = heads;
    s2 = freqsType.getDimSize(0);
    d2 = freqsType.getDimSize(3);
    d = type.getShape().back();
    headsTimesD = type.getShape().drop_back().back() * d;
    cpSize = cpSizeValue;
    cpRank = cpRankValue;
    seqDim = sequenceDim;
    s = type.getDimSize(seqDim);
    batch = thd ? 1 : type.getDimSize(seqDim == 0 ? 1 : 0);
    tokens = thd ? type.getDimSize(0) : batch * s;
    width = vectorWidth(
        type.getElementType(),
        std::gcd(d, interleaved ? d2 : std::max<int64_t>(d2 / 2, 1)));
    pairsInVector = interleaved && width >= 2;
    vectors = type.getNumElements() / width;
    MLIRContext *context = type.getContext();
    tableType = RankedTensorType::get({s2 * d2}, Float32Type::get(context));
    positionsType =
        RankedTensorType::get({tokens}, IntegerType::get(context, 32));
  }

  /// rope_tables(freqs, cos, sin).
  gpu::GPUFuncOp addTables(KernelSet &set, OpBuilder &b, Location loc,
                           MemRefType freqsType) const {
    auto kernel = set.addKernel(
        b, prefix + "rope_tables",
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
    auto kernel = set.addKernel(b, prefix + "rope_positions", arguments);
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
    auto kernel = set.addKernel(
        b, prefix + (backward ? "rope_backward" : "rope"),
        {bufferType(inputType), bufferType(tableType), bufferType(tableType),
         bufferType(positionsType), bufferType(outputType)});
    Value input = flatten(b, loc, kernel.getArgument(0));
    Value output = flatten(b, loc, kernel.getArgument(4));
    gridStrideLoop(
        b, loc, vectors, Value(),
        [&](OpBuilder &b, Location loc, Value v, Value) -> Value {
          Ints i{b, loc};
          Value first = i.mul(v, i.index(width));
          Value p = memref::LoadOp::create(b, loc, kernel.getArgument(3),
                                           tokenOf(b, loc, first));
          Value at = backward ? fused.at(b, loc, first) : first;
          storeElements(b, loc, output, at,
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
    // The element `e` of the rotated part, in the buffer it is read from.
    auto inputAt = [&](Value e) { return backward ? e : fused.at(b, loc, e); };
    SmallVector<Value> raw = loadElements(b, loc, input, inputAt(first), width);
    SmallVector<Value> partnerRaw =
        pairsInVector
            ? raw
            : loadElements(b, loc, input, inputAt(i.add(i.sub(first, j0), k)),
                           width);
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

/// The buffers of a rotation's tables: cos and sin of freqs, and each
/// token's freqs row.
struct RopeTables {
  Value cos, sin, rows;
};

/// A RopeLowering's three kernels, added to a set, and their launches.
/// With `shared`, the tables and rows are another RopeKernelsOf's (the
/// same freqs, start positions and tokens): only the rotation is added.
struct RopeKernelsOf {
  const RopeLowering &r;
  gpu::GPUFuncOp tables, positions, rotation;

  /// Adds the kernels for the operands `freqs` and the optional
  /// `cuSeqlens` and `startPositions`.
  RopeKernelsOf(const RopeLowering &r, KernelSet &set, OpBuilder &b,
                Location loc, Value freqs, Value cuSeqlens,
                Value startPositions, bool shared = false)
      : r(r) {
    if (!shared) {
      tables = r.addTables(set, b, loc, bufferTypeOf(freqs));
      positions = r.addPositions(
          set, b, loc, r.hasCu ? bufferTypeOf(cuSeqlens) : MemRefType(),
          r.hasStart ? bufferTypeOf(startPositions) : MemRefType());
    }
    rotation = r.addRotation(set, b, loc);
  }

  /// Launches them (after the set's finish()): the rotation reads the
  /// buffer `input` and writes `output`, with the tables of `shared` when
  /// given, else its own from the op's tensors `freqs`, `cuSeqlens` and
  /// `startPositions`. Returns the tables it used.
  RopeTables launch(OpBuilder &host, Location loc, KernelSet &set, Value freqs,
                    Value cuSeqlens, Value startPositions, Value input,
                    Value output, const RopeTables *shared = nullptr) const {
    RopeTables t;
    if (shared) {
      t = *shared;
    } else {
      t.cos = allocateOutput(host, loc, r.tableType);
      t.sin = allocateOutput(host, loc, r.tableType);
      t.rows = allocateOutput(host, loc, r.positionsType);
      set.launch(host, tables, blocksFor(r.s2 * r.d2), kBlockSize,
                 {readBuffer(host, loc, freqs), t.cos, t.sin});
      SmallVector<Value> positionOperands;
      if (r.hasCu)
        positionOperands.push_back(readBuffer(host, loc, cuSeqlens));
      if (r.hasStart)
        positionOperands.push_back(readBuffer(host, loc, startPositions));
      positionOperands.push_back(t.rows);
      set.launch(host, positions, blocksFor(r.tokens), kBlockSize,
                 positionOperands);
    }
    set.launch(host, rotation, blocksFor(r.vectors), kBlockSize,
               {input, t.cos, t.sin, t.rows, output});
    return t;
  }
};

template <typename OpT>
LogicalResult lowerRope(RewriterBase &rewriter, OpT op,
                        const GPUTargetInfo &target) {
  Location loc = op.getLoc();
  RopeLowering r = RopeLowering::of(op);
  KernelSet set(op, r.backward ? "rope_backward" : "rope", target);
  OpBuilder b(op.getContext());
  RopeKernelsOf kernels(r, set, b, loc, op.getFreqs(), op.getCuSeqlens(),
                        op.getStartPositions());
  set.finish();

  OpBuilder &host = rewriter;
  Value out = allocateOutput(host, loc, r.outputType);
  kernels.launch(host, loc, set, op.getFreqs(), op.getCuSeqlens(),
                 op.getStartPositions(), readBuffer(host, loc, op.getInput()),
                 out);
  replaceWithOutputs(rewriter, op, {out});
  return success();
}

/// The vectors of te.qkv_rope's value part `valueType` that
/// qkv_value_copy moves: `width` elements each, up to 16 bytes.
struct ValueVectors {
  int64_t width, count;
  ValueVectors(const FusedPart &part, RankedTensorType valueType)
      : width(vectorWidth(valueType.getElementType(), part.channels)),
        count(valueType.getNumElements() / width) {}
};

/// qkv_value_copy(from, to): te.qkv_rope's value part, copied bit for bit
/// out of the fused tensor (`toFused` false) or into it.
gpu::GPUFuncOp addValueCopy(KernelSet &set, OpBuilder &b, Location loc,
                            const FusedPart &part, RankedTensorType fusedType,
                            RankedTensorType valueType, bool toFused) {
  auto kernel = set.addKernel(b, "qkv_value_copy",
                              {bufferType(toFused ? valueType : fusedType),
                               bufferType(toFused ? fusedType : valueType)});
  ValueVectors vectors(part, valueType);
  int64_t width = vectors.width;
  Value from = flatten(b, loc, kernel.getArgument(0));
  Value to = flatten(b, loc, kernel.getArgument(1));
  gridStrideLoop(b, loc, valueType.getNumElements() / width, Value(),
                 [&](OpBuilder &b, Location loc, Value v, Value) -> Value {
                   Ints i{b, loc};
                   Value first = i.mul(v, i.index(width));
                   Value inFused = part.at(b, loc, first);
                   storeElements(b, loc, to, toFused ? inFused : first,
                                 loadElements(b, loc, from,
                                              toFused ? first : inFused,
                                              width));
                   return Value();
                 });
  return kernel;
}

/// te.qkv_rope and its backward: the query and key parts rotated straight
/// between the fused tensor and their own (forward: out of it; backward:
/// into the fused gradient), the value part copied. Where both parts
/// rotate by the same freqs, the key part takes the query part's tables.
template <typename OpT>
LogicalResult lowerQkvRope(RewriterBase &rewriter, OpT op,
                           const GPUTargetInfo &target) {
  constexpr bool backward = std::is_same_v<OpT, QkvRopeBackwardOp>;
  Location loc = op.getLoc();
  auto typeOf = [](Value value) {
    return cast<RankedTensorType>(value.getType());
  };
  // The parts' own tensors (the results, or the gradients of the backward)
  // and the fused one.
  SmallVector<Value> parts;
  Value fused, starts;
  if constexpr (backward) {
    parts = {op.getDq(), op.getDk(), op.getDv()};
    fused = op.getResult();
  } else {
    parts.assign(op.getResults().begin(), op.getResults().end());
    fused = op.getQkv();
    starts = op.getStartPositions();
  }
  RankedTensorType fusedType = typeOf(fused);
  bool sameFreqs = op.getQFreqs() == op.getKFreqs();
  RopeLowering q = RopeLowering::ofQkvPart(op, 0, fusedType, typeOf(parts[0]),
                                           op.getQFreqs());
  RopeLowering k = RopeLowering::ofQkvPart(op, 1, fusedType, typeOf(parts[1]),
                                           op.getKFreqs());
  FusedPart value = FusedPart::of(fusedType, op.getSplit(), 2);
  KernelSet set(op, backward ? "qkv_rope_backward" : "qkv_rope", target);
  OpBuilder b(op.getContext());
  RopeKernelsOf qKernels(q, set, b, loc, op.getQFreqs(), Value(), starts);
  RopeKernelsOf kKernels(k, set, b, loc, op.getKFreqs(), Value(), starts,
                         sameFreqs);
  auto copy = addValueCopy(set, b, loc, value, fusedType, typeOf(parts[2]),
                           /*toFused=*/backward);
  set.finish();

  // Each part's buffer read and buffer written.
  OpBuilder &host = rewriter;
  SmallVector<Value> reads, writes;
  if constexpr (backward) {
    Value out = allocateOutput(host, loc, fusedType);
    for (Value part : parts) {
      reads.push_back(readBuffer(host, loc, part));
      writes.push_back(out);
    }
  } else {
    Value qkv = readBuffer(host, loc, fused);
    for (Value part : parts) {
      reads.push_back(qkv);
      writes.push_back(allocateOutput(host, loc, typeOf(part)));
    }
  }
  RopeTables tables = qKernels.launch(host, loc, set, op.getQFreqs(), Value(),
                                      starts, reads[0], writes[0]);
  kKernels.launch(host, loc, set, op.getKFreqs(), Value(), starts, reads[1],
                  writes[1], sameFreqs ? &tables : nullptr);
  set.launch(host, copy, blocksFor(ValueVectors(value, typeOf(parts[2])).count),
             kBlockSize, {reads[2], writes[2]});
  if constexpr (backward)
    replaceWithOutputs(rewriter, op, {writes[0]});
  else
    replaceWithOutputs(rewriter, op, writes);
  return success();
}

} // namespace

bool gpu_lowering::isRopeOp(Operation *op) {
  return isa<RopeOp, RopeBackwardOp, QkvRopeOp, QkvRopeBackwardOp>(op);
}

LogicalResult gpu_lowering::lowerRopeOp(RewriterBase &rewriter, Operation *op,
                                        const GPUTargetInfo &target) {
  if (auto forward = dyn_cast<RopeOp>(op))
    return lowerRope(rewriter, forward, target);
  if (auto backward = dyn_cast<RopeBackwardOp>(op))
    return lowerRope(rewriter, backward, target);
  if (auto qkv = dyn_cast<QkvRopeOp>(op))
    return lowerQkvRope(rewriter, qkv, target);
  return lowerQkvRope(rewriter, cast<QkvRopeBackwardOp>(op), target);
}
