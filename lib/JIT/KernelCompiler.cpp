//===- KernelCompiler.cpp - te modules to loadable kernel libraries -------===//

#include "te/JIT/KernelCompiler.h"

#include "te/Pipelines/Pipelines.h"
#include "te/Plugin/PluginManager.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace mlir;
using namespace mlir::te;

namespace {

/// The element types the runtime's manifest parser knows, by MLIR spelling.
bool isKernelElementType(Type type) {
  return type.isF32() || type.isF64() || type.isF16() || type.isBF16() ||
         isa<Float8E4M3FNType, Float8E5M2Type, Float8E8M0FNUType>(type) ||
         type.isSignlessInteger(1) || type.isSignlessInteger(8) ||
         type.isSignlessInteger(32) || type.isSignlessInteger(64);
}

LogicalResult checkKernelType(func::FuncOp func, Type type, StringRef role,
                              unsigned index) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (tensor && tensor.hasStaticShape() && tensor.getNumElements() == 0)
    return func.emitError("kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type << " with no elements; kernels take and return tensors "
           << "with at least one element";
  if (!tensor || !tensor.hasStaticShape() ||
      !isKernelElementType(tensor.getElementType()))
    return func.emitError("kernel @")
           << func.getSymName() << ": " << role << " " << index << " has type "
           << type
           << "; kernels take and return statically shaped tensors of f32, "
              "f64, f16, bf16, f8E4M3FN, f8E5M2, f8E8M0FNU, i1, i8, i32 or "
              "i64";
  return success();
}

void printTensorType(llvm::raw_ostream &os, RankedTensorType type) {
  os << type.getElementType() << ' ';
  if (type.getRank() == 0) {
    os << "scalar";
    return;
  }
  llvm::interleave(type.getShape(), os, "x");
}

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

} // namespace

FailureOr<SmallVector<KernelEntry>>
mlir::te::collectKernelEntries(ModuleOp module) {
  SmallVector<KernelEntry> entries;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isPrivate() || func.isExternal())
      continue;
    KernelEntry entry{func.getSymName().str(), {}, {}};
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      if (failed(checkKernelType(func, type, "argument", i)))
        return failure();
      entry.inputs.push_back(cast<RankedTensorType>(type));
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      if (failed(checkKernelType(func, type, "result", i)))
        return failure();
      entry.outputs.push_back(cast<RankedTensorType>(type));
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty())
    return mlir::emitError(module.getLoc(),
                           "the module has no public function to compile "
                           "as a kernel entry point");
  return entries;
}

std::string mlir::te::formatKernelManifest(ArrayRef<KernelEntry> entries) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "te-kernel-abi 1\n";
  for (const KernelEntry &entry : entries) {
    os << "entry " << entry.name << ' ' << entry.name << "__te_packed\n";
    for (RankedTensorType type : entry.inputs) {
      os << "in ";
      printTensorType(os, type);
      os << '\n';
    }
    for (RankedTensorType type : entry.outputs) {
      os << "out ";
      printTensorType(os, type);
      os << '\n';
    }
    os << "end\n";
  }
  return text;
}

LogicalResult mlir::te::emitKernelABI(ModuleOp llvmModule,
                                      ArrayRef<KernelEntry> entries) {
  MLIRContext *ctx = llvmModule.getContext();
  Location loc = llvmModule.getLoc();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(llvmModule.getBody());
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto voidType = LLVM::LLVMVoidType::get(ctx);

  for (const KernelEntry &entry : entries) {
    auto callee = llvmModule.lookupSymbol<LLVM::LLVMFuncOp>(entry.name);
    size_t numArgs = entry.inputs.size() + entry.outputs.size();
    if (!callee || callee.getNumArguments() != numArgs ||
        !isa<LLVM::LLVMVoidType>(callee.getFunctionType().getReturnType()))
      return mlir::emitError(loc, "kernel @")
             << entry.name << " did not lower to a function taking " << numArgs
             << " buffer pointers";
    // Only the packed entry point is the library's interface.
    callee.setLinkage(LLVM::Linkage::Internal);

    auto wrapper = LLVM::LLVMFuncOp::create(
        b, loc, entry.name + "__te_packed",
        LLVM::LLVMFunctionType::get(voidType, {ptrType}));
    OpBuilder::InsertionGuard guard(b);
    Block *body = wrapper.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    SmallVector<Value> pointers;
    for (size_t i = 0; i < numArgs; ++i) {
      Value slot =
          LLVM::GEPOp::create(b, loc, ptrType, ptrType, body->getArgument(0),
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      pointers.push_back(LLVM::LoadOp::create(b, loc, ptrType, slot));
    }
    LLVM::CallOp::create(b, loc, callee, pointers);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }

  std::string manifest = formatKernelManifest(entries);
  manifest.push_back('\0');
  auto textType =
      LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), manifest.size());
  auto global = LLVM::GlobalOp::create(
      b, loc, textType, /*isConstant=*/true, LLVM::Linkage::Internal,
      "__te_kernel_manifest", b.getStringAttr(manifest));
  auto getter = LLVM::LLVMFuncOp::create(
      b, loc, "te_kernel_manifest", LLVM::LLVMFunctionType::get(ptrType, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(getter.addEntryBlock(b));
  Value address = LLVM::AddressOfOp::create(b, loc, global);
  LLVM::ReturnOp::create(b, loc, address);
  return success();
}

std::string mlir::te::getHostTargetDescription() {
  const plugin::TargetInfo &host = plugin::getHostTarget();
  return host.triple + " " + host.cpu + " " + host.features;
}

FailureOr<std::string>
mlir::te::compileKernelLibrary(ModuleOp module,
                               const KernelCompileOptions &options,
                               StringRef outputPath) {
  FailureOr<SmallVector<KernelEntry>> entries = collectKernelEntries(module);
  if (failed(entries))
    return failure();

  OwningOpRef<ModuleOp> lowered = module.clone();
  PassManager pm(module.getContext());
  if (options.reference)
    buildLowerToCPUReferencePipeline(pm);
  else
    buildLowerToCPUPipeline(pm);
  if (failed(pm.run(*lowered)) || failed(emitKernelABI(*lowered, *entries)))
    return failure();

  // Runtime libraries of plugin lowerings: linked, and found at load time
  // through the rpath. The attribute is not for the LLVM translation.
  SmallVector<std::string> linkArgs;
  if (auto libraries = (*lowered)->getAttrOfType<ArrayAttr>(
          plugin::kLinkLibrariesAttrName)) {
    for (auto library : libraries.getAsRange<StringAttr>()) {
      linkArgs.push_back(library.getValue().str());
      linkArgs.push_back(
          "-rpath=" + llvm::sys::path::parent_path(library.getValue()).str());
    }
    (*lowered)->removeAttr(plugin::kLinkLibrariesAttrName);
  }

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*lowered, llvmContext, "te-kernel");
  if (!llvmModule)
    return mlir::emitError(module.getLoc(), "translation to LLVM IR failed");

  initializeNativeTarget();
  const plugin::TargetInfo &host = plugin::getHostTarget();
  llvm::Triple triple(host.triple);
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return mlir::emitError(module.getLoc(), "no LLVM target for ")
           << triple.str() << ": " << error;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, host.cpu, host.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
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

  auto optimize = makeOptimizingTransformer(options.optLevel,
                                            /*sizeLevel=*/0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return mlir::emitError(module.getLoc(), "LLVM optimization failed: ")
           << llvm::toString(std::move(err));

  TemporaryFile object;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("te-kernel", "o", fd, object.path))
    return mlir::emitError(module.getLoc(),
                           "cannot create a temporary object file: ")
           << ec.message();
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return mlir::emitError(module.getLoc(),
                             "LLVM cannot emit object files for ")
             << triple.str();
    codegen.run(*llvmModule);
  }

  TemporaryFile linkLog;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "te-kernel-link", "log", linkLog.path))
    return mlir::emitError(module.getLoc(), "cannot create a temporary file: ")
           << ec.message();
  std::string output = outputPath.str();
  SmallVector<StringRef> args = {
      options.linker, "-shared", "--no-undefined-version",
      "-o",           output,    object.path};
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
    return mlir::emitError(module.getLoc(), "linking the kernel library with ")
           << options.linker << " failed ("
           << (execError.empty() ? log : execError) << ")";
  }
  return formatKernelManifest(*entries);
}
