//===- FileTrust.cpp - Opening the files and libraries te-mlir loads ------===//
//
// See te/Support/FileTrust.h. How a checked file reaches the dynamic
// loader:
//
// * The loader opens a path itself; te-mlir gives it one that goes through
//   descriptors it holds: /proc/self/fd/D/NAME, D being the directory the
//   checked file really is in, opened once (O_PATH) and checked by fstat,
//   and NAME the file's name there, confirmed by fstatat to still be the
//   file checked (same device and inode). Only the directory's owner (this
//   user or root, by the rules) can change its entries, and in a sticky
//   directory nobody but the file's owner (also this user or root) can
//   replace it, so the loader opens the file that was checked. Through D,
//   the loader's $ORIGIN and the name dladdr reports are the real
//   directory: libraries find their dependencies beside them (installed
//   te-mlir libraries have RUNPATH $ORIGIN/../lib) and plugins find their
//   own files beside themselves. D stays open while the library is loaded.
//   (Loading /proc/self/fd/N of the file itself breaks both: $ORIGIN would
//   be /proc/self/fd.) Once loaded, the library is renamed in the loader's
//   records to its real path (nameAfterFile): what dladdr reports must make
//   sense to other processes too (a plugin hands the linker the path of a
//   library beside itself).
// * glibc knows a library by the name it was opened under, and hands the
//   loaded library out again for the same name without opening anything,
//   while /proc/self/fd/D names whatever descriptor D is at the time. So
//   every load uses a name the loader has never seen: /proc/self/fd/
//   followed by a unique sequence of "./" and "../fd/" components (each
//   leads back to /proc/self/fd), then D. An anonymous file (a memfd
//   holding a kernel image) is loaded the same way as /proc/self/fd/N.
// * The dependencies a library finds beside itself ($ORIGIN) are checked
//   the same way first (checked only: the loader loads them with the
//   library, in the library's one symbol scope).
//
//===----------------------------------------------------------------------===//

#include "te/Support/FileTrust.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <mutex>
#include <random>
#include <utility>

using namespace te::support;

namespace {

std::string octalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o",
                static_cast<unsigned>(mode & 07777));
  return text;
}

/// The directory `path` names its file in: "." for a bare name.
std::string parentDirectory(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string errnoText(int error) { return std::strerror(error); }

} // namespace

std::string te::support::describeFileType(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISREG(mode))
    return "a regular file";
  return "a special file";
}

std::string te::support::describeUntrustedDirectory(const struct stat &info,
                                                    bool rootMayOwn) {
  uid_t self = geteuid();
  if (info.st_uid != self && !(rootMayOwn && info.st_uid == 0))
    return "is owned by another user (uid " + std::to_string(info.st_uid) +
           "; this process runs as uid " + std::to_string(self) + ")";
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) && !(info.st_mode & S_ISVTX))
    return std::string("is writable by ") +
           ((info.st_mode & S_IWOTH) ? "others" : "its group") +
           " without the sticky bit (mode " + octalMode(info.st_mode) + ")";
  return "";
}

//===----------------------------------------------------------------------===//
// CheckedFile
//===----------------------------------------------------------------------===//

CheckedFile::CheckedFile(CheckedFile &&other) noexcept
    : descriptor(other.descriptor), info(other.info) {
  other.descriptor = -1;
}

CheckedFile &CheckedFile::operator=(CheckedFile &&other) noexcept {
  if (this != &other) {
    if (descriptor >= 0)
      ::close(descriptor);
    descriptor = other.descriptor;
    info = other.info;
    other.descriptor = -1;
  }
  return *this;
}

CheckedFile::~CheckedFile() {
  if (descriptor >= 0)
    ::close(descriptor);
}

int CheckedFile::release() {
  int fd = descriptor;
  descriptor = -1;
  return fd;
}

bool CheckedFile::readAll(std::string &contents, std::string &error,
                          uint64_t maxBytes) const {
  contents.clear();
  if (descriptor < 0) {
    error = "is not open";
    return false;
  }
  if (maxBytes && uint64_t(info.st_size) > maxBytes) {
    error = "is too large (" + std::to_string(info.st_size) +
            " bytes; at most " + std::to_string(maxBytes) + ")";
    return false;
  }
  try {
    contents.reserve(static_cast<size_t>(info.st_size));
    char buffer[1 << 16];
    off_t offset = 0;
    for (;;) {
      ssize_t count = ::pread(descriptor, buffer, sizeof(buffer), offset);
      if (count < 0 && errno == EINTR)
        continue;
      if (count < 0) {
        error = "cannot be read (" + errnoText(errno) + ")";
        return false;
      }
      if (count == 0)
        break;
      contents.append(buffer, static_cast<size_t>(count));
      offset += count;
      if (maxBytes && contents.size() > maxBytes) {
        error =
            "grew past " + std::to_string(maxBytes) + " bytes while being read";
        return false;
      }
    }
  } catch (const std::bad_alloc &) {
    error = "is too large to read into memory (" +
            std::to_string(info.st_size) + " bytes)";
    return false;
  }
  return true;
}

std::string CheckedFile::realPath() const {
  if (descriptor < 0)
    return "";
  char target[PATH_MAX];
  std::string link = "/proc/self/fd/" + std::to_string(descriptor);
  ssize_t size = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (size <= 0 || target[0] != '/')
    return "";
  return std::string(target, static_cast<size_t>(size));
}

//===----------------------------------------------------------------------===//
// openChecked
//===----------------------------------------------------------------------===//

CheckedFile te::support::openChecked(const std::string &path,
                                     const FileRules &rules,
                                     FileProblem &problem, std::string &why) {
  problem = FileProblem::None;
  why.clear();
  auto refuse = [&](FileProblem kind, std::string reason) {
    problem = kind;
    why = std::move(reason);
    return CheckedFile();
  };
  if (path.empty())
    return refuse(FileProblem::Missing, "does not exist (the path is empty)");
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer, forever; the descriptor is refused below anyway.
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (rules.refuseSymlink)
    flags |= O_NOFOLLOW;
  int fd;
  do
    fd = ::open(path.c_str(), flags);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int error = errno;
    struct stat link, target;
    CheckedFile none;
    if (rules.refuseSymlink && error == ELOOP &&
        ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
      none = refuse(FileProblem::SymbolicLink, "is a symbolic link");
    else if (error == ENOENT)
      none = refuse(FileProblem::Missing, "does not exist");
    else if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode))
      none = refuse(FileProblem::NotRegular,
                    "is " + describeFileType(target.st_mode) +
                        ", not a regular file");
    else
      none = refuse(FileProblem::CannotOpen,
                    "cannot be opened (" + errnoText(error) + ")");
    errno = error;
    return none;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    return refuse(FileProblem::CannotOpen,
                  "cannot be examined (" + errnoText(error) + ")");
  }
  CheckedFile file(fd, info);
  if (!S_ISREG(info.st_mode))
    return refuse(FileProblem::NotRegular, "is " +
                                               describeFileType(info.st_mode) +
                                               ", not a regular file");
  // Regular files ignore O_NONBLOCK; cleared all the same.
  int status = ::fcntl(fd, F_GETFL);
  if (status >= 0)
    (void)::fcntl(fd, F_SETFL, status & ~O_NONBLOCK);
  if (rules.requireTrusted) {
    if (std::string reason = describeUntrusted(info, rules.rootMayOwn);
        !reason.empty())
      return refuse(FileProblem::Untrusted, reason);
  }
  if (rules.maxBytes && uint64_t(info.st_size) > rules.maxBytes)
    return refuse(FileProblem::TooLarge,
                  "is too large (" + std::to_string(info.st_size) +
                      " bytes; at most " + std::to_string(rules.maxBytes) +
                      ")");
  if (rules.requireTrusted && rules.checkDirectory) {
    // The directory the path names the file in and, where symbolic links
    // led elsewhere, the one the opened file is in: whoever can write
    // either could have put another file there.
    std::vector<std::string> directories = {parentDirectory(path)};
    std::string real = file.realPath();
    if (!real.empty())
      directories.push_back(parentDirectory(real));
    std::vector<std::pair<dev_t, ino_t>> seen;
    for (const std::string &directory : directories) {
      struct stat directoryInfo;
      if (::stat(directory.c_str(), &directoryInfo) != 0)
        return refuse(FileProblem::Untrusted,
                      "is in " + directory + ", which cannot be examined (" +
                          errnoText(errno) + ")");
      std::pair<dev_t, ino_t> id{directoryInfo.st_dev, directoryInfo.st_ino};
      if (std::find(seen.begin(), seen.end(), id) != seen.end())
        continue;
      seen.push_back(id);
      if (std::string reason =
              describeUntrustedDirectory(directoryInfo, rules.rootMayOwn);
          !reason.empty())
        return refuse(FileProblem::Untrusted,
                      "is in " + directory + ", which " + reason);
    }
  }
  return file;
}

//===----------------------------------------------------------------------===//
// Loading libraries
//===----------------------------------------------------------------------===//

namespace {

/// A name for descriptor `fd` that the dynamic loader has never seen (see
/// the top of this file): 48 bits of a per-copy random start plus a
/// counter, spelled as "./" (0) and "../fd/" (1) after /proc/self/fd/.
std::string freshDescriptorName(int fd) {
  static const uint64_t start = [] {
    uint64_t seed = uint64_t(::getpid()) * 0x9E3779B97F4A7C15ull ^
                    uint64_t(std::time(nullptr));
    try {
      std::random_device device;
      seed ^= (uint64_t(device()) << 32) ^ device();
    } catch (...) {
    }
    // The address of this copy of the routine (each library linking it
    // has one) tells copies apart even with a poor seed.
    return seed ^ uint64_t(reinterpret_cast<uintptr_t>(&parentDirectory));
  }();
  static std::atomic<uint64_t> counter{0};
  uint64_t value = start + counter.fetch_add(1);
  std::string name = "/proc/self/fd/";
  for (int bit = 0; bit < 48; ++bit)
    name += (value >> bit) & 1 ? "../fd/" : "./";
  return name + std::to_string(fd);
}

/// `text` with every `from` replaced by `to`.
std::string replaceAll(std::string text, const std::string &from,
                       const std::string &to) {
  if (from.empty())
    return text;
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

bool readAt(int fd, void *buffer, size_t size, uint64_t offset) {
  char *bytes = static_cast<char *>(buffer);
  while (size > 0) {
    ssize_t count = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (count < 0 && errno == EINTR)
      continue;
    if (count <= 0)
      return false;
    bytes += count;
    size -= static_cast<size_t>(count);
    offset += static_cast<uint64_t>(count);
  }
  return true;
}

/// What the dynamic section of an ELF shared library says about its
/// dependencies.
struct DynamicInfo {
  std::vector<std::string> needed;
  std::string runpath, rpath;
  bool hasRunpath = false, hasRpath = false;
};

/// Reads DT_NEEDED, DT_RUNPATH and DT_RPATH of the 64-bit native-endian ELF
/// file `fd` of `size` bytes; false when it is not one or is malformed (the
/// dynamic loader then says what is wrong).
bool readDynamicInfo(int fd, uint64_t size, DynamicInfo &out) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr unsigned char kNativeData = ELFDATA2LSB;
#else
  constexpr unsigned char kNativeData = ELFDATA2MSB;
#endif
  auto fits = [&](uint64_t offset, uint64_t bytes) {
    return offset <= size && bytes <= size - offset;
  };
  Elf64_Ehdr header;
  if (!fits(0, sizeof(header)) || !readAt(fd, &header, sizeof(header), 0))
    return false;
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != kNativeData ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 ||
      header.e_phnum > 4096 ||
      !fits(header.e_phoff, uint64_t(header.e_phnum) * sizeof(Elf64_Phdr)))
    return false;
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!readAt(fd, segments.data(), segments.size() * sizeof(Elf64_Phdr),
              header.e_phoff))
    return false;
  const Elf64_Phdr *dynamic = nullptr;
  for (const Elf64_Phdr &segment : segments)
    if (segment.p_type == PT_DYNAMIC)
      dynamic = &segment;
  if (!dynamic)
    return true; // nothing needed
  if (dynamic->p_filesz > (1u << 20) ||
      !fits(dynamic->p_offset, dynamic->p_filesz))
    return false;
  std::vector<Elf64_Dyn> entries(dynamic->p_filesz / sizeof(Elf64_Dyn));
  if (!entries.empty() &&
      !readAt(fd, entries.data(), entries.size() * sizeof(Elf64_Dyn),
              dynamic->p_offset))
    return false;
  uint64_t stringsAddress = 0, stringsSize = 0;
  bool haveStrings = false;
  std::vector<uint64_t> neededOffsets;
  uint64_t runpathOffset = 0, rpathOffset = 0;
  for (const Elf64_Dyn &entry : entries) {
    if (entry.d_tag == DT_NULL)
      break;
    switch (entry.d_tag) {
    case DT_NEEDED:
      neededOffsets.push_back(entry.d_un.d_val);
      break;
    case DT_RUNPATH:
      out.hasRunpath = true;
      runpathOffset = entry.d_un.d_val;
      break;
    case DT_RPATH:
      out.hasRpath = true;
      rpathOffset = entry.d_un.d_val;
      break;
    case DT_STRTAB:
      stringsAddress = entry.d_un.d_ptr;
      haveStrings = true;
      break;
    case DT_STRSZ:
      stringsSize = entry.d_un.d_val;
      break;
    default:
      break;
    }
  }
  if (!haveStrings || stringsSize == 0 || stringsSize > (16u << 20))
    return neededOffsets.empty() && !out.hasRunpath && !out.hasRpath;
  // DT_STRTAB is an address: find the file offset of the segment holding it.
  uint64_t stringsOffset = 0;
  bool mapped = false;
  for (const Elf64_Phdr &segment : segments)
    if (segment.p_type == PT_LOAD && segment.p_vaddr <= stringsAddress &&
        stringsAddress - segment.p_vaddr < segment.p_filesz) {
      stringsOffset = segment.p_offset + (stringsAddress - segment.p_vaddr);
      mapped = true;
      break;
    }
  if (!mapped || !fits(stringsOffset, stringsSize))
    return false;
  std::string strings(static_cast<size_t>(stringsSize), '\0');
  if (!readAt(fd, strings.data(), strings.size(), stringsOffset))
    return false;
  auto stringAt = [&](uint64_t offset) {
    if (offset >= strings.size())
      return std::string();
    size_t end = strings.find('\0', static_cast<size_t>(offset));
    return strings.substr(static_cast<size_t>(offset), end == std::string::npos
                                                           ? std::string::npos
                                                           : end - offset);
  };
  for (uint64_t offset : neededOffsets)
    if (std::string name = stringAt(offset); !name.empty())
      out.needed.push_back(name);
  if (out.hasRunpath)
    out.runpath = stringAt(runpathOffset);
  if (out.hasRpath)
    out.rpath = stringAt(rpathOffset);
  return true;
}

/// The entries of a search path list.
std::vector<std::string> splitSearchPath(const std::string &list,
                                         const char *separators) {
  std::vector<std::string> entries;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find_first_of(separators, start);
    if (end == std::string::npos)
      end = list.size();
    if (end > start)
      entries.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return entries;
}

/// A search directory: where, and whether it was found relative to the
/// library ($ORIGIN), which the loader cannot do for a descriptor.
struct SearchDirectory {
  std::string path;
  bool fromOrigin = false;
};

/// `entry` with $ORIGIN / ${ORIGIN} replaced by `origin`; "" for entries
/// with other substitutions ($LIB, $PLATFORM: left to the loader).
SearchDirectory expandOrigin(const std::string &entry,
                             const std::string &origin) {
  SearchDirectory directory;
  std::string text = entry;
  for (const char *token : {"${ORIGIN}", "$ORIGIN"}) {
    std::string expanded = replaceAll(text, token, origin);
    if (expanded != text)
      directory.fromOrigin = true;
    text = expanded;
  }
  if (text.find('$') != std::string::npos)
    return {};
  directory.path = text;
  return directory;
}

/// Checks, under `rules`, the libraries the file `fd` (really at `real`)
/// needs that the loader will find through its $ORIGIN and that are not
/// loaded yet, and theirs in turn; true unless one is refused, with
/// `problem` and `why` ("needs PATH, which ..."). Only checked: the loader
/// loads them with the library, in one scope, as it always does (loading
/// them one by one would give each its own symbol scope, and C++ symbols
/// that must be one in the process, such as MLIR's type ids, could then be
/// two). Each is in a directory that passed the same checks, which only
/// this user or root can change.
bool checkOriginDependencies(int fd, uint64_t size, const std::string &real,
                             const FileRules &rules, int depth,
                             std::vector<std::pair<dev_t, ino_t>> &visited,
                             FileProblem &problem, std::string &why) {
  DynamicInfo info;
  if (depth >= 16 || !readDynamicInfo(fd, size, info) || info.needed.empty())
    return true;
  std::string origin = parentDirectory(real);
  // The loader's order: DT_RPATH (only without DT_RUNPATH), then
  // LD_LIBRARY_PATH, then DT_RUNPATH; the system directories after them
  // never use $ORIGIN.
  std::vector<SearchDirectory> directories;
  auto add = [&](const std::string &list, const char *separators, bool expand) {
    for (const std::string &entry : splitSearchPath(list, separators)) {
      SearchDirectory directory =
          expand ? expandOrigin(entry, origin) : SearchDirectory{entry, false};
      if (!directory.path.empty())
        directories.push_back(directory);
    }
  };
  const char *libraryPath = std::getenv("LD_LIBRARY_PATH");
  if (!info.hasRunpath && info.hasRpath)
    add(info.rpath, ":", true);
  if (libraryPath)
    add(libraryPath, ":;", false);
  if (info.hasRunpath)
    add(info.runpath, ":", true);
  bool anyFromOrigin = std::any_of(
      directories.begin(), directories.end(),
      [](const SearchDirectory &directory) { return directory.fromOrigin; });
  if (!anyFromOrigin)
    return true;
  for (const std::string &needed : info.needed) {
    if (needed.find('/') != std::string::npos)
      continue;
    // Loaded already (by its name or DT_SONAME): the library will use it.
    if (void *handle = ::dlopen(needed.c_str(), RTLD_NOLOAD | RTLD_LAZY)) {
      ::dlclose(handle);
      continue;
    }
    (void)::dlerror();
    for (const SearchDirectory &directory : directories) {
      std::string candidate = directory.path + "/" + needed;
      struct stat candidateInfo;
      if (::stat(candidate.c_str(), &candidateInfo) != 0 ||
          !S_ISREG(candidateInfo.st_mode))
        continue;
      if (!directory.fromOrigin)
        break; // the loader finds it there, as for any program
      FileProblem dependencyProblem;
      std::string dependencyWhy;
      CheckedFile dependency =
          openChecked(candidate, rules, dependencyProblem, dependencyWhy);
      if (!dependency) {
        problem = dependencyProblem;
        why = "needs " + candidate + ", which " + dependencyWhy;
        return false;
      }
      std::pair<dev_t, ino_t> id{dependency.status().st_dev,
                                 dependency.status().st_ino};
      if (std::find(visited.begin(), visited.end(), id) != visited.end())
        break;
      visited.push_back(id);
      std::string dependencyReal = dependency.realPath();
      if (!checkOriginDependencies(
              dependency.fd(), uint64_t(dependency.status().st_size),
              dependencyReal.empty() ? candidate : dependencyReal, rules,
              depth + 1, visited, problem, why))
        return false;
      break;
    }
  }
  return true;
}

/// dlopen of `name` (a fresh name of a descriptor, see the top of this
/// file); the loader's message, with that name replaced by `displayName`,
/// on failure.
void *openByName(const std::string &name, const std::string &displayName,
                 int flags, std::string &why) {
  (void)::dlerror();
  void *handle = ::dlopen(name.c_str(), flags);
  if (!handle) {
    const char *error = ::dlerror();
    why = replaceAll(error ? error : "dlopen failed", name,
                     displayName.empty() ? "<anonymous library>" : displayName);
  }
  return handle;
}

/// Gives the library `handle` the name `real` in the loader's records, in
/// place of the /proc/self/fd/... name it was opened under: what dladdr and
/// dl_iterate_phdr report (a plugin finds its own files, and passes their
/// paths to other processes such as the linker, through dladdr; debuggers
/// and symbolizers read the files). Only a name this load gave is replaced
/// (a library loaded before, found by its inode, keeps its own). struct
/// link_map is public (<link.h>); the loader frees l_name when it unloads
/// the library, so the new one comes from malloc, and the old one is kept
/// (reachable) in case another thread is reading it.
void nameAfterFile(void *handle, const std::string &real) {
  struct link_map *map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name ||
      std::strncmp(map->l_name, "/proc/self/fd/", 14) != 0)
    return;
  char *name = ::strdup(real.c_str());
  if (!name)
    return;
  static std::mutex mutex;
  static auto *replaced = new std::vector<char *>();
  std::lock_guard<std::mutex> lock(mutex);
  replaced->push_back(map->l_name);
  map->l_name = name;
}

bool loadChecked(CheckedFile file, const std::string &path,
                 const FileRules &rules, int flags, LoadedLibrary &library,
                 FileProblem &problem, std::string &why) {
  library = LoadedLibrary();
  problem = FileProblem::None;
  why.clear();
  auto refuse = [&](FileProblem kind, std::string reason) {
    problem = kind;
    why = std::move(reason);
    return false;
  };
  // The file as it really is (symbolic links resolved): its directory,
  // opened once, is what the loader is given, and the name in it must
  // still be the file checked.
  std::string real = file.realPath();
  const std::string deleted = " (deleted)";
  if (real.size() < 2 || (real.size() > deleted.size() &&
                          real.compare(real.size() - deleted.size(),
                                       deleted.size(), deleted) == 0))
    return refuse(FileProblem::LoadFailed,
                  path + ": cannot be located through /proc/self/fd (is "
                         "/proc mounted?), or was removed");
  std::string base = real.substr(real.find_last_of('/') + 1);
  std::string directoryPath = parentDirectory(real);
  int directory =
      ::open(directoryPath.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0)
    return refuse(FileProblem::CannotOpen, "is in " + directoryPath +
                                               ", which cannot be opened (" +
                                               errnoText(errno) + ")");
  struct stat directoryInfo, entry;
  bool same =
      ::fstat(directory, &directoryInfo) == 0 &&
      ::fstatat(directory, base.c_str(), &entry, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(entry.st_mode) && entry.st_dev == file.status().st_dev &&
      entry.st_ino == file.status().st_ino;
  if (!same) {
    ::close(directory);
    return refuse(FileProblem::Untrusted,
                  "was replaced while being loaded (" + real +
                      " is no longer the file that was checked)");
  }
  if (rules.requireTrusted && rules.checkDirectory) {
    if (std::string reason =
            describeUntrustedDirectory(directoryInfo, rules.rootMayOwn);
        !reason.empty()) {
      ::close(directory);
      return refuse(FileProblem::Untrusted,
                    "is in " + directoryPath + ", which " + reason);
    }
  }
  std::vector<std::pair<dev_t, ino_t>> visited = {
      {file.status().st_dev, file.status().st_ino}};
  if (!checkOriginDependencies(file.fd(), uint64_t(file.status().st_size), real,
                               rules, /*depth=*/0, visited, problem, why)) {
    ::close(directory);
    return false;
  }
  // Nobody but the directory's owner (this user or root) can change its
  // entries, and in a sticky directory nobody but the file's owner (also
  // this user or root) can replace this one: the name still leads to the
  // file checked when the loader opens it.
  void *handle =
      openByName(freshDescriptorName(directory) + "/" + base, path, flags, why);
  if (!handle) {
    problem = FileProblem::LoadFailed;
    ::close(directory);
    return false;
  }
  library.handle = handle;
  nameAfterFile(handle, real);
  // Kept open while the library is loaded: the loader's $ORIGIN of it
  // (for libraries it opens later relative to itself) goes through this
  // descriptor.
  library.fd = directory;
  return true;
}

} // namespace

bool te::support::loadLibrary(const std::string &path, const FileRules &rules,
                              int flags, LoadedLibrary &library,
                              FileProblem &problem, std::string &why) {
  library = LoadedLibrary();
  CheckedFile file = openChecked(path, rules, problem, why);
  if (!file)
    return false;
  return loadLibrary(std::move(file), path, rules, flags, library, problem,
                     why);
}

bool te::support::loadLibrary(CheckedFile file, const std::string &path,
                              const FileRules &rules, int flags,
                              LoadedLibrary &library, FileProblem &problem,
                              std::string &why) {
  return loadChecked(std::move(file), path, rules, flags, library, problem,
                     why);
}

bool te::support::loadLibraryFromDescriptor(int fd,
                                            const std::string &displayName,
                                            int flags, LoadedLibrary &library,
                                            std::string &why) {
  library = LoadedLibrary();
  why.clear();
  void *handle = openByName(freshDescriptorName(fd), displayName, flags, why);
  // The mapping keeps the contents alive; the name is never used again.
  ::close(fd);
  if (!handle)
    return false;
  library.handle = handle;
  return true;
}

void te::support::unloadLibrary(LoadedLibrary &library) {
  if (library.handle)
    ::dlclose(library.handle);
  if (library.fd >= 0)
    ::close(library.fd);
  library = LoadedLibrary();
}
