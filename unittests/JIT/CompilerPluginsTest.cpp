//===- CompilerPluginsTest.cpp - Plugins through the compiler's C API -----===//
//
// te_compiler_load_plugins, te_compiler_plugins, te_compiler_explain(_for),
// te_compiler_targets and te_compiler_compile_for with the fixture plugins of
// test/Plugin/fixtures. The plugin manager is process-wide, so the steps of
// each test run in order, and each test runs in a process of its own.
//
//===----------------------------------------------------------------------===//

#include "te/JIT/Compiler.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

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
  EXPECT_EQ(fingerprint(), "policy=;deny=;strict=0;api=;failed=;");
  EXPECT_EQ(explain(), "te.amax\tf.mlir:3:8\tcpu (native)\t\n"
                       "te.amax\tf.mlir:4:8\tcpu (native)\t\n");

  // A broken plugin is skipped (not strict): no error, nothing changes.
  char *error = nullptr;
  EXPECT_EQ(te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-abi-major.so",
                                     &error),
            0);
  take(error);
  // The failure shows in how the plugins came to be.
  EXPECT_EQ(fingerprint(), "policy=;deny=;strict=0;api=" TE_FIXTURES
                           "/libte-fixture-abi-major.so;failed=" TE_FIXTURES
                           "/libte-fixture-abi-major.so;");

  // The good fixture takes the f32 amax and declines the bf16 one.
  EXPECT_EQ(
      te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-good.so", &error),
      0);
  take(error);
  EXPECT_EQ(fingerprint(), "fixture=1.0;policy=;deny=;strict=0;api=" TE_FIXTURES
                           "/libte-fixture-abi-major.so," TE_FIXTURES
                           "/libte-fixture-good.so;failed=" TE_FIXTURES
                           "/libte-fixture-abi-major.so;");
  EXPECT_EQ(explain(),
            "te.amax\tf.mlir:3:8\tplugin fixture/amax\t\n"
            "te.amax\tf.mlir:4:8\tcpu (native)\tfixture/amax: only f32 "
            "inputs, got bf16\n");

  // A second plugin comes after the first in priority.
  EXPECT_EQ(
      te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-second.so", &error),
      0);
  take(error);
  EXPECT_EQ(fingerprint(),
            "fixture=1.0;second=1.0;policy=;deny=;strict=0;api=" TE_FIXTURES
            "/libte-fixture-abi-major.so," TE_FIXTURES
            "/libte-fixture-good.so," TE_FIXTURES
            "/libte-fixture-second.so;failed=" TE_FIXTURES
            "/libte-fixture-abi-major.so;");
}

/// te_compiler_targets without the host's target description (the last
/// column of the cpu line) and the toolkit in the cuda line's pipeline
/// identity, which depend on the machine.
std::string targets() {
  char *list = nullptr, *error = nullptr;
  EXPECT_EQ(te_compiler_targets(&list, &error), 0);
  take(error);
  std::string text = take(list), result;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu\tcpu\tbuilt-in\t", 0) == 0)
      line = "cpu\tcpu\tbuilt-in\t<host>";
    if (line.rfind("cuda\tcuda\tbuilt-in\tte-lower-cuda abi=1 ptxas=", 0) == 0)
      line = "cuda\tcuda\tbuilt-in\t<toolkit>";
    result += line + "\n";
  }
  return result;
}

TEST(CompilerPlugins, TargetsOfPluginsCompileForTheirDevice) {
  unsetenv("NVTE_PLUGIN");
  unsetenv("NVTE_PLUGIN_STRICT");
  EXPECT_EQ(targets(), "cpu\tcpu\tbuilt-in\t<host>\n"
                       "cuda\tcuda\tbuilt-in\t<toolkit>\n");

  char path[] = "/tmp/te-compile-for-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  char *manifest = nullptr, *error = nullptr;
  EXPECT_NE(te_compiler_compile_for("fixture", kProgram, std::strlen(kProgram),
                                    "f.mlir", path, &manifest, &error),
            0);
  EXPECT_NE(take(error).find("no target produces kernel modules for device "
                             "'fixture' (targets exist for: cpu, cuda)"),
            std::string::npos);
  error = nullptr;

  ASSERT_EQ(
      te_compiler_load_plugins(TE_FIXTURES "/libte-fixture-target.so", &error),
      0);
  take(error);
  EXPECT_EQ(targets(), "cpu\tcpu\tbuilt-in\t<host>\n"
                       "cuda\tcuda\tbuilt-in\t<toolkit>\n"
                       "fixture\tfixture\tplugin fixture_target "
                       "2.1\tfixture\tx86_64-fixture-none "
                       "fixture-1 \n");

  // The provider sees the target it lowers for.
  char *table = nullptr;
  ASSERT_EQ(te_compiler_explain_for("fixture", kProgram, std::strlen(kProgram),
                                    "f.mlir", &table, &error),
            0);
  EXPECT_EQ(take(table),
            "te.amax\tf.mlir:3:8\tplugin fixture_target/amax\t\n"
            "te.amax\tf.mlir:4:8\tfixture (native)\tfixture_target/amax: "
            "only f32 inputs\n");
  EXPECT_EQ(explain(),
            "te.amax\tf.mlir:3:8\tcpu (native)\tfixture_target/amax: only "
            "for the fixture target, not cpu\n"
            "te.amax\tf.mlir:4:8\tcpu (native)\tfixture_target/amax: only "
            "for the fixture target, not cpu\n");

  // The module is the target's container, carrying the manifest.
  ASSERT_EQ(te_compiler_compile_for("fixture", kProgram, std::strlen(kProgram),
                                    "f.mlir", path, &manifest, &error),
            0)
      << (error ? error : "");
  std::string text = take(manifest);
  EXPECT_EQ(text, "te-kernel-abi 1\nentry f f__te_packed\nin f32 8\n"
                  "in bf16 8\nout f32 scalar\nout f32 scalar\nend\n");
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string header = "TE-FIXTURE-MODULE 1\nmanifest " +
                       std::to_string(text.size()) + "\n" + text + "library ";
  EXPECT_EQ(bytes.str().substr(0, header.size()), header);
  std::remove(path);
}

/// te_compiler_program_*: one parse serves what a cache keys on and any
/// number of compiles; failures say their kind.
TEST(CompilerPrograms, OneParseServesKeysAndCompiles) {
  unsetenv("NVTE_PLUGIN");
  unsetenv("NVTE_PLUGIN_STRICT");
  unsigned long long before = te_compiler_parse_count();
  te_compiler_program *program = nullptr;
  char *error = nullptr;
  ASSERT_EQ(te_compiler_program_create("cpu", 0, kProgram,
                                       std::strlen(kProgram), "f.mlir",
                                       &program, &error),
            TE_COMPILER_OK)
      << (error ? error : "");
  EXPECT_EQ(te_compiler_parse_count() - before, 1u);

  char *canonical = nullptr;
  ASSERT_EQ(te_compiler_canonicalize(kProgram, std::strlen(kProgram), "f.mlir",
                                     &canonical, &error),
            TE_COMPILER_OK);
  EXPECT_EQ(te_compiler_program_canonical(program), take(canonical));
  EXPECT_EQ(std::string(te_compiler_program_source_locations(program)),
            "f.mlir:3:8\nf.mlir:4:8\n");
  EXPECT_EQ(std::string(te_compiler_program_plugins(program)), fingerprint());
  EXPECT_EQ(std::string(te_compiler_program_target(program))
                .rfind("cpu\tcpu\tbuilt-in\t", 0),
            0u);
  before = te_compiler_parse_count();

  char path[] = "/tmp/te-program-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  for (int compile = 0; compile < 2; ++compile) {
    char *manifest = nullptr, *report = nullptr;
    ASSERT_EQ(
        te_compiler_program_compile(program, path, &manifest, &report, &error),
        TE_COMPILER_OK)
        << (error ? error : "");
    EXPECT_EQ(take(manifest).rfind("te-kernel-abi 1\nentry f ", 0), 0u);
    EXPECT_NE(take(report).find("mlir-passes\t"), std::string::npos);
  }
  EXPECT_EQ(te_compiler_parse_count(), before);
  te_compiler_program_release(program);
  std::remove(path);

  // A program that does not parse, and a device no target serves.
  const char *broken = "func.func @f( {";
  EXPECT_EQ(te_compiler_program_create("cpu", 0, broken, std::strlen(broken),
                                       "broken.mlir", &program, &error),
            TE_COMPILER_ERROR_PROGRAM);
  EXPECT_EQ(program, nullptr);
  EXPECT_EQ(take(error).rfind("broken.mlir:1:", 0), 0u);
  ASSERT_EQ(te_compiler_program_create("nope", 0, kProgram,
                                       std::strlen(kProgram), "f.mlir",
                                       &program, &error),
            TE_COMPILER_OK);
  EXPECT_EQ(std::string(te_compiler_program_target(program)), "");
  char *manifest = nullptr, *report = nullptr;
  EXPECT_EQ(
      te_compiler_program_compile(program, path, &manifest, &report, &error),
      TE_COMPILER_ERROR_COMPILE);
  EXPECT_NE(take(error).find("no target produces kernel modules for device "
                             "'nope'"),
            std::string::npos);
  take(report);
  te_compiler_program_release(program);
  EXPECT_EQ(te_compiler_program_create("cpu", 0, kProgram, 1, "f.mlir", nullptr,
                                       &error),
            TE_COMPILER_ERROR_ARGUMENT);
  EXPECT_NE(take(error).find("must not be NULL"), std::string::npos);

  // A compile without somewhere to put the manifest (or the library) is
  // refused as an argument error, with the report still set.
  ASSERT_EQ(te_compiler_program_create("cpu", 0, kProgram,
                                       std::strlen(kProgram), "f.mlir",
                                       &program, &error),
            TE_COMPILER_OK);
  report = nullptr;
  EXPECT_EQ(
      te_compiler_program_compile(program, path, nullptr, &report, &error),
      TE_COMPILER_ERROR_ARGUMENT);
  EXPECT_EQ(take(report), "");
  EXPECT_NE(take(error).find("te_compiler_program_compile: program, "
                             "output_path, manifest and error must not be "
                             "NULL"),
            std::string::npos);
  EXPECT_EQ(
      te_compiler_program_compile(program, nullptr, &manifest, nullptr, &error),
      TE_COMPILER_ERROR_ARGUMENT);
  EXPECT_NE(take(error).find("must not be NULL"), std::string::npos);
  EXPECT_EQ(
      te_compiler_program_compile(nullptr, path, &manifest, nullptr, nullptr),
      TE_COMPILER_ERROR_ARGUMENT);
  te_compiler_program_release(program);
}

} // namespace
