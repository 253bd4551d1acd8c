//===- HugePages.h - Transparent huge pages under host memory ---*- C++ -*-===//
//
// The blocks of several MiB under the host kernels' temporaries and the
// host device's buffers (HostTemporaries.cpp) start on a huge page and ask
// Linux for transparent huge pages (where it gives them only when asked,
// THP's default "madvise" mode): a fresh block then costs one page fault per
// 2 MiB instead of one per 4 KiB, and a GEMM's packed panels one TLB entry
// per 2 MiB.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_HUGEPAGES_H
#define TE_LIB_RUNTIME_HUGEPAGES_H

#include <cstddef>
#include <sys/mman.h>

namespace te::runtime {

/// The size (and the alignment) of a transparent huge page on x86-64.
constexpr size_t kHugePage = size_t(2) << 20;

/// Asks for huge pages under the whole huge pages of [base, base + bytes),
/// base huge-page-aligned. Advice only: a refusal changes nothing else.
inline void adviseHugePages(void *base, size_t bytes) {
#ifdef MADV_HUGEPAGE
  (void)madvise(base, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
#else
  (void)base;
  (void)bytes;
#endif
}

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_HUGEPAGES_H
