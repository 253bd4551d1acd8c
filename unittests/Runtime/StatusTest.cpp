//===- StatusTest.cpp - Status names and the per-thread error message -----===//

#include "RuntimeTestUtils.h"

#include <cstring>
#include <string>
#include <thread>

using namespace te::runtime::testing;

namespace {

TEST(StatusTest, EveryStatusHasItsEnumeratorName) {
  EXPECT_STREQ(te_status_string(TE_OK), "TE_OK");
  EXPECT_STREQ(te_status_string(TE_ERROR_INVALID_ARGUMENT),
               "TE_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(te_status_string(TE_ERROR_NOT_FOUND), "TE_ERROR_NOT_FOUND");
  EXPECT_STREQ(te_status_string(TE_ERROR_DTYPE_MISMATCH),
               "TE_ERROR_DTYPE_MISMATCH");
  EXPECT_STREQ(te_status_string(TE_ERROR_SHAPE_MISMATCH),
               "TE_ERROR_SHAPE_MISMATCH");
  EXPECT_STREQ(te_status_string(TE_ERROR_OUT_OF_MEMORY),
               "TE_ERROR_OUT_OF_MEMORY");
  EXPECT_STREQ(te_status_string(TE_ERROR_LOAD_FAILED), "TE_ERROR_LOAD_FAILED");
  EXPECT_STREQ(te_status_string(TE_ERROR_UNSUPPORTED), "TE_ERROR_UNSUPPORTED");
  EXPECT_STREQ(te_status_string(TE_ERROR_INTERNAL), "TE_ERROR_INTERNAL");
  EXPECT_STREQ(te_status_string(TE_ERROR_COMPILE_FAILED),
               "TE_ERROR_COMPILE_FAILED");
}

TEST(StatusTest, UnknownStatusHasAPlaceholderName) {
  // 15 is outside the enumerators but inside the enum's value range.
  EXPECT_STREQ(te_status_string(static_cast<te_status>(15)),
               "TE_ERROR_UNKNOWN");
}

TEST(StatusTest, MessageIsEmptyBeforeTheFirstFailure) {
  std::string message = "unset";
  std::thread([&] { message = te_last_error_message(); }).join();
  EXPECT_EQ(message, "");
}

TEST(StatusTest, FailingCallSetsTheMessageAndSuccessKeepsIt) {
  te_dtype dtype;
  ASSERT_EQ(te_dtype_from_name("f33", &dtype), TE_ERROR_NOT_FOUND);
  std::string failure = te_last_error_message();
  EXPECT_NE(failure.find("'f33'"), std::string::npos) << failure;
  ASSERT_EQ(te_dtype_from_name("f32", &dtype), TE_OK);
  EXPECT_EQ(failure, te_last_error_message());
}

TEST(StatusTest, MessagesAreKeptPerThread) {
  te_dtype dtype;
  ASSERT_EQ(te_dtype_from_name("main-thread", &dtype), TE_ERROR_NOT_FOUND);
  std::string other;
  std::thread([&] {
    te_dtype unused;
    EXPECT_EQ(te_dtype_from_name("other-thread", &unused), TE_ERROR_NOT_FOUND);
    other = te_last_error_message();
  }).join();
  EXPECT_NE(other.find("other-thread"), std::string::npos) << other;
  EXPECT_NE(std::string(te_last_error_message()).find("main-thread"),
            std::string::npos)
      << te_last_error_message();
}

TEST(StatusTest, LongMessagesAreTruncatedNotOverflowed) {
  std::string longName(10000, 'x');
  te_device *device = nullptr;
  ASSERT_EQ(te_device_open(longName.c_str(), 0, &device), TE_ERROR_NOT_FOUND);
  size_t length = std::strlen(te_last_error_message());
  EXPECT_GT(length, 0u);
  EXPECT_LT(length, 4096u);
}

} // namespace
