//===- CUDNNTest.cpp - The cuda device's cuDNN attention call -------------===//

#include "CUDNN.h"
#include "Error.h"

#include <gtest/gtest.h>

using namespace te::runtime::cudnn;

namespace {

constexpr const char *kCausalGQA =
    "b=2,hq=16,hkv=4,sq=1024,skv=1000,d=64,dtype=bf16,layout=bshd,"
    "scale=3e000000,align=bottom_right,left=50,right=0,stats=1";

TEST(CUDNN, ParsesAnAttention) {
  SdpaConfig config;
  std::string error;
  ASSERT_TRUE(parseSdpaConfig(kCausalGQA, config, error)) << error;
  EXPECT_EQ(config.b, 2);
  EXPECT_EQ(config.hq, 16);
  EXPECT_EQ(config.hkv, 4);
  EXPECT_EQ(config.sq, 1024);
  EXPECT_EQ(config.skv, 1000);
  EXPECT_EQ(config.d, 64);
  EXPECT_FALSE(config.f16);
  EXPECT_EQ(config.layout, "bshd");
  EXPECT_EQ(config.scale, 0.125f);
  EXPECT_TRUE(config.bottomRight);
  EXPECT_EQ(config.left, 50);
  EXPECT_EQ(config.right, 0);
  EXPECT_EQ(config.operands(), 5);
}

TEST(CUDNN, RefusesBadParameters) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "invalid parameter ''"},
      {"b=1", "parameter 'hq' is missing"},
      {"b=1,hq=3,hkv=2,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=0,"
       "align=top_left,left=-1,right=-1,stats=0",
       "hq must be a multiple of hkv"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=f32,layout=bshd,scale=0,"
       "align=top_left,left=-1,right=-1,stats=0",
       "invalid dtype 'f32'"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=thd,scale=0,"
       "align=top_left,left=-1,right=-1,stats=0",
       "invalid layout 'thd'"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=0.5,"
       "align=top_left,left=-1,right=-1,stats=0",
       "invalid scale '0.5'"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=0,"
       "align=middle,left=-1,right=-1,stats=0",
       "invalid align 'middle'"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=0,"
       "align=top_left,left=-1,right=-1,stats=2",
       "invalid stats '2'; expected 0 or 1"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=0,"
       "align=top_left,left=-2,right=-1,stats=0",
       "invalid window bound"},
      {"b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=0,"
       "align=top_left,left=-1,right=-1,stats=0,x=1",
       "invalid parameter 'x=1'"}};
  for (const auto &[parameters, expected] : cases) {
    SdpaConfig config;
    std::string error;
    EXPECT_FALSE(parseSdpaConfig(parameters, config, error)) << parameters;
    EXPECT_NE(error.find(expected), std::string::npos)
        << parameters << ": " << error;
  }
}

// The [b, h, s, d] view of each layout: element (b, h, s, d) of a bshd
// tensor [2, 5, 3, 8] is at ((b * 5 + s) * 3 + h) * 8 + d.
TEST(CUDNN, StridesOfEachLayout) {
  using Strides = std::array<int64_t, 4>;
  EXPECT_EQ(strides("bshd", 2, 3, 5, 8), (Strides{5 * 3 * 8, 8, 3 * 8, 1}));
  EXPECT_EQ(strides("sbhd", 2, 3, 5, 8), (Strides{3 * 8, 8, 2 * 3 * 8, 1}));
  EXPECT_EQ(strides("bhsd", 2, 3, 5, 8), (Strides{3 * 5 * 8, 5 * 8, 8, 1}));
}

// What a machine without a GPU can check of the graph: the frontend's
// validation of every layout, both alignments, windows and GQA.
TEST(CUDNN, GraphsPassTheFrontendsValidation) {
  std::string why;
  if (!isBuiltIn(&why)) {
    SdpaConfig config;
    std::string error;
    ASSERT_TRUE(parseSdpaConfig(kCausalGQA, config, error));
    EXPECT_FALSE(validateSdpa(config, error));
    EXPECT_NE(error.find("built without cuDNN's headers"), std::string::npos);
    GTEST_SKIP() << why;
  }
  {
    SdpaConfig config;
    std::string error;
    ASSERT_TRUE(parseSdpaConfig(kCausalGQA, config, error));
    if (!validateSdpa(config, error) &&
        error.find("cuDNN 9 is not installed") != std::string::npos)
      GTEST_SKIP() << error;
  }
  for (const char *layout : {"bshd", "sbhd", "bhsd"})
    for (const char *window :
         {"align=top_left,left=-1,right=-1", "align=top_left,left=-1,right=0",
          "align=bottom_right,left=50,right=0",
          "align=bottom_right,left=7,right=9"}) {
      std::string parameters =
          std::string("b=2,hq=8,hkv=2,sq=200,skv=300,d=128,dtype=f16,") +
          "layout=" + layout + ",scale=3db504f3," + window + ",stats=1";
      SdpaConfig config;
      std::string error;
      ASSERT_TRUE(parseSdpaConfig(parameters.c_str(), config, error)) << error;
      EXPECT_TRUE(validateSdpa(config, error)) << parameters << ": " << error;
    }
  // The backward's graph, for the same configurations.
  for (const char *layout : {"bshd", "sbhd", "bhsd"}) {
    std::string parameters =
        std::string("b=2,hq=8,hkv=2,sq=200,skv=300,d=64,dtype=bf16,layout=") +
        layout + ",scale=3e000000,align=bottom_right,left=50,right=0,stats=1";
    SdpaConfig config;
    std::string error;
    ASSERT_TRUE(parseSdpaConfig(parameters.c_str(), config, error)) << error;
    config.backward = true;
    EXPECT_TRUE(validateSdpa(config, error)) << parameters << ": " << error;
  }
  // cuDNN measures a bottom-right diagonal only for s_q <= s_kv, which the
  // cuda target's choice of cuDNN respects (library-calls.test).
  SdpaConfig config;
  std::string error;
  ASSERT_TRUE(parseSdpaConfig(kCausalGQA, config, error));
  EXPECT_FALSE(validateSdpa(config, error));
  EXPECT_NE(error.find("max_s_q > max_s_kv"), std::string::npos) << error;
}

// The manifest is untrusted: operands smaller than the parameters say are
// refused before cuDNN is even opened, and sizes whose products would
// overflow are refused by the parser.
TEST(CUDNN, RefusesOperandsSmallerThanTheParameters) {
  te::runtime::DeviceMemory memory = {
      nullptr, [](void *, size_t, void **) { return TE_ERROR_INTERNAL; },
      [](void *, void *) {}};
  Context *context = createContext(memory);
  SdpaConfig config;
  std::string error;
  ASSERT_TRUE(parseSdpaConfig(kCausalGQA, config, error));
  size_t q = 2 * 16 * 1024 * 64 * 2, kv = 2 * 4 * 1000 * 64 * 2,
         lse = 2 * 16 * 1024 * 4;
  EXPECT_EQ(operandBytes(config), (std::vector<size_t>{q, kv, kv, q, lse}));
  void *args[5] = {};
  size_t sizes[5] = {q, kv, kv - 2, q, lse};
  EXPECT_EQ(runSdpa(*context, /*backward=*/false, kCausalGQA, args, sizes, 5,
                    nullptr),
            TE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(te::runtime::takeDeviceDetail()).find("operand 2 has"),
            std::string::npos);
  // The backward: q, k, v, o, dO, lse, then dq, dk, dv, and it needs the
  // forward's statistics.
  size_t backwardSizes[9] = {q, kv, kv, q, q, lse, q, kv, kv - 1};
  void *backwardArgs[9] = {};
  EXPECT_EQ(runSdpa(*context, /*backward=*/true, kCausalGQA, backwardArgs,
                    backwardSizes, 9, nullptr),
            TE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(te::runtime::takeDeviceDetail())
                .find("cudnn.sdpa_backward: operand 8 has"),
            std::string::npos);
  std::string noStats = kCausalGQA;
  noStats.replace(noStats.find("stats=1"), 7, "stats=0");
  EXPECT_EQ(runSdpa(*context, /*backward=*/true, noStats.c_str(), backwardArgs,
                    backwardSizes, 9, nullptr),
            TE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(te::runtime::takeDeviceDetail()).find("stats=1"),
            std::string::npos);
  destroyContext(context);
  EXPECT_FALSE(parseSdpaConfig(
      "b=2147483648,hq=2147483648,hkv=1,sq=2147483648,skv=1,d=2147483648,"
      "dtype=bf16,layout=bshd,scale=0,align=top_left,left=-1,right=-1,stats=0",
      config, error));
  EXPECT_NE(error.find("more than 2^40 elements"), std::string::npos) << error;
  EXPECT_FALSE(parseSdpaConfig(
      "b=1,hq=1,hkv=1,sq=1,skv=1,d=8,dtype=bf16,layout=bshd,scale=-1,"
      "align=top_left,left=-1,right=-1,stats=0",
      config, error));
  EXPECT_NE(error.find("invalid scale '-1'"), std::string::npos) << error;
}

} // namespace
