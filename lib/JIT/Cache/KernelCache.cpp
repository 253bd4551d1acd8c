//===- KernelCache.cpp - Content-addressed on-disk kernel cache -----------===//
//
// An entry is `<dir>/<key>.so`: the kernel library followed by a trailer
//   "\n#te-kernel-cache 2 build=<id> key=<key> size=<library bytes>
//    sha256=<hex>\n"
// padded to kTrailerSize bytes. The dynamic loader ignores bytes after the
// ELF image, and the trailer lets a reader detect truncation, corruption,
// entries of another te-mlir build and entries of another key (a valid
// entry copied or renamed under this key). An alias is `<dir>/<alias>.ref`:
//   "#te-kernel-cache-alias 2 <alias>\n<key>\n<note>"
// naming the alias it was written for, for the same reason.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/KernelCache.h"
#include "te/JIT/Sha256.h"
#include "te/Support/FileTrust.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

using namespace te::cache;

namespace {

/// The format of entries and aliases. Entries of format 1 had a 256-byte
/// trailer without the key, and aliases no header: both are stale, replaced
/// like the entries of another build.
constexpr int kFormat = 2;
constexpr size_t kTrailerSize = 512;
constexpr const char *kTrailerTag = "#te-kernel-cache 2 ";
constexpr size_t kFormat1TrailerSize = 256;
constexpr const char *kFormat1TrailerTag = "#te-kernel-cache 1 ";
constexpr const char *kAliasTag = "#te-kernel-cache-alias 2 ";
/// Larger files are not read: no te-mlir kernel library comes near.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 31;
constexpr uint64_t kMaxAliasBytes = uint64_t(64) << 20;

bool readFile(const std::string &path, std::string &contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  contents = buffer.str();
  return !in.bad();
}

/// Reads a file of the cache that te-mlir wrote, through the one routine
/// of te/Support/FileTrust.h: opened once without blocking (a FIFO or a
/// device is refused, never waited on), a regular file, not a symbolic
/// link, owned by this user and writable by nobody else (a checksum detects
/// damage, not a planted library). The directory was checked when the
/// cache was opened. Returns false with `untrusted` empty when there is no
/// such file, and with the reason when the file is there but not trusted.
bool readTrustedFile(const std::string &path, uint64_t maxBytes,
                     std::string &contents, std::string &untrusted) {
  untrusted.clear();
  te::support::FileRules rules = te::support::FileRules::ownFile(maxBytes);
  te::support::FileProblem problem;
  std::string why;
  te::support::CheckedFile file =
      te::support::openChecked(path, rules, problem, why);
  if (!file) {
    if (problem != te::support::FileProblem::Missing)
      untrusted = why;
    return false;
  }
  if (!file.readAll(contents, why, maxBytes)) {
    untrusted = why;
    return false;
  }
  return true;
}

/// Writes `data` to a new file `path`, readable by others but writable only
/// by this user whatever the umask.
bool writeNewFile(const std::string &path, const std::string &data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  size_t written = 0;
  while (written < data.size()) {
    ssize_t count = write(fd, data.data() + written, data.size() - written);
    if (count <= 0)
      break;
    written += count;
  }
  bool ok = written == data.size();
  return close(fd) == 0 && ok;
}

/// mkdir -p, new directories readable and writable by this user only.
bool makeDirectories(const std::string &path, std::string &error) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/')
    partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty())
      continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      error = partial + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

std::string uniqueSuffix() {
  std::random_device device;
  return std::to_string(getpid()) + "-" + std::to_string(device());
}

std::string trailerField(const std::string &trailer, const std::string &name) {
  std::string needle = " " + name + "=";
  size_t at = trailer.find(needle);
  if (at == std::string::npos)
    return "";
  size_t start = at + needle.size();
  size_t end = trailer.find_first_of(" \n", start);
  return trailer.substr(start, end == std::string::npos ? std::string::npos
                                                        : end - start);
}

} // namespace

CacheConfig te::cache::configFromEnvironment(const WarningSink &warn) {
  CacheConfig config;
  if (const char *dir = std::getenv("TE_CACHE_DIR"); dir && *dir) {
    config.directory = dir;
  } else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    config.directory = std::string(xdg) + "/te-mlir";
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    config.directory = std::string(home) + "/.cache/te-mlir";
  } else {
    config.enabled = false;
  }
  if (const char *disable = std::getenv("TE_CACHE_DISABLE");
      disable && std::string(disable) == "1")
    config.enabled = false;
  if (const char *max = std::getenv("TE_CACHE_MAX_BYTES"); max && *max) {
    char *end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(max, &end, 10);
    if (errno || *end || max[0] == '-')
      warn("te-mlir: ignoring TE_CACHE_MAX_BYTES=" + std::string(max) +
           ": expected a number of bytes");
    else
      config.maxBytes = value;
  }
  return config;
}

KeyBuilder &KeyBuilder::add(const std::string &name, const std::string &value) {
  parts.emplace_back(name, value);
  return *this;
}

std::string KeyBuilder::finish() const {
  Sha256 hash;
  for (const auto &[name, value] : parts) {
    // Length-prefixed, so that no two part lists hash the same text.
    hash.update(name + "\n" + std::to_string(value.size()) + "\n");
    hash.update(value);
  }
  return hash.finishHex();
}

DiskCache::DiskCache(CacheConfig config, std::string buildId, WarningSink warn)
    : config(std::move(config)), buildId(std::move(buildId)),
      warn(std::move(warn)) {
  if (!this->config.enabled)
    return;
  std::string error;
  if (!makeDirectories(this->config.directory, error)) {
    warnOnce("unwritable", "te-mlir: kernel cache directory " +
                               this->config.directory + " cannot be created (" +
                               error + "); caching in memory only");
    return;
  }
  struct stat info;
  std::string unusable;
  if (stat(this->config.directory.c_str(), &info) != 0)
    unusable = std::string("cannot be examined: ") + std::strerror(errno);
  else if (!S_ISDIR(info.st_mode))
    unusable = "is not a directory";
  else if (access(this->config.directory.c_str(), X_OK) != 0)
    unusable = std::string("cannot be searched: ") + std::strerror(errno);
  if (!unusable.empty()) {
    warnOnce("unwritable", "te-mlir: kernel cache directory " +
                               this->config.directory + " cannot be used (" +
                               unusable + "); caching in memory only");
    return;
  }
  // Whoever can write the directory can plant a library that the next
  // lookup would load.
  if (std::string why = te::support::describeUntrusted(info,
                                                       /*rootMayOwn=*/false);
      !why.empty()) {
    warnOnce("untrusted",
             "te-mlir: kernel cache directory " + this->config.directory + " " +
                 why +
                 ", so another user could plant code in it that te-mlir "
                 "would load; caching in memory only (make it private to "
                 "you with chmod 700, or set TE_CACHE_DIR)");
    return;
  }
  usable = true;
  // A read-only directory (a cache shipped with a container image, or one
  // on a read-only mount) still serves its entries; only stores fail, and
  // the first one says so.
  if (access(this->config.directory.c_str(), W_OK) != 0) {
    writable = false;
    unwritableReason = std::strerror(errno);
  }
}

void DiskCache::warnOnce(const std::string &kind, const std::string &message) {
  if (std::find(warned.begin(), warned.end(), kind) != warned.end())
    return;
  warned.push_back(kind);
  warn(message);
}

bool DiskCache::canStore() {
  if (!usable)
    return false;
  if (!writable)
    warnOnce("unwritable", "te-mlir: kernel cache directory " +
                               config.directory + " is not writable (" +
                               unwritableReason +
                               "); its entries are used, but new kernels "
                               "are cached in memory only");
  return writable;
}

void DiskCache::storeFailed(const std::string &what) {
  unwritableReason = what;
  writable = false;
  canStore();
}

std::string DiskCache::entryPath(const std::string &key) const {
  return config.directory + "/" + key + ".so";
}

std::string DiskCache::lookup(const std::string &key, std::string *library) {
  if (!usable)
    return "";
  std::string path = entryPath(key);
  std::string contents, untrusted;
  if (!readTrustedFile(path, kMaxEntryBytes, contents, untrusted)) {
    if (!untrusted.empty())
      warnOnce("untrusted:" + key,
               "te-mlir: kernel cache entry " + path + " " + untrusted +
                   "; te-mlir loads only files it wrote and only you can "
                   "write, so it ignores it and recompiles");
    return "";
  }
  auto reject = [&](const std::string &why) {
    warnOnce("corrupt:" + key, "te-mlir: kernel cache entry " + path + " " +
                                   why + "; recompiling");
    std::remove(path.c_str());
    return std::string();
  };
  if (contents.size() >= kFormat1TrailerSize &&
      contents.compare(contents.size() - kFormat1TrailerSize + 1,
                       std::strlen(kFormat1TrailerTag),
                       kFormat1TrailerTag) == 0)
    return reject("was written by another te-mlir build (cache format 1, "
                  "this is format " +
                  std::to_string(kFormat) + ")");
  if (contents.size() < kTrailerSize)
    return reject("is truncated");
  std::string trailer = contents.substr(contents.size() - kTrailerSize);
  if (trailer.compare(1, std::strlen(kTrailerTag), kTrailerTag) != 0)
    return reject("has no valid trailer (truncated or not written by "
                  "te-mlir)");
  std::string build = trailerField(trailer, "build");
  if (build != buildId)
    return reject("was written by another te-mlir build (" + build +
                  ", this is " + buildId + ")");
  size_t size =
      std::strtoull(trailerField(trailer, "size").c_str(), nullptr, 10);
  if (size + kTrailerSize != contents.size())
    return reject("is truncated or padded (" + std::to_string(contents.size()) +
                  " bytes, trailer says " +
                  std::to_string(size + kTrailerSize) + ")");
  if (sha256Hex(contents.data(), size) != trailerField(trailer, "sha256"))
    return reject("is corrupted (checksum mismatch)");
  // A valid entry of another key (copied or renamed here) would compute
  // another program.
  if (std::string recorded = trailerField(trailer, "key"); recorded != key)
    return reject("is the entry of another key (" +
                  (recorded.empty() ? std::string("none recorded")
                                    : recorded.substr(0, 16) + "...") +
                  "), not of " + key.substr(0, 16) + "...");
  // Touch the entry: eviction removes the least recently used first.
  utimes(path.c_str(), nullptr);
  if (library) {
    contents.resize(size);
    *library = std::move(contents);
  }
  return path;
}

std::string DiskCache::publish(const std::string &key,
                               const std::string &libraryPath) {
  if (!usable)
    return "";
  std::string library;
  if (!readFile(libraryPath, library)) {
    warnOnce("publish", "te-mlir: cannot read compiled kernel " + libraryPath +
                            "; not caching it");
    return "";
  }
  return publishLibrary(key, library);
}

std::string DiskCache::publishLibrary(const std::string &key,
                                      const std::string &library) {
  if (!canStore())
    return "";
  std::string trailer =
      "\n" + std::string(kTrailerTag) + "build=" + buildId + " key=" + key +
      " size=" + std::to_string(library.size()) +
      " sha256=" + sha256Hex(library.data(), library.size()) + "\n";
  if (trailer.size() > kTrailerSize ||
      key.find_first_of(" \n") != std::string::npos) {
    warnOnce("publish", "te-mlir: build id or key too long for the cache "
                        "trailer; not caching kernels");
    return "";
  }
  trailer.resize(kTrailerSize, ' ');
  trailer.back() = '\n';

  std::string path = entryPath(key);
  std::string temporary = path + ".tmp-" + uniqueSuffix();
  if (!writeNewFile(temporary, library + trailer)) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    storeFailed(why);
    return "";
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    storeFailed(why);
    return "";
  }
  evictToLimit(path);
  return path;
}

void DiskCache::publishAlias(const std::string &alias, const std::string &key,
                             const std::string &note) {
  if (!canStore())
    return;
  std::string path = config.directory + "/" + alias + ".ref";
  std::string temporary = path + ".tmp-" + uniqueSuffix();
  if (!writeNewFile(temporary, std::string(kAliasTag) + alias + "\n" + key +
                                   "\n" + note)) {
    std::remove(temporary.c_str());
    return;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    std::remove(temporary.c_str());
}

std::string DiskCache::resolveAlias(const std::string &alias,
                                    std::string *note) {
  if (!usable)
    return "";
  std::string contents, untrusted;
  if (!readTrustedFile(config.directory + "/" + alias + ".ref", kMaxAliasBytes,
                       contents, untrusted))
    return "";
  // The header names the alias the file was written for (another alias's
  // file copied here would name another program's entry); then a key of 64
  // hex digits on its own line. Anything else is a damaged or stale alias:
  // a miss.
  std::string header = std::string(kAliasTag) + alias + "\n";
  if (contents.compare(0, header.size(), header) != 0)
    return "";
  contents.erase(0, header.size());
  if (contents.size() < 65 || contents[64] != '\n' ||
      contents.find_first_not_of("0123456789abcdef") != 64)
    return "";
  if (note)
    *note = contents.substr(65);
  return contents.substr(0, 64);
}

template <typename Visit>
void DiskCache::forEachFile(const char *suffix, Visit &&visit) const {
  DIR *dir = opendir(config.directory.c_str());
  if (!dir)
    return;
  size_t length = std::strlen(suffix);
  while (dirent *item = readdir(dir)) {
    std::string name = item->d_name;
    if (name.size() <= length ||
        name.compare(name.size() - length, length, suffix) != 0)
      continue;
    std::string path = config.directory + "/" + name;
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode))
      visit(path, info);
  }
  closedir(dir);
}

DiskCache::Usage DiskCache::getUsage() const {
  Usage usage;
  if (!usable)
    return usage;
  forEachFile(".so", [&](const std::string &, const struct stat &info) {
    ++usage.entries;
    usage.bytes += uint64_t(info.st_size);
  });
  return usage;
}

uint64_t DiskCache::clear() {
  if (!usable)
    return 0;
  std::vector<std::string> paths;
  for (const char *suffix : {".so", ".ref"})
    forEachFile(suffix, [&](const std::string &path, const struct stat &) {
      paths.push_back(path);
    });
  uint64_t removed = 0;
  for (const std::string &path : paths)
    removed += std::remove(path.c_str()) == 0;
  return removed;
}

void DiskCache::evictToLimit(const std::string &keep) {
  if (config.maxBytes == 0)
    return;
  struct Entry {
    std::string path;
    uint64_t size;
    struct timespec used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  forEachFile(".so", [&](const std::string &path, const struct stat &info) {
    entries.push_back({path, uint64_t(info.st_size), info.st_mtim});
    total += info.st_size;
  });
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec
                                          : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry &entry : entries) {
    if (total <= config.maxBytes)
      break;
    if (entry.path == keep)
      continue;
    if (std::remove(entry.path.c_str()) == 0)
      total -= entry.size;
  }
}
