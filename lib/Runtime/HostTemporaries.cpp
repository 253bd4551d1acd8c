//===- HostTemporaries.cpp - Host kernels' temporary memory ---------------===//
//
// Every block starts with a header (its base address, its size class and a
// tag), right before the address the kernel gets, so that a release knows
// what it frees. Large blocks (256 KiB and more) are page-aligned (from
// 2 MiB on, on huge pages where Linux gives them) and rounded up to 64 KiB;
// freed, they wait in a list for a later allocation of about their size (at
// most an eighth and 64 KiB larger than asked, so that one big block does not
// serve small requests for long).
//
//===----------------------------------------------------------------------===//

#include "HostDevice.h"
#include "HugePages.h"

#include "te/Runtime/HostTemporaries.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <sys/mman.h>
#include <vector>

using te::runtime::adviseHugePages;
using te::runtime::kHugePage;

namespace {

constexpr size_t kLargeBlock = size_t(256) << 10;
constexpr size_t kGranule = size_t(64) << 10;
constexpr size_t kPage = 4096;
constexpr size_t kDefaultLimit = size_t(1) << 30;
/// The header's tag: "te-temp" and a version.
constexpr uint64_t kTag = 0x74652d74656d7001;

struct Header {
  void *base;
  /// The block's bytes from `base` when it may be kept (large), else 0.
  size_t capacity;
  uint64_t tag;
};

/// The bytes before the kernel's address: room for the header, and a
/// multiple of the alignment, so that an aligned base gives an aligned
/// address.
size_t getPrefix(size_t alignment) { return std::max<size_t>(alignment, 64); }

/// TE_HOST_TEMPORARIES_BYTES, else 1 GiB; read once.
size_t defaultLimit() {
  static const size_t limit = [] {
    const char *text = std::getenv("TE_HOST_TEMPORARIES_BYTES");
    if (!text || !*text)
      return kDefaultLimit;
    char *end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (errno == 0 && *end == '\0' && text[0] != '-' &&
        value <= std::numeric_limits<size_t>::max())
      return static_cast<size_t>(value);
    std::fprintf(stderr,
                 "te-mlir: ignoring TE_HOST_TEMPORARIES_BYTES='%s': not a "
                 "whole number of bytes; keeping up to %zu idle bytes of "
                 "host temporaries\n",
                 text, kDefaultLimit);
    return kDefaultLimit;
  }();
  return limit;
}

/// What te_host_temporaries_set_limit set; SIZE_MAX: the default.
std::atomic<size_t> chosenLimit{std::numeric_limits<size_t>::max()};

size_t getLimit() {
  size_t chosen = chosenLimit.load(std::memory_order_relaxed);
  return chosen == std::numeric_limits<size_t>::max() ? defaultLimit() : chosen;
}

/// The idle large blocks, oldest first.
class IdleBlocks {
public:
  /// An idle block of `capacity` to `capacity + slack` bytes, taken out of
  /// the list, or null; `capacity` becomes the block's.
  void *take(size_t &capacity) {
    size_t most = capacity + capacity / 8 + kGranule;
    std::lock_guard<std::mutex> lock(mutex);
    auto best = blocks.end();
    for (auto it = blocks.begin(); it != blocks.end(); ++it)
      if (it->capacity >= capacity && it->capacity <= most &&
          (best == blocks.end() || it->capacity < best->capacity))
        best = it;
    if (best == blocks.end())
      return nullptr;
    void *base = best->base;
    capacity = best->capacity;
    idle -= best->capacity;
    blocks.erase(best);
    return base;
  }

  /// Keeps `base` (of `capacity` bytes), then frees the oldest blocks
  /// beyond `limit`.
  void keep(void *base, size_t capacity, size_t limit) {
    std::vector<void *> freed;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (capacity > limit) {
        freed.push_back(base);
      } else {
        blocks.push_back({base, capacity});
        idle += capacity;
      }
      trim(limit, freed);
    }
    for (void *block : freed)
      std::free(block);
  }

  /// Frees the oldest idle blocks until at most `limit` bytes are idle.
  void shrink(size_t limit) {
    std::vector<void *> freed;
    {
      std::lock_guard<std::mutex> lock(mutex);
      trim(limit, freed);
    }
    for (void *block : freed)
      std::free(block);
  }

  size_t getIdleBytes() {
    std::lock_guard<std::mutex> lock(mutex);
    return idle;
  }

private:
  struct Block {
    void *base;
    size_t capacity;
  };

  void trim(size_t limit, std::vector<void *> &freed) {
    size_t oldest = 0;
    while (idle > limit && oldest < blocks.size()) {
      idle -= blocks[oldest].capacity;
      freed.push_back(blocks[oldest].base);
      ++oldest;
    }
    blocks.erase(blocks.begin(), blocks.begin() + oldest);
  }

  std::mutex mutex;
  std::vector<Block> blocks;
  size_t idle = 0;
};

/// Never destroyed: kernels on other threads may release blocks while the
/// process exits.
IdleBlocks &getIdleBlocks() {
  static IdleBlocks *blocks = new IdleBlocks;
  return *blocks;
}

void *allocateAligned(size_t alignment, size_t bytes) {
  void *base = nullptr;
  if (posix_memalign(&base, alignment, bytes) != 0)
    return nullptr;
  return base;
}

/// Large blocks are page-aligned, and those of a huge page or more
/// huge-page-aligned.
size_t getLargeAlignment(size_t capacity) {
  return capacity >= kHugePage ? kHugePage : kPage;
}

Header *getHeader(void *block) {
  return reinterpret_cast<Header *>(static_cast<char *>(block) -
                                    sizeof(Header));
}

} // namespace

void *te::runtime::allocateHostTemporary(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)))
    alignment = alignof(std::max_align_t);
  size_t prefix = getPrefix(alignment);
  if (size > std::numeric_limits<size_t>::max() - prefix - kGranule)
    return nullptr;
  size_t bytes = prefix + size;
  // Large blocks are page-aligned, which serves every alignment up to a
  // page; the rare larger alignment gets a block of its own.
  bool large = bytes >= kLargeBlock && alignment <= kPage;
  size_t capacity = large ? (bytes + kGranule - 1) / kGranule * kGranule : 0;
  void *base = large ? getIdleBlocks().take(capacity) : nullptr;
  if (!base) {
    size_t baseAlignment =
        large ? getLargeAlignment(capacity) : std::max<size_t>(alignment, 64);
    base = allocateAligned(baseAlignment, large ? capacity : bytes);
    if (!base && getIdleBlocks().getIdleBytes()) {
      // Short of memory: what is idle goes back first.
      getIdleBlocks().shrink(0);
      base = allocateAligned(baseAlignment, large ? capacity : bytes);
    }
    if (!base)
      return nullptr;
    if (baseAlignment == kHugePage)
      adviseHugePages(base, capacity);
  }
  void *block = static_cast<char *>(base) + prefix;
  *getHeader(block) = Header{base, capacity, kTag};
  return block;
}

void te::runtime::releaseHostTemporary(void *block) {
  if (!block)
    return;
  Header header = *getHeader(block);
  if (header.tag != kTag) {
    // Not a block of ours: freeing it could corrupt the heap, keeping it
    // only leaks.
    std::fprintf(stderr,
                 "te-mlir: a host kernel released %p, which is not a "
                 "temporary of the runtime; leaving it alone\n",
                 block);
    return;
  }
  getHeader(block)->tag = 0;
  if (!header.capacity) {
    std::free(header.base);
    return;
  }
  getIdleBlocks().keep(header.base, header.capacity, getLimit());
}

te_status te_host_temporaries_set_limit(size_t bytes) {
  chosenLimit.store(bytes, std::memory_order_relaxed);
  getIdleBlocks().shrink(getLimit());
  return TE_OK;
}

size_t te_host_temporaries_limit(void) { return getLimit(); }

size_t te_host_temporaries_idle_bytes(void) {
  return getIdleBlocks().getIdleBytes();
}

void te_host_temporaries_release(void) { getIdleBlocks().shrink(0); }
