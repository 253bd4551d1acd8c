//===- RuntimePluginTest.cpp - te_runtime_load_plugin ---------------------===//

#include "te/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <string>

namespace {

std::string fixture(const char *kind) {
  return std::string(TE_TEST_RUNTIME_PLUGIN_DIR) +
         "/libTERuntimePluginFixture_" + kind + ".so";
}

bool isRegistered(const char *name) {
  te_device *device = nullptr;
  if (te_device_open(name, 0, &device) != TE_OK)
    return false;
  te_device_release(device);
  return true;
}

// Every refusal leaves the registry as it was. The refusing fixtures run
// before the good one, whose device names they share.
TEST(RuntimePlugin, RefusalsRegisterNothing) {
  EXPECT_EQ(te_runtime_load_plugin(nullptr), TE_ERROR_INVALID_ARGUMENT);

  EXPECT_EQ(te_runtime_load_plugin("/no/such/plugin.so"), TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_last_error_message()).find("/no/such/plugin.so"),
            std::string::npos);

  EXPECT_EQ(te_runtime_load_plugin(fixture("missing_symbol").c_str()),
            TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_last_error_message())
                .find("does not export te_runtime_plugin_query"),
            std::string::npos);

  EXPECT_EQ(te_runtime_load_plugin(fixture("abi_major").c_str()),
            TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_last_error_message())
                .find("is built for runtime plugin ABI 2.0, this runtime "
                      "implements 1.0"),
            std::string::npos);

  EXPECT_EQ(te_runtime_load_plugin(fixture("abi_minor").c_str()),
            TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_last_error_message())
                .find("is built for runtime plugin ABI 1.99, this runtime "
                      "implements 1.0"),
            std::string::npos);

  EXPECT_EQ(te_runtime_load_plugin(fixture("query_null").c_str()),
            TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_last_error_message())
                .find("refuses this runtime (runtime plugin ABI 1.0)"),
            std::string::npos);

  EXPECT_EQ(te_runtime_load_plugin(fixture("small_struct").c_str()),
            TE_ERROR_LOAD_FAILED);
  EXPECT_NE(std::string(te_last_error_message())
                .find("te_runtime_plugin_info is 8 bytes, smaller than "
                      "runtime plugin ABI 1.0's"),
            std::string::npos);

  EXPECT_EQ(te_runtime_load_plugin(fixture("no_tables").c_str()),
            TE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(te_last_error_message())
                .find("lists 2 devices without their tables"),
            std::string::npos);

  // The second table is invalid: the first, valid one is not registered.
  EXPECT_EQ(te_runtime_load_plugin(fixture("invalid_second").c_str()),
            TE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(te_last_error_message()).find("plugin 'fixture' ("),
            std::string::npos);
  EXPECT_NE(std::string(te_last_error_message())
                .find("leaves the required entry te_device_ops.synchronize "
                      "NULL"),
            std::string::npos);
  EXPECT_FALSE(isRegistered("fixture_mem_a"));

  // A NULL entry in the device list: refused whole.
  EXPECT_EQ(te_runtime_load_plugin(fixture("null_table").c_str()),
            TE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(te_last_error_message()).find("device table 1 is NULL"),
            std::string::npos);
  EXPECT_FALSE(isRegistered("fixture_mem_a"));

  // A device named like an existing one ("cpu"): refused whole.
  EXPECT_EQ(te_runtime_load_plugin(fixture("taken_name").c_str()),
            TE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(te_last_error_message())
                .find("a device named 'cpu' is already registered"),
            std::string::npos);
  EXPECT_FALSE(isRegistered("fixture_mem_a"));
}

TEST(RuntimePlugin, DevicesOfAGoodPluginWork) {
  ASSERT_EQ(te_runtime_load_plugin(fixture("good").c_str()), TE_OK)
      << te_last_error_message();
  // Loading it again is a no-op.
  ASSERT_EQ(te_runtime_load_plugin(fixture("good").c_str()), TE_OK);
  EXPECT_TRUE(isRegistered("fixture_mem_b"));

  te_device *device = nullptr;
  ASSERT_EQ(te_device_open("fixture_mem_a", 0, &device), TE_OK);
  int64_t dims[] = {4};
  te_buffer *buffer = nullptr;
  ASSERT_EQ(te_buffer_create(device, TE_DTYPE_F32, 1, dims, &buffer), TE_OK)
      << te_last_error_message();
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  ASSERT_EQ(te_buffer_write(buffer, in, sizeof(in)), TE_OK);
  ASSERT_EQ(te_buffer_read(buffer, out, sizeof(out)), TE_OK);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], in[i]);
  te_buffer_release(buffer);
  te_device_release(device);
}

} // namespace
