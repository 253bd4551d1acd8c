//===- KernelCompiler.cpp - te modules to loadable kernel libraries -------===//

#include "te/JIT/KernelCompiler.h"

#include "te/Dialect/TE/IR/TEDialect.h"

#include "te/Pipelines/Pipelines.h"
#include "te/Plugin/Passes.h"
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

LogicalResult mlir::te::emitKernelABI(ModuleOp llvmModule,
                                      ArrayRef<KernelEntry> entries,
                                      StringRef manifestText) {
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

  std::string manifest = manifestText.str();
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

LogicalResult
mlir::te::writeHostKernelLibrary(ModuleOp module, ArrayRef<KernelEntry> entries,
                                 StringRef manifest, StringRef outputPath,
                                 const HostLibraryOptions &options) {
  if (failed(emitKernelABI(module, entries, manifest)))
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

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "te-kernel");
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
  return success();
}

namespace {

/// The built-in target: the host CPU, through LLVM, as shared libraries.
class CPUTarget : public plugin::TargetBackend {
public:
  CPUTarget() : TargetBackend("cpu", "cpu") {}

  plugin::TargetInfo getTargetInfo() const override {
    return plugin::getHostTarget();
  }

  void buildPipeline(OpPassManager &pm) const override {
    buildCPUTargetPipeline(pm);
  }

  LogicalResult serialize(ModuleOp lowered, ArrayRef<KernelEntry> entries,
                          StringRef manifest, StringRef outputPath,
                          unsigned optLevel) const override {
    HostLibraryOptions options;
    options.optLevel = optLevel;
    return writeHostKernelLibrary(lowered, entries, manifest, outputPath,
                                  options);
  }
};

/// Registers the built-in targets when the library loads, before any plugin
/// can claim their names.
[[maybe_unused]] const bool builtinTargetsRegistered =
    (registerBuiltinTargets(), true);

} // namespace

void mlir::te::registerBuiltinTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    plugin::registerBuiltinTarget(std::make_unique<CPUTarget>());
  });
}

FailureOr<std::string>
mlir::te::compileKernelLibrary(ModuleOp module,
                               const KernelCompileOptions &options,
                               StringRef outputPath) {
  FailureOr<SmallVector<KernelEntry>> entries = collectKernelEntries(module);
  if (failed(entries))
    return failure();

  plugin::PluginManager &plugins = plugin::PluginManager::get();
  std::string error;
  if (failed(plugins.loadFromEnvironment(&error)))
    return mlir::emitError(module.getLoc(), error);
  if (options.reference && options.device != "cpu")
    return mlir::emitError(module.getLoc(), "the reference pipeline builds "
                                            "for the cpu device only, not '")
           << options.device << "'";
  // A plugin's toolchain starts on first use.
  FailureOr<plugin::TargetRef> started =
      plugins.startTarget(options.device, &error);
  if (failed(started))
    return mlir::emitError(module.getLoc(), error);
  plugin::TargetRef target = *started;
  std::string description = target.describe();

  OwningOpRef<ModuleOp> lowered = module.clone();
  // What the kernel says about an op (its checks' messages) names it by
  // number, so the kernel serves every program it is cached for.
  markTEOpOrdinals(*lowered);
  PassManager pm(module.getContext());
  if (options.reference) {
    buildLowerToCPUReferencePipeline(pm);
  } else {
    plugin::buildTargetPipeline(pm, target);
  }
  if (failed(pm.run(*lowered)))
    return failure();
  FailureOr<KernelChecks> checks = takeKernelChecks(*lowered, *entries);
  if (failed(checks))
    return failure();
  std::string manifest = formatKernelManifest(
      *entries, *checks, describeArgumentRoles(module, *entries));
  if (failed(target.target->serialize(*lowered, *entries, manifest, outputPath,
                                      options.optLevel)))
    return mlir::emitError(module.getLoc(), "target ")
           << description << " could not write the kernel module for "
           << "device '" << options.device << "'";
  return manifest;
}
