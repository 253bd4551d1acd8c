//===- Manifest.h - Kernel manifests, written and read ----------*- C++ -*-===//
//
// The manifest is the contract between a kernel module and the runtime
// that loads it: every entry's name, symbol, arguments, run-time checks
// and, for an entry that runs as several kernels and library calls, its
// steps. Its text format is documented in te/Runtime/Module.h. The
// compiler builds a `Manifest` and writes it with `writeManifest`; the
// runtime reads it with `readManifest`. Neither side builds or takes apart
// the text by hand, so what one writes the other reads.
//
// A manifest comes from a loaded library and is therefore untrusted:
// `readManifest` accepts exactly the documented format and reports
// anything else with its line number.
//
// Plain C++ (te/ABI's rule): no MLIR, LLVM or runtime types. The code is
// the static library TEABI, which the runtime and the compiler each link.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ABI_MANIFEST_H
#define TE_ABI_MANIFEST_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace te::abi {

/// The newest manifest version (TE_KERNEL_ABI_VERSION of te/Runtime/Module.h,
/// which the runtime checks against this): the reader takes every version
/// from 1 to this one.
inline constexpr int kNewestManifestVersion = 5;

/// The most dimensions an argument has (TE_MAX_RANK of te/Runtime/Buffer.h).
inline constexpr int kMaxManifestRank = 8;

/// A kernel element type: the position of its TE_KERNEL_ELEMENT_TYPE line
/// in ElementTypes.def, which is also its te_dtype.
enum class ElementType : int {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) ENUM,
#include "te/ABI/ElementTypes.def"
};

/// The MLIR spelling of `type` ("bf16"), or null when `type` is not one.
const char *getElementTypeName(ElementType type);
/// The storage size of one element (1 for i1), or 0 when `type` is not one.
size_t getElementTypeBytes(ElementType type);
/// The kernel element type spelled `name`.
std::optional<ElementType> lookUpElementType(std::string_view name);
/// Every spelling, for messages: "f32, f64, ..., i64".
const char *listElementTypes();

/// One argument of an entry: `in <type> <dims> [<role>]` or
/// `out <type> <dims>`.
struct ManifestArgument {
  bool isOutput = false;
  ElementType elementType = ElementType::F32;
  /// 0 for a scalar.
  int rank = 0;
  int64_t dims[kMaxManifestRank] = {};
  /// What an input's values must be like (version 2), "" when anything
  /// goes; outputs have none.
  std::string role;

  bool operator==(const ManifestArgument &other) const;
};

/// A grid launch: `<grid> <block> <shared-bytes>` (version 3).
struct LaunchGeometry {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t sharedMemoryBytes = 0;

  bool operator==(const LaunchGeometry &other) const;
};

/// What a step takes: argument N (a<N>), temporary N (t<N>) or the status
/// buffer (s).
struct ManifestOperand {
  enum class Kind { Argument, Temporary, Status };
  Kind kind = Kind::Argument;
  int index = 0;

  static ManifestOperand argument(int index) { return {Kind::Argument, index}; }
  static ManifestOperand temporary(int index) {
    return {Kind::Temporary, index};
  }
  static ManifestOperand status() { return {Kind::Status, 0}; }
  bool operator==(const ManifestOperand &other) const {
    return kind == other.kind && index == other.index;
  }
};

/// One kernel launch (a `step` line, version 4) or library call (a `call`
/// line, version 5) of an entry that runs as several.
struct ManifestStep {
  /// The kernel's symbol; empty for a library call.
  std::string symbol;
  /// A library call's function ("cublaslt.matmul") and its key=value
  /// parameters (te/ABI/LibraryCalls.h); empty for a kernel.
  std::string function;
  std::string parameters;
  /// A kernel's geometry; unused by a library call.
  LaunchGeometry geometry;
  std::vector<ManifestOperand> operands;
  /// The line read from, for messages; 0 for a step not read.
  int line = 0;

  static ManifestStep kernel(std::string symbol, LaunchGeometry geometry,
                             std::vector<ManifestOperand> operands);
  static ManifestStep call(std::string function, std::string parameters,
                           std::vector<ManifestOperand> operands);
  bool isCall() const { return !function.empty(); }
  /// Equal contents; the lines read from are not compared.
  bool operator==(const ManifestStep &other) const;
};

/// An entry's temporaries and steps (version 4): what a compiler plans
/// for an entry that does not run as one kernel.
struct StepPlan {
  /// The byte size of each temporary, t0 first.
  std::vector<size_t> temporaries;
  /// Where each `temp` line stands: temporary i is declared after the
  /// first `declaredAfterSteps[i]` steps (0, also for a missing value:
  /// before all of them). The format allows a temporary anywhere in its
  /// entry; keeping the place lets a plan read in program order (a GPU
  /// plan declares each buffer where the program allocates it) and a
  /// manifest read back exactly as it was written.
  std::vector<size_t> declaredAfterSteps;
  std::vector<ManifestStep> steps;

  /// Declares a temporary of `bytes` after the steps added so far and
  /// returns the operand that names it.
  ManifestOperand addTemporary(size_t bytes);
  /// Where temporary `index` is declared (declaredAfterSteps).
  size_t getDeclaredAfterSteps(size_t index) const {
    return index < declaredAfterSteps.size() ? declaredAfterSteps[index] : 0;
  }
  bool empty() const { return temporaries.empty() && steps.empty(); }
  /// Equal contents, the places of the `temp` lines included.
  bool operator==(const StepPlan &other) const;
};

/// One `entry <name> <symbol>` ... `end` block.
struct ManifestEntry {
  std::string name;
  std::string symbol;
  /// Inputs, then outputs.
  std::vector<ManifestArgument> arguments;
  /// Whether the kernel takes a status argument after the outputs
  /// (version 2), and its checks' messages, in order.
  bool hasStatus = false;
  std::vector<std::string> checks;
  /// The launch geometry of a single-kernel entry (version 3).
  std::optional<LaunchGeometry> launch;
  /// Empty for an entry that runs as its own symbol.
  StepPlan plan;
  /// The line of the `entry` directive, for messages; 0 when not read.
  int line = 0;

  /// Equal contents; the lines read from are not compared.
  bool operator==(const ManifestEntry &other) const;
};

struct Manifest {
  std::vector<ManifestEntry> entries;

  bool operator==(const Manifest &other) const {
    return entries == other.entries;
  }
};

/// The oldest version that states `manifest`: 1, or 2 with roles or
/// checks, 3 with a launch geometry, 4 with steps, 5 with library calls.
/// Writing the oldest keeps a manifest loadable by older runtimes.
int getManifestVersion(const Manifest &manifest);

/// `manifest` as text, in `getManifestVersion(manifest)`: per entry its
/// inputs, outputs, status and checks, launch, temporaries, then its steps
/// in order. Returns an empty string (and sets `error`) when the manifest
/// breaks a rule the reader enforces: an invalid name or symbol, an operand
/// naming nothing, a message with a line break, and so on.
std::string writeManifest(const Manifest &manifest, std::string &error);

/// Reads a NUL-terminated manifest into `manifest`. On failure returns
/// false and sets `error` to a message starting with the offending line
/// ("line 3: ..."). Manifests are capped at 16 MiB, so that an
/// unterminated string is not scanned through the address space.
bool readManifest(const char *text, Manifest &manifest, std::string &error);

/// An entry's plan as its `temp`, `step` and `call` lines, one string per
/// line, without '\n': how a compiler carries a plan in its IR (the cpu
/// target's `te.host_steps`) until the manifest is written.
std::vector<std::string> writeStepPlan(const StepPlan &plan);

/// Reads what writeStepPlan wrote into `plan`. Operands that name
/// temporaries are checked against the plan's; those that name arguments
/// or the status are checked when the manifest is read (the plan does not
/// know its entry). On failure sets `error` to a message starting with the
/// offending line, counted from 1 ("line 2: ...").
bool readStepPlan(const std::vector<std::string> &lines, StepPlan &plan,
                  std::string &error);

} // namespace te::abi

#endif // TE_ABI_MANIFEST_H
