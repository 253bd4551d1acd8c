//===- MPILibrary.cpp - libTEMPI, opened at run time ----------------------===//

#include "MPILibrary.h"

#include "Error.h"
#include "MPI/MPIChannels.h"

#include "te/Support/FileTrust.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace te::runtime;

namespace {

/// TE_MPI_LIBRARY, else libTEMPI.so beside this runtime library (the build
/// tree and an installation keep them together).
std::string findMPILibrary() {
  if (const char *path = std::getenv("TE_MPI_LIBRARY"); path && *path)
    return path;
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&findMPILibrary), &info) ||
      !info.dli_fname)
    return "libTEMPI.so";
  std::string self = info.dli_fname;
  size_t slash = self.rfind('/');
  return (slash == std::string::npos ? "" : self.substr(0, slash + 1)) +
         "libTEMPI.so";
}

template <typename Function>
void resolve(void *handle, const char *symbol, Function &function) {
  function = reinterpret_cast<Function>(dlsym(handle, symbol));
}

} // namespace

const MPILibrary &te::runtime::getMPILibrary() {
  static const MPILibrary library = [] {
    MPILibrary loaded;
    std::string path = findMPILibrary();
    // te-mlir's own library, from a path: opened and checked like a plugin
    // and the file checked is what loads (te/Support/FileTrust.h); stays
    // loaded for the process.
    void *handle = nullptr;
    std::string why;
    if (path.find('/') != std::string::npos) {
      static te::support::LoadedLibrary library;
      te::support::FileProblem problem;
      if (te::support::loadLibrary(path, te::support::FileRules::library(),
                                   RTLD_NOW | RTLD_LOCAL, library, problem,
                                   why))
        handle = library.handle;
      else if (problem != te::support::FileProblem::LoadFailed)
        why = (problem == te::support::FileProblem::Untrusted ||
                       problem == te::support::FileProblem::NotRegular
                   ? "refusing to load " + path + ": it "
                   : path + ": it ") +
              why;
    } else {
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char *error = dlerror();
        why = error ? error : "dlopen failed";
      }
    }
    if (!handle) {
      loaded.error = "collectives need te-mlir's MPI library, which did not "
                     "load (" +
                     why +
                     "); build te-mlir with OpenMPI installed "
                     "(scripts/bootstrap.sh installs it), or set "
                     "TE_MPI_LIBRARY to its libTEMPI.so";
      return loaded;
    }
    int (*version)() = nullptr;
    resolve(handle, "te_mpi_channels_version", version);
    resolve(handle, "te_mpi_world", loaded.world);
    resolve(handle, "te_mpi_channel_create", loaded.channelCreate);
    resolve(handle, "te_mpi_channel_destroy", loaded.channelDestroy);
    resolve(handle, "te_mpi_collective", loaded.collective);
    resolve(handle, "te_mpi_broadcast", loaded.broadcast);
    if (!version || version() != TE_MPI_CHANNELS_VERSION || !loaded.world ||
        !loaded.channelCreate || !loaded.channelDestroy || !loaded.collective ||
        !loaded.broadcast) {
      loaded.error = "'" + path +
                     "' is not the MPI library of this te-mlir runtime "
                     "(another version); rebuild te-mlir or unset "
                     "TE_MPI_LIBRARY";
      loaded.world = nullptr;
    }
    return loaded;
  }();
  return library;
}

const MPILibrary *te::runtime::requireMPILibrary() {
  const MPILibrary &library = getMPILibrary();
  if (library.world)
    return &library;
  setDeviceDetail("%s", library.error.c_str());
  return nullptr;
}
