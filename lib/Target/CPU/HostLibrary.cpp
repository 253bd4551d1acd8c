//===- HostLibrary.cpp - LLVM dialect modules to host shared libraries ---===//
//
// The cpu target's serializer: the kernel ABI (packed entry points, the
// manifest getter and the processor features the code needs) added to the
// module, LLVM IR, LLVM's optimizer and code
// generator for the host, and the system linker.
//
//===----------------------------------------------------------------------===//

#include "te/Target/CPU/CPUTarget.h"
#include "te/Target/CompileRecorder.h"
#include "te/Target/KernelManifest.h"

#include "te/ABI/HostFeatures.h"

#include "te/Conversion/TEToLinalg/TEToLinalg.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <mutex>

using namespace mlir;
using namespace mlir::te;

namespace {

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// Removes a file when it goes out of scope.
struct TemporaryFile {
  SmallString<128> path;
  ~TemporaryFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

/// The thread-local record of a launch's first failed allocation: its
/// size in bytes and the address of the site's text ("{@k}", te op k of the
/// program, or a source location), read and cleared by the runtime through
/// te_kernel_take_alloc_failure after each launch.
constexpr StringLiteral kAllocFailureGlobal = "__te_alloc_failure";

/// Makes every heap allocation of the kernels (memref.alloc lowered to
/// malloc or aligned_alloc) checked: a null result records the size and the
/// op in the launching thread's record and leaves the code that would use
/// it: a function returns, an OpenMP region ends its iteration. Callers of a
/// function that can fail, and the code after a parallel region that can,
/// test the record and return in turn, so the kernel returns to the runtime,
/// which reports TE_ERROR_OUT_OF_MEMORY. Internal functions get the record's
/// address as one more argument, because they may run on OpenMP's worker
/// threads, whose own thread-local records the runtime never reads.
class AllocationChecks {
public:
  explicit AllocationChecks(ModuleOp module)
      : module(module), ctx(module.getContext()), b(ctx), loc(module.getLoc()),
        ptrType(LLVM::LLVMPointerType::get(ctx)), i64(b.getI64Type()) {}

  void run() {
    collectAllocations();
    addRecord();
    if (allocations.empty())
      return;
    addRecordFailure();
    findFunctionsThatMayFail();
    passRecords();
    checkAllocationResults();
    checkFailurePoints();
  }

private:
  /// Allocation calls (the functions that contain them may fail).
  void collectAllocations() {
    module.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (callee && (*callee == "malloc" || *callee == "aligned_alloc") &&
          call.getNumResults() == 1)
        allocations.push_back(call);
    });
  }

  Value recordAddress(OpBuilder &at) {
    Value global = LLVM::AddressOfOp::create(at, loc, record);
    return LLVM::ThreadlocalAddressOp::create(at, loc, ptrType, global);
  }
  Value slot(OpBuilder &at, Value base, int32_t index) {
    return LLVM::GEPOp::create(at, loc, ptrType, i64, base,
                               ArrayRef<LLVM::GEPArg>{index});
  }

  /// The record and its getter, in every library, so that the runtime asks
  /// every library the same way.
  void addRecord() {
    b.setInsertionPointToEnd(module.getBody());
    record = LLVM::GlobalOp::create(
        b, loc, LLVM::LLVMArrayType::get(i64, 2), /*isConstant=*/false,
        LLVM::Linkage::Internal, kAllocFailureGlobal,
        DenseElementsAttr::get(RankedTensorType::get({2}, i64),
                               ArrayRef<int64_t>{0, 0}),
        /*alignment=*/8, /*addrSpace=*/0, /*dsoLocal=*/false,
        /*thread_local_=*/true);
    // const char *te_kernel_take_alloc_failure(uint64_t *bytes): the
    // calling thread's record, cleared.
    auto getter = LLVM::LLVMFuncOp::create(
        b, loc, "te_kernel_take_alloc_failure",
        LLVM::LLVMFunctionType::get(ptrType, {ptrType}));
    OpBuilder::InsertionGuard guard(b);
    Block *body = getter.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    Value base = recordAddress(b);
    Value zero = LLVM::ConstantOp::create(b, loc, i64, 0);
    Value bytes = LLVM::LoadOp::create(b, loc, i64, slot(b, base, 0));
    Value site = LLVM::LoadOp::create(b, loc, i64, slot(b, base, 1));
    LLVM::StoreOp::create(b, loc, bytes, body->getArgument(0));
    LLVM::StoreOp::create(b, loc, zero, slot(b, base, 0));
    LLVM::StoreOp::create(b, loc, zero, slot(b, base, 1));
    LLVM::ReturnOp::create(b, loc,
                           LLVM::IntToPtrOp::create(b, loc, ptrType, site));
  }

  /// __te_alloc_failed(record, bytes, site): the first failure of a launch
  /// wins; workers of a parallel region may fail at the same time.
  void addRecordFailure() {
    recordFailure = LLVM::LLVMFuncOp::create(
        b, loc, "__te_alloc_failed",
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {ptrType, i64, ptrType}),
        LLVM::Linkage::Internal);
    OpBuilder::InsertionGuard guard(b);
    Block *entry = recordFailure.addEntryBlock(b);
    Block *first = recordFailure.addBlock();
    Block *done = recordFailure.addBlock();
    b.setInsertionPointToStart(entry);
    Value zero = LLVM::ConstantOp::create(b, loc, i64, 0);
    Value exchanged = LLVM::AtomicCmpXchgOp::create(
        b, loc, entry->getArgument(0), zero, entry->getArgument(1),
        LLVM::AtomicOrdering::acq_rel, LLVM::AtomicOrdering::monotonic);
    Value won = LLVM::ExtractValueOp::create(b, loc, exchanged, 1);
    LLVM::CondBrOp::create(b, loc, won, first, done);
    b.setInsertionPointToStart(first);
    Value site = LLVM::PtrToIntOp::create(b, loc, i64, entry->getArgument(2));
    LLVM::StoreOp::create(b, loc, site, slot(b, entry->getArgument(0), 1),
                          /*alignment=*/8, /*isVolatile=*/false,
                          /*isNonTemporal=*/false, /*isInvariantGroup=*/false,
                          LLVM::AtomicOrdering::monotonic);
    LLVM::BrOp::create(b, loc, done);
    b.setInsertionPointToStart(done);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }

  /// The functions that can fail: those with an allocation, and their
  /// callers; and the calls of them.
  void findFunctionsThatMayFail() {
    for (LLVM::CallOp call : allocations)
      mayFail.insert(call->getParentOfType<LLVM::LLVMFuncOp>());
    SymbolTable symbols(module);
    for (bool changed = true; changed;) {
      changed = false;
      failingCalls.clear();
      module.walk([&](LLVM::CallOp call) {
        std::optional<StringRef> callee = call.getCallee();
        auto function =
            callee ? symbols.lookup<LLVM::LLVMFuncOp>(*callee) : nullptr;
        if (!function || !mayFail.contains(function))
          return;
        failingCalls.push_back(call);
        changed |=
            mayFail.insert(call->getParentOfType<LLVM::LLVMFuncOp>()).second;
      });
    }
  }

  /// The record's address in each function that can fail: an argument of
  /// internal functions, the launching thread's record in entry points.
  void passRecords() {
    DenseSet<StringRef> takeRecord;
    for (Operation *op : mayFail) {
      auto function = cast<LLVM::LLVMFuncOp>(op);
      Block &entry = function.getBody().front();
      if (function.getLinkage() == LLVM::Linkage::Internal ||
          function.getLinkage() == LLVM::Linkage::Private) {
        LLVM::LLVMFunctionType type = function.getFunctionType();
        SmallVector<Type> inputs(type.getParams());
        inputs.push_back(ptrType);
        function.setFunctionType(LLVM::LLVMFunctionType::get(
            type.getReturnType(), inputs, type.isVarArg()));
        if (ArrayAttr argAttrs = function.getArgAttrsAttr()) {
          SmallVector<Attribute> attrs(argAttrs.getValue());
          attrs.push_back(b.getDictionaryAttr({}));
          function.setArgAttrsAttr(b.getArrayAttr(attrs));
        }
        records[op] = entry.addArgument(ptrType, loc);
        takeRecord.insert(function.getSymName());
        continue;
      }
      OpBuilder at = OpBuilder::atBlockBegin(&entry);
      records[op] = recordAddress(at);
    }
    for (LLVM::CallOp call : failingCalls) {
      if (!takeRecord.contains(*call.getCallee()))
        continue;
      Value record = records.lookup(call->getParentOfType<LLVM::LLVMFuncOp>());
      call.getCalleeOperandsMutable().append(record);
    }
  }

  /// Leaves the code after `op` when `failed`: returns from its function,
  /// or ends the OpenMP region it is in, after `onFailure`.
  void splitAfter(Operation *op, Value failed,
                  function_ref<void(OpBuilder &)> onFailure) {
    Region *region = op->getParentRegion();
    auto function = dyn_cast<LLVM::LLVMFuncOp>(region->getParentOp());
    // The region's own terminator (omp.yield, omp.terminator) where it
    // takes no operands, as in te-mlir's loops; other regions stay as
    // they are.
    Operation *terminator = nullptr;
    for (Block &block : *region)
      if (!block.empty() && block.back().hasTrait<OpTrait::IsTerminator>() &&
          block.back().getNumSuccessors() == 0 &&
          block.back().getNumOperands() == 0)
        terminator = &block.back();
    if (!function && !terminator)
      return;
    Block *before = op->getBlock();
    Block *rest = before->splitBlock(op->getNextNode());
    Block *exit = b.createBlock(region, region->end());
    b.setInsertionPointToStart(exit);
    onFailure(b);
    if (function) {
      Type result = function.getFunctionType().getReturnType();
      if (isa<LLVM::LLVMVoidType>(result))
        LLVM::ReturnOp::create(b, loc, ValueRange{});
      else
        LLVM::ReturnOp::create(b, loc,
                               LLVM::PoisonOp::create(b, loc, result).getRes());
    } else {
      b.clone(*terminator);
    }
    b.setInsertionPointToEnd(before);
    LLVM::CondBrOp::create(b, loc, failed, exit, rest);
  }

  /// A null allocation records its size and site ("{@k}" or a location).
  void checkAllocationResults() {
    unsigned sites = 0;
    for (LLVM::CallOp call : allocations) {
      Value record = records.lookup(call->getParentOfType<LLVM::LLVMFuncOp>());
      Value bytes = call.getArgOperands().back();
      std::optional<unsigned> ordinal = getTEOpOrdinal(call.getLoc());
      std::string site = ordinal ? "{@" + std::to_string(*ordinal) + "}"
                                 : formatSourceLocation(call.getLoc());
      site.push_back('\0');
      b.setInsertionPointAfter(call);
      Value null = LLVM::ZeroOp::create(b, loc, ptrType);
      Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                                          call.getResult(), null);
      splitAfter(failed.getDefiningOp(), failed, [&](OpBuilder &at) {
        Value text = LLVM::createGlobalString(
            loc, at, "__te_alloc_site" + std::to_string(sites++), site,
            LLVM::Linkage::Internal);
        LLVM::CallOp::create(at, loc, recordFailure,
                             ValueRange{record, bytes, text});
      });
    }
  }

  /// After a call that can fail, and after a parallel region that can, the
  /// record is tested.
  void checkFailurePoints() {
    SmallVector<Operation *> failurePoints(failingCalls.begin(),
                                           failingCalls.end());
    DenseSet<Operation *> failing(failurePoints.begin(), failurePoints.end());
    module.walk([&](omp::ParallelOp parallel) {
      bool fails = false;
      parallel.walk([&](LLVM::CallOp call) {
        fails |= call.getCallee() == recordFailure.getSymName() ||
                 failing.contains(call);
      });
      if (fails)
        failurePoints.push_back(parallel);
    });
    for (Operation *op : failurePoints) {
      Value record = records.lookup(op->getParentOfType<LLVM::LLVMFuncOp>());
      b.setInsertionPointAfter(op);
      Value bytes = LLVM::LoadOp::create(b, loc, i64, record);
      Value zero = LLVM::ConstantOp::create(b, loc, i64, 0);
      Value failed =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, bytes, zero);
      splitAfter(failed.getDefiningOp(), failed, [](OpBuilder &) {});
    }
  }

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  LLVM::LLVMPointerType ptrType;
  Type i64;
  LLVM::GlobalOp record;
  LLVM::LLVMFuncOp recordFailure;
  SmallVector<LLVM::CallOp> allocations;
  DenseSet<Operation *> mayFail;
  SmallVector<LLVM::CallOp> failingCalls;
  DenseMap<Operation *, Value> records;
};

void checkAllocations(ModuleOp module) { AllocationChecks(module).run(); }

/// Routes the kernels' heap allocations (malloc, aligned_alloc and free)
/// through two function pointers, the C library's until the runtime gives
/// its own with te_kernel_set_allocator (te/Runtime/HostTemporaries.h:
/// it keeps large blocks for the next launch, which fresh pages from the
/// OS would make pay a page fault per 4 KiB).
void routeAllocations(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = module.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  auto allocateType = LLVM::LLVMFunctionType::get(ptrType, {i64, i64});
  auto releaseType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptrType});
  constexpr StringLiteral kMalloc = "__te_malloc",
                          kAlignedAlloc = "__te_aligned_alloc",
                          kFree = "__te_free";
  module.walk([&](LLVM::CallOp call) {
    std::optional<StringRef> callee = call.getCallee();
    if (!callee)
      return;
    if (*callee == "malloc")
      call.setCallee(kMalloc);
    else if (*callee == "aligned_alloc")
      call.setCallee(kAlignedAlloc);
    else if (*callee == "free")
      call.setCallee(kFree);
  });

  b.setInsertionPointToEnd(module.getBody());
  auto declare = [&](StringRef name, LLVM::LLVMFunctionType type) {
    if (auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
      return function;
    return LLVM::LLVMFuncOp::create(b, loc, name, type);
  };
  auto define = [&](StringRef name, LLVM::LLVMFunctionType type,
                    LLVM::Linkage linkage) {
    auto function = LLVM::LLVMFuncOp::create(b, loc, name, type, linkage);
    b.setInsertionPointToStart(function.addEntryBlock(b));
    return function;
  };
  LLVM::LLVMFuncOp cAlignedAlloc = declare("aligned_alloc", allocateType);
  LLVM::LLVMFuncOp cFree = declare("free", releaseType);
  // The C library's, in the runtime's signature (size, alignment).
  LLVM::LLVMFuncOp cAllocate;
  {
    OpBuilder::InsertionGuard guard(b);
    cAllocate =
        define("__te_c_allocate", allocateType, LLVM::Linkage::Internal);
    Value result = LLVM::CallOp::create(b, loc, cAlignedAlloc,
                                        ValueRange{cAllocate.getArgument(1),
                                                   cAllocate.getArgument(0)})
                       .getResult();
    LLVM::ReturnOp::create(b, loc, result);
  }
  auto pointerTo = [&](StringRef name, LLVM::LLVMFuncOp initial) {
    auto global =
        LLVM::GlobalOp::create(b, loc, ptrType, /*isConstant=*/false,
                               LLVM::Linkage::Internal, name, Attribute());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.createBlock(&global.getInitializerRegion()));
    LLVM::ReturnOp::create(b, loc, LLVM::AddressOfOp::create(b, loc, initial));
    return global;
  };
  LLVM::GlobalOp allocate = pointerTo("__te_allocate", cAllocate);
  LLVM::GlobalOp release = pointerTo("__te_release", cFree);
  auto load = [&](LLVM::GlobalOp global) -> Value {
    return LLVM::LoadOp::create(b, loc, ptrType,
                                LLVM::AddressOfOp::create(b, loc, global));
  };

  // malloc(size): alignment 16, as glibc's.
  {
    OpBuilder::InsertionGuard guard(b);
    auto function = define(kMalloc, LLVM::LLVMFunctionType::get(ptrType, {i64}),
                           LLVM::Linkage::Internal);
    Value size = function.getArgument(0);
    Value alignment = LLVM::ConstantOp::create(b, loc, i64, 16);
    Value result =
        LLVM::CallOp::create(b, loc, allocateType,
                             ValueRange{load(allocate), size, alignment})
            .getResult();
    LLVM::ReturnOp::create(b, loc, result);
  }
  // aligned_alloc(alignment, size).
  {
    OpBuilder::InsertionGuard guard(b);
    auto function =
        define(kAlignedAlloc, allocateType, LLVM::Linkage::Internal);
    Value result =
        LLVM::CallOp::create(b, loc, allocateType,
                             ValueRange{load(allocate), function.getArgument(1),
                                        function.getArgument(0)})
            .getResult();
    LLVM::ReturnOp::create(b, loc, result);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    auto function = define(kFree, releaseType, LLVM::Linkage::Internal);
    LLVM::CallOp::create(b, loc, releaseType,
                         ValueRange{load(release), function.getArgument(0)});
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
  // te_kernel_set_allocator(allocate, release).
  {
    OpBuilder::InsertionGuard guard(b);
    auto function =
        define("te_kernel_set_allocator",
               LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                           {ptrType, ptrType}),
               LLVM::Linkage::External);
    LLVM::StoreOp::create(b, loc, function.getArgument(0),
                          LLVM::AddressOfOp::create(b, loc, allocate));
    LLVM::StoreOp::create(b, loc, function.getArgument(1),
                          LLVM::AddressOfOp::create(b, loc, release));
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }
}

} // namespace

LogicalResult mlir::te::emitKernelABI(ModuleOp llvmModule,
                                      ArrayRef<KernelEntry> entries,
                                      StringRef manifestText,
                                      std::string *finalManifest) {
  MLIRContext *ctx = llvmModule.getContext();
  Location loc = llvmModule.getLoc();
  checkAllocations(llvmModule);
  routeAllocations(llvmModule);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(llvmModule.getBody());
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto voidType = LLVM::LLVMVoidType::get(ctx);

  // `<name>__te_packed(void **args)`, calling `callee` with the pointers.
  auto addPackedEntry = [&](LLVM::LLVMFuncOp callee, StringRef name) {
    // Only the packed entry point is the library's interface.
    callee.setLinkage(LLVM::Linkage::Internal);
    auto wrapper = LLVM::LLVMFuncOp::create(
        b, loc, (name + "__te_packed").str(),
        LLVM::LLVMFunctionType::get(voidType, {ptrType}));
    OpBuilder::InsertionGuard guard(b);
    Block *body = wrapper.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    // A launch starts with no failed allocation (the runtime clears the
    // record after each launch; other hosts may not).
    auto record = llvmModule.lookupSymbol<LLVM::GlobalOp>(kAllocFailureGlobal);
    Value address = LLVM::ThreadlocalAddressOp::create(
        b, loc, ptrType, LLVM::AddressOfOp::create(b, loc, record));
    LLVM::StoreOp::create(
        b, loc, LLVM::ConstantOp::create(b, loc, b.getI64Type(), 0), address);
    SmallVector<Value> pointers;
    for (unsigned i = 0; i < callee.getNumArguments(); ++i) {
      Value slot =
          LLVM::GEPOp::create(b, loc, ptrType, ptrType, body->getArgument(0),
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      pointers.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
    }
    LLVM::CallOp::create(b, loc, callee, pointers);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  };

  // Entry points cut into steps (te-cpu-host-steps): their plans go into
  // the manifest, and each step is a packed function of its own.
  auto steps = llvmModule->getAttrOfType<DictionaryAttr>(kHostStepsAttrName);
  llvmModule->removeAttr(kHostStepsAttrName);
  FailureOr<::te::abi::Manifest> manifest =
      readKernelManifest(manifestText, entries, loc);
  if (failed(manifest))
    return failure();

  for (auto [index, entry] : llvm::enumerate(entries)) {
    auto callee = llvmModule.lookupSymbol<LLVM::LLVMFuncOp>(entry.name);
    size_t numArgs = entry.inputs.size() + entry.outputs.size();
    if (!callee || callee.getNumArguments() != numArgs ||
        !isa<LLVM::LLVMVoidType>(callee.getFunctionType().getReturnType()))
      return mlir::emitError(callee ? callee.getLoc() : loc, "kernel @")
             << entry.name << " did not lower to a function taking " << numArgs
             << " buffer pointers";
    // te_kernel_launch refuses an output that aliases another argument, so
    // the outputs are noalias: without it LLVM must assume that every FP8
    // or bf16 store may overwrite the inputs it reads (a scale, say), keeps
    // reloading them and does not vectorize the loop.
    for (size_t i = entry.inputs.size(); i < numArgs; ++i)
      callee.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                        b.getUnitAttr());
    addPackedEntry(callee, entry.name);

    auto lines = steps ? steps.getAs<ArrayAttr>(entry.name) : ArrayAttr();
    if (!lines)
      continue;
    ::te::abi::ManifestEntry &stated = manifest->entries[index];
    std::vector<std::string> text;
    for (StringRef line : lines.getAsValueRange<StringAttr>())
      text.push_back(line.str());
    std::string error;
    if (!::te::abi::readStepPlan(text, stated.plan, error))
      return mlir::emitError(loc, "the step plan of @")
             << entry.name << " does not read: " << error;
    for (::te::abi::ManifestStep &step : stated.plan.steps) {
      // The status of run-time checks is the kernel's last argument; the
      // runtime supplies it as the status operand.
      for (::te::abi::ManifestOperand &operand : step.operands)
        if (stated.hasStatus && operand == ::te::abi::ManifestOperand::argument(
                                               static_cast<int>(numArgs - 1)))
          operand = ::te::abi::ManifestOperand::status();
      if (step.isCall())
        continue;
      StringRef symbol = step.symbol;
      if (!symbol.consume_back("__te_packed"))
        return mlir::emitError(loc, "a step of @")
               << entry.name << " names '" << step.symbol
               << "', not a packed function";
      auto function = llvmModule.lookupSymbol<LLVM::LLVMFuncOp>(symbol);
      if (!function)
        return mlir::emitError(loc, "step function @")
               << symbol << " of @" << entry.name << " is missing";
      addPackedEntry(function, symbol);
    }
  }

  // te_kernel_set_num_threads(n): the thread count of the kernels'
  // OpenMP regions (te-cpu-openmp-threads reads it; 0: OpenMP's default).
  // Every library has it, so the runtime need not know which kernels run
  // in parallel.
  {
    Type i32 = b.getI32Type();
    auto global = llvmModule.lookupSymbol<LLVM::GlobalOp>("__te_num_threads");
    if (!global)
      global = LLVM::GlobalOp::create(
          b, loc, i32, /*isConstant=*/false, LLVM::Linkage::Internal,
          "__te_num_threads", b.getI32IntegerAttr(0));
    auto setter =
        LLVM::LLVMFuncOp::create(b, loc, "te_kernel_set_num_threads",
                                 LLVM::LLVMFunctionType::get(voidType, {i32}));
    OpBuilder::InsertionGuard guard(b);
    Block *body = setter.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    Value address = LLVM::AddressOfOp::create(b, loc, global);
    LLVM::StoreOp::create(b, loc, body->getArgument(0), address);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }

  FailureOr<std::string> written = writeKernelManifest(*manifest, loc);
  if (failed(written))
    return failure();
  if (finalManifest)
    *finalManifest = *written;
  written->push_back('\0');
  auto textType =
      LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), written->size());
  auto global = LLVM::GlobalOp::create(
      b, loc, textType, /*isConstant=*/true, LLVM::Linkage::Internal,
      "__te_kernel_manifest", b.getStringAttr(*written));
  auto getter = LLVM::LLVMFuncOp::create(
      b, loc, "te_kernel_manifest", LLVM::LLVMFunctionType::get(ptrType, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(getter.addEntryBlock(b));
  Value address = LLVM::AddressOfOp::create(b, loc, global);
  LLVM::ReturnOp::create(b, loc, address);
  return success();
}

LogicalResult
mlir::te::writeHostKernelLibrary(ModuleOp module, ArrayRef<KernelEntry> entries,
                                 StringRef manifest, StringRef outputPath,
                                 const HostLibraryOptions &options) {
  return writeHostArtifact(module, entries, manifest,
                           HostArtifact::SharedLibrary, outputPath, options);
}

namespace {

void dumpStage(StringRef name, StringRef extension,
               function_ref<void(raw_ostream &)> print) {
  if (CompileRecorder *recorder = CompileRecorder::getCurrent())
    recorder->dump(name, extension, print);
}

bool isDumping() {
  CompileRecorder *recorder = CompileRecorder::getCurrent();
  return recorder && recorder->isDumping();
}

/// The JIT's object writer has no assembler for inline assembly: LLVM
/// would end the process at code generation ("Inline asm not supported by
/// this streamer"). Host code with llvm.inline_asm is refused where it is
/// written. (Device modules nested in the host module are compiled by
/// their own target, which may take it: only host code is looked at.)
LogicalResult refuseInlineAssembly(ModuleOp module) {
  LogicalResult result = success();
  module.walk([&](LLVM::InlineAsmOp op) {
    if (op->getParentWithTrait<OpTrait::SymbolTable>() != module.getOperation())
      return WalkResult::advance();
    result = op.emitError(
        "inline assembly cannot be compiled for the host: te-mlir's JIT "
        "writes object files without an assembler; express the operation "
        "with MLIR ops or LLVM intrinsics instead");
    return WalkResult::interrupt();
  });
  return result;
}

/// Prepares `module` for LLVM's scalar lowering of the AMX intrinsics
/// (TE_CPU_AMX=emulate): that lowering takes tile values only from loads,
/// products and the vector bitcasts clang writes, so each tile zero
/// becomes a load of zeros (a row stride of 0 reads one zero row again),
/// and it runs only in unoptimized code generation (the target machine is
/// created for that).
void prepareScalarTileEmulation(llvm::Module &module) {
  llvm::Function *zero = module.getFunction("llvm.x86.tilezero.internal");
  if (!zero)
    return;
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *row = llvm::ArrayType::get(llvm::Type::getInt8Ty(context), 64);
  auto *zeros = new llvm::GlobalVariable(
      module, row, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantAggregateZero::get(row), "te.tile_zeros");
  zeros->setAlignment(llvm::Align(64));
  llvm::Function *load = llvm::Intrinsic::getOrInsertDeclaration(
      &module, llvm::Intrinsic::x86_tileloadd64_internal);
  for (llvm::User *user : llvm::make_early_inc_range(zero->users())) {
    auto *call = llvm::dyn_cast<llvm::CallInst>(user);
    if (!call)
      continue;
    llvm::IRBuilder<> builder(call);
    llvm::Value *replacement = builder.CreateCall(
        load, {call->getArgOperand(0), call->getArgOperand(1), zeros,
               builder.getInt64(0)});
    call->replaceAllUsesWith(replacement);
    call->eraseFromParent();
  }
}

/// Adds te_kernel_cpu_features (te/ABI/HostFeatures.h): the checkable
/// features of `features` (an LLVM feature string) the code may use. An
/// emulated tile instruction is scalar code: its features are left out.
void addCPUFeatures(llvm::Module &module, StringRef features,
                    bool emulatedTiles) {
  std::string list;
  SmallVector<StringRef> parts;
  features.split(parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    if (!part.consume_front("+") ||
        !::te::abi::isCheckableCPUFeature(part.str()) ||
        (emulatedTiles && part.starts_with("amx-")))
      continue;
    if (!list.empty())
      list += ',';
    list += part.str();
  }
  llvm::LLVMContext &context = module.getContext();
  llvm::Constant *text = llvm::ConstantDataArray::getString(context, list);
  auto *global = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, text, "te.cpu_features");
  auto *function = llvm::Function::Create(
      llvm::FunctionType::get(llvm::PointerType::get(context, 0), false),
      llvm::GlobalValue::ExternalLinkage, ::te::abi::kCPUFeaturesSymbol,
      module);
  llvm::IRBuilder<> builder(
      llvm::BasicBlock::Create(context, "entry", function));
  builder.CreateRet(global);
}

/// Turns on LLVM's scalar AMX lowering (a command-line option of the X86
/// backend), once per process.
void enableScalarTileLowering() {
  static const bool enabled = [] {
    auto &options = llvm::cl::getRegisteredOptions();
    auto it = options.find("enable-x86-scalar-amx");
    if (it == options.end())
      return false;
    it->second->addOccurrence(0, "enable-x86-scalar-amx", "true");
    return true;
  }();
  (void)enabled;
}

/// Runs the code generator of `machine` on `module` and returns the object
/// file or assembly.
FailureOr<std::string> generateCode(Location loc, llvm::Module &module,
                                    llvm::TargetMachine &machine,
                                    llvm::CodeGenFileType type) {
  SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr, type))
    return mlir::emitError(loc, "LLVM cannot emit ")
           << (type == llvm::CodeGenFileType::ObjectFile ? "object files"
                                                         : "assembly")
           << " for " << machine.getTargetTriple().str();
  codegen.run(module);
  return std::string(buffer.str());
}

/// Links `object` (an object file's bytes) into the shared library
/// `outputPath`, with `linkArgs` after it.
LogicalResult linkSharedLibrary(Location loc, StringRef object,
                                ArrayRef<std::string> linkArgs,
                                StringRef outputPath,
                                const HostLibraryOptions &options) {
  TemporaryFile objectFile;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "te-kernel", "o", fd, objectFile.path))
    return mlir::emitError(loc, "cannot create a temporary object file: ")
           << ec.message();
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
    os.flush();
    if (std::error_code ec = os.error()) {
      // A stream destroyed with an error pending ends the process.
      os.clear_error();
      return mlir::emitError(loc, "cannot write the temporary object file ")
             << objectFile.path << ": " << ec.message()
             << " (set TMPDIR to a directory with free space)";
    }
  }

  TemporaryFile linkLog;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "te-kernel-link", "log", linkLog.path))
    return mlir::emitError(loc, "cannot create a temporary file: ")
           << ec.message();
  std::string output = outputPath.str();
  SmallVector<StringRef> args = {
      options.linker, "-shared", "--no-undefined-version",
      "-o",           output,    objectFile.path};
  for (const std::string &arg : linkArgs)
    args.push_back(arg);
  std::optional<StringRef> redirects[] = {std::nullopt, linkLog.path,
                                          linkLog.path};
  std::string execError;
  int status = llvm::sys::ExecuteAndWait(options.linker, args, std::nullopt,
                                         redirects, 0, 0, &execError);
  if (status != 0) {
    std::string log;
    if (auto buffer = llvm::MemoryBuffer::getFile(linkLog.path))
      log = (*buffer)->getBuffer().trim().str();
    return mlir::emitError(loc, "linking the kernel library with ")
           << options.linker << " failed ("
           << (execError.empty() ? log : execError) << ")";
  }
  return success();
}

} // namespace

LogicalResult mlir::te::writeHostArtifact(ModuleOp module,
                                          ArrayRef<KernelEntry> entries,
                                          StringRef manifest,
                                          HostArtifact artifact,
                                          StringRef outputPath,
                                          const HostLibraryOptions &options) {
  Location loc = module.getLoc();
  if (artifact != HostArtifact::LLVMIR && failed(refuseInlineAssembly(module)))
    return failure();
  std::unique_ptr<StageTimer> stage =
      std::make_unique<StageTimer>("llvm-translate");
  if (failed(emitKernelABI(module, entries, manifest, options.manifest)))
    return failure();

  // Runtime libraries of plugin lowerings: linked, and found at load time
  // through the rpath. The attribute is not for the LLVM translation.
  SmallVector<std::string> linkArgs;
  if (auto libraries =
          module->getAttrOfType<ArrayAttr>(plugin::kLinkLibrariesAttrName)) {
    for (auto library : libraries.getAsRange<StringAttr>()) {
      linkArgs.push_back(library.getValue().str());
      linkArgs.push_back(
          "-rpath=" + llvm::sys::path::parent_path(library.getValue()).str());
    }
    module->removeAttr(plugin::kLinkLibrariesAttrName);
  }

  // Parallel loops call LLVM's OpenMP runtime.
  bool usesOpenMP = false;
  module.walk([&](Operation *op) {
    if (isa<omp::OpenMPDialect>(op->getDialect())) {
      usesOpenMP = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (usesOpenMP)
    linkArgs.push_back(TE_MLIR_OPENMP_LIBRARY);
  // On hosts without AVX512-BF16, x86 code generation widens some bf16
  // values to f32 and narrows them back with compiler-rt's __truncsfbf2:
  // unoptimized code (emulated tiles) and vectorized selects of bf16
  // values (the NaN of a rounding, a value passed through a branch). The
  // archive adds only the routines a kernel calls.
  if (!StringRef(TE_MLIR_COMPILER_RT_BUILTINS).empty())
    linkArgs.push_back(TE_MLIR_COMPILER_RT_BUILTINS);

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "te-kernel");
  if (!llvmModule)
    return mlir::emitError(loc, "translation to LLVM IR failed");

  initializeNativeTarget();
  if (std::optional<std::string> error = plugin::getHostTargetError())
    return mlir::emitError(loc, *error);
  const plugin::TargetInfo &host = plugin::getHostTarget();
  llvm::Triple triple(host.triple);
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return mlir::emitError(loc, "no LLVM target for ")
           << triple.str() << ": " << error;
  // Emulated tiles need unoptimized code generation (the IR is optimized
  // all the same).
  bool emulateTiles = plugin::isEmulatingHostTiles();
  if (emulateTiles)
    enableScalarTileLowering();
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, host.cpu, host.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt,
      emulateTiles ? llvm::CodeGenOptLevel::None
                   : llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  addCPUFeatures(*llvmModule, host.features, emulateTiles);
  // LLVM's tuning for Intel's AVX-512 cores vectorizes loops 256 bits wide
  // (a frequency precaution dating from Skylake-SP). The loops LLVM
  // vectorizes in te kernels (FP8 casts, amax) are compute bound and run
  // about 2.7x faster at the full 512 bits on current cores (bench/README.md),
  // so use them wherever AVX-512 is present. The host's features are part
  // of every kernel cache key.
  if (host.hasFeature("avx512f"))
    for (llvm::Function &function : *llvmModule)
      if (!function.isDeclaration())
        function.addFnAttr("prefer-vector-width", "512");
  dumpStage("llvm", "ll", [&](raw_ostream &os) { llvmModule->print(os, {}); });

  stage = std::make_unique<StageTimer>("llvm-optimize");
  auto optimize = makeOptimizingTransformer(options.optLevel,
                                            /*sizeLevel=*/0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return mlir::emitError(loc, "LLVM optimization failed: ")
           << llvm::toString(std::move(err));
  if (emulateTiles)
    prepareScalarTileEmulation(*llvmModule);
  dumpStage("llvm-optimized", "ll",
            [&](raw_ostream &os) { llvmModule->print(os, {}); });
  if (artifact == HostArtifact::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, {});
    return writeOutputFile(loc, outputPath, text);
  }

  stage = std::make_unique<StageTimer>("llvm-codegen");
  // Code generation changes the module it runs on (CodeGenPrepare, ...):
  // the assembly of a dump comes from a copy, so that the object file is
  // exactly what it is without dumps.
  if (artifact == HostArtifact::Assembly || isDumping()) {
    std::unique_ptr<llvm::Module> copy = artifact == HostArtifact::Assembly
                                             ? nullptr
                                             : llvm::CloneModule(*llvmModule);
    FailureOr<std::string> assembly =
        generateCode(loc, copy ? *copy : *llvmModule, *machine,
                     llvm::CodeGenFileType::AssemblyFile);
    if (failed(assembly))
      return failure();
    dumpStage("assembly", "s", [&](raw_ostream &os) { os << *assembly; });
    if (artifact == HostArtifact::Assembly)
      return writeOutputFile(loc, outputPath, *assembly);
  }
  FailureOr<std::string> object = generateCode(
      loc, *llvmModule, *machine, llvm::CodeGenFileType::ObjectFile);
  if (failed(object))
    return failure();
  if (artifact == HostArtifact::Object)
    return writeOutputFile(loc, outputPath, *object);

  stage = std::make_unique<StageTimer>("link");
  return linkSharedLibrary(loc, *object, linkArgs, outputPath, options);
}
