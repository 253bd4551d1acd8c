//===- KernelCompilerTest.cpp - Kernel compiles: refusals, stages ---------===//
//
// What compileKernelLibrary refuses before lowering anything, with the
// diagnostic it emits; what emitKernelArtifact writes at each stage.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/KernelCompiler.h"
#include "te/InitAllDialects.h"

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

TEST(KernelCompiler, ReferenceIsForTheHostOnly) {
  te::KernelCompileOptions options;
  options.reference = true;
  options.device = "fixture";
  EXPECT_NE(refusal(options).find("the reference pipeline builds for the cpu "
                                  "device only, not 'fixture'"),
            std::string::npos);
}

TEST(KernelCompiler, DeviceWithoutTarget) {
  te::KernelCompileOptions options;
  options.device = "nope";
  EXPECT_NE(refusal(options).find("no target produces kernel modules for "
                                  "device 'nope' (targets exist for: cpu)"),
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
    std::optional<te::KernelArtifact> artifact =
        te::parseKernelArtifact(c.kind);
    ASSERT_TRUE(artifact) << c.kind;
    te::CompileRecorder recorder;
    te::KernelCompileOptions options;
    options.recorder = &recorder;
    std::string path = (directory + "/out." + c.kind).str();
    ASSERT_TRUE(
        succeeded(te::emitKernelArtifact(*module, options, *artifact, path)))
        << c.kind;
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer)) << c.kind;
    EXPECT_NE((*buffer)->getBuffer().find(c.needle), StringRef::npos) << c.kind;
    std::vector<std::string> stages;
    for (const te::CompileRecorder::Stage &stage : recorder.getStages())
      stages.push_back(stage.name);
    EXPECT_EQ(stages, c.stages) << c.kind;
  }
  EXPECT_FALSE(te::parseKernelArtifact("exe"));
  llvm::sys::fs::remove_directories(directory);
}

} // namespace
