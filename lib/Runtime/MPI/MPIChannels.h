//===- MPIChannels.h - The cpu device's collectives on MPI --------*- C -*-===//
//
// libTEMPI: what the host device loads (with dlopen, at the first
// collective) to run collectives on MPI, and the cuda device to exchange
// its NCCL id under mpirun. It is a library of its own so that
// the runtime neither links MPI nor needs it installed until a program
// runs a collective. The functions mirror the collective group of
// te_device_ops (te/Runtime/Device.h); each failure writes a NUL-terminated
// message of at most error_size bytes to `error`.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_MPI_MPICHANNELS_H
#define TE_LIB_RUNTIME_MPI_MPICHANNELS_H

#include "te/Runtime/Collective.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped when a signature below changes; the host device refuses a
/// library of another version.
#define TE_MPI_CHANNELS_VERSION 2

TE_RUNTIME_EXPORT int te_mpi_channels_version(void);

TE_RUNTIME_EXPORT te_status te_mpi_world(int *rank, int *size, char *error,
                                         size_t error_size);

TE_RUNTIME_EXPORT te_status te_mpi_channel_create(const te_channel_spec *spec,
                                                  void **channel, char *error,
                                                  size_t error_size);

TE_RUNTIME_EXPORT void te_mpi_channel_destroy(void *channel);

/// Broadcasts `bytes` at `data` from world rank `root` to every rank of
/// the world (the cuda device's NCCL id under mpirun); starts MPI if needed.
/// Waits at most TE_COLLECTIVE_TIMEOUT seconds, as collectives do.
TE_RUNTIME_EXPORT te_status te_mpi_broadcast(void *data, size_t bytes, int root,
                                             char *error, size_t error_size);

TE_RUNTIME_EXPORT te_status te_mpi_collective(void *channel,
                                              const te_collective_desc *desc,
                                              const void *input, void *output,
                                              char *error, size_t error_size);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_LIB_RUNTIME_MPI_MPICHANNELS_H
