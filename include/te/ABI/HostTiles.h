//===- HostTiles.h - The OS's permission for the host's tile registers -*- C++
//-*-===//
//
// x86's AMX tile registers are part of a thread's state only once the
// process has asked Linux for them (arch_prctl ARCH_REQ_XCOMP_PERM for
// XTILEDATA, Linux 5.16 and later): the first tile instruction of a
// process that has not asked is an illegal instruction. The cpu target asks
// before it compiles a GEMM for AMX tiles (and compiles for AVX-512 instead
// when the answer is no), and the runtime's cpu device asks when it opens,
// so that kernels compiled by another process run too. Both ask through
// this one function.
//
// Plain C++ (te/ABI's rule): no MLIR, LLVM or runtime types.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ABI_HOSTTILES_H
#define TE_ABI_HOSTTILES_H

#include <optional>
#include <string>

namespace te::abi {

/// Asks the OS, once per process, to let every thread use the AMX tile
/// data registers. nullopt when granted; otherwise why not (the processor
/// has none, the kernel is too old, an alternate signal stack is too small
/// for the larger signal frame, or the platform is not Linux on x86-64).
/// Thread-safe; later calls return the first answer.
const std::optional<std::string> &requestHostTilePermission();

} // namespace te::abi

#endif // TE_ABI_HOSTTILES_H
