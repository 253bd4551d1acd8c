//===- te-opt.cpp - The te-mlir optimizer driver --------------------------===//
//
// mlir-opt for te programs: parses, verifies, runs passes and prints.
//
//===----------------------------------------------------------------------===//

#include "te/InitAllDialects.h"
#include "te/InitAllPasses.h"
#include "te/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

static void printVersion(llvm::raw_ostream &os) {
  os << "te-mlir " << TE_MLIR_VERSION << " (" << TE_MLIR_GIT_REVISION
     << ")\n  built with LLVM/MLIR " << TE_MLIR_LLVM_VERSION << "\n";
}

int main(int argc, char **argv) {
  llvm::cl::AddExtraVersionPrinter(printVersion);
  mlir::DialectRegistry registry;
  mlir::te::registerAllDialects(registry);
  mlir::te::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "te-mlir optimizer driver\n", registry));
}
