//===- HostTemporariesTest.cpp - Host kernels' temporary memory -----------===//
//
// The test kernel library takes the runtime's allocator at load, as te-mlir's
// cpu kernels do, and its `temporary` entry allocates, fills and frees one
// block, returning its address: whether a later launch gets the same block
// back shows what the runtime kept.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtils.h"

#include "te/Runtime/HostTemporaries.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace te::runtime::testing;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TE_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TE_TEST_ASAN 1
#endif
#ifdef TE_TEST_ASAN
// AnImpossibleSizeIsANullBlock asks for more than the address space: the C
// library answers null, AddressSanitizer's allocator aborts unless told to
// answer null too (scripts/sanitize.sh runs this binary).
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1";
}
#endif

namespace {

constexpr size_t kMiB = size_t(1) << 20;

class HostTemporariesTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_NE(module, nullptr);
    ASSERT_EQ(te_module_get_kernel(module.get(), "temporary", &kernel), TE_OK)
        << te_last_error_message();
    te_host_temporaries_release();
    ASSERT_EQ(te_host_temporaries_set_limit(64 * kMiB), TE_OK);
  }

  void TearDown() override {
    // The process's default again (the environment's, else 1 GiB).
    te_host_temporaries_set_limit(size_t(-1));
    te_host_temporaries_release();
  }

  /// The address of a temporary of `bytes` aligned to `alignment`, filled
  /// and freed by a launch (0: the allocation failed).
  uintptr_t launch(int64_t bytes, int64_t alignment) {
    BufferPtr size = scalar(bytes), align = scalar(alignment), out = scalar(0);
    te_buffer *args[] = {size.get(), align.get(), out.get()};
    EXPECT_EQ(te_kernel_launch(kernel, args, 3), TE_OK)
        << te_last_error_message();
    int64_t address = 0;
    EXPECT_EQ(te_buffer_read(out.get(), &address, sizeof(address)), TE_OK);
    return static_cast<uintptr_t>(address);
  }

  BufferPtr scalar(int64_t value) {
    BufferPtr buffer = createBuffer(cpu.get(), TE_DTYPE_I64, {});
    EXPECT_EQ(te_buffer_write(buffer.get(), &value, sizeof(value)), TE_OK);
    return buffer;
  }

  DevicePtr cpu = openDevice("cpu");
  ModulePtr module = loadModule(cpu.get(), TE_TEST_KERNELS_PATH);
  te_kernel *kernel = nullptr;
};

TEST_F(HostTemporariesTest, LargeBlocksAreKeptForTheNextLaunch) {
  uintptr_t first = launch(4 * kMiB, 64);
  ASSERT_NE(first, 0u);
  EXPECT_EQ(first % 64, 0u);
  size_t idle = te_host_temporaries_idle_bytes();
  EXPECT_GE(idle, 4 * kMiB);
  EXPECT_LT(idle, 4 * kMiB + 128 * 1024);
  // The same block again, and no more idle bytes than before.
  EXPECT_EQ(launch(4 * kMiB, 64), first);
  EXPECT_EQ(launch(4 * kMiB - 1000, 16), first) << "a little smaller";
  EXPECT_EQ(te_host_temporaries_idle_bytes(), idle);
  // A much smaller request does not take the big block.
  uintptr_t smaller = launch(1 * kMiB, 64);
  EXPECT_NE(smaller, first);
  EXPECT_GE(te_host_temporaries_idle_bytes(), idle + kMiB);
}

TEST_F(HostTemporariesTest, SmallBlocksAreTheCLibrarys) {
  for (int64_t bytes : {1, 100, 4096, 200000}) {
    SCOPED_TRACE(bytes);
    uintptr_t address = launch(bytes, 16);
    ASSERT_NE(address, 0u);
    EXPECT_EQ(address % 16, 0u);
    EXPECT_EQ(te_host_temporaries_idle_bytes(), 0u);
  }
}

TEST_F(HostTemporariesTest, EveryAlignmentIsHonored) {
  for (int64_t alignment : {1, 8, 64, 256, 4096, 8192, 65536}) {
    for (int64_t bytes : {int64_t(1000), int64_t(3 * kMiB)}) {
      SCOPED_TRACE(std::to_string(alignment) + " " + std::to_string(bytes));
      uintptr_t address = launch(bytes, alignment);
      ASSERT_NE(address, 0u);
      EXPECT_EQ(address % alignment, 0u);
    }
  }
  // Not a power of two: the C library's default alignment.
  EXPECT_EQ(launch(1000, 48) % alignof(std::max_align_t), 0u);
}

TEST_F(HostTemporariesTest, TheLimitBoundsTheIdleBytes) {
  ASSERT_EQ(te_host_temporaries_set_limit(6 * kMiB), TE_OK);
  EXPECT_EQ(te_host_temporaries_limit(), 6 * kMiB);
  // Alternating sizes keep the most recent blocks; the oldest go first.
  for (int round = 0; round < 4; ++round) {
    for (size_t mib : {1, 2, 3, 4}) {
      ASSERT_NE(launch(mib * kMiB, 64), 0u);
      EXPECT_LE(te_host_temporaries_idle_bytes(), 6 * kMiB);
    }
  }
  uintptr_t four = launch(4 * kMiB, 64);
  EXPECT_EQ(launch(4 * kMiB, 64), four) << "the newest block stays";
  // A block above the limit is not kept at all.
  ASSERT_EQ(te_host_temporaries_set_limit(kMiB), TE_OK);
  EXPECT_LE(te_host_temporaries_idle_bytes(), kMiB);
  launch(2 * kMiB, 64);
  EXPECT_LE(te_host_temporaries_idle_bytes(), kMiB);
  // 0 keeps nothing.
  ASSERT_EQ(te_host_temporaries_set_limit(0), TE_OK);
  EXPECT_EQ(te_host_temporaries_idle_bytes(), 0u);
  launch(2 * kMiB, 64);
  EXPECT_EQ(te_host_temporaries_idle_bytes(), 0u);
}

TEST_F(HostTemporariesTest, ReleaseFreesWhatIsIdle) {
  launch(2 * kMiB, 64);
  launch(8 * kMiB, 64);
  EXPECT_GE(te_host_temporaries_idle_bytes(), 10 * kMiB);
  te_host_temporaries_release();
  EXPECT_EQ(te_host_temporaries_idle_bytes(), 0u);
}

TEST_F(HostTemporariesTest, AnImpossibleSizeIsANullBlock) {
  launch(4 * kMiB, 64);
  EXPECT_EQ(launch(int64_t(1) << 62, 64), 0u);
  EXPECT_EQ(launch(INT64_MAX, 64), 0u);
  // Short of memory, the runtime gave back what was idle first.
  EXPECT_EQ(te_host_temporaries_idle_bytes(), 0u);
  EXPECT_NE(launch(4 * kMiB, 64), 0u);
}

// Run by ctest in processes of their own with TE_HOST_TEMPORARIES_BYTES
// set, too (the default is read once per process).
TEST(HostTemporariesEnvironment, LimitComesFromTheEnvironment) {
  const char *text = std::getenv("TE_HOST_TEMPORARIES_BYTES");
  std::string value = text ? text : "lots";
  size_t expected = value == "12345678" ? 12345678 : size_t(1) << 30;
  ASSERT_TRUE(value == "12345678" || value == "lots") << value;
  EXPECT_EQ(te_host_temporaries_limit(), expected);
}

} // namespace
