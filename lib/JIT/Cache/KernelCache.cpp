//===- KernelCache.cpp - Content-addressed on-disk kernel cache -----------===//
//
// An entry is `<dir>/<key>.so`: the kernel library followed by a trailer
//   "\n#te-kernel-cache 1 build=<id> size=<library bytes> sha256=<hex>\n"
// padded to kTrailerSize bytes. The dynamic loader ignores bytes after the
// ELF image, so the entry is loaded in place, and the trailer lets a reader
// detect truncation, corruption and entries of another te-mlir build.
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

constexpr size_t kTrailerSize = 256;
constexpr const char *kTrailerTag = "#te-kernel-cache 1 ";

bool readFile(const std::string &path, std::string &contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  contents = buffer.str();
  return !in.bad();
}

/// Reads a file of the cache that te-mlir wrote: a regular file, not a
/// symbolic link, owned by this user and writable by nobody else (a
/// checksum detects damage, not a planted library; see te/Support/
/// FileTrust.h). Returns false with `untrusted` empty when there is no such
/// file, and with the reason when the file is there but not trusted.
bool readTrustedFile(const std::string &path, std::string &contents,
                     std::string &untrusted) {
  untrusted.clear();
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP)
      untrusted = "is a symbolic link";
    return false;
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    untrusted = "is not a regular file";
  } else {
    untrusted = te::support::describeUntrusted(info, /*rootMayOwn=*/false);
  }
  if (untrusted.empty()) {
    contents.clear();
    char buffer[1 << 16];
    ssize_t count;
    while ((count = read(fd, buffer, sizeof(buffer))) > 0)
      contents.append(buffer, count);
    if (count < 0)
      untrusted = "cannot be read";
  }
  close(fd);
  return untrusted.empty();
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
  if (access(this->config.directory.c_str(), W_OK | X_OK) != 0) {
    warnOnce("unwritable", "te-mlir: kernel cache directory " +
                               this->config.directory + " is not writable (" +
                               std::strerror(errno) +
                               "); caching in memory only");
    return;
  }
  // Whoever can write the directory can plant a library that the next
  // lookup would load.
  if (std::string why = te::support::describeUntrustedPath(
          this->config.directory, /*rootMayOwn=*/false);
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
}

void DiskCache::warnOnce(const std::string &kind, const std::string &message) {
  if (std::find(warned.begin(), warned.end(), kind) != warned.end())
    return;
  warned.push_back(kind);
  warn(message);
}

std::string DiskCache::entryPath(const std::string &key) const {
  return config.directory + "/" + key + ".so";
}

std::string DiskCache::lookup(const std::string &key) {
  if (!usable)
    return "";
  std::string path = entryPath(key);
  std::string contents, untrusted;
  if (!readTrustedFile(path, contents, untrusted)) {
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
  // Touch the entry: eviction removes the least recently used first.
  utimes(path.c_str(), nullptr);
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
  std::string trailer = "\n" + std::string(kTrailerTag) + "build=" + buildId +
                        " size=" + std::to_string(library.size()) +
                        " sha256=" + sha256Hex(library.data(), library.size()) +
                        "\n";
  if (trailer.size() > kTrailerSize) {
    warnOnce("publish", "te-mlir: build id too long for the cache trailer");
    return "";
  }
  trailer.resize(kTrailerSize, ' ');
  trailer.back() = '\n';

  std::string path = entryPath(key);
  std::string temporary = path + ".tmp-" + uniqueSuffix();
  {
    if (!writeNewFile(temporary, library + trailer)) {
      std::remove(temporary.c_str());
      warnOnce("unwritable",
               "te-mlir: cannot write to kernel cache " + config.directory +
                   " (" + std::strerror(errno) + "); caching in memory only");
      usable = false;
      return "";
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    warnOnce("unwritable", "te-mlir: cannot publish kernel cache entry " +
                               path + " (" + std::strerror(errno) +
                               "); caching in memory only");
    usable = false;
    return "";
  }
  evictToLimit(path);
  return path;
}

void DiskCache::publishAlias(const std::string &alias, const std::string &key,
                             const std::string &note) {
  if (!usable)
    return;
  std::string path = config.directory + "/" + alias + ".ref";
  std::string temporary = path + ".tmp-" + uniqueSuffix();
  if (!writeNewFile(temporary, key + "\n" + note)) {
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
  if (!readTrustedFile(config.directory + "/" + alias + ".ref", contents,
                       untrusted))
    return "";
  // A key is 64 hex digits on the first line; anything else is a damaged
  // alias: a miss.
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
