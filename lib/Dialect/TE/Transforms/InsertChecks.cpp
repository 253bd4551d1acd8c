//===- InsertChecks.cpp - Run-time checks of te ops' index operands -------===//
//
// te-insert-checks: the index operands of attention (cu_seqlens,
// seq_offsets, seqlens), the grouped GEMM's splits, RoPE's start
// positions and cu_seqlens and cross-entropy's targets come from the user
// at run time, so no verifier can check them. Before the dispatch, each rule
// they must follow becomes a te.check: a small loop finds the first entry that
// breaks the rule, and the check reports it with the op, its location and the
// operand. Every backend, native or plugin, then refuses bad data the same way.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/Transforms/Passes.h"

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEINSERTCHECKS
#include "te/Dialect/TE/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// What a rule computes for one entry: whether it is broken, and the values
/// its message shows.
struct RuleResult {
  Value broken;
  SmallVector<Value, 3> values;
};

/// Emits the te.check ops of one op, in front of it.
class CheckEmitter {
public:
  CheckEmitter(Operation *op)
      : b(op), loc(op->getLoc()),
        prefix((op->getName().getStringRef() + " at {loc}: ").str()) {}

  Value i64(int64_t value) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), value);
  }

  /// Element `index` (an index value) of an i32 vector, as i64.
  Value element(OpBuilder &b, Location loc, Value vector, Value index) {
    Value value = tensor::ExtractOp::create(b, loc, vector, index);
    return arith::ExtSIOp::create(b, loc, b.getI64Type(), value);
  }
  Value element(Value vector, int64_t index) {
    return element(b, loc, vector,
                   arith::ConstantIndexOp::create(b, loc, index));
  }

  Value cmp(OpBuilder &b, Location loc, arith::CmpIPredicate predicate, Value x,
            Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }

  /// A check on values computed once.
  void check(const RuleResult &rule, const std::string &message) {
    CheckOp::create(b, loc, rule.broken, rule.values, prefix + message);
  }

  /// A check over entries i in [begin, end): reports the first i for which
  /// `rule(i)` is broken. `rule` gets i as an i64 and builds in the loop.
  void checkEach(int64_t begin, int64_t end, unsigned numValues,
                 function_ref<RuleResult(OpBuilder &, Location, Value)> rule,
                 const std::string &message) {
    if (begin >= end)
      return;
    SmallVector<Value> init = {
        arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0)};
    init.append(numValues, i64(0));
    auto loop = scf::ForOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, begin),
        arith::ConstantIndexOp::create(b, loc, end),
        arith::ConstantIndexOp::create(b, loc, 1), init,
        [&](OpBuilder &b, Location loc, Value i, ValueRange found) {
          RuleResult result = rule(
              b, loc, arith::IndexCastOp::create(b, loc, b.getI64Type(), i));
          // The first broken entry wins: take its values only when nothing
          // was found before.
          Value fresh = arith::AndIOp::create(
              b, loc, result.broken,
              arith::XOrIOp::create(
                  b, loc, found[0],
                  arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
          SmallVector<Value> next = {
              arith::OrIOp::create(b, loc, found[0], result.broken)};
          for (unsigned v = 0; v < numValues; ++v)
            next.push_back(arith::SelectOp::create(
                b, loc, fresh, result.values[v], found[v + 1]));
          scf::YieldOp::create(b, loc, next);
        });
    check({loop.getResult(0),
           SmallVector<Value, 3>(loop.getResults().drop_front())},
          message);
  }

  /// The rules of a thd side: cu_seqlens (and seq_offsets) describing
  /// `count` sequences inside `tokens` tokens.
  void checkRaggedSide(Value cuSeqlens, Value seqOffsets, int64_t count,
                       int64_t tokens, StringRef side, StringRef tensors) {
    std::string cu = ("cu_seqlens_" + side).str();
    std::string off = ("seq_offsets_" + side).str();
    std::string where =
        llvm::formatv("the {0} tokens of {1} (t_{2})", tokens, tensors, side)
            .str();
    using P = arith::CmpIPredicate;

    checkRaggedPrefix(cuSeqlens, count, cu);
    if (!seqOffsets) {
      Value last = element(cuSeqlens, count);
      check({cmp(b, loc, P::sgt, last, i64(tokens)), {last}},
            llvm::formatv("{0}[{1}] = {{0} is past {2}; the sequences must "
                          "fit in the tensor",
                          cu, count, where)
                .str());
      return;
    }
    checkEach(
        0, count + 1, 2,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value offset = element(b, loc, seqOffsets, at);
          Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
          return {cmp(b, loc, P::slt, offset, zero), {i, offset}};
        },
        off + "[{0}] = {1} is negative");
    checkEach(
        0, count, 3,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value nextAt = arith::AddIOp::create(
              b, loc, at, arith::ConstantIndexOp::create(b, loc, 1));
          Value length =
              arith::SubIOp::create(b, loc, element(b, loc, cuSeqlens, nextAt),
                                    element(b, loc, cuSeqlens, at));
          Value room =
              arith::SubIOp::create(b, loc, element(b, loc, seqOffsets, nextAt),
                                    element(b, loc, seqOffsets, at));
          return {cmp(b, loc, P::sgt, length, room), {i, length, room}};
        },
        "sequence {0} of " + tensors.str() + " has {1} tokens, but " + off +
            " leaves room for {2}; seq_offsets are the sequences' first "
            "tokens, each at least the previous sequence's length after the "
            "previous offset");
    Value last = element(seqOffsets, count);
    check(
        {cmp(b, loc, P::sgt, last, i64(tokens)), {last}},
        llvm::formatv("{0}[{1}] = {{0} is past {2}", off, count, where).str());
  }

  /// Every entry of a padding mask's lengths lies in [0, size].
  void checkLengths(Value lengths, int64_t count, int64_t size,
                    StringRef side) {
    using P = arith::CmpIPredicate;
    checkEach(
        0, count, 2,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value length = element(b, loc, lengths, at);
          Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
          Value limit =
              arith::ConstantIntOp::create(b, loc, b.getI64Type(), size);
          Value outside =
              arith::OrIOp::create(b, loc, cmp(b, loc, P::slt, length, zero),
                                   cmp(b, loc, P::sgt, length, limit));
          return {outside, {i, length}};
        },
        llvm::formatv("seqlens_{0}[{{0}] = {{1} is outside [0, {1}] (s_{0})",
                      side, size)
            .str());
  }

  /// The entries of `splits` are non-negative and sum to `total`.
  void checkSplits(Value splits, int64_t count, int64_t total) {
    using P = arith::CmpIPredicate;
    checkEach(
        0, count, 2,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value split = tensor::ExtractOp::create(b, loc, splits, at);
          Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
          return {cmp(b, loc, P::slt, split, zero), {i, split}};
        },
        "splits[{0}] = {1} is negative; each group has zero or more rows");
    auto sum = scf::ForOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, 0),
        arith::ConstantIndexOp::create(b, loc, count),
        arith::ConstantIndexOp::create(b, loc, 1), ValueRange{i64(0)},
        [&](OpBuilder &b, Location loc, Value i, ValueRange total) {
          Value split = tensor::ExtractOp::create(b, loc, splits, i);
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::AddIOp::create(b, loc, total[0], split)});
        });
    Value value = sum.getResult(0);
    check({cmp(b, loc, P::ne, value, i64(total)), {value}},
          llvm::formatv("the splits sum to {{0}, but 'a' has {0} rows; the "
                        "groups split the rows as torch.split does, so they "
                        "must add up to all of them",
                        total)
              .str());
  }

  /// te.rope's positions: every sequence's tokens (its local length n,
  /// TE's dual-chunk order spanning n * cp_size positions) from its start
  /// position fit in the `rows` rows of freqs; for thd, cu_seqlens
  /// describe `count` sequences inside `tokens` tokens, each length a
  /// multiple of 2 * cp_size when context-parallel.
  void checkRopePositions(Value cuSeqlens, Value startPositions, int64_t count,
                          int64_t tokens, int64_t seqLength, int64_t cpSize,
                          int64_t rows) {
    using P = arith::CmpIPredicate;
    if (cuSeqlens) {
      checkRaggedPrefix(cuSeqlens, count, "cu_seqlens");
      Value last = element(cuSeqlens, count);
      check({cmp(b, loc, P::sgt, last, i64(tokens * cpSize)), {last}},
            llvm::formatv(
                "cu_seqlens[{0}] = {{0} is past the {1} tokens of "
                "the input{2}; the sequences must fit in the tensor",
                count, tokens,
                cpSize > 1 ? llvm::formatv(" times cp_size {0}", cpSize).str()
                           : std::string())
                .str());
    }
    checkEach(
        0, count, 3,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
          Value start =
              startPositions ? element(b, loc, startPositions, at) : zero;
          // The positions the sequence spans: its global length.
          Value span = arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                                    seqLength * cpSize);
          if (cuSeqlens) {
            Value nextAt = arith::AddIOp::create(
                b, loc, at, arith::ConstantIndexOp::create(b, loc, 1));
            span = arith::SubIOp::create(b, loc,
                                         element(b, loc, cuSeqlens, nextAt),
                                         element(b, loc, cuSeqlens, at));
          }
          Value end = arith::AddIOp::create(b, loc, start, span);
          Value limit =
              arith::ConstantIntOp::create(b, loc, b.getI64Type(), rows);
          Value outside =
              arith::OrIOp::create(b, loc, cmp(b, loc, P::slt, start, zero),
                                   cmp(b, loc, P::sgt, end, limit));
          return {outside, {i, start, end}};
        },
        llvm::formatv("sequence {{0} spans positions [{{1}, {{2}) (start "
                      "position and length), outside the {0} rows of freqs",
                      rows)
            .str());
    if (cuSeqlens && cpSize > 1)
      checkEach(
          0, count, 2,
          [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
            Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
            Value nextAt = arith::AddIOp::create(
                b, loc, at, arith::ConstantIndexOp::create(b, loc, 1));
            Value length = arith::SubIOp::create(
                b, loc, element(b, loc, cuSeqlens, nextAt),
                element(b, loc, cuSeqlens, at));
            Value remainder =
                arith::RemSIOp::create(b, loc, length,
                                       arith::ConstantIntOp::create(
                                           b, loc, b.getI64Type(), 2 * cpSize));
            Value zero =
                arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
            return {cmp(b, loc, P::ne, remainder, zero), {i, length}};
          },
          llvm::formatv("sequence {{0} has {{1} tokens, not a multiple of 2 "
                        "* cp_size = {0}; each rank holds two equal chunks "
                        "of every sequence",
                        2 * cpSize)
              .str());
  }

  /// Every entry of `target` (i32 or i64) is in [0, vocab) or `ignore`.
  void checkTargets(Value target, int64_t count, int64_t vocab,
                    int64_t ignore) {
    using P = arith::CmpIPredicate;
    checkEach(
        0, count, 2,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value value = tensor::ExtractOp::create(b, loc, target, at);
          if (!value.getType().isInteger(64))
            value = arith::ExtSIOp::create(b, loc, b.getI64Type(), value);
          auto c = [&](int64_t v) {
            return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
          };
          Value outside =
              arith::OrIOp::create(b, loc, cmp(b, loc, P::slt, value, c(0)),
                                   cmp(b, loc, P::sge, value, c(vocab)));
          Value broken = arith::AndIOp::create(
              b, loc, outside, cmp(b, loc, P::ne, value, c(ignore)));
          return {broken, {i, value}};
        },
        llvm::formatv("target[{{0}] = {{1} is outside [0, {0}) (the "
                      "vocabulary) and is not the ignore index {1}",
                      vocab, ignore)
            .str());
  }

  /// The cu_seqlens input `name` starts at 0 and never decreases.
  void checkRaggedPrefix(Value cuSeqlens, int64_t count, StringRef name) {
    using P = arith::CmpIPredicate;
    Value first = element(cuSeqlens, 0);
    check({cmp(b, loc, P::ne, first, i64(0)), {first}},
          name.str() + "[0] = {0}; cu_seqlens start at 0");
    checkEach(
        0, count, 3,
        [&](OpBuilder &b, Location loc, Value i) -> RuleResult {
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          Value next = arith::AddIOp::create(
              b, loc, i,
              arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1));
          Value nextAt =
              arith::IndexCastOp::create(b, loc, b.getIndexType(), next);
          Value before = element(b, loc, cuSeqlens, at);
          Value after = element(b, loc, cuSeqlens, nextAt);
          return {cmp(b, loc, P::slt, after, before), {next, after, before}};
        },
        name.str() +
            "[{0}] = {1} is less than the entry before it ({2}); cu_seqlens "
            "are prefix sums of the sequence lengths and never decrease");
  }

private:
  OpBuilder b;
  Location loc;
  std::string prefix;
};

/// The checks of te.cross_entropy's targets: a class of the vocabulary (all
/// ranks' classes with a group) or the ignore index.
void insertCrossEntropyChecks(CrossEntropyOp op) {
  RankedTensorType logits = op.getLogits().getType();
  auto target = cast<RankedTensorType>(op.getTarget().getType());
  if (!logits.hasStaticShape() || !target.hasStaticShape())
    return; // No lowering takes dynamic shapes yet.
  int64_t vocab = logits.getShape().back() * op.getVocabShards();
  int64_t ignore = op.getIgnoreIndex();
  Value flat = op.getTarget();
  OpBuilder b(op);
  Location loc = op.getLoc();
  if (target.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc,
        RankedTensorType::get({target.getNumElements()},
                              target.getElementType()),
        flat,
        ArrayRef<ReassociationIndices>{
            llvm::to_vector(llvm::seq<int64_t>(0, target.getRank()))});
  CheckEmitter(op).checkTargets(flat, target.getNumElements(), vocab, ignore);
}

/// The checks of te.rope and te.rope_backward's start positions and
/// cu_seqlens.
template <typename OpT> void insertRopeChecks(OpT op) {
  for (Value operand : op->getOperands())
    if (!cast<ShapedType>(operand.getType()).hasStaticShape())
      return; // No lowering takes dynamic shapes yet.
  if (!op.getCuSeqlens() && !op.getStartPositions())
    return; // The verifier checked the positions.
  RankedTensorType input = op.getInput().getType();
  int64_t rows = cast<RankedTensorType>(op.getFreqs().getType()).getDimSize(0);
  int64_t tokens = input.getDimSize(op.getSequenceDim());
  CheckEmitter(op).checkRopePositions(op.getCuSeqlens(), op.getStartPositions(),
                                      op.getNumSequences(), tokens, tokens,
                                      op.getCpSizeAttr().getInt(), rows);
}

/// The checks of te.qkv_rope's start positions: every token's position in
/// both freqs (the backward takes none).
void insertQkvRopeChecks(QkvRopeOp op) {
  if (!op.getStartPositions())
    return; // The verifier checked the positions.
  for (Value operand : op->getOperands())
    if (!cast<ShapedType>(operand.getType()).hasStaticShape())
      return; // No lowering takes dynamic shapes yet.
  RankedTensorType qkv = op.getQkv().getType();
  unsigned sequenceDim = op.getSequenceDim();
  int64_t tokens = qkv.getDimSize(sequenceDim);
  CheckEmitter(op).checkRopePositions(
      Value(), op.getStartPositions(), qkv.getDimSize(1 - sequenceDim), tokens,
      tokens, op.getCpSizeAttr().getInt(), op.getPositionRows());
}

/// The checks of te.attention and te.attention_backward, whose index
/// operands are the same.
void insertAttentionChecks(AttentionOpInterface op) {
  for (Value operand : op->getOperands())
    if (!cast<ShapedType>(operand.getType()).hasStaticShape())
      return; // No lowering takes dynamic shapes yet.
  CheckEmitter emit(op);
  QKVLayout layout = op.getLayout();
  HeadTensorDims q = getHeadTensorDims(layout, op.getQ().getType().getShape());
  HeadTensorDims k = getHeadTensorDims(layout, op.getK().getType().getShape());
  if (layout == QKVLayout::thd) {
    int64_t count =
        cast<RankedTensorType>(op.getCuSeqlensQ().getType()).getDimSize(0) - 1;
    emit.checkRaggedSide(op.getCuSeqlensQ(), op.getSeqOffsetsQ(), count, q.seq,
                         "q", "q");
    emit.checkRaggedSide(op.getCuSeqlensKv(), op.getSeqOffsetsKv(), count,
                         k.seq, "kv", "k and v");
    return;
  }
  if (isPaddingMask(op.getMaskKind())) {
    emit.checkLengths(op.getSeqlensQ(), q.batch, q.seq, "q");
    emit.checkLengths(op.getSeqlensKv(), q.batch, k.seq, "kv");
  }
}

/// The checks of te.grouped_matmul's splits.
void insertGroupedMatmulChecks(GroupedMatmulOp op) {
  RankedTensorType a = op.getA().getType();
  auto splits = cast<RankedTensorType>(op.getSplits().getType());
  if (!a.hasStaticShape() || !splits.hasStaticShape())
    return; // No lowering takes dynamic shapes yet.
  CheckEmitter(op).checkSplits(op.getSplits(), splits.getDimSize(0),
                               a.getDimSize(0));
}

struct TEInsertChecksPass
    : public te::impl::TEInsertChecksBase<TEInsertChecksPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto attention = dyn_cast<AttentionOpInterface>(op))
        insertAttentionChecks(attention);
      else if (auto grouped = dyn_cast<GroupedMatmulOp>(op))
        insertGroupedMatmulChecks(grouped);
      else if (auto rope = dyn_cast<RopeOp>(op))
        insertRopeChecks(rope);
      else if (auto crossEntropy = dyn_cast<CrossEntropyOp>(op))
        insertCrossEntropyChecks(crossEntropy);
      else if (auto rope = dyn_cast<RopeBackwardOp>(op))
        insertRopeChecks(rope);
      else if (auto qkvRope = dyn_cast<QkvRopeOp>(op))
        insertQkvRopeChecks(qkvRope);
    });
  }
};

} // namespace
