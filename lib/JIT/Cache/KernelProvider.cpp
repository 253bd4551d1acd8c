//===- KernelProvider.cpp - Compile-or-load kernel libraries --------------===//
//
// Keys: a program is first looked up by its source text (an alias, cheap to
// hash without the compiler); on a miss the compiler canonicalizes it and
// the entry is keyed by the canonical IR, so that programs differing only in
// formatting, comments or SSA names share one compiled library.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/KernelProvider.h"
#include "te/ABI/Environment.h"
#include "te/ABI/PluginFingerprint.h"

#include "te/JIT/Compiler.h"
#include "te/JIT/Sha256.h"
#include "te/Plugin/PluginSearch.h"
#include "te/Runtime/Runtime.h"
#include "te/Support/FileTrust.h"
#include "te/Version.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <vector>

using namespace te::cache;
using te::support::Expected;
using te::support::Status;

namespace {
/// te_device_target_arch of device 0 of `device`, or "" where it cannot be
/// opened or names none; asked once per device and process.
std::string deviceTargetArch(const std::string &device) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(device);
  if (found != known.end())
    return found->second;
  std::string arch;
  te_device *opened = nullptr;
  if (te_device_open(device.c_str(), 0, &opened) == TE_OK) {
    if (const char *name = te_device_target_arch(opened))
      arch = name;
    te_device_release(opened);
  }
  known.emplace(device, arch);
  return arch;
}
} // namespace

std::string te::cache::describeCodeGeneration(const std::string &device) {
  std::string description = te::abi::describeEnvironment();
  if (device != "cpu")
    description += "device-arch=" + deviceTargetArch(device) + "\n";
  return description;
}

namespace {

/// Which of a target's builds a kernel is; part of every key, so that a
/// reference build never answers for a production one or the other way
/// round. The target's own pipeline identity joins the canonical key
/// (te_compiler_targets), and the te-mlir build the source key.
constexpr const char *kPipeline = "production opt=3 abi=1";
constexpr const char *kReferencePipeline = "reference opt=3 abi=1";

/// The te-mlir build: version, revision, LLVM, and the size and time of the
/// compiler libraries, so that a rebuilt compiler never reuses entries.
std::string makeBuildId(const std::string &compilerLibrary) {
  std::string id =
      TE_MLIR_VERSION "+" TE_MLIR_GIT_REVISION "-llvm" TE_MLIR_LLVM_VERSION;
  std::string directory = compilerLibrary.substr(
      0, compilerLibrary.find_last_of('/') == std::string::npos
             ? 0
             : compilerLibrary.find_last_of('/'));
  if (directory.empty())
    directory = ".";
  if (DIR *dir = opendir(directory.c_str())) {
    std::vector<std::string> parts;
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.rfind("libTE", 0) != 0)
        continue;
      struct stat info;
      if (stat((directory + "/" + name).c_str(), &info) == 0)
        parts.push_back(name + ":" + std::to_string(info.st_size) + ":" +
                        std::to_string(info.st_mtim.tv_sec) + "." +
                        std::to_string(info.st_mtim.tv_nsec));
    }
    closedir(dir);
    std::sort(parts.begin(), parts.end());
    std::string joined;
    for (const std::string &part : parts)
      joined += part + ";";
    id += "-" + sha256Hex(joined.data(), joined.size()).substr(0, 16);
  }
  return id;
}

} // namespace

std::string te::cache::describeHostCPU() {
  struct utsname machine;
  std::string description = uname(&machine) == 0 ? machine.machine : "?";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  const char *fields[] = {"vendor_id",       "model name", "cpu family",
                          "model",           "flags",      "Features",
                          "CPU implementer", "CPU part"};
  while (std::getline(cpuinfo, line)) {
    if (line.empty())
      break; // the first processor describes them all
    for (const char *field : fields) {
      std::string name = field;
      if (line.compare(0, name.size(), name) == 0 &&
          line.find(':') != std::string::npos &&
          line.substr(0, line.find(':')).find_last_not_of(" \t") + 1 ==
              name.size()) {
        description += " | " + line;
      }
    }
  }
  return description;
}

namespace {

/// Plugins loaded through KernelProvider::loadPlugins (te_jit_load_plugins):
/// process-wide, like the compiler's plugin manager they feed.
std::mutex loadedPluginsMutex;
std::vector<std::string> loadedPlugins;

} // namespace

std::vector<std::string> te::cache::getLoadedPlugins() {
  std::lock_guard<std::mutex> lock(loadedPluginsMutex);
  return loadedPlugins;
}

size_t te::cache::getLoadedPluginCount() {
  std::lock_guard<std::mutex> lock(loadedPluginsMutex);
  return loadedPlugins.size();
}

/// The plugin settings of the environment, the plugins loaded through the
/// API, and the identity (size, time) of each plugin library they name: what
/// the source-text key needs so that a disk hit, which never loads the
/// compiler or the plugins, cannot return a kernel built with other
/// plugins. Empty without plugins.
std::string describePluginEnvironment(const std::string &compilerLibrary) {
  const char *list = std::getenv("NVTE_PLUGIN");
  std::vector<std::string> specs = te::plugin::splitList(list ? list : "", ',');
  std::vector<std::string> loaded = te::cache::getLoadedPlugins();
  if (specs.empty() && loaded.empty())
    return {};
  std::string description;
  for (const char *name :
       {"NVTE_PLUGIN", "TE_PLUGIN_PATH", "NVTE_PLUGIN_POLICY",
        "NVTE_PLUGIN_DENY", "NVTE_PLUGIN_STRICT"}) {
    const char *value = std::getenv(name);
    description += std::string(name) + "=" + (value ? value : "") + "\n";
  }
  description += "loaded:";
  for (const std::string &spec : loaded)
    description += " " + spec;
  description += "\n";
  specs.insert(specs.end(), loaded.begin(), loaded.end());
  for (const std::string &spec : specs) {
    std::string path = te::plugin::findPluginLibrary(
        spec, te::plugin::pluginDirectoryBeside(compilerLibrary));
    struct stat info;
    description += spec + " -> " + path;
    if (!path.empty() && stat(path.c_str(), &info) == 0)
      description += " " + std::to_string(info.st_size) + " " +
                     std::to_string(info.st_mtim.tv_sec) + "." +
                     std::to_string(info.st_mtim.tv_nsec);
    description += "\n";
  }
  return description;
}

struct KernelProvider::Compiler {
  /// Loaded through te/Support/FileTrust.h.
  te::support::LoadedLibrary library;
  void *handle = nullptr;
  decltype(&te_compiler_build_id) buildId = nullptr;
  decltype(&te_compiler_program_create) createProgram = nullptr;
  decltype(&te_compiler_program_canonical) canonical = nullptr;
  decltype(&te_compiler_program_source_locations) sourceLocations = nullptr;
  decltype(&te_compiler_program_plugins) programPlugins = nullptr;
  decltype(&te_compiler_program_target) programTarget = nullptr;
  decltype(&te_compiler_program_compile) compile = nullptr;
  decltype(&te_compiler_program_release) releaseProgram = nullptr;
  decltype(&te_compiler_emit) emit = nullptr;
  decltype(&te_compiler_explain_for) explain = nullptr;
  decltype(&te_compiler_plugins) plugins = nullptr;
  decltype(&te_compiler_plugin_states) pluginStates = nullptr;
  decltype(&te_compiler_load_plugins) loadPlugins = nullptr;
  decltype(&te_compiler_targets) targets = nullptr;
  decltype(&te_compiler_set_device_arch) setDeviceArch = nullptr;
  decltype(&te_compiler_free) release = nullptr;

  /// Tells the compiler the arch of `device`'s hardware, which this side
  /// opens and the compiler never does (for devices other than the host).
  void tellDeviceArch(const std::string &device) const {
    if (device != "cpu")
      setDeviceArch(device.c_str(), deviceTargetArch(device).c_str());
  }

  /// The text a te_compiler_* call that returns (status, text, error)
  /// produced, or its error (`fallback` when it gave none); frees both.
  Expected<std::string> takeText(int failed, char *text, char *error,
                                 const char *fallback) const {
    std::string result = text ? text : "";
    release(text);
    if (failed)
      return takeError(failed, error, fallback);
    release(error);
    return result;
  }

  /// The failure a te_compiler_* call returned (`status`, a
  /// te_compiler_status) with its message `error` (`fallback` when it gave
  /// none), which it frees.
  Status takeError(int status, char *error, const char *fallback) const {
    std::string message = error && *error ? error : fallback;
    release(error);
    return Status::error(message, status == TE_COMPILER_ERROR_PLUGINS
                                      ? int(ProviderFailure::Plugins)
                                      : int(ProviderFailure::Compile));
  }

  ~Compiler() { te::support::unloadLibrary(library); }
};

namespace {

/// A scratch directory for one compile, in $TMPDIR (else /tmp), removed
/// with everything in it when the compile is done, whatever the outcome.
class ScratchDirectory {
public:
  ScratchDirectory() = default;
  ScratchDirectory(const ScratchDirectory &) = delete;
  ScratchDirectory &operator=(const ScratchDirectory &) = delete;
  ~ScratchDirectory() {
    if (!path.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  }

  Status create() {
    const char *tmpdir = std::getenv("TMPDIR");
    std::string base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    while (base.size() > 1 && base.back() == '/')
      base.pop_back();
    std::string pattern = base + "/te-mlir-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!mkdtemp(buffer.data()))
      return Status::error("cannot create a temporary directory in " + base +
                           " (" + std::strerror(errno) +
                           "); set TMPDIR to a writable directory");
    path = buffer.data();
    return Status::success();
  }
  const std::string &get() const { return path; }

private:
  std::string path;
};

} // namespace

KernelProvider::KernelProvider(std::string compilerLibrary, WarningSink warn)
    : compilerLibrary(std::move(compilerLibrary)),
      buildId(makeBuildId(this->compilerLibrary)), warn(warn),
      cache(configFromEnvironment(warn), buildId, warn) {}

KernelProvider::~KernelProvider() = default;

Status KernelProvider::loadCompiler() {
  if (compiler)
    return Status::success();
  auto loaded = std::make_unique<Compiler>();
  // The compiler is code run with the caller's rights, found through
  // TE_COMPILER_LIBRARY or beside the program: checked, and the file
  // checked is what loads, as for plugins (te/Support/FileTrust.h).
  te::support::FileProblem problem;
  std::string why;
  auto unavailable = [](std::string message) {
    return Status::error(std::move(message),
                         int(ProviderFailure::CompilerUnavailable));
  };
  if (!te::support::loadLibrary(
          compilerLibrary, te::support::FileRules::library(),
          RTLD_NOW | RTLD_LOCAL, loaded->library, problem, why)) {
    switch (problem) {
    case te::support::FileProblem::Missing:
    case te::support::FileProblem::CannotOpen:
    case te::support::FileProblem::LoadFailed:
      return unavailable(
          "cannot load te-mlir's compiler " + compilerLibrary + " (" +
          (problem == te::support::FileProblem::LoadFailed ? why
                                                           : "it " + why) +
          "); set TE_COMPILER_LIBRARY to its path");
    case te::support::FileProblem::Untrusted:
      return unavailable(
          "cannot load te-mlir's compiler " + compilerLibrary +
          ": refusing to load it: it " + why +
          "; the compiler runs with your rights, so only you or root may "
          "be able to write it and its directory");
    default:
      return unavailable("cannot load te-mlir's compiler " + compilerLibrary +
                         ": refusing to load it: it " + why);
    }
  }
  loaded->handle = loaded->library.handle;
  auto resolve = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(loaded->handle, name));
    return fn != nullptr;
  };
  auto notOurs = [&] {
    return unavailable(compilerLibrary +
                       " is not te-mlir's compiler (missing te_compiler_* "
                       "symbols)");
  };
  // The build first: another build's compiler may lack functions of this
  // one's, and saying which build it is helps more than which symbol.
  if (!resolve(loaded->buildId, "te_compiler_build_id"))
    return notOurs();
  std::string theirs = loaded->buildId();
  std::string ours = TE_MLIR_BUILD_ID;
  if (theirs != ours)
    return unavailable(compilerLibrary + " is te-mlir " + theirs +
                       ", but this program is te-mlir " + ours +
                       "; use the compiler of the same build");
  if (!resolve(loaded->createProgram, "te_compiler_program_create") ||
      !resolve(loaded->canonical, "te_compiler_program_canonical") ||
      !resolve(loaded->sourceLocations,
               "te_compiler_program_source_locations") ||
      !resolve(loaded->programPlugins, "te_compiler_program_plugins") ||
      !resolve(loaded->programTarget, "te_compiler_program_target") ||
      !resolve(loaded->compile, "te_compiler_program_compile") ||
      !resolve(loaded->releaseProgram, "te_compiler_program_release") ||
      !resolve(loaded->emit, "te_compiler_emit") ||
      !resolve(loaded->explain, "te_compiler_explain_for") ||
      !resolve(loaded->plugins, "te_compiler_plugins") ||
      !resolve(loaded->pluginStates, "te_compiler_plugin_states") ||
      !resolve(loaded->loadPlugins, "te_compiler_load_plugins") ||
      !resolve(loaded->targets, "te_compiler_targets") ||
      !resolve(loaded->setDeviceArch, "te_compiler_set_device_arch") ||
      !resolve(loaded->release, "te_compiler_free"))
    return notOurs();
  compiler = std::move(loaded);
  return Status::success();
}

Expected<std::string> KernelProvider::queryPlugins() {
  char *fingerprint = nullptr, *error = nullptr;
  int failed = compiler->plugins(&fingerprint, &error);
  return compiler->takeText(failed, fingerprint, error, "unknown plugin error");
}

Status KernelProvider::loadPlugins(const std::string &specs) {
  if (Status status = loadCompiler(); !status.ok())
    return status;
  char *error = nullptr;
  int failed = compiler->loadPlugins(specs.c_str(), &error);
  std::string message = error ? error : "";
  compiler->release(error);
  // Recorded even after a (strict) failure: the plugins before the failing
  // one are loaded, and the compiler's fingerprint says which.
  {
    std::lock_guard<std::mutex> lock(loadedPluginsMutex);
    for (const std::string &spec : te::plugin::splitList(specs, ','))
      loadedPlugins.push_back(spec);
  }
  if (failed)
    return Status::error(message.empty() ? "plugins could not be loaded"
                                         : message,
                         int(ProviderFailure::Plugins));
  return Status::success();
}

Expected<std::string> KernelProvider::pluginStates() {
  if (Status status = loadCompiler(); !status.ok())
    return status;
  char *states = nullptr, *error = nullptr;
  int failed = compiler->pluginStates(&states, &error);
  return compiler->takeText(failed, states, error, "unknown plugin error");
}

Expected<std::string> KernelProvider::explainText(const std::string &source,
                                                  const std::string &sourceName,
                                                  const std::string &device) {
  if (Status status = loadCompiler(); !status.ok())
    return status;
  compiler->tellDeviceArch(device);
  char *table = nullptr, *error = nullptr;
  int failed = compiler->explain(device.c_str(), source.data(), source.size(),
                                 sourceName.c_str(), &table, &error);
  return compiler->takeText(failed, table, error, "unknown compiler error");
}

Expected<std::vector<std::array<std::string, 4>>>
KernelProvider::explain(const std::string &source,
                        const std::string &sourceName,
                        const std::string &device) {
  Expected<std::string> table = explainText(source, sourceName, device);
  if (!table)
    return table.status();
  std::vector<std::array<std::string, 4>> rows;
  std::istringstream lines(*table);
  std::string line;
  while (std::getline(lines, line)) {
    std::array<std::string, 4> row;
    size_t start = 0;
    for (size_t column = 0; column < row.size(); ++column) {
      size_t end =
          column + 1 < row.size() ? line.find('\t', start) : std::string::npos;
      row[column] = line.substr(
          start, end == std::string::npos ? std::string::npos : end - start);
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
    rows.push_back(row);
  }
  return rows;
}

Expected<ProvidedKernel> KernelProvider::provide(const std::string &source,
                                                 const std::string &sourceName,
                                                 bool reference,
                                                 const std::string &device) {
  // Whether the device's target has a reference build is the compiler's to
  // say (TargetBackend::buildReferencePipeline).
  const char *pipeline = reference ? kReferencePipeline : kPipeline;
  // Every environment variable that changes code generation joins the
  // keys: the plugins' and the target settings (describeCodeGeneration).
  // TE_DUMP_DIR only writes files beside a compile, so it stays out (a hit
  // dumps nothing).
  std::string host = describeHostCPU();
  std::string pluginEnvironment =
      reference ? "" : describePluginEnvironment(compilerLibrary);
  // The name joins the source key because the alias keeps the program's
  // source locations, which name its file.
  std::string sourceKey =
      KeyBuilder()
          .add("source", source)
          .add("source-name", sourceName)
          .add("pipeline", pipeline)
          .add("device", device)
          .add("host", host)
          .add("code-generation", describeCodeGeneration(device))
          .add("build", buildId)
          .add("plugin-environment", pluginEnvironment)
          .finish();
  ProvidedKernel provided;
  provided.sourceKey = sourceKey;
  std::string &locations = provided.sourceLocations;
  if (std::string key = cache.resolveAlias(sourceKey, &locations);
      !key.empty()) {
    if (std::string path = cache.lookup(key, &provided.library);
        !path.empty()) {
      provided.libraryPath = path;
      provided.outcome = CacheOutcome::DiskHit;
      provided.canonicalKey = key;
      provided.canonicalKeyFromAlias = true;
      return provided;
    }
  }

  if (Status status = loadCompiler(); !status.ok())
    return status;
  auto start = std::chrono::steady_clock::now();
  auto millisecondsSince = [](std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - since)
        .count();
  };
  // One parse for everything the miss needs: the canonical IR and source
  // locations, and the plugins and target the device's compile gets.
  compiler->tellDeviceArch(device);
  te_compiler_program *created = nullptr;
  char *error = nullptr;
  if (int failed = compiler->createProgram(
          device.c_str(), reference ? 1 : 0, source.data(), source.size(),
          sourceName.c_str(), &created, &error))
    return compiler->takeError(failed, error, "unknown compiler error");
  std::unique_ptr<te_compiler_program, decltype(compiler->releaseProgram)>
      program(created, compiler->releaseProgram);
  std::string canonicalText = compiler->canonical(program.get());
  locations = compiler->sourceLocations(program.get());
  std::string plugins = compiler->programPlugins(program.get());
  std::string target = compiler->programTarget(program.get());
  auto canonicalKeyFor = [&](const std::string &plugins) {
    return KeyBuilder()
        .add("canonical-ir", canonicalText)
        .add("pipeline", pipeline)
        .add("device", device)
        .add("target", target)
        .add("host", host)
        .add("build", buildId)
        .add("plugin-environment", pluginEnvironment)
        .add("plugins", plugins)
        .finish();
  };
  // The source key names the plugins only through the environment and
  // te_jit_load_plugins: it may stand for this kernel only when that is how
  // every plugin came, and none failed (a failure may be transient).
  auto sourceKeyHolds = [&](const std::string &plugins) {
    if (reference)
      return true;
    te::abi::PluginFingerprint fingerprint;
    return te::abi::PluginFingerprint::decode(plugins, fingerprint, nullptr) &&
           fingerprint.api == getLoadedPlugins() &&
           fingerprint.failed.empty() &&
           describePluginEnvironment(compilerLibrary) == pluginEnvironment;
  };
  std::string canonicalKey = canonicalKeyFor(plugins);
  provided.canonicalKey = canonicalKey;
  provided.stages.push_back({"canonicalize", millisecondsSince(start)});
  if (std::string path = cache.lookup(canonicalKey, &provided.library);
      !path.empty()) {
    if (sourceKeyHolds(plugins))
      cache.publishAlias(sourceKey, canonicalKey, locations);
    provided.libraryPath = path;
    provided.outcome = CacheOutcome::DiskHit;
    return provided;
  }

  // The library goes to a scratch directory of its own, read back into
  // memory and the directory removed before returning, on every path.
  ScratchDirectory scratch;
  if (Status status = scratch.create(); !status.ok())
    return Status::error(status.message(), int(ProviderFailure::Files));
  std::string output = scratch.get() + "/" + canonicalKey + ".so";
  char *manifest = nullptr, *report = nullptr;
  int failed = compiler->compile(program.get(), output.c_str(), &manifest,
                                 &report, &error);
  std::vector<CompileStage> stages = parseCompileStages(report ? report : "");
  compiler->release(report);
  if (failed != 0)
    return compiler->takeError(failed, error, "unknown compiler error");
  compiler->release(manifest);
  {
    // Written a moment ago into the scratch directory this compile made.
    te::support::FileRules rules = te::support::FileRules::ownFile();
    te::support::FileProblem problem;
    std::string why;
    te::support::CheckedFile file =
        te::support::openChecked(output, rules, problem, why);
    if (!file || !file.readAll(provided.library, why))
      return Status::error("the compiled kernel " + output + " " + why,
                           int(ProviderFailure::Files));
  }
  provided.stages.insert(provided.stages.end(), stages.begin(), stages.end());
  provided.compileMilliseconds = millisecondsSince(start);
  provided.libraryPath = sourceName + " (compiled, not cached)";
  // The plugins changed during the compile (one failed at activation, or
  // another thread loaded some): no key says what this kernel was built
  // with, so it is used but not cached.
  if (!reference) {
    Expected<std::string> after = queryPlugins();
    if (!after)
      return after.status();
    if (*after != plugins)
      return provided;
  }
  std::string path = cache.publishLibrary(canonicalKey, provided.library);
  if (path.empty())
    return provided;
  if (sourceKeyHolds(plugins))
    cache.publishAlias(sourceKey, canonicalKey, locations);
  provided.libraryPath = path;
  return provided;
}

Expected<std::vector<CompileStage>>
KernelProvider::emit(const std::string &source, const std::string &sourceName,
                     const std::string &device, const std::string &artifact,
                     const std::string &outputPath) {
  if (Status status = loadCompiler(); !status.ok())
    return status;
  compiler->tellDeviceArch(device);
  char *report = nullptr, *error = nullptr;
  int failed = compiler->emit(device.c_str(), artifact.c_str(), source.data(),
                              source.size(), sourceName.c_str(),
                              outputPath.c_str(), &report, &error);
  std::vector<CompileStage> stages = parseCompileStages(report ? report : "");
  compiler->release(report);
  if (failed != 0)
    return compiler->takeError(failed, error, "unknown compiler error");
  return stages;
}

std::vector<CompileStage>
te::cache::parseCompileStages(const std::string &report) {
  std::vector<CompileStage> stages;
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos)
      continue;
    stages.push_back(
        {line.substr(0, tab), std::strtod(line.c_str() + tab + 1, nullptr)});
  }
  return stages;
}

std::string te::cache::formatCompileReport(const ProvidedKernel &kernel,
                                           const std::string &outcome) {
  std::string text = "outcome\t" + outcome + "\n";
  if (!kernel.sourceKey.empty())
    text += "source-key\t" + kernel.sourceKey + "\n";
  if (!kernel.canonicalKey.empty())
    text += "canonical-key\t" + kernel.canonicalKey + "\t" +
            (kernel.canonicalKeyFromAlias ? "alias" : "computed") + "\n";
  for (const CompileStage &stage : kernel.stages) {
    char milliseconds[32];
    std::snprintf(milliseconds, sizeof(milliseconds), "%.3f",
                  stage.milliseconds);
    text += "stage\t" + stage.name + "\t" + milliseconds + "\n";
  }
  return text;
}
