//===- KernelCompilerTest.cpp - Kernel compiles: refusals, stages ---------===//
//
// What compileKernelLibrary refuses before lowering anything, with the
// diagnostic it emits; what emitKernelArtifact writes at each stage.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/KernelCompiler.h"
#include "te/InitAllDialects.h"
#include "te/Plugin/PluginABI.h"
#include "te/Target/TargetRegistry.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

using namespace mlir;

namespace {

const char *kProgram = R"mlir(
func.func @amax(%x: tensor<8xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<8xf32> -> tensor<f32>
  return %a : tensor<f32>
}
)mlir";

/// Compiles kProgram with `options` to a path that is never written and
/// returns the diagnostics; expects the compile to fail.
std::string refusal(const te::KernelCompileOptions &options) {
  DialectRegistry registry;
  te::registerAllDialects(registry);
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kProgram, &ctx);
  EXPECT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  EXPECT_TRUE(failed(te::compileKernelLibrary(
      *module, options, "/nonexistent/te-kernel-never-written.so")));
  return diagnostics;
}

/// A target with nothing but the required members: no reference pipeline,
/// no intermediate files, no native lowering.
class BareTarget : public te::plugin::TargetBackend {
public:
  BareTarget() : TargetBackend("bare", "bare") {}
  te::plugin::TargetInfo getTargetInfo() const override {
    return {"bare", "bare-none-none", "bare-1", ""};
  }
  void buildPipeline(OpPassManager &) const override {}
  LogicalResult serialize(ModuleOp lowered, ArrayRef<te::KernelEntry>,
                          StringRef, StringRef, unsigned) const override {
    return lowered.emitError("bare: nothing to serialize");
  }
};

void registerBareTarget() {
  static const int owner = 0;
  if (!te::TargetRegistry::get().find("bare"))
    te::TargetRegistry::get().add(std::make_unique<BareTarget>(), &owner,
                                  "test", TE_PLUGIN_ABI_MINOR);
}

TEST(KernelCompiler, ReferenceNeedsATargetWithOne) {
  registerBareTarget();
  te::KernelCompileOptions options;
  options.reference = true;
  options.device = "bare";
  EXPECT_NE(refusal(options).find("target bare (test) for device 'bare' has "
                                  "no reference pipeline; reference kernels "
                                  "are built for the cpu device"),
            std::string::npos);
}

TEST(KernelCompiler, TargetWithoutNativeLoweringSaysSo) {
  registerBareTarget();
  te::KernelCompileOptions options;
  options.device = "bare";
  EXPECT_NE(refusal(options).find("target bare has no native lowering: "
                                  "te.amax needs a plugin provider that "
                                  "lowers it for this target"),
            std::string::npos);
}

TEST(KernelCompiler, DeviceWithoutTarget) {
  te::KernelCompileOptions options;
  options.device = "nope";
  EXPECT_NE(
      refusal(options).find("no target produces kernel modules for "
                            "device 'nope' (targets exist for: cpu, cuda"),
      std::string::npos);
}

TEST(KernelCompiler, EmitStopsAtEachStageAndRecordsIt) {
  DialectRegistry registry;
  te::registerAllDialects(registry);
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kProgram, &ctx);
  ASSERT_TRUE(module);
  SmallString<128> directory;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("te-emit-test", directory));
  struct Case {
    const char *kind;
    const char *needle;
    std::vector<std::string> stages;
  } cases[] = {
      {"mlir", "llvm.func @amax(", {"mlir-passes"}},
      {"llvm",
       "define void @amax__te_packed(",
       {"mlir-passes", "llvm-translate", "llvm-optimize"}},
      {"asm",
       "amax__te_packed:",
       {"mlir-passes", "llvm-translate", "llvm-optimize", "llvm-codegen"}},
      {"obj",
       "\x7f"
       "ELF",
       {"mlir-passes", "llvm-translate", "llvm-optimize", "llvm-codegen"}},
  };
  for (const Case &c : cases) {
    te::CompileRecorder recorder;
    te::KernelCompileOptions options;
    options.recorder = &recorder;
    std::string path = (directory + "/out." + c.kind).str();
    ASSERT_TRUE(
        succeeded(te::emitKernelArtifact(*module, options, c.kind, path)))
        << c.kind;
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer)) << c.kind;
    EXPECT_NE((*buffer)->getBuffer().find(c.needle), StringRef::npos) << c.kind;
    std::vector<std::string> stages;
    for (const te::CompileRecorder::Stage &stage : recorder.getStages())
      stages.push_back(stage.name);
    EXPECT_EQ(stages, c.stages) << c.kind;
  }
  llvm::sys::fs::remove_directories(directory);

  // What the target cannot stop at is refused with what it can.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    diagnostics += diag.str();
    return success();
  });
  te::KernelCompileOptions options;
  EXPECT_TRUE(
      failed(te::emitKernelArtifact(*module, options, "exe", "/nonexistent")));
  EXPECT_EQ(diagnostics,
            "device 'cpu' is compiled by target cpu (built-in), "
            "which cannot stop at 'exe'; it can emit mlir, module, llvm, "
            "asm, obj");
}

} // namespace
