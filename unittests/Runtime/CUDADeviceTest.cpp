//===- CUDADeviceTest.cpp - The cuda device over a stand-in driver --------===//
//
// The built-in cuda device's plumbing, against FakeCudaDriver.c (named by
// TE_CUDA_DRIVER before the first use of the device): instances, memory,
// copies, modules with their manifest global, launches with the manifest's
// geometry, streams and events. CUDADeviceNoGPU runs only as its own ctest
// test, with FAKE_CUDA_DEVICES=0. What a machine without any driver says is
// tested through te-run (test/te-run).
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include "te/Runtime/Stream.h"

#include <cstdlib>
#include <dlfcn.h>
#include <string>

using namespace te::runtime::testing;

namespace {

/// Points the runtime at the stand-in driver before any test opens "cuda".
[[maybe_unused]] const bool driverConfigured =
    setenv("TE_CUDA_DRIVER", FAKE_CUDA_DRIVER_PATH, /*overwrite=*/1) == 0;

/// A counter the stand-in driver exports.
int fakeCounter(const char *name) {
  void *library = dlopen(FAKE_CUDA_DRIVER_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (!library)
    return -1;
  auto counter = reinterpret_cast<int (*)()>(dlsym(library, name));
  int value = counter ? counter() : -1;
  dlclose(library);
  return value;
}

bool noGPUConfigured() {
  const char *count = std::getenv("FAKE_CUDA_DEVICES");
  return count && std::string(count) == "0";
}

/// A module image of the stand-in driver: its magic, then the manifest.
std::string fakeImage(const std::string &manifest) {
  return "FAKECUBIN\n" + manifest;
}

/// Loads a stand-in cubin with `manifest` on `device` and looks up its
/// kernel `name` (failing the test when either fails).
void loadFakeKernel(te_device *device, const std::string &manifest,
                    const char *name, ModulePtr &module, te_kernel **kernel) {
  std::string image = fakeImage(manifest);
  te_module *loaded = nullptr;
  ASSERT_EQ(te_module_load_image(device, image.data(), image.size(),
                                 "fake.cubin", &loaded),
            TE_OK)
      << te_last_error_message();
  module.reset(loaded);
  ASSERT_EQ(te_module_get_kernel(loaded, name, kernel), TE_OK);
}

TEST(CUDADevice, MovesDataThroughTheDriverInItsContext) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  {
    DevicePtr cuda = openDevice("cuda");
    ASSERT_NE(cuda, nullptr);
    EXPECT_EQ(fakeCounter("fake_cuda_live_contexts"), 1);
    BufferPtr buffer = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
    EXPECT_EQ(fakeCounter("fake_cuda_live_allocations"), 1);
    float values[4] = {1, 2, 3, 4}, back[4] = {};
    ASSERT_EQ(te_buffer_write(buffer.get(), values, sizeof(values)), TE_OK)
        << te_last_error_message();
    BufferPtr copy = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
    ASSERT_EQ(te_buffer_copy(copy.get(), buffer.get()), TE_OK)
        << te_last_error_message();
    ASSERT_EQ(te_buffer_read(copy.get(), back, sizeof(back)), TE_OK);
    EXPECT_EQ(back[3], 4.0f);
    ASSERT_EQ(te_device_synchronize(cuda.get()), TE_OK);
  }
  EXPECT_EQ(fakeCounter("fake_cuda_live_allocations"), 0);
  EXPECT_EQ(fakeCounter("fake_cuda_live_contexts"), 0);
}

// The GPU's arch, for compiles that target it: the stand-in is a Hopper
// (compute capability 9.0), whose arch-specific features kernels may use.
TEST(CUDADevice, SaysWhichArchItsKernelsAreFor) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  DevicePtr cuda = openDevice("cuda");
  ASSERT_NE(cuda, nullptr);
  EXPECT_STREQ(te_device_target_arch(cuda.get()), "sm_90a");
  DevicePtr cpu = openDevice("cpu");
  EXPECT_EQ(te_device_target_arch(cpu.get()), nullptr);
  EXPECT_EQ(te_device_target_arch(nullptr), nullptr);
}

TEST(CUDADevice, LaunchesWithTheManifestsGeometry) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  DevicePtr cuda = openDevice("cuda");
  ModulePtr module;
  te_kernel *kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(loadFakeKernel(cuda.get(),
                                         "te-kernel-abi 3\n"
                                         "entry double fake_double\n"
                                         "in f32 4\n"
                                         "out f32 4\n"
                                         "launch 2x1x1 64 0\n"
                                         "end\n",
                                         "double", module, &kernel));
  BufferPtr input = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
  BufferPtr output = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
  float values[4] = {1, 2, 3, 4}, doubled[4] = {};
  ASSERT_EQ(te_buffer_write(input.get(), values, sizeof(values)), TE_OK);

  te_stream *raw = nullptr;
  ASSERT_EQ(te_stream_create(cuda.get(), &raw), TE_OK);
  te_event *start = nullptr, *end = nullptr;
  ASSERT_EQ(te_event_create(cuda.get(), &start), TE_OK);
  ASSERT_EQ(te_event_create(cuda.get(), &end), TE_OK);
  ASSERT_EQ(te_event_record(start, raw), TE_OK);
  te_buffer *args[] = {input.get(), output.get()};
  ASSERT_EQ(te_kernel_launch_on(kernel, args, 2, raw), TE_OK)
      << te_last_error_message();
  ASSERT_EQ(te_event_record(end, raw), TE_OK);
  ASSERT_EQ(te_event_synchronize(end), TE_OK);
  float elapsed = -1;
  ASSERT_EQ(te_event_elapsed_ms(start, end, &elapsed), TE_OK);
  EXPECT_EQ(elapsed, 1.0f); // the stand-in's clock counts launches
  EXPECT_EQ(fakeCounter("fake_cuda_last_grid_x"), 2);
  EXPECT_EQ(fakeCounter("fake_cuda_last_block_x"), 64);
  ASSERT_EQ(te_buffer_read(output.get(), doubled, sizeof(doubled)), TE_OK);
  EXPECT_EQ(doubled[0], 2.0f);
  EXPECT_EQ(doubled[3], 8.0f);
  te_event_release(start);
  te_event_release(end);
  te_stream_release(raw);
}

// An entry that runs as steps keeps its temporaries across launches: each
// stream reuses one set (the stream orders the launches that share it), a
// second stream gets its own, freed with that stream, and the module frees
// the rest.
TEST(CUDADevice, StepsReuseTheirTemporariesPerStream) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  DevicePtr cuda = openDevice("cuda");
  ModulePtr module;
  te_kernel *kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(
      loadFakeKernel(cuda.get(),
                     "te-kernel-abi 4\n"
                     "entry quadruple program\n"
                     "in f32 4\n"
                     "out f32 4\n"
                     "temp 16\n"
                     "step fake_double 1x1x1 32x1x1 0 a0 t0\n"
                     "step fake_double 1x1x1 32x1x1 0 t0 a1\n"
                     "end\n",
                     "quadruple", module, &kernel));
  BufferPtr input = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
  BufferPtr output = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
  int buffers = fakeCounter("fake_cuda_live_allocations");
  te_buffer *args[] = {input.get(), output.get()};
  for (float scale : {1.0f, 2.0f, 3.0f}) {
    float values[4] = {scale, 2, 3, 4}, result[4] = {};
    ASSERT_EQ(te_buffer_write(input.get(), values, sizeof(values)), TE_OK);
    ASSERT_EQ(te_kernel_launch(kernel, args, 2), TE_OK)
        << te_last_error_message();
    ASSERT_EQ(te_buffer_read(output.get(), result, sizeof(result)), TE_OK);
    EXPECT_EQ(result[0], 4 * scale);
    EXPECT_EQ(result[3], 16.0f);
    EXPECT_EQ(fakeCounter("fake_cuda_live_allocations"), buffers + 1);
  }
  te_stream *stream = nullptr;
  ASSERT_EQ(te_stream_create(cuda.get(), &stream), TE_OK);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(te_kernel_launch_on(kernel, args, 2, stream), TE_OK)
        << te_last_error_message();
    EXPECT_EQ(fakeCounter("fake_cuda_live_allocations"), buffers + 2);
  }
  // Releasing the stream frees its set; the module frees the rest.
  te_stream_release(stream);
  EXPECT_EQ(fakeCounter("fake_cuda_live_allocations"), buffers + 1);
  module.reset();
  EXPECT_EQ(fakeCounter("fake_cuda_live_allocations"), buffers);
}

// A library call runs on the launch's stream through the library, which
// is opened at the first call: where it is missing (TE_CUBLASLT names no
// file here), the launch fails with what to do, and bad parameters are
// refused with the parameter that is wrong.
TEST(CUDADevice, LibraryCallsNameWhatIsMissing) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  ASSERT_EQ(setenv("TE_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1), 0);
  DevicePtr cuda = openDevice("cuda");
  ModulePtr module;
  te_kernel *kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(loadFakeKernel(
      cuda.get(),
      "te-kernel-abi 5\n"
      "entry gemm program\n"
      "in f8E4M3FN 16x16\n"
      "in f8E4M3FN 16x16\n"
      "in f32 scalar\n"
      "in f32 scalar\n"
      "out bf16 16x16\n"
      "call cublaslt.matmul "
      "m=16,n=16,k=16,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=none "
      "a0 a1 a2 a3 a4\n"
      "end\n",
      "gemm", module, &kernel));
  BufferPtr a = createBuffer(cuda.get(), TE_DTYPE_F8E4M3FN, {16, 16});
  BufferPtr b = createBuffer(cuda.get(), TE_DTYPE_F8E4M3FN, {16, 16});
  BufferPtr sa = createBuffer(cuda.get(), TE_DTYPE_F32, {});
  BufferPtr sb = createBuffer(cuda.get(), TE_DTYPE_F32, {});
  BufferPtr d = createBuffer(cuda.get(), TE_DTYPE_BF16, {16, 16});
  te_buffer *args[] = {a.get(), b.get(), sa.get(), sb.get(), d.get()};
  expectError([&] { return te_kernel_launch(kernel, args, 5); },
              TE_ERROR_UNSUPPORTED,
              {"kernel 'gemm'", "cublaslt.matmul: cuBLASLt is not installed",
               "/nonexistent/libcublasLt.so.13", "TE_CUDA_GEMM=codegen"});
  unsetenv("TE_CUBLASLT");
}

// cuDNN's attention the same way: where libcudnn is missing the launch says
// so (or, in a build without cuDNN's headers, that the build lacks them),
// and a library function the device does not have is refused by name.
TEST(CUDADevice, CuDNNCallsNameWhatIsMissing) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  ASSERT_EQ(setenv("TE_CUDNN", "/nonexistent/libcudnn.so.9", 1), 0);
  DevicePtr cuda = openDevice("cuda");
  ModulePtr module;
  te_kernel *kernel = nullptr;
  ASSERT_NO_FATAL_FAILURE(loadFakeKernel(
      cuda.get(),
      "te-kernel-abi 5\n"
      "entry attention program\n"
      "in bf16 1x16x2x8\n"
      "in bf16 1x16x2x8\n"
      "in bf16 1x16x2x8\n"
      "out bf16 1x16x2x8\n"
      "call cudnn.sdpa_forward "
      "b=1,hq=2,hkv=2,sq=16,skv=16,d=8,dtype=bf16,layout=bshd,scale=3eb504f3,"
      "align=top_left,left=-1,right=0,stats=0 a0 a1 a2 a3\n"
      "end\n"
      "entry other program\n"
      "in bf16 4\n"
      "out bf16 4\n"
      "call cudnn.convolution x=1 a0 a1\n"
      "end\n",
      "attention", module, &kernel));
  std::vector<BufferPtr> buffers;
  std::vector<te_buffer *> args;
  for (int i = 0; i < 4; ++i) {
    buffers.push_back(createBuffer(cuda.get(), TE_DTYPE_BF16, {1, 16, 2, 8}));
    args.push_back(buffers.back().get());
  }
  expectError([&] { return te_kernel_launch(kernel, args.data(), 4); },
              TE_ERROR_UNSUPPORTED,
              {"kernel 'attention'", "cudnn.sdpa_forward"});
  EXPECT_TRUE(std::string(te_last_error_message()).find("cuDNN") !=
              std::string::npos)
      << te_last_error_message();
  te_kernel *other = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "other", &other), TE_OK);
  BufferPtr in = createBuffer(cuda.get(), TE_DTYPE_BF16, {4});
  BufferPtr out = createBuffer(cuda.get(), TE_DTYPE_BF16, {4});
  te_buffer *otherArgs[] = {in.get(), out.get()};
  expectError([&] { return te_kernel_launch(other, otherArgs, 2); },
              TE_ERROR_UNSUPPORTED,
              {"no library function 'cudnn.convolution'"});
  unsetenv("TE_CUDNN");
}

TEST(CUDADevice, RefusesModulesAndLaunchesItCannotRun) {
  if (noGPUConfigured())
    GTEST_SKIP() << "FAKE_CUDA_DEVICES=0 is CUDADeviceNoGPU's setting";
  DevicePtr cuda = openDevice("cuda");
  te_module *loaded = nullptr;
  std::string notACubin = "ELF? no";
  expectError(
      [&] {
        return te_module_load_image(cuda.get(), notACubin.data(),
                                    notACubin.size(), "x.cubin", &loaded);
      },
      TE_ERROR_LOAD_FAILED,
      {"cuModuleLoadData", "fake driver error 200", "sm_90a"});
  std::string noManifest = fakeImage("");
  expectError(
      [&] {
        return te_module_load_image(cuda.get(), noManifest.data(),
                                    noManifest.size(), "y.cubin", &loaded);
      },
      TE_ERROR_LOAD_FAILED, {"defines no te_kernel_manifest global"});

  // Without geometry a grid kernel cannot run, and says so.
  std::string image = fakeImage("te-kernel-abi 1\n"
                                "entry double fake_double\n"
                                "in f32 4\n"
                                "out f32 4\n"
                                "end\n");
  ASSERT_EQ(te_module_load_image(cuda.get(), image.data(), image.size(),
                                 "fake.cubin", &loaded),
            TE_OK)
      << te_last_error_message();
  ModulePtr module(loaded);
  te_kernel *kernel = nullptr;
  ASSERT_EQ(te_module_get_kernel(loaded, "double", &kernel), TE_OK);
  BufferPtr input = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
  BufferPtr output = createBuffer(cuda.get(), TE_DTYPE_F32, {4});
  te_buffer *args[] = {input.get(), output.get()};
  expectError([&] { return te_kernel_launch(kernel, args, 2); },
              TE_ERROR_UNSUPPORTED,
              {"kernel 'double' failed on device 'cuda' 0",
               "the kernel has no launch geometry"});
}

TEST(CUDADeviceNoGPU, OpeningSaysWhy) {
  if (!noGPUConfigured())
    GTEST_SKIP() << "runs as the ctest test cuda-device-without-gpu "
                    "(FAKE_CUDA_DEVICES=0)";
  te_device *device = nullptr;
  expectError([&] { return te_device_open("cuda", 0, &device); },
              TE_ERROR_NOT_FOUND,
              {"device 'cuda' is not available",
               "the CUDA driver found no GPU (cuInit: fake driver error 100"});
}

} // namespace
