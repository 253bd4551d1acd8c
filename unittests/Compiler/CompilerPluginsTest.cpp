//===- CompilerPluginsTest.cpp - Plugins through the compiler's C API -----===//
//
// te_compiler_load_plugins, te_compiler_plugins and te_compiler_explain with
// the fixture plugins of test/Plugin/fixtures. The plugin manager is
// process-wide, so the steps run in one test, in order.
//
//===----------------------------------------------------------------------===//

#include "te/Compiler/Compiler.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char *kProgram = R"(
func.func @f(%x: tensor<8xf32>, %y: tensor<8xbf16>) -> (tensor<f32>, tensor<f32>) {
  %a = te.amax %x : tensor<8xf32> -> tensor<f32>
  %b = te.amax %y : tensor<8xbf16> -> tensor<f32>
  return %a, %b : tensor<f32>, tensor<f32>
}
)";

std::string take(char *text) {
  std::string copy = text ? text : "";
  te_compiler_free(text);
  return copy;
}

std::string explain() {
  char *table = nullptr, *error = nullptr;
  int status = te_compiler_explain(kProgram, std::strlen(kProgram), "f.mlir",
                                   &table, &error);
  EXPECT_EQ(status, 0) << (error ? error : "");
  take(error);
  return take(table);
}

std::string fingerprint() {
  char *text = nullptr, *error = nullptr;
  EXPECT_EQ(te_compiler_plugins(&text, &error), 0);
  take(error);
  return take(text);
}

TEST(CompilerPlugins, LoadExplainAndFingerprint) {
  unsetenv("NVTE_PLUGIN");
  unsetenv("NVTE_PLUGIN_STRICT");
  unsetenv("NVTE_PLUGIN_POLICY");
  unsetenv("NVTE_PLUGIN_DENY");

  // No plugins: native, and a fingerprint of the settings only.
  EXPECT_EQ(fingerprint(), "policy=;deny=;strict=0;");
  EXPECT_EQ(explain(), "te.amax\tf.mlir:3:8\tcpu (native)\t\n"
                       "te.amax\tf.mlir:4:8\tcpu (native)\t\n");

  // A broken plugin is skipped (not strict): no error, nothing changes.
  char *error = nullptr;
  EXPECT_EQ(te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-abi-major.so",
                                     &error),
            0);
  take(error);
  EXPECT_EQ(fingerprint(), "policy=;deny=;strict=0;");

  // The good fixture takes the f32 amax and declines the bf16 one.
  EXPECT_EQ(
      te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-good.so", &error),
      0);
  take(error);
  EXPECT_EQ(fingerprint(), "fixture=1.0;policy=;deny=;strict=0;");
  EXPECT_EQ(explain(),
            "te.amax\tf.mlir:3:8\tplugin fixture/amax\t\n"
            "te.amax\tf.mlir:4:8\tcpu (native)\tfixture/amax: only f32 "
            "inputs, got bf16\n");

  // A second plugin comes after the first in priority.
  EXPECT_EQ(
      te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-second.so", &error),
      0);
  take(error);
  EXPECT_EQ(fingerprint(), "fixture=1.0;second=1.0;policy=;deny=;strict=0;");
}

} // namespace
