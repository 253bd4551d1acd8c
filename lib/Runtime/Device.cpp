//===- Device.cpp - Device registry and device instances ------------------===//
//
// The registry maps device names to te_device_ops tables and keeps one
// te_device per opened (name, index), so every user of "cpu" 0 shares the same
// instance and device identity is pointer identity.
//
//===----------------------------------------------------------------------===//

#include "CUDADevice.h"
#include "DeviceImpl.h"
#include "Error.h"
#include "HostDevice.h"
#include "te/Runtime/Buffer.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace te::runtime;

namespace {

constexpr size_t kMaxDeviceNameLength = 63;

struct RegisteredDevice {
  std::string name;
  te_device_ops ops;
  void *context;
  std::map<int, te_device *> openInstances;
};

class Registry {
public:
  static Registry &get() {
    // Leaked on purpose: buffers released from static destructors of other
    // libraries must still find their device.
    static Registry *registry = new Registry();
    return *registry;
  }

  std::mutex mutex;
  // unique_ptr keeps each entry (and the table te_device::ops points at) at a
  // fixed address while the vector grows.
  std::vector<std::unique_ptr<RegisteredDevice>> devices;

  RegisteredDevice *lookup(const char *name) {
    for (const std::unique_ptr<RegisteredDevice> &device : devices)
      if (device->name == name)
        return device.get();
    return nullptr;
  }

  std::string registeredNames() {
    std::string names;
    for (const std::unique_ptr<RegisteredDevice> &device : devices) {
      if (!names.empty())
        names += ", ";
      names += device->name;
    }
    return names;
  }

  /// Checks that `ops` can be registered (with the names in `pending`
  /// about to be registered as well); `fn` names the caller in messages.
  te_status validate(const te_device_ops *ops, const char *fn,
                     const std::vector<std::string> &pending = {});
  /// Registers a table that validate accepted.
  void insert(const te_device_ops *ops, void *context);
  te_status add(const te_device_ops *ops, void *context) {
    te_status status = validate(ops, "te_device_register");
    if (status == TE_OK)
      insert(ops, context);
    return status;
  }

private:
  Registry() {
    // The built-in devices go through the same validation as any plugin.
    [[maybe_unused]] te_status status = add(&getHostDeviceOps(), nullptr);
    assert(status == TE_OK && "the host device table is invalid");
    status = add(&getCUDADeviceOps(), nullptr);
    assert(status == TE_OK && "the cuda device table is invalid");
  }
};

bool isValidDeviceName(const char *name) {
  size_t length = std::strlen(name);
  if (length == 0 || length > kMaxDeviceNameLength)
    return false;
  for (size_t i = 0; i < length; ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

/// One entry of a table, for the checks of validate.
struct Entry {
  const char *field;
  bool present;
};

/// Lists the present and the missing entries of an optional group (comma
/// separated, replacing what `present` and `missing` held); true when the
/// group is only partly there.
template <size_t N>
bool splitGroup(const Entry (&group)[N], std::string &present,
                std::string &missing) {
  present.clear();
  missing.clear();
  for (const Entry &entry : group) {
    std::string &list = entry.present ? present : missing;
    list += list.empty() ? "" : ", ";
    list += entry.field;
  }
  return !present.empty() && !missing.empty();
}

te_status Registry::validate(const te_device_ops *ops, const char *fn,
                             const std::vector<std::string> &pending) {
  if (!ops)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: ops must not be NULL", fn);
  if (ops->struct_size < TE_DEVICE_OPS_V1_SIZE)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: te_device_ops.struct_size is %zu but even the first "
                "version of the table has %zu bytes; set it to "
                "sizeof(te_device_ops) as te/Runtime/Device.h defines it",
                fn, ops->struct_size,
                static_cast<size_t>(TE_DEVICE_OPS_V1_SIZE));
  // What the plugin's table has; the fields after it are not read.
  te_device_ops table = {};
  std::memcpy(&table, ops, std::min(ops->struct_size, sizeof(te_device_ops)));
  ops = &table;
  if (!ops->name)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: te_device_ops.name must not be NULL", fn);
  if (!isValidDeviceName(ops->name))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: invalid device name '%.80s'; use 1 to %zu characters "
                "from [A-Za-z0-9_.-]",
                fn, ops->name, kMaxDeviceNameLength);

  const Entry required[] = {
      {"allocate", ops->allocate != nullptr},
      {"free", ops->free != nullptr},
      {"copy_to_device", ops->copy_to_device != nullptr},
      {"copy_to_host", ops->copy_to_host != nullptr},
      {"copy_device_to_device", ops->copy_device_to_device != nullptr},
      {"synchronize", ops->synchronize != nullptr},
  };
  for (const Entry &entry : required)
    if (!entry.present)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: device '%s' leaves the required entry "
                  "te_device_ops.%s NULL",
                  fn, ops->name, entry.field);

  const Entry moduleGroup[] = {
      {"load_module", ops->load_module != nullptr},
      {"unload_module", ops->unload_module != nullptr},
      {"get_manifest", ops->get_manifest != nullptr},
      {"get_function", ops->get_function != nullptr},
      {"launch", ops->launch != nullptr},
  };
  std::string present, missing;
  if (splitGroup(moduleGroup, present, missing))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: device '%s' implements %s but not %s; a device that "
                "runs kernels needs all five module entries, a device that "
                "only stores buffers none of them",
                fn, ops->name, present.c_str(), missing.c_str());

  const Entry streamGroup[] = {
      {"stream_create", ops->stream_create != nullptr},
      {"stream_destroy", ops->stream_destroy != nullptr},
      {"stream_synchronize", ops->stream_synchronize != nullptr},
      {"event_create", ops->event_create != nullptr},
      {"event_destroy", ops->event_destroy != nullptr},
      {"event_record", ops->event_record != nullptr},
      {"stream_wait_event", ops->stream_wait_event != nullptr},
      {"event_synchronize", ops->event_synchronize != nullptr},
      {"event_elapsed_ms", ops->event_elapsed_ms != nullptr},
  };
  if (splitGroup(streamGroup, present, missing))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: device '%s' implements %s but not %s; a device with "
                "streams needs all nine stream and event entries, a device "
                "without them none (the runtime then orders all work on the "
                "default stream)",
                fn, ops->name, present.c_str(), missing.c_str());
  if ((ops->exec_context_create != nullptr) !=
      (ops->exec_context_destroy != nullptr))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: device '%s' implements only one of exec_context_create "
                "and exec_context_destroy; implement both or neither",
                fn, ops->name);

  const Entry collectiveGroup[] = {
      {"world", ops->world != nullptr},
      {"channel_create", ops->channel_create != nullptr},
      {"channel_destroy", ops->channel_destroy != nullptr},
      {"collective", ops->collective != nullptr},
  };
  if (splitGroup(collectiveGroup, present, missing))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: device '%s' implements %s but not %s; a device with "
                "collectives needs all four collective entries, a device "
                "without them none",
                fn, ops->name, present.c_str(), missing.c_str());

  bool pendingDuplicate = false;
  for (const std::string &name : pending)
    pendingDuplicate = pendingDuplicate || name == ops->name;
  if (lookup(ops->name) || pendingDuplicate)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: a device named '%s' is already registered; pick another "
                "name or register the plugin only once",
                fn, ops->name);
  return TE_OK;
}

void Registry::insert(const te_device_ops *ops, void *context) {

  auto device = std::make_unique<RegisteredDevice>();
  device->name = ops->name;
  // A newer plugin's table may be larger: the fields this runtime does not
  // know are not copied. An older one's is smaller: the fields it lacks stay
  // NULL, and struct_size keeps its size (isVersion2 reads it).
  device->ops = {};
  size_t size = std::min(ops->struct_size, sizeof(te_device_ops));
  std::memcpy(&device->ops, ops, size);
  device->ops.struct_size = size;
  device->context = context;
  devices.push_back(std::move(device));
  devices.back()->ops.name = devices.back()->name.c_str();
}

} // namespace

bool te::runtime::isVersion2(const te_device_ops &ops) {
  return ops.struct_size > offsetof(te_device_ops, stream_create);
}

bool te::runtime::supportsModules(const te_device_ops &ops) {
  // Registration guarantees the group is all present or all absent.
  return ops.load_module != nullptr;
}

void te::runtime::retainDevice(te_device *device) {
  std::lock_guard<std::mutex> lock(Registry::get().mutex);
  ++device->refCount;
}

void te::runtime::releaseDevice(te_device *device) {
  Registry &registry = Registry::get();
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (--device->refCount > 0)
      return;
    registry.lookup(device->name)->openInstances.erase(device->index);
  }
  destroyChannels(device);
  if (device->defaultExecContext)
    device->ops->exec_context_destroy(device->instance,
                                      device->defaultExecContext);
  if (device->ops->close)
    device->ops->close(device->instance);
  delete device;
}

te_status te::runtime::registerDeviceGroup(const te_device_ops *const *ops,
                                           void *const *contexts, int count,
                                           const char *fn) {
  return guard(fn, [&] {
    Registry &registry = Registry::get();
    std::lock_guard<std::mutex> lock(registry.mutex);
    // All or nothing: every table is checked before the first is added.
    std::vector<std::string> pending;
    for (int i = 0; i < count; ++i) {
      te_status status = registry.validate(ops[i], fn, pending);
      if (status != TE_OK)
        return status;
      pending.push_back(ops[i]->name);
    }
    for (int i = 0; i < count; ++i)
      registry.insert(ops[i], contexts ? contexts[i] : nullptr);
    return TE_OK;
  });
}

extern "C" te_status te_device_register(const te_device_ops *ops,
                                        void *context) {
  return guard("te_device_register", [&] {
    Registry &registry = Registry::get();
    std::lock_guard<std::mutex> lock(registry.mutex);
    return registry.add(ops, context);
  });
}

extern "C" te_status te_device_open(const char *name, int index,
                                    te_device **out) {
  const char *fn = "te_device_open";
  if (out)
    *out = nullptr;
  if (!name || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !name ? "name" : "out");
  if (index < 0)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: device index %d of '%.80s' is negative", fn, index, name);
  return guard(fn, [&] {
    Registry &registry = Registry::get();
    std::lock_guard<std::mutex> lock(registry.mutex);
    RegisteredDevice *entry = registry.lookup(name);
    if (!entry)
      return fail(TE_ERROR_NOT_FOUND,
                  "%s: no device named '%.80s' is registered (registered: "
                  "%s); check the spelling, or load the plugin that provides "
                  "it first",
                  fn, name, registry.registeredNames().c_str());

    auto it = entry->openInstances.find(index);
    if (it != entry->openInstances.end()) {
      ++it->second->refCount;
      *out = it->second;
      return TE_OK;
    }

    const te_device_ops &ops = entry->ops;
    takeDeviceDetail();
    int count = ops.device_count ? ops.device_count(entry->context) : 1;
    if (const char *detail = takeDeviceDetail(); count <= 0 && *detail)
      return fail(TE_ERROR_NOT_FOUND, "%s: device '%s' is not available: %s",
                  fn, name, detail);
    if (count <= 0)
      return fail(TE_ERROR_NOT_FOUND,
                  "%s: device '%s' is registered but reports no instances "
                  "present (device_count returned %d); check its driver or "
                  "hardware",
                  fn, name, count);
    if (index >= count)
      return fail(TE_ERROR_NOT_FOUND,
                  "%s: device '%s' has %d instance%s, so index %d does not "
                  "exist; use an index below %d",
                  fn, name, count, count == 1 ? "" : "s", index, count);

    auto device = std::make_unique<te_device>();
    void *instance = entry->context;
    if (ops.open) {
      instance = nullptr;
      if (te_status status = ops.open(entry->context, index, &instance)) {
        const char *detail = takeDeviceDetail();
        return fail(
            status, "%s: device '%s' failed to open instance %d: %s%s%s", fn,
            name, index, te_status_string(status), *detail ? ": " : "", detail);
      }
    }
    device->ops = &ops;
    device->name = entry->name.c_str();
    device->index = index;
    device->instance = instance;
    device->refCount = 1;
    try {
      entry->openInstances.emplace(index, device.get());
    } catch (...) {
      if (ops.close)
        ops.close(instance);
      throw;
    }
    *out = device.release();
    return TE_OK;
  });
}

extern "C" const char *te_device_name(const te_device *device) {
  return device ? device->name : nullptr;
}

extern "C" int te_device_host_memory(te_device *device) {
  if (!device || !device->ops->host_pointer)
    return 0;
  int known = device->hostMemory.load(std::memory_order_acquire);
  if (known >= 0)
    return known;
  // The device's memory is the host's when the host sees an allocation at
  // its own address.
  void *probe = nullptr;
  int same = 0;
  if (device->ops->allocate(device->instance, TE_BUFFER_ALIGNMENT,
                            TE_BUFFER_ALIGNMENT, &probe) == TE_OK &&
      probe) {
    same = device->ops->host_pointer(device->instance, probe) == probe;
    device->ops->free(device->instance, probe);
  }
  device->hostMemory.store(same, std::memory_order_release);
  return same;
}

extern "C" const char *te_device_target_arch(const te_device *device) {
  if (!device || !device->ops->target_arch)
    return nullptr;
  return device->ops->target_arch(device->instance);
}

extern "C" int te_device_index(const te_device *device) {
  return device ? device->index : -1;
}

extern "C" te_status te_device_synchronize(te_device *device) {
  if (!device)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "te_device_synchronize: device must not be NULL");
  if (te_status status = device->ops->synchronize(device->instance))
    return fail(status, "te_device_synchronize: device '%s' %d failed: %s",
                device->name, device->index, te_status_string(status));
  return TE_OK;
}

extern "C" void te_device_release(te_device *device) {
  if (device)
    releaseDevice(device);
}
