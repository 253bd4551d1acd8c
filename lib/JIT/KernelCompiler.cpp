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
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <chrono>
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
      return mlir::emitError(callee ? callee.getLoc() : loc, "kernel @")
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
  return writeHostArtifact(module, entries, manifest,
                           HostArtifact::SharedLibrary, outputPath, options);
}

namespace {

/// Times a stage of the compile into the current recorder, if any.
class StageTimer {
public:
  explicit StageTimer(StringRef name)
      : name(name), start(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    if (CompileRecorder *recorder = CompileRecorder::getCurrent())
      recorder->addStage(name, std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
  }

private:
  StringRef name;
  std::chrono::steady_clock::time_point start;
};

void dumpStage(StringRef name, StringRef extension,
               function_ref<void(raw_ostream &)> print) {
  if (CompileRecorder *recorder = CompileRecorder::getCurrent())
    recorder->dump(name, extension, print);
}

bool isDumping() {
  CompileRecorder *recorder = CompileRecorder::getCurrent();
  return recorder && recorder->isDumping();
}

/// Writes `bytes` to `path` ("-": stdout).
LogicalResult writeOutput(Location loc, StringRef path, StringRef bytes) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return mlir::emitError(loc, error);
  file->os() << bytes;
  file->os().flush();
  if (file->os().has_error())
    return mlir::emitError(loc, "cannot write ")
           << path << ": " << file->os().error().message();
  file->keep();
  return success();
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
    if (os.has_error())
      return mlir::emitError(loc, "cannot write the temporary object file ")
             << objectFile.path << ": " << os.error().message();
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
  std::unique_ptr<StageTimer> stage =
      std::make_unique<StageTimer>("llvm-translate");
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
    return mlir::emitError(loc, "translation to LLVM IR failed");

  initializeNativeTarget();
  const plugin::TargetInfo &host = plugin::getHostTarget();
  llvm::Triple triple(host.triple);
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return mlir::emitError(loc, "no LLVM target for ")
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
  dumpStage("llvm", "ll", [&](raw_ostream &os) { llvmModule->print(os, {}); });

  stage = std::make_unique<StageTimer>("llvm-optimize");
  auto optimize = makeOptimizingTransformer(options.optLevel,
                                            /*sizeLevel=*/0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return mlir::emitError(loc, "LLVM optimization failed: ")
           << llvm::toString(std::move(err));
  dumpStage("llvm-optimized", "ll",
            [&](raw_ostream &os) { llvmModule->print(os, {}); });
  if (artifact == HostArtifact::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, {});
    return writeOutput(loc, outputPath, text);
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
      return writeOutput(loc, outputPath, *assembly);
  }
  FailureOr<std::string> object = generateCode(
      loc, *llvmModule, *machine, llvm::CodeGenFileType::ObjectFile);
  if (failed(object))
    return failure();
  if (artifact == HostArtifact::Object)
    return writeOutput(loc, outputPath, *object);

  stage = std::make_unique<StageTimer>("link");
  return linkSharedLibrary(loc, *object, linkArgs, outputPath, options);
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

//===----------------------------------------------------------------------===//
// CompileRecorder
//===----------------------------------------------------------------------===//

namespace {
thread_local CompileRecorder *currentRecorder = nullptr;
} // namespace

CompileRecorder *CompileRecorder::getCurrent() { return currentRecorder; }

CompileRecorder::Scope::Scope(CompileRecorder *recorder)
    : previous(currentRecorder) {
  currentRecorder = recorder;
}

CompileRecorder::Scope::~Scope() { currentRecorder = previous; }

void CompileRecorder::addStage(StringRef name, double milliseconds) {
  stages.push_back({name.str(), milliseconds});
}

/// Dump files are `NN-<name>.<ext>`: two digits and a dash.
static bool isNumberedDump(StringRef filename) {
  return filename.size() > 3 && llvm::isDigit(filename[0]) &&
         llvm::isDigit(filename[1]) && filename[2] == '-';
}

LogicalResult CompileRecorder::prepareDumpDirectory(std::string *error) {
  if (!isDumping())
    return success();
  if (std::error_code ec = llvm::sys::fs::create_directories(dumpDirectory)) {
    *error =
        "TE_DUMP_DIR: cannot create " + dumpDirectory + ": " + ec.message();
    return failure();
  }
  // A file from an earlier compile of the program would pass for a stage
  // of this one.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dumpDirectory, ec), end;
       it != end && !ec; it.increment(ec))
    if (isNumberedDump(llvm::sys::path::filename(it->path())))
      llvm::sys::fs::remove(it->path());
  if (ec) {
    *error = "TE_DUMP_DIR: cannot list " + dumpDirectory + ": " + ec.message();
    return failure();
  }
  return success();
}

void CompileRecorder::dump(StringRef name, StringRef extension,
                           function_ref<void(raw_ostream &)> print) {
  if (!isDumping() || !dumpError.empty())
    return;
  SmallString<256> path(dumpDirectory);
  llvm::sys::path::append(
      path, llvm::formatv("{0:d2}-{1}.{2}", nextDump++, name, extension).str());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    print(os);
    os.flush();
    ec = os.error();
  }
  if (ec)
    dumpError =
        "TE_DUMP_DIR: cannot write " + path.str().str() + ": " + ec.message();
}

namespace {

/// The dump file name of a pass: its command-line argument, else its name,
/// in the characters file names take everywhere.
std::string dumpNameOf(const Pass &pass) {
  std::string name =
      (pass.getArgument().empty() ? pass.getName() : pass.getArgument()).str();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '-' && c != '_' && c != '.')
      c = '_';
  return name;
}

/// Dumps the module after every pass of the pipeline. Passes nested on
/// functions run once per function; the module is dumped once, when the
/// pass manager that runs them on the module is done, under their names.
class DumpAfterEachPass : public PassInstrumentation {
public:
  DumpAfterEachPass(CompileRecorder &recorder, Operation *root)
      : recorder(recorder), root(root) {}

  void runAfterPass(Pass *pass, Operation *op) override {
    dumpAfter(pass, op, "");
  }

  /// The IR a pass failed on, for the diagnostics that follow.
  void runAfterPassFailed(Pass *pass, Operation *op) override {
    dumpAfter(pass, op, "-failed");
  }

private:
  void dumpAfter(Pass *pass, Operation *op, StringRef suffix) {
    // Nested passes may run on several functions at once.
    std::lock_guard<std::mutex> lock(mutex);
    if (op != root) {
      std::string name = dumpNameOf(*pass) + suffix.str();
      if (!llvm::is_contained(nested, name))
        nested.push_back(name);
      return;
    }
    // The adaptor that ran nested passes has no argument of its own.
    std::string name = pass->getArgument().empty() && !nested.empty()
                           ? llvm::join(nested, "+")
                           : dumpNameOf(*pass) + suffix.str();
    nested.clear();
    recorder.dump(name, "mlir", [&](raw_ostream &os) { op->print(os); });
  }

  CompileRecorder &recorder;
  Operation *root;
  std::mutex mutex;
  SmallVector<std::string> nested;
};

/// A module lowered by a target's pipeline, with what its serializer takes.
struct LoweredModule {
  OwningOpRef<ModuleOp> module;
  SmallVector<KernelEntry> entries;
  std::string manifest;
  plugin::TargetRef target;
};

/// The part of a compile that every output shares: the entries, the
/// target of `options.device`, its pipeline (or the reference pipeline)
/// on a clone of `module`, the manifest. Records the pipeline's time and
/// dumps into options.recorder, which is current while it runs.
FailureOr<LoweredModule> lowerForTarget(ModuleOp module,
                                        const KernelCompileOptions &options) {
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

  CompileRecorder *recorder = options.recorder;
  if (recorder && failed(recorder->prepareDumpDirectory(&error)))
    return mlir::emitError(module.getLoc(), error);
  if (recorder)
    recorder->dump("input", "mlir",
                   [&](raw_ostream &os) { module->print(os); });

  LoweredModule result{module.clone(), std::move(*entries), "", *started};
  // What the kernel says about an op (its checks' messages) names it by
  // number, so the kernel serves every program it is cached for.
  markTEOpOrdinals(*result.module);
  PassManager pm(module.getContext());
  if (options.reference) {
    buildLowerToCPUReferencePipeline(pm);
  } else {
    plugin::buildTargetPipeline(pm, result.target);
  }
  if (recorder && recorder->isDumping())
    pm.addInstrumentation(std::make_unique<DumpAfterEachPass>(
        *recorder, result.module->getOperation()));
  {
    StageTimer stage("mlir-passes");
    if (failed(pm.run(*result.module)))
      return failure();
  }
  FailureOr<KernelChecks> checks =
      takeKernelChecks(*result.module, result.entries);
  if (failed(checks))
    return failure();
  result.manifest = formatKernelManifest(
      result.entries, *checks, describeArgumentRoles(module, result.entries));
  return result;
}

/// A failed dump is an error: the user asked for the files.
LogicalResult checkDumps(ModuleOp module, const CompileRecorder *recorder) {
  if (recorder && !recorder->getDumpError().empty())
    return mlir::emitError(module.getLoc(), recorder->getDumpError());
  return success();
}

} // namespace

FailureOr<std::string>
mlir::te::compileKernelLibrary(ModuleOp module,
                               const KernelCompileOptions &options,
                               StringRef outputPath) {
  CompileRecorder::Scope scope(options.recorder);
  FailureOr<LoweredModule> lowered = lowerForTarget(module, options);
  if (failed(lowered))
    return failure();
  size_t stagesBefore =
      options.recorder ? options.recorder->getStages().size() : 0;
  auto start = std::chrono::steady_clock::now();
  if (failed(lowered->target.target->serialize(
          *lowered->module, lowered->entries, lowered->manifest, outputPath,
          options.optLevel)))
    return mlir::emitError(module.getLoc(), "target ")
           << lowered->target.describe()
           << " could not write the kernel module for device '"
           << options.device << "'";
  // A serializer that does not build on writeHostKernelLibrary is one
  // stage.
  if (options.recorder && options.recorder->getStages().size() == stagesBefore)
    options.recorder->addStage("serialize",
                               std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
  if (failed(checkDumps(module, options.recorder)))
    return failure();
  return lowered->manifest;
}

std::optional<KernelArtifact> mlir::te::parseKernelArtifact(StringRef name) {
  return llvm::StringSwitch<std::optional<KernelArtifact>>(name)
      .Case("mlir", KernelArtifact::MLIR)
      .Case("llvm", KernelArtifact::LLVMIR)
      .Case("asm", KernelArtifact::Assembly)
      .Case("obj", KernelArtifact::Object)
      .Default(std::nullopt);
}

LogicalResult mlir::te::emitKernelArtifact(ModuleOp module,
                                           const KernelCompileOptions &options,
                                           KernelArtifact artifact,
                                           StringRef outputPath) {
  CompileRecorder::Scope scope(options.recorder);
  FailureOr<LoweredModule> lowered = lowerForTarget(module, options);
  if (failed(lowered))
    return failure();
  if (artifact == KernelArtifact::MLIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    lowered->module->print(os);
    if (failed(writeOutput(module.getLoc(), outputPath, text)))
      return failure();
    return checkDumps(module, options.recorder);
  }
  // LLVM IR, assembly and objects are the built-in cpu target's stages; a
  // plugin's serializer makes what it likes.
  if (lowered->target.plugin)
    return mlir::emitError(module.getLoc(),
                           "LLVM IR, assembly and object files are stages of "
                           "the built-in cpu target; device '")
           << options.device << "' is compiled by target "
           << lowered->target.describe()
           << ", whose serializer is its own: only the MLIR its pipeline "
              "produces can be emitted";
  HostLibraryOptions host;
  host.optLevel = options.optLevel;
  HostArtifact stop = artifact == KernelArtifact::LLVMIR ? HostArtifact::LLVMIR
                      : artifact == KernelArtifact::Assembly
                          ? HostArtifact::Assembly
                          : HostArtifact::Object;
  if (failed(writeHostArtifact(*lowered->module, lowered->entries,
                               lowered->manifest, stop, outputPath, host)))
    return failure();
  return checkDumps(module, options.recorder);
}
