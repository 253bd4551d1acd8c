//===- ThreadingTest.cpp - The runtime used from many threads at once -----===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace te::runtime::testing;

namespace {

constexpr int kThreads = 8;

template <typename Body> void runOnThreads(Body body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(body, t);
  for (std::thread &thread : threads)
    thread.join();
}

TEST(ThreadingTest, SameKernelLaunchesConcurrently) {
  DevicePtr cpu = openDevice("cpu");
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  te_kernel *add = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "add", &add), TE_OK);
  // One input is shared by all threads (read-only); the rest is per thread.
  BufferPtr shared = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
  const float ones[4] = {1, 1, 1, 1};
  ASSERT_EQ(te_buffer_write(shared.get(), ones, sizeof(ones)), TE_OK);

  std::atomic<int> wrong{0};
  runOnThreads([&](int t) {
    BufferPtr own = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
    BufferPtr out = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
    for (int iteration = 0; iteration < 2000; ++iteration) {
      float base = static_cast<float>(t * 10000 + iteration);
      const float in[4] = {base, base + 1, base + 2, base + 3};
      float result[4] = {};
      te_buffer *args[] = {shared.get(), own.get(), out.get()};
      if (te_buffer_write(own.get(), in, sizeof(in)) != TE_OK ||
          te_kernel_launch(add, args, 3) != TE_OK ||
          te_buffer_read(out.get(), result, sizeof(result)) != TE_OK) {
        ++wrong;
        continue;
      }
      for (int i = 0; i < 4; ++i)
        wrong += result[i] != in[i] + 1;
    }
  });
  EXPECT_EQ(wrong, 0);
}

TEST(ThreadingTest, LaunchChecksAreThreadSafe) {
  DevicePtr cpu = openDevice("cpu");
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  te_kernel *sum = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "sum", &sum), TE_OK);
  std::atomic<int> wrong{0};
  runOnThreads([&](int t) {
    // Half the threads launch correctly, half are rejected; each must see
    // its own outcome and its own message.
    BufferPtr in =
        createBuffer(cpu.get(), TE_DTYPE_F32, {int64_t(t % 2 ? 4 : 5)});
    BufferPtr out = createBuffer(cpu.get(), TE_DTYPE_F32, {});
    te_buffer *args[] = {in.get(), out.get()};
    for (int iteration = 0; iteration < 500; ++iteration) {
      te_status status = te_kernel_launch(sum, args, 2);
      if (t % 2)
        wrong += status != TE_OK;
      else
        wrong += status != TE_ERROR_SHAPE_MISMATCH ||
                 std::string(te_last_error_message()).find("got f32 5") ==
                     std::string::npos;
    }
  });
  EXPECT_EQ(wrong, 0);
}

TEST(ThreadingTest, RegistryModulesAndBuffersAreThreadSafe) {
  std::atomic<int> wrong{0};
  runOnThreads([&](int t) {
    // Registering while others open devices.
    std::string name = "fake-thread-" + std::to_string(t);
    FakeDevice &fake = registerFakeDevice(name);
    for (int iteration = 0; iteration < 200; ++iteration) {
      te_device *cpu = nullptr;
      te_device *plugin = nullptr;
      if (te_device_open("cpu", 0, &cpu) != TE_OK ||
          te_device_open(name.c_str(), iteration % 2, &plugin) != TE_OK) {
        ++wrong;
        te_device_release(cpu);
        continue;
      }
      te_buffer *buffer = nullptr;
      int64_t dims[1] = {8};
      wrong += te_buffer_create(plugin, TE_DTYPE_I8, 1, dims, &buffer) != TE_OK;
      te_buffer_retain(buffer);
      te_buffer_release(buffer);
      te_buffer_release(buffer);
      if (iteration % 20 == 0) {
        te_module *module = nullptr;
        wrong += te_module_load(cpu, TE_TEST_KERNELS_PATH, &module) != TE_OK;
        te_module_release(module);
      }
      te_device_release(plugin);
      te_device_release(cpu);
    }
    wrong += fake.liveAllocations != 0 || fake.liveInstances != 0;
  });
  EXPECT_EQ(wrong, 0);
}

} // namespace
