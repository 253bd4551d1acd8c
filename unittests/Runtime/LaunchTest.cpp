//===- LaunchTest.cpp - Checked kernel launches ---------------------------===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace te::runtime::testing;

namespace {

class LaunchTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_NE(cpu, nullptr);
    ASSERT_NE(module, nullptr);
  }

  te_kernel *kernel(const char *entry) {
    te_kernel *result = nullptr;
    EXPECT_EQ(te_module_get_kernel(module.get(), entry, &result), TE_OK)
        << te_last_error_message();
    return result;
  }

  BufferPtr f32Vector(std::vector<float> values) {
    BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_F32,
                                    {static_cast<int64_t>(values.size())});
    EXPECT_EQ(te_buffer_write(buffer.get(), values.data(),
                              values.size() * sizeof(float)),
              TE_OK);
    return buffer;
  }

  std::vector<float> readF32(te_buffer *buffer) {
    std::vector<float> values(te_buffer_size_bytes(buffer) / sizeof(float));
    EXPECT_EQ(
        te_buffer_read(buffer, values.data(), values.size() * sizeof(float)),
        TE_OK);
    return values;
  }

  /// Runs a launch that must be rejected and checks it ran nothing: `output`
  /// still holds the sentinel it was filled with.
  void expectRejected(te_kernel *k, std::vector<te_buffer *> args,
                      te_buffer *output, te_status expected,
                      const std::vector<std::string> &fragments) {
    std::vector<float> sentinel(te_buffer_size_bytes(output) / sizeof(float),
                                -1234.0f);
    ASSERT_EQ(te_buffer_write(output, sentinel.data(),
                              sentinel.size() * sizeof(float)),
              TE_OK);
    expectError(
        [&] {
          return te_kernel_launch(k, args.data(),
                                  static_cast<int>(args.size()));
        },
        expected, fragments);
    EXPECT_EQ(readF32(output), sentinel) << "a rejected launch ran the kernel";
  }

  DevicePtr cpu = openDevice("cpu");
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
};

TEST_F(LaunchTest, AddComputesTheSum) {
  BufferPtr lhs = f32Vector({1, 2, 3, 4});
  BufferPtr rhs = f32Vector({10, 20, 30, 40});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  te_buffer *args[] = {lhs.get(), rhs.get(), out.get()};
  ASSERT_EQ(te_kernel_launch(kernel("add"), args, 3), TE_OK)
      << te_last_error_message();
  ASSERT_EQ(te_device_synchronize(cpu.get()), TE_OK);
  EXPECT_EQ(readF32(out.get()), (std::vector<float>{11, 22, 33, 44}));
}

// Every launch passes the runtime's thread count to the library;
// te_set_num_threads changes it from the next launch on, 0 restores the
// default, and counts outside 0..4096 are refused.
TEST_F(LaunchTest, LaunchesPassTheThreadCount) {
  BufferPtr out = createBuffer(cpu.get(), TE_DTYPE_I32, {});
  te_buffer *args[] = {out.get()};
  auto launched = [&] {
    int32_t threads = 0;
    EXPECT_EQ(te_kernel_launch(kernel("threads"), args, 1), TE_OK)
        << te_last_error_message();
    EXPECT_EQ(te_buffer_read(out.get(), &threads, sizeof(threads)), TE_OK);
    return threads;
  };
  int defaultThreads = te_get_num_threads();
  EXPECT_GE(defaultThreads, 1);
  EXPECT_EQ(launched(), defaultThreads);

  ASSERT_EQ(te_set_num_threads(3), TE_OK);
  EXPECT_EQ(te_get_num_threads(), 3);
  EXPECT_EQ(launched(), 3);

  expectError([] { return te_set_num_threads(-1); }, TE_ERROR_INVALID_ARGUMENT,
              {"te_set_num_threads", "-1"});
  expectError([] { return te_set_num_threads(4097); },
              TE_ERROR_INVALID_ARGUMENT, {"1 to 4096"});
  EXPECT_EQ(te_get_num_threads(), 3);

  ASSERT_EQ(te_set_num_threads(0), TE_OK);
  EXPECT_EQ(te_get_num_threads(), defaultThreads);
  EXPECT_EQ(launched(), defaultThreads);
}

// An entry of several kernels runs its steps in order, passing its
// temporaries between them.
TEST_F(LaunchTest, StepsRunInOrderThroughTheirTemporaries) {
  BufferPtr input = f32Vector({1, 2, 3, 4});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  BufferPtr sum = createBuffer(cpu.get(), TE_DTYPE_F32, {});
  te_buffer *args[] = {input.get(), out.get(), sum.get()};
  te_kernel *plan = kernel("square_plus_one");
  ASSERT_EQ(te_kernel_num_args(plan), 3);
  ASSERT_EQ(te_kernel_launch(plan, args, 3), TE_OK) << te_last_error_message();
  ASSERT_EQ(te_device_synchronize(cpu.get()), TE_OK);
  EXPECT_EQ(readF32(out.get()), (std::vector<float>{2, 5, 10, 17}));
  EXPECT_EQ(readF32(sum.get()), (std::vector<float>{30}));
  // Arguments are checked against the entry as for one kernel.
  expectRejected(plan, {input.get(), input.get(), sum.get()}, sum.get(),
                 TE_ERROR_INVALID_ARGUMENT,
                 {"square_plus_one", "argument 1 (output) is the same buffer"});
}

// A kernel with checks gets a status buffer after its outputs; a failing
// check fails the launch with its message, the values filled in (text that
// only looks like a placeholder stays as it is).
TEST_F(LaunchTest, FailingChecksFailTheLaunchWithTheirMessage) {
  te_kernel *checked = kernel("checked");
  EXPECT_EQ(te_kernel_num_args(checked), 2); // the status is not an argument
  BufferPtr out = f32Vector({0, 0, 0, 0});

  BufferPtr good = f32Vector({1, 2, 3, 4});
  te_buffer *args[] = {good.get(), out.get()};
  ASSERT_EQ(te_kernel_launch(checked, args, 2), TE_OK)
      << te_last_error_message();
  EXPECT_EQ(readF32(out.get()), (std::vector<float>{2, 4, 6, 8}));

  BufferPtr negative = f32Vector({1, -7.5f, 3, -1});
  args[0] = negative.get();
  expectError([&] { return te_kernel_launch(checked, args, 2); },
              TE_ERROR_KERNEL_FAILED,
              {"element 1 is negative (-7, 2 of them); 100% wrong {x}"});
  EXPECT_EQ(std::string(te_last_error_message()),
            "element 1 is negative (-7, 2 of them); 100% wrong {x}");
  EXPECT_STREQ(te_status_string(TE_ERROR_KERNEL_FAILED),
               "TE_ERROR_KERNEL_FAILED");

  BufferPtr nan = f32Vector({1, 2, std::nanf(""), -1});
  args[0] = nan.get();
  expectError([&] { return te_kernel_launch(checked, args, 2); },
              TE_ERROR_KERNEL_FAILED, {"first: element 2 is 0"});

  // A later good launch is not affected.
  args[0] = good.get();
  EXPECT_EQ(te_kernel_launch(checked, args, 2), TE_OK);
}

TEST_F(LaunchTest, InputsMayShareABuffer) {
  BufferPtr in = f32Vector({1, 2, 3, 4});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  te_buffer *args[] = {in.get(), in.get(), out.get()};
  ASSERT_EQ(te_kernel_launch(kernel("add"), args, 3), TE_OK)
      << te_last_error_message();
  EXPECT_EQ(readF32(out.get()), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(LaunchTest, ScalarOutputReceivesTheReduction) {
  BufferPtr in = f32Vector({1, 2, 3, 4});
  BufferPtr out = createBuffer(cpu.get(), TE_DTYPE_F32, {});
  te_buffer *args[] = {in.get(), out.get()};
  ASSERT_EQ(te_kernel_launch(kernel("sum"), args, 2), TE_OK)
      << te_last_error_message();
  EXPECT_EQ(readF32(out.get()), std::vector<float>{10});
}

TEST_F(LaunchTest, SeveralOutputsAreWritten) {
  BufferPtr in = f32Vector({1, -2, 3, -4});
  BufferPtr first = f32Vector({0, 0, 0, 0});
  BufferPtr second = f32Vector({0, 0, 0, 0});
  te_buffer *args[] = {in.get(), first.get(), second.get()};
  ASSERT_EQ(te_kernel_launch(kernel("split"), args, 3), TE_OK)
      << te_last_error_message();
  EXPECT_EQ(readF32(first.get()), (std::vector<float>{1, -2, 3, -4}));
  EXPECT_EQ(readF32(second.get()), (std::vector<float>{-1, 2, -3, 4}));
}

TEST_F(LaunchTest, ManyArgumentsArePassedInOrder) {
  std::vector<BufferPtr> inputs;
  std::vector<te_buffer *> args;
  for (int32_t i = 0; i < 16; ++i) {
    inputs.push_back(createBuffer(cpu.get(), TE_DTYPE_I32, {}));
    int32_t value = 1 << i;
    ASSERT_EQ(te_buffer_write(inputs.back().get(), &value, sizeof(value)),
              TE_OK);
    args.push_back(inputs.back().get());
  }
  BufferPtr total = createBuffer(cpu.get(), TE_DTYPE_I64, {});
  args.push_back(total.get());
  ASSERT_EQ(te_kernel_launch(kernel("sum16"), args.data(), 17), TE_OK)
      << te_last_error_message();
  int64_t result = 0;
  ASSERT_EQ(te_buffer_read(total.get(), &result, sizeof(result)), TE_OK);
  EXPECT_EQ(result, 0xffff);
}

TEST_F(LaunchTest, RejectsTheWrongArgumentCount) {
  BufferPtr a = f32Vector({1, 2, 3, 4});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  expectRejected(
      kernel("add"), {a.get(), out.get()}, out.get(), TE_ERROR_INVALID_ARGUMENT,
      {"'add'", "takes 3 arguments (2 inputs, 1 output)", "2 were given"});
  expectRejected(kernel("add"), {a.get(), a.get(), out.get(), out.get()},
                 out.get(), TE_ERROR_INVALID_ARGUMENT, {"4 were given"});
}

TEST_F(LaunchTest, RejectsNullArguments) {
  BufferPtr a = f32Vector({1, 2, 3, 4});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  te_buffer *args[] = {a.get(), a.get(), out.get()};
  expectError([&] { return te_kernel_launch(nullptr, args, 3); },
              TE_ERROR_INVALID_ARGUMENT, {"kernel must not be NULL"});
  expectError([&] { return te_kernel_launch(kernel("add"), nullptr, 3); },
              TE_ERROR_INVALID_ARGUMENT, {"args must not be NULL"});
  expectRejected(kernel("add"), {a.get(), nullptr, out.get()}, out.get(),
                 TE_ERROR_INVALID_ARGUMENT, {"argument 1 (input) is NULL"});
}

TEST_F(LaunchTest, RejectsTheWrongDType) {
  BufferPtr in = createBuffer(cpu.get(), TE_DTYPE_F32, {2, 128, 16, 64});
  BufferPtr out = createBuffer(cpu.get(), TE_DTYPE_BF16, {2, 128, 16, 64});
  te_buffer *args[] = {in.get(), out.get()};
  expectError(
      [&] { return te_kernel_launch(kernel("attention_identity"), args, 2); },
      TE_ERROR_DTYPE_MISMATCH,
      {"argument 0 (input): expected bf16 2x128x16x64, got f32 2x128x16x64"});

  BufferPtr i32 = createBuffer(cpu.get(), TE_DTYPE_I32, {4});
  BufferPtr a = f32Vector({1, 2, 3, 4});
  expectRejected(kernel("add"), {a.get(), a.get(), i32.get()}, i32.get(),
                 TE_ERROR_DTYPE_MISMATCH,
                 {"argument 2 (output): expected f32 4, got i32 4"});
}

TEST_F(LaunchTest, RejectsTheWrongShape) {
  BufferPtr a = f32Vector({1, 2, 3, 4});
  BufferPtr five = f32Vector({1, 2, 3, 4, 5});
  BufferPtr square = createBuffer(cpu.get(), TE_DTYPE_F32, {2, 2});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  expectRejected(kernel("add"), {a.get(), five.get(), out.get()}, out.get(),
                 TE_ERROR_SHAPE_MISMATCH,
                 {"argument 1 (input): expected f32 4, got f32 5"});
  expectRejected(kernel("add"), {square.get(), a.get(), out.get()}, out.get(),
                 TE_ERROR_SHAPE_MISMATCH,
                 {"argument 0 (input): expected f32 4, got f32 2x2"});
  BufferPtr one = f32Vector({0});
  expectRejected(kernel("sum"), {a.get(), one.get()}, one.get(),
                 TE_ERROR_SHAPE_MISMATCH,
                 {"argument 1 (output): expected f32 scalar, got f32 1"});
}

TEST_F(LaunchTest, RejectsBuffersOnAnotherDevice) {
  registerFakeDevice("fake-launch-elsewhere");
  DevicePtr fake = openDevice("fake-launch-elsewhere");
  BufferPtr remote = createBuffer(fake.get(), TE_DTYPE_F32, {4});
  BufferPtr a = f32Vector({1, 2, 3, 4});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  expectRejected(kernel("add"), {a.get(), remote.get(), out.get()}, out.get(),
                 TE_ERROR_INVALID_ARGUMENT,
                 {"argument 1 (input) is on device 'fake-launch-elsewhere' 0",
                  "runs on 'cpu' 0"});
}

TEST_F(LaunchTest, RejectsOutputsAliasingOtherArguments) {
  BufferPtr a = f32Vector({1, 2, 3, 4});
  BufferPtr b = f32Vector({5, 6, 7, 8});
  expectRejected(kernel("add"), {a.get(), b.get(), a.get()}, a.get(),
                 TE_ERROR_INVALID_ARGUMENT,
                 {"argument 2 (output) is the same buffer as argument 0 "
                  "(input)"});
  BufferPtr out = f32Vector({0, 0, 0, 0});
  expectRejected(kernel("split"), {a.get(), out.get(), out.get()}, out.get(),
                 TE_ERROR_INVALID_ARGUMENT,
                 {"argument 1 (output) is the same buffer as argument 2 "
                  "(output)"});
}

// Kernels read and write wrapped memory in place; wrapped buffers that
// share memory are not the same buffer, so the check compares addresses.
TEST_F(LaunchTest, WrappedMemoryIsUsedInPlaceAndOverlapsAreRefused) {
  alignas(64) float memory[12] = {1, 2, 3, 4, 10, 20, 30, 40, 0, 0, 0, 0};
  auto wrap = [&](float *data) {
    int64_t dims[] = {4};
    te_buffer *buffer = nullptr;
    EXPECT_EQ(te_buffer_wrap(cpu.get(), TE_DTYPE_F32, 1, dims, data,
                             4 * sizeof(float), nullptr, nullptr, &buffer),
              TE_OK)
        << te_last_error_message();
    return BufferPtr(buffer);
  };
  BufferPtr a = wrap(memory), b = wrap(memory + 4), out = wrap(memory + 8);
  te_buffer *args[] = {a.get(), b.get(), out.get()};
  ASSERT_EQ(te_kernel_launch(kernel("add"), args, 3), TE_OK)
      << te_last_error_message();
  ASSERT_EQ(te_device_synchronize(cpu.get()), TE_OK);
  EXPECT_EQ(std::vector<float>(memory + 8, memory + 12),
            (std::vector<float>{11, 22, 33, 44}));
  // An output over the second half of an input and the first of another.
  BufferPtr across = wrap(memory + 2);
  expectRejected(kernel("add"), {a.get(), b.get(), across.get()}, across.get(),
                 TE_ERROR_INVALID_ARGUMENT,
                 {"argument 2 (output) overlaps the memory of argument 0 "
                  "(input)"});
}

// The launch path is generic: a plugin's kernels run through its table.
TEST_F(LaunchTest, PluginKernelsLaunchThroughTheTable) {
  FakeDevice &fake =
      registerFakeDevice("fake-launch-modules", /*withModules=*/true);
  DevicePtr device = openDevice("fake-launch-modules");
  ModulePtr plugin = loadModule(device.get(), "kernels.fatbin");
  te_kernel *twice = nullptr;
  ASSERT_EQ(te_module_get_kernel(plugin.get(), "double", &twice), TE_OK);
  BufferPtr in = createBuffer(device.get(), TE_DTYPE_F32, {4});
  BufferPtr out = createBuffer(device.get(), TE_DTYPE_F32, {4});
  const float values[4] = {1, 2, 3, 4.5f};
  ASSERT_EQ(te_buffer_write(in.get(), values, sizeof(values)), TE_OK);
  te_buffer *args[] = {in.get(), out.get()};
  ASSERT_EQ(te_kernel_launch(twice, args, 2), TE_OK) << te_last_error_message();
  EXPECT_EQ(fake.launches, 1);
  float result[4] = {};
  ASSERT_EQ(te_buffer_read(out.get(), result, sizeof(result)), TE_OK);
  EXPECT_EQ(result[3], 9.0f);

  // Host buffers cannot be passed to the plugin's kernel, nor the reverse.
  BufferPtr host = f32Vector({1, 2, 3, 4});
  te_buffer *mixed[] = {host.get(), out.get()};
  expectError([&] { return te_kernel_launch(twice, mixed, 2); },
              TE_ERROR_INVALID_ARGUMENT,
              {"argument 0 (input) is on device 'cpu' 0",
               "runs on 'fake-launch-modules' 0"});
  EXPECT_EQ(fake.launches, 1);
}

// A library call runs in order with the kernel steps, on the launch's
// stream with its execution context, taking the operands' addresses and
// byte sizes (which the device checks against the call's parameters).
TEST_F(LaunchTest, LibraryCallsRunInOrderWithTheSteps) {
  FakeDevice &fake = registerFakeDevice("fake-library-calls",
                                        /*withModules=*/true,
                                        /*withStreams=*/true);
  fake.manifest = "te-kernel-abi 5\n"
                  "entry quadruple program\n"
                  "in f32 4\n"
                  "out f32 4\n"
                  "temp 16\n"
                  "step fake_double 1 1 0 a0 t0\n"
                  "call fake.double n=4,scale=2 t0 a1\n"
                  "end\n";
  DevicePtr device = openDevice("fake-library-calls");
  ModulePtr module = loadModule(device.get(), "calls.fatbin");
  te_kernel *kernel = nullptr;
  ASSERT_EQ(te_module_get_kernel(module.get(), "quadruple", &kernel), TE_OK);
  BufferPtr in = createBuffer(device.get(), TE_DTYPE_F32, {4});
  BufferPtr out = createBuffer(device.get(), TE_DTYPE_F32, {4});
  const float values[4] = {1, 2, 3, 4.5f};
  ASSERT_EQ(te_buffer_write(in.get(), values, sizeof(values)), TE_OK);
  te_stream *stream = nullptr;
  ASSERT_EQ(te_stream_create(device.get(), &stream), TE_OK);
  te_buffer *args[] = {in.get(), out.get()};
  ASSERT_EQ(te_kernel_launch_on(kernel, args, 2, stream), TE_OK)
      << te_last_error_message();
  float result[4] = {};
  ASSERT_EQ(te_buffer_read(out.get(), result, sizeof(result)), TE_OK);
  EXPECT_EQ(result[0], 4.0f);
  EXPECT_EQ(result[3], 18.0f);
  {
    std::lock_guard<std::mutex> lock(fake.callsMutex);
    ASSERT_EQ(fake.calls.size(), 1u);
    const FakeDevice::LibraryCall &call = fake.calls.back();
    EXPECT_EQ(call.function, "fake.double");
    EXPECT_EQ(call.parameters, "n=4,scale=2");
    EXPECT_EQ(call.sizes, (std::vector<size_t>{16, 16}));
    EXPECT_EQ(call.stream, fake.lastStream.load());
    EXPECT_NE(call.execContext, nullptr);
    EXPECT_EQ(call.execContext, fake.lastExecContext.load());
  }
  te_stream_release(stream);
}

} // namespace
