//===- DeviceTest.cpp - Device registry and plugin device tables ----------===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include <cstring>

using namespace te::runtime::testing;

namespace {

/// A minimal valid table; each test breaks one thing about it.
te_device_ops validOps(const char *name) {
  static FakeDevice prototype;
  te_device_ops ops = prototype.ops();
  ops.name = name;
  return ops;
}

TEST(DeviceTest, HostDeviceIsBuiltIn) {
  DevicePtr cpu = openDevice("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_STREQ(te_device_name(cpu.get()), "cpu");
  EXPECT_EQ(te_device_index(cpu.get()), 0);
  EXPECT_EQ(te_device_synchronize(cpu.get()), TE_OK);
}

// Host arrays can be wrapped on the cpu device, not on one whose memory
// the host reaches only through copies.
TEST(DeviceTest, HostMemoryIsTheCpuDevicesOnly) {
  DevicePtr cpu = openDevice("cpu");
  EXPECT_EQ(te_device_host_memory(cpu.get()), 1);
  registerFakeDevice("fake-host-memory");
  DevicePtr fake = openDevice("fake-host-memory");
  EXPECT_EQ(te_device_host_memory(fake.get()), 0);
  EXPECT_EQ(te_device_host_memory(nullptr), 0);
}

TEST(DeviceTest, OpeningTwiceSharesTheDevice) {
  DevicePtr first = openDevice("cpu");
  DevicePtr second = openDevice("cpu");
  EXPECT_EQ(first.get(), second.get());
}

TEST(DeviceTest, HostHasOneInstance) {
  te_device *device = reinterpret_cast<te_device *>(0x1);
  expectError([&] { return te_device_open("cpu", 1, &device); },
              TE_ERROR_NOT_FOUND, {"'cpu'", "1 instance", "index 1"});
  EXPECT_EQ(device, nullptr);
}

TEST(DeviceTest, UnknownDeviceListsTheRegisteredOnes) {
  registerFakeDevice("fake-listed");
  te_device *device = nullptr;
  expectError([&] { return te_device_open("tpu", 0, &device); },
              TE_ERROR_NOT_FOUND, {"'tpu'", "cpu", "fake-listed"});
  EXPECT_EQ(device, nullptr);
}

TEST(DeviceTest, OpenRejectsBadArguments) {
  te_device *device = nullptr;
  expectError([&] { return te_device_open(nullptr, 0, &device); },
              TE_ERROR_INVALID_ARGUMENT, {"name"});
  expectError([&] { return te_device_open("cpu", 0, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"out"});
  expectError([&] { return te_device_open("cpu", -1, &device); },
              TE_ERROR_INVALID_ARGUMENT, {"-1", "negative"});
}

TEST(DeviceTest, GettersAcceptNull) {
  EXPECT_EQ(te_device_name(nullptr), nullptr);
  EXPECT_EQ(te_device_index(nullptr), -1);
  expectError([] { return te_device_synchronize(nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"te_device_synchronize"});
  te_device_release(nullptr);
}

TEST(DeviceTest, RegisterRejectsNull) {
  expectError([] { return te_device_register(nullptr, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"ops must not be NULL"});
}

TEST(DeviceTest, RegisterRejectsATooSmallTable) {
  te_device_ops ops = validOps("fake-too-small");
  ops.struct_size = offsetof(te_device_ops, synchronize);
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"struct_size", "sizeof"});
  ops.struct_size = 0;
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"struct_size"});
}

TEST(DeviceTest, RegisterAcceptsALargerTableFromANewerPlugin) {
  struct NewerOps {
    te_device_ops base;
    void *futureEntry;
  } newer = {validOps("fake-newer"), nullptr};
  newer.base.struct_size = sizeof(NewerOps);
  FakeDevice &context = *new FakeDevice; // The registry keeps it forever.
  EXPECT_EQ(te_device_register(&newer.base, &context), TE_OK)
      << te_last_error_message();
  DevicePtr device = openDevice("fake-newer");
  EXPECT_STREQ(te_device_name(device.get()), "fake-newer");
}

TEST(DeviceTest, RegisterRejectsBadNames) {
  te_device_ops ops = validOps(nullptr);
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"name must not be NULL"});
  for (const char *name : {"", "has space", "slash/name", "tab\tname"}) {
    ops.name = name;
    expectError([&] { return te_device_register(&ops, nullptr); },
                TE_ERROR_INVALID_ARGUMENT, {"invalid device name"});
  }
  std::string tooLong(64, 'a');
  ops.name = tooLong.c_str();
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"invalid device name", "63"});
}

TEST(DeviceTest, RegisterRejectsEachMissingRequiredEntry) {
  struct Case {
    const char *field;
    void (*clear)(te_device_ops &);
  };
  const Case cases[] = {
      {"allocate", [](te_device_ops &ops) { ops.allocate = nullptr; }},
      {"free", [](te_device_ops &ops) { ops.free = nullptr; }},
      {"copy_to_device",
       [](te_device_ops &ops) { ops.copy_to_device = nullptr; }},
      {"copy_to_host", [](te_device_ops &ops) { ops.copy_to_host = nullptr; }},
      {"copy_device_to_device",
       [](te_device_ops &ops) { ops.copy_device_to_device = nullptr; }},
      {"synchronize", [](te_device_ops &ops) { ops.synchronize = nullptr; }},
  };
  for (const Case &c : cases) {
    te_device_ops ops = validOps("fake-missing-entry");
    c.clear(ops);
    expectError(
        [&] { return te_device_register(&ops, nullptr); },
        TE_ERROR_INVALID_ARGUMENT,
        {"'fake-missing-entry'", std::string("te_device_ops.") + c.field});
  }
  // None of the rejected tables was registered.
  te_device *device = nullptr;
  EXPECT_EQ(te_device_open("fake-missing-entry", 0, &device),
            TE_ERROR_NOT_FOUND);
}

TEST(DeviceTest, RegisterRejectsAPartialModuleGroup) {
  static FakeDevice prototype;
  te_device_ops ops = prototype.ops(/*withModules=*/true);
  ops.name = "fake-partial-modules";
  ops.get_manifest = nullptr;
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT,
              {"load_module", "but not get_manifest", "all five"});
}

TEST(DeviceTest, RegisterRejectsADuplicateName) {
  registerFakeDevice("fake-duplicate");
  te_device_ops ops = validOps("fake-duplicate");
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT,
              {"'fake-duplicate'", "already registered"});
  ops.name = "cpu";
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"'cpu'", "already registered"});
}

TEST(DeviceTest, RegistryCopiesTheTableAndName) {
  FakeDevice &context = *new FakeDevice; // The registry keeps it forever.
  {
    char name[] = "fake-copied";
    te_device_ops ops = context.ops();
    ops.name = name;
    ASSERT_EQ(te_device_register(&ops, &context), TE_OK)
        << te_last_error_message();
    std::memset(&ops, 0, sizeof(ops));
    std::memset(name, 'z', sizeof(name) - 1);
  }
  DevicePtr device = openDevice("fake-copied");
  ASSERT_NE(device, nullptr);
  EXPECT_STREQ(te_device_name(device.get()), "fake-copied");
  EXPECT_EQ(te_device_synchronize(device.get()), TE_OK);
  EXPECT_EQ(context.synchronizations, 1);
}

TEST(DeviceTest, PluginInstancesAreOpenedAndClosedThroughTheTable) {
  FakeDevice &fake = registerFakeDevice("fake-instances");
  ASSERT_EQ(fake.liveInstances, 0);
  {
    DevicePtr first = openDevice("fake-instances", 0);
    DevicePtr second = openDevice("fake-instances", 1);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_NE(first.get(), second.get());
    EXPECT_EQ(te_device_index(second.get()), 1);
    EXPECT_EQ(fake.liveInstances, 2);
    DevicePtr again = openDevice("fake-instances", 1);
    EXPECT_EQ(again.get(), second.get());
    EXPECT_EQ(fake.liveInstances, 2);
  }
  EXPECT_EQ(fake.liveInstances, 0);

  te_device *device = nullptr;
  expectError([&] { return te_device_open("fake-instances", 2, &device); },
              TE_ERROR_NOT_FOUND, {"2 instances", "index 2"});
}

TEST(DeviceTest, PluginWithoutInstancesCannotBeOpened) {
  FakeDevice &fake = registerFakeDevice("fake-absent");
  fake.instanceCount = 0;
  te_device *device = nullptr;
  expectError([&] { return te_device_open("fake-absent", 0, &device); },
              TE_ERROR_NOT_FOUND,
              {"'fake-absent'", "no instances", "returned 0"});
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(fake.liveInstances, 0);
}

TEST(DeviceTest, PluginOpenFailureIsReported) {
  FakeDevice &fake = registerFakeDevice("fake-open-fails");
  fake.failOpen = true;
  te_device *device = nullptr;
  expectError([&] { return te_device_open("fake-open-fails", 0, &device); },
              TE_ERROR_UNSUPPORTED,
              {"'fake-open-fails'", "instance 0", "TE_ERROR_UNSUPPORTED"});
  EXPECT_EQ(device, nullptr);
  fake.failOpen = false;
  EXPECT_NE(openDevice("fake-open-fails"), nullptr);
}

TEST(DeviceTest, DeviceStaysOpenWhileBuffersUseIt) {
  FakeDevice &fake = registerFakeDevice("fake-lifetime");
  DevicePtr device = openDevice("fake-lifetime");
  BufferPtr buffer = createBuffer(device.get(), TE_DTYPE_F32, {4});
  device.reset();
  EXPECT_EQ(fake.liveInstances, 1);
  EXPECT_STREQ(te_device_name(te_buffer_device(buffer.get())), "fake-lifetime");
  buffer.reset();
  EXPECT_EQ(fake.liveInstances, 0);
  EXPECT_EQ(fake.liveAllocations, 0);
}

} // namespace
