//===- JitTest.cpp - The compile-cache-load C API -------------------------===//

#include "te/JIT/Jit.h"
#include "te/JIT/KernelProvider.h"
#include "te/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <vector>

namespace {

const char *kProgram = R"mlir(
func.func @amax(%x: tensor<8xf32>) -> tensor<f32> {
  %a = te.amax %x : tensor<8xf32> -> tensor<f32>
  return %a : tensor<f32>
}
)mlir";

class JitTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/te-jit-test-XXXXXX";
    ASSERT_TRUE(mkdtemp(pattern));
    cacheDir = pattern;
    setenv("TE_CACHE_DIR", cacheDir.c_str(), 1);
    unsetenv("TE_CACHE_DISABLE");
    ASSERT_EQ(te_device_open("cpu", 0, &device), TE_OK);
  }
  void TearDown() override {
    te_device_release(device);
    std::string command = "rm -rf '" + cacheDir + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }

  te_jit *makeJit() {
    te_jit *jit = nullptr;
    EXPECT_EQ(te_jit_create(TE_COMPILER_LIBRARY_PATH, &jit), TE_OK)
        << te_jit_last_error_message();
    return jit;
  }

  te_status load(te_jit *jit, const char *source, te_module **module,
                 te_cache_outcome *outcome) {
    return te_jit_load(jit, device, source, std::strlen(source), "test.mlir",
                       module, outcome, nullptr);
  }

  std::string cacheDir;
  te_device *device = nullptr;
};

/// Runs @amax on [1, -7, 3, ...] and returns the result.
float runAmax(te_module *module, te_device *device) {
  te_kernel *kernel = nullptr;
  EXPECT_EQ(te_module_get_kernel(module, "amax", &kernel), TE_OK);
  float input[8] = {1, -7, 3, 0, 2, 6, -1, 5}, output = 0;
  int64_t dims[1] = {8};
  te_buffer *x = nullptr, *y = nullptr;
  EXPECT_EQ(te_buffer_create(device, TE_DTYPE_F32, 1, dims, &x), TE_OK);
  EXPECT_EQ(te_buffer_create(device, TE_DTYPE_F32, 0, nullptr, &y), TE_OK);
  EXPECT_EQ(te_buffer_write(x, input, sizeof(input)), TE_OK);
  te_buffer *args[] = {x, y};
  EXPECT_EQ(te_kernel_launch(kernel, args, 2), TE_OK)
      << te_last_error_message();
  EXPECT_EQ(te_buffer_read(y, &output, sizeof(output)), TE_OK);
  te_buffer_release(x);
  te_buffer_release(y);
  return output;
}

/// te_compiler_parse_count of the compiler the JIT loaded (which it does
/// on its first compile); ~0 when it is not loaded.
unsigned long long parsesSoFar() {
  void *handle = dlopen(TE_COMPILER_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    return ~0ull;
  auto count = reinterpret_cast<unsigned long long (*)()>(
      dlsym(handle, "te_compiler_parse_count"));
  unsigned long long parses = count ? count() : ~0ull;
  dlclose(handle);
  return parses;
}

TEST_F(JitTest, ACacheMissParsesTheProgramOnce) {
  te_jit *jit = makeJit();
  te_module *module = nullptr;
  te_cache_outcome outcome;
  // The first compile loads the compiler.
  ASSERT_EQ(load(jit, kProgram, &module, &outcome), TE_OK)
      << te_jit_last_error_message();
  te_module_release(module);
  unsigned long long before = parsesSoFar();
  ASSERT_NE(before, ~0ull) << "the JIT's compiler is not loaded";

  // A program not compiled before: canonical IR, locations, plugins,
  // target and the compile itself come from one parse.
  std::string other = std::string(kProgram) + "func.func @g() { return }\n";
  ASSERT_EQ(load(jit, other.c_str(), &module, &outcome), TE_OK)
      << te_jit_last_error_message();
  EXPECT_EQ(outcome, TE_CACHE_MISS);
  EXPECT_EQ(parsesSoFar() - before, 1u);
  te_module_release(module);

  // The same program in other words: the source key misses, the canonical
  // key hits; one parse to find that out, and no compile.
  std::string reworded = "// reworded\n" + other;
  ASSERT_EQ(load(jit, reworded.c_str(), &module, &outcome), TE_OK)
      << te_jit_last_error_message();
  EXPECT_EQ(outcome, TE_CACHE_HIT_DISK);
  EXPECT_EQ(parsesSoFar() - before, 2u);
  te_module_release(module);

  // Hits of the source key never reach the compiler.
  te_jit *fresh = makeJit();
  ASSERT_EQ(load(fresh, reworded.c_str(), &module, &outcome), TE_OK);
  EXPECT_EQ(outcome, TE_CACHE_HIT_DISK);
  te_module_release(module);
  ASSERT_EQ(load(fresh, reworded.c_str(), &module, &outcome), TE_OK);
  EXPECT_EQ(outcome, TE_CACHE_HIT_MEMORY);
  te_module_release(module);
  EXPECT_EQ(parsesSoFar() - before, 2u);
  te_jit_release(fresh);
  te_jit_release(jit);
}

TEST_F(JitTest, MissThenMemoryHitThenDiskHitInANewContext) {
  te_jit *jit = makeJit();
  te_module *first = nullptr, *second = nullptr, *third = nullptr;
  te_cache_outcome outcome;
  ASSERT_EQ(load(jit, kProgram, &first, &outcome), TE_OK)
      << te_jit_last_error_message();
  EXPECT_EQ(outcome, TE_CACHE_MISS);
  EXPECT_EQ(runAmax(first, device), 7.0f);
  ASSERT_EQ(load(jit, kProgram, &second, &outcome), TE_OK);
  EXPECT_EQ(outcome, TE_CACHE_HIT_MEMORY);
  EXPECT_EQ(second, first);

  te_jit *fresh = makeJit();
  ASSERT_EQ(load(fresh, kProgram, &third, &outcome), TE_OK);
  EXPECT_EQ(outcome, TE_CACHE_HIT_DISK);
  EXPECT_EQ(runAmax(third, device), 7.0f);

  te_module_release(first);
  te_module_release(second);
  te_module_release(third);
  te_jit_release(jit);
  te_jit_release(fresh);
}

/// The lines of te_jit_last_compile_report that start with `field`.
std::vector<std::string> reportLines(const std::string &field) {
  std::vector<std::string> lines;
  std::string report = te_jit_last_compile_report();
  size_t start = 0;
  while (start < report.size()) {
    size_t end = report.find('\n', start);
    std::string line = report.substr(start, end - start);
    if (line.rfind(field + "\t", 0) == 0)
      lines.push_back(line.substr(field.size() + 1));
    start = end == std::string::npos ? report.size() : end + 1;
  }
  return lines;
}

TEST_F(JitTest, CompileReportSaysWhatEachLoadDid) {
  te_jit *jit = makeJit();
  te_module *first = nullptr, *second = nullptr, *third = nullptr;
  ASSERT_EQ(load(jit, kProgram, &first, nullptr), TE_OK)
      << te_jit_last_error_message();
  EXPECT_EQ(reportLines("outcome"), std::vector<std::string>{"miss"});
  std::vector<std::string> sourceKey = reportLines("source-key");
  std::vector<std::string> canonicalKey = reportLines("canonical-key");
  ASSERT_EQ(sourceKey.size(), 1u);
  ASSERT_EQ(canonicalKey.size(), 1u);
  EXPECT_EQ(sourceKey[0].size(), 64u);
  EXPECT_EQ(canonicalKey[0].substr(64), "\tcomputed");
  std::vector<std::string> stages;
  for (const std::string &stage : reportLines("stage"))
    stages.push_back(stage.substr(0, stage.find('\t')));
  EXPECT_EQ(stages, (std::vector<std::string>{"canonicalize", "mlir-passes",
                                              "llvm-translate", "llvm-optimize",
                                              "llvm-codegen", "link"}));

  ASSERT_EQ(load(jit, kProgram, &second, nullptr), TE_OK);
  EXPECT_EQ(std::string(te_jit_last_compile_report()),
            "outcome\thit (memory)\n");

  te_jit *fresh = makeJit();
  ASSERT_EQ(load(fresh, kProgram, &third, nullptr), TE_OK);
  EXPECT_EQ(reportLines("outcome"), std::vector<std::string>{"hit (disk)"});
  EXPECT_EQ(reportLines("source-key"), sourceKey);
  EXPECT_EQ(
      reportLines("canonical-key"),
      std::vector<std::string>{canonicalKey[0].substr(0, 64) + "\talias"});
  EXPECT_TRUE(reportLines("stage").empty());

  te_module_release(first);
  te_module_release(second);
  te_module_release(third);
  te_jit_release(jit);
  te_jit_release(fresh);
}

// The caches' contents, and clearing them: the memory cache alone, then
// the disk's too, after which a new context compiles again.
TEST_F(JitTest, CacheInfoAndClear) {
  te_jit *jit = makeJit();
  te_module *module = nullptr;
  te_cache_outcome outcome;
  ASSERT_EQ(load(jit, kProgram, &module, &outcome), TE_OK)
      << te_jit_last_error_message();
  te_module_release(module);
  te_jit_cache_info info = {};
  info.struct_size = sizeof(info);
  ASSERT_EQ(te_jit_get_cache_info(jit, &info), TE_OK);
  EXPECT_EQ(info.memory_modules, 1u);
  EXPECT_EQ(info.disk_enabled, 1);
  EXPECT_EQ(std::string(info.disk_directory), cacheDir);
  EXPECT_EQ(info.disk_entries, 1u);
  EXPECT_GT(info.disk_bytes, 0u);
  EXPECT_EQ(info.disk_max_bytes, 0u);

  // Clears, then checks what is left and where the next load comes from.
  auto clearThenLoad = [&](int disk, uint64_t entriesLeft,
                           te_cache_outcome expected) {
    ASSERT_EQ(te_jit_clear_cache(jit, disk), TE_OK);
    ASSERT_EQ(te_jit_get_cache_info(jit, &info), TE_OK);
    EXPECT_EQ(info.memory_modules, 0u);
    EXPECT_EQ(info.disk_entries, entriesLeft);
    ASSERT_EQ(load(jit, kProgram, &module, &outcome), TE_OK);
    EXPECT_EQ(outcome, expected);
    te_module_release(module);
  };
  clearThenLoad(/*disk=*/0, 1, TE_CACHE_HIT_DISK);
  clearThenLoad(/*disk=*/1, 0, TE_CACHE_MISS);

  info.struct_size = 8;
  EXPECT_EQ(te_jit_get_cache_info(jit, &info), TE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(te_jit_last_error_message()).find("struct_size is 8"),
            std::string::npos);
  te_jit_release(jit);
}

TEST_F(JitTest, ModulesOutliveTheContext) {
  te_jit *jit = makeJit();
  te_module *module = nullptr;
  ASSERT_EQ(load(jit, kProgram, &module, nullptr), TE_OK);
  te_jit_release(jit);
  EXPECT_EQ(runAmax(module, device), 7.0f);
  te_module_release(module);
}

TEST_F(JitTest, ConcurrentLoadsShareOneModule) {
  te_jit *jit = makeJit();
  std::vector<te_module *> modules(8, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      EXPECT_EQ(load(jit, kProgram, &modules[i], nullptr), TE_OK);
    });
  for (std::thread &t : threads)
    t.join();
  for (te_module *module : modules) {
    EXPECT_EQ(module, modules[0]);
    te_module_release(module);
  }
  te_jit_release(jit);
}

TEST_F(JitTest, CompileErrorsCarryTheDiagnostics) {
  te_jit *jit = makeJit();
  te_module *module = nullptr;
  const char *broken = "func.func @f(%x: tensor<8xf32>) -> tensor<f32> {\n"
                       "  %a = te.amax %x : tensor<8xf32> -> tensor<f16>\n"
                       "  return %a : tensor<f32>\n}\n";
  EXPECT_EQ(load(jit, broken, &module, nullptr), TE_ERROR_COMPILE_FAILED);
  EXPECT_EQ(module, nullptr);
  std::string message = te_jit_last_error_message();
  EXPECT_NE(message.find("test.mlir:2:"), std::string::npos) << message;
  EXPECT_NE(message.find("te.amax"), std::string::npos) << message;
  te_jit_release(jit);
}

TEST_F(JitTest, BadArgumentsAndMissingCompiler) {
  te_jit *jit = nullptr;
  EXPECT_EQ(te_jit_create(nullptr, nullptr), TE_ERROR_INVALID_ARGUMENT);
  unsetenv("TE_COMPILER_LIBRARY");
  EXPECT_EQ(te_jit_create(nullptr, &jit), TE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(te_jit_last_error_message()).find("TE_COMPILER_LIBRARY"),
      std::string::npos);
  ASSERT_EQ(te_jit_create("/nonexistent/libTECompiler.so", &jit), TE_OK);
  te_module *module = nullptr;
  EXPECT_EQ(
      te_jit_load(jit, device, nullptr, 0, "x", &module, nullptr, nullptr),
      TE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(load(jit, kProgram, &module, nullptr), TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_jit_last_error_message()).find("cannot load"),
            std::string::npos);
  // Plugins and explain need the compiler too.
  EXPECT_EQ(te_jit_load_plugins(jit, "anything"), TE_ERROR_LOAD_FAILED);
  char *table = nullptr;
  EXPECT_EQ(
      te_jit_explain(jit, "cpu", kProgram, std::strlen(kProgram), "x", &table),
      TE_ERROR_LOAD_FAILED);
  EXPECT_EQ(table, nullptr);
  EXPECT_EQ(te_jit_load_plugins(nullptr, "x"), TE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(te_jit_load_plugins(jit, nullptr), TE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(te_jit_explain(jit, nullptr, kProgram, 1, "x", &table),
            TE_ERROR_INVALID_ARGUMENT);
  // Plugin states need the compiler; cache calls check their arguments.
  EXPECT_EQ(te_jit_plugin_states(jit, &table), TE_ERROR_LOAD_FAILED);
  EXPECT_EQ(table, nullptr);
  EXPECT_NE(std::string(te_jit_last_error_message()).find("cannot load"),
            std::string::npos);
  EXPECT_EQ(te_jit_plugin_states(nullptr, &table), TE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(te_jit_get_cache_info(jit, nullptr), TE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(te_jit_clear_cache(nullptr, 1), TE_ERROR_INVALID_ARGUMENT);
  te_jit_release(jit);
  te_jit_release(nullptr);
  te_jit_free(nullptr);
}

TEST_F(JitTest, ExplainForADevice) {
  te_jit *jit = makeJit();
  char *table = nullptr;
  ASSERT_EQ(te_jit_explain(jit, "cpu", kProgram, std::strlen(kProgram),
                           "test.mlir", &table),
            TE_OK)
      << te_jit_last_error_message();
  EXPECT_STREQ(table, "te.amax\ttest.mlir:3:8\tcpu (native)\t\n");
  te_jit_free(table);
  table = nullptr;
  EXPECT_EQ(te_jit_explain(jit, "nope", kProgram, std::strlen(kProgram),
                           "test.mlir", &table),
            TE_ERROR_COMPILE_FAILED);
  EXPECT_NE(std::string(te_jit_last_error_message())
                .find("no target produces kernel modules for device 'nope'"),
            std::string::npos)
      << te_jit_last_error_message();
  te_jit_release(jit);
}

TEST_F(JitTest, ReferenceKernelsAreBuiltByTheDevicesTarget) {
  // The provider asks the compiler for the device's reference build rather
  // than building the host's: a device without a target is refused.
  te::cache::KernelProvider provider(TE_COMPILER_LIBRARY_PATH,
                                     [](const std::string &) {});
  auto provided =
      provider.provide(kProgram, "test.mlir", /*reference=*/true, "nope");
  ASSERT_FALSE(provided);
  EXPECT_NE(provided.message().find(
                "no target produces kernel modules for device 'nope'"),
            std::string::npos)
      << provided.message();
}

} // namespace
