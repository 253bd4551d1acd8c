//===- Module.cpp - te_mlir._core: nanobind over te-mlir's C APIs ---------===//
//
// Binds the runtime's C API (devices, runtime plugins, kernel modules,
// checked launches) and the JIT's (compile, cache, load, plugins). Like
// every runtime client it links no MLIR: the compiler is loaded by the JIT
// on the first miss. Arrays cross as DLPack/buffer-protocol arrays
// (nanobind's ndarray): on a device whose memory is the host's, inputs are
// wrapped in place (te_buffer_wrap) and outputs returned over the buffers
// the kernel wrote, without a copy; elsewhere each is copied once.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/Jit.h"
#include "te/Runtime/Plugin.h"
#include "te/Runtime/Runtime.h"
#include "te/Version.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace {

/// The classes of te_mlir/errors.py a failure is raised as.
enum class Kind { Error, Compile, Shape, DType, Plugin, Device };

/// What a status says, where the call does not say more.
Kind kindOf(te_status status) {
  switch (status) {
  case TE_ERROR_COMPILE_FAILED:
    return Kind::Compile;
  case TE_ERROR_SHAPE_MISMATCH:
    return Kind::Shape;
  case TE_ERROR_DTYPE_MISMATCH:
    return Kind::DType;
  case TE_ERROR_OUT_OF_MEMORY:
  case TE_ERROR_KERNEL_FAILED:
    return Kind::Device;
  default:
    return Kind::Error;
  }
}

/// Raised as the te_mlir.errors class of `kind`, with the message (the
/// runtime's or the compiler's) and the status's name.
struct Error : std::runtime_error {
  Error(const std::string &message, te_status status, Kind kind)
      : std::runtime_error(message), status(status), kind(kind) {}
  Error(const std::string &message, te_status status)
      : Error(message, status, kindOf(status)) {}
  te_status status;
  Kind kind;
};

void check(te_status status, const std::string &what) {
  if (status != TE_OK)
    throw Error(what + ": " + te_last_error_message(), status);
}

void checkAs(Kind kind, te_status status, const std::string &what) {
  if (status != TE_OK)
    throw Error(what + ": " + te_last_error_message(), status, kind);
}

void checkJit(te_status status, Kind kind) {
  if (status != TE_OK)
    throw Error(te_jit_last_error_message(), status, kind);
}

void checkJit(te_status status) { checkJit(status, kindOf(status)); }

/// Raises `error` as its te_mlir.errors class.
void raise(const Error &error) {
  static const char *names[] = {"Error",      "CompileError", "ShapeError",
                                "DTypeError", "PluginError",  "DeviceError"};
  nb::object errors = nb::module_::import_("te_mlir.errors");
  nb::object type = errors.attr(names[static_cast<int>(error.kind)]);
  nb::object instance = type(error.what(), te_status_string(error.status));
  PyErr_SetObject(type.ptr(), instance.ptr());
}

/// An opened device instance.
class Device {
public:
  Device(const std::string &name, int index) {
    checkAs(Kind::Device, te_device_open(name.c_str(), index, &device),
            "cannot open device '" + name + "'");
  }
  ~Device() { te_device_release(device); }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  std::string name() const { return te_device_name(device); }
  int index() const { return te_device_index(device); }
  void synchronize() {
    checkAs(Kind::Device, te_device_synchronize(device), "synchronize");
  }
  std::pair<int, int> world() {
    int rank = 0, size = 1;
    te_status status;
    {
      nb::gil_scoped_release release;
      status = te_device_world(device, &rank, &size);
    }
    checkAs(Kind::Device, status, "cannot join the job's collectives");
    return {rank, size};
  }
  te_device *get() const { return device; }

private:
  te_device *device = nullptr;
};

/// A buffer released when it goes out of scope.
struct BufferRef {
  te_buffer *buffer = nullptr;
  ~BufferRef() { te_buffer_release(buffer); }
};

/// One argument of a kernel: (is_output, dtype name, shape).
using ArgInfo = std::tuple<bool, std::string, std::vector<int64_t>>;

/// A host array of any dtype (numpy, torch, anything with DLPack or the
/// buffer protocol), dense: a strided one is copied by nanobind.
using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
/// An output handed to Python as a numpy array.
using NumpyArray = nb::ndarray<nb::numpy>;

/// The DLPack type of `dtype`'s values, or its raw bits (unsigned integers
/// of its width) where numpy has no such type (bf16, FP8).
nb::dlpack::dtype dlpackType(te_dtype dtype, bool rawBits) {
  using Code = nb::dlpack::dtype_code;
  uint8_t bits = static_cast<uint8_t>(8 * te_dtype_size(dtype));
  auto make = [&](Code code) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), bits, 1};
  };
  switch (dtype) {
  case TE_DTYPE_F32:
  case TE_DTYPE_F64:
  case TE_DTYPE_F16:
    return make(Code::Float);
  case TE_DTYPE_BF16:
    return make(rawBits ? Code::UInt : Code::Bfloat);
  case TE_DTYPE_F8E4M3FN:
    return make(rawBits ? Code::UInt : Code::Float8_E4M3FN);
  case TE_DTYPE_F8E5M2:
    return make(rawBits ? Code::UInt : Code::Float8_E5M2);
  case TE_DTYPE_F8E8M0FNU:
    return make(rawBits ? Code::UInt : Code::Float8_E8M0FNU);
  case TE_DTYPE_I1:
    return make(Code::Bool);
  default:
    return make(Code::Int);
  }
}

/// Whether `array` holds `dtype`'s values: its type, or the raw bits of a
/// float type (uint16 for bf16, uint8 for FP8), as te-run takes them.
bool holds(const HostArray &array, te_dtype dtype) {
  nb::dlpack::dtype type = array.dtype();
  if (type == dlpackType(dtype, false))
    return true;
  bool floating = dtype == TE_DTYPE_F16 || dtype == TE_DTYPE_BF16 ||
                  dtype == TE_DTYPE_F8E4M3FN || dtype == TE_DTYPE_F8E5M2 ||
                  dtype == TE_DTYPE_F8E8M0FNU;
  return floating && type == dlpackType(dtype, true);
}

std::string describe(const std::string &dtype,
                     const std::vector<int64_t> &shape) {
  std::string text = dtype + " ";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return shape.empty() ? text + "scalar" : text;
}

/// A loaded kernel module.
class Module {
public:
  explicit Module(te_module *module) : module(module) {}
  ~Module() { te_module_release(module); }
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  std::vector<std::string> kernels() const {
    std::vector<std::string> names;
    for (int i = 0; i < te_module_num_kernels(module); ++i)
      names.push_back(te_module_kernel_name(module, i));
    return names;
  }

  std::string deviceName() const {
    return te_device_name(te_module_device(module));
  }

  std::vector<ArgInfo> signature(const std::string &entry) const {
    te_kernel *kernel = lookup(entry);
    std::vector<ArgInfo> args;
    for (int i = 0; i < te_kernel_num_args(kernel); ++i) {
      te_arg_info info;
      check(te_kernel_arg(kernel, i, &info), "kernel argument");
      args.emplace_back(info.is_output != 0, te_dtype_name(info.dtype),
                        std::vector<int64_t>(info.dims, info.dims + info.rank));
    }
    return args;
  }

  /// Runs `entry` on the module's device with `inputs` (host arrays of
  /// each input's dtype, or its raw bits, and exact shape) and returns the
  /// outputs as numpy arrays (bf16 and FP8 as raw bits).
  std::vector<NumpyArray> run(const std::string &entry,
                              const std::vector<HostArray> &inputs) const {
    te_kernel *kernel = lookup(entry);
    te_device *device = te_module_device(module);
    bool hostMemory = te_device_host_memory(device) != 0;
    std::vector<ArgInfo> args = signature(entry);
    size_t numInputs = 0;
    for (const ArgInfo &arg : args)
      numInputs += std::get<0>(arg) ? 0 : 1;
    if (inputs.size() != numInputs)
      throw Error("@" + entry + " takes " + std::to_string(numInputs) +
                      " inputs, got " + std::to_string(inputs.size()),
                  TE_ERROR_INVALID_ARGUMENT);
    std::vector<std::unique_ptr<BufferRef>> buffers;
    std::vector<te_buffer *> handles;
    for (size_t i = 0; i < args.size(); ++i) {
      const auto &[isOutput, dtypeName, shape] = args[i];
      te_dtype dtype;
      check(te_dtype_from_name(dtypeName.c_str(), &dtype), "dtype");
      auto buffer = std::make_unique<BufferRef>();
      int rank = static_cast<int>(shape.size());
      if (isOutput) {
        check(te_buffer_create(device, dtype, rank, shape.data(),
                               &buffer->buffer),
              "cannot allocate output " + std::to_string(i - numInputs));
      } else {
        const HostArray &array = inputs[i];
        std::vector<int64_t> got(array.shape_ptr(),
                                 array.shape_ptr() + array.ndim());
        bool sameType = holds(array, dtype);
        if (!sameType || got != shape)
          throw Error(
              "@" + entry + " input " + std::to_string(i) + ": expected " +
                  describe(dtypeName, shape) + ", got " +
                  describe(std::to_string(array.dtype().code) + ":" +
                               std::to_string(array.dtype().bits),
                           got) +
                  " (DLPack type code:bits)",
              sameType ? TE_ERROR_SHAPE_MISMATCH : TE_ERROR_DTYPE_MISMATCH);
        auto *data = const_cast<void *>(array.data());
        size_t element = te_dtype_size(dtype);
        // The array itself where the device's memory is the host's (the
        // caller's reference keeps it alive through the call); else a copy.
        if (hostMemory && reinterpret_cast<uintptr_t>(data) % element == 0) {
          check(te_buffer_wrap(device, dtype, rank, shape.data(), data,
                               array.nbytes(), nullptr, nullptr,
                               &buffer->buffer),
                "input " + std::to_string(i));
        } else {
          check(te_buffer_create(device, dtype, rank, shape.data(),
                                 &buffer->buffer),
                "cannot allocate input " + std::to_string(i));
          check(te_buffer_write(buffer->buffer, data, array.nbytes()),
                "input " + std::to_string(i) + " (" + dtypeName + ")");
        }
      }
      handles.push_back(buffer->buffer);
      buffers.push_back(std::move(buffer));
    }
    {
      nb::gil_scoped_release release;
      check(te_kernel_launch(kernel, handles.data(), int(handles.size())),
            "launch of @" + entry);
      checkAs(Kind::Device, te_device_synchronize(device), "synchronize");
    }
    std::vector<NumpyArray> outputs;
    for (size_t i = numInputs; i < handles.size(); ++i) {
      te_buffer *buffer = handles[i];
      te_dtype dtype = te_buffer_dtype(buffer);
      std::vector<size_t> shape(te_buffer_dims(buffer),
                                te_buffer_dims(buffer) +
                                    te_buffer_rank(buffer));
      nb::dlpack::dtype type = dlpackType(dtype, true);
      if (void *host = te_buffer_host_pointer(buffer)) {
        // The array is the buffer the kernel wrote; it owns the buffer.
        te_buffer_retain(buffer);
        nb::capsule owner(buffer, [](void *p) noexcept {
          te_buffer_release(static_cast<te_buffer *>(p));
        });
        outputs.emplace_back(host, shape.size(), shape.data(), owner, nullptr,
                             type);
        continue;
      }
      size_t bytes = te_buffer_size_bytes(buffer);
      auto *copy = new char[bytes ? bytes : 1];
      nb::capsule owner(
          copy, [](void *p) noexcept { delete[] static_cast<char *>(p); });
      check(te_buffer_read(buffer, copy, bytes),
            "output " + std::to_string(i - numInputs));
      outputs.emplace_back(copy, shape.size(), shape.data(), owner, nullptr,
                           type);
    }
    return outputs;
  }

private:
  te_kernel *lookup(const std::string &entry) const {
    te_kernel *kernel = nullptr;
    check(te_module_get_kernel(module, entry.c_str(), &kernel), "kernel");
    return kernel;
  }

  te_module *module;
};

/// A compile-and-cache context.
class Jit {
public:
  explicit Jit(const std::optional<std::string> &compilerLibrary) {
    checkJit(te_jit_create(compilerLibrary ? compilerLibrary->c_str() : nullptr,
                           &jit));
  }
  ~Jit() { te_jit_release(jit); }
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  void loadPlugins(const std::string &specs) {
    te_status status;
    {
      nb::gil_scoped_release release;
      status = te_jit_load_plugins(jit, specs.c_str());
    }
    checkJit(status, Kind::Plugin);
  }

  /// The explain table as te_jit_explain returns it: a line per op, four
  /// tab-separated columns.
  std::string explain(const std::string &source, const std::string &sourceName,
                      const std::string &deviceName) {
    char *table = nullptr;
    te_status status;
    {
      nb::gil_scoped_release release;
      status = te_jit_explain(jit, deviceName.c_str(), source.data(),
                              source.size(), sourceName.c_str(), &table);
    }
    checkJit(status);
    std::string text = table;
    te_jit_free(table);
    return text;
  }

  /// (module, "hit (memory)" | "hit (disk)" | "miss", compile ms).
  std::tuple<std::unique_ptr<Module>, std::string, double>
  load(Device &device, const std::string &source, const std::string &name) {
    te_module *module = nullptr;
    te_cache_outcome outcome = TE_CACHE_MISS;
    double compileMs = 0;
    te_status status;
    {
      nb::gil_scoped_release release;
      status = te_jit_load(jit, device.get(), source.data(), source.size(),
                           name.c_str(), &module, &outcome, &compileMs);
    }
    checkJit(status);
    static const char *outcomes[] = {"hit (memory)", "hit (disk)", "miss"};
    return {std::make_unique<Module>(module), outcomes[outcome], compileMs};
  }

  /// te_jit_plugin_states's table.
  std::string pluginStates() {
    char *table = nullptr;
    te_status status;
    {
      nb::gil_scoped_release release;
      status = te_jit_plugin_states(jit, &table);
    }
    checkJit(status, Kind::Plugin);
    std::string text = table;
    te_jit_free(table);
    return text;
  }

  /// What te_jit_get_cache_info says, as a dict.
  nb::dict cacheInfo() {
    te_jit_cache_info info = {};
    info.struct_size = sizeof(info);
    te_status status;
    {
      // It waits for a compile in progress on another thread.
      nb::gil_scoped_release release;
      status = te_jit_get_cache_info(jit, &info);
    }
    checkJit(status);
    nb::dict result;
    result["memory_modules"] = info.memory_modules;
    result["disk_enabled"] = info.disk_enabled != 0;
    result["disk_directory"] = std::string(info.disk_directory);
    result["disk_entries"] = info.disk_entries;
    result["disk_bytes"] = info.disk_bytes;
    result["disk_max_bytes"] = info.disk_max_bytes;
    return result;
  }

  void clearCache(bool disk) {
    te_status status;
    {
      nb::gil_scoped_release release;
      status = te_jit_clear_cache(jit, disk ? 1 : 0);
    }
    checkJit(status);
  }

private:
  te_jit *jit = nullptr;
};

} // namespace

NB_MODULE(_core, m) {
  m.doc() = "te-mlir's runtime and JIT (C API bindings; see te_mlir).";
  m.attr("__version__") = TE_MLIR_VERSION;
  m.attr("build_id") = TE_MLIR_BUILD_ID;
  nb::register_exception_translator(
      [](const std::exception_ptr &pending, void *) {
        try {
          std::rethrow_exception(pending);
        } catch (const Error &error) {
          raise(error);
        }
      });

  m.def(
      "load_runtime_plugin",
      [](const std::string &path) {
        checkAs(Kind::Plugin, te_runtime_load_plugin(path.c_str()),
                "cannot load runtime plugin " + path);
      },
      nb::arg("path"),
      "Registers the devices of the runtime plugin at `path` (all or none).");

  m.def(
      "set_num_threads",
      [](int threads) {
        check(te_set_num_threads(threads), "cannot set the thread count");
      },
      nb::arg("threads"),
      "Sets the threads host kernels use from the next launch on; 0 "
      "restores the default (TE_NUM_THREADS, else the CPUs the process may "
      "use).");
  m.def("get_num_threads", &te_get_num_threads,
        "The threads host kernels use (at least 1).");

  m.def(
      "set_host_temporaries_limit",
      [](std::optional<size_t> bytes) {
        check(te_host_temporaries_set_limit(
                  bytes.value_or(std::numeric_limits<size_t>::max())),
              "cannot set the host temporaries' limit");
      },
      nb::arg("bytes").none(),
      "Sets the most idle bytes of host kernels' temporaries kept for later "
      "calls (0: none; None: the default, TE_HOST_TEMPORARIES_BYTES, else "
      "1 GiB); idle blocks beyond it are freed now.");
  m.def(
      "host_temporaries_info",
      []() {
        nb::dict info;
        info["limit"] = te_host_temporaries_limit();
        info["idle_bytes"] = te_host_temporaries_idle_bytes();
        return info;
      },
      "The host kernels' temporaries kept for later calls: {'limit': the "
      "most idle bytes kept, 'idle_bytes': those kept now}.");
  m.def("release_host_temporaries", &te_host_temporaries_release,
        "Frees the idle blocks kept for host kernels' temporaries.");

  nb::class_<Device>(m, "Device",
                     "An opened device instance: 'cpu', 'cuda', or a runtime "
                     "plugin's.")
      .def(nb::init<const std::string &, int>(), nb::arg("name") = "cpu",
           nb::arg("index") = 0,
           "Opens instance `index` of the device registered as `name`; "
           "raises DeviceError when there is none.")
      .def_prop_ro("name", &Device::name, "The device's registry name.")
      .def_prop_ro("index", &Device::index, "The instance's index.")
      .def("synchronize", &Device::synchronize,
           "Waits for everything launched on the device.")
      .def("__repr__",
           [](const Device &device) {
             return "<te_mlir.Device '" + device.name() + "' " +
                    std::to_string(device.index()) + ">";
           })
      .def("world", &Device::world,
           "(rank, size): this process's rank in the job the device's "
           "collectives run in (MPI's world on the cpu device; mpirun -np "
           "N python ...) and the job's size; (0, 1) outside a job.");

  nb::class_<Module>(m, "Module",
                     "A loaded kernel module (te_mlir.Module wraps it).")
      .def_prop_ro("kernels", &Module::kernels, "The entry points' names.")
      .def_prop_ro("device_name", &Module::deviceName,
                   "The device the module is loaded on.")
      .def("signature", &Module::signature, nb::arg("entry"),
           "[(is_output, dtype name, shape)] of `entry`'s arguments: the "
           "inputs, then the outputs.")
      .def("run", &Module::run, nb::arg("entry"), nb::arg("inputs"),
           "Runs `entry` on host arrays of the inputs' dtypes (or their raw "
           "bits) and shapes; returns the outputs as numpy arrays (bf16 and "
           "FP8 as raw bits), without copies where the device's memory is "
           "the host's.");

  nb::class_<Jit>(m, "Jit",
                  "Compiles, caches and loads te programs (te_mlir.Jit wraps "
                  "it).")
      .def(nb::init<const std::optional<std::string> &>(),
           nb::arg("compiler_library").none() = nb::none(),
           "`compiler_library`: libTECompiler.so, loaded on the first cache "
           "miss (None: TE_COMPILER_LIBRARY).")
      .def("load_plugins", &Jit::loadPlugins, nb::arg("specs"),
           "Loads compiler plugins (comma-separated paths or names); raises "
           "PluginError under NVTE_PLUGIN_STRICT=1.")
      .def("explain", &Jit::explain, nb::arg("source"), nb::arg("source_name"),
           nb::arg("device_name"),
           "The dispatch table: a line per op, four tab-separated columns.")
      .def("plugin_states", &Jit::pluginStates,
           "The listed plugins, a tab-separated line each: spec, source, "
           "state, name, version, library, failure, providers.")
      .def("cache_info", &Jit::cacheInfo,
           "The caches: memory_modules, disk_enabled, disk_directory, "
           "disk_entries, disk_bytes, disk_max_bytes.")
      .def("clear_cache", &Jit::clearCache, nb::arg("disk"),
           "Empties the memory cache and, with `disk`, the disk cache's "
           "entries.")
      .def("load", &Jit::load, nb::arg("device"), nb::arg("source"),
           nb::arg("source_name"),
           "(module, cache outcome, compile milliseconds) of `source` on "
           "`device`.");
}
