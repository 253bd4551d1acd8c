//===- NCCLTest.cpp - The cuda device's NCCL collectives without a GPU ----===//
//
// What can be checked without a GPU or NCCL: the copy of NCCL's constants
// against the real header where the CUDA toolkit has it (it is only read;
// nothing is linked), how the job is read from the environment, and which
// reductions NCCL takes, the TCP rendezvous that hands out the NCCL id
// outside mpirun, and the deadline that ends a rank whose communicator
// creation waits too long. test/te-run/test_collectives.py
// runs the cpu
// device's collectives; scripts/gpu-check.sh the NCCL smoke on a GPU.
//
//===----------------------------------------------------------------------===//

#include "NCCL.h"
#include "ExitDeadline.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#ifdef TE_HAVE_NCCL_HEADER
#include <nccl.h>
#endif

using namespace te::runtime::nccl;

namespace {

#ifdef TE_HAVE_NCCL_HEADER
TEST(NCCL, ConstantsMatchTheHeader) {
  EXPECT_EQ(kSuccess, ncclSuccess);
  EXPECT_EQ(kInProgress, ncclInProgress);
  EXPECT_EQ(kUniqueIdBytes, sizeof(ncclUniqueId));
  EXPECT_EQ(sizeof(UniqueId), sizeof(ncclUniqueId));
  EXPECT_EQ(kInt8, ncclInt8);
  EXPECT_EQ(kUint8, ncclUint8);
  EXPECT_EQ(kInt32, ncclInt32);
  EXPECT_EQ(kInt64, ncclInt64);
  EXPECT_EQ(kUint64, ncclUint64);
  EXPECT_EQ(kFloat16, ncclFloat16);
  EXPECT_EQ(kFloat32, ncclFloat32);
  EXPECT_EQ(kFloat64, ncclFloat64);
  EXPECT_EQ(kBfloat16, ncclBfloat16);
  EXPECT_EQ(kFloat8e4m3, ncclFloat8e4m3);
  EXPECT_EQ(kFloat8e5m2, ncclFloat8e5m2);
  EXPECT_EQ(kSum, ncclSum);
  EXPECT_EQ(kMax, ncclMax);
  EXPECT_EQ(kMin, ncclMin);
  EXPECT_EQ(kAvg, ncclAvg);
}
#else
TEST(NCCL, ConstantsMatchTheHeader) {
  GTEST_SKIP() << "nccl.h not found (no CUDA toolkit with NCCL)";
}
#endif

/// Sets the variables of one test and clears the others.
class Environment {
public:
  explicit Environment(const std::map<std::string, std::string> &values) {
    for (const char *name : kNames) {
      auto found = values.find(name);
      if (found == values.end())
        unsetenv(name);
      else
        setenv(name, found->second.c_str(), 1);
    }
  }
  ~Environment() {
    for (const char *name : kNames)
      unsetenv(name);
  }

private:
  static constexpr const char *kNames[] = {"TE_RANK",
                                           "TE_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE",
                                           "PMI_RANK",
                                           "PMI_SIZE"};
};

TEST(NCCL, TheJobComesFromTheEnvironment) {
  {
    Environment none({});
    World world = findWorld();
    EXPECT_EQ(world.rank, 0);
    EXPECT_EQ(world.size, 1);
    EXPECT_FALSE(world.mpi);
    EXPECT_EQ(world.error, "");
  }
  {
    // torch.distributed's names win over a launcher's.
    Environment torch({{"TE_RANK", "3"},
                       {"TE_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "2"}});
    World world = findWorld();
    EXPECT_EQ(world.rank, 3);
    EXPECT_EQ(world.size, 4);
    EXPECT_FALSE(world.mpi);
  }
  {
    Environment mpirun(
        {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
    World world = findWorld();
    EXPECT_EQ(world.rank, 1);
    EXPECT_EQ(world.size, 2);
    EXPECT_TRUE(world.mpi);
  }
  {
    Environment pmi({{"PMI_RANK", "0"}, {"PMI_SIZE", "8"}});
    World world = findWorld();
    EXPECT_EQ(world.size, 8);
    EXPECT_TRUE(world.mpi);
  }
  {
    Environment outside({{"TE_RANK", "4"}, {"TE_WORLD_SIZE", "4"}});
    EXPECT_EQ(findWorld().error, "TE_RANK='4' is not a number from 0 to 3");
  }
  {
    Environment missing({{"TE_WORLD_SIZE", "2"}});
    EXPECT_EQ(findWorld().error, "TE_WORLD_SIZE is set but TE_RANK is not");
  }
  {
    Environment bad({{"TE_WORLD_SIZE", "two"}, {"TE_RANK", "0"}});
    EXPECT_EQ(findWorld().error,
              "TE_WORLD_SIZE='two' is not a number from 1 to 1048576");
  }
}

TEST(NCCL, ReductionsNCCLCannotDoAreRefused) {
  std::string why;
  EXPECT_EQ(reductionType(TE_DTYPE_BF16, TE_REDUCE_SUM, 21800, why), kBfloat16);
  EXPECT_EQ(reductionType(TE_DTYPE_F8E4M3FN, TE_REDUCE_MAX, 22809, why),
            kFloat8e4m3);
  EXPECT_EQ(reductionType(TE_DTYPE_I1, TE_REDUCE_MAX, 22809, why), kUint8);
  EXPECT_EQ(why, "");
  EXPECT_EQ(reductionType(TE_DTYPE_I1, TE_REDUCE_SUM, 22809, why), -1);
  EXPECT_NE(why.find("NCCL cannot sum i1 values modulo 2"), std::string::npos)
      << why;
  EXPECT_EQ(reductionType(TE_DTYPE_F8E5M2, TE_REDUCE_SUM, 22300, why), -1);
  EXPECT_NE(why.find("cannot reduce FP8 values (NCCL 2.24 can"),
            std::string::npos)
      << why;
}

// NCCL's communicator creation waits for every rank, without a timeout:
// a rank that waits longer than TE_COLLECTIVE_TIMEOUT ends itself, saying
// why, with exit status 2.
TEST(NCCL, ARankWaitingPastItsDeadlineEndsItself) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        te::runtime::ExitDeadline deadline(0.05, "creating it: waited 0.05 s");
        std::this_thread::sleep_for(std::chrono::seconds(10));
      },
      testing::ExitedWithCode(2), "te-mlir: error: creating it: waited 0.05 s");
}

TEST(NCCL, ACallDoneInTimeEndsNothing) {
  auto start = std::chrono::steady_clock::now();
  {
    te::runtime::ExitDeadline deadline(30, "never printed");
  }
  // The watcher stops at once, not after the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

/// A port on the loopback interface that was free a moment ago.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

/// Connects to the loopback `port`, retrying for a while; -1 if it cannot.
int connectTo(int port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) ==
        0)
      return fd;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

class Rendezvous : public testing::Test {
protected:
  void SetUp() override {
    port = freePort();
    setenv("TE_MASTER_ADDR", "127.0.0.1", 1);
    setenv("TE_MASTER_PORT", std::to_string(port).c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TE_MASTER_ADDR");
    unsetenv("TE_MASTER_PORT");
  }
  static World rank(int r, int size) {
    World world;
    world.rank = r;
    world.size = size;
    return world;
  }
  int port = 0;
};

TEST_F(Rendezvous, EveryRankGetsRankZerosIdAndStrangersDoNotCount) {
  UniqueId root = {}, ids[3] = {};
  for (size_t i = 0; i < sizeof(root.internal); ++i)
    root.internal[i] = static_cast<char>(i * 7 + 1);
  std::string errors[3];
  std::thread zero(
      [&] { errors[0] = rendezvous(rank(0, 3), (ids[0] = root), 20); });
  // Strangers first: one that sends junk, one that says nothing and hangs
  // up, one from another job (rank 7 of 8).
  int junk = connectTo(port);
  ASSERT_GE(junk, 0);
  ASSERT_EQ(write(junk, "GET / HTTP/1.0\r\n\r\n-------------------", 36), 36);
  int silent = connectTo(port);
  ASSERT_GE(silent, 0);
  close(silent);
  int other = connectTo(port);
  ASSERT_GE(other, 0);
  struct {
    char magic[16] = "te-mlir nccl 1";
    int32_t rank = 7;
    int32_t size = 8;
  } otherJob;
  ASSERT_EQ(write(other, &otherJob, sizeof(otherJob)),
            static_cast<ssize_t>(sizeof(otherJob)));
  std::thread one([&] { errors[1] = rendezvous(rank(1, 3), ids[1], 20); });
  std::thread two([&] { errors[2] = rendezvous(rank(2, 3), ids[2], 20); });
  zero.join();
  one.join();
  two.join();
  close(junk);
  close(other);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(std::memcmp(&ids[r], &root, sizeof(root)), 0) << "rank " << r;
  }
}

TEST_F(Rendezvous, ARankThatNeverComesIsAnErrorAfterTheTimeout) {
  UniqueId id = {};
  auto start = std::chrono::steady_clock::now();
  std::string error = rendezvous(rank(0, 2), id, 0.3);
  EXPECT_NE(error.find("only 1 of 2 ranks came to port " +
                       std::to_string(port) + " within TE_COLLECTIVE_TIMEOUT"),
            std::string::npos)
      << error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  error = rendezvous(rank(1, 2), id, 0.3);
  EXPECT_NE(error.find("rank 1 could not get the NCCL id from rank 0 at "
                       "127.0.0.1:" +
                       std::to_string(port)),
            std::string::npos)
      << error;
}

} // namespace
