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

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>

using namespace mlir;

namespace {

/// te_compiler_parse_count.
std::atomic<unsigned long long> parseCount{0};

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
  if (error)
    *error = nullptr;
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
  return TE_COMPILER_ERROR_COMPILE;
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
    ++parseCount;
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

namespace {

/// The canonical form of `module`: the generic printout without locations,
/// which two programs share exactly when they mean the same thing.
std::string printCanonical(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os,
                OpPrintingFlags().printGenericOpForm().elideLargeElementsAttrs(
                    std::numeric_limits<int64_t>::max()));
  return text;
}

/// The source location of each te op of `module`, one per line, in the
/// order kernels number them.
std::string listSourceLocations(ModuleOp module) {
  std::string text;
  for (Operation *op : te::getTEOpsInOrder(module))
    text += te::formatSourceLocation(op->getLoc()) + "\n";
  return text;
}

/// te_compiler_plugins' text for the loaded `plugins`.
std::string describePlugins(const te::plugin::PluginManager &plugins) {
  auto setting = [](const char *name) {
    const char *value = std::getenv(name);
    return std::string(value ? value : "");
  };
  return plugins.describeFingerprint(setting("NVTE_PLUGIN_POLICY"),
                                     setting("NVTE_PLUGIN_DENY"));
}

/// te_compiler_targets' line of `ref`, without the newline.
std::string describeTarget(const te::TargetRef &ref) {
  te::plugin::TargetInfo info = ref.target->getTargetInfo();
  return ref.target->getDeviceName() + "\t" + ref.target->getName() + "\t" +
         ref.origin + "\t" + ref.getPipelineIdentity() + "\t" + info.triple +
         " " + info.cpu + " " + info.features;
}

/// Parses `source` in `session`; on failure sets `*error` to the
/// diagnostics.
OwningOpRef<ModuleOp> parseOrReport(CompilerSession &session,
                                    const char *source, size_t size,
                                    const char *sourceName, char **error) {
  OwningOpRef<ModuleOp> module = session.parse(source, size, sourceName);
  if (!module)
    *error = copyString(session.diagnostics);
  return module;
}

} // namespace

namespace {

/// Parses `source` and returns what `describe` says of the module as a
/// copied string in `*out`: the entry points that only read a program.
int describeParsed(const char *source, size_t size, const char *sourceName,
                   char **out, char **error,
                   llvm::function_ref<std::string(ModuleOp)> describe) {
  CompilerSession session;
  OwningOpRef<ModuleOp> module =
      parseOrReport(session, source, size, sourceName, error);
  if (!module)
    return TE_COMPILER_ERROR_PROGRAM;
  *out = copyString(describe(*module));
  return TE_COMPILER_OK;
}

} // namespace

int te_compiler_canonicalize(const char *source, size_t size,
                             const char *source_name, char **canonical,
                             char **error) {
  return describeParsed(source, size, source_name, canonical, error,
                        printCanonical);
}

int te_compiler_source_locations(const char *source, size_t size,
                                 const char *source_name, char **locations,
                                 char **error) {
  return describeParsed(source, size, source_name, locations, error,
                        listSourceLocations);
}

namespace {

/// Where a compile of `sourceName` for `device` writes its stages' IR:
/// TE_DUMP_DIR/<program>, the program being the file's name without
/// directory and `.mlir`, with `.<device>` for devices other than cpu and
/// `.reference` for the reference pipeline. "" without TE_DUMP_DIR.
std::string dumpDirectoryFor(const std::string &sourceName,
                             llvm::StringRef device, bool reference) {
  const char *root = std::getenv("TE_DUMP_DIR");
  if (!root || !*root)
    return "";
  std::string program = llvm::sys::path::filename(sourceName).str();
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

/// What a compile is for: the device, the pipeline, the program's name
/// (for dumps).
struct CompileRequest {
  std::string device;
  bool reference = false;
  std::string sourceName;
};

/// A compile (or, with `artifact`, an emit) of the parsed `module` of
/// `session`. Sets `*report` whatever the outcome, `*error` on failure.
int compileParsed(CompilerSession &session, ModuleOp module,
                  const CompileRequest &request, const char *output_path,
                  const std::optional<std::string> &artifact, char **manifest,
                  char **report, char **error) {
  session.diagnostics.clear();
  te::KernelCompileOptions options;
  options.reference = request.reference;
  options.device = request.device;
  te::CompileRecorder recorder(
      dumpDirectoryFor(request.sourceName, options.device, request.reference));
  options.recorder = &recorder;
  auto finish = [&](bool ok) {
    if (report)
      *report = copyString(formatReport(recorder));
    if (!ok)
      *error = copyString(session.diagnostics);
    return ok ? TE_COMPILER_OK : TE_COMPILER_ERROR_COMPILE;
  };
  if (artifact)
    return finish(succeeded(
        te::emitKernelArtifact(module, options, *artifact, output_path)));
  FailureOr<std::string> result =
      te::compileKernelLibrary(module, options, output_path);
  if (failed(result))
    return finish(false);
  *manifest = copyString(*result);
  return finish(true);
}

/// Runs `body` (a compile that sets `*report`) under guardCompile; a
/// compile cut short by a fatal error still sets a report.
int guardReportedCompile(char **report, char **error,
                         llvm::function_ref<int()> body) {
  if (report)
    *report = nullptr;
  int status = guardCompile(error, body);
  if (report && !*report)
    *report = copyString("");
  return status;
}

int compile(const char *device, const char *source, size_t size,
            const char *source_name, const char *output_path, bool reference,
            std::optional<std::string> artifact, char **manifest, char **report,
            char **error) {
  return guardReportedCompile(report, error, [&] {
    CompilerSession session;
    OwningOpRef<ModuleOp> module =
        parseOrReport(session, source, size, source_name, error);
    if (!module)
      return int(TE_COMPILER_ERROR_PROGRAM);
    CompileRequest request{device ? device : "", reference,
                           source_name ? source_name : ""};
    return compileParsed(session, *module, request, output_path, artifact,
                         manifest, report, error);
  });
}

} // namespace

struct te_compiler_program {
  CompilerSession session;
  OwningOpRef<ModuleOp> module;
  CompileRequest request;
  std::string canonical, locations, plugins, target;
};

int te_compiler_program_create(const char *device, int reference,
                               const char *source, size_t size,
                               const char *source_name,
                               te_compiler_program **program, char **error) {
  if (!program || !source || !device || !error) {
    if (error)
      *error = copyString("error: te_compiler_program_create: device, source, "
                          "program and error must not be NULL");
    return TE_COMPILER_ERROR_ARGUMENT;
  }
  *program = nullptr;
  return guardCompile(error, [&]() -> int {
    auto created = std::make_unique<te_compiler_program>();
    created->module =
        parseOrReport(created->session, source, size, source_name, error);
    if (!created->module)
      return TE_COMPILER_ERROR_PROGRAM;
    created->request = {device, reference != 0, source_name ? source_name : ""};
    created->canonical = printCanonical(*created->module);
    created->locations = listSourceLocations(*created->module);
    te::plugin::PluginManager *plugins = loadedPlugins(error);
    if (!plugins)
      return TE_COMPILER_ERROR_PLUGINS;
    if (!reference)
      created->plugins = describePlugins(*plugins);
    for (const te::TargetRef &ref : plugins->getTargets())
      if (ref.target->getDeviceName() == device) {
        created->target = describeTarget(ref);
        break;
      }
    *program = created.release();
    return TE_COMPILER_OK;
  });
}

const char *te_compiler_program_canonical(const te_compiler_program *program) {
  return program ? program->canonical.c_str() : "";
}

const char *
te_compiler_program_source_locations(const te_compiler_program *program) {
  return program ? program->locations.c_str() : "";
}

const char *te_compiler_program_plugins(const te_compiler_program *program) {
  return program ? program->plugins.c_str() : "";
}

const char *te_compiler_program_target(const te_compiler_program *program) {
  return program ? program->target.c_str() : "";
}

int te_compiler_program_compile(te_compiler_program *program,
                                const char *output_path, char **manifest,
                                char **report, char **error) {
  if (!program || !output_path || !manifest || !error) {
    if (report)
      *report = copyString("");
    if (error)
      *error = copyString("error: te_compiler_program_compile: program, "
                          "output_path, manifest and error must not be NULL");
    return TE_COMPILER_ERROR_ARGUMENT;
  }
  return guardReportedCompile(report, error, [&] {
    return compileParsed(program->session, *program->module, program->request,
                         output_path, std::nullopt, manifest, report, error);
  });
}

void te_compiler_program_release(te_compiler_program *program) {
  delete program;
}

unsigned long long te_compiler_parse_count(void) { return parseCount.load(); }

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
    return TE_COMPILER_ERROR_ARGUMENT;
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
  OwningOpRef<ModuleOp> module =
      parseOrReport(session, source, size, source_name, error);
  if (!module)
    return TE_COMPILER_ERROR_PROGRAM;
  // The dispatch of the compile pipeline, on a copy: which ops plugins take.
  std::string message;
  FailureOr<te::plugin::DispatchSetup> setup =
      te::plugin::prepareDispatch(device ? device : "", "", "", &message);
  if (failed(setup)) {
    *error = copyString("error: " + message);
    return TE_COMPILER_ERROR_COMPILE;
  }
  OwningOpRef<ModuleOp> copy = module->clone();
  FailureOr<std::vector<te::plugin::DispatchRecord>> records =
      te::plugin::dispatchModule(*copy, setup->target, setup->native,
                                 setup->policy, setup->nativeHasStrategies);
  if (failed(records)) {
    *error = copyString(session.diagnostics);
    return TE_COMPILER_ERROR_COMPILE;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const te::plugin::DispatchRecord &record : *records)
    os << record.opName << '\t' << record.location << '\t'
       << record.describeBackend(setup->targetName) << '\t'
       << llvm::join(record.notes(), "; ") << '\n';
  *table = copyString(text);
  return TE_COMPILER_OK;
}

int te_compiler_targets(char **list, char **error) {
  te::plugin::PluginManager *plugins = loadedPlugins(error);
  if (!plugins)
    return TE_COMPILER_ERROR_PLUGINS;
  std::string text;
  for (const te::TargetRef &ref : plugins->getTargets())
    text += describeTarget(ref) + "\n";
  *list = copyString(text);
  return TE_COMPILER_OK;
}

int te_compiler_plugins(char **fingerprint, char **error) {
  te::plugin::PluginManager *plugins = loadedPlugins(error);
  if (!plugins)
    return TE_COMPILER_ERROR_PLUGINS;
  *fingerprint = copyString(describePlugins(*plugins));
  return TE_COMPILER_OK;
}

int te_compiler_plugin_states(char **states, char **error) {
  te::plugin::PluginManager *plugins = loadedPlugins(error);
  if (!plugins)
    return TE_COMPILER_ERROR_PLUGINS;
  *states = copyString(plugins->describeStates());
  return TE_COMPILER_OK;
}

int te_compiler_load_plugins(const char *specs, char **error) {
  te::plugin::PluginManager &plugins = te::plugin::PluginManager::get();
  std::string message;
  if (failed(plugins.loadFromEnvironment(&message)) ||
      failed(plugins.load(specs ? specs : "", "te_compiler_load_plugins",
                          &message))) {
    *error = copyString(message);
    return TE_COMPILER_ERROR_PLUGINS;
  }
  return TE_COMPILER_OK;
}

void te_compiler_set_device_arch(const char *device, const char *arch) {
  if (device)
    te::TargetRegistry::get().setDeviceArch(device, arch ? arch : "");
}

void te_compiler_free(char *text) { std::free(text); }
