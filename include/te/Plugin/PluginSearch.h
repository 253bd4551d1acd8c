//===- PluginSearch.h - Where a plugin named in NVTE_PLUGIN lives -*- C++
//-*-===//
//
// Plain C++ (no MLIR), so that both the plugin loader and the kernel cache,
// which keys entries on the plugin files without loading them, resolve a
// plugin spec the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGIN_PLUGINSEARCH_H
#define TE_PLUGIN_PLUGINSEARCH_H

#include "te/Version.h"

#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace te::plugin {

/// The entries of a comma-separated list, trimmed, empty ones dropped.
inline std::vector<std::string> splitList(const std::string &list,
                                          char separator) {
  std::vector<std::string> entries;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(separator, start);
    if (end == std::string::npos)
      end = list.size();
    std::string entry = list.substr(start, end - start);
    size_t first = entry.find_first_not_of(" \t");
    size_t last = entry.find_last_not_of(" \t");
    if (first != std::string::npos)
      entries.push_back(entry.substr(first, last - first + 1));
    start = end + 1;
  }
  return entries;
}

/// The installed plugin directory of a te-mlir whose libraries sit beside
/// `libraryPath` (e.g. libTECompiler.so): <libdir>/te-mlir/plugins.
inline std::string pluginDirectoryBeside(const std::string &libraryPath) {
  return libraryPath.substr(0, libraryPath.find_last_of('/') + 1) +
         TE_MLIR_PLUGIN_SUBDIR;
}

/// The directories searched for a plugin named without a path: the
/// absolute directories of TE_PLUGIN_PATH (colon-separated), then
/// `installedDirectory`. The current directory is never searched: relative
/// and empty entries of TE_PLUGIN_PATH are ignored, because which plugin
/// they find would depend on where the program runs.
inline std::vector<std::string>
pluginDirectories(const std::string &installedDirectory) {
  const char *path = std::getenv("TE_PLUGIN_PATH");
  std::vector<std::string> directories;
  for (std::string &directory : splitList(path ? path : "", ':'))
    if (directory[0] == '/')
      directories.push_back(std::move(directory));
  directories.push_back(installedDirectory);
  return directories;
}

/// The library file of `spec`: the spec itself when it contains a '/',
/// otherwise the first regular file among DIR/SPEC, DIR/libSPEC.so and
/// DIR/SPEC.so over the plugin directories; empty if there is none.
inline std::string findPluginLibrary(const std::string &spec,
                                     const std::string &installedDirectory) {
  if (spec.find('/') != std::string::npos)
    return spec;
  for (const std::string &directory : pluginDirectories(installedDirectory))
    for (const std::string &file : {spec, "lib" + spec + ".so", spec + ".so"}) {
      std::string candidate = directory + "/" + file;
      struct stat info;
      if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode))
        return candidate;
    }
  return {};
}

} // namespace te::plugin

#endif // TE_PLUGIN_PLUGINSEARCH_H
