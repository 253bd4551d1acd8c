//===- HostTemporaries.h - Host kernels' temporary memory ---------*- C -*-===//
//
// Host kernels allocate temporaries in every launch (a GEMM's packed
// operands and its f32 product, attention's blocks), and free them before
// they return. Memory fresh from the OS costs a page fault and a cleared
// page per 4 KiB touched: for a 1024^3 bf16 GEMM about a quarter of the
// launch. So kernels of te-mlir's cpu target (abi=4) take their
// temporaries from the runtime, which keeps freed blocks of 256 KiB and
// more for later launches, up to a limit of idle bytes:
// TE_HOST_TEMPORARIES_BYTES when the environment gives it (a whole number
// of bytes; 0 keeps nothing), otherwise 1 GiB, until
// te_host_temporaries_set_limit changes it. Smaller blocks go to the C
// library's allocator, which keeps them itself. Blocks are shared by every
// module and thread of the process; the oldest idle ones go first when the
// limit is reached, and all of them when an allocation finds the system short
// of memory. The host device's buffers (te_buffer memory on the cpu
// device) come from the same blocks and count against the same limit.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_HOSTTEMPORARIES_H
#define TE_RUNTIME_HOSTTEMPORARIES_H

#include "te/Runtime/Status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Sets the most idle bytes kept for later launches (0: none; SIZE_MAX:
/// the default again); idle blocks beyond it are freed now. Always TE_OK.
TE_RUNTIME_EXPORT te_status te_host_temporaries_set_limit(size_t bytes);

/// The limit: the last te_host_temporaries_set_limit, or the default. An
/// unusable TE_HOST_TEMPORARIES_BYTES (not a whole number) is reported once on
/// stderr and ignored.
TE_RUNTIME_EXPORT size_t te_host_temporaries_limit(void);

/// The idle bytes kept now.
TE_RUNTIME_EXPORT size_t te_host_temporaries_idle_bytes(void);

/// Frees every idle block (blocks in use stay theirs).
TE_RUNTIME_EXPORT void te_host_temporaries_release(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TE_RUNTIME_HOSTTEMPORARIES_H
