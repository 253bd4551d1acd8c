//===- Compiler.cpp - C API of te-mlir's kernel compiler ------------------===//

#include "te/JIT/Compiler.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#include "te/InitAllDialects.h"
#include "te/JIT/KernelCompiler.h"
#include "te/Plugin/Dispatch.h"
#include "te/Target/InitAllTargets.h"
#include "te/Version.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>

using namespace mlir;

namespace {

char *copyString(const std::string &text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (copy)
    std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

/// What LLVM reported through report_fatal_error during a compile.
struct LLVMFatalError {
  std::string reason;
};

/// The compiler runs inside host processes (te-run, Python, a framework's
/// process), and LLVM's default answer to a fatal error (an output stream
/// it could not write, a code generator meeting what it cannot encode, an
/// allocation that failed) ends them. te-mlir's policy: the handlers turn
/// the report into a C++ exception, which guardCompile catches at the C
/// API and returns as the compile's error. LLVM and MLIR are built without
/// exceptions, so the frames between the report and the catch are unwound
/// without their destructors: what they held leaks, on the failing compile
/// only. Known causes are refused or checked before they reach LLVM (the
/// streams te-mlir writes, inline assembly); this is the last line.
/// Installed once per process: LLVM keeps one handler, and compiles from
/// several threads share it.
void installFatalErrorHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::install_fatal_error_handler([](void *, const char *reason, bool) {
      throw LLVMFatalError{reason ? reason : "unknown error"};
    });
    llvm::install_bad_alloc_error_handler(
        [](void *, const char *, bool) { throw std::bad_alloc(); });
  });
}

/// Runs `body` (a compiler entry point's work) under the fatal-error
/// policy: a fatal error or an allocation failure inside it becomes the
/// entry point's error status and message, never the end of the process.
int guardCompile(char **error, llvm::function_ref<int()> body) {
  installFatalErrorHandlers();
  std::string message;
  try {
    return body();
  } catch (const LLVMFatalError &fatal) {
    message = "error: LLVM failed while compiling: " + fatal.reason +
              "\nnote: the process continues; nothing of this compile was "
              "kept";
  } catch (const std::bad_alloc &) {
    message = "error: out of memory while compiling the program; free "
              "memory or raise the process's memory limit and try again";
  }
  if (error)
    *error = copyString(message);
  return 1;
}

/// A context with te's dialects whose diagnostics are collected as text,
/// formatted like te-opt's (file:line:col: error: ... with the source line).
struct CompilerSession {
  CompilerSession() : context(makeRegistry()), diagnosticStream(diagnostics) {
    // Diagnostics name the program's lines; a dump of the (possibly
    // half-lowered) module would bury them.
    context.printOpOnDiagnostic(false);
  }

  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    te::registerAllDialects(registry);
    // Plugin failures are reported by the manager (and again by the
    // dispatch pass in strict mode); the dialects of those that loaded
    // must be known to the context that lowers.
    te::plugin::PluginManager &plugins = te::plugin::PluginManager::get();
    (void)plugins.loadFromEnvironment();
    plugins.registerDialects(registry);
    return registry;
  }

  OwningOpRef<ModuleOp> parse(const char *source, size_t size,
                              const char *name) {
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(source, size), name ? name : "<te program>");
    sourceMgr = std::make_shared<llvm::SourceMgr>();
    sourceMgr->AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    handler = std::make_unique<SourceMgrDiagnosticHandler>(*sourceMgr, &context,
                                                           diagnosticStream);
    // Registered last, so asked first.
    moduleLevelHandler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) { return emitModuleLevel(diag); });
    ParserConfig config(&context);
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
    if (module && failed(verify(*module)))
      module = nullptr;
    if (!module && diagnostics.empty())
      diagnostics = "error: the program could not be parsed";
    return module;
  }

  /// The parser locates the module itself at file:0:0, which names no
  /// line: diagnostics there (a device without a target, a plugin that
  /// cannot start, a serializer that fails) are written "file: error: ...".
  /// Others go to the source manager's handler.
  LogicalResult emitModuleLevel(Diagnostic &diag) {
    auto fileOnly = [](Location loc) -> std::optional<StringRef> {
      auto file = dyn_cast<FileLineColLoc>(loc);
      if (!file || file.getLine() != 0)
        return std::nullopt;
      return file.getFilename().getValue();
    };
    if (!fileOnly(diag.getLocation()))
      return failure();
    auto emit = [&](Location loc, const std::string &message,
                    DiagnosticSeverity severity) {
      std::optional<StringRef> file = fileOnly(loc);
      if (!file)
        return handler->emitDiagnostic(loc, message, severity);
      const char *kind = severity == DiagnosticSeverity::Error     ? "error"
                         : severity == DiagnosticSeverity::Warning ? "warning"
                         : severity == DiagnosticSeverity::Note    ? "note"
                                                                   : "remark";
      diagnosticStream << *file << ": " << kind << ": " << message << "\n";
    };
    emit(diag.getLocation(), diag.str(), diag.getSeverity());
    for (Diagnostic &note : diag.getNotes())
      emit(note.getLocation(), note.str(), note.getSeverity());
    return success();
  }

  MLIRContext context;
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream;
  std::shared_ptr<llvm::SourceMgr> sourceMgr;
  std::unique_ptr<SourceMgrDiagnosticHandler> handler;
  std::unique_ptr<ScopedDiagnosticHandler> moduleLevelHandler;
};

/// The plugin manager with NVTE_PLUGIN loaded, or null with *error set (a
/// strict-mode load failure).
te::plugin::PluginManager *loadedPlugins(char **error) {
  // Built-in targets first: plugins may not claim their devices.
  te::registerBuiltinTargets();
  te::plugin::PluginManager &plugins = te::plugin::PluginManager::get();
  std::string message;
  if (failed(plugins.loadFromEnvironment(&message))) {
    *error = copyString(message);
    return nullptr;
  }
  return &plugins;
}

} // namespace

const char *te_compiler_build_id(void) { return TE_MLIR_BUILD_ID; }

const char *te_compiler_host_target(void) {
  static const std::string target = te::getHostTargetDescription();
  return target.c_str();
}

int te_compiler_canonicalize(const char *source, size_t size,
                             const char *source_name, char **canonical,
                             char **error) {
  CompilerSession session;
  OwningOpRef<ModuleOp> module = session.parse(source, size, source_name);
  if (!module) {
    *error = copyString(session.diagnostics);
    return 1;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os,
                OpPrintingFlags().printGenericOpForm().elideLargeElementsAttrs(
                    std::numeric_limits<int64_t>::max()));
  *canonical = copyString(text);
  return 0;
}

int te_compiler_source_locations(const char *source, size_t size,
                                 const char *source_name, char **locations,
                                 char **error) {
  CompilerSession session;
  OwningOpRef<ModuleOp> module = session.parse(source, size, source_name);
  if (!module) {
    *error = copyString(session.diagnostics);
    return 1;
  }
  std::string text;
  for (Operation *op : te::getTEOpsInOrder(*module))
    text += te::formatSourceLocation(op->getLoc()) + "\n";
  *locations = copyString(text);
  return 0;
}

namespace {

/// Where a compile of `sourceName` for `device` writes its stages' IR:
/// TE_DUMP_DIR/<program>, the program being the file's name without
/// directory and `.mlir`, with `.<device>` for devices other than cpu and
/// `.reference` for the reference pipeline. "" without TE_DUMP_DIR.
std::string dumpDirectoryFor(const char *sourceName, llvm::StringRef device,
                             bool reference) {
  const char *root = std::getenv("TE_DUMP_DIR");
  if (!root || !*root)
    return "";
  std::string program =
      llvm::sys::path::filename(sourceName ? sourceName : "").str();
  if (llvm::StringRef(program).ends_with(".mlir"))
    program.resize(program.size() - 5);
  for (char &c : program)
    if (!llvm::isAlnum(c) && c != '-' && c != '_' && c != '.')
      c = '_';
  if (program.empty() || program == "." || program == "..")
    program = "program";
  if (device != "cpu")
    program += "." + device.str();
  if (reference)
    program += ".reference";
  llvm::SmallString<256> path(root);
  llvm::sys::path::append(path, program);
  return path.str().str();
}

/// The recorder's stages as te_compiler_compile_with_report's report.
std::string formatReport(const te::CompileRecorder &recorder) {
  std::string text;
  for (const te::CompileRecorder::Stage &stage : recorder.getStages())
    text += llvm::formatv("{0}\t{1:f3}\n", stage.name, stage.milliseconds);
  return text;
}

/// A compile (or, with `artifact`, an emit) of `source` for `device`.
int compileUnguarded(const char *device, const char *source, size_t size,
                     const char *source_name, const char *output_path,
                     bool reference, std::optional<std::string> artifact,
                     char **manifest, char **report, char **error) {
  CompilerSession session;
  te::KernelCompileOptions options;
  options.reference = reference;
  options.device = device ? device : "";
  te::CompileRecorder recorder(
      dumpDirectoryFor(source_name, options.device, reference));
  options.recorder = &recorder;
  // The report is set whatever the outcome: how far the compile got.
  auto finish = [&](int status) {
    if (report)
      *report = copyString(formatReport(recorder));
    if (status != 0)
      *error = copyString(session.diagnostics);
    return status;
  };
  OwningOpRef<ModuleOp> module = session.parse(source, size, source_name);
  if (!module)
    return finish(1);
  if (artifact)
    return finish(failed(
        te::emitKernelArtifact(*module, options, *artifact, output_path)));
  FailureOr<std::string> result =
      te::compileKernelLibrary(*module, options, output_path);
  if (failed(result))
    return finish(1);
  *manifest = copyString(*result);
  return finish(0);
}

int compile(const char *device, const char *source, size_t size,
            const char *source_name, const char *output_path, bool reference,
            std::optional<std::string> artifact, char **manifest, char **report,
            char **error) {
  if (report)
    *report = nullptr;
  int status = guardCompile(error, [&] {
    return compileUnguarded(device, source, size, source_name, output_path,
                            reference, artifact, manifest, report, error);
  });
  // A compile cut short by a fatal error set no report.
  if (report && !*report)
    *report = copyString("");
  return status;
}

} // namespace

int te_compiler_compile(const char *source, size_t size,
                        const char *source_name, const char *output_path,
                        char **manifest, char **error) {
  return compile("cpu", source, size, source_name, output_path,
                 /*reference=*/false, std::nullopt, manifest, nullptr, error);
}

int te_compiler_compile_for(const char *device, const char *source, size_t size,
                            const char *source_name, const char *output_path,
                            char **manifest, char **error) {
  return compile(device, source, size, source_name, output_path,
                 /*reference=*/false, std::nullopt, manifest, nullptr, error);
}

int te_compiler_compile_reference(const char *source, size_t size,
                                  const char *source_name,
                                  const char *output_path, char **manifest,
                                  char **error) {
  return compile("cpu", source, size, source_name, output_path,
                 /*reference=*/true, std::nullopt, manifest, nullptr, error);
}

int te_compiler_compile_with_report(const char *device, int reference,
                                    const char *source, size_t size,
                                    const char *source_name,
                                    const char *output_path, char **manifest,
                                    char **report, char **error) {
  return compile(device, source, size, source_name, output_path, reference != 0,
                 std::nullopt, manifest, report, error);
}

int te_compiler_emit(const char *device, const char *artifact,
                     const char *source, size_t size, const char *source_name,
                     const char *output_path, char **report, char **error) {
  if (!artifact || !*artifact) {
    if (report)
      *report = copyString("");
    *error = copyString("error: no artifact given; expected mlir or one of "
                        "the target's (cpu: llvm, asm, obj)");
    return 1;
  }
  return compile(device, source, size, source_name, output_path,
                 /*reference=*/false, std::string(artifact), nullptr, report,
                 error);
}

int te_compiler_explain(const char *source, size_t size,
                        const char *source_name, char **table, char **error) {
  return te_compiler_explain_for("cpu", source, size, source_name, table,
                                 error);
}

int te_compiler_explain_for(const char *device, const char *source, size_t size,
                            const char *source_name, char **table,
                            char **error) {
  CompilerSession session;
  OwningOpRef<ModuleOp> module = session.parse(source, size, source_name);
  if (!module) {
    *error = copyString(session.diagnostics);
    return 1;
  }
  // The dispatch of the compile pipeline, on a copy: which ops plugins take.
  std::string message;
  FailureOr<te::plugin::DispatchSetup> setup =
      te::plugin::prepareDispatch(device ? device : "", "", "", &message);
  if (failed(setup)) {
    *error = copyString("error: " + message);
    return 1;
  }
  OwningOpRef<ModuleOp> copy = module->clone();
  FailureOr<std::vector<te::plugin::DispatchRecord>> records =
      te::plugin::dispatchModule(*copy, setup->target, setup->native,
                                 setup->policy, setup->nativeHasStrategies);
  if (failed(records)) {
    *error = copyString(session.diagnostics);
    return 1;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const te::plugin::DispatchRecord &record : *records)
    os << record.opName << '\t' << record.location << '\t'
       << record.describeBackend(setup->targetName) << '\t'
       << llvm::join(record.notes(), "; ") << '\n';
  *table = copyString(text);
  return 0;
}

int te_compiler_targets(char **list, char **error) {
  te::plugin::PluginManager *plugins = loadedPlugins(error);
  if (!plugins)
    return 1;
  std::string text;
  for (const te::TargetRef &ref : plugins->getTargets()) {
    te::plugin::TargetInfo info = ref.target->getTargetInfo();
    text += ref.target->getDeviceName() + "\t" + ref.target->getName() + "\t" +
            ref.origin + "\t" + ref.getPipelineIdentity() + "\t" + info.triple +
            " " + info.cpu + " " + info.features + "\n";
  }
  *list = copyString(text);
  return 0;
}

int te_compiler_plugins(char **fingerprint, char **error) {
  te::plugin::PluginManager *plugins = loadedPlugins(error);
  if (!plugins)
    return 1;
  auto setting = [](const char *name) {
    const char *value = std::getenv(name);
    return std::string(value ? value : "");
  };
  *fingerprint = copyString(plugins->getFingerprint() +
                            "policy=" + setting("NVTE_PLUGIN_POLICY") +
                            ";deny=" + setting("NVTE_PLUGIN_DENY") +
                            ";strict=" + (plugins->isStrict() ? "1" : "0") +
                            ";" + plugins->getLoadState());
  return 0;
}

int te_compiler_plugin_states(char **states, char **error) {
  te::plugin::PluginManager *plugins = loadedPlugins(error);
  if (!plugins)
    return 1;
  *states = copyString(plugins->describeStates());
  return 0;
}

int te_compiler_load_plugins(const char *specs, char **error) {
  te::plugin::PluginManager &plugins = te::plugin::PluginManager::get();
  std::string message;
  if (failed(plugins.loadFromEnvironment(&message)) ||
      failed(plugins.load(specs ? specs : "", "te_compiler_load_plugins",
                          &message))) {
    *error = copyString(message);
    return 1;
  }
  return 0;
}

void te_compiler_set_device_arch(const char *device, const char *arch) {
  if (device)
    te::TargetRegistry::get().setDeviceArch(device, arch ? arch : "");
}

void te_compiler_free(char *text) { std::free(text); }
