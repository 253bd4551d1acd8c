//===- StreamTest.cpp - Streams, events, execution contexts, old tables ---===//
//
// Streams and events on a device that has them (the fake device's stream
// group) and on one that does not (the host, where the runtime emulates
// them); the execution context each stream gets at its first launch; what a
// version 1 table (a plugin built before streams existed) is given.
//
//===----------------------------------------------------------------------===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include "te/Runtime/Stream.h"

#include <cstring>
#include <vector>

using namespace te::runtime::testing;

namespace {

StreamPtr createStream(te_device *device) {
  te_stream *stream = nullptr;
  EXPECT_EQ(te_stream_create(device, &stream), TE_OK)
      << te_last_error_message();
  return StreamPtr(stream);
}

EventPtr createEvent(te_device *device) {
  te_event *event = nullptr;
  EXPECT_EQ(te_event_create(device, &event), TE_OK) << te_last_error_message();
  return EventPtr(event);
}

/// The fake device's `double` kernel with its two buffers.
struct DoubleLaunch {
  ModulePtr module;
  te_kernel *kernel = nullptr;
  BufferPtr input, output;

  explicit DoubleLaunch(te_device *device) {
    te_module *loaded = nullptr;
    EXPECT_EQ(te_module_load(device, "fake", &loaded), TE_OK)
        << te_last_error_message();
    module.reset(loaded);
    EXPECT_EQ(te_module_get_kernel(loaded, "double", &kernel), TE_OK);
    input = createBuffer(device, TE_DTYPE_F32, {4});
    output = createBuffer(device, TE_DTYPE_F32, {4});
    float values[4] = {1, 2, 3, 4};
    EXPECT_EQ(te_buffer_write(input.get(), values, sizeof(values)), TE_OK);
  }

  te_status launchOn(te_stream *stream) {
    te_buffer *args[] = {input.get(), output.get()};
    return te_kernel_launch_on(kernel, args, 2, stream);
  }
};

TEST(StreamTest, LaunchesCarryTheirStreamAndItsExecutionContext) {
  FakeDevice &fake = registerFakeDevice("fake-streams", /*withModules=*/true,
                                        /*withStreams=*/true);
  DevicePtr device = openDevice("fake-streams");
  {
    DoubleLaunch launch(device.get());
    StreamPtr stream = createStream(device.get());
    EXPECT_EQ(fake.liveStreams, 1);

    ASSERT_EQ(launch.launchOn(stream.get()), TE_OK) << te_last_error_message();
    ASSERT_NE(fake.lastConfig.load(), nullptr);
    void *handle = fake.lastStream;
    EXPECT_NE(handle, nullptr);
    // The context was made for that stream, once.
    void *context = fake.lastExecContext;
    ASSERT_NE(context, nullptr);
    EXPECT_EQ(*static_cast<void **>(context), handle);
    ASSERT_EQ(launch.launchOn(stream.get()), TE_OK);
    EXPECT_EQ(fake.lastExecContext.load(), context);
    EXPECT_EQ(fake.liveExecContexts, 1);

    // The default stream has a context of its own.
    ASSERT_EQ(launch.launchOn(nullptr), TE_OK);
    EXPECT_EQ(fake.lastStream.load(), nullptr);
    EXPECT_NE(fake.lastExecContext.load(), context);
    EXPECT_EQ(fake.liveExecContexts, 2);

    float doubled[4];
    ASSERT_EQ(te_buffer_read(launch.output.get(), doubled, sizeof(doubled)),
              TE_OK);
    EXPECT_EQ(doubled[3], 8.0f);

    // Releasing the stream waits for it and drops its context.
    int synchronizations = fake.streamSynchronizations;
    stream.reset();
    EXPECT_EQ(fake.streamSynchronizations, synchronizations + 1);
    EXPECT_EQ(fake.liveStreams, 0);
    EXPECT_EQ(fake.liveExecContexts, 1);
  }
  // The default stream's context goes with the instance.
  device.reset();
  EXPECT_EQ(fake.liveExecContexts, 0);
  EXPECT_EQ(fake.liveInstances, 0);
}

TEST(StreamTest, EventsGoToTheDevice) {
  FakeDevice &fake = registerFakeDevice("fake-events", /*withModules=*/true,
                                        /*withStreams=*/true);
  DevicePtr device = openDevice("fake-events");
  DoubleLaunch launch(device.get());
  StreamPtr stream = createStream(device.get());
  EventPtr start = createEvent(device.get()), end = createEvent(device.get());
  EXPECT_EQ(fake.liveEvents, 2);

  float elapsed = -1;
  expectError(
      [&] { return te_event_elapsed_ms(start.get(), end.get(), &elapsed); },
      TE_ERROR_INVALID_ARGUMENT, {"start event was never recorded"});
  expectError([&] { return te_event_synchronize(start.get()); },
              TE_ERROR_INVALID_ARGUMENT, {"never recorded"});

  ASSERT_EQ(te_event_record(start.get(), stream.get()), TE_OK);
  ASSERT_EQ(launch.launchOn(stream.get()), TE_OK);
  ASSERT_EQ(launch.launchOn(stream.get()), TE_OK);
  ASSERT_EQ(te_event_record(end.get(), stream.get()), TE_OK);
  ASSERT_EQ(te_stream_wait_event(nullptr, end.get()), TE_OK);
  EXPECT_EQ(fake.waits, 1);
  ASSERT_EQ(te_event_synchronize(end.get()), TE_OK);
  ASSERT_EQ(te_event_elapsed_ms(start.get(), end.get(), &elapsed), TE_OK);
  // The fake's clock counts launches.
  EXPECT_EQ(elapsed, 2.0f);
  ASSERT_EQ(te_stream_synchronize(stream.get()), TE_OK);
  start.reset();
  end.reset();
  EXPECT_EQ(fake.liveEvents, 0);
}

TEST(StreamTest, TheHostEmulatesStreamsAndEvents) {
  DevicePtr cpu = openDevice("cpu");
  StreamPtr stream = createStream(cpu.get());
  EventPtr start = createEvent(cpu.get()), end = createEvent(cpu.get());
  ASSERT_EQ(te_event_record(start.get(), stream.get()), TE_OK);
  ASSERT_EQ(te_stream_wait_event(stream.get(), start.get()), TE_OK);
  ASSERT_EQ(te_event_record(end.get(), nullptr), TE_OK);
  ASSERT_EQ(te_event_synchronize(end.get()), TE_OK);
  ASSERT_EQ(te_stream_synchronize(stream.get()), TE_OK);
  float elapsed = -1;
  ASSERT_EQ(te_event_elapsed_ms(start.get(), end.get(), &elapsed), TE_OK);
  EXPECT_GE(elapsed, 0.0f);
}

TEST(StreamTest, ObjectsOfAnotherDeviceAreRefused) {
  registerFakeDevice("fake-other", /*withModules=*/true, /*withStreams=*/true);
  DevicePtr fake = openDevice("fake-other");
  DevicePtr cpu = openDevice("cpu");
  StreamPtr cpuStream = createStream(cpu.get());
  EventPtr fakeEvent = createEvent(fake.get()),
           cpuEvent = createEvent(cpu.get());
  expectError([&] { return te_event_record(fakeEvent.get(), cpuStream.get()); },
              TE_ERROR_INVALID_ARGUMENT,
              {"te_event_record", "the stream belongs to device 'cpu'"});
  ASSERT_EQ(te_event_record(fakeEvent.get(), nullptr), TE_OK);
  ASSERT_EQ(te_event_record(cpuEvent.get(), nullptr), TE_OK);
  float elapsed;
  expectError(
      [&] {
        return te_event_elapsed_ms(fakeEvent.get(), cpuEvent.get(), &elapsed);
      },
      TE_ERROR_INVALID_ARGUMENT, {"belong to devices 'fake-other'"});
  DoubleLaunch launch(fake.get());
  expectError([&] { return launch.launchOn(cpuStream.get()); },
              TE_ERROR_INVALID_ARGUMENT,
              {"te_kernel_launch_on", "kernel 'double' belongs to device "
                                      "'fake-other'"});
  expectError([] { return te_stream_create(nullptr, nullptr); },
              TE_ERROR_INVALID_ARGUMENT, {"te_stream_create"});
}

TEST(StreamTest, AVersion1TableIsNeitherReadPastItsEndNorGivenAConfig) {
  // A plugin built before version 2: its table ends at `synchronize`, and
  // what follows in memory is not part of it.
  static FakeDevice context;
  context.name = "fake-version1";
  struct {
    te_device_ops ops;
  } padded;
  te_device_ops full = context.ops(/*withModules=*/true);
  std::memset(&padded, 0xA5, sizeof(padded));
  std::memcpy(&padded.ops, &full, TE_DEVICE_OPS_V1_SIZE);
  padded.ops.struct_size = TE_DEVICE_OPS_V1_SIZE;
  ASSERT_EQ(te_device_register(&padded.ops, &context), TE_OK)
      << te_last_error_message();

  DevicePtr device = openDevice("fake-version1");
  DoubleLaunch launch(device.get());
  // Streams are emulated; the launch gets no configuration.
  StreamPtr stream = createStream(device.get());
  context.lastConfig = &context; // anything but NULL
  ASSERT_EQ(launch.launchOn(stream.get()), TE_OK) << te_last_error_message();
  EXPECT_EQ(context.lastConfig.load(), nullptr);
  EventPtr event = createEvent(device.get());
  ASSERT_EQ(te_event_record(event.get(), stream.get()), TE_OK);
  ASSERT_EQ(te_event_synchronize(event.get()), TE_OK);
}

TEST(StreamTest, RegisterRejectsPartialStreamAndContextGroups) {
  FakeDevice prototype;
  prototype.name = "fake-partial-streams";
  te_device_ops ops = prototype.ops(/*withModules=*/true, /*withStreams=*/true);
  ops.event_elapsed_ms = nullptr;
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT,
              {"but not event_elapsed_ms", "all nine stream and event"});
  ops = prototype.ops(/*withModules=*/true, /*withStreams=*/true);
  ops.exec_context_destroy = nullptr;
  expectError([&] { return te_device_register(&ops, nullptr); },
              TE_ERROR_INVALID_ARGUMENT,
              {"only one of exec_context_create and exec_context_destroy"});
}

} // namespace
