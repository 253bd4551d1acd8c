//===- TargetRegistry.cpp - The targets a process can compile for ---------===//

#include "te/Target/TargetRegistry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::te;
using plugin::NativeLowering;
using plugin::TargetBackend;

namespace {

/// The first plugin ABI minor whose TargetBackend has getNativeLowering and
/// the other members after serialize.
constexpr unsigned kNativeLoweringMinor = 2;

bool isValidName(StringRef name) {
  return !name.empty() && name.size() <= 63 && llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// TargetRef
//===----------------------------------------------------------------------===//

std::string TargetRef::describe() const {
  if (!target)
    return "no target";
  return target->getName() + " (" + origin + ")";
}

const NativeLowering *TargetRef::getNativeLowering() const {
  if (!target)
    return nullptr;
  if (abiMinor >= kNativeLoweringMinor)
    return target->getNativeLowering();
  // Plugin ABI 1.1 targets were promised the host's lowering.
  TargetRef host = TargetRegistry::get().find("cpu");
  return host && host.target != target ? host.getNativeLowering() : nullptr;
}

std::string TargetRef::getPipelineIdentity() const {
  if (!target)
    return "";
  if (abiMinor >= kNativeLoweringMinor)
    return target->getPipelineIdentity();
  return target->getName();
}

bool TargetRef::buildReferencePipeline(OpPassManager &pm) const {
  return target && abiMinor >= kNativeLoweringMinor &&
         target->buildReferencePipeline(pm);
}

std::vector<std::string> TargetRef::getArtifactNames() const {
  if (!target || abiMinor < kNativeLoweringMinor)
    return {};
  return target->getArtifactNames();
}

//===----------------------------------------------------------------------===//
// TargetRegistry
//===----------------------------------------------------------------------===//

TargetRegistry &TargetRegistry::get() {
  // Never destroyed: targets may be used from static destructors of other
  // libraries, and plugin targets' code must outlive every use.
  static TargetRegistry *registry = new TargetRegistry();
  return *registry;
}

void TargetRegistry::addBuiltin(std::unique_ptr<TargetBackend> target) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &entry : entries)
    if (entry->ref.isBuiltin() &&
        (entry->target->getName() == target->getName() ||
         entry->target->getDeviceName() == target->getDeviceName()))
      llvm::report_fatal_error(
          llvm::Twine("te-mlir: two built-in targets named '") +
          target->getName() + "' or for device '" + target->getDeviceName() +
          "'");
  auto entry = std::make_unique<Entry>();
  entry->ref.target = target.get();
  entry->ref.origin = "built-in";
  entry->ref.abiMinor = kTargetInterfaceMinor;
  entry->target = std::move(target);
  // Built-in targets come first whenever they registered, by name: the
  // libraries' load order must not change listings.
  auto position = llvm::find_if(entries, [&](const auto &other) {
    return !other->ref.isBuiltin() ||
           other->target->getName() > entry->target->getName();
  });
  entries.insert(position, std::move(entry));
}

std::string TargetRegistry::validate(const TargetBackend *target) const {
  if (!target)
    return "a null target";
  const std::string &name = target->getName();
  const std::string &device = target->getDeviceName();
  if (!isValidName(name) || !isValidName(device))
    return "a target named '" + name + "' for device '" + device +
           "' (names are 1 to 63 characters from [A-Za-z0-9_.-])";
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &entry : entries)
    if (entry->ref.isBuiltin() && (entry->target->getName() == name ||
                                   entry->target->getDeviceName() == device))
      return "target '" + name + "' for device '" + device +
             "', which clashes with the built-in target '" +
             entry->target->getName() + "' for device '" +
             entry->target->getDeviceName() + "'";
  return "";
}

void TargetRegistry::add(std::unique_ptr<TargetBackend> target,
                         const void *owner, std::string origin,
                         unsigned abiMinor) {
  std::lock_guard<std::mutex> lock(mutex);
  auto entry = std::make_unique<Entry>();
  entry->ref.target = target.get();
  entry->ref.owner = owner;
  entry->ref.origin = std::move(origin);
  entry->ref.abiMinor = abiMinor;
  entry->target = std::move(target);
  entries.push_back(std::move(entry));
}

void TargetRegistry::withdraw(const void *owner) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &entry : entries)
    if (owner && entry->ref.owner == owner)
      entry->withdrawn = true;
}

std::vector<TargetRef> TargetRegistry::getTargets() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<TargetRef> targets;
  for (const auto &entry : entries)
    if (!entry->withdrawn)
      targets.push_back(entry->ref);
  return targets;
}

std::vector<TargetRef> TargetRegistry::getTargetsOf(const void *owner) const {
  std::vector<TargetRef> targets;
  for (const TargetRef &ref : getTargets())
    if (ref.owner == owner)
      targets.push_back(ref);
  return targets;
}

TargetRef TargetRegistry::find(StringRef deviceName) const {
  for (const TargetRef &ref : getTargets())
    if (ref.target->getDeviceName() == deviceName)
      return ref;
  return {};
}

TargetRef TargetRegistry::findWithdrawn(StringRef deviceName) const {
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &entry : entries)
    if (entry->withdrawn && entry->target->getDeviceName() == deviceName)
      return entry->ref;
  return {};
}

std::string TargetRegistry::describeDevices() const {
  std::vector<std::string> names;
  for (const TargetRef &ref : getTargets())
    if (!llvm::is_contained(names, ref.target->getDeviceName()))
      names.push_back(ref.target->getDeviceName());
  return names.empty() ? std::string("none") : llvm::join(names, ", ");
}

void TargetRegistry::getDependentDialects(DialectRegistry &registry) const {
  for (const TargetRef &ref : getTargets())
    if (ref.abiMinor >= kNativeLoweringMinor)
      ref.target->getDependentDialects(registry);
}

namespace {
void setOrForget(llvm::StringMap<std::string> &archs, StringRef device,
                 StringRef arch) {
  if (arch.empty())
    archs.erase(device);
  else
    archs[device] = arch.str();
}
std::string lookup(const llvm::StringMap<std::string> &archs,
                   StringRef device) {
  auto found = archs.find(device);
  return found == archs.end() ? std::string() : found->second;
}
} // namespace

void TargetRegistry::setDeviceArch(StringRef device, StringRef arch) {
  std::lock_guard<std::mutex> lock(mutex);
  setOrForget(deviceArchs, device, arch);
}

std::string TargetRegistry::getDeviceArch(StringRef device) const {
  std::lock_guard<std::mutex> lock(mutex);
  return lookup(deviceArchs, device);
}

void TargetRegistry::setArchOverride(StringRef device, StringRef arch) {
  std::lock_guard<std::mutex> lock(mutex);
  setOrForget(archOverrides, device, arch);
}

std::string TargetRegistry::getArchOverride(StringRef device) const {
  std::lock_guard<std::mutex> lock(mutex);
  return lookup(archOverrides, device);
}
