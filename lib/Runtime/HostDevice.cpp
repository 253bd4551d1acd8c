//===- HostDevice.cpp - The host CPU as a runtime device ------------------===//
//
// The host implements te_device_ops exactly as an out-of-tree plugin would:
// memory comes from the allocator of the host kernels' temporaries, kernel
// modules are shared libraries opened with dlopen, and a launch is a direct
// call. Nothing here is known to the
// generic runtime beyond the table returned by getHostDeviceOps.
//
//===----------------------------------------------------------------------===//

#include "HostDevice.h"
#include "Error.h"
#include "MPILibrary.h"

#include "te/ABI/HostFeatures.h"
#include "te/ABI/HostTiles.h"
#include "te/Runtime/Threads.h"
#include "te/Support/FileTrust.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

/// The signature te-mlir's JIT gives every host kernel.
using HostKernel = void (*)(void **args);
using ManifestFunction = const char *(*)();
/// Sets the threads of the library's parallel loops (te-mlir kernels built
/// since the cpu target's abi=2; optional for other libraries).
using SetThreadsFunction = void (*)(int);
/// Returns and clears the calling thread's record of the first allocation
/// of its last launch that failed: the site ("{@k}" or a source location)
/// and, in `bytes`, its size (0: none failed). In te-mlir kernels since the
/// cpu target's abi=3; optional for other libraries.
using TakeAllocFailureFunction = const char *(*)(uint64_t *bytes);

constexpr const char *kManifestSymbol = "te_kernel_manifest";
constexpr const char *kSetThreadsSymbol = "te_kernel_set_num_threads";
constexpr const char *kTakeAllocFailureSymbol = "te_kernel_take_alloc_failure";
/// Gives the library the allocator of its temporaries
/// (te/Runtime/HostTemporaries.h). In te-mlir kernels since the cpu
/// target's abi=4; optional for other libraries.
using SetAllocatorFunction = void (*)(void *(*)(size_t, size_t),
                                      void (*)(void *));
constexpr const char *kSetAllocatorSymbol = "te_kernel_set_allocator";

/// A loaded library: the dlopen handle and its entry points, each handed
/// out once (get_function's handle is the HostFunction's address).
struct HostFunction {
  HostKernel entry;
  SetThreadsFunction setThreads;
  TakeAllocFailureFunction takeAllocFailure;
};

struct HostModule {
  /// Loaded from a descriptor (te/Support/FileTrust.h).
  te::support::LoadedLibrary library;
  void *handle = nullptr;
  SetThreadsFunction setThreads = nullptr;
  TakeAllocFailureFunction takeAllocFailure = nullptr;
  std::mutex mutex;
  std::map<std::string, HostFunction> functions;
};

/// Buffers come from the allocator of the host kernels' temporaries
/// (HostTemporaries.cpp): blocks of 256 KiB and more are kept when freed
/// and reused, and those of 2 MiB and more start on a huge page and ask for
/// huge pages. A fresh mapping costs a page fault and a cleared page on
/// first write, and the C library maps and unmaps each buffer of this size
/// anew: a 1024 x 32000 f32 cross-entropy gradient's 128 MiB take longer
/// to clear than the kernel takes to write them.
te_status allocate(void *, size_t size, size_t alignment, void **ptr) {
  // The runtime passes a power of two (te_device_ops::allocate).
  *ptr = te::runtime::allocateHostTemporary(
      size, std::max(alignment, sizeof(void *)));
  return *ptr ? TE_OK : TE_ERROR_OUT_OF_MEMORY;
}

void deallocate(void *, void *ptr) { te::runtime::releaseHostTemporary(ptr); }

te_status copy(void *, void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return TE_OK;
}

void *hostPointer(void *, void *devicePtr) { return devicePtr; }

void setError(char *error, size_t errorSize, const char *text) {
  if (errorSize > 0)
    std::snprintf(error, errorSize, "%s", text ? text : "unknown error");
}

/// Loads from memory through an anonymous file, because dlopen only reads
/// files; the file is te-mlir's own, so nothing is checked.
bool openImage(const void *image, size_t size,
               te::support::LoadedLibrary &library, char *error,
               size_t errorSize) {
  int fd = memfd_create("te-kernel-module", MFD_CLOEXEC);
  if (fd < 0) {
    setError(error, errorSize, std::strerror(errno));
    return false;
  }
  const char *bytes = static_cast<const char *>(image);
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, bytes + written, size - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      setError(error, errorSize, std::strerror(errno));
      close(fd);
      return false;
    }
    written += static_cast<size_t>(n);
  }
  std::string why;
  if (!te::support::loadLibraryFromDescriptor(
          fd, "the kernel image", RTLD_NOW | RTLD_LOCAL, library, why)) {
    setError(error, errorSize, why.c_str());
    return false;
  }
  return true;
}

/// Loads the kernel library at `path` through te/Support/FileTrust.h: a
/// kernel module is code run with the caller's rights, so it is opened
/// once, checked like a plugin (a regular file of this user or root that
/// nobody else can write, in a directory nobody else can change) and the
/// file checked is what loads.
bool openFile(const char *path, te::support::LoadedLibrary &library,
              char *error, size_t errorSize) {
  te::support::FileProblem problem;
  std::string why;
  if (te::support::loadLibrary(path, te::support::FileRules::library(),
                               RTLD_NOW | RTLD_LOCAL, library, problem, why))
    return true;
  std::string message;
  switch (problem) {
  case te::support::FileProblem::LoadFailed:
    message = why;
    break;
  case te::support::FileProblem::Untrusted:
    message = "refusing to load it: it " + why +
              "; a kernel module is code run with your rights, so only you "
              "or root may be able to write it";
    break;
  case te::support::FileProblem::NotRegular:
  case te::support::FileProblem::SymbolicLink:
    message = "refusing to load it: it " + why;
    break;
  case te::support::FileProblem::Missing:
    message = "cannot open it: No such file or directory";
    break;
  default:
    message = "it " + why;
    break;
  }
  setError(error, errorSize, message.c_str());
  return false;
}

void *findOwnFunction(void *module, const char *symbol);

/// Whether this process can run the code of `library`: the features its
/// te_kernel_cpu_features names (te/ABI/HostFeatures.h; libraries without
/// it state nothing) are this processor's, and AMX tiles the OS granted.
/// A library compiled for another processor would stop at an illegal
/// instruction instead.
bool checkCPUFeatures(const te::support::LoadedLibrary &library, char *error,
                      size_t errorSize) {
  auto features = reinterpret_cast<ManifestFunction>(
      findOwnFunction(library.handle, te::abi::kCPUFeaturesSymbol));
  const char *list = features ? features() : nullptr;
  if (!list)
    return true;
  std::vector<std::string> missing = te::abi::findUnusableCPUFeatures(list);
  if (missing.empty())
    return true;
  std::string message = "it was compiled for processor features this "
                        "process cannot use, so its code would stop at an "
                        "illegal instruction: ";
  bool tiles = false, unknown = false;
  for (size_t i = 0; i < missing.size(); ++i) {
    message += (i ? ", " : "") + missing[i];
    tiles |= missing[i].rfind("amx-", 0) == 0;
    unknown |= !te::abi::isCheckableCPUFeature(missing[i]);
  }
  const std::optional<std::string> &tileRefusal =
      te::abi::requestHostTilePermission();
  if (tiles && tileRefusal)
    message += " (AMX tiles: " + *tileRefusal + ")";
  if (unknown)
    message += " (a name this runtime does not know is a feature of a newer "
               "te-mlir's libraries: use the runtime that compiled it)";
  message += "; compile it on this machine (unset TE_CPU_ARCH; TE_CPU_AMX=off "
             "leaves the tiles out)";
  setError(error, errorSize, message.c_str());
  return false;
}

te_status loadModule(void *, const char *path, const void *image,
                     size_t imageSize, void **module, char *error,
                     size_t errorSize) {
  // Kernels compiled for AMX tiles need the OS's permission before their
  // first tile instruction: asked once, before any module's code runs.
  // Where it is refused, the compiler's host target has no tiles either
  // (te/ABI/HostTiles.h), so kernels compiled here do not use them.
  (void)te::abi::requestHostTilePermission();
  te::support::LoadedLibrary library;
  try {
    bool loaded;
    if (image) {
      loaded = openImage(image, imageSize, library, error, errorSize);
    } else {
      // Without a '/', dlopen would search the library path instead of
      // opening the file the caller named.
      std::string file =
          std::strchr(path, '/') ? path : "./" + std::string(path);
      loaded = openFile(file.c_str(), library, error, errorSize);
    }
    if (!loaded)
      return TE_ERROR_LOAD_FAILED;
    if (!checkCPUFeatures(library, error, errorSize)) {
      te::support::unloadLibrary(library);
      return TE_ERROR_LOAD_FAILED;
    }
  } catch (const std::bad_alloc &) {
    te::support::unloadLibrary(library);
    setError(error, errorSize, "out of host memory");
    return TE_ERROR_OUT_OF_MEMORY;
  }
  auto *loaded = new (std::nothrow) HostModule;
  if (!loaded) {
    te::support::unloadLibrary(library);
    setError(error, errorSize, "out of host memory");
    return TE_ERROR_OUT_OF_MEMORY;
  }
  // Before any launch: every temporary a launch frees is then the
  // runtime's.
  if (auto setAllocator = reinterpret_cast<SetAllocatorFunction>(
          findOwnFunction(library.handle, kSetAllocatorSymbol)))
    setAllocator(te::runtime::allocateHostTemporary,
                 te::runtime::releaseHostTemporary);
  loaded->handle = library.handle;
  loaded->library = std::move(library);
  loaded->setThreads = reinterpret_cast<SetThreadsFunction>(
      findOwnFunction(loaded->handle, kSetThreadsSymbol));
  loaded->takeAllocFailure = reinterpret_cast<TakeAllocFailureFunction>(
      findOwnFunction(loaded->handle, kTakeAllocFailureSymbol));
  *module = loaded;
  return TE_OK;
}

void unloadModule(void *, void *module) {
  auto *loaded = static_cast<HostModule *>(module);
  te::support::unloadLibrary(loaded->library);
  delete loaded;
}

/// Finds a function the library itself defines. dlsym alone would also find
/// symbols of its dependencies (a manifest naming "free" would resolve to
/// libc) and data objects.
void *findOwnFunction(void *module, const char *symbol) {
  void *address = dlsym(module, symbol);
  if (!address)
    return nullptr;
  struct link_map *moduleMap = nullptr;
  if (dlinfo(module, RTLD_DI_LINKMAP, &moduleMap) != 0)
    return nullptr;
  Dl_info info;
  void *definingMap = nullptr;
  if (!dladdr1(address, &info, &definingMap, RTLD_DL_LINKMAP) ||
      definingMap != moduleMap)
    return nullptr;
  void *symbolEntry = nullptr;
  if (!dladdr1(address, &info, &symbolEntry, RTLD_DL_SYMENT) || !symbolEntry)
    return nullptr;
  // The type bits are the same for ELF32 and ELF64.
  unsigned type =
      ELF64_ST_TYPE(static_cast<const ElfW(Sym) *>(symbolEntry)->st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC ? address : nullptr;
}

te_status getFunction(void *, void *module, const char *symbol,
                      void **function) {
  auto *loaded = static_cast<HostModule *>(module);
  void *entry = findOwnFunction(loaded->handle, symbol);
  if (!entry) {
    *function = nullptr;
    return TE_ERROR_NOT_FOUND;
  }
  try {
    std::lock_guard<std::mutex> lock(loaded->mutex);
    HostFunction &slot =
        loaded->functions
            .try_emplace(symbol,
                         HostFunction{reinterpret_cast<HostKernel>(entry),
                                      loaded->setThreads,
                                      loaded->takeAllocFailure})
            .first->second;
    *function = &slot;
  } catch (const std::bad_alloc &) {
    return TE_ERROR_OUT_OF_MEMORY;
  }
  return TE_OK;
}

te_status getManifest(void *, void *module, const char **text) {
  void *function = findOwnFunction(static_cast<HostModule *>(module)->handle,
                                   kManifestSymbol);
  if (!function)
    return TE_ERROR_NOT_FOUND;
  *text = reinterpret_cast<ManifestFunction>(function)();
  return TE_OK;
}

te_status launch(void *, void *function, void **args, int, const void *) {
  const auto *kernel = static_cast<const HostFunction *>(function);
  if (kernel->setThreads)
    kernel->setThreads(te_get_num_threads());
  kernel->entry(args);
  if (!kernel->takeAllocFailure)
    return TE_OK;
  uint64_t bytes = 0;
  const char *site = kernel->takeAllocFailure(&bytes);
  if (bytes == 0)
    return TE_OK;
  te::runtime::setDeviceDetail(
      "a temporary of %llu bytes (%.2f GiB) for the op at %s could not be "
      "allocated; free memory, raise the limit (ulimit -v) or run smaller "
      "shapes",
      static_cast<unsigned long long>(bytes), bytes / double(1ull << 30),
      site ? site : "an unknown location");
  return TE_ERROR_OUT_OF_MEMORY;
}

// Launches run to completion on the calling thread, so there is never
// outstanding work.
te_status synchronize(void *) { return TE_OK; }

//===----------------------------------------------------------------------===//
// Collectives: MPI (libTEMPI, opened at the first one) inside an MPI job;
// a world of one rank outside
//===----------------------------------------------------------------------===//

/// Whether a launcher started this process as a rank of a job (Open MPI's
/// mpirun, or MPICH's, Slurm's and PMIx's): only then is MPI started.
/// Outside a job the world is this process alone, and no MPI is loaded.
bool inMPIJob() {
  // Read once: the launcher's environment does not change.
  static const bool inJob = [] {
    for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
      if (std::getenv(name))
        return true;
    return false;
  }();
  return inJob;
}

/// The channel of a group of one outside a job.
int localChannel;

/// Passes a libTEMPI failure on as the device detail.
te_status passOn(te_status status, const char *error) {
  if (status != TE_OK)
    te::runtime::setDeviceDetail("%s", error);
  return status;
}

te_status world(void *, int *rank, int *size) {
  if (!inMPIJob()) {
    *rank = 0;
    *size = 1;
    return TE_OK;
  }
  const te::runtime::MPILibrary *library = te::runtime::requireMPILibrary();
  if (!library)
    return TE_ERROR_UNSUPPORTED;
  char error[2048] = "";
  return passOn(library->world(rank, size, error, sizeof(error)), error);
}

te_status channelCreate(void *, const te_channel_spec *spec, void **channel) {
  if (!inMPIJob()) {
    bool one = spec->size == 1 &&
               (!spec->ranks || (spec->num_ranks == 1 && spec->ranks[0] == 0));
    if (!one) {
      te::runtime::setDeviceDetail(
          "process group '%s' has %d ranks, which do not divide the world's "
          "1: this process is not a rank of an MPI job; start the program "
          "with mpirun -np N",
          spec->group ? spec->group : "?", spec->size);
      return TE_ERROR_INVALID_ARGUMENT;
    }
    *channel = &localChannel;
    return TE_OK;
  }
  const te::runtime::MPILibrary *library = te::runtime::requireMPILibrary();
  if (!library)
    return TE_ERROR_UNSUPPORTED;
  char error[2048] = "";
  return passOn(library->channelCreate(spec, channel, error, sizeof(error)),
                error);
}

void channelDestroy(void *, void *channel) {
  if (channel != &localChannel)
    te::runtime::getMPILibrary().channelDestroy(channel);
}

te_status collective(void *, void *channel, const te_collective_desc *desc,
                     const void *input, void *output,
                     const te_launch_config *) {
  if (channel == &localChannel) {
    // Every collective over a group of one is the identity.
    size_t bytes = te_dtype_size(desc->dtype);
    for (int d = 0; d < desc->rank; ++d)
      bytes *= static_cast<size_t>(desc->dims[d]);
    std::memmove(output, input, bytes);
    return TE_OK;
  }
  char error[4096] = "";
  return passOn(te::runtime::getMPILibrary().collective(
                    channel, desc, input, output, error, sizeof(error)),
                error);
}

te_device_ops makeHostDeviceOps() {
  te_device_ops ops = {};
  ops.struct_size = sizeof(te_device_ops);
  ops.name = "cpu";
  ops.allocate = allocate;
  ops.free = deallocate;
  ops.copy_to_device = copy;
  ops.copy_to_host = copy;
  ops.copy_device_to_device = copy;
  ops.host_pointer = hostPointer;
  ops.load_module = loadModule;
  ops.unload_module = unloadModule;
  ops.get_manifest = getManifest;
  ops.get_function = getFunction;
  ops.launch = launch;
  ops.synchronize = synchronize;
  ops.world = world;
  ops.channel_create = channelCreate;
  ops.channel_destroy = channelDestroy;
  ops.collective = collective;
  return ops;
}

} // namespace

const te_device_ops &te::runtime::getHostDeviceOps() {
  static const te_device_ops ops = makeHostDeviceOps();
  return ops;
}
