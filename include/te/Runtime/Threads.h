//===- Threads.h - Host threads of CPU kernels --------------------*- C -*-===//
//
// Host kernels run their parallel loops on OpenMP threads (LLVM's OpenMP
// runtime). How many is one process-wide setting: TE_NUM_THREADS when the
// environment gives it, otherwise the CPUs the process may run on (its
// affinity mask), until te_set_num_threads changes it. The host device
// passes the setting to each kernel at launch, so a change applies to the
// next launch on any thread.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_THREADS_H
#define TE_RUNTIME_THREADS_H

#include "te/Runtime/Status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Sets the threads host kernels use from now on; 0 restores the default
/// (TE_NUM_THREADS, else the CPUs the process may use).
/// Errors: TE_ERROR_INVALID_ARGUMENT for a negative count or one above
/// 4096.
TE_RUNTIME_EXPORT te_status te_set_num_threads(int num_threads);

/// The threads host kernels use: the last te_set_num_threads, or the
/// default. Always at least 1. An unusable TE_NUM_THREADS (not a whole
/// number from 1 to 4096) is reported once on stderr and ignored.
TE_RUNTIME_EXPORT int te_get_num_threads(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_THREADS_H
