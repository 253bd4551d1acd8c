//===- KernelCache.h - Content-addressed on-disk kernel cache ---*- C++ -*-===//
//
// Compiled kernel libraries keyed by everything that changes the generated
// code. Needs neither MLIR nor LLVM, so that a hit costs a file read and a
// dlopen. Entries are single files published by rename, so any number of
// processes may compile and publish the same key at once.
//
// Environment: TE_CACHE_DIR (directory; default
// ${XDG_CACHE_HOME:-~/.cache}/te-mlir), TE_CACHE_DISABLE=1 (no disk cache),
// TE_CACHE_MAX_BYTES (bound; least recently used entries are evicted).
//
//===----------------------------------------------------------------------===//

#ifndef TE_JIT_KERNELCACHE_H
#define TE_JIT_KERNELCACHE_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace te::cache {

/// Where warnings go (stderr by default); each kind is reported once per
/// process.
using WarningSink = std::function<void(const std::string &)>;

struct CacheConfig {
  std::string directory;
  bool enabled = true;
  /// 0: unbounded.
  uint64_t maxBytes = 0;
};

/// The configuration the environment asks for. Malformed values are
/// reported through `warn` and ignored.
CacheConfig configFromEnvironment(const WarningSink &warn);

/// Builds a cache key from named parts; the order of `add` calls matters.
class KeyBuilder {
public:
  KeyBuilder &add(const std::string &name, const std::string &value);
  std::string finish() const;

private:
  std::vector<std::pair<std::string, std::string>> parts;
};

class DiskCache {
public:
  /// `buildId` identifies the te-mlir build; entries written by another build
  /// are treated as foreign (reported and replaced).
  DiskCache(CacheConfig config, std::string buildId, WarningSink warn);

  /// True when entries can be read (and, unless the directory is
  /// read-only, written).
  bool isUsable() const { return usable; }
  /// True when new entries can be stored (a read-only directory still
  /// serves its entries).
  bool isWritable() const { return usable && writable; }
  const CacheConfig &getConfig() const { return config; }

  /// The path of a valid kernel library for `key`, or "" on a miss. A
  /// truncated, corrupted or foreign entry, or the entry of another key
  /// (each entry records its key), is reported, removed and missed; one
  /// that is not a regular file of this user that only this user can
  /// write (a symbolic link, a FIFO, ...) is reported and missed. With
  /// `library`, receives the library's bytes as read and verified: loading
  /// those (te_module_load_image) loads exactly what was checked.
  std::string lookup(const std::string &key, std::string *library = nullptr);

  /// Copies the library at `libraryPath` into the cache under `key`
  /// (atomically) and returns the entry's path, or "" when the cache is not
  /// usable or not writable; then evicts least recently used entries
  /// beyond maxBytes.
  std::string publish(const std::string &key, const std::string &libraryPath);
  /// publish of the library's bytes.
  std::string publishLibrary(const std::string &key,
                             const std::string &library);

  /// The path an entry for `key` has.
  std::string entryPath(const std::string &key) const;

  /// Records that `alias` (a cheap key, e.g. of the source text) names the
  /// entry `key` (e.g. of the canonical IR), with `note`, text that belongs
  /// to the alias rather than to the entry (the source locations of the
  /// program the alias stands for); atomic like publish.
  void publishAlias(const std::string &alias, const std::string &key,
                    const std::string &note = "");
  /// The key `alias` names, or "" when there is no valid alias; `note`, when
  /// given, receives the alias's note.
  std::string resolveAlias(const std::string &alias,
                           std::string *note = nullptr);

  /// The entries (compiled libraries) in the directory and their bytes.
  struct Usage {
    uint64_t entries = 0;
    uint64_t bytes = 0;
  };
  Usage getUsage() const;

  /// Removes every entry and alias from the directory (the files this
  /// cache writes: *.so and *.ref; nothing else); returns how many files
  /// it removed.
  uint64_t clear();

private:
  /// Calls `visit(path, stat)` for each file of the directory whose name
  /// ends in `suffix`.
  template <typename Visit>
  void forEachFile(const char *suffix, Visit &&visit) const;
  void evictToLimit(const std::string &keep);
  void warnOnce(const std::string &kind, const std::string &message);
  /// Whether a store may be tried; warns once when the directory is not
  /// writable.
  bool canStore();
  /// A store failed with `what`: no more are tried (one warning).
  void storeFailed(const std::string &what);

  CacheConfig config;
  std::string buildId;
  WarningSink warn;
  std::vector<std::string> warned;
  bool usable = false;
  bool writable = true;
  std::string unwritableReason;
};

} // namespace te::cache

#endif // TE_JIT_KERNELCACHE_H
