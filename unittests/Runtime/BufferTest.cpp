//===- BufferTest.cpp - Buffers on the host and on a plugin device --------===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include "te/Runtime/HostTemporaries.h"

#include <cstdint>
#include <limits>
#include <vector>

using namespace te::runtime::testing;

namespace {

class BufferTest : public ::testing::Test {
protected:
  DevicePtr cpu = openDevice("cpu");
};

TEST_F(BufferTest, CreateDescribesTheTensor) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_BF16, {2, 3, 5});
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(te_buffer_dtype(buffer.get()), TE_DTYPE_BF16);
  EXPECT_EQ(te_buffer_rank(buffer.get()), 3);
  const int64_t *dims = te_buffer_dims(buffer.get());
  ASSERT_NE(dims, nullptr);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 3);
  EXPECT_EQ(dims[2], 5);
  EXPECT_EQ(te_buffer_size_bytes(buffer.get()), 2u * 3 * 5 * 2);
  EXPECT_EQ(te_buffer_device(buffer.get()), cpu.get());
}

// Host buffers come from the allocator of the host kernels' temporaries:
// a large buffer, once released, is kept and serves the next buffer of its
// size (no fresh mapping whose every page the first write faults in), and
// the release API returns it. Every byte is usable, small buffers too.
TEST_F(BufferTest, LargeHostBuffersAreKeptForReuse) {
  te_host_temporaries_release();
  size_t bytes = (size_t(3) << 20) * sizeof(float);
  BufferPtr large = createBuffer(cpu.get(), TE_DTYPE_F32, {3, 1 << 20});
  ASSERT_NE(large, nullptr);
  void *first = te_buffer_host_pointer(large.get());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  std::vector<float> values(3u << 20, 1.5f);
  values.back() = -2.0f;
  ASSERT_EQ(te_buffer_write(large.get(), values.data(), bytes), TE_OK);
  std::vector<float> back(values.size());
  ASSERT_EQ(te_buffer_read(large.get(), back.data(), bytes), TE_OK);
  EXPECT_EQ(back, values);
  large.reset();
  EXPECT_GE(te_host_temporaries_idle_bytes(), bytes);
  BufferPtr again = createBuffer(cpu.get(), TE_DTYPE_F32, {1 << 20, 3});
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(te_buffer_host_pointer(again.get()), first);
  again.reset();
  te_host_temporaries_release();
  EXPECT_EQ(te_host_temporaries_idle_bytes(), 0u);
  BufferPtr small = createBuffer(cpu.get(), TE_DTYPE_F32, {4, 4});
  ASSERT_NE(small, nullptr);
  EXPECT_NE(te_buffer_host_pointer(small.get()), nullptr);
}

// te_buffer_wrap borrows memory: reads and writes go to it, and the last
// release calls the owner's release function once instead of freeing.
TEST_F(BufferTest, WrappedMemoryIsBorrowedAndGivenBack) {
  EXPECT_EQ(te_device_host_memory(cpu.get()), 1);
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  int released = 0;
  int64_t dims[] = {2, 3};
  te_buffer *buffer = nullptr;
  ASSERT_EQ(te_buffer_wrap(
                cpu.get(), TE_DTYPE_F32, 2, dims, memory.data(),
                memory.size() * sizeof(float),
                [](void *context) { ++*static_cast<int *>(context); },
                &released, &buffer),
            TE_OK)
      << te_last_error_message();
  EXPECT_EQ(te_buffer_host_pointer(buffer), memory.data());
  float values[6] = {};
  ASSERT_EQ(te_buffer_read(buffer, values, sizeof(values)), TE_OK);
  EXPECT_EQ(values[5], 6);
  const float written[6] = {-1, -2, -3, -4, -5, -6};
  ASSERT_EQ(te_buffer_write(buffer, written, sizeof(written)), TE_OK);
  EXPECT_EQ(memory[0], -1);
  te_buffer_retain(buffer);
  te_buffer_release(buffer);
  EXPECT_EQ(released, 0);
  te_buffer_release(buffer);
  EXPECT_EQ(released, 1);
  EXPECT_EQ(memory[5], -6);
}

// Two wrapped buffers over overlapping memory are not copied onto each
// other: a device's copy may not overlap.
TEST_F(BufferTest, CopyRefusesOverlappingWrappedBuffers) {
  alignas(64) float memory[6] = {1, 2, 3, 4, 5, 6};
  int64_t dims[] = {4};
  te_buffer *a = nullptr, *b = nullptr;
  ASSERT_EQ(te_buffer_wrap(cpu.get(), TE_DTYPE_F32, 1, dims, memory, 16,
                           nullptr, nullptr, &a),
            TE_OK);
  ASSERT_EQ(te_buffer_wrap(cpu.get(), TE_DTYPE_F32, 1, dims, memory + 2, 16,
                           nullptr, nullptr, &b),
            TE_OK);
  expectError([&] { return te_buffer_copy(b, a); }, TE_ERROR_INVALID_ARGUMENT,
              {"te_buffer_copy", "overlapping memory"});
  EXPECT_EQ(memory[2], 3);
  te_buffer_release(a);
  te_buffer_release(b);
}

TEST_F(BufferTest, WrapRefusesMemoryThatDoesNotFit) {
  alignas(8) char memory[32] = {};
  int released = 0;
  auto release = [](void *context) { ++*static_cast<int *>(context); };
  int64_t dims[] = {4};
  te_buffer *buffer = reinterpret_cast<te_buffer *>(&released);
  expectError(
      [&] {
        return te_buffer_wrap(cpu.get(), TE_DTYPE_F32, 1, dims, memory, 12,
                              release, &released, &buffer);
      },
      TE_ERROR_SHAPE_MISMATCH,
      {"te_buffer_wrap", "holds 16 bytes, but 12 were given"});
  EXPECT_EQ(buffer, nullptr);
  expectError(
      [&] {
        return te_buffer_wrap(cpu.get(), TE_DTYPE_F32, 1, dims, memory + 2, 16,
                              release, &released, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"is not aligned to the 4 bytes of a f32"});
  expectError(
      [&] {
        return te_buffer_wrap(cpu.get(), TE_DTYPE_F32, 1, dims, nullptr, 16,
                              release, &released, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"data must not be NULL"});
  EXPECT_EQ(released, 0);
}

TEST_F(BufferTest, HostMemoryIsVisibleAndAligned) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_I8, {3});
  void *host = te_buffer_host_pointer(buffer.get());
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(host) % TE_BUFFER_ALIGNMENT, 0u);
  const int8_t values[3] = {1, -2, 3};
  ASSERT_EQ(te_buffer_write(buffer.get(), values, sizeof(values)), TE_OK);
  EXPECT_EQ(static_cast<int8_t *>(host)[1], -2);
}

TEST_F(BufferTest, WriteThenReadRoundTrips) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_F64, {2, 2});
  const double in[4] = {1.5, -2.25, 3e100, 0};
  double out[4] = {};
  ASSERT_EQ(te_buffer_write(buffer.get(), in, sizeof(in)), TE_OK);
  ASSERT_EQ(te_buffer_read(buffer.get(), out, sizeof(out)), TE_OK);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], in[i]);
}

TEST_F(BufferTest, ScalarHasRankZeroAndOneElement) {
  te_buffer *raw = nullptr;
  ASSERT_EQ(te_buffer_create(cpu.get(), TE_DTYPE_I64, 0, nullptr, &raw), TE_OK)
      << te_last_error_message();
  BufferPtr scalar(raw);
  EXPECT_EQ(te_buffer_rank(scalar.get()), 0);
  EXPECT_NE(te_buffer_dims(scalar.get()), nullptr);
  EXPECT_EQ(te_buffer_size_bytes(scalar.get()), 8u);
  int64_t value = -7, back = 0;
  ASSERT_EQ(te_buffer_write(scalar.get(), &value, sizeof(value)), TE_OK);
  ASSERT_EQ(te_buffer_read(scalar.get(), &back, sizeof(back)), TE_OK);
  EXPECT_EQ(back, -7);
}

TEST_F(BufferTest, BooleansTakeOneByte) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_I1, {5});
  EXPECT_EQ(te_buffer_size_bytes(buffer.get()), 5u);
}

TEST_F(BufferTest, EmptyBufferHoldsNoMemory) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_F32, {4, 0});
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(te_buffer_size_bytes(buffer.get()), 0u);
  EXPECT_EQ(te_buffer_host_pointer(buffer.get()), nullptr);
  EXPECT_EQ(te_buffer_write(buffer.get(), nullptr, 0), TE_OK);
  EXPECT_EQ(te_buffer_read(buffer.get(), nullptr, 0), TE_OK);
}

TEST_F(BufferTest, MaximumRankIsAccepted) {
  BufferPtr buffer =
      createBuffer(cpu.get(), TE_DTYPE_I32, {1, 2, 1, 2, 1, 2, 1, 2});
  EXPECT_EQ(te_buffer_rank(buffer.get()), TE_MAX_RANK);
  EXPECT_EQ(te_buffer_size_bytes(buffer.get()), 16u * 4);
}

TEST_F(BufferTest, CreateRejectsBadArguments) {
  te_buffer *buffer = reinterpret_cast<te_buffer *>(0x1);
  const int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  expectError(
      [&] { return te_buffer_create(nullptr, TE_DTYPE_F32, 1, dims, &buffer); },
      TE_ERROR_INVALID_ARGUMENT, {"device must not be NULL"});
  EXPECT_EQ(buffer, nullptr) << "output not cleared on error";
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_F32, 1, dims, nullptr);
      },
      TE_ERROR_INVALID_ARGUMENT, {"out must not be NULL"});
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_F32, 1, nullptr, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"dims must not be NULL"});
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_F32, 9, dims, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"rank 9", "0 to 8"});
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_F32, -1, dims, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"rank -1"});
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_INVALID, 1, dims, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"-1 is not a te_dtype"});
  EXPECT_EQ(buffer, nullptr);
}

TEST_F(BufferTest, CreateRejectsNegativeDimensions) {
  const int64_t dims[3] = {4, -3, 2};
  te_buffer *buffer = nullptr;
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_F32, 3, dims, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"dimension 1 is -3"});
  EXPECT_EQ(buffer, nullptr);
}

TEST_F(BufferTest, CreateRejectsSizesThatOverflow) {
  te_buffer *buffer = nullptr;
  const int64_t huge = std::numeric_limits<int64_t>::max();
  const int64_t oneDim[1] = {huge};
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_F32, 1, oneDim, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"f32 9223372036854775807", "does not fit"});
  // Each factor fits; only the product overflows.
  const int64_t product[3] = {1 << 22, 1 << 22, 1 << 22};
  expectError(
      [&] {
        return te_buffer_create(cpu.get(), TE_DTYPE_I8, 3, product, &buffer);
      },
      TE_ERROR_INVALID_ARGUMENT, {"does not fit"});
  EXPECT_EQ(buffer, nullptr);
}

TEST_F(BufferTest, TransfersMustCoverTheWholeBuffer) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
  float data[5] = {};
  expectError([&] { return te_buffer_write(buffer.get(), data, 12); },
              TE_ERROR_SHAPE_MISMATCH,
              {"te_buffer_write", "f32 4", "16 bytes", "12 were given"});
  expectError([&] { return te_buffer_write(buffer.get(), data, 20); },
              TE_ERROR_SHAPE_MISMATCH, {"20 were given"});
  expectError([&] { return te_buffer_read(buffer.get(), data, 12); },
              TE_ERROR_SHAPE_MISMATCH, {"te_buffer_read", "12 were given"});
}

TEST_F(BufferTest, TransfersRejectNull) {
  BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
  float data[4] = {};
  expectError([&] { return te_buffer_write(nullptr, data, 16); },
              TE_ERROR_INVALID_ARGUMENT, {"buffer must not be NULL"});
  expectError([&] { return te_buffer_write(buffer.get(), nullptr, 16); },
              TE_ERROR_INVALID_ARGUMENT, {"host data pointer"});
  expectError([&] { return te_buffer_read(nullptr, data, 16); },
              TE_ERROR_INVALID_ARGUMENT, {"buffer must not be NULL"});
  expectError([&] { return te_buffer_read(buffer.get(), nullptr, 16); },
              TE_ERROR_INVALID_ARGUMENT, {"host data pointer"});
}

TEST_F(BufferTest, GettersAcceptNull) {
  EXPECT_EQ(te_buffer_dtype(nullptr), TE_DTYPE_INVALID);
  EXPECT_EQ(te_buffer_rank(nullptr), -1);
  EXPECT_EQ(te_buffer_dims(nullptr), nullptr);
  EXPECT_EQ(te_buffer_size_bytes(nullptr), 0u);
  EXPECT_EQ(te_buffer_device(nullptr), nullptr);
  EXPECT_EQ(te_buffer_host_pointer(nullptr), nullptr);
  te_buffer_retain(nullptr);
  te_buffer_release(nullptr);
}

TEST_F(BufferTest, CopyDuplicatesContents) {
  BufferPtr src = createBuffer(cpu.get(), TE_DTYPE_I32, {3});
  BufferPtr dst = createBuffer(cpu.get(), TE_DTYPE_I32, {3});
  const int32_t in[3] = {7, 8, 9};
  int32_t out[3] = {};
  ASSERT_EQ(te_buffer_write(src.get(), in, sizeof(in)), TE_OK);
  ASSERT_EQ(te_buffer_copy(dst.get(), src.get()), TE_OK)
      << te_last_error_message();
  ASSERT_EQ(te_buffer_read(dst.get(), out, sizeof(out)), TE_OK);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[2], 9);
  EXPECT_EQ(te_buffer_copy(src.get(), src.get()), TE_OK);
}

TEST_F(BufferTest, CopyRejectsMismatches) {
  BufferPtr f32 = createBuffer(cpu.get(), TE_DTYPE_F32, {3});
  BufferPtr i32 = createBuffer(cpu.get(), TE_DTYPE_I32, {3});
  BufferPtr longer = createBuffer(cpu.get(), TE_DTYPE_F32, {4});
  expectError([&] { return te_buffer_copy(i32.get(), f32.get()); },
              TE_ERROR_DTYPE_MISMATCH, {"dst is i32 3", "src is f32 3"});
  expectError([&] { return te_buffer_copy(longer.get(), f32.get()); },
              TE_ERROR_SHAPE_MISMATCH, {"dst is f32 4", "src is f32 3"});
  expectError([&] { return te_buffer_copy(nullptr, f32.get()); },
              TE_ERROR_INVALID_ARGUMENT, {"dst must not be NULL"});
  expectError([&] { return te_buffer_copy(f32.get(), nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"src must not be NULL"});

  registerFakeDevice("fake-copy-across");
  DevicePtr fake = openDevice("fake-copy-across");
  BufferPtr elsewhere = createBuffer(fake.get(), TE_DTYPE_F32, {3});
  expectError([&] { return te_buffer_copy(elsewhere.get(), f32.get()); },
              TE_ERROR_INVALID_ARGUMENT,
              {"'cpu' 0", "'fake-copy-across' 0", "te_buffer_read"});
}

TEST_F(BufferTest, RetainKeepsTheBufferAlive) {
  FakeDevice &fake = registerFakeDevice("fake-retain");
  DevicePtr device = openDevice("fake-retain");
  te_buffer *buffer = createBuffer(device.get(), TE_DTYPE_F32, {2}).release();
  te_buffer_retain(buffer);
  te_buffer_release(buffer);
  EXPECT_EQ(fake.liveAllocations, 1);
  EXPECT_EQ(te_buffer_size_bytes(buffer), 8u);
  te_buffer_release(buffer);
  EXPECT_EQ(fake.liveAllocations, 0);
}

// The generic buffer code must work for a device that is not the host: every
// transfer goes through the plugin's table and its memory is not host visible.
TEST_F(BufferTest, PluginDeviceStoresBuffers) {
  FakeDevice &fake = registerFakeDevice("fake-buffers");
  DevicePtr device = openDevice("fake-buffers");
  {
    BufferPtr a = createBuffer(device.get(), TE_DTYPE_F32, {2, 2});
    BufferPtr b = createBuffer(device.get(), TE_DTYPE_F32, {2, 2});
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(fake.liveAllocations, 2);
    EXPECT_EQ(te_buffer_device(a.get()), device.get());
    EXPECT_EQ(te_buffer_host_pointer(a.get()), nullptr);

    const float in[4] = {1, 2, 3, 4};
    float out[4] = {};
    ASSERT_EQ(te_buffer_write(a.get(), in, sizeof(in)), TE_OK);
    ASSERT_EQ(te_buffer_copy(b.get(), a.get()), TE_OK);
    ASSERT_EQ(te_buffer_read(b.get(), out, sizeof(out)), TE_OK);
    EXPECT_EQ(out[3], 4);
    EXPECT_EQ(fake.copiesToDevice, 1);
    EXPECT_EQ(fake.deviceCopies, 1);
    EXPECT_EQ(fake.copiesToHost, 1);
  }
  EXPECT_EQ(fake.liveAllocations, 0);
}

TEST_F(BufferTest, PluginAllocationFailureIsOutOfMemory) {
  FakeDevice &fake = registerFakeDevice("fake-oom");
  fake.failAllocate = true;
  DevicePtr device = openDevice("fake-oom");
  const int64_t dims[2] = {16, 16};
  te_buffer *buffer = nullptr;
  expectError(
      [&] {
        return te_buffer_create(device.get(), TE_DTYPE_F32, 2, dims, &buffer);
      },
      TE_ERROR_OUT_OF_MEMORY, {"'fake-oom' 0", "1024 bytes", "f32 16x16"});
  EXPECT_EQ(buffer, nullptr);
}

} // namespace
