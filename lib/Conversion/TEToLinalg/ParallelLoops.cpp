//===- ParallelLoops.cpp - Host threads for the cpu target ----------------===//
//
// te-cpu-parallel-loops decides which scf.parallel loops run on several
// threads; te-cpu-openmp-threads gives the OpenMP regions that
// convert-scf-to-openmp makes of them the kernel's thread count and a
// schedule. Both estimate work the same way: static trip counts times the
// operations of a loop body (a vector op one per 8 elements), counting a
// loop with dynamic bounds as kUnknownTrips iterations.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TEToLinalg/TEToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::te {
#define GEN_PASS_DEF_CPUOPENMPTHREADS
#define GEN_PASS_DEF_CPUPARALLELLOOPS
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;

namespace {

/// Iterations assumed for a loop whose bounds are not constants.
constexpr int64_t kUnknownTrips = 16;

int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return std::numeric_limits<int64_t>::max();
  return product;
}

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return std::numeric_limits<int64_t>::max();
  return sum;
}

/// The iterations of a loop dimension with bounds (lb, ub, step), or
/// nullopt when they are not constants.
std::optional<int64_t> staticTrips(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb),
                         u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u <= *l ? 0 : (*u - *l + *s - 1) / *s;
}

/// The iterations of all dimensions of `loop`; a dimension whose bounds are
/// not constants counts `unknown` iterations, or makes the result nullopt.
std::optional<int64_t>
staticTrips(scf::ParallelOp loop,
            std::optional<int64_t> unknown = std::nullopt) {
  int64_t trips = 1;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> dim = staticTrips(lb, ub, step);
    if (!dim)
      dim = unknown;
    if (!dim)
      return std::nullopt;
    trips = saturatingMul(trips, *dim);
  }
  return trips;
}

int64_t estimateWork(Region &region);

/// Operations executed by one run of `op`, nested loops included.
int64_t estimateWork(Operation &op) {
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return saturatingMul(
        staticTrips(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())
            .value_or(kUnknownTrips),
        estimateWork(loop.getRegion()));
  if (auto loop = dyn_cast<scf::ParallelOp>(op))
    return saturatingMul(*staticTrips(loop, kUnknownTrips),
                         estimateWork(loop.getRegion()));
  // The outlined bodies of parallel loops count where they are called.
  if (auto call = dyn_cast<func::CallOp>(op))
    if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        callee && !callee.isExternal())
      return saturatingAdd(1, estimateWork(callee.getBody()));
  if (isa<scf::IfOp>(op)) {
    int64_t most = 0;
    for (Region &region : op.getRegions())
      most = std::max(most, estimateWork(region));
    return saturatingAdd(1, most);
  }
  // A vector op counts one operation per 8 of its elements (the lanes of
  // an AVX2 register of f32), so that loops of wide vector ops (the GEMM's
  // packing) weigh what their element-wise forms did.
  int64_t work = 1;
  for (Type type :
       llvm::concat<Type>(op.getOperandTypes(), op.getResultTypes()))
    if (auto vector = dyn_cast<VectorType>(type);
        vector && !vector.isScalable())
      work = std::max(work, (vector.getNumElements() + 7) / 8);
  for (Region &region : op.getRegions())
    work = saturatingAdd(work, estimateWork(region));
  return work;
}

int64_t estimateWork(Region &region) {
  int64_t work = 0;
  for (Block &block : region)
    for (Operation &op : block)
      work = saturatingAdd(work, estimateWork(op));
  return work;
}

/// Iterations of a parallel loop's outer dimensions enough to share out
/// among threads; dimensions beyond them run sequentially in each
/// iteration.
constexpr int64_t kEnoughIterations = 256;

/// Splits the dimensions [k, n) of `loop` off into a parallel loop nested in
/// its body and returns that inner loop. `loop` must have no reductions.
scf::ParallelOp splitOffInnerDimensions(RewriterBase &rewriter,
                                        scf::ParallelOp loop, unsigned k) {
  Location loc = loop.getLoc();
  auto lbs = loop.getLowerBound(), ubs = loop.getUpperBound(),
       steps = loop.getStep();
  rewriter.setInsertionPoint(loop);
  scf::ParallelOp inner;
  auto outer = scf::ParallelOp::create(
      rewriter, loc, lbs.take_front(k), ubs.take_front(k), steps.take_front(k),
      [&](OpBuilder &b, Location loc, ValueRange) {
        inner = scf::ParallelOp::create(
            b, loc, lbs.drop_front(k), ubs.drop_front(k), steps.drop_front(k),
            [](OpBuilder &, Location, ValueRange) {});
      });
  SmallVector<Value> ivs(outer.getInductionVars());
  llvm::append_range(ivs, inner.getInductionVars());
  rewriter.eraseOp(inner.getBody()->getTerminator());
  rewriter.mergeBlocks(loop.getBody(), inner.getBody(), ivs);
  rewriter.eraseOp(loop);
  return inner;
}

/// Moves the views, constants and globals that `region` uses from above
/// into it, so that what the region captures are whole buffers (kernel
/// arguments, allocations) and run-time values.
void sinkViewsAndConstants(RewriterBase &rewriter, Region &region) {
  bool changed = true;
  while (changed) {
    changed = false;
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(region, captured);
    for (Value value : captured) {
      Operation *def = value.getDefiningOp();
      if (!def || def->getNumResults() != 1 ||
          !(isa<ViewLikeOpInterface, memref::GetGlobalOp>(def) ||
            def->hasTrait<OpTrait::ConstantLike>()))
        continue;
      rewriter.setInsertionPointToStart(&region.front());
      Operation *copy = rewriter.clone(*def);
      replaceAllUsesInRegionWith(value, copy->getResult(0), region);
      changed = true;
    }
  }
}

/// Moves the body of `loop` into a private function of its own whose
/// buffer arguments are noalias, and calls it from the loop.
///
/// OpenMP's outlined region receives the buffers through a structure, so
/// LLVM no longer knows that the kernel's outputs do not alias its inputs
/// (the kernel ABI's noalias) and stops vectorizing loops that load a
/// value (a block scale, say) while storing outputs. The captured buffers
/// are whole: kernel inputs (read only, so aliasing between them does not
/// matter), outputs (which alias nothing) and allocations (distinct), so
/// every buffer argument of the new function is noalias.
LogicalResult outlineBody(RewriterBase &rewriter, scf::ParallelOp loop,
                          SymbolTable &symbols) {
  auto parent = loop->getParentOfType<func::FuncOp>();
  if (!parent)
    return success();
  sinkViewsAndConstants(rewriter, loop.getRegion());
  std::string name = (parent.getSymName() + "__te_parallel").str();
  for (unsigned i = 0; symbols.lookup(name); ++i)
    name = (parent.getSymName() + "__te_parallel" + Twine(i)).str();
  rewriter.setInsertionPoint(parent);
  FailureOr<func::FuncOp> outlined =
      outlineSingleBlockRegion(rewriter, loop.getLoc(), loop.getRegion(), name);
  if (failed(outlined))
    return failure();
  outlined->setPrivate();
  // Not exported from the kernel library; LLVM inlines it into OpenMP's
  // outlined region.
  (*outlined)->setAttr(
      "llvm.linkage",
      LLVM::LinkageAttr::get(rewriter.getContext(), LLVM::Linkage::Internal));
  symbols.insert(*outlined);
  for (BlockArgument argument : outlined->getArguments())
    if (isa<MemRefType>(argument.getType()))
      outlined->setArgAttr(argument.getArgNumber(),
                           LLVM::LLVMDialect::getNoAliasAttrName(),
                           rewriter.getUnitAttr());
  return success();
}

/// Rewrites each memref.copy with a strided side into a parallel loop of
/// loads and stores. (finalize-memref-to-llvm turns copies between
/// contiguous buffers into memcpy, and the others into calls of MLIR's
/// runtime library, which kernels do not link. Such copies come from
/// bufferization when a value cannot be updated in place, e.g. a gradient
/// slice of a result nobody uses.)
void expandStridedCopies(RewriterBase &rewriter, ModuleOp module) {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp copy) {
    auto source = cast<MemRefType>(copy.getSource().getType());
    auto target = cast<MemRefType>(copy.getTarget().getType());
    if (!source.getLayout().isIdentity() || !target.getLayout().isIdentity())
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies) {
    Location loc = copy.getLoc();
    rewriter.setInsertionPoint(copy);
    Value source = copy.getSource(), target = copy.getTarget();
    int64_t rank = cast<MemRefType>(source.getType()).getRank();
    if (rank == 0) {
      Value element = memref::LoadOp::create(rewriter, loc, source);
      memref::StoreOp::create(rewriter, loc, element, target);
      rewriter.eraseOp(copy);
      continue;
    }
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    SmallVector<Value> lbs(rank, zero), steps(rank, one), ubs;
    for (int64_t dim = 0; dim < rank; ++dim)
      ubs.push_back(memref::DimOp::create(rewriter, loc, source, dim));
    scf::ParallelOp::create(
        rewriter, loc, lbs, ubs, steps,
        [&](OpBuilder &b, Location loc, ValueRange ivs) {
          Value element = memref::LoadOp::create(b, loc, source, ivs);
          memref::StoreOp::create(b, loc, element, target, ivs);
        });
    rewriter.eraseOp(copy);
  }
}

/// Whether every buffer `loop` uses from above is a whole buffer as far as
/// its type tells (an identity layout: no subview's offset or strides).
bool capturesWholeBuffers(scf::ParallelOp loop) {
  bool whole = true;
  visitUsedValuesDefinedAbove(loop.getRegion(), [&](OpOperand *use) {
    if (auto memref = dyn_cast<MemRefType>(use->get().getType()))
      whole &= memref.getLayout().isIdentity();
  });
  return whole;
}

struct CPUParallelLoopsPass
    : te::impl::CPUParallelLoopsBase<CPUParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    expandStridedCopies(rewriter, getOperation());
    // Outer loops first: a loop inside one that stays parallel runs on the
    // thread that executes its iteration.
    SmallVector<scf::ParallelOp> sequential;
    DenseSet<Operation *> parallel;
    getOperation()->walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      Operation *outer = loop->getParentOfType<scf::ParallelOp>();
      while (outer && !parallel.contains(outer))
        outer = outer->getParentOfType<scf::ParallelOp>();
      // A loop with bounds known only at run time (a grouped GEMM's tiles
      // of one group) counts kUnknownTrips iterations, as in the estimate,
      // when it captures whole buffers only: the loops of strided copies
      // (expandStridedCopies, bounded by their views' dims) capture views,
      // which outlineBody's noalias arguments must not be.
      std::optional<int64_t> trips =
          staticTrips(loop, capturesWholeBuffers(loop)
                                ? std::optional<int64_t>(kUnknownTrips)
                                : std::nullopt);
      bool worth =
          !outer && trips && *trips >= 2 &&
          saturatingMul(*trips, estimateWork(loop.getRegion())) >= minWork;
      if (worth)
        parallel.insert(loop);
      else
        sequential.push_back(loop);
    });
    // Only as many outer dimensions as give the threads enough iterations
    // stay parallel, never the innermost of several: OpenMP collapses the
    // dimensions into one index, and LLVM does not vectorize a loop whose
    // row and column come from dividing that index.
    SmallVector<scf::ParallelOp> splitOff;
    for (Operation *op : parallel) {
      auto loop = cast<scf::ParallelOp>(op);
      unsigned dims = loop.getNumLoops();
      if (dims < 2 || !loop.getInitVals().empty())
        continue;
      unsigned k = 0;
      int64_t trips = 1;
      while (k + 1 < dims && trips < kEnoughIterations)
        trips = saturatingMul(trips, staticTrips(loop.getLowerBound()[k],
                                                 loop.getUpperBound()[k],
                                                 loop.getStep()[k])
                                         .value_or(kUnknownTrips)),
        ++k;
      splitOff.push_back(splitOffInnerDimensions(rewriter, loop, k));
    }
    // Inner loops first, so that each rewrite sees its parents intact; the
    // split-off loops enclose every other sequential loop in their nest.
    SmallVector<scf::ParallelOp> order(llvm::reverse(sequential));
    llvm::append_range(order, splitOff);
    for (scf::ParallelOp loop : order) {
      rewriter.setInsertionPoint(loop);
      if (failed(scf::parallelForToNestedFors(rewriter, loop))) {
        loop.emitError("cannot make this scf.parallel sequential");
        return signalPassFailure();
      }
    }
    // What is left are the parallel loops (split ones replaced by their
    // outer part).
    SmallVector<scf::ParallelOp> remaining;
    getOperation()->walk(
        [&](scf::ParallelOp loop) { remaining.push_back(loop); });
    SymbolTable symbols(getOperation());
    for (scf::ParallelOp loop : remaining)
      if (failed(outlineBody(rewriter, loop, symbols))) {
        loop.emitError("cannot outline the body of this parallel loop");
        return signalPassFailure();
      }
  }
};

constexpr StringLiteral kNumThreadsGlobal = "__te_num_threads";

struct CPUOpenMPThreadsPass
    : te::impl::CPUOpenMPThreadsBase<CPUOpenMPThreadsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<omp::ParallelOp> regions;
    module.walk([&](omp::ParallelOp region) { regions.push_back(region); });
    if (regions.empty())
      return;
    OpBuilder b(&getContext());
    Type i32 = b.getI32Type();
    auto global = module.lookupSymbol<LLVM::GlobalOp>(kNumThreadsGlobal);
    if (!global) {
      b.setInsertionPointToStart(module.getBody());
      global =
          LLVM::GlobalOp::create(b, module.getLoc(), i32,
                                 /*isConstant=*/false, LLVM::Linkage::Internal,
                                 kNumThreadsGlobal, b.getI32IntegerAttr(0));
    }
    // convert-scf-to-openmp wraps every loop body into a
    // memref.alloca_scope, which must keep a single block until
    // finalize-memref-to-llvm, long after scf-to-cf. The bodies allocate
    // nothing on the stack at this point (bufferization allocates on the
    // heap; later stack temporaries go to the region's entry), so the
    // scopes go.
    SmallVector<memref::AllocaScopeOp> scopes;
    module.walk([&](memref::AllocaScopeOp scope) { scopes.push_back(scope); });
    IRRewriter rewriter(&getContext());
    for (memref::AllocaScopeOp scope : scopes) {
      if (scope->walk([](memref::AllocaOp) { return WalkResult::interrupt(); })
              .wasInterrupted())
        continue;
      Block *body = &scope.getBodyRegion().front();
      auto terminator =
          cast<memref::AllocaScopeReturnOp>(body->getTerminator());
      SmallVector<Value> results(terminator.getResults());
      rewriter.eraseOp(terminator);
      rewriter.inlineBlockBefore(body, scope);
      rewriter.replaceOp(scope, results);
    }

    for (omp::ParallelOp region : regions) {
      b.setInsertionPoint(region);
      Location loc = region.getLoc();
      Value address = LLVM::AddressOfOp::create(b, loc, global);
      Value count = LLVM::LoadOp::create(b, loc, i32, address);
      region.getNumThreadsMutable().assign(count);
      region.walk([&](omp::WsloopOp wsloop) {
        auto nest = dyn_cast<omp::LoopNestOp>(wsloop.getWrappedLoop());
        if (!nest || estimateWork(nest.getRegion()) < minIterationWork)
          return;
        wsloop.setScheduleKind(omp::ClauseScheduleKind::Dynamic);
      });
    }
  }
};

} // namespace
