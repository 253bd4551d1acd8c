//===- Module.cpp - Kernel modules, kernels and checked launches ----------===//
//
// A module is loaded through its device's table, its manifest parsed, and
// every kernel symbol resolved up front, so a module that loads is fully
// usable and a launch only has to compare buffers against the manifest.
//
//===----------------------------------------------------------------------===//

#include "BufferImpl.h"
#include "CollectiveCall.h"
#include "DeviceImpl.h"
#include "Error.h"
#include "Shape.h"
#include "StreamImpl.h"

#include "te/ABI/Manifest.h"
#include "te/Runtime/Collective.h"
#include "te/Runtime/Module.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

using namespace te::runtime;
using te::abi::ManifestArgument;
using te::abi::ManifestEntry;
using te::abi::ManifestOperand;
using te::abi::ManifestStep;

static_assert(te::abi::kNewestManifestVersion == TE_KERNEL_ABI_VERSION,
              "te/ABI/Manifest.h and te/Runtime/Module.h disagree on the "
              "newest manifest version");
static_assert(te::abi::kMaxManifestRank == TE_MAX_RANK,
              "te/ABI/Manifest.h and te/Runtime/Buffer.h disagree on the "
              "most dimensions");

/// The te_dtype of a manifest argument (the same enumeration, DType.cpp).
static te_dtype dtypeOf(const ManifestArgument &arg) {
  return static_cast<te_dtype>(arg.elementType);
}

namespace {

using BufferPtr = std::unique_ptr<te_buffer, decltype(&te_buffer_release)>;

/// The temporaries of an entry that runs as steps, kept across launches:
/// a set is taken for one launch while its steps are enqueued, then waits
/// for the next launch on the same stream, which the stream runs after the
/// steps that used it, so no launch waits for the device. Concurrent
/// launches take different sets. The sets kept for a stream go when the
/// stream is released, all of them with the module, and idle ones when an
/// allocation runs out of memory.
struct TemporaryPool {
  te_device *device = nullptr;
  std::mutex mutex;
  /// Free sets by stream handle (null: the default stream).
  std::map<void *, std::vector<std::vector<BufferPtr>>> free;
  bool empty() {
    std::lock_guard<std::mutex> lock(mutex);
    return free.empty();
  }
};

/// Every live kernel's pool, so that a released stream's sets can go.
std::mutex poolsMutex;
std::vector<TemporaryPool *> &livePools() {
  static std::vector<TemporaryPool *> pools;
  return pools;
}

void registerPool(TemporaryPool *pool) {
  std::lock_guard<std::mutex> lock(poolsMutex);
  livePools().push_back(pool);
}

void unregisterPool(TemporaryPool *pool) {
  std::lock_guard<std::mutex> lock(poolsMutex);
  std::vector<TemporaryPool *> &pools = livePools();
  pools.erase(std::remove(pools.begin(), pools.end(), pool), pools.end());
}

/// Frees, in every pool of `device`, the sets kept for the streams `drop`
/// names (their work must be complete).
void dropSets(te_device *device,
              const std::function<bool(void *stream)> &drop) {
  std::lock_guard<std::mutex> registry(poolsMutex);
  for (TemporaryPool *pool : livePools()) {
    if (pool->device != device)
      continue;
    std::lock_guard<std::mutex> lock(pool->mutex);
    for (auto it = pool->free.begin(); it != pool->free.end();)
      it = drop(it->first) ? pool->free.erase(it) : std::next(it);
  }
}

} // namespace

void te::runtime::forgetStreamTemporaries(te_device *device, void *stream) {
  dropSets(device, [&](void *key) { return key == stream; });
}

struct te_kernel {
  te_module *module;
  ManifestEntry entry;
  /// Opaque handle from te_device_ops::get_function; null for an entry
  /// that runs as steps.
  void *function;
  /// The function of each of the entry's steps, in order.
  std::vector<void *> stepFunctions;
  /// Each step's collective, parsed at load; null for the other steps.
  std::vector<std::shared_ptr<const CollectiveCall>> stepCollectives;
  /// The steps' temporaries (a pointer: te_kernel moves into its module).
  std::unique_ptr<TemporaryPool> temporaries =
      std::make_unique<TemporaryPool>();
};

struct te_module {
  /// Holds a reference for as long as the module lives.
  te_device *device = nullptr;
  /// Opaque handle from te_device_ops::load_module; unloaded on destruction.
  void *handle = nullptr;
  /// The path, or the display name of an image, for messages.
  std::string origin;
  /// Never resized after loading, so te_kernel pointers stay valid.
  std::vector<te_kernel> kernels;
  /// Source locations of the program's te ops, by the numbers kernels use
  /// in their check messages (`{@k}`); empty when unknown.
  std::vector<std::string> sourceLocations;
  std::atomic<int> refCount{1};

  ~te_module() {
    // Pooled temporaries may still be in use by enqueued steps.
    bool pooled = false;
    for (te_kernel &kernel : kernels) {
      unregisterPool(kernel.temporaries.get());
      pooled |= !kernel.temporaries->empty();
    }
    if (pooled && device) {
      (void)device->ops->synchronize(device->instance);
      for (te_kernel &kernel : kernels)
        kernel.temporaries->free.clear();
    }
    if (handle)
      device->ops->unload_module(device->instance, handle);
    if (device)
      releaseDevice(device);
  }
};

namespace {

/// Loads from a file (`image` NULL) or from memory (`path` NULL).
te_status loadModule(const char *fn, te_device *device, const char *path,
                     const void *image, size_t imageSize,
                     const std::string &origin, te_module **out) {
  const te_device_ops &ops = *device->ops;
  if (!supportsModules(ops))
    return fail(TE_ERROR_UNSUPPORTED,
                "%s: device '%s' %d cannot run kernels (its te_device_ops has "
                "no module entries); open a device that can, such as 'cpu'",
                fn, device->name, device->index);

  auto module = std::make_unique<te_module>();
  module->origin = origin;
  char loaderError[1024] = "";
  te_status status =
      ops.load_module(device->instance, path, image, imageSize, &module->handle,
                      loaderError, sizeof(loaderError));
  loaderError[sizeof(loaderError) - 1] = '\0'; // In case a plugin filled it.
  if (status != TE_OK) {
    module->handle = nullptr;
    return fail(status == TE_ERROR_OUT_OF_MEMORY ? status
                                                 : TE_ERROR_LOAD_FAILED,
                "%s: cannot load '%s' on device '%s' %d: %s", fn,
                origin.c_str(), device->name, device->index,
                loaderError[0] ? loaderError : te_status_string(status));
  }
  retainDevice(device);
  module->device = device;

  const char *manifest = nullptr;
  status = ops.get_manifest(device->instance, module->handle, &manifest);
  if (status == TE_ERROR_NOT_FOUND || (status == TE_OK && !manifest))
    return fail(TE_ERROR_LOAD_FAILED,
                "%s: '%s' carries no kernel manifest (te_kernel_manifest); is "
                "it a kernel module built by te-mlir?",
                fn, origin.c_str());
  if (status != TE_OK)
    return fail(status, "%s: reading the manifest of '%s' failed: %s", fn,
                origin.c_str(), te_status_string(status));

  te::abi::Manifest parsed;
  std::string parseError;
  if (!te::abi::readManifest(manifest, parsed, parseError))
    return fail(TE_ERROR_LOAD_FAILED, "%s: '%s': invalid kernel manifest: %s",
                fn, origin.c_str(), parseError.c_str());

  auto resolve = [&](const std::string &symbol, int line,
                     const std::string &entryName, void **function) {
    te_status status = ops.get_function(device->instance, module->handle,
                                        symbol.c_str(), function);
    if (status == TE_ERROR_NOT_FOUND)
      return fail(TE_ERROR_LOAD_FAILED,
                  "%s: '%s': manifest line %d: entry '%s' names symbol '%s', "
                  "which the module does not define as a function",
                  fn, origin.c_str(), line, entryName.c_str(), symbol.c_str());
    if (status != TE_OK)
      return fail(status, "%s: '%s': looking up symbol '%s' failed: %s", fn,
                  origin.c_str(), symbol.c_str(), te_status_string(status));
    return TE_OK;
  };
  module->kernels.reserve(parsed.entries.size());
  for (ManifestEntry &entry : parsed.entries) {
    te_kernel kernel{module.get(), {}, nullptr, {}, {}};
    // An entry that runs as steps names the program function its plan was
    // made from; only the steps' kernels exist in the module.
    if (entry.plan.steps.empty()) {
      if (te_status failed =
              resolve(entry.symbol, entry.line, entry.name, &kernel.function))
        return failed;
    }
    for (const ManifestStep &step : entry.plan.steps) {
      void *function = nullptr;
      std::shared_ptr<CollectiveCall> collective;
      if (isCollectiveFunction(step.function)) {
        // A collective: the runtime runs it on the device's channels.
        if (!device->ops->collective)
          return fail(TE_ERROR_UNSUPPORTED,
                      "%s: '%s': manifest line %d: entry '%s' runs the "
                      "collective '%s', but device '%s' has no collectives; "
                      "run the program on a device that has them (cpu, "
                      "cuda)",
                      fn, origin.c_str(), step.line, entry.name.c_str(),
                      step.function.c_str(), device->name);
        collective = std::make_shared<CollectiveCall>();
        std::string why =
            parseCollectiveCall(step.function, step.parameters, *collective);
        if (!why.empty())
          return fail(TE_ERROR_LOAD_FAILED,
                      "%s: '%s': manifest line %d: entry '%s': %s", fn,
                      origin.c_str(), step.line, entry.name.c_str(),
                      why.c_str());
      } else if (!step.function.empty()) {
        // A library call: the device runs it, if it runs library calls.
        if (!device->ops->library_call)
          return fail(TE_ERROR_UNSUPPORTED,
                      "%s: '%s': manifest line %d: entry '%s' calls the "
                      "library function '%s', but device '%s' runs no "
                      "library calls; compile the program for this device",
                      fn, origin.c_str(), step.line, entry.name.c_str(),
                      step.function.c_str(), device->name);
      } else if (te_status failed =
                     resolve(step.symbol, step.line, entry.name, &function)) {
        return failed;
      }
      kernel.stepFunctions.push_back(function);
      kernel.stepCollectives.push_back(std::move(collective));
    }
    kernel.entry = std::move(entry);
    kernel.temporaries->device = device;
    registerPool(kernel.temporaries.get());
    module->kernels.push_back(std::move(kernel));
  }
  *out = module.release();
  return TE_OK;
}

/// "2 inputs, 1 output", for argument count messages.
std::string describeArity(const te_kernel &kernel) {
  int outputs = 0;
  for (const ManifestArgument &arg : kernel.entry.arguments)
    outputs += arg.isOutput;
  int inputs = static_cast<int>(kernel.entry.arguments.size()) - outputs;
  return std::to_string(inputs) + (inputs == 1 ? " input, " : " inputs, ") +
         std::to_string(outputs) + (outputs == 1 ? " output" : " outputs");
}

te_status checkLaunchArgs(const char *fn, const te_kernel &kernel,
                          te_buffer *const *args, int nargs) {
  const std::vector<ManifestArgument> &expected = kernel.entry.arguments;
  const char *name = kernel.entry.name.c_str();
  if (nargs != static_cast<int>(expected.size()))
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: kernel '%s' takes %zu arguments (%s) but %d were given",
                fn, name, expected.size(), describeArity(kernel).c_str(),
                nargs);
  if (nargs > 0 && !args)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: kernel '%s': args must not be NULL", fn, name);

  const te_device *device = kernel.module->device;
  for (int i = 0; i < nargs; ++i) {
    const ManifestArgument &want = expected[i];
    const te_buffer *got = args[i];
    const char *role = want.isOutput ? "output" : "input";
    if (!got)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: kernel '%s': argument %d (%s) is NULL", fn, name, i,
                  role);
    if (got->device != device)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: kernel '%s': argument %d (%s) is on device '%s' %d but "
                  "the kernel runs on '%s' %d; create the buffer on the "
                  "kernel's device",
                  fn, name, i, role, got->device->name, got->device->index,
                  device->name, device->index);
    bool sameShape = got->rank == want.rank;
    for (int d = 0; sameShape && d < want.rank; ++d)
      sameShape = got->dims[d] == want.dims[d];
    if (got->dtype != dtypeOf(want) || !sameShape)
      return fail(got->dtype != dtypeOf(want) ? TE_ERROR_DTYPE_MISMATCH
                                              : TE_ERROR_SHAPE_MISMATCH,
                  "%s: kernel '%s': argument %d (%s): expected %s, got %s", fn,
                  name, i, role,
                  formatTensorType(dtypeOf(want), want.rank, want.dims).c_str(),
                  formatTensorType(got->dtype, got->rank, got->dims).c_str());
  }

  // Outputs are written while other arguments are read; sharing a buffer
  // would make the result depend on the kernel's access order.
  for (int i = 0; i < nargs; ++i) {
    if (!expected[i].isOutput)
      continue;
    for (int j = 0; j < nargs; ++j) {
      if (j == i)
        continue;
      if (args[j] != args[i] && !buffersOverlap(args[i], args[j]))
        continue;
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: kernel '%s': argument %d (output) %s argument %d "
                  "(%s); outputs must not alias other arguments, pass a "
                  "separate buffer",
                  fn, name, i,
                  args[j] == args[i] ? "is the same buffer as"
                                     : "overlaps the memory of",
                  j, expected[j].isOutput ? "output" : "input");
    }
  }
  return TE_OK;
}

} // namespace

extern "C" te_status te_module_load(te_device *device, const char *path,
                                    te_module **out) {
  const char *fn = "te_module_load";
  if (out)
    *out = nullptr;
  if (!device || !path || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !device ? "device"
                : !path ? "path"
                        : "out");
  if (!*path)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: path must not be empty", fn);
  return guard(
      fn, [&] { return loadModule(fn, device, path, nullptr, 0, path, out); });
}

extern "C" te_status te_module_load_image(te_device *device, const void *image,
                                          size_t size, const char *displayName,
                                          te_module **out) {
  const char *fn = "te_module_load_image";
  if (out)
    *out = nullptr;
  if (!device || !image || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !device  ? "device"
                : !image ? "image"
                         : "out");
  if (size == 0)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: the image is empty", fn);
  return guard(fn, [&] {
    std::string origin = displayName ? displayName : "<in-memory image>";
    return loadModule(fn, device, nullptr, image, size, origin, out);
  });
}

extern "C" int te_module_num_kernels(const te_module *module) {
  return module ? static_cast<int>(module->kernels.size()) : -1;
}

extern "C" const char *te_module_kernel_name(const te_module *module,
                                             int index) {
  if (!module || index < 0 || index >= static_cast<int>(module->kernels.size()))
    return nullptr;
  return module->kernels[index].entry.name.c_str();
}

extern "C" te_device *te_module_device(const te_module *module) {
  return module ? module->device : nullptr;
}

extern "C" te_status te_module_get_kernel(te_module *module, const char *entry,
                                          te_kernel **out) {
  const char *fn = "te_module_get_kernel";
  if (out)
    *out = nullptr;
  if (!module || !entry || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !module  ? "module"
                : !entry ? "entry"
                         : "out");
  for (te_kernel &kernel : module->kernels) {
    if (kernel.entry.name == entry) {
      *out = &kernel;
      return TE_OK;
    }
  }
  return guard(fn, [&] {
    std::string available;
    for (const te_kernel &kernel : module->kernels)
      available += (available.empty() ? "" : ", ") + kernel.entry.name;
    return fail(TE_ERROR_NOT_FOUND,
                "%s: '%s' has no kernel named '%.80s'; it has: %s", fn,
                module->origin.c_str(), entry, available.c_str());
  });
}

extern "C" void te_module_retain(te_module *module) {
  if (module)
    module->refCount.fetch_add(1, std::memory_order_relaxed);
}

extern "C" void te_module_release(te_module *module) {
  if (module && module->refCount.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete module;
}

extern "C" te_status te_module_set_source_locations(te_module *module,
                                                    const char *locations) {
  if (!module || !locations)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "te_module_set_source_locations: module and locations must "
                "not be NULL");
  return guard("te_module_set_source_locations", [&] {
    std::vector<std::string> lines;
    std::string_view rest(locations);
    while (!rest.empty()) {
      size_t end = rest.find('\n');
      lines.emplace_back(rest.substr(0, end));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
    module->sourceLocations = std::move(lines);
    return TE_OK;
  });
}

extern "C" const char *te_kernel_name(const te_kernel *kernel) {
  return kernel ? kernel->entry.name.c_str() : nullptr;
}

/// `text` with each `{@k}` replaced by the location of te op k of the
/// module's program.
static std::string
expandOpLocations(const std::string &text,
                  const std::vector<std::string> &locations) {
  std::string result;
  for (size_t i = 0; i < text.size(); ++i) {
    size_t close = text.find('}', i);
    if (text.compare(i, 2, "{@") == 0 && close != std::string::npos &&
        close > i + 2 && text.find_first_not_of("0123456789", i + 2) == close &&
        close - i - 2 < 10) {
      size_t ordinal = std::stoul(text.substr(i + 2, close - i - 2));
      result += ordinal < locations.size()
                    ? locations[ordinal]
                    : "te op " + std::to_string(ordinal) + " of its program";
      i = close;
      continue;
    }
    result += text[i];
  }
  return result;
}

/// Reads a kernel's status after its launch and, when a check failed,
/// fails with that check's message, its values filled in.
static te_status checkKernelStatus(const char *fn, const te_kernel &kernel,
                                   const te_buffer &status) {
  int64_t words[4] = {0, 0, 0, 0};
  if (te_status failed = te_buffer_read(&status, words, sizeof(words)))
    return failed;
  if (words[0] == 0)
    return TE_OK;
  const std::vector<std::string> &checks = kernel.entry.checks;
  if (words[0] < 0 || static_cast<uint64_t>(words[0]) > checks.size())
    return fail(TE_ERROR_INTERNAL,
                "%s: kernel '%s' reported check %lld, but its manifest has %zu "
                "checks",
                fn, kernel.entry.name.c_str(), static_cast<long long>(words[0]),
                checks.size());
  const std::string &message = checks[words[0] - 1];
  const std::vector<std::string> &locations = kernel.module->sourceLocations;
  std::string text;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '{' && i + 2 < message.size() && message[i + 1] >= '0' &&
        message[i + 1] <= '2' && message[i + 2] == '}') {
      text += std::to_string(words[1 + (message[i + 1] - '0')]);
      i += 2;
      continue;
    }
    text += message[i];
  }
  // {@k}: the location of te op k of the program.
  return fail(TE_ERROR_KERNEL_FAILED, "%s",
              expandOpLocations(text, locations).c_str());
}

extern "C" int te_kernel_num_collectives(const te_kernel *kernel) {
  if (!kernel)
    return -1;
  int count = 0;
  for (const auto &collective : kernel->stepCollectives)
    count += collective != nullptr;
  return count;
}

extern "C" int te_kernel_num_args(const te_kernel *kernel) {
  return kernel ? static_cast<int>(kernel->entry.arguments.size()) : -1;
}

extern "C" te_status te_kernel_arg(const te_kernel *kernel, int index,
                                   te_arg_info *out) {
  const char *fn = "te_kernel_arg";
  if (!kernel || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: %s must not be NULL", fn,
                !kernel ? "kernel" : "out");
  int count = static_cast<int>(kernel->entry.arguments.size());
  if (index < 0 || index >= count)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: kernel '%s' has %d arguments, so index %d is out of range",
                fn, kernel->entry.name.c_str(), count, index);
  const ManifestArgument &arg = kernel->entry.arguments[index];
  out->is_output = arg.isOutput;
  out->dtype = dtypeOf(arg);
  out->rank = arg.rank;
  out->dims = arg.dims;
  return TE_OK;
}

extern "C" const char *te_kernel_arg_role(const te_kernel *kernel, int index) {
  if (!kernel || index < 0 ||
      index >= static_cast<int>(kernel->entry.arguments.size()))
    return "";
  return kernel->entry.arguments[index].role.c_str();
}

/// "kernel 'k' failed on device 'cuda' 0: <status>: <detail>".
static te_status failLaunch(const char *fn, const te_kernel &kernel,
                            te_status failed) {
  // The detail names ops as {@k} (a failed allocation in a kernel).
  std::string detail =
      expandOpLocations(takeDeviceDetail(), kernel.module->sourceLocations);
  const te_device *device = kernel.module->device;
  return fail(failed, "%s: kernel '%s' failed on device '%s' %d: %s%s%s", fn,
              kernel.entry.name.c_str(), device->name, device->index,
              te_status_string(failed), detail.empty() ? "" : ": ",
              detail.c_str());
}

/// Launches a single-kernel entry: its arguments, then the status buffer.
static te_status launchSingle(const char *fn, te_kernel &kernel,
                              te_buffer *const *args, int nargs,
                              te_buffer *status,
                              const te_launch_config *config) {
  int count = nargs + (status ? 1 : 0);
  // Kernels have few arguments; avoid a heap allocation per launch.
  constexpr int kInlineArgs = 16;
  void *inlineData[kInlineArgs];
  std::vector<void *> heapData;
  void **data = inlineData;
  if (count > kInlineArgs) {
    heapData.resize(count);
    data = heapData.data();
  }
  for (int i = 0; i < nargs; ++i)
    data[i] = args[i]->data;
  if (status)
    data[nargs] = status->data;
  te_device *device = kernel.module->device;
  takeDeviceDetail();
  if (te_status failed = device->ops->launch(device->instance, kernel.function,
                                             data, count, config))
    return failLaunch(fn, kernel, failed);
  return TE_OK;
}

/// Launches the steps of an entry in order on the configuration's stream,
/// with a set of its temporaries from the kernel's pool (allocated on first
/// use), which goes back to the pool for later launches on that stream.
static te_status launchSteps(const char *fn, te_kernel &kernel,
                             te_buffer *const *args, te_buffer *status,
                             te_launch_config config, bool passConfig) {
  te_device *device = kernel.module->device;
  const ManifestEntry &entry = kernel.entry;
  TemporaryPool &pool = *kernel.temporaries;
  std::vector<BufferPtr> temporaries;
  if (!entry.plan.temporaries.empty()) {
    std::lock_guard<std::mutex> lock(pool.mutex);
    auto found = pool.free.find(config.stream);
    if (found != pool.free.end()) {
      temporaries = std::move(found->second.back());
      found->second.pop_back();
      if (found->second.empty())
        pool.free.erase(found);
    }
  }
  for (size_t t = temporaries.size(); t < entry.plan.temporaries.size(); ++t) {
    const int64_t dims[] = {static_cast<int64_t>(entry.plan.temporaries[t])};
    te_buffer *created = nullptr;
    te_status failed = te_buffer_create(device, TE_DTYPE_I8, 1, dims, &created);
    if (failed == TE_ERROR_OUT_OF_MEMORY) {
      // Idle sets of every kernel of the device may make room: once the
      // device is done with them, free them and try again.
      if (device->ops->synchronize(device->instance) == TE_OK) {
        dropSets(device, [](void *) { return true; });
        failed = te_buffer_create(device, TE_DTYPE_I8, 1, dims, &created);
      }
    }
    if (failed)
      return failed;
    temporaries.emplace_back(created, te_buffer_release);
  }
  te_status result = TE_OK;
  std::vector<void *> data;
  std::vector<size_t> sizes;
  for (size_t i = 0; i < entry.plan.steps.size() && result == TE_OK; ++i) {
    const ManifestStep &step = entry.plan.steps[i];
    data.clear();
    sizes.clear();
    for (const ManifestOperand &operand : step.operands) {
      te_buffer *buffer = nullptr;
      switch (operand.kind) {
      case ManifestOperand::Kind::Argument:
        buffer = args[operand.index];
        break;
      case ManifestOperand::Kind::Temporary:
        buffer = temporaries[operand.index].get();
        break;
      case ManifestOperand::Kind::Status:
        buffer = status;
        break;
      }
      data.push_back(buffer->data);
      sizes.push_back(te_buffer_size_bytes(buffer));
    }
    for (int d = 0; d < 3; ++d) {
      config.grid[d] = step.geometry.grid[d];
      config.block[d] = step.geometry.block[d];
    }
    config.shared_memory_bytes = step.geometry.sharedMemoryBytes;
    takeDeviceDetail();
    if (const CollectiveCall *collective = kernel.stepCollectives[i].get()) {
      if (te_status failed =
              runCollectiveCall(device, *collective, data.data(), sizes.data(),
                                static_cast<int>(data.size()), &config))
        result = failLaunch(fn, kernel, failed);
    } else if (!step.function.empty()) {
      if (te_status failed = device->ops->library_call(
              device->instance, step.function.c_str(), step.parameters.c_str(),
              data.data(), sizes.data(), static_cast<int>(data.size()),
              &config))
        result = failLaunch(fn, kernel, failed);
    } else if (te_status failed = device->ops->launch(
                   device->instance, kernel.stepFunctions[i], data.data(),
                   static_cast<int>(data.size()),
                   passConfig ? &config : nullptr)) {
      result = failLaunch(fn, kernel, failed);
    }
  }
  if (!temporaries.empty()) {
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.free[config.stream].push_back(std::move(temporaries));
  }
  return result;
}

/// A launch on `stream` (null: the default stream), as te_kernel_launch_on
/// documents it.
static te_status launchKernel(const char *fn, te_kernel *kernel,
                              te_buffer *const *args, int nargs,
                              te_stream *stream) {
  if (!kernel)
    return fail(TE_ERROR_INVALID_ARGUMENT, "%s: kernel must not be NULL", fn);
  return guard(fn, [&] {
    if (te_status status = checkLaunchArgs(fn, *kernel, args, nargs))
      return status;
    te_device *device = kernel->module->device;
    if (stream && stream->device != device)
      return fail(TE_ERROR_INVALID_ARGUMENT,
                  "%s: kernel '%s' belongs to device '%s' %d, the stream to "
                  "device '%s' %d",
                  fn, kernel->entry.name.c_str(), device->name, device->index,
                  stream->device->name, stream->device->index);
    // Version 1 tables take no configuration.
    te_launch_config config = {};
    config.struct_size = sizeof(te_launch_config);
    config.stream = stream ? stream->handle : nullptr;
    // Without a launch line the geometry stays zero (te/Runtime/Module.h).
    if (const auto &launch = kernel->entry.launch) {
      for (int i = 0; i < 3; ++i) {
        config.grid[i] = launch->grid[i];
        config.block[i] = launch->block[i];
      }
      config.shared_memory_bytes = launch->sharedMemoryBytes;
    }
    if (te_status failed = getExecContext(
            device, config.stream,
            stream ? &stream->execContext : &device->defaultExecContext,
            stream ? stream->execContextMutex : device->execContextMutex,
            &config.exec_context))
      return failed;
    const te_launch_config *passed =
        isVersion2(*device->ops) ? &config : nullptr;
    // A kernel with run-time checks reports them through one more argument,
    // a status buffer on its device.
    std::unique_ptr<te_buffer, decltype(&te_buffer_release)> status(
        nullptr, te_buffer_release);
    if (kernel->entry.hasStatus) {
      const int64_t dims[] = {4};
      te_buffer *created = nullptr;
      if (te_status failed =
              te_buffer_create(device, TE_DTYPE_I64, 1, dims, &created))
        return failed;
      status.reset(created);
    }
    if (te_status failed =
            kernel->entry.plan.steps.empty()
                ? launchSingle(fn, *kernel, args, nargs, status.get(), passed)
                : launchSteps(fn, *kernel, args, status.get(), config,
                              isVersion2(*device->ops)))
      return failed;
    if (!status)
      return TE_OK;
    // Reading the status copies on the default stream: the kernel's stream
    // must have completed it first.
    if (stream && stream->handle)
      if (te_status failed =
              device->ops->stream_synchronize(device->instance, stream->handle))
        return fail(failed, "%s: kernel '%s' failed on device '%s' %d: %s", fn,
                    kernel->entry.name.c_str(), device->name, device->index,
                    te_status_string(failed));
    return checkKernelStatus(fn, *kernel, *status);
  });
}

extern "C" te_status te_kernel_launch(te_kernel *kernel, te_buffer *const *args,
                                      int nargs) {
  return launchKernel("te_kernel_launch", kernel, args, nargs, nullptr);
}

extern "C" te_status te_kernel_launch_on(te_kernel *kernel,
                                         te_buffer *const *args, int nargs,
                                         te_stream *stream) {
  return launchKernel("te_kernel_launch_on", kernel, args, nargs, stream);
}
