//===- FileTrust.h - Whether a file may hold code te-mlir loads --*- C++
//-*-===//
//
// Plugins and cached kernels are code that te-mlir dlopens: whoever can
// write such a file, or the directory it is in, can run code in every
// process that loads it. A checksum detects damage, not a planted library.
// So te-mlir loads code only from files (and a cache only from a directory)
// that nobody but their owner can write, owned by the user running it (or,
// for installed plugins, root). Header-only and free of MLIR, for the
// runtime, the kernel cache and the plugin loader alike.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_FILETRUST_H
#define TE_SUPPORT_FILETRUST_H

#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

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

/// describeUntrusted for the file `path` (symbolic links followed): the
/// reason not to load code from it, or "" when it may be loaded.
inline std::string describeUntrustedPath(const std::string &path,
                                         bool rootMayOwn) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return "cannot be examined";
  return describeUntrusted(info, rootMayOwn);
}

} // namespace te::support

#endif // TE_SUPPORT_FILETRUST_H
