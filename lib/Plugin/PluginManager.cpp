//===- PluginManager.cpp - Loading, activating and listing plugins --------===//
//
// Every step of a plugin's life that can fail -- finding the file, dlopen,
// the query symbol, the handshake, registration, activation -- goes through
// fail(), which drops what the plugin registered, closes the library and
// prints exactly one warning naming the list the plugin came from, the
// plugin, the step and the real error.
//
//===----------------------------------------------------------------------===//

#include "te/Plugin/PluginManager.h"
#include "te/ABI/PluginFingerprint.h"
#include "te/Plugin/PluginSearch.h"
#include "te/Support/FileTrust.h"
#include "te/Target/TargetRegistry.h"

#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Version.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>
#include <exception>
#include <map>
#include <mutex>

using namespace mlir;
using namespace mlir::te::plugin;
using mlir::te::TargetRef;
using mlir::te::TargetRegistry;

namespace {

/// The v1.0 prefix of te_plugin_info that every plugin must provide.
constexpr size_t kMinimumInfoSize =
    offsetof(te_plugin_info, activate) + sizeof(te_plugin_activate_fn);

} // namespace

bool mlir::te::plugin::isValidPluginName(StringRef name) {
  return !name.empty() && name.size() <= 63 && llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
  });
}

bool mlir::te::plugin::isTEOpName(StringRef name) {
  static MLIRContext *context = [] {
    auto *context = new MLIRContext(MLIRContext::Threading::DISABLED);
    context->getOrLoadDialect<mlir::te::TEDialect>();
    return context;
  }();
  return name.starts_with("te.") &&
         RegisteredOperationName::lookup(name, context).has_value();
}

namespace {

/// What a plugin's register callback registers into: its own record.
class RecordRegistrar : public Registrar {
public:
  explicit RecordRegistrar(PluginRecord &record) : record(record) {}

  /// What is wrong with registering `provider`, or "" when nothing is.
  std::string validate(const LoweringProvider *provider) const {
    if (!provider)
      return "a null provider";
    const std::string &name = provider->getName();
    if (!isValidPluginName(name))
      return "a provider named '" + name +
             "' (names are 1 to 63 characters from [A-Za-z0-9_.-])";
    for (const auto &existing : record.providers)
      if (existing->getName() == name)
        return "a second provider named '" + name + "'";
    if (provider->getOpNames().empty())
      return "provider '" + name + "' with no ops";
    for (const std::string &op : provider->getOpNames())
      if (!isTEOpName(op))
        return "provider '" + name + "' for '" + op + "', which is not a te op";
    return "";
  }

  /// What is wrong with registering `target`, or "" when nothing is.
  std::string validate(const TargetBackend *target) const {
    std::string problem = TargetRegistry::get().validate(target);
    if (!problem.empty())
      return problem;
    const std::string &name = target->getName();
    const std::string &device = target->getDeviceName();
    for (const auto &existing : record.targets)
      if (existing->getName() == name || existing->getDeviceName() == device)
        return "a second target named '" + name + "' or for device '" + device +
               "'";
    return "";
  }

  /// Registering something invalid fails the plugin, even if it ignores
  /// the result; the first problem is the plugin's error.
  bool reject(const std::string &problem, std::string *error) {
    if (invalid.empty())
      invalid = "registered " + problem;
    if (error)
      *error = invalid;
    return false;
  }

  bool addProvider(std::unique_ptr<LoweringProvider> provider,
                   std::string *error) override {
    std::string problem = validate(provider.get());
    if (!problem.empty())
      return reject(problem, error);
    record.providers.push_back(std::move(provider));
    return true;
  }

  bool addTarget(std::unique_ptr<TargetBackend> target,
                 std::string *error) override {
    std::string problem = validate(target.get());
    if (!problem.empty())
      return reject(problem, error);
    record.targets.push_back(std::move(target));
    return true;
  }

  void addDialects(std::function<void(DialectRegistry &)> add) override {
    if (add)
      record.dialects.push_back(std::move(add));
  }

  PluginRecord &record;
  std::string invalid;
};

/// The plugin libraries as loaded through te/Support/FileTrust.h, by
/// record: the descriptor of each one's directory stays open while the
/// library is loaded.
std::mutex librariesMutex;
std::map<const PluginRecord *, ::te::support::LoadedLibrary> &
pluginLibraries() {
  static auto *libraries =
      new std::map<const PluginRecord *, ::te::support::LoadedLibrary>();
  return *libraries;
}

/// Closes the library of `record` (before it registered anything).
void unloadPluginLibrary(PluginRecord &record) {
  std::lock_guard<std::mutex> lock(librariesMutex);
  auto found = pluginLibraries().find(&record);
  if (found != pluginLibraries().end()) {
    ::te::support::unloadLibrary(found->second);
    pluginLibraries().erase(found);
  }
  record.handle = nullptr;
}

/// <directory of libTEPlugin.so>/te-mlir/plugins.
const std::string &installedPluginDirectory() {
  static const std::string directory = [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&installedPluginDirectory), &info) &&
        info.dli_fname) {
      SmallString<256> path;
      if (llvm::sys::fs::real_path(info.dli_fname, path))
        path = info.dli_fname;
      return ::te::plugin::pluginDirectoryBeside(path.str().str());
    }
    return std::string();
  }();
  return directory;
}

std::string pluginSearchPath() {
  const char *path = std::getenv("TE_PLUGIN_PATH");
  return path ? path : "";
}

/// The TE_PLUGIN_FEATURE_* bits as words ("lowering, target").
std::string describeFeatures(uint64_t features) {
  std::vector<std::string> names;
  for (auto [bit, name] : {std::pair{TE_PLUGIN_FEATURE_LOWERING, "lowering"},
                           std::pair{TE_PLUGIN_FEATURE_TARGET, "target"},
                           std::pair{TE_PLUGIN_FEATURE_DEVICE, "device"}})
    if (features & bit) {
      names.push_back(name);
      features &= ~bit;
    }
  if (features)
    names.push_back("unknown bits 0x" + llvm::utohexstr(features));
  return names.empty() ? "none" : llvm::join(names, ", ");
}

const char *stateName(PluginState state) {
  switch (state) {
  case PluginState::Available:
    return "available";
  case PluginState::Active:
    return "active";
  case PluginState::Failed:
    return "failed";
  }
  return "?";
}

} // namespace

std::string PluginRecord::describe() const {
  if (name.empty())
    return "'" + spec + "'";
  return "'" + name + "' " + version + " (" + path + ")";
}

/// "<source>: plugin <plugin> failed at <step>: <error>", the part of a
/// failure's warning and error messages that names what failed.
static std::string describeFailedRecord(const PluginRecord &record) {
  return record.source + ": plugin " + record.describe() + " failed at " +
         record.failedStep + ": " + record.error;
}

std::string ProviderRef::qualifiedName() const {
  return plugin->name + "/" + provider->getName();
}

PluginManager::PluginManager() {
  const char *value = std::getenv("NVTE_PLUGIN_STRICT");
  strict = value && StringRef(value) != "" && StringRef(value) != "0";
}

// The manager lives until exit; plugins are not unloaded (their code may
// still be referenced by static destructors of other libraries).
PluginManager::~PluginManager() = default;

PluginManager &PluginManager::get() {
  static PluginManager *manager = new PluginManager();
  return *manager;
}

void PluginManager::warn(StringRef message) const {
  llvm::errs() << "te-mlir: warning: " << message << "\n";
}

void PluginManager::fail(PluginRecord &record, StringRef step,
                         StringRef error) {
  bool registered = step == "register" || step == "activate";
  // Withdraw the registrations. Another thread may still hold a provider or
  // target it looked up before this failure, so they are retired, not
  // destroyed: the library stays mapped from registration on anyway.
  for (auto &provider : record.providers)
    record.retiredProviders.push_back(std::move(provider));
  // Targets not yet handed to the registry die with the record's others.
  for (auto &target : record.targets)
    record.retiredTargets.push_back(std::move(target));
  TargetRegistry::get().withdraw(&record);
  record.providers.clear();
  record.targets.clear();
  record.dialects.clear();
  record.activate = nullptr;
  // Before registration nothing can point into the library, so it is
  // closed; afterwards the plugin's code may have been copied into dialect
  // registries and contexts (dialect constructors, type ids), so it stays
  // mapped, unused.
  if (record.handle && !registered)
    unloadPluginLibrary(record);
  record.state = PluginState::Failed;
  record.failedStep = step.str();
  record.error = error.str();
  std::string message = describeFailedRecord(record) + "; " +
                        (strict ? "NVTE_PLUGIN_STRICT=1 makes this an error"
                                : "continuing with the native lowering");
  if (firstFailure.empty())
    firstFailure = message;
  // In strict mode the failure is the caller's error, which it reports;
  // a warning as well would say the same thing twice.
  if (!strict)
    warn(message);
}

LogicalResult PluginManager::loadFromEnvironment(std::string *error) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (!environmentLoaded) {
    environmentLoaded = true;
    const char *specs = std::getenv("NVTE_PLUGIN");
    if (specs && *specs &&
        failed(load(specs, "NVTE_PLUGIN", &environmentError)) &&
        environmentError.empty())
      environmentError = "NVTE_PLUGIN could not be loaded";
  }
  // Every caller learns of a strict-mode failure, not only the first.
  if (environmentError.empty())
    return success();
  if (error)
    *error = environmentError;
  return failure();
}

LogicalResult PluginManager::load(StringRef specs, StringRef source,
                                  std::string *error) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  firstFailure.clear();
  // Split like the kernel cache does when it keys on NVTE_PLUGIN.
  for (const std::string &entry : ::te::plugin::splitList(specs.str(), ','))
    loadOne(entry, source);
  if (strict && !firstFailure.empty()) {
    if (error)
      *error = firstFailure;
    return failure();
  }
  return success();
}

void PluginManager::loadOne(StringRef spec, StringRef source) {
  auto owned = std::make_unique<PluginRecord>();
  PluginRecord &record = *owned;
  record.spec = spec.str();
  record.source = source.str();
  records.push_back(std::move(owned));

  record.path =
      ::te::plugin::findPluginLibrary(spec.str(), installedPluginDirectory());
  if (record.path.empty())
    return fail(record, "load",
                "no such plugin in TE_PLUGIN_PATH (" +
                    (pluginSearchPath().empty() ? std::string("unset")
                                                : pluginSearchPath()) +
                    ") or " + installedPluginDirectory() +
                    " (give a path, or the NAME of libNAME.so; relative "
                    "TE_PLUGIN_PATH directories are ignored, the current "
                    "directory is never searched)");
  // A plugin is code run with the user's rights: the file is opened once
  // (never waiting: a FIFO or a device is refused), refused if someone else
  // could have written it or its directory, and the file checked is what
  // gets loaded below, through its directory's descriptor
  // (te/Support/FileTrust.h).
  ::te::support::FileProblem problem;
  std::string why;
  ::te::support::CheckedFile file = ::te::support::openChecked(
      record.path, ::te::support::FileRules::library(), problem, why);
  if (!file) {
    if (problem == ::te::support::FileProblem::Missing)
      return fail(record, "load", "no such file");
    if (problem == ::te::support::FileProblem::CannotOpen)
      return fail(record, "load", record.path + ": it " + why);
    return fail(record, "load",
                "refusing to load " + record.path + ": it " + why +
                    (problem == ::te::support::FileProblem::Untrusted
                         ? "; a plugin runs with your rights, so only you or "
                           "root may be able to write it"
                         : ""));
  }

  // A library already listed (by path or, below, by name) keeps its place.
  // The real path is the opened file's.
  if (std::string real = file.realPath(); !real.empty())
    record.path = real;
  for (const auto &other : records)
    if (other.get() != &record && other->state != PluginState::Failed &&
        other->path == record.path) {
      warn(record.source + ": plugin '" + spec.str() + "' (" + record.path +
           ") is listed twice; the first entry, '" + other->spec +
           "', keeps its priority and this one is ignored");
      records.pop_back();
      return;
    }

  ::te::support::LoadedLibrary library;
  if (!::te::support::loadLibrary(std::move(file), record.path,
                                  ::te::support::FileRules::library(),
                                  RTLD_NOW | RTLD_LOCAL, library, problem, why))
    return fail(record, "load",
                problem == ::te::support::FileProblem::LoadFailed
                    ? why
                    : "refusing to load " + record.path + ": it " + why);
  record.handle = library.handle;
  {
    std::lock_guard<std::mutex> lock(librariesMutex);
    pluginLibraries()[&record] = std::move(library);
  }
  auto query = reinterpret_cast<te_plugin_query_fn>(
      dlsym(record.handle, TE_PLUGIN_QUERY_SYMBOL));
  if (!query)
    return fail(record, "query",
                "the library does not export " TE_PLUGIN_QUERY_SYMBOL
                " (is it a te-mlir plugin?)");

  const te_plugin_info *info = nullptr;
  try {
    info = query(TE_PLUGIN_ABI_MAJOR, TE_PLUGIN_ABI_MINOR);
  } catch (const std::exception &e) {
    return fail(record, "query",
                std::string(TE_PLUGIN_QUERY_SYMBOL " threw: ") + e.what());
  } catch (...) {
    return fail(record, "query", TE_PLUGIN_QUERY_SYMBOL " threw");
  }
  if (!info)
    return fail(record, "query",
                TE_PLUGIN_QUERY_SYMBOL " returned NULL: the plugin refuses "
                                       "this host (plugin ABI " +
                    getHostABIVersion() + ")");

  // The handshake: layout first, then versions, then identity.
  if (info->struct_size < kMinimumInfoSize)
    return fail(record, "handshake",
                "te_plugin_info is " + std::to_string(info->struct_size) +
                    " bytes, smaller than plugin ABI 1.0's " +
                    std::to_string(kMinimumInfoSize));
  record.abiMajor = info->abi_major;
  record.abiMinor = info->abi_minor;
  std::string theirs =
      std::to_string(info->abi_major) + "." + std::to_string(info->abi_minor);
  if (info->abi_major != TE_PLUGIN_ABI_MAJOR)
    return fail(record, "handshake",
                "the plugin is built for plugin ABI " + theirs +
                    ", this te-mlir implements plugin ABI " +
                    getHostABIVersion() +
                    " (a different major version is incompatible; rebuild "
                    "the plugin against this te-mlir)");
  if (info->abi_minor > TE_PLUGIN_ABI_MINOR)
    return fail(record, "handshake",
                "the plugin needs plugin ABI " + theirs +
                    ", this te-mlir supports up to " + getHostABIVersion() +
                    " (use a newer te-mlir, or build the plugin against "
                    "this one)");
  std::string llvmVersion = info->llvm_version ? info->llvm_version : "";
  if (llvmVersion != LLVM_VERSION_STRING)
    return fail(record, "handshake",
                "the plugin is built against LLVM/MLIR " +
                    (llvmVersion.empty() ? "(unknown)" : llvmVersion) +
                    ", this te-mlir uses LLVM/MLIR " LLVM_VERSION_STRING
                    " (plugins must link the host's shared libMLIR)");
  std::string name = info->name ? info->name : "";
  if (!isValidPluginName(name))
    return fail(record, "handshake",
                "invalid plugin name '" + name +
                    "' (1 to 63 characters from [A-Za-z0-9_.-])");
  record.llvmVersion = llvmVersion;
  record.version = info->version ? info->version : "";
  record.buildId = info->te_build_id ? info->te_build_id : "";
  record.features = info->features;
  if (!info->register_plugin)
    return fail(record, "handshake", "register_plugin is NULL");
  if (PluginRecord *other = lookup(name)) {
    std::string otherPath = other->path, otherSpec = other->spec;
    unloadPluginLibrary(record);
    warn(record.source + ": plugin '" + name + "' is listed twice ('" +
         otherSpec + "' at " + otherPath + " and '" + spec.str() + "' at " +
         record.path +
         "); the first entry keeps its priority and this one "
         "is ignored");
    records.pop_back();
    return;
  }
  record.name = name;
  record.activate = info->activate;

  // Registration, into this record only.
  RecordRegistrar registrar(record);
  char error[1024] = {0};
  te_plugin_status status = TE_PLUGIN_ERROR;
  try {
    status = info->register_plugin(reinterpret_cast<te_plugin_registrar *>(
                                       static_cast<Registrar *>(&registrar)),
                                   error, sizeof(error));
  } catch (const std::exception &e) {
    return fail(record, "register",
                std::string("register_plugin threw: ") + e.what());
  } catch (...) {
    return fail(record, "register", "register_plugin threw");
  }
  error[sizeof(error) - 1] = 0;
  if (status != TE_PLUGIN_OK)
    return fail(record, "register",
                *error ? std::string(error)
                       : std::string("register_plugin returned an error "
                                     "without a message"));
  if (!registrar.invalid.empty())
    return fail(record, "register", registrar.invalid);
  // The targets enter the registry only once registration succeeded, in
  // plugin list order: registration order is their priority.
  for (auto &target : record.targets)
    TargetRegistry::get().add(std::move(target), &record,
                              "plugin " + record.name + " " + record.version,
                              record.abiMinor);
  record.targets.clear();
  record.state = PluginState::Available;
}

LogicalResult PluginManager::activate(PluginRecord &plugin,
                                      std::string *error) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (plugin.state == PluginState::Active)
    return success();
  if (plugin.state == PluginState::Failed) {
    if (error)
      *error = describeFailure(plugin);
    return failure();
  }
  if (plugin.activate) {
    char message[1024] = {0};
    te_plugin_status status = TE_PLUGIN_ERROR;
    std::string thrown;
    try {
      status = plugin.activate(message, sizeof(message));
    } catch (const std::exception &e) {
      thrown = std::string("activate threw: ") + e.what();
    } catch (...) {
      thrown = "activate threw";
    }
    message[sizeof(message) - 1] = 0;
    if (!thrown.empty() || status != TE_PLUGIN_OK) {
      std::string reason =
          !thrown.empty() ? thrown
          : *message      ? std::string(message)
                          : std::string("activate returned an error without "
                                        "a message");
      fail(plugin, "activate", reason);
      if (error)
        *error = "plugin failed at activate: " + reason;
      return failure();
    }
  }
  plugin.state = PluginState::Active;
  return success();
}

std::string PluginManager::describeFailure(const PluginRecord &plugin) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (plugin.state != PluginState::Failed)
    return "";
  return "plugin failed at " + plugin.failedStep + ": " + plugin.error;
}

std::vector<std::string> PluginManager::getFailures() const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  std::vector<std::string> failures;
  for (const auto &record : records)
    if (record->state == PluginState::Failed)
      failures.push_back(describeFailedRecord(*record));
  return failures;
}

std::vector<ProviderRef> PluginManager::getProviders(StringRef opName) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  std::vector<ProviderRef> providers;
  for (const auto &record : records) {
    if (record->state == PluginState::Failed)
      continue;
    for (const auto &provider : record->providers)
      if (llvm::is_contained(provider->getOpNames(), opName))
        providers.push_back({record.get(), provider.get()});
  }
  return providers;
}

PluginRecord *PluginManager::lookup(StringRef name) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  for (const auto &record : records)
    if (record->state != PluginState::Failed && record->name == name)
      return record.get();
  return nullptr;
}

std::vector<TargetRef> PluginManager::getTargets() const {
  return TargetRegistry::get().getTargets();
}

TargetRef PluginManager::findTarget(StringRef deviceName) const {
  return TargetRegistry::get().find(deviceName);
}

FailureOr<TargetRef> PluginManager::startTarget(StringRef deviceName,
                                                std::string *error) {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto fail = [&](std::string message) -> FailureOr<TargetRef> {
    if (error)
      *error = std::move(message);
    return failure();
  };
  TargetRef ref = findTarget(deviceName);
  if (!ref) {
    // A plugin that failed may have been the one serving the device.
    if (TargetRef withdrawn = TargetRegistry::get().findWithdrawn(deviceName))
      for (const auto &record : records)
        if (record.get() == withdrawn.owner)
          return fail("target " + withdrawn.describe() + " for device '" +
                      deviceName.str() +
                      "' is unavailable: " + describeFailure(*record));
    return fail("no target produces kernel modules for device '" +
                deviceName.str() +
                "' (targets exist for: " + describeTargets() +
                "); load the plugin that registers it with NVTE_PLUGIN or "
                "--te-plugin");
  }
  std::string description = ref.describe(), reason;
  if (PluginRecord *owner = ownerOf(ref);
      owner && failed(activate(*owner, &reason)))
    return fail("target " + description + " for device '" + deviceName.str() +
                "' is unavailable: " + reason);
  return ref;
}

PluginRecord *PluginManager::ownerOf(const TargetRef &ref) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  for (const auto &record : records)
    if (record.get() == ref.owner)
      return record.get();
  return nullptr;
}

std::string PluginManager::describeTargets() const {
  return TargetRegistry::get().describeDevices();
}

void PluginManager::registerDialects(DialectRegistry &registry) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  for (const auto &record : records)
    if (record->state != PluginState::Failed)
      for (const auto &add : record->dialects)
        add(registry);
}

std::string PluginManager::describeFingerprint(StringRef policy,
                                               StringRef deny) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  ::te::abi::PluginFingerprint fingerprint;
  fingerprint.policy = policy.str();
  fingerprint.deny = deny.str();
  for (const auto &record : records) {
    if (record->state != PluginState::Failed)
      fingerprint.plugins.push_back({record->name, record->version});
    if (record->source == "te_compiler_load_plugins")
      fingerprint.api.push_back(record->spec);
    if (record->state == PluginState::Failed)
      fingerprint.failed.push_back(record->spec);
  }
  fingerprint.strict = isStrict();
  return fingerprint.encode();
}

std::string PluginManager::describeStates() const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  auto field = [](std::string text) {
    for (char &c : text)
      if (c == '\t' || c == '\n')
        c = ' ';
    return text;
  };
  std::string text;
  for (const auto &record : records) {
    std::vector<std::string> providers;
    if (record->state != PluginState::Failed)
      for (const auto &provider : record->providers)
        providers.push_back(provider->getName() + ": " +
                            llvm::join(provider->getOpNames(), " "));
    std::string failure = record->state == PluginState::Failed
                              ? record->failedStep + ": " + record->error
                              : std::string();
    std::vector<std::string> fields = {record->spec,
                                       record->source,
                                       stateName(record->state),
                                       record->name,
                                       record->version,
                                       record->path,
                                       failure,
                                       llvm::join(providers, "; ")};
    for (std::string &value : fields)
      value = field(value);
    text += llvm::join(fields, "\t") + "\n";
  }
  return text;
}

void PluginManager::printInfo(llvm::raw_ostream &os) const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  os << "te-mlir plugin ABI " << getHostABIVersion() << ", LLVM/MLIR "
     << LLVM_VERSION_STRING << ", " << TE_MLIR_BUILD_ID << "\n";
  os << "plugin search path: TE_PLUGIN_PATH="
     << (pluginSearchPath().empty() ? "(unset)" : pluginSearchPath()) << ", "
     << installedPluginDirectory() << "\n";
  os << "strict: " << (strict ? "yes" : "no") << "\n";
  std::vector<std::string> targets;
  for (const TargetRef &ref : getTargets())
    targets.push_back(ref.target->getDeviceName() + " <- " + ref.describe());
  os << "targets (device <- target): "
     << (targets.empty() ? std::string("none") : llvm::join(targets, ", "))
     << "\n";
  if (records.empty()) {
    os << "plugins: none (set NVTE_PLUGIN or pass --te-plugin)\n";
    return;
  }
  os << "plugins, in priority order:\n";
  unsigned position = 0;
  for (const auto &record : records) {
    os << "  " << ++position << ". " << record->spec << " ["
       << stateName(record->state) << "] from " << record->source << "\n";
    if (!record->path.empty())
      os << "     library: " << record->path << "\n";
    if (!record->name.empty())
      os << "     plugin: " << record->name << " " << record->version
         << ", plugin ABI " << record->abiMajor << "." << record->abiMinor
         << ", LLVM/MLIR " << record->llvmVersion << ", built with "
         << record->buildId
         << "; features: " << describeFeatures(record->features) << "\n";
    if (record->state == PluginState::Failed) {
      os << "     failed at " << record->failedStep << ": " << record->error
         << "\n";
      continue;
    }
    for (const auto &provider : record->providers)
      os << "     provider " << record->name << "/" << provider->getName()
         << ": " << llvm::join(provider->getOpNames(), ", ") << "\n";
    for (const TargetRef &ref :
         TargetRegistry::get().getTargetsOf(record.get())) {
      const TargetBackend *target = ref.target;
      os << "     target " << target->getName() << ": modules for device '"
         << target->getDeviceName() << "'";
      if (findTarget(target->getDeviceName()).target != target)
        os << " (unused: " << findTarget(target->getDeviceName()).describe()
           << " serves that device)";
      os << "\n";
    }
  }
}
