//===- ModuleTest.cpp - Loading kernel modules and reading their manifests ===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include "te/ABI/HostFeatures.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace te::runtime::testing;

namespace {

std::vector<char> readFile(const char *path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(file), {});
}

class ModuleTest : public ::testing::Test {
protected:
  DevicePtr cpu = openDevice("cpu");
};

TEST_F(ModuleTest, LoadsTheTestKernels) {
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(te_module_device(module.get()), cpu.get());
  ASSERT_EQ(te_module_num_kernels(module.get()), 9);
  const char *names[] = {"add",      "sum",     "split",   "attention_identity",
                         "sum16",    "checked", "threads", "square_plus_one",
                         "temporary"};
  for (int i = 0; i < 9; ++i)
    EXPECT_STREQ(te_module_kernel_name(module.get(), i), names[i]);
  EXPECT_EQ(te_module_kernel_name(module.get(), 9), nullptr);
  EXPECT_EQ(te_module_kernel_name(module.get(), -1), nullptr);
}

TEST_F(ModuleTest, KernelsDescribeTheirArguments) {
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  te_kernel *add = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "add", &add), TE_OK);
  EXPECT_STREQ(te_kernel_name(add), "add");
  ASSERT_EQ(te_kernel_num_args(add), 3);
  for (int i = 0; i < 3; ++i) {
    te_arg_info info = {};
    ASSERT_EQ(te_kernel_arg(add, i, &info), TE_OK);
    EXPECT_EQ(info.is_output, i == 2);
    EXPECT_EQ(info.dtype, TE_DTYPE_F32);
    ASSERT_EQ(info.rank, 1);
    EXPECT_EQ(info.dims[0], 4);
  }

  te_kernel *attention = nullptr;
  ASSERT_EQ(
      te_module_get_kernel(module.get(), "attention_identity", &attention),
      TE_OK);
  te_arg_info info = {};
  ASSERT_EQ(te_kernel_arg(attention, 1, &info), TE_OK);
  EXPECT_EQ(info.dtype, TE_DTYPE_BF16);
  ASSERT_EQ(info.rank, 4);
  EXPECT_EQ(info.dims[0], 2);
  EXPECT_EQ(info.dims[1], 128);
  EXPECT_EQ(info.dims[2], 16);
  EXPECT_EQ(info.dims[3], 64);

  te_kernel *sum = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "sum", &sum), TE_OK);
  ASSERT_EQ(te_kernel_arg(sum, 1, &info), TE_OK);
  EXPECT_TRUE(info.is_output);
  EXPECT_EQ(info.rank, 0);
}

TEST_F(ModuleTest, UnknownEntryListsTheAvailableOnes) {
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  te_kernel *kernel = reinterpret_cast<te_kernel *>(0x1);
  expectError(
      [&] { return te_module_get_kernel(module.get(), "mul", &kernel); },
      TE_ERROR_NOT_FOUND,
      {"'mul'", "add, sum, split, attention_identity, sum16",
       TE_TEST_KERNELS_PATH});
  EXPECT_EQ(kernel, nullptr);
}

TEST_F(ModuleTest, KernelQueriesRejectBadArguments) {
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  te_kernel *add = nullptr;
  expectError([&] { return te_module_get_kernel(nullptr, "add", &add); },
              TE_ERROR_INVALID_ARGUMENT, {"module must not be NULL"});
  expectError([&] { return te_module_get_kernel(module.get(), nullptr, &add); },
              TE_ERROR_INVALID_ARGUMENT, {"entry must not be NULL"});
  expectError(
      [&] { return te_module_get_kernel(module.get(), "add", nullptr); },
      TE_ERROR_INVALID_ARGUMENT, {"out must not be NULL"});
  ASSERT_EQ(te_module_get_kernel(module.get(), "add", &add), TE_OK);
  te_arg_info info;
  expectError([&] { return te_kernel_arg(add, 3, &info); },
              TE_ERROR_INVALID_ARGUMENT, {"'add'", "3 arguments", "index 3"});
  expectError([&] { return te_kernel_arg(add, -1, &info); },
              TE_ERROR_INVALID_ARGUMENT, {"index -1"});
  expectError([&] { return te_kernel_arg(add, 0, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"out must not be NULL"});
  expectError([&] { return te_kernel_arg(nullptr, 0, &info); },
              TE_ERROR_INVALID_ARGUMENT, {"kernel must not be NULL"});
}

TEST_F(ModuleTest, GettersAcceptNull) {
  EXPECT_EQ(te_module_num_kernels(nullptr), -1);
  EXPECT_EQ(te_module_kernel_name(nullptr, 0), nullptr);
  EXPECT_EQ(te_module_device(nullptr), nullptr);
  EXPECT_EQ(te_kernel_name(nullptr), nullptr);
  EXPECT_EQ(te_kernel_num_args(nullptr), -1);
  te_module_retain(nullptr);
  te_module_release(nullptr);
}

TEST_F(ModuleTest, LoadRejectsBadArguments) {
  te_module *module = reinterpret_cast<te_module *>(0x1);
  expectError(
      [&] { return te_module_load(nullptr, TE_TEST_KERNELS_PATH, &module); },
      TE_ERROR_INVALID_ARGUMENT, {"device must not be NULL"});
  EXPECT_EQ(module, nullptr);
  expectError([&] { return te_module_load(cpu.get(), nullptr, &module); },
              TE_ERROR_INVALID_ARGUMENT, {"path must not be NULL"});
  expectError(
      [&] { return te_module_load(cpu.get(), TE_TEST_KERNELS_PATH, nullptr); },
      TE_ERROR_INVALID_ARGUMENT, {"out must not be NULL"});
  expectError([&] { return te_module_load(cpu.get(), "", &module); },
              TE_ERROR_INVALID_ARGUMENT, {"path must not be empty"});
}

TEST_F(ModuleTest, MissingFileFailsToLoad) {
  te_module *module = nullptr;
  const char *path = "/nonexistent/dir/libkernels.so";
  expectError([&] { return te_module_load(cpu.get(), path, &module); },
              TE_ERROR_LOAD_FAILED,
              {"te_module_load", path, "'cpu' 0", "No such file"});
  EXPECT_EQ(module, nullptr);
}

TEST_F(ModuleTest, BareFileNameIsNotSearchedForOnTheLibraryPath) {
  // dlopen would find libc.so.6 on the search path; a module path is a file.
  te_module *module = nullptr;
  expectError([&] { return te_module_load(cpu.get(), "libc.so.6", &module); },
              TE_ERROR_LOAD_FAILED, {"'libc.so.6'"});
}

TEST_F(ModuleTest, FileThatIsNotASharedLibraryFailsToLoad) {
  std::string path = ::testing::TempDir() + "te_runtime_not_a_library.so";
  {
    std::ofstream file(path);
    file << "te-kernel-abi 1\nthis is text, not an ELF shared library\n";
  }
  te_module *module = nullptr;
  expectError([&] { return te_module_load(cpu.get(), path.c_str(), &module); },
              TE_ERROR_LOAD_FAILED, {"cannot load", path});
  EXPECT_EQ(module, nullptr);
  std::remove(path.c_str());
}

TEST_F(ModuleTest, LibraryWithoutManifestFailsToLoad) {
  te_module *module = nullptr;
  expectError(
      [&] {
        return te_module_load(cpu.get(), TE_TEST_NO_MANIFEST_PATH, &module);
      },
      TE_ERROR_LOAD_FAILED,
      {TE_TEST_NO_MANIFEST_PATH, "no kernel manifest", "te_kernel_manifest"});
  EXPECT_EQ(module, nullptr);
}

TEST_F(ModuleTest, LoadsFromAnImageInMemory) {
  std::vector<char> image = readFile(TE_TEST_KERNELS_PATH);
  ASSERT_FALSE(image.empty());
  te_module *raw = nullptr;
  ASSERT_EQ(te_module_load_image(cpu.get(), image.data(), image.size(),
                                 "kernels.so", &raw),
            TE_OK)
      << te_last_error_message();
  ModulePtr module(raw);
  image.assign(image.size(), 0); // The runtime must not need it any more.
  EXPECT_EQ(te_module_num_kernels(module.get()), 9);
  te_kernel *sum = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "sum", &sum), TE_OK);
  BufferPtr input = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
  BufferPtr output = createBuffer(cpu.get(), TE_DTYPE_F32, {});
  const float values[4] = {1, 2, 3, 4.5f};
  ASSERT_EQ(te_buffer_write(input.get(), values, sizeof(values)), TE_OK);
  te_buffer *args[] = {input.get(), output.get()};
  ASSERT_EQ(te_kernel_launch(sum, args, 2), TE_OK) << te_last_error_message();
  float result = 0;
  ASSERT_EQ(te_buffer_read(output.get(), &result, sizeof(result)), TE_OK);
  EXPECT_EQ(result, 10.5f);
}

TEST_F(ModuleTest, BadImagesAreRejected) {
  const char garbage[] = "\x7f"
                         "ELF but not really";
  te_module *module = nullptr;
  expectError(
      [&] {
        return te_module_load_image(cpu.get(), garbage, sizeof(garbage),
                                    "garbage-image", &module);
      },
      TE_ERROR_LOAD_FAILED, {"te_module_load_image", "'garbage-image'"});
  expectError(
      [&] {
        return te_module_load_image(cpu.get(), garbage, sizeof(garbage),
                                    nullptr, &module);
      },
      TE_ERROR_LOAD_FAILED, {"<in-memory image>"});
  expectError(
      [&] {
        return te_module_load_image(cpu.get(), nullptr, 4, nullptr, &module);
      },
      TE_ERROR_INVALID_ARGUMENT, {"image must not be NULL"});
  expectError(
      [&] {
        return te_module_load_image(cpu.get(), garbage, 0, nullptr, &module);
      },
      TE_ERROR_INVALID_ARGUMENT, {"empty"});
  expectError(
      [&] {
        return te_module_load_image(nullptr, garbage, 4, nullptr, &module);
      },
      TE_ERROR_INVALID_ARGUMENT, {"device must not be NULL"});
  expectError(
      [&] {
        return te_module_load_image(cpu.get(), garbage, 4, nullptr, nullptr);
      },
      TE_ERROR_INVALID_ARGUMENT, {"out must not be NULL"});
}

TEST_F(ModuleTest, RetainKeepsTheModuleLoaded) {
  te_module *module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH).release();
  te_module_retain(module);
  te_module_release(module);
  te_kernel *add = nullptr;
  EXPECT_EQ(te_module_get_kernel(module, "add", &add), TE_OK);
  te_module_release(module);
}

TEST_F(ModuleTest, DeviceWithoutModuleEntriesCannotLoad) {
  registerFakeDevice("fake-storage-only");
  DevicePtr device = openDevice("fake-storage-only");
  te_module *module = nullptr;
  expectError(
      [&] {
        return te_module_load(device.get(), TE_TEST_KERNELS_PATH, &module);
      },
      TE_ERROR_UNSUPPORTED, {"'fake-storage-only' 0", "cannot run kernels"});
  EXPECT_EQ(module, nullptr);
}

TEST_F(ModuleTest, PluginModulesAreLoadedThroughTheTable) {
  FakeDevice &fake = registerFakeDevice("fake-modules", /*withModules=*/true);
  {
    DevicePtr device = openDevice("fake-modules");
    ModulePtr module = loadModule(device.get(), "any-name.fatbin");
    ASSERT_NE(module, nullptr);
    EXPECT_EQ(fake.loadedModules, 1);
    device.reset();
    EXPECT_EQ(fake.liveInstances, 1) << "the module keeps its device open";
    EXPECT_STREQ(te_module_kernel_name(module.get(), 0), "double");
  }
  EXPECT_EQ(fake.loadedModules, 0);
  EXPECT_EQ(fake.liveInstances, 0);
}

/// Loads the ManifestEcho library with a manifest of the test's choosing.
class ManifestTest : public ModuleTest {
protected:
  static void SetUpTestSuite() {
    // Kept open for the whole process, so the runtime's dlopen of the same
    // path finds this copy and its manifest.
    void *library = dlopen(TE_TEST_MANIFEST_ECHO_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    setManifest = reinterpret_cast<void (*)(const char *)>(
        dlsym(library, "te_test_set_manifest"));
    ASSERT_NE(setManifest, nullptr) << dlerror();
    setCPUFeatures = reinterpret_cast<void (*)(const char *)>(
        dlsym(library, "te_test_set_cpu_features"));
    ASSERT_NE(setCPUFeatures, nullptr) << dlerror();
  }

  void TearDown() override { setCPUFeatures(nullptr); }

  te_status load(const char *manifest, ModulePtr &module) {
    setManifest(manifest);
    te_module *raw = nullptr;
    te_status status =
        te_module_load(cpu.get(), TE_TEST_MANIFEST_ECHO_PATH, &raw);
    module.reset(raw);
    if (status != TE_OK) {
      EXPECT_EQ(raw, nullptr) << "output not cleared on error";
    }
    return status;
  }

  /// Expects `manifest` to be rejected with a message naming the library and
  /// containing `fragments` (typically the line number and the reason).
  void expectRejected(const std::string &manifest,
                      std::vector<std::string> fragments) {
    SCOPED_TRACE("manifest:\n" + manifest);
    fragments.push_back(TE_TEST_MANIFEST_ECHO_PATH);
    ModulePtr module;
    expectError([&] { return load(manifest.c_str(), module); },
                TE_ERROR_LOAD_FAILED, fragments);
  }

  static void (*setManifest)(const char *);
  static void (*setCPUFeatures)(const char *);
};

void (*ManifestTest::setManifest)(const char *) = nullptr;
void (*ManifestTest::setCPUFeatures)(const char *) = nullptr;

constexpr const char *kHeader = "te-kernel-abi 1\n";

/// A one-entry manifest with the given argument lines.
std::string entryWith(const std::string &argLines) {
  return std::string(kHeader) + "entry k te_test_echo_noop\n" + argLines +
         "end\n";
}

TEST_F(ManifestTest, AcceptsAMinimalManifest) {
  ModulePtr module;
  for (const char *manifest :
       {"te-kernel-abi 1\nentry k te_test_echo_noop\nend",
        "te-kernel-abi 1\nentry k te_test_echo_noop\nend\n"}) {
    ASSERT_EQ(load(manifest, module), TE_OK) << te_last_error_message();
    te_kernel *kernel = nullptr;
    ASSERT_EQ(te_module_get_kernel(module.get(), "k", &kernel), TE_OK);
    EXPECT_EQ(te_kernel_num_args(kernel), 0);
  }
}

// A library states the processor features its code needs
// (te/ABI/HostFeatures.h); one this process cannot run is refused with
// them named, rather than stopping at an illegal instruction.
TEST_F(ManifestTest, LibrariesNeedingNoFeatureLoad) {
  const char *manifest = "te-kernel-abi 1\nentry k te_test_echo_noop\nend\n";
  ModulePtr module;
  for (const char *features : {"", ","}) {
    setCPUFeatures(features);
    EXPECT_EQ(load(manifest, module), TE_OK) << te_last_error_message();
  }
}

TEST_F(ManifestTest, LibrariesNeedingUsableFeaturesLoad) {
  std::string usable;
  for (std::string_view feature : te::abi::getCheckableCPUFeatures())
    if (te::abi::isCPUFeatureUsable(feature))
      usable += std::string(usable.empty() ? "" : ",") + std::string(feature);
  setCPUFeatures(usable.c_str());
  ModulePtr module;
  EXPECT_EQ(load("te-kernel-abi 1\nentry k te_test_echo_noop\nend\n", module),
            TE_OK)
      << usable << ": " << te_last_error_message();
}

TEST_F(ManifestTest, LibrariesNeedingMissingFeaturesAreRefused) {
  std::vector<std::string> missing;
  for (std::string_view feature : te::abi::getCheckableCPUFeatures())
    if (!te::abi::isCPUFeatureUsable(feature))
      missing.emplace_back(feature);
  if (missing.empty())
    GTEST_SKIP() << "this processor has every feature a library may need";
  // A usable feature before it changes nothing.
  std::string list = missing.back();
  for (std::string_view feature : te::abi::getCheckableCPUFeatures())
    if (te::abi::isCPUFeatureUsable(feature)) {
      list = std::string(feature) + "," + list;
      break;
    }
  setCPUFeatures(list.c_str());
  expectRejected("te-kernel-abi 1\nentry k te_test_echo_noop\nend\n",
                 {"processor features this process cannot use",
                  "illegal instruction", missing.back(), "unset TE_CPU_ARCH"});
  if (missing.back().rfind("amx-", 0) == 0)
    EXPECT_NE(std::string(te_last_error_message()).find("AMX tiles: "),
              std::string::npos)
        << te_last_error_message();
}

TEST_F(ManifestTest, LibrariesNeedingUnknownFeaturesAreRefused) {
  setCPUFeatures("te-test-feature-from-the-future");
  expectRejected("te-kernel-abi 1\nentry k te_test_echo_noop\nend\n",
                 {"te-test-feature-from-the-future", "newer te-mlir"});
}

TEST_F(ManifestTest, AcceptsEveryDTypeAndShapeForm) {
  ModulePtr module;
  std::string manifest = entryWith("in f32 1\nin f64 2\nin f16 3\nin bf16 4\n"
                                   "in f8E4M3FN 5\nin f8E5M2 6\n"
                                   "in f8E8M0FNU 7\nin i1 8\nin i8 0\n"
                                   "in i32 scalar\nout i64 1x2x3x4x5x6x7x8\n"
                                   "out i8 9223372036854775807\n");
  ASSERT_EQ(load(manifest.c_str(), module), TE_OK) << te_last_error_message();
  te_kernel *kernel = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "k", &kernel), TE_OK);
  ASSERT_EQ(te_kernel_num_args(kernel), 12);
  te_arg_info info;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(te_kernel_arg(kernel, i, &info), TE_OK);
    EXPECT_EQ(info.dtype, static_cast<te_dtype>(i));
    EXPECT_FALSE(info.is_output);
  }
  ASSERT_EQ(te_kernel_arg(kernel, 8, &info), TE_OK);
  EXPECT_EQ(info.dims[0], 0);
  ASSERT_EQ(te_kernel_arg(kernel, 9, &info), TE_OK);
  EXPECT_EQ(info.rank, 0);
  ASSERT_EQ(te_kernel_arg(kernel, 10, &info), TE_OK);
  EXPECT_TRUE(info.is_output);
  ASSERT_EQ(info.rank, 8);
  EXPECT_EQ(info.dims[7], 8);
  ASSERT_EQ(te_kernel_arg(kernel, 11, &info), TE_OK);
  EXPECT_EQ(info.dims[0], INT64_MAX);
}

TEST_F(ManifestTest, AcceptsSeveralEntriesSharingASymbol) {
  ModulePtr module;
  ASSERT_EQ(load("te-kernel-abi 1\n"
                 "entry first te_test_echo_noop\nend\n"
                 "entry second te_test_echo_noop\nin i8 2\nend\n",
                 module),
            TE_OK)
      << te_last_error_message();
  EXPECT_EQ(te_module_num_kernels(module.get()), 2);
}

TEST_F(ManifestTest, Version2AddsAStatusAndChecks) {
  ModulePtr module;
  ASSERT_EQ(load("te-kernel-abi 2\n"
                 "entry k te_test_echo_noop\nin f32 2 positive\nout f32 2\n"
                 "status i64 4\ncheck a: {0} is past {1}\ncheck b\nend\n"
                 "entry plain te_test_echo_noop\nin i8 2\nend\n",
                 module),
            TE_OK)
      << te_last_error_message();
  te_kernel *kernel = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "k", &kernel), TE_OK);
  EXPECT_EQ(te_kernel_num_args(kernel), 2);
  EXPECT_STREQ(te_kernel_arg_role(kernel, 0), "positive");
  EXPECT_STREQ(te_kernel_arg_role(kernel, 1), "");
  EXPECT_STREQ(te_kernel_arg_role(kernel, 2), "");
  EXPECT_STREQ(te_kernel_arg_role(nullptr, 0), "");
}

TEST_F(ManifestTest, RolesAreForInputsOfVersion2) {
  std::string v2 = "te-kernel-abi 2\nentry k te_test_echo_noop\n";
  expectRejected(entryWith("in i32 4 cu_seqlens:8:-1\n"),
                 {"line 3", "expected 'in <dtype> <dims>'"});
  expectRejected(v2 + "out i32 4 seqlens:8\nend\n",
                 {"line 3", "expected 'out <dtype> <dims>'"});
  expectRejected(v2 + "in i32 4 bad/role\nend\n",
                 {"line 3", "invalid role 'bad/role'"});
  expectRejected(v2 + "in i32 4 a b\nend\n",
                 {"line 3", "expected 'in <dtype> <dims> [<role>]'"});
}

TEST_F(ManifestTest, RejectsMisplacedStatusAndChecks) {
  std::string v2 = "te-kernel-abi 2\nentry k te_test_echo_noop\n";
  expectRejected(entryWith("out f32 2\nstatus i64 4\ncheck a\n"),
                 {"line 4", "unknown directive 'status'"});
  expectRejected(v2 + "check a\nend\n",
                 {"line 3", "'check' outside an entry with a 'status' line"});
  expectRejected(v2 + "status i32 4\ncheck a\nend\n",
                 {"line 3", "expected 'status i64 4'"});
  expectRejected(v2 + "status i64 4\nout f32 2\ncheck a\nend\n",
                 {"line 4", "'out' after 'status'"});
  expectRejected(v2 + "status i64 4\nend\n",
                 {"line 4", "has a 'status' line but no 'check' lines"});
  expectRejected(v2 + "status i64 4\nstatus i64 4\ncheck a\nend\n",
                 {"line 4", "second 'status' line"});
  expectRejected(v2 + "status i64 4\ncheck\nend\n",
                 {"line 4", "expected 'check <message>'"});
  expectRejected("te-kernel-abi 2\nstatus i64 4\n",
                 {"line 2", "'status' outside an entry block"});
}

TEST_F(ManifestTest, RejectsAnEmptyManifest) {
  expectRejected("", {"line 1", "empty"});
  expectRejected("\n", {"line 1", "empty line"});
}

TEST_F(ManifestTest, LaunchGeometryIsVersion3AndChecked) {
  const char *entry = "entry k te_test_echo_noop\n";
  expectRejected(std::string("te-kernel-abi 2\n") + entry +
                     "launch 1x1x1 1x1x1 0\nend\n",
                 {"line 3", "unknown directive 'launch'"});
  std::string v3 = std::string("te-kernel-abi 3\n") + entry;
  expectRejected(v3 + "launch 0x1 32 0\nend\n",
                 {"line 3", "invalid grid '0x1'"});
  expectRejected(v3 + "launch 8 32x1x1x1 0\nend\n",
                 {"line 3", "invalid block '32x1x1x1'"});
  expectRejected(v3 + "launch 8 32 4294967296\nend\n",
                 {"line 3", "invalid shared memory size"});
  expectRejected(v3 + "launch 8 32\nend\n",
                 {"line 3", "expected 'launch <grid> <block> <shared-bytes>'"});
  expectRejected(v3 + "launch 8 32 0\nlaunch 8 32 0\nend\n",
                 {"line 4", "second 'launch' line"});
  expectRejected("te-kernel-abi 3\nlaunch 8 32 0\n",
                 {"line 2", "'launch' outside an entry block"});
}

TEST_F(ManifestTest, StepsAreVersion4AndChecked) {
  const char *entry = "entry k program\nin f32 4\nout f32 4\n";
  expectRejected(std::string("te-kernel-abi 3\n") + entry +
                     "step te_test_echo_noop 1 1 0 a0\nend\n",
                 {"line 5", "unknown directive 'step'"});
  std::string v4 = std::string("te-kernel-abi 4\n") + entry;
  expectRejected(v4 + "step te_test_echo_noop 1 1 0 a2\nend\n",
                 {"line 5", "operand a2 names argument 2", "has 2 arguments"});
  expectRejected(v4 + "temp 8\nstep te_test_echo_noop 1 1 0 t1\nend\n",
                 {"line 6", "operand t1", "has 1 'temp' lines"});
  expectRejected(v4 + "step te_test_echo_noop 1 1 0 s\nend\n",
                 {"line 5", "has no 'status' line"});
  expectRejected(v4 + "step te_test_echo_noop 1 1 0 x0\nend\n",
                 {"line 5", "invalid operand 'x0'"});
  expectRejected(v4 + "step te_test_echo_noop 1 1 a0\nend\n",
                 {"line 5", "invalid shared memory size 'a0'"});
  expectRejected(v4 + "step 1bad 1 1 0\nend\n",
                 {"line 5", "invalid symbol '1bad'"});
  expectRejected(v4 + "step te_test_echo_noop 1 1\nend\n",
                 {"line 5", "expected 'step <symbol>"});
  expectRejected(v4 + "temp 0\nend\n", {"line 5", "expected 'temp <bytes>'"});
  expectRejected(v4 + "temp 8\nend\n",
                 {"line 6", "has 'temp' lines but no 'step' or 'call' lines"});
  expectRejected(v4 + "launch 1 1 0\nstep te_test_echo_noop 1 1 0\nend\n",
                 {"line 6", "not both"});
  expectRejected(v4 + "step te_test_echo_noop 1 1 0\nlaunch 1 1 0\nend\n",
                 {"line 6", "not both"});
  expectRejected(v4 + "step te_test_missing 1 1 0 a0 a1\nend\n",
                 {"line 5", "symbol 'te_test_missing'", "does not define"});
  // The entry's own symbol is not resolved when it has steps.
  ModulePtr module;
  ASSERT_EQ(load((v4 + "temp 8\nstep te_test_echo_noop 2x2 64 128 a0 t0 a1\n"
                       "end\n")
                     .c_str(),
                 module),
            TE_OK)
      << te_last_error_message();
}

TEST_F(ManifestTest, LibraryCallsAreVersion5AndChecked) {
  const char *entry = "entry k program\nin f32 4\nout f32 4\n";
  expectRejected(std::string("te-kernel-abi 4\n") + entry +
                     "call cublaslt.matmul m=1 a0 a1\nend\n",
                 {"line 5", "unknown directive 'call'"});
  std::string v5 = std::string("te-kernel-abi 5\n") + entry;
  expectRejected(v5 + "call cublaslt.matmul m=1 a0 a2\nend\n",
                 {"line 5", "operand a2 names argument 2"});
  expectRejected(v5 + "call cublaslt/matmul m=1 a0\nend\n",
                 {"line 5", "invalid library function 'cublaslt/matmul'"});
  expectRejected(v5 + "call cublaslt.matmul m=1;rm a0\nend\n",
                 {"line 5", "invalid parameters 'm=1;rm'"});
  expectRejected(v5 + "call cublaslt.matmul\nend\n",
                 {"line 5", "expected 'call <function> <parameters>"});
  expectRejected(v5 + "call cublaslt.matmul m=1 y0\nend\n",
                 {"line 5", "invalid operand 'y0'"});
  expectRejected(v5 + "launch 1 1 0\ncall cublaslt.matmul m=1 a0\nend\n",
                 {"line 6", "not both"});
  // Well-formed, but the cpu device runs no library calls: the module
  // does not load, and says which call and which device.
  ModulePtr module;
  expectError(
      [&] {
        return load((v5 + "temp 8\nstep te_test_echo_noop 1 1 0 a0 t0\n"
                          "call cublaslt.matmul m=4,n=1 t0 a1\nend\n")
                        .c_str(),
                    module);
      },
      TE_ERROR_UNSUPPORTED,
      {"line 7", "library function 'cublaslt.matmul'", "device 'cpu'",
       "runs no library calls"});
}

TEST_F(ManifestTest, RejectsANullManifest) {
  ModulePtr module;
  expectError([&] { return load(nullptr, module); }, TE_ERROR_LOAD_FAILED,
              {TE_TEST_MANIFEST_ECHO_PATH, "no kernel manifest"});
}

TEST_F(ManifestTest, RejectsOtherVersions) {
  expectRejected(
      "te-kernel-abi 6\nentry k te_test_echo_noop\nend\n",
      {"line 1", "unsupported manifest version '6'", "versions 1 to 5"});
  expectRejected("te-kernel-abi 0\nentry k te_test_echo_noop\nend\n",
                 {"line 1", "unsupported manifest version '0'"});
  expectRejected("te-kernel-abi 01\nentry k te_test_echo_noop\nend\n",
                 {"line 1", "version '01'"});
  expectRejected("te-kernel-abi\nentry k te_test_echo_noop\nend\n",
                 {"line 1", "expected 'te-kernel-abi <version>'"});
  expectRejected("te-kernel-abi 1 2\nentry k te_test_echo_noop\nend\n",
                 {"line 1", "expected 'te-kernel-abi <version>'"});
  expectRejected("entry k te_test_echo_noop\nend\n",
                 {"line 1", "not a te-mlir kernel manifest"});
}

TEST_F(ManifestTest, RejectsMalformedLines) {
  expectRejected(entryWith("bogus f32 4\n"),
                 {"line 3", "unknown directive 'bogus'"});
  expectRejected(entryWith("in f32\n"), {"line 3", "'in <dtype> <dims>'"});
  expectRejected(entryWith("out f32 4 4\n"),
                 {"line 3", "'out <dtype> <dims>'"});
  expectRejected(std::string(kHeader) + "entry k\nend\n",
                 {"line 2", "'entry <name> <symbol>'"});
  expectRejected(std::string(kHeader) + "entry k te_test_echo_noop\nend k\n",
                 {"line 3", "'end' alone"});
  expectRejected(std::string(kHeader) + "entry a/b te_test_echo_noop\nend\n",
                 {"line 2", "invalid entry name 'a/b'"});
  expectRejected(std::string(kHeader) + "entry k 9symbol\nend\n",
                 {"line 2", "invalid symbol '9symbol'"});
}

TEST_F(ManifestTest, RejectsIrregularWhitespaceAndBytes) {
  expectRejected(entryWith("in  f32 4\n"), {"line 3", "exactly one space"});
  expectRejected(entryWith("in f32 4 \n"), {"line 3", "exactly one space"});
  expectRejected(entryWith(" in f32 4\n"), {"line 3", "exactly one space"});
  expectRejected(entryWith("in\tf32 4\n"), {"line 3", "byte 0x09", "column 3"});
  expectRejected("te-kernel-abi 1\r\nentry k te_test_echo_noop\nend\n",
                 {"line 1", "byte 0x0d"});
  expectRejected(entryWith("in f32 4\xff\n"), {"line 3", "byte 0xff"});
  expectRejected(entryWith("in f32 4\n\n"), {"line 4", "empty line"});
}

TEST_F(ManifestTest, RejectsUnknownDTypes) {
  expectRejected(entryWith("in f33 4\n"),
                 {"line 3", "unknown dtype 'f33'", "f32, f64"});
  expectRejected(entryWith("in F32 4\n"), {"line 3", "unknown dtype 'F32'"});
  expectRejected(entryWith("in f32 4\nout tf32 4\n"),
                 {"line 4", "unknown dtype 'tf32'"});
}

TEST_F(ManifestTest, RejectsBadDims) {
  expectRejected(entryWith("in f32 4x\n"),
                 {"line 3", "invalid dims '4x'", "dimension 1 is ''"});
  expectRejected(entryWith("in f32 -4\n"), {"line 3", "'-4'"});
  expectRejected(entryWith("in f32 4X4\n"), {"line 3", "'4X4'"});
  expectRejected(entryWith("in f32 ?x4\n"), {"line 3", "dynamic dimensions"});
  expectRejected(entryWith("in f32 04\n"), {"line 3", "leading zero"});
  expectRejected(entryWith("in f32 scalarx4\n"), {"line 3", "'scalar'"});
  expectRejected(entryWith("in f32 \n"), {"line 3"});
  expectRejected(entryWith("in f32 1x1x1x1x1x1x1x1x1\n"),
                 {"line 3", "rank 9 exceeds the maximum of 8"});
  expectRejected(entryWith("in f32 9223372036854775808\n"),
                 {"line 3", "does not fit in 64 bits"});
  expectRejected(entryWith("in f64 4611686018427387904\n"),
                 {"line 3", "f64 4611686018427387904", "address space"});
}

TEST_F(ManifestTest, RejectsBrokenBlockStructure) {
  expectRejected(std::string(kHeader) + "entry k te_test_echo_noop\nin i8 1\n",
                 {"line 4", "end of manifest inside entry 'k'", "line 2"});
  expectRejected(std::string(kHeader) + "end\n",
                 {"line 2", "'end' without an open 'entry'"});
  expectRejected(std::string(kHeader) + "in i8 1\n",
                 {"line 2", "'in' outside an entry block"});
  expectRejected(std::string(kHeader) +
                     "entry a te_test_echo_noop\nentry b te_test_echo_noop\n"
                     "end\n",
                 {"line 3", "'entry' inside entry 'a'"});
  expectRejected(entryWith("in i8 1\nout i8 1\nin i8 1\n"),
                 {"line 5", "'in' after 'out'"});
  expectRejected(std::string(kHeader) + "entry k te_test_echo_noop\nend\n"
                                        "entry k te_test_echo_noop\nend\n",
                 {"line 4", "duplicate entry 'k'", "line 2"});
  expectRejected(kHeader, {"line 2", "declares no kernels"});
}

TEST_F(ManifestTest, RejectsMissingSymbols) {
  expectRejected(
      std::string(kHeader) + "entry k te_test_missing\nend\n",
      {"line 2", "entry 'k'", "symbol 'te_test_missing'", "does not define"});
  // These exist, but not as functions of the module itself.
  expectRejected(std::string(kHeader) + "entry k free\nend\n",
                 {"line 2", "symbol 'free'"});
  expectRejected(std::string(kHeader) + "entry k te_test_echo_data\nend\n",
                 {"line 2", "symbol 'te_test_echo_data'"});
}

// Whatever a corrupt library returns, loading fails cleanly or succeeds; it
// never crashes. Mutations of a valid manifest reach deep into the parser,
// random bytes test the line and token level.
TEST_F(ManifestTest, SurvivesGarbage) {
  const std::string valid = entryWith("in f32 2x3\nout bf16 scalar\n");
  uint64_t state = 0x9e3779b97f4a7c15u;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const char alphabet[] = "te-kernelabi1 \nx0?scalarfbinoutd\t8E4M3FN2";
  int loaded = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    if (round % 2 == 0) {
      text = valid;
      for (int edits = 1 + next() % 3; edits > 0; --edits) {
        size_t at = next() % text.size();
        switch (next() % 3) {
        case 0:
          text[at] = alphabet[next() % (sizeof(alphabet) - 1)];
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text.insert(at, 1, static_cast<char>(1 + next() % 255));
          break;
        }
        if (text.empty())
          break;
      }
    } else {
      text.resize(next() % 64);
      for (char &c : text)
        c = static_cast<char>(1 + next() % 255);
    }
    ModulePtr module;
    te_status status = load(text.c_str(), module);
    ASSERT_TRUE(status == TE_OK || status == TE_ERROR_LOAD_FAILED)
        << te_status_string(status);
    loaded += status == TE_OK;
  }
  // Some single edits (to a dimension, say) leave a valid manifest.
  EXPECT_GT(loaded, 0);
}

} // namespace
