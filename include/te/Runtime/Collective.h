//===- Collective.h - Collectives across processes ---------------*- C -*-===//
//
// te.all_reduce, all_gather, reduce_scatter, all_to_all and permute run
// across the processes of a job (the "world": MPI's ranks on the cpu device,
// NCCL's on GPUs, a vendor's CCL on a plugin device). A compiled program
// runs each as a library call of its module's steps (`call collective.<op>`,
// te/Runtime/Module.h); the runtime turns it into a call of the device
// table's collective group (te/Runtime/Device.h, version 5) on a channel:
// the device's communicator for one process group, which the runtime
// creates at the group's first collective, reuses, and destroys with the
// device.
//
// A te.process_group of `size` ranks names one group per rank: without a
// rank list, the world is cut into consecutive blocks of `size` ranks
// (ranks 0..size-1, then size..2*size-1, ...), as TE's tensor-parallel
// groups are; with one, the list holds every world rank once, group after
// group.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_COLLECTIVE_H
#define TE_RUNTIME_COLLECTIVE_H

#include "te/ABI/Limits.h"
#include "te/Runtime/Buffer.h"
#include "te/Runtime/DType.h"
#include "te/Runtime/Status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct te_device te_device;

/// What a collective does (the te op of the same name). The numeric values
/// are part of the ABI.
typedef enum te_collective_kind {
  TE_COLLECTIVE_ALL_REDUCE = 0,
  TE_COLLECTIVE_ALL_GATHER,
  TE_COLLECTIVE_REDUCE_SCATTER,
  TE_COLLECTIVE_ALL_TO_ALL,
  TE_COLLECTIVE_PERMUTE
} te_collective_kind;

/// The reduction of all_reduce and reduce_scatter. `avg` is the sum divided
/// by the group size (floating-point types only).
typedef enum te_reduce_kind {
  TE_REDUCE_SUM = 0,
  TE_REDUCE_MAX,
  TE_REDUCE_MIN,
  TE_REDUCE_AVG
} te_reduce_kind;

/* TE_MAX_WORLD_SIZE, the most ranks a world or group may have, is in
   te/ABI/Limits.h: the compiler refuses larger te.process_group sizes;
   the runtime refuses larger worlds and groups. */

/// One process group of a program: what te_device_ops.channel_create
/// receives.
typedef struct te_channel_spec {
  /// sizeof(te_channel_spec) as the runtime was compiled.
  size_t struct_size;
  /// The program's name of the group ("tp"), for messages.
  const char *group;
  /// Ranks per group (> 0); the world size must be a multiple of it.
  int size;
  /// NULL: consecutive blocks of `size` world ranks. Otherwise `num_ranks`
  /// world ranks, every one of the world once, group after group.
  const int *ranks;
  int num_ranks;
  /// How long a collective on the channel waits for the group's other
  /// ranks before it fails (te_collective_timeout()).
  double timeout_seconds;
} te_channel_spec;

/// One collective call: the te op's attributes and its input's shape. The
/// output's shape follows from them as the te op defines it.
typedef struct te_collective_desc {
  /// sizeof(te_collective_desc) as the runtime was compiled.
  size_t struct_size;
  te_collective_kind kind;
  /// all_reduce, reduce_scatter.
  te_reduce_kind reduce;
  te_dtype dtype;
  /// The input's shape (rank 0: one element).
  int rank;
  int64_t dims[TE_MAX_RANK];
  /// all_gather and reduce_scatter: the dimension; all_to_all: split_dim.
  int dim;
  /// all_to_all: concat_dim.
  int concat_dim;
  /// permute: `pairs` (num_pairs (source, target) group ranks, flattened),
  /// or, when pairs is NULL, rank r sends to (r + shift) mod size.
  int64_t shift;
  const int64_t *pairs;
  int num_pairs;
  /// The group's name, for messages.
  const char *group;
} te_collective_desc;

/// This process's rank in the world of `device`'s collectives and the
/// world's size (1 and 0 for a process that is not part of a job: MPI
/// started as a singleton). Starts the device's collective library (MPI on
/// the cpu device) if it is not running yet.
/// Errors: TE_ERROR_INVALID_ARGUMENT for NULL; TE_ERROR_UNSUPPORTED when the
/// device has no collectives or its library cannot be started (the message
/// says why and what to install). Thread safe.
TE_RUNTIME_EXPORT te_status te_device_world(te_device *device, int *rank,
                                            int *size);

typedef struct te_kernel te_kernel;

/// The number of collectives a launch of `kernel` runs (its manifest's
/// `call collective.*` steps); 0 for none, -1 for NULL. A process whose
/// kernels run collectives is one rank of a job (te_device_world).
TE_RUNTIME_EXPORT int te_kernel_num_collectives(const te_kernel *kernel);

/// The seconds a collective waits for the other ranks of its group before
/// it fails: TE_COLLECTIVE_TIMEOUT when the environment gives a positive
/// number (at most 10^6, about 11.6 days: larger values, inf included, are
/// that), else 300. Devices' collective libraries honour it.
TE_RUNTIME_EXPORT double te_collective_timeout(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_COLLECTIVE_H
