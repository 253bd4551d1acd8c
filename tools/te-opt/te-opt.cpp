//===- te-opt.cpp - The te-mlir optimizer driver --------------------------===//
//
// mlir-opt for te programs: parses, verifies, runs passes and prints. Plugins
// come from NVTE_PLUGIN and from --te-plugin=LIST (after those of
// NVTE_PLUGIN); --te-print-plugin-info lists them and exits, with status 1
// when one of them could not be loaded. --help lists te's passes first.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/Environment.h"
#include "te/InitAllDialects.h"
#include "te/InitAllPasses.h"
#include "te/Plugin/PluginManager.h"
#include "te/Target/InitAllTargets.h"
#include "te/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
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

/// libLLVM registers the options of its code generators (AMDGPU, X86,
/// Polly, ...) as it is loaded, before main. te-opt generates no machine
/// code, so --help leaves them out: they are still accepted, and
/// --help-hidden lists them. MLIR's options are registered later, by
/// MlirOptMain, and stay.
static void hideCodeGeneratorOptions() {
  auto isGeneric = [](const llvm::cl::OptionCategory *category) {
    return category->getName() == "Generic Options"; // --help, --version
  };
  for (llvm::cl::Option *option :
       llvm::make_second_range(llvm::cl::getRegisteredOptions())) {
    if (option == std::addressof(pluginOption) ||
        option == &printPluginInfoOption ||
        llvm::any_of(option->Categories, isGeneric))
      continue;
    if (option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

/// The --help overview: te's pipelines and passes, which MLIR's pass list
/// (sorted by name) would scatter among the upstream ones.
static std::string helpOverview() {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "te-mlir optimizer driver\n\nte's pipelines and passes (with their "
        "options among all passes below):\n";
  for (llvm::StringRef argument : mlir::te::kTEPassArguments) {
    llvm::StringRef description;
    if (const mlir::PassPipelineInfo *pipeline =
            mlir::PassPipelineInfo::lookup(argument))
      description = pipeline->getPassDescription();
    else if (const mlir::PassInfo *pass = mlir::PassInfo::lookup(argument))
      description = pass->getPassDescription();
    os << "  " << llvm::left_justify(("--" + argument).str(), 26) << "  "
       << description << "\n";
  }
  return text;
}

/// The environment, at the end of --help.
static std::string helpEnvironment() {
  return "\nENVIRONMENT (what te's pipelines read; te-lower-target's arch= "
         "overrides TE_CUDA_ARCH):\n" +
         te::abi::formatEnvironmentHelp() +
         "  NVTE_PLUGIN, TE_PLUGIN_PATH, NVTE_PLUGIN_POLICY, NVTE_PLUGIN_DENY, "
         "NVTE_PLUGIN_STRICT: the plugins te-dispatch asks "
         "(docs/PluginAPI.md)\n";
}

int main(int argc, char **argv) {
  llvm::cl::AddExtraVersionPrinter(printVersion);
  static const std::string environment = helpEnvironment();
  static llvm::cl::extrahelp environmentHelp(environment.c_str());
  hideCodeGeneratorOptions();

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
  std::string overview = helpOverview();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(restCount, rest.data(), overview, registry));
}
