//===- TEToGPU.cpp - Lowering te ops to GPU kernels -----------------------===//

#include "te/Conversion/TEToGPU/TEToGPU.h"

#include "KernelBuilder.h"
#include "te/Conversion/TECommon/FP8Codec.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

#include <map>
#include <mutex>

namespace mlir::te {
#define GEN_PASS_DEF_CONVERTTETOGPU
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::gpu_lowering;

GPUTargetInfo::~GPUTargetInfo() = default;

Value GPUTargetInfo::emitF32ToFP8(OpBuilder &b, Location loc, Value f32Value,
                                  FloatType fp8Type) const {
  return te::emitF32ToFP8(b, loc, f32Value, fp8Type);
}

namespace {
/// The GPU targets convert-te-to-gpu's target= option can name.
struct GPUTargetInfoRegistry {
  std::mutex mutex;
  std::map<std::string, GPUTargetInfoFactory> factories;

  static GPUTargetInfoRegistry &get() {
    static GPUTargetInfoRegistry registry;
    return registry;
  }
};
} // namespace

void mlir::te::registerGPUTargetInfo(StringRef name,
                                     GPUTargetInfoFactory factory) {
  GPUTargetInfoRegistry &registry = GPUTargetInfoRegistry::get();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.factories.emplace(name.str(), std::move(factory));
}

std::shared_ptr<const GPUTargetInfo>
mlir::te::lookUpGPUTargetInfo(StringRef spec, std::string *error) {
  auto [name, arch] = spec.split(':');
  GPUTargetInfoRegistry &registry = GPUTargetInfoRegistry::get();
  GPUTargetInfoFactory factory;
  std::string known;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.factories.find(name.str());
    if (it != registry.factories.end())
      factory = it->second;
    for (const auto &entry : registry.factories)
      known += (known.empty() ? "" : ", ") + entry.first;
  }
  if (!factory) {
    *error = "no GPU target '" + name.str() + "' is registered (" +
             (known.empty() ? std::string("none is") : "registered: " + known) +
             "); name one as <target>:<arch>, e.g. cuda:sm_90a";
    return nullptr;
  }
  return factory(arch, error);
}

const MatrixUnit *mlir::te::findMatrixUnit(const GPUTargetInfo &target,
                                           const MatrixUnit::Shape &shape) {
  for (const MatrixUnit *unit : target.getMatrixUnits())
    if (unit->getShape() == shape)
      return unit;
  return nullptr;
}

std::optional<std::string>
gpu_lowering::getTiledUnitUnsupportedReason(StringRef name,
                                            const GPUTargetInfo &target) {
  constexpr MatrixUnit::Shape shape = WarpMMA16x8x16::kShape;
  if (!findMatrixUnit(target, shape))
    return name.str() +
           " needs 16x8x16 matrix multiply-accumulate units, which " +
           target.getDescription() + " lacks";
  if (target.getWarpSize() != shape.threads)
    return name.str() + "'s GPU kernels run the " + shape.str() +
           " unit on warps of its size; " + target.getDescription() + " has " +
           std::to_string(target.getWarpSize()) + "-lane warps";
  return std::nullopt;
}

const MatrixUnit &gpu_lowering::getTiledUnit(const GPUTargetInfo &target) {
  const MatrixUnit *unit = findMatrixUnit(target, WarpMMA16x8x16::kShape);
  assert(unit && "getTiledUnitUnsupportedReason said the target has none");
  return *unit;
}

void GPUTargetInfo::emitAsyncCopy(OpBuilder &b, Location loc, Value dst,
                                  Value dstIndex, Value src, Value srcIndex,
                                  int64_t elements, Value valid) const {
  Type element = cast<MemRefType>(src.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  SmallVector<Value> values = loadElements(b, loc, src, srcIndex, elements);
  for (Value &value : values)
    value = arith::SelectOp::create(b, loc, valid, value, zero);
  storeElements(b, loc, dst, dstIndex, values);
}

//===----------------------------------------------------------------------===//
// KernelSet
//===----------------------------------------------------------------------===//

KernelSet::KernelSet(Operation *op, StringRef family,
                     const GPUTargetInfo &target)
    : op(op), family(family.str()), target(target) {
  OpBuilder b(op->getContext());
  owned = gpu::GPUModuleOp::create(b, op->getLoc(), "te_" + family.str());
  module = *owned;
}

gpu::GPUFuncOp KernelSet::addKernel(OpBuilder &b, StringRef name,
                                    TypeRange arguments, TypeRange workgroup) {
  b.setInsertionPointToEnd(module.getBody());
  auto type = b.getFunctionType(arguments, {});
  auto kernel =
      gpu::GPUFuncOp::create(b, op->getLoc(), name, type, workgroup, {});
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // 16-byte aligned shared buffers: what vector accesses to them need (the
  // default is the element's alignment).
  for (unsigned i = 0; i < workgroup.size(); ++i)
    kernel.setWorkgroupAttributionAttr(i, "llvm.align",
                                       b.getI64IntegerAttr(16));
  b.setInsertionPointToEnd(&kernel.getBody().front());
  gpu::ReturnOp::create(b, op->getLoc());
  b.setInsertionPointToStart(&kernel.getBody().front());
  return kernel;
}

void KernelSet::finish() {
  // Name the module and its kernels after what they compute, so that equal
  // kernels from different ops (or programs) are one module, and names
  // stay unique when a target puts every module's kernels into one.
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    // Every element of constants included: two modules that differ in one
    // must not share a name.
    module->print(os);
  }
  std::string suffix;
  llvm::raw_string_ostream(suffix)
      << llvm::format_hex_no_prefix(llvm::xxh3_64bits(text), 16);
  std::string name = "te_" + family + "_" + suffix;
  for (auto kernel : module.getOps<gpu::GPUFuncOp>())
    kernel.setName(name + "_" + kernel.getName().str());
  module.setName(name);

  auto parent = op->getParentOfType<ModuleOp>();
  parent->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(op->getContext()));
  if (auto existing = SymbolTable::lookupSymbolIn(parent, name)) {
    // The duplicate stays owned (and is erased with the set): the kernel
    // handles addKernel gave out point into it, and launch() still reads
    // their names. Erasing it here left them dangling.
    module = cast<gpu::GPUModuleOp>(existing);
    return;
  }
  parent.getBody()->push_back(owned.release());
}

void KernelSet::launch(OpBuilder &host, gpu::GPUFuncOp kernel, int64_t gridX,
                       int64_t blockX, ValueRange operands) {
  launch(host, kernel, {gridX, 1}, {blockX, 1}, operands);
}

void KernelSet::launch(OpBuilder &host, gpu::GPUFuncOp kernel,
                       std::array<int64_t, 2> grid,
                       std::array<int64_t, 2> block, ValueRange operands) {
  Location loc = op->getLoc();
  Value one = indexConstant(host, loc, 1);
  gpu::KernelDim3 gridSize{indexConstant(host, loc, grid[0]),
                           indexConstant(host, loc, grid[1]), one};
  gpu::KernelDim3 blockSize{indexConstant(host, loc, block[0]),
                            indexConstant(host, loc, block[1]), one};
  // The kernel may be an identical one of an earlier op: refer to it by the
  // module finish() settled on.
  auto symbol = SymbolRefAttr::get(
      module.getNameAttr(),
      {FlatSymbolRefAttr::get(host.getContext(), kernel.getName())});
  gpu::LaunchFuncOp::create(host, loc, symbol, gridSize, blockSize,
                            /*dynamicSharedMemorySize=*/Value(), operands,
                            /*asyncObject=*/Value());
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

MemRefType gpu_lowering::bufferType(RankedTensorType type) {
  return MemRefType::get(type.getShape(), type.getElementType());
}

Value gpu_lowering::readBuffer(OpBuilder &host, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  auto op =
      bufferization::ToBufferOp::create(host, loc, bufferType(type), value);
  op.setReadOnly(true);
  return op;
}

MemRefType gpu_lowering::bufferTypeOf(Value value) {
  return bufferType(cast<RankedTensorType>(value.getType()));
}

Value gpu_lowering::allocateOutput(OpBuilder &host, Location loc,
                                   RankedTensorType type) {
  // 256-byte alignment: what the vector accesses need, and what the
  // runtime's device allocations give.
  return memref::AllocOp::create(host, loc, bufferType(type),
                                 host.getI64IntegerAttr(256));
}

Value gpu_lowering::outputTensor(OpBuilder &host, Location loc, Value buffer,
                                 RankedTensorType type) {
  return bufferization::ToTensorOp::create(host, loc, type, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

void gpu_lowering::replaceWithOutputs(RewriterBase &rewriter, Operation *op,
                                      ArrayRef<Value> buffers) {
  SmallVector<Value> tensors;
  for (auto [result, buffer] : llvm::zip_equal(op->getResults(), buffers))
    tensors.push_back(outputTensor(rewriter, op->getLoc(), buffer,
                                   cast<RankedTensorType>(result.getType())));
  rewriter.replaceOp(op, tensors);
}

LogicalResult mlir::te::lowerToLibraryCall(Operation *op,
                                           ArrayRef<Value> inputs,
                                           StringRef library,
                                           StringRef parameters) {
  IRRewriter rewriter(op->getContext());
  return lowerToLibraryCall(rewriter, op, inputs, library, parameters);
}

//===----------------------------------------------------------------------===//
// Kernel pieces
//===----------------------------------------------------------------------===//

int64_t gpu_lowering::blocksFor(int64_t items) {
  return std::clamp<int64_t>((items + kBlockSize - 1) / kBlockSize, 1, 1024);
}

Value gpu_lowering::indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value gpu_lowering::i32Constant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), value);
}

Value gpu_lowering::flatten(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return buffer;
  ReassociationIndices all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  return memref::CollapseShapeOp::create(b, loc, buffer,
                                         ArrayRef<ReassociationIndices>{all});
}

Value gpu_lowering::globalThreadIndex(OpBuilder &b, Location loc) {
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value size = gpu::BlockDimOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, size), thread);
}

Value gpu_lowering::globalThreadCount(OpBuilder &b, Location loc) {
  Value grid = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value size = gpu::BlockDimOp::create(b, loc, gpu::Dimension::x);
  return arith::MulIOp::create(b, loc, grid, size);
}

Value gpu_lowering::gridStrideLoop(
    OpBuilder &b, Location loc, int64_t count, Value init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> body) {
  Value start = globalThreadIndex(b, loc);
  Value step = globalThreadCount(b, loc);
  SmallVector<Value> inits;
  if (init)
    inits.push_back(init);
  auto loop = scf::ForOp::create(
      b, loc, start, indexConstant(b, loc, count), step, inits,
      [&](OpBuilder &nested, Location loc, Value i, ValueRange carried) {
        Value next = body(nested, loc, i, init ? carried[0] : Value());
        scf::YieldOp::create(nested, loc,
                             init ? ValueRange{next} : ValueRange{});
      });
  return init ? loop.getResult(0) : Value();
}

void gpu_lowering::ifFirstThread(
    OpBuilder &b, Location loc,
    function_ref<void(OpBuilder &, Location)> body) {
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread,
                                      indexConstant(b, loc, 0));
  auto branch = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  body(b, loc);
}

gpu::GPUFuncOp gpu_lowering::addAmaxInit(KernelSet &set, OpBuilder &b,
                                         Location loc) {
  auto kernel =
      set.addKernel(b, "amax_init", {MemRefType::get({}, b.getF32Type())});
  ifFirstThread(b, loc, [&](OpBuilder &b, Location loc) {
    memref::StoreOp::create(b, loc, emitF32Constant(b, loc, 0.0),
                            kernel.getArgument(0), ValueRange{});
  });
  return kernel;
}

MemRefType gpu_lowering::reductionScratchType(MLIRContext *context,
                                              unsigned warpSize,
                                              int64_t threads) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  return MemRefType::get({threads / warpSize}, IntegerType::get(context, 32),
                         MemRefLayoutAttrInterface(), workgroup);
}

Value gpu_lowering::reduceOverLanes(OpBuilder &b, Location loc, Value value,
                                    unsigned lanes, unsigned warpSize,
                                    function_ref<Value(Value, Value)> combine) {
  for (unsigned offset = lanes / 2; offset > 0; offset /= 2)
    value =
        combine(value, gpu::ShuffleOp::create(b, loc, value, offset, warpSize,
                                              gpu::ShuffleMode::XOR)
                           .getShuffleResult());
  return value;
}

/// The unsigned maximum of `bits` over the lanes of each warp (every lane
/// gets it).
static Value warpMaxBits(OpBuilder &b, Location loc, Value bits,
                         unsigned warpSize) {
  return reduceOverLanes(b, loc, bits, warpSize, warpSize,
                         [&](Value x, Value y) -> Value {
                           return arith::MaxUIOp::create(b, loc, x, y);
                         });
}

Value gpu_lowering::blockMaxBits(OpBuilder &b, Location loc, Value bits,
                                 Value scratch, unsigned warpSize,
                                 int64_t threads) {
  bits = warpMaxBits(b, loc, bits, warpSize);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value warps = indexConstant(b, loc, threads / warpSize);
  Value size = indexConstant(b, loc, warpSize);
  Value lane = arith::RemUIOp::create(b, loc, thread, size);
  Value warp = arith::DivUIOp::create(b, loc, thread, size);
  Value zero = indexConstant(b, loc, 0);
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
  auto store = scf::IfOp::create(b, loc, firstLane, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    memref::StoreOp::create(b, loc, bits, scratch, warp);
  }
  gpu::BarrierOp::create(b, loc);
  // Every warp reduces the warps' values (only warp 0's result is used):
  // the shuffles stay in uniform control flow.
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lane, warps);
  Value clamped = arith::SelectOp::create(b, loc, inRange, lane, zero);
  Value partial = memref::LoadOp::create(b, loc, scratch, clamped);
  partial =
      arith::SelectOp::create(b, loc, inRange, partial, i32Constant(b, loc, 0));
  return warpMaxBits(b, loc, partial, warpSize);
}

void gpu_lowering::atomicMaxBits(OpBuilder &b, Location loc, Value amax,
                                 Value bits) {
  // The buffer holds an f32; the maximum is taken on its bits as an
  // unsigned integer, which LLVM's atomicrmw does on a plain pointer.
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, amax);
  Value integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), integer);
  LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::umax, pointer, bits,
                            LLVM::AtomicOrdering::monotonic);
}

IndexExpr IndexExpr::operator+(const IndexExpr &other) const {
  return {b, loc, arith::AddIOp::create(*b, loc, value, other.value)};
}

IndexExpr IndexExpr::operator+(int64_t constant) const {
  if (constant == 0)
    return *this;
  return {
      b, loc,
      arith::AddIOp::create(*b, loc, value, indexConstant(*b, loc, constant))};
}

IndexExpr IndexExpr::operator*(int64_t constant) const {
  if (constant == 1)
    return *this;
  return {
      b, loc,
      arith::MulIOp::create(*b, loc, value, indexConstant(*b, loc, constant))};
}

IndexExpr IndexExpr::operator/(int64_t constant) const {
  return {
      b, loc,
      arith::DivUIOp::create(*b, loc, value, indexConstant(*b, loc, constant))};
}

IndexExpr IndexExpr::operator%(int64_t constant) const {
  return {
      b, loc,
      arith::RemUIOp::create(*b, loc, value, indexConstant(*b, loc, constant))};
}

int64_t gpu_lowering::vectorWidth(Type elementType, int64_t count) {
  int64_t bytes = std::max<int64_t>(elementType.getIntOrFloatBitWidth() / 8, 1);
  int64_t width = 16 / bytes;
  return count % width == 0 ? width : 1;
}

/// The bytes of one access of `type`: its elements' bytes (FP8: 1).
static uint64_t accessBytes(VectorType type) {
  return type.getNumElements() *
         std::max<uint64_t>(type.getElementTypeBitWidth() / 8, 1);
}

SmallVector<Value> gpu_lowering::loadElements(OpBuilder &b, Location loc,
                                              Value buffer, Value index,
                                              int64_t width) {
  Type elementType = cast<MemRefType>(buffer.getType()).getElementType();
  if (width == 1)
    return {memref::LoadOp::create(b, loc, buffer, index)};
  auto vectorType = VectorType::get({width}, elementType);
  // The index is a multiple of the width and buffers are 256-byte aligned:
  // one wide access, not one per element.
  Value vector = vector::LoadOp::create(
      b, loc, vectorType, buffer, index,
      /*nontemporal=*/false, llvm::MaybeAlign(accessBytes(vectorType)));
  SmallVector<Value> elements;
  for (int64_t i = 0; i < width; ++i)
    elements.push_back(vector::ExtractOp::create(b, loc, vector, i));
  return elements;
}

SmallVector<Value> gpu_lowering::loadF32(OpBuilder &b, Location loc,
                                         Value buffer, Value index,
                                         int64_t width) {
  SmallVector<Value> wide;
  for (Value v : loadElements(b, loc, buffer, index, width))
    wide.push_back(emitExtToF32(b, loc, v));
  return wide;
}

void gpu_lowering::storeElements(OpBuilder &b, Location loc, Value buffer,
                                 Value index, ArrayRef<Value> values) {
  if (values.size() == 1) {
    memref::StoreOp::create(b, loc, values[0], buffer, index);
    return;
  }
  auto vectorType = VectorType::get({static_cast<int64_t>(values.size())},
                                    values[0].getType());
  Value vector = vector::FromElementsOp::create(b, loc, vectorType, values);
  vector::StoreOp::create(b, loc, vector, buffer, index, /*nontemporal=*/false,
                          llvm::MaybeAlign(accessBytes(vectorType)));
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::optional<std::string>
mlir::te::getGPUUnsupportedReason(Operation *op, const GPUTargetInfo &target) {
  if (isa<ProcessGroupOp>(op))
    return std::nullopt;
  for (Type type :
       llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (auto shaped = dyn_cast<ShapedType>(type);
        shaped && !shaped.hasStaticShape())
      return op->getName().getStringRef().str() + " with dynamic shapes has " +
             "no GPU lowering (" + target.getDescription() +
             "): kernels are generated for static shapes";
  if (gpu_lowering::isFP8Op(op))
    return gpu_lowering::getFP8UnsupportedReason(op);
  // The runtime's device runs collectives (NCCL on the cuda device).
  if (isCollective(op))
    return getCollectiveUnsupportedReason(op);
  if (auto matmul = dyn_cast<ScaledMatmulOp>(op))
    return gpu_lowering::getMatmulUnsupportedReason(matmul, target);
  if (auto grouped = dyn_cast<GroupedMatmulOp>(op))
    return gpu_lowering::getGroupedMatmulUnsupportedReason(grouped, target);
  if (auto attention = dyn_cast<AttentionOpInterface>(op))
    return gpu_lowering::getAttentionUnsupportedReason(attention, target);
  if (gpu_lowering::isActivationOp(op) || gpu_lowering::isNormOp(op) ||
      gpu_lowering::isCrossEntropyOp(op) || gpu_lowering::isRopeOp(op))
    return std::nullopt;
  return op->getName().getStringRef().str() +
         " has no GPU code generation yet (" + target.getDescription() + ")";
}

namespace {

/// lowerTEOpToGPU for an op getGPUUnsupportedReason has no reason against.
LogicalResult lowerSupportedTEOpToGPU(RewriterBase &rewriter, Operation *op,
                                      const GPUTargetInfo &target) {
  if (isa<ProcessGroupOp>(op))
    return success();
  // The lowerings create their host ops where the op is.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  if (isCollective(op))
    return lowerCollective(rewriter, op);
  if (auto matmul = dyn_cast<ScaledMatmulOp>(op))
    return gpu_lowering::lowerScaledMatmul(rewriter, matmul, target);
  if (auto grouped = dyn_cast<GroupedMatmulOp>(op))
    return gpu_lowering::lowerGroupedMatmul(rewriter, grouped, target);
  if (auto attention = dyn_cast<AttentionOp>(op))
    return gpu_lowering::lowerAttention(rewriter, attention, target);
  if (auto backward = dyn_cast<AttentionBackwardOp>(op))
    return gpu_lowering::lowerAttentionBackward(rewriter, backward, target);
  if (gpu_lowering::isActivationOp(op))
    return gpu_lowering::lowerActivationOp(rewriter, op, target);
  if (gpu_lowering::isNormOp(op))
    return gpu_lowering::lowerNormOp(rewriter, op, target);
  if (gpu_lowering::isCrossEntropyOp(op))
    return gpu_lowering::lowerCrossEntropyOp(rewriter, op, target);
  if (gpu_lowering::isRopeOp(op))
    return gpu_lowering::lowerRopeOp(rewriter, op, target);
  return gpu_lowering::lowerFP8Op(rewriter, op, target);
}

} // namespace

LogicalResult mlir::te::lowerTEOpToGPU(RewriterBase &rewriter, Operation *op,
                                       const GPUTargetInfo &target) {
  if (std::optional<std::string> reason = getGPUUnsupportedReason(op, target))
    return op->emitError(*reason);
  return lowerSupportedTEOpToGPU(rewriter, op, target);
}

LogicalResult mlir::te::lowerTEOpToGPU(Operation *op,
                                       const GPUTargetInfo &target) {
  IRRewriter rewriter(op->getContext());
  return lowerTEOpToGPU(rewriter, op, target);
}

namespace {

/// One te op lowered for a GPU: its kernels and their launches. Ops the
/// GPU lowering cannot take do not match; the pass reports them.
template <typename OpT> struct TEOpToGPU : OpRewritePattern<OpT> {
  TEOpToGPU(MLIRContext *context, std::shared_ptr<const GPUTargetInfo> target)
      : OpRewritePattern<OpT>(context), target(std::move(target)) {}

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> reason =
            getGPUUnsupportedReason(op, *target))
      return rewriter.notifyMatchFailure(op, *reason);
    return lowerSupportedTEOpToGPU(rewriter, op, *target);
  }

  std::shared_ptr<const GPUTargetInfo> target;
};

} // namespace

void mlir::te::populateTEToGPUPatterns(
    RewritePatternSet &patterns, std::shared_ptr<const GPUTargetInfo> target) {
  // By family: FP8 scaling and quantization, attention, the GEMM, the
  // activations, the norms, cross-entropy and RoPE, the collectives (library
  // calls the device runs).
  patterns.add<TEOpToGPU<AmaxOp>, TEOpToGPU<ComputeScaleOp>,
               TEOpToGPU<UpdateDelayedScalingOp>, TEOpToGPU<QuantizeOp>,
               TEOpToGPU<DequantizeOp>>(patterns.getContext(), target);
  patterns.add<TEOpToGPU<AttentionOp>, TEOpToGPU<AttentionBackwardOp>>(
      patterns.getContext(), target);
  patterns.add<TEOpToGPU<ScaledMatmulOp>, TEOpToGPU<GroupedMatmulOp>>(
      patterns.getContext(), target);
  patterns.add<TEOpToGPU<ActivationOp>, TEOpToGPU<ActivationBackwardOp>>(
      patterns.getContext(), target);
  patterns.add<TEOpToGPU<NormOp>, TEOpToGPU<NormBackwardOp>,
               TEOpToGPU<CrossEntropyOp>, TEOpToGPU<CrossEntropyBackwardOp>,
               TEOpToGPU<RopeOp>, TEOpToGPU<RopeBackwardOp>,
               TEOpToGPU<QkvRopeOp>, TEOpToGPU<QkvRopeBackwardOp>>(
      patterns.getContext(), target);
  patterns.add<TEOpToGPU<AllReduceOp>, TEOpToGPU<AllGatherOp>,
               TEOpToGPU<ReduceScatterOp>, TEOpToGPU<AllToAllOp>,
               TEOpToGPU<PermuteOp>, TEOpToGPU<GroupRankOp>>(
      patterns.getContext(), target);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

/// A GPU known only by its warp size: what convert-te-to-gpu generates
/// for when run from the command line.
class GenericGPUTargetInfo : public GPUTargetInfo {
public:
  explicit GenericGPUTargetInfo(unsigned warpSize) : warpSize(warpSize) {}
  unsigned getWarpSize() const override { return warpSize; }
  std::string getDescription() const override {
    return "a GPU with " + std::to_string(warpSize) + "-lane warps";
  }

private:
  unsigned warpSize;
};

struct ConvertTEToGPUPass : te::impl::ConvertTEToGPUBase<ConvertTEToGPUPass> {
  using ConvertTEToGPUBase::ConvertTEToGPUBase;
  explicit ConvertTEToGPUPass(std::shared_ptr<const GPUTargetInfo> target)
      : target(std::move(target)) {
    // Printed with the pipeline, so that it replays on the same target.
    if (this->target)
      targetSpec = this->target->getRegisteredSpec();
  }

  void runOnOperation() override {
    std::shared_ptr<const GPUTargetInfo> info = target;
    if (!info && !targetSpec.empty() &&
        !(info = lookUpPassTarget(getOperation(), "convert-te-to-gpu",
                                  targetSpec)))
      return signalPassFailure();
    if (!info) {
      if (warpSize == 0 || (warpSize & (warpSize - 1)) || warpSize > 64) {
        getOperation().emitError("convert-te-to-gpu: warp-size must be a "
                                 "power of two up to 64, not ")
            << static_cast<unsigned>(warpSize);
        return signalPassFailure();
      }
      info = std::make_shared<GenericGPUTargetInfo>(warpSize);
    }
    if (std::optional<std::string> error = info->getConfigurationError()) {
      // Said once, at the first op that needs the target (not at the
      // module's line 0 with the whole module printed after it).
      Location loc = getOperation().getLoc();
      getOperation().walk([&](Operation *op) {
        if (!isa_and_nonnull<TEDialect>(op->getDialect()))
          return WalkResult::advance();
        loc = op->getLoc();
        return WalkResult::interrupt();
      });
      mlir::emitError(loc, *error);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateTEToGPUPatterns(patterns, info);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // What the patterns left: ops the GPU lowering cannot take, each
    // reported with its reason (a lowering that failed said why itself).
    bool failedAny = false;
    getOperation().walk([&](Operation *op) {
      if (!isa_and_nonnull<TEDialect>(op->getDialect()) ||
          isa<ProcessGroupOp>(op))
        return;
      if (std::optional<std::string> reason =
              getGPUUnsupportedReason(op, *info))
        op->emitError(*reason);
      failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }

  std::shared_ptr<const GPUTargetInfo> target;
};

} // namespace

std::unique_ptr<Pass> mlir::te::createConvertTEToGPUPass(
    std::shared_ptr<const GPUTargetInfo> target) {
  return std::make_unique<ConvertTEToGPUPass>(std::move(target));
}

std::shared_ptr<const GPUTargetInfo>
gpu_lowering::lookUpPassTarget(Operation *op, StringRef passName,
                               StringRef spec) {
  std::string error;
  std::shared_ptr<const GPUTargetInfo> target =
      lookUpGPUTargetInfo(spec, &error);
  if (!target)
    mlir::emitError(op->getLoc(), passName) << ": " << error;
  return target;
}
