/*===- Limits.h - Limits the compiler and the runtime share ---------------===*\
|*                                                                            *|
|* include/te/ABI holds what the compiler writes and the runtime reads: plain *|
|* C and C++ with no MLIR, LLVM or runtime types, which the dialect, the      *|
|* targets, the runtime and the tools all include (docs/Architecture.md).     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_ABI_LIMITS_H
#define TE_ABI_LIMITS_H

/// The most ranks a world, and so a process group, may have: 2^20. The
/// compiler refuses larger te.process_group sizes; the runtime refuses
/// larger worlds and groups.
#define TE_MAX_WORLD_SIZE (1 << 20)

#endif /* TE_ABI_LIMITS_H */
