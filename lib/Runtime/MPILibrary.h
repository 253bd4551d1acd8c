//===- MPILibrary.h - libTEMPI, opened at run time ---------------*- C++
//-*-===//
//
// libTEMPI (lib/Runtime/MPI) holds everything of the runtime that calls
// MPI: the cpu device's collectives, and the broadcast the cuda device's
// NCCL communicators exchange their id with under mpirun. The runtime
// opens it with dlopen when it first needs it (beside libTERuntime.so, or
// TE_MPI_LIBRARY), so that it never links MPI.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_MPILIBRARY_H
#define TE_LIB_RUNTIME_MPILIBRARY_H

#include "te/Runtime/Collective.h"

#include <string>

namespace te::runtime {

/// The functions of libTEMPI (MPI/MPIChannels.h), or why they are not there.
struct MPILibrary {
  te_status (*world)(int *, int *, char *, size_t) = nullptr;
  te_status (*channelCreate)(const te_channel_spec *, void **, char *,
                             size_t) = nullptr;
  void (*channelDestroy)(void *) = nullptr;
  te_status (*collective)(void *, const te_collective_desc *, const void *,
                          void *, char *, size_t) = nullptr;
  te_status (*broadcast)(void *, size_t, int, char *, size_t) = nullptr;
  /// Why the library is unusable; "" when it is.
  std::string error;
};

/// Opens libTEMPI once per process (never closed: MPI stays initialized
/// until the process exits).
const MPILibrary &getMPILibrary();

/// The library, or null with why not as the runtime's device detail.
const MPILibrary *requireMPILibrary();

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_MPILIBRARY_H
