//===- te-opt.cpp - The te-mlir optimizer driver --------------------------===//
//
// mlir-opt for te programs: parses, verifies, runs passes and prints. Plugins
// come from NVTE_PLUGIN and from --te-plugin=LIST (after those of
// NVTE_PLUGIN); --te-print-plugin-info lists them and exits, with status 1
// when one of them could not be loaded.
//
//===----------------------------------------------------------------------===//

#include "te/InitAllDialects.h"
#include "te/InitAllPasses.h"
#include "te/JIT/KernelCompiler.h"
#include "te/Plugin/PluginManager.h"
#include "te/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace mlir::te::plugin;

static void printVersion(llvm::raw_ostream &os) {
  os << "te-mlir " << TE_MLIR_VERSION << " (" << TE_MLIR_GIT_REVISION
     << ")\n  built with LLVM/MLIR " << TE_MLIR_LLVM_VERSION << "\n";
}

// Declared for --help; the values are taken from argv before MlirOptMain
// parses it, because plugins must be loaded before the pass pipeline is
// built.
static llvm::cl::list<std::string> pluginOption(
    "te-plugin",
    llvm::cl::desc("Load te-mlir plugins (comma-separated paths or names), "
                   "after those of NVTE_PLUGIN"),
    llvm::cl::value_desc("list"));
static llvm::cl::opt<bool> printPluginInfoOption(
    "te-print-plugin-info",
    llvm::cl::desc("List available, active and failed plugins and exit "
                   "(with status 1 if a listed plugin failed to load)"));

int main(int argc, char **argv) {
  llvm::cl::AddExtraVersionPrinter(printVersion);

  std::vector<std::string> plugins;
  bool printPluginInfo = false;
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (i > 0 && (arg.consume_front("--te-plugin=") ||
                  arg.consume_front("-te-plugin="))) {
      plugins.push_back(arg.str());
      continue;
    }
    if (i > 0 &&
        (arg == "--te-print-plugin-info" || arg == "-te-print-plugin-info")) {
      printPluginInfo = true;
      continue;
    }
    rest.push_back(argv[i]);
  }

  // Built-in targets first: plugins may not claim their devices.
  mlir::te::registerBuiltinTargets();
  PluginManager &manager = PluginManager::get();
  std::string error;
  bool loaded = succeeded(manager.loadFromEnvironment(&error));
  for (const std::string &list : plugins)
    if (loaded)
      loaded = succeeded(manager.load(list, "--te-plugin", &error));
  if (printPluginInfo) {
    manager.printInfo(llvm::outs());
    // The table shows the failures; the exit status tells scripts that a
    // plugin they asked for is not there, strict mode or not.
    std::vector<std::string> failures = manager.getFailures();
    for (const std::string &failure : failures)
      llvm::errs() << "te-opt: error: " << failure << "\n";
    return loaded && failures.empty() ? 0 : 1;
  }
  if (!loaded) {
    llvm::errs() << "te-opt: error: " << error << "\n";
    return 1;
  }

  mlir::DialectRegistry registry;
  mlir::te::registerAllDialects(registry);
  manager.registerDialects(registry);
  mlir::te::registerAllPasses();
  int restCount = static_cast<int>(rest.size());
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      restCount, rest.data(), "te-mlir optimizer driver\n", registry));
}
