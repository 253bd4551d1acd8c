//===- CollectiveTest.cpp - Collective calls through the device table -----===//
//
// The runtime's half of collectives on a fake device with the collective
// group: `call collective.*` lines parsed at load into te_collective_desc,
// one channel per group and device, operand sizes checked at launch, and
// the errors for malformed lines and devices without collectives. (MPI
// itself runs under mpirun in test/te-run/test_collectives.py.)
//
//===----------------------------------------------------------------------===//

#include "FakeDevice.h"
#include "RuntimeTestUtils.h"

#include "te/Runtime/Collective.h"

#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace te::runtime::testing;

namespace {

std::string manifest(const std::string &lines) {
  return "te-kernel-abi 5\n"
         "entry f program\n"
         "in f32 2x3\n"
         "out f32 2x6\n"
         "out f32 2x3\n" +
         lines + "end\n";
}

/// The buffers of `manifest`'s entry: f32 2x3 in, 2x6 and 2x3 out.
struct Arguments {
  explicit Arguments(te_device *device)
      : in(createBuffer(device, TE_DTYPE_F32, {2, 3})),
        wide(createBuffer(device, TE_DTYPE_F32, {2, 6})),
        out(createBuffer(device, TE_DTYPE_F32, {2, 3})) {}
  te_status launch(te_kernel *kernel) {
    te_buffer *args[] = {in.get(), wide.get(), out.get()};
    return te_kernel_launch(kernel, args, 3);
  }
  BufferPtr in, wide, out;
};

te_kernel *getKernel(te_module *module) {
  te_kernel *kernel = nullptr;
  EXPECT_EQ(te_module_get_kernel(module, "f", &kernel), TE_OK)
      << te_last_error_message();
  return kernel;
}

TEST(Collective, CallsReachTheDeviceWithTheirDescriptionOnOneChannel) {
  FakeDevice &fake = registerFakeDevice("fake-collectives", true, false, true);
  fake.manifest = manifest(
      "call collective.all_gather "
      "group=tp,size=2,ranks=blocks,dtype=f32,shape=2x3,dim=1 a0 a1\n"
      "call collective.permute "
      "group=tp,size=2,ranks=blocks,dtype=f32,shape=2x3,route=pairs_1_0 a0 "
      "a2\n");
  DevicePtr device = openDevice("fake-collectives");
  ModulePtr module = loadModule(device.get(), "collectives.so");
  te_kernel *kernel = getKernel(module.get());
  EXPECT_EQ(te_kernel_num_collectives(kernel), 2);
  auto args = std::make_unique<Arguments>(device.get());
  ASSERT_EQ(args->launch(kernel), TE_OK) << te_last_error_message();
  ASSERT_EQ(args->launch(kernel), TE_OK) << te_last_error_message();

  // One channel for the group, made at its first collective.
  ASSERT_EQ(fake.channels.size(), 1u);
  EXPECT_EQ(fake.channels[0]->group, "tp");
  EXPECT_EQ(fake.channels[0]->size, 2);
  EXPECT_TRUE(fake.channels[0]->ranks.empty());
  EXPECT_EQ(fake.channels[0]->timeout, te_collective_timeout());
  ASSERT_EQ(fake.collectives.size(), 4u);
  const FakeDevice::Collective &gather = fake.collectives[0];
  EXPECT_EQ(gather.channel, fake.channels[0].get());
  EXPECT_EQ(gather.desc.kind, TE_COLLECTIVE_ALL_GATHER);
  EXPECT_EQ(gather.desc.dtype, TE_DTYPE_F32);
  EXPECT_EQ(gather.desc.rank, 2);
  EXPECT_EQ(gather.desc.dims[0], 2);
  EXPECT_EQ(gather.desc.dims[1], 3);
  EXPECT_EQ(gather.desc.dim, 1);
  EXPECT_STREQ(gather.desc.group, "tp");
  const FakeDevice::Collective &permute = fake.collectives[1];
  EXPECT_EQ(permute.desc.kind, TE_COLLECTIVE_PERMUTE);
  EXPECT_EQ(permute.pairs, (std::vector<int64_t>{1, 0}));

  // The channel goes with the device.
  args.reset();
  module.reset();
  device.reset();
  EXPECT_EQ(fake.liveChannels, 0);
}

TEST(Collective, RankListsAndShiftsArePassedOn) {
  FakeDevice &fake =
      registerFakeDevice("fake-collective-ranks", true, false, true);
  fake.manifest = manifest(
      "call collective.all_reduce "
      "group=dp,size=2,ranks=0_2_1_3,dtype=f32,shape=2x3,reduce=avg a0 a2\n"
      "call collective.permute "
      "group=dp,size=2,ranks=0_2_1_3,dtype=f32,shape=2x3,route=shift_-1 a0 "
      "a1\n");
  DevicePtr device = openDevice("fake-collective-ranks");
  ModulePtr module = loadModule(device.get(), "ranks.so");
  Arguments args(device.get());
  ASSERT_EQ(args.launch(getKernel(module.get())), TE_OK)
      << te_last_error_message();
  ASSERT_EQ(fake.channels.size(), 1u);
  EXPECT_EQ(fake.channels[0]->ranks, (std::vector<int>{0, 2, 1, 3}));
  ASSERT_EQ(fake.collectives.size(), 2u);
  EXPECT_EQ(fake.collectives[0].desc.reduce, TE_REDUCE_AVG);
  EXPECT_EQ(fake.collectives[1].desc.shift, -1);
  EXPECT_EQ(fake.collectives[1].desc.pairs, nullptr);
}

TEST(Collective, MalformedCallsFailTheLoadWithTheirLine) {
  FakeDevice &fake =
      registerFakeDevice("fake-collective-errors", true, false, true);
  DevicePtr device = openDevice("fake-collective-errors");
  struct Case {
    std::string line;
    std::string fragment;
  };
  const std::string common = "group=tp,size=2,ranks=blocks,dtype=f32,";
  for (const Case &c : std::vector<Case>{
           {"call collective.broadcast " + common + "shape=2x3 a0 a1",
            "unknown collective 'collective.broadcast'; the runtime knows "
            "collective.all_reduce, collective.all_gather"},
           {"call collective.all_gather " + common + "shape=2x3 a0 a1",
            "parameter 'dim' is missing"},
           {"call collective.group_rank " + common + "shape=2x3 a0",
            "invalid parameter 'dtype=f32'; expected "
            "group=...,size=...,ranks=..."},
           {"call collective.all_gather " + common + "shape=2x3,dim=2 a0 a1",
            "invalid dim '2' for an input of rank 2"},
           {"call collective.reduce_scatter " + common +
                "shape=2x3,dim=1,reduce=sum a0 a1",
            "dim 1 has size 3, which the group size 2 does not divide"},
           {"call collective.all_reduce " + common +
                "shape=2x3,reduce=product a0 a1",
            "invalid reduce 'product'; expected sum, max, min or avg"},
           {"call collective.permute " + common +
                "shape=2x3,route=pairs_0_2 "
                "a0 a1",
            "invalid route 'pairs_0_2'"},
           {"call collective.permute " + common +
                "shape=2x3,route=pairs_0_1_1_1 a0 a1",
            "route 'pairs_0_1_1_1' names rank 1 twice as a target"},
           {"call collective.all_reduce group=tp,size=2,ranks=0_1_2,dtype=f32,"
            "shape=2x3,reduce=sum a0 a1",
            "invalid ranks '0_1_2'"},
           {"call collective.all_reduce group=tp,size=2,ranks=blocks,"
            "dtype=i32,shape=2x3,reduce=avg a0 a1",
            "reduce avg needs a floating-point dtype, got i32"},
       }) {
    fake.manifest = manifest(c.line + "\n");
    te_module *module = nullptr;
    expectError([&] { return te_module_load(device.get(), "bad.so", &module); },
                TE_ERROR_LOAD_FAILED,
                {"manifest line 6", "entry 'f'", c.fragment});
  }
}

TEST(Collective, OperandsTooSmallForTheCallAreRefused) {
  FakeDevice &fake =
      registerFakeDevice("fake-collective-sizes", true, false, true);
  // The gather's output needs 2x6 f32, but the manifest hands it the 2x3
  // output: an untrusted manifest must not make the device write past it.
  fake.manifest = manifest(
      "call collective.all_gather "
      "group=tp,size=2,ranks=blocks,dtype=f32,shape=2x3,dim=1 a0 a2\n");
  DevicePtr device = openDevice("fake-collective-sizes");
  ModulePtr module = loadModule(device.get(), "sizes.so");
  Arguments args(device.get());
  te_kernel *kernel = getKernel(module.get());
  expectError(
      [&] { return args.launch(kernel); }, TE_ERROR_INVALID_ARGUMENT,
      {"collective over group 'tp'", "operand 1 has 24 bytes", "needs 48"});
  EXPECT_TRUE(fake.collectives.empty());
}

TEST(Collective, OverlappingOperandsAreRefused) {
  FakeDevice &fake =
      registerFakeDevice("fake-collective-overlap", true, false, true);
  // MPI and NCCL forbid a send buffer that overlaps the receive buffer.
  fake.manifest = manifest(
      "call collective.permute "
      "group=tp,size=2,ranks=blocks,dtype=f32,shape=2x3,route=shift_1 a2 "
      "a2\n");
  DevicePtr device = openDevice("fake-collective-overlap");
  ModulePtr module = loadModule(device.get(), "overlap.so");
  Arguments args(device.get());
  te_kernel *kernel = getKernel(module.get());
  expectError([&] { return args.launch(kernel); }, TE_ERROR_INVALID_ARGUMENT,
              {"collective over group 'tp': its input and output overlap"});
  EXPECT_TRUE(fake.collectives.empty());
}

TEST(Collective, GroupRankIsThePlaceInTheGroup) {
  FakeDevice &fake =
      registerFakeDevice("fake-collective-rank", true, false, true);
  fake.manifest = "te-kernel-abi 5\n"
                  "entry f program\n"
                  "out i32 scalar\n"
                  "out i32 scalar\n"
                  "call collective.group_rank group=tp,size=2,ranks=blocks a0\n"
                  "call collective.group_rank group=dp,size=2,ranks=0_2_1_3 "
                  "a1\n"
                  "end\n";
  DevicePtr device = openDevice("fake-collective-rank");
  ModulePtr module = loadModule(device.get(), "rank.so");
  te_kernel *kernel = getKernel(module.get());
  EXPECT_EQ(te_kernel_num_collectives(kernel), 2);
  BufferPtr tp = createBuffer(device.get(), TE_DTYPE_I32, {});
  BufferPtr dp = createBuffer(device.get(), TE_DTYPE_I32, {});
  te_buffer *args[] = {tp.get(), dp.get()};
  // World rank r: consecutive pairs put it at r % 2; the rank list
  // [[0, 2], [1, 3]] at its index in its pair.
  fake.worldSize = 4;
  for (auto [worldRank, inTP, inDP] :
       {std::tuple{0, 0, 0}, {1, 1, 0}, {2, 0, 1}, {3, 1, 1}}) {
    fake.worldRank = worldRank;
    ASSERT_EQ(te_kernel_launch(kernel, args, 2), TE_OK)
        << te_last_error_message();
    int32_t got[2] = {-1, -1};
    ASSERT_EQ(te_buffer_read(tp.get(), &got[0], sizeof(int32_t)), TE_OK);
    ASSERT_EQ(te_buffer_read(dp.get(), &got[1], sizeof(int32_t)), TE_OK);
    EXPECT_EQ(got[0], inTP) << "world rank " << worldRank;
    EXPECT_EQ(got[1], inDP) << "world rank " << worldRank;
  }
  // No data moves: no channel, no collective.
  EXPECT_TRUE(fake.channels.empty());
  EXPECT_TRUE(fake.collectives.empty());
  // A group that does not fit the world.
  fake.worldSize = 3;
  fake.worldRank = 0;
  expectError([&] { return te_kernel_launch(kernel, args, 2); },
              TE_ERROR_INVALID_ARGUMENT,
              {"te.group_rank: process group 'tp' has 2 ranks, which do not "
               "divide the world's 3"});
}

TEST(Collective, DevicesWithoutCollectivesRefuseSuchModules) {
  FakeDevice &fake = registerFakeDevice("fake-no-collectives", true);
  fake.manifest = manifest(
      "call collective.all_reduce "
      "group=tp,size=2,ranks=blocks,dtype=f32,shape=2x3,reduce=sum a0 a2\n");
  DevicePtr device = openDevice("fake-no-collectives");
  te_module *module = nullptr;
  expectError([&] { return te_module_load(device.get(), "no.so", &module); },
              TE_ERROR_UNSUPPORTED,
              {"runs the collective 'collective.all_reduce'",
               "device 'fake-no-collectives' has no collectives"});
  int rank = -1, size = -1;
  expectError([&] { return te_device_world(device.get(), &rank, &size); },
              TE_ERROR_UNSUPPORTED,
              {"device 'fake-no-collectives' has no collectives"});
}

TEST(Collective, PartCollectiveGroupsAreRefusedAtRegistration) {
  FakeDevice fake;
  fake.name = "fake-half-collectives";
  te_device_ops table = fake.ops(false, false, true);
  table.channel_destroy = nullptr;
  expectError([&] { return te_device_register(&table, &fake); },
              TE_ERROR_INVALID_ARGUMENT,
              {"implements world, channel_create, collective but not "
               "channel_destroy",
               "needs all four collective entries"});
}

TEST(Collective, TheTimeoutComesFromTheEnvironment) {
  unsetenv("TE_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(te_collective_timeout(), 300.0);
  setenv("TE_COLLECTIVE_TIMEOUT", "2.5", 1);
  EXPECT_EQ(te_collective_timeout(), 2.5);
  for (const char *bad : {"0", "-3", "soon", ""}) {
    setenv("TE_COLLECTIVE_TIMEOUT", bad, 1);
    EXPECT_EQ(te_collective_timeout(), 300.0) << bad;
  }
  // Bounded, so that deadlines in nanoseconds do not overflow.
  for (const char *huge : {"inf", "1e300", "2e6"}) {
    setenv("TE_COLLECTIVE_TIMEOUT", huge, 1);
    EXPECT_EQ(te_collective_timeout(), 1e6) << huge;
  }
  unsetenv("TE_COLLECTIVE_TIMEOUT");
}

} // namespace
