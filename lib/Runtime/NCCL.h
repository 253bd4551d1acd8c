//===- NCCL.h - The cuda device's collectives on NCCL -----------*- C++ -*-===//
//
// The collective group of the cuda device (te/Runtime/Collective.h) on
// NCCL. Nothing is linked: libnccl is opened with dlopen at the first
// channel (TE_NCCL_LIBRARY, else libnccl.so.2 on the loader's path or under
// /usr/local/cuda/lib64), and nccl.h is not included: the types and
// constants below are the subset the collectives need, checked against the
// real header where the toolkit has it (unittests/Runtime/NCCLTest.cpp).
//
// The job: TE_RANK and TE_WORLD_SIZE (torch.distributed's names), else
// mpirun's rank and size (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE), else a
// job of one. Each process drives one GPU. The world's communicator is made
// at the first channel from an id that rank 0 draws and sends the others:
// over MPI (libTEMPI's broadcast) under mpirun, else over a TCP rendezvous
// at TE_MASTER_ADDR:TE_MASTER_PORT where rank 0 listens. A group's channel
// is ncclCommSplit of the world's (NCCL 2.18 or later).
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_NCCL_H
#define TE_LIB_RUNTIME_NCCL_H

#include "te/Runtime/Collective.h"

#include <cstddef>
#include <string>

namespace te::runtime::nccl {

// NCCL's ABI, as far as the collectives need it.
using Result = int;
constexpr Result kSuccess = 0;    // ncclSuccess
constexpr Result kInProgress = 7; // ncclInProgress
constexpr size_t kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};
constexpr int kInt8 = 0;        // ncclInt8
constexpr int kUint8 = 1;       // ncclUint8
constexpr int kInt32 = 2;       // ncclInt32
constexpr int kInt64 = 4;       // ncclInt64
constexpr int kUint64 = 5;      // ncclUint64
constexpr int kFloat16 = 6;     // ncclFloat16
constexpr int kFloat32 = 7;     // ncclFloat32
constexpr int kFloat64 = 8;     // ncclFloat64
constexpr int kBfloat16 = 9;    // ncclBfloat16
constexpr int kFloat8e4m3 = 10; // ncclFloat8e4m3
constexpr int kFloat8e5m2 = 11; // ncclFloat8e5m2
constexpr int kSum = 0;         // ncclSum
constexpr int kMax = 2;         // ncclMax
constexpr int kMin = 3;         // ncclMin
constexpr int kAvg = 4;         // ncclAvg
/// The first NCCL with ncclCommSplit, and the first with FP8 reductions.
constexpr int kMinimumVersion = 21800;
constexpr int kFP8Version = 22400;

/// This process's place in its job.
struct World {
  int rank = 0;
  int size = 1;
  /// Whether the job is mpirun's (the id goes over MPI).
  bool mpi = false;
  /// Why the environment describes no valid job; "" when it does.
  std::string error;
};

/// Reads the job from the environment (see above).
World findWorld();

/// Gives every rank of a job outside mpirun rank 0's `id`: rank 0 listens
/// at TE_MASTER_ADDR:TE_MASTER_PORT, the others connect (retrying while it
/// is not listening yet), say who they are, and receive the id. A
/// connection that does not say it is another rank of this job is closed
/// and not counted. Returns "" or why the ranks did not meet within
/// `timeout` seconds.
std::string rendezvous(const World &world, UniqueId &id, double timeout);

/// NCCL's data type for a reduction of `dtype` with `reduce` on NCCL
/// `version`, or -1 with `why` (i1 sums, which NCCL cannot make modulo 2;
/// FP8 before NCCL 2.24).
int reductionType(te_dtype dtype, te_reduce_kind reduce, int version,
                  std::string &why);

/// What the collectives need of the GPU: the cuda device's driver, called
/// with the instance's context current. Copies and sets run on `stream`.
struct Gpu {
  void *owner;
  te_status (*allocate)(void *owner, size_t bytes, void **pointer);
  void (*free)(void *owner, void *pointer);
  te_status (*copy2D)(void *owner, void *dst, size_t dstPitch, const void *src,
                      size_t srcPitch, size_t width, size_t height,
                      void *stream);
  te_status (*zero)(void *owner, void *pointer, size_t bytes, void *stream);
  /// Synchronous copies between the host and the GPU.
  te_status (*write)(void *owner, void *device, const void *host, size_t bytes);
  te_status (*read)(void *owner, void *host, const void *device, size_t bytes);
  /// 1 when everything issued to `stream` is complete, 0 while not, -1 on
  /// an error.
  int (*query)(void *owner, void *stream);
};

/// The channel of `spec`'s group for the process's GPU; errors set the
/// runtime's device detail.
te_status createChannel(const Gpu &gpu, const te_channel_spec *spec,
                        void **channel);
void destroyChannel(void *channel);

/// One collective on `stream` (a CUstream; null: the default stream).
te_status runCollective(void *channel, const te_collective_desc *desc,
                        const void *input, void *output, void *stream);

} // namespace te::runtime::nccl

#endif // TE_LIB_RUNTIME_NCCL_H
