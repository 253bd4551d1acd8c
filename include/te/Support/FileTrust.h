//===- FileTrust.h - Opening the files and libraries te-mlir loads -*- C++
//-*-===//
//
// Plugins, te-mlir's compiler and cached kernels are code that te-mlir
// loads: whoever can write such a file, or the directory it is in, can run
// code in every process that loads it. A checksum detects damage, not a
// planted library. So every file and library te-mlir loads from a path goes
// through one routine: the file is opened once (never blocking: a FIFO or a
// device is refused, not waited on), the descriptor is checked (a regular
// file, owned by the user running te-mlir or by root, writable by nobody
// else, in a directory with the same owners that nobody else can change),
// and that very descriptor is what is read; a library is dlopen'ed through
// a descriptor of its checked directory (/proc/self/fd/D/NAME, NAME
// confirmed to still be the checked file), so a file renamed over the
// checked one by another user is never loaded (lib/Support/FileTrust.cpp
// says why not /proc/self/fd/N of the file itself).
//
// Free of MLIR and LLVM: the runtime, the kernel cache, the .npy reader and
// the plugin loader all link it (the static library TEFileTrust, hidden in
// each of them).
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_FILETRUST_H
#define TE_SUPPORT_FILETRUST_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace te::support {

/// Why a file or directory with status `info` may not be trusted with code,
/// or "" when it may: it must be owned by the current user (or by root when
/// `rootMayOwn`) and not be writable by its group or by others.
inline std::string describeUntrusted(const struct stat &info, bool rootMayOwn) {
  uid_t self = geteuid();
  if (info.st_uid != self && !(rootMayOwn && info.st_uid == 0))
    return "is owned by another user (uid " + std::to_string(info.st_uid) +
           "; this process runs as uid " + std::to_string(self) + ")";
  if (info.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(info.st_mode & 07777));
    return std::string("is writable by ") +
           ((info.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
           mode + ")";
  }
  return "";
}

/// Why the directory with status `info` may not hold files te-mlir loads
/// code from, or "": it must be owned by the current user (or root when
/// `rootMayOwn`), and writable by its group or others only with the sticky
/// bit (as /tmp), where nobody can rename or remove another user's files.
std::string describeUntrustedDirectory(const struct stat &info,
                                       bool rootMayOwn);

/// "a FIFO (named pipe)", "a directory", "a character device", ...: what a
/// file of mode `mode` is, for messages about files that are not regular.
std::string describeFileType(mode_t mode);

/// What openChecked requires of a file beyond being a regular file.
struct FileRules {
  /// Code, or data that decides which code runs: the file must be owned by
  /// this user (or root, with rootMayOwn) and writable by nobody else, and
  /// so must its directory (see describeUntrustedDirectory). Off for data
  /// (.npy inputs), which only has to be a regular file.
  bool requireTrusted = true;
  bool rootMayOwn = true;
  /// Check the directory too: the one the path names and, where a symbolic
  /// link led elsewhere, the one the file is in.
  bool checkDirectory = true;
  /// A symbolic link as the last component is refused (O_NOFOLLOW), as the
  /// kernel cache refuses linked entries.
  bool refuseSymlink = false;
  /// Larger files are refused (0: no limit).
  uint64_t maxBytes = 0;

  /// The rules for a library te-mlir loads from a path it was given:
  /// plugins, runtime plugins, its compiler, kernel modules.
  static FileRules library() { return FileRules(); }
  /// The rules for files of this user's own making (kernel cache entries,
  /// the compiler's output): owned by this user, not by root, no links;
  /// their directory is checked where it is opened.
  static FileRules ownFile(uint64_t maxBytes = 0) {
    FileRules rules;
    rules.rootMayOwn = false;
    rules.checkDirectory = false;
    rules.refuseSymlink = true;
    rules.maxBytes = maxBytes;
    return rules;
  }
  /// The rules for data: any regular file.
  static FileRules data() {
    FileRules rules;
    rules.requireTrusted = false;
    rules.checkDirectory = false;
    return rules;
  }
};

/// Why a file could not be opened as asked.
enum class FileProblem {
  None,
  /// The path names nothing.
  Missing,
  /// open(2) failed otherwise (permissions, ...).
  CannotOpen,
  /// A symbolic link under FileRules::refuseSymlink.
  SymbolicLink,
  /// A FIFO, device, socket or directory.
  NotRegular,
  /// Owner or mode of the file or its directory (FileRules::requireTrusted).
  Untrusted,
  /// Larger than FileRules::maxBytes.
  TooLarge,
  /// Reading, or the dynamic loader, failed.
  LoadFailed,
};

/// A descriptor openChecked opened and checked; closed on destruction.
class CheckedFile {
public:
  CheckedFile() = default;
  CheckedFile(int descriptor, const struct stat &info)
      : descriptor(descriptor), info(info) {}
  CheckedFile(CheckedFile &&other) noexcept;
  CheckedFile &operator=(CheckedFile &&other) noexcept;
  CheckedFile(const CheckedFile &) = delete;
  CheckedFile &operator=(const CheckedFile &) = delete;
  ~CheckedFile();

  bool isOpen() const { return descriptor >= 0; }
  explicit operator bool() const { return isOpen(); }
  int fd() const { return descriptor; }
  /// fstat of the descriptor when it was checked.
  const struct stat &status() const { return info; }
  /// Gives up the descriptor (the caller closes it).
  int release();
  /// The whole file, read through the descriptor from its start; false,
  /// with `error`, when reading fails or the file grew past `maxBytes`
  /// (0: no limit).
  bool readAll(std::string &contents, std::string &error,
               uint64_t maxBytes = 0) const;
  /// Where the opened file is now (readlink of /proc/self/fd/N), or "".
  std::string realPath() const;

private:
  int descriptor = -1;
  struct stat info = {};
};

/// Opens `path` for reading once and checks the descriptor against
/// `rules`: O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY (and O_NOFOLLOW
/// under refuseSymlink), then fstat. On failure returns a closed
/// CheckedFile, sets `problem` and `why`: a phrase that follows the file's
/// name, such as "does not exist", "is a FIFO (named pipe), not a regular
/// file", "is writable by others (mode 0666)" or "is in /some/dir, which is
/// writable by others without the sticky bit (mode 0777)". When open(2)
/// itself failed, errno is its error on return.
CheckedFile openChecked(const std::string &path, const FileRules &rules,
                        FileProblem &problem, std::string &why);

/// A shared library that te-mlir loaded through a descriptor.
struct LoadedLibrary {
  void *handle = nullptr;
  /// The descriptor of the library's directory that the loader's name of
  /// it goes through (-1 for an anonymous file): open while loaded, so that
  /// what dladdr reports leads to the library's directory.
  int fd = -1;
};

/// Loads the library at `path` under `rules` (usually FileRules::library()):
/// openChecked; then the same checks of its dependencies that the dynamic
/// loader will find relative to the library itself ($ORIGIN in its RUNPATH
/// or RPATH, as installed te-mlir libraries have) and has not loaded yet,
/// and of theirs (checked, not loaded: the loader loads them with the
/// library, in its one symbol scope); then
/// dlopen("/proc/self/fd/D/NAME", flags), D a descriptor of the directory
/// the checked file is in (checked by fstat) and NAME its name there,
/// confirmed by fstatat to be the checked file. False on failure, with
/// `problem` and `why` as openChecked sets them, or FileProblem::LoadFailed
/// and the loader's message (which names `path`). `library` receives the
/// handle and the directory's descriptor; release with unloadLibrary.
bool loadLibrary(const std::string &path, const FileRules &rules, int flags,
                 LoadedLibrary &library, FileProblem &problem,
                 std::string &why);

/// Like loadLibrary, for a file already opened and checked: takes `file`
/// over. `path` names it in messages and locates its $ORIGIN ("" for an
/// anonymous file such as a memfd: no dependencies are looked for).
bool loadLibrary(CheckedFile file, const std::string &path,
                 const FileRules &rules, int flags, LoadedLibrary &library,
                 FileProblem &problem, std::string &why);

/// dlopen("/proc/self/fd/N") of a descriptor te-mlir created itself (a
/// memfd holding a kernel image): no checks, no dependencies. Takes `fd`
/// over, also on failure.
bool loadLibraryFromDescriptor(int fd, const std::string &displayName,
                               int flags, LoadedLibrary &library,
                               std::string &why);

/// dlclose's the library, closes its directory's descriptor and resets
/// `library`.
void unloadLibrary(LoadedLibrary &library);

} // namespace te::support

#endif // TE_SUPPORT_FILETRUST_H
