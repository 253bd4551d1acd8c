//===- CompileRecorder.h - Stage times and IR dumps of a compile -*- C++
//-*-===//
//
// What every compile records besides its output, whichever target it is
// for: how long each stage took (te-run -v) and, with TE_DUMP_DIR, the IR
// after each stage. Targets' serializers record into the compile's
// recorder through CompileRecorder::getCurrent, so the target interface
// does not have to carry it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TARGET_COMPILERECORDER_H
#define TE_TARGET_COMPILERECORDER_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
#include <vector>

namespace mlir::te {

/// What one compile records besides its output: how long each stage took
/// and, with a dump directory (TE_DUMP_DIR), the IR after each stage in
/// numbered files, `NN-<stage>.<ext>`. A compile makes its recorder the
/// current one of its thread while it runs (Scope), so that what a target's
/// serializer calls, writeHostKernelLibrary, records into it too without the
/// plugin interface having to carry it.
class CompileRecorder {
public:
  struct Stage {
    std::string name;
    double milliseconds;
  };

  /// `dumpDirectory`: where the stages' IR goes; "" for nowhere.
  explicit CompileRecorder(std::string dumpDirectory = "")
      : dumpDirectory(std::move(dumpDirectory)) {}

  /// The recorder of the compile running on this thread, or null.
  static CompileRecorder *getCurrent();

  /// Makes a recorder (or none) the current one of this thread for its
  /// lifetime.
  class Scope {
  public:
    explicit Scope(CompileRecorder *recorder);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    CompileRecorder *previous;
  };

  const std::vector<Stage> &getStages() const { return stages; }
  void addStage(StringRef name, double milliseconds);

  bool isDumping() const { return !dumpDirectory.empty(); }
  const std::string &getDumpDirectory() const { return dumpDirectory; }
  /// Creates the dump directory and removes the numbered files an earlier
  /// compile left there. Fails with *error set.
  LogicalResult prepareDumpDirectory(std::string *error);
  /// Writes the next numbered dump, `NN-<name>.<extension>`, with what
  /// `print` writes; nothing when not dumping. The first failure is kept
  /// (getDumpError) and ends dumping.
  void dump(StringRef name, StringRef extension,
            function_ref<void(raw_ostream &)> print);
  /// The first dump that could not be written ("" if none).
  const std::string &getDumpError() const { return dumpError; }

private:
  std::string dumpDirectory;
  std::string dumpError;
  unsigned nextDump = 0;
  std::vector<Stage> stages;
};

/// Times a stage of the compile (its name must outlive the timer) into the
/// current recorder, if any, when it goes out of scope.
class StageTimer {
public:
  explicit StageTimer(StringRef name)
      : name(name), start(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    if (CompileRecorder *recorder = CompileRecorder::getCurrent())
      recorder->addStage(name, std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
  }
  StageTimer(const StageTimer &) = delete;
  StageTimer &operator=(const StageTimer &) = delete;

private:
  StringRef name;
  std::chrono::steady_clock::time_point start;
};

/// Writes `bytes` to `path` ("-": stdout); a failure is an error at `loc`.
LogicalResult writeOutputFile(Location loc, StringRef path, StringRef bytes);

} // namespace mlir::te

#endif // TE_TARGET_COMPILERECORDER_H
