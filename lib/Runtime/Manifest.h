//===- Manifest.h - Parser for kernel module manifests ----------*- C++ -*-===//
//
// The manifest is the contract between te-mlir's JIT and the runtime (its
// format is documented in te/Runtime/Module.h). It comes from a loaded
// library and is therefore untrusted: the parser accepts exactly the
// documented format and reports anything else with its line number.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_MANIFEST_H
#define TE_LIB_RUNTIME_MANIFEST_H

#include "te/Runtime/Buffer.h"
#include "te/Runtime/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te::runtime {

struct ManifestArg {
  bool isOutput;
  te_dtype dtype;
  int rank;
  int64_t dims[TE_MAX_RANK];
  /// What an input's values must be like (version 2), "" when anything goes.
  std::string role;
};

/// One kernel launch (version 4) or library call (version 5) of an entry
/// that runs as several.
struct ManifestStep {
  enum class OperandKind { Argument, Temporary, Status };
  struct Operand {
    OperandKind kind;
    int index;
  };
  std::string symbol;
  /// For a library call (a `call` line, version 5): the library function
  /// and its parameters; `symbol` is then empty and the geometry unused.
  std::string function;
  std::string parameters;
  /// Line of the `step` or `call` directive, for messages.
  int line;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t sharedMemoryBytes = 0;
  std::vector<Operand> operands;
};

struct ManifestEntry {
  std::string name;
  std::string symbol;
  /// Line of the `entry` directive, for messages about the entry.
  int line;
  std::vector<ManifestArg> args;
  /// Whether the kernel takes a status argument after `args` (version 2),
  /// and the messages of its checks, in order.
  bool hasStatus = false;
  std::vector<std::string> checks;
  /// The launch geometry (version 3); all zero when the entry gives none.
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  size_t sharedMemoryBytes = 0;
  bool hasLaunch = false;
  /// The byte sizes of the entry's temporary buffers and the kernels it
  /// launches in order (version 4); empty for a single-kernel entry.
  std::vector<size_t> temporaries;
  std::vector<ManifestStep> steps;
};

/// Parses a NUL-terminated manifest. On failure returns false and sets
/// `error` to a message starting with the offending line ("line 3: ...").
bool parseManifest(const char *text, std::vector<ManifestEntry> &entries,
                   std::string &error);

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_MANIFEST_H
