//===- HostFeaturesTest.cpp - What a host kernel library may need ---------===//
//
// te/ABI/HostFeatures.h reads CPUID and XCR0; the reference here is what
// Linux says of the same processor in /proc/cpuinfo (its flags leave out
// what the OS does not save or enable). AMX tiles also need the process's
// permission (te/ABI/HostTiles.h), asked here as the runtime asks it.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/HostFeatures.h"
#include "te/ABI/HostTiles.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// The flags of the first processor in /proc/cpuinfo (empty elsewhere).
std::set<std::string> readCPUInfoFlags() {
  std::ifstream file("/proc/cpuinfo");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("flags", 0) != 0)
      continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    return {std::istream_iterator<std::string>(words), {}};
  }
  return {};
}

/// LLVM's name of each checkable feature -> Linux's.
const std::map<std::string, std::string> kLinuxNames = {
    {"avx", "avx"},
    {"fma", "fma"},
    {"f16c", "f16c"},
    {"bmi", "bmi1"},
    {"avx2", "avx2"},
    {"bmi2", "bmi2"},
    {"avx512f", "avx512f"},
    {"avx512dq", "avx512dq"},
    {"avx512ifma", "avx512ifma"},
    {"avx512cd", "avx512cd"},
    {"avx512bw", "avx512bw"},
    {"avx512vl", "avx512vl"},
    {"avx512vbmi", "avx512vbmi"},
    {"avx512vbmi2", "avx512_vbmi2"},
    {"avx512vnni", "avx512_vnni"},
    {"avx512bitalg", "avx512_bitalg"},
    {"avx512vpopcntdq", "avx512_vpopcntdq"},
    {"amx-bf16", "amx_bf16"},
    {"avx512fp16", "avx512_fp16"},
    {"amx-tile", "amx_tile"},
    {"amx-int8", "amx_int8"},
    {"avxvnni", "avx_vnni"},
    {"avx512bf16", "avx512_bf16"},
    {"amx-fp16", "amx_fp16"},
};

#if defined(__linux__) && defined(__x86_64__)
TEST(HostFeatures, AgreeWithLinux) {
  std::set<std::string> flags = readCPUInfoFlags();
  ASSERT_FALSE(flags.empty()) << "no flags in /proc/cpuinfo";
  ASSERT_EQ(te::abi::getCheckableCPUFeatures().size(), kLinuxNames.size());
  bool tilesGranted = !te::abi::requestHostTilePermission();
  for (std::string_view feature : te::abi::getCheckableCPUFeatures()) {
    SCOPED_TRACE(std::string(feature));
    ASSERT_TRUE(te::abi::isCheckableCPUFeature(feature));
    auto linuxName = kLinuxNames.find(std::string(feature));
    ASSERT_NE(linuxName, kLinuxNames.end());
    bool listed = flags.count(linuxName->second) != 0;
    bool tiles = feature.rfind("amx-", 0) == 0;
    // Linux may not know the newest flags: a usable feature it does not
    // list is fine only then (amx_fp16 arrived in Linux 6.3).
    if (listed)
      EXPECT_EQ(te::abi::isCPUFeatureUsable(feature), !tiles || tilesGranted);
    else if (feature != "amx-fp16")
      EXPECT_FALSE(te::abi::isCPUFeatureUsable(feature));
  }
}

TEST(HostFeatures, TilePermissionSaysWhyNot) {
  bool tiles = readCPUInfoFlags().count("amx_tile") != 0;
  const std::optional<std::string> &refusal =
      te::abi::requestHostTilePermission();
  if (tiles) {
    // Granted on Linux 5.16 and later, unless a sandbox forbids it.
    if (refusal)
      EXPECT_NE(refusal->find("ARCH_REQ_XCOMP_PERM"), std::string::npos)
          << *refusal;
    return;
  }
  ASSERT_TRUE(refusal) << "a processor without AMX got its tiles";
  EXPECT_NE(refusal->find("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) failed"),
            std::string::npos)
      << *refusal;
  EXPECT_NE(refusal->find("no AMX tile state"), std::string::npos) << *refusal;
  // The same answer again, without asking again.
  EXPECT_EQ(&refusal, &te::abi::requestHostTilePermission());
}
#endif

TEST(HostFeatures, UnknownNamesAreNotUsable) {
  EXPECT_FALSE(te::abi::isCheckableCPUFeature("sse2"));
  EXPECT_FALSE(te::abi::isCPUFeatureUsable("sse2"));
  EXPECT_FALSE(te::abi::isCPUFeatureUsable(""));
  EXPECT_FALSE(te::abi::isCPUFeatureUsable("avx512"));
}

TEST(HostFeatures, ListsAreSplitAtCommas) {
  using te::abi::findUnusableCPUFeatures;
  EXPECT_TRUE(findUnusableCPUFeatures("").empty());
  EXPECT_TRUE(findUnusableCPUFeatures(",,").empty());
  EXPECT_EQ(findUnusableCPUFeatures("x-one,,x-two,"),
            (std::vector<std::string>{"x-one", "x-two"}));
  std::string usable, unusable;
  for (std::string_view feature : te::abi::getCheckableCPUFeatures())
    (te::abi::isCPUFeatureUsable(feature) ? usable : unusable) +=
        std::string(feature) + ",";
  EXPECT_TRUE(findUnusableCPUFeatures(usable).empty()) << usable;
  std::vector<std::string> expected;
  std::istringstream names(unusable);
  for (std::string name; std::getline(names, name, ',');)
    expected.push_back(name);
  EXPECT_EQ(findUnusableCPUFeatures(usable + unusable), expected);
}

} // namespace
