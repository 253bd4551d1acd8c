//===- CUDADevice.cpp - NVIDIA GPUs through the CUDA driver API -----------===//
//
// The built-in "cuda" device. Nothing CUDA is linked: the driver library
// (libcuda.so.1, or TE_CUDA_DRIVER) is opened with dlopen the first time the
// device is asked for its instances, and every entry point comes from
// cuGetProcAddress, so te-mlir builds and runs without CUDA, and a machine
// without a driver gets one clear error when it asks for the device.
//
// Each instance is one GPU's primary context, made current around every
// call. Streams are blocking streams, so copies on the default stream stay
// ordered after kernels on any stream. A kernel module is a cubin or fatbin
// (what cuModuleLoadData takes) that defines the NUL-terminated global
// `te_kernel_manifest`; a kernel launches with the geometry of its
// te_launch_config, one pointer per buffer argument.
//
//===----------------------------------------------------------------------===//

#include "CUDADevice.h"
#include "CUBLASLt.h"
#include "CUDNN.h"
#include "Error.h"
#include "NCCL.h"

#include "te/Support/FileTrust.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

// The driver API's types, as far as this device needs them (cuda.h is not
// included: it is not there without the toolkit).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;
constexpr CUresult kSuccess = 0;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNoDevice = 100;
constexpr int kComputeCapabilityMajor = 75;
constexpr int kComputeCapabilityMinor = 76;
constexpr CUresult kNotReady = 600;
constexpr int kMemoryTypeDevice = 2;
/// CUDA_MEMCPY2D (version 2), for the collectives' 2-D copies.
struct Memcpy2D {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
};
/// The driver API version the entry points are asked for (CUDA 12.0).
constexpr int kDriverAPIVersion = 12000;

/// The entry points, resolved once per process.
struct Driver {
  std::string unavailable; // why there is no usable driver ("" if there is)
  int deviceCount = 0;

  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int *) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(Handle *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxPushCurrent)(Handle) = nullptr;
  CUresult (*cuCtxPopCurrent)(Handle *) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuStreamCreate)(Handle *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(Handle) = nullptr;
  CUresult (*cuStreamSynchronize)(Handle) = nullptr;
  CUresult (*cuStreamWaitEvent)(Handle, Handle, unsigned) = nullptr;
  CUresult (*cuEventCreate)(Handle *, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(Handle) = nullptr;
  CUresult (*cuEventRecord)(Handle, Handle) = nullptr;
  CUresult (*cuEventSynchronize)(Handle) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, Handle, Handle) = nullptr;
  CUresult (*cuModuleLoadData)(Handle *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(Handle) = nullptr;
  CUresult (*cuModuleGetFunction)(Handle *, Handle, const char *) = nullptr;
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, Handle,
                                const char *) = nullptr;
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, Handle, void **,
                             void **) = nullptr;
  // Only the collectives use these: a driver without them runs the rest.
  CUresult (*cuMemcpy2DAsync)(const Memcpy2D *, Handle) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t,
                              Handle) = nullptr;
  CUresult (*cuStreamQuery)(Handle) = nullptr;

  /// "CUDA_ERROR_...: text" for `result`.
  std::string describe(CUresult result) const {
    const char *text = nullptr;
    if (cuGetErrorString && cuGetErrorString(result, &text) == kSuccess && text)
      return std::string(text) + " (CUresult " + std::to_string(result) + ")";
    return "CUresult " + std::to_string(result);
  }
};

using GetProcAddress = CUresult (*)(const char *, void **, int, uint64_t,
                                    int *);

/// Loads the driver and resolves every entry point; on any failure
/// `unavailable` says why, in words a user can act on.
void loadDriver(Driver &driver) {
  const char *configured = std::getenv("TE_CUDA_DRIVER");
  std::string path =
      configured && *configured ? configured : std::string("libcuda.so.1");
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    driver.unavailable =
        "no CUDA driver found (" +
        (why ? std::string(why) : path + ": cannot be opened") +
        "); install the NVIDIA driver, or set "
        "TE_CUDA_DRIVER to its libcuda.so.1";
    return;
  }
  auto getProcAddress =
      reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (!getProcAddress) {
    driver.unavailable = "the CUDA driver " + path +
                         " is older than CUDA 12 (it has no "
                         "cuGetProcAddress_v2); update the NVIDIA driver";
    return;
  }
  std::string missing;
  auto resolve = [&](const char *name, auto &entry) {
    void *function = nullptr;
    int found = 0;
    if (getProcAddress(name, &function, kDriverAPIVersion, 0, &found) !=
            kSuccess ||
        !function) {
      missing += missing.empty() ? "" : ", ";
      missing += name;
      return;
    }
    entry =
        reinterpret_cast<std::remove_reference_t<decltype(entry)>>(function);
  };
  resolve("cuInit", driver.cuInit);
  resolve("cuDriverGetVersion", driver.cuDriverGetVersion);
  resolve("cuGetErrorString", driver.cuGetErrorString);
  resolve("cuDeviceGetCount", driver.cuDeviceGetCount);
  resolve("cuDeviceGet", driver.cuDeviceGet);
  resolve("cuDeviceGetAttribute", driver.cuDeviceGetAttribute);
  resolve("cuDevicePrimaryCtxRetain", driver.cuDevicePrimaryCtxRetain);
  resolve("cuDevicePrimaryCtxRelease", driver.cuDevicePrimaryCtxRelease);
  resolve("cuCtxPushCurrent", driver.cuCtxPushCurrent);
  resolve("cuCtxPopCurrent", driver.cuCtxPopCurrent);
  resolve("cuCtxSynchronize", driver.cuCtxSynchronize);
  resolve("cuMemAlloc", driver.cuMemAlloc);
  resolve("cuMemFree", driver.cuMemFree);
  resolve("cuMemcpyHtoD", driver.cuMemcpyHtoD);
  resolve("cuMemcpyDtoH", driver.cuMemcpyDtoH);
  resolve("cuMemcpyDtoD", driver.cuMemcpyDtoD);
  resolve("cuStreamCreate", driver.cuStreamCreate);
  resolve("cuStreamDestroy", driver.cuStreamDestroy);
  resolve("cuStreamSynchronize", driver.cuStreamSynchronize);
  resolve("cuStreamWaitEvent", driver.cuStreamWaitEvent);
  resolve("cuEventCreate", driver.cuEventCreate);
  resolve("cuEventDestroy", driver.cuEventDestroy);
  resolve("cuEventRecord", driver.cuEventRecord);
  resolve("cuEventSynchronize", driver.cuEventSynchronize);
  resolve("cuEventElapsedTime", driver.cuEventElapsedTime);
  resolve("cuModuleLoadData", driver.cuModuleLoadData);
  resolve("cuModuleUnload", driver.cuModuleUnload);
  resolve("cuModuleGetFunction", driver.cuModuleGetFunction);
  resolve("cuModuleGetGlobal", driver.cuModuleGetGlobal);
  resolve("cuLaunchKernel", driver.cuLaunchKernel);
  {
    std::string required = missing;
    resolve("cuMemcpy2DAsync", driver.cuMemcpy2DAsync);
    resolve("cuMemsetD8Async", driver.cuMemsetD8Async);
    resolve("cuStreamQuery", driver.cuStreamQuery);
    missing = required;
  }
  if (!missing.empty()) {
    driver.unavailable = "the CUDA driver " + path +
                         " lacks entry points te-mlir needs (" + missing +
                         "); update the NVIDIA driver";
    return;
  }
  if (CUresult result = driver.cuInit(0); result != kSuccess) {
    driver.unavailable =
        result == kNoDevice
            ? "the CUDA driver found no GPU (cuInit: " +
                  driver.describe(result) + ")"
            : "the CUDA driver could not be initialized (cuInit: " +
                  driver.describe(result) +
                  "); check the driver installation and nvidia-smi";
    return;
  }
  if (CUresult result = driver.cuDeviceGetCount(&driver.deviceCount);
      result != kSuccess) {
    driver.unavailable = "cuDeviceGetCount failed: " + driver.describe(result);
    driver.deviceCount = 0;
    return;
  }
  if (driver.deviceCount <= 0)
    driver.unavailable = "the CUDA driver reports no GPU";
}

Driver &getDriver() {
  // Leaked like the registry: devices may be released from static
  // destructors, and the driver library is never closed.
  static Driver *driver = [] {
    auto *loaded = new Driver();
    loadDriver(*loaded);
    return loaded;
  }();
  return *driver;
}

/// One GPU, opened.
struct Instance {
  CUdevice device = 0;
  Handle context = nullptr;
  /// "sm_90a"-style arch of the GPU ("sm_<major><minor>").
  std::string arch;
};

/// Makes the instance's context current for its lifetime.
class ContextScope {
public:
  explicit ContextScope(const Instance &instance) {
    pushed = getDriver().cuCtxPushCurrent(instance.context) == kSuccess;
  }
  ~ContextScope() {
    Handle popped;
    if (pushed)
      getDriver().cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  bool pushed;
};

Instance &self(void *instance) { return *static_cast<Instance *>(instance); }

/// TE_OK, or the status for `result` with the driver's words as the
/// runtime's detail.
te_status check(CUresult result, const char *call) {
  if (result == kSuccess)
    return TE_OK;
  te::runtime::setDeviceDetail("%s: %s", call,
                               getDriver().describe(result).c_str());
  return result == kOutOfMemory ? TE_ERROR_OUT_OF_MEMORY : TE_ERROR_INTERNAL;
}

/// Runs `call` with the instance's context current.
template <typename Call>
te_status inContext(void *instance, const char *name, Call &&call) {
  ContextScope scope(self(instance));
  return check(call(), name);
}

CUdeviceptr address(const void *pointer) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
}

int deviceCount(void *) {
  Driver &driver = getDriver();
  if (!driver.unavailable.empty())
    te::runtime::setDeviceDetail("%s", driver.unavailable.c_str());
  return driver.deviceCount;
}

te_status open(void *, int index, void **out) {
  Driver &driver = getDriver();
  auto instance = std::make_unique<Instance>();
  if (te_status status =
          check(driver.cuDeviceGet(&instance->device, index), "cuDeviceGet"))
    return status;
  int major = 0, minor = 0;
  if (te_status status =
          check(driver.cuDeviceGetAttribute(&major, kComputeCapabilityMajor,
                                            instance->device),
                "cuDeviceGetAttribute"))
    return status;
  if (te_status status =
          check(driver.cuDeviceGetAttribute(&minor, kComputeCapabilityMinor,
                                            instance->device),
                "cuDeviceGetAttribute"))
    return status;
  // Kernels use the arch-specific features where there are some (wgmma).
  instance->arch = "sm_" + std::to_string(major) + std::to_string(minor) +
                   (major == 9 ? "a" : "");
  if (te_status status = check(
          driver.cuDevicePrimaryCtxRetain(&instance->context, instance->device),
          "cuDevicePrimaryCtxRetain"))
    return status;
  *out = instance.release();
  return TE_OK;
}

void close(void *instance) {
  getDriver().cuDevicePrimaryCtxRelease(self(instance).device);
  delete &self(instance);
}

te_status allocate(void *instance, size_t size, size_t alignment, void **ptr) {
  // cuMemAlloc aligns to at least 256 bytes.
  if (alignment > 256) {
    te::runtime::setDeviceDetail("alignment %zu is more than the 256 bytes "
                                 "CUDA allocations guarantee",
                                 alignment);
    return TE_ERROR_UNSUPPORTED;
  }
  CUdeviceptr pointer = 0;
  te_status status = inContext(instance, "cuMemAlloc", [&] {
    return getDriver().cuMemAlloc(&pointer, size);
  });
  *ptr = reinterpret_cast<void *>(static_cast<uintptr_t>(pointer));
  return status;
}

void free(void *instance, void *ptr) {
  ContextScope scope(self(instance));
  getDriver().cuMemFree(address(ptr));
}

te_status copyToDevice(void *instance, void *dst, const void *src,
                       size_t bytes) {
  return inContext(instance, "cuMemcpyHtoD", [&] {
    return getDriver().cuMemcpyHtoD(address(dst), src, bytes);
  });
}

te_status copyToHost(void *instance, void *dst, const void *src, size_t bytes) {
  return inContext(instance, "cuMemcpyDtoH", [&] {
    return getDriver().cuMemcpyDtoH(dst, address(src), bytes);
  });
}

te_status copyDeviceToDevice(void *instance, void *dst, const void *src,
                             size_t bytes) {
  return inContext(instance, "cuMemcpyDtoD", [&] {
    return getDriver().cuMemcpyDtoD(address(dst), address(src), bytes);
  });
}

/// A loaded module and its manifest, read once from the device.
struct Module {
  Handle handle = nullptr;
  std::string manifest;
};

te_status loadModule(void *instance, const char *path, const void *image,
                     size_t imageSize, void **module, char *error,
                     size_t errorSize) {
  auto reject = [&](te_status status, const std::string &why) {
    std::snprintf(error, errorSize, "%s", why.c_str());
    return status;
  };
  std::string bytes;
  if (path) {
    // A module is code run on the caller's behalf: read through the checked
    // descriptor as host libraries are loaded (te/Support/FileTrust.h).
    te::support::FileProblem problem;
    std::string why;
    te::support::CheckedFile file = te::support::openChecked(
        path, te::support::FileRules::library(), problem, why);
    if (!file)
      return reject(TE_ERROR_LOAD_FAILED,
                    problem == te::support::FileProblem::Untrusted
                        ? "refusing to load it: it " + why +
                              "; a kernel module is code run with your "
                              "rights, so only you or root may be able to "
                              "write it"
                    : problem == te::support::FileProblem::Missing
                        ? "cannot open it: No such file or directory"
                        : "it " + why);
    if (!file.readAll(bytes, why))
      return reject(TE_ERROR_LOAD_FAILED, "it " + why);
    image = bytes.data();
    imageSize = bytes.size();
  }
  if (imageSize == 0)
    return reject(TE_ERROR_LOAD_FAILED, "the module image is empty");
  Driver &driver = getDriver();
  ContextScope scope(self(instance));
  auto loaded = std::make_unique<Module>();
  if (CUresult result = driver.cuModuleLoadData(&loaded->handle, image);
      result != kSuccess)
    return reject(TE_ERROR_LOAD_FAILED,
                  "cuModuleLoadData: " + driver.describe(result) +
                      " (a cuda module is a cubin or fatbin for this GPU, " +
                      self(instance).arch + ")");
  CUdeviceptr text = 0;
  size_t size = 0;
  if (driver.cuModuleGetGlobal(&text, &size, loaded->handle,
                               "te_kernel_manifest") != kSuccess ||
      size == 0) {
    driver.cuModuleUnload(loaded->handle);
    return reject(TE_ERROR_LOAD_FAILED,
                  "the module defines no te_kernel_manifest global; it was "
                  "not built by te-mlir's cuda target");
  }
  loaded->manifest.resize(size);
  if (CUresult result =
          driver.cuMemcpyDtoH(loaded->manifest.data(), text, size);
      result != kSuccess) {
    driver.cuModuleUnload(loaded->handle);
    return reject(TE_ERROR_LOAD_FAILED,
                  "reading te_kernel_manifest: " + driver.describe(result));
  }
  // The manifest is NUL-terminated in the module; keep exactly its text.
  loaded->manifest.resize(loaded->manifest.find('\0') == std::string::npos
                              ? size
                              : loaded->manifest.find('\0'));
  *module = loaded.release();
  return TE_OK;
}

void unloadModule(void *instance, void *module) {
  ContextScope scope(self(instance));
  getDriver().cuModuleUnload(static_cast<Module *>(module)->handle);
  delete static_cast<Module *>(module);
}

te_status getManifest(void *, void *module, const char **text) {
  *text = static_cast<Module *>(module)->manifest.c_str();
  return TE_OK;
}

te_status getFunction(void *instance, void *module, const char *symbol,
                      void **function) {
  ContextScope scope(self(instance));
  CUresult result = getDriver().cuModuleGetFunction(
      function, static_cast<Module *>(module)->handle, symbol);
  return result == kSuccess ? TE_OK : TE_ERROR_NOT_FOUND;
}

te_status launch(void *instance, void *function, void **args, int nargs,
                 const void *config) {
  const auto *launch = static_cast<const te_launch_config *>(config);
  if (!launch || !launch->grid[0] || !launch->block[0]) {
    te::runtime::setDeviceDetail(
        "the kernel has no launch geometry; its module's manifest must give "
        "one (rebuild it with te-mlir's cuda target)");
    return TE_ERROR_UNSUPPORTED;
  }
  // cuLaunchKernel takes a pointer to each argument's value.
  std::vector<void *> params(nargs);
  for (int i = 0; i < nargs; ++i)
    params[i] = &args[i];
  auto dim = [](unsigned value) { return value ? value : 1u; };
  return inContext(instance, "cuLaunchKernel", [&] {
    return getDriver().cuLaunchKernel(
        function, dim(launch->grid[0]), dim(launch->grid[1]),
        dim(launch->grid[2]), dim(launch->block[0]), dim(launch->block[1]),
        dim(launch->block[2]),
        static_cast<unsigned>(launch->shared_memory_bytes), launch->stream,
        params.data(), nullptr);
  });
}

te_status synchronize(void *instance) {
  return inContext(instance, "cuCtxSynchronize",
                   [] { return getDriver().cuCtxSynchronize(); });
}

te_status streamCreate(void *instance, void **stream) {
  // Blocking streams: the default stream's copies stay ordered after them.
  return inContext(instance, "cuStreamCreate",
                   [&] { return getDriver().cuStreamCreate(stream, 0); });
}

void streamDestroy(void *instance, void *stream) {
  ContextScope scope(self(instance));
  getDriver().cuStreamDestroy(stream);
}

te_status streamSynchronize(void *instance, void *stream) {
  return inContext(instance, "cuStreamSynchronize",
                   [&] { return getDriver().cuStreamSynchronize(stream); });
}

te_status eventCreate(void *instance, void **event) {
  return inContext(instance, "cuEventCreate",
                   [&] { return getDriver().cuEventCreate(event, 0); });
}

void eventDestroy(void *instance, void *event) {
  ContextScope scope(self(instance));
  getDriver().cuEventDestroy(event);
}

te_status eventRecord(void *instance, void *event, void *stream) {
  return inContext(instance, "cuEventRecord",
                   [&] { return getDriver().cuEventRecord(event, stream); });
}

te_status streamWaitEvent(void *instance, void *stream, void *event) {
  return inContext(instance, "cuStreamWaitEvent", [&] {
    return getDriver().cuStreamWaitEvent(stream, event, 0);
  });
}

te_status eventSynchronize(void *instance, void *event) {
  return inContext(instance, "cuEventSynchronize",
                   [&] { return getDriver().cuEventSynchronize(event); });
}

te_status eventElapsed(void *instance, void *start, void *end,
                       float *milliseconds) {
  return inContext(instance, "cuEventElapsedTime", [&] {
    return getDriver().cuEventElapsedTime(milliseconds, start, end);
  });
}

/// What launches on one stream keep: the libraries' state (handles, plans,
/// workspace), made at the first library call that needs it.
struct ExecContext {
  void *instance = nullptr;
  std::mutex mutex;
  te::runtime::cublaslt::Context *blas = nullptr;
  te::runtime::cudnn::Context *dnn = nullptr;
};

te_status execContextCreate(void *instance, void *, void **context) {
  auto *exec = new ExecContext();
  exec->instance = instance;
  *context = exec;
  return TE_OK;
}

void execContextDestroy(void *instance, void *context) {
  auto *exec = static_cast<ExecContext *>(context);
  {
    ContextScope scope(self(instance));
    // The libraries' workspaces and handles may still be used by work
    // enqueued on the stream (the default stream's context goes with the
    // device, without a synchronization of its own).
    if (exec->blas || exec->dnn)
      getDriver().cuCtxSynchronize();
    te::runtime::cublaslt::destroyContext(exec->blas);
    te::runtime::cudnn::destroyContext(exec->dnn);
  }
  delete exec;
}

te_status libraryCall(void *instance, const char *function,
                      const char *parameters, void **args, const size_t *sizes,
                      int nargs, const te_launch_config *config) {
  auto *exec =
      config ? static_cast<ExecContext *>(config->exec_context) : nullptr;
  if (!exec) {
    te::runtime::setDeviceDetail("%s: no execution context", function);
    return TE_ERROR_INTERNAL;
  }
  bool matmul = std::strcmp(function, "cublaslt.matmul") == 0;
  bool backward = std::strcmp(function, "cudnn.sdpa_backward") == 0;
  if (!matmul && !backward &&
      std::strcmp(function, "cudnn.sdpa_forward") != 0) {
    te::runtime::setDeviceDetail("the cuda device has no library function "
                                 "'%s'; rebuild the module with this "
                                 "te-mlir",
                                 function);
    return TE_ERROR_UNSUPPORTED;
  }
  ContextScope scope(self(instance));
  te::runtime::DeviceMemory memory = {
      instance,
      [](void *owner, size_t bytes, void **pointer) {
        return allocate(owner, bytes, 256, pointer);
      },
      [](void *owner, void *pointer) { free(owner, pointer); }};
  {
    std::lock_guard<std::mutex> lock(exec->mutex);
    if (matmul && !exec->blas)
      exec->blas = te::runtime::cublaslt::createContext(memory);
    if (!matmul && !exec->dnn)
      exec->dnn = te::runtime::cudnn::createContext(memory);
  }
  if (matmul)
    return te::runtime::cublaslt::runMatmul(*exec->blas, parameters, args,
                                            sizes, nargs, config->stream);
  return te::runtime::cudnn::runSdpa(*exec->dnn, backward, parameters, args,
                                     sizes, nargs, config->stream);
}

//===----------------------------------------------------------------------===//
// Collectives: NCCL (NCCL.h)
//===----------------------------------------------------------------------===//

te_status world(void *, int *rank, int *size) {
  te::runtime::nccl::World world = te::runtime::nccl::findWorld();
  if (!world.error.empty()) {
    te::runtime::setDeviceDetail("%s", world.error.c_str());
    return TE_ERROR_INVALID_ARGUMENT;
  }
  *rank = world.rank;
  *size = world.size;
  return TE_OK;
}

/// The driver calls of the collectives, on `owner` (an Instance) with its
/// context current (the entries below make it so).
te::runtime::nccl::Gpu makeGpu(void *instance) {
  te::runtime::nccl::Gpu gpu = {};
  gpu.owner = instance;
  gpu.allocate = [](void *owner, size_t bytes, void **pointer) {
    return allocate(owner, bytes, 256, pointer);
  };
  gpu.free = [](void *owner, void *pointer) { free(owner, pointer); };
  gpu.copy2D = [](void *, void *dst, size_t dstPitch, const void *src,
                  size_t srcPitch, size_t width, size_t height, void *stream) {
    Driver &driver = getDriver();
    if (!driver.cuMemcpy2DAsync)
      return check(kNotReady, "cuMemcpy2DAsync (missing from the driver)");
    Memcpy2D copy = {};
    copy.srcMemoryType = kMemoryTypeDevice;
    copy.srcDevice = address(src);
    copy.srcPitch = srcPitch;
    copy.dstMemoryType = kMemoryTypeDevice;
    copy.dstDevice = address(dst);
    copy.dstPitch = dstPitch;
    copy.WidthInBytes = width;
    copy.Height = height;
    return check(driver.cuMemcpy2DAsync(&copy, stream), "cuMemcpy2DAsync");
  };
  gpu.zero = [](void *, void *pointer, size_t bytes, void *stream) {
    Driver &driver = getDriver();
    if (!driver.cuMemsetD8Async)
      return check(kNotReady, "cuMemsetD8Async (missing from the driver)");
    return check(driver.cuMemsetD8Async(address(pointer), 0, bytes, stream),
                 "cuMemsetD8Async");
  };
  gpu.write = [](void *, void *device, const void *host, size_t bytes) {
    return check(getDriver().cuMemcpyHtoD(address(device), host, bytes),
                 "cuMemcpyHtoD");
  };
  gpu.read = [](void *, void *host, const void *device, size_t bytes) {
    return check(getDriver().cuMemcpyDtoH(host, address(device), bytes),
                 "cuMemcpyDtoH");
  };
  gpu.query = [](void *, void *stream) {
    Driver &driver = getDriver();
    if (!driver.cuStreamQuery)
      return -1;
    CUresult result = driver.cuStreamQuery(stream);
    return result == kSuccess ? 1 : result == kNotReady ? 0 : -1;
  };
  return gpu;
}

te_status channelCreate(void *instance, const te_channel_spec *spec,
                        void **channel) {
  ContextScope scope(self(instance));
  return te::runtime::nccl::createChannel(makeGpu(instance), spec, channel);
}

void channelDestroy(void *instance, void *channel) {
  ContextScope scope(self(instance));
  te::runtime::nccl::destroyChannel(channel);
}

te_status collective(void *instance, void *channel,
                     const te_collective_desc *desc, const void *input,
                     void *output, const te_launch_config *config) {
  ContextScope scope(self(instance));
  return te::runtime::nccl::runCollective(channel, desc, input, output,
                                          config ? config->stream : nullptr);
}

} // namespace

const te_device_ops &te::runtime::getCUDADeviceOps() {
  static const te_device_ops ops = [] {
    te_device_ops table = {};
    table.struct_size = sizeof(te_device_ops);
    table.name = "cuda";
    table.device_count = deviceCount;
    table.open = open;
    table.close = close;
    table.allocate = allocate;
    table.free = free;
    table.copy_to_device = copyToDevice;
    table.copy_to_host = copyToHost;
    table.copy_device_to_device = copyDeviceToDevice;
    table.load_module = loadModule;
    table.unload_module = unloadModule;
    table.get_manifest = getManifest;
    table.get_function = getFunction;
    table.launch = launch;
    table.synchronize = synchronize;
    table.stream_create = streamCreate;
    table.stream_destroy = streamDestroy;
    table.stream_synchronize = streamSynchronize;
    table.event_create = eventCreate;
    table.event_destroy = eventDestroy;
    table.event_record = eventRecord;
    table.stream_wait_event = streamWaitEvent;
    table.event_synchronize = eventSynchronize;
    table.event_elapsed_ms = eventElapsed;
    table.exec_context_create = execContextCreate;
    table.exec_context_destroy = execContextDestroy;
    table.target_arch = [](void *instance) {
      return self(instance).arch.c_str();
    };
    table.library_call = libraryCall;
    table.world = world;
    table.channel_create = channelCreate;
    table.channel_destroy = channelDestroy;
    table.collective = collective;
    return table;
  }();
  return ops;
}
