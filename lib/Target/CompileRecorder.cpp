//===- CompileRecorder.cpp - Stage times and IR dumps of a compile -------===//

#include "te/Target/CompileRecorder.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::te;

namespace {
thread_local CompileRecorder *currentRecorder = nullptr;
} // namespace

CompileRecorder *CompileRecorder::getCurrent() { return currentRecorder; }

CompileRecorder::Scope::Scope(CompileRecorder *recorder)
    : previous(currentRecorder) {
  currentRecorder = recorder;
}

CompileRecorder::Scope::~Scope() { currentRecorder = previous; }

void CompileRecorder::addStage(StringRef name, double milliseconds) {
  stages.push_back({name.str(), milliseconds});
}

/// Dump files are `NN-<name>.<ext>`: two digits and a dash.
static bool isNumberedDump(StringRef filename) {
  return filename.size() > 3 && llvm::isDigit(filename[0]) &&
         llvm::isDigit(filename[1]) && filename[2] == '-';
}

LogicalResult CompileRecorder::prepareDumpDirectory(std::string *error) {
  if (!isDumping())
    return success();
  if (std::error_code ec = llvm::sys::fs::create_directories(dumpDirectory)) {
    *error =
        "TE_DUMP_DIR: cannot create " + dumpDirectory + ": " + ec.message();
    return failure();
  }
  // A file from an earlier compile of the program would pass for a stage
  // of this one.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dumpDirectory, ec), end;
       it != end && !ec; it.increment(ec))
    if (isNumberedDump(llvm::sys::path::filename(it->path())))
      llvm::sys::fs::remove(it->path());
  if (ec) {
    *error = "TE_DUMP_DIR: cannot list " + dumpDirectory + ": " + ec.message();
    return failure();
  }
  return success();
}

void CompileRecorder::dump(StringRef name, StringRef extension,
                           function_ref<void(raw_ostream &)> print) {
  if (!isDumping() || !dumpError.empty())
    return;
  SmallString<256> path(dumpDirectory);
  llvm::sys::path::append(
      path, llvm::formatv("{0:d2}-{1}.{2}", nextDump++, name, extension).str());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    print(os);
    os.flush();
    ec = os.error();
    // A stream destroyed with an error pending ends the process.
    os.clear_error();
  }
  if (ec)
    dumpError =
        "TE_DUMP_DIR: cannot write " + path.str().str() + ": " + ec.message();
}

LogicalResult mlir::te::writeOutputFile(Location loc, StringRef path,
                                        StringRef bytes) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return mlir::emitError(loc, error);
  file->os() << bytes;
  file->os().flush();
  if (std::error_code ec = file->os().error()) {
    // A stream destroyed with an error pending ends the process; the
    // ToolOutputFile removes what was written.
    file->os().clear_error();
    return mlir::emitError(loc, "cannot write ")
           << path << ": " << ec.message();
  }
  file->keep();
  return success();
}
