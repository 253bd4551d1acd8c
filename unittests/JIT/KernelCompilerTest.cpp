//===- KernelCompilerTest.cpp - compileKernelLibrary's refusals -----------===//
//
// What compileKernelLibrary refuses before lowering anything, with the
// diagnostic it emits.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/KernelCompiler.h"
#include "te/InitAllDialects.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

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

} // namespace
