//===- RuntimeTestUtils.h - Shared helpers of the runtime tests -*- C++ -*-===//

#ifndef TE_UNITTESTS_RUNTIME_RUNTIMETESTUTILS_H
#define TE_UNITTESTS_RUNTIME_RUNTIMETESTUTILS_H

#include "te/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace te::runtime::testing {

struct DeviceReleaser {
  void operator()(te_device *device) const { te_device_release(device); }
};
struct BufferReleaser {
  void operator()(te_buffer *buffer) const { te_buffer_release(buffer); }
};
struct ModuleReleaser {
  void operator()(te_module *module) const { te_module_release(module); }
};
struct StreamReleaser {
  void operator()(te_stream *stream) const { te_stream_release(stream); }
};
struct EventReleaser {
  void operator()(te_event *event) const { te_event_release(event); }
};
using DevicePtr = std::unique_ptr<te_device, DeviceReleaser>;
using StreamPtr = std::unique_ptr<te_stream, StreamReleaser>;
using EventPtr = std::unique_ptr<te_event, EventReleaser>;
using BufferPtr = std::unique_ptr<te_buffer, BufferReleaser>;
using ModulePtr = std::unique_ptr<te_module, ModuleReleaser>;

inline DevicePtr openDevice(const char *name, int index = 0) {
  te_device *device = nullptr;
  EXPECT_EQ(te_device_open(name, index, &device), TE_OK)
      << te_last_error_message();
  return DevicePtr(device);
}

inline BufferPtr createBuffer(te_device *device, te_dtype dtype,
                              std::vector<int64_t> dims) {
  te_buffer *buffer = nullptr;
  EXPECT_EQ(te_buffer_create(device, dtype, static_cast<int>(dims.size()),
                             dims.data(), &buffer),
            TE_OK)
      << te_last_error_message();
  return BufferPtr(buffer);
}

inline ModulePtr loadModule(te_device *device, const char *path) {
  te_module *module = nullptr;
  EXPECT_EQ(te_module_load(device, path, &module), TE_OK)
      << te_last_error_message();
  return ModulePtr(module);
}

/// Runs `call` and expects it to fail with `expected` and a message that
/// contains every string of `fragments`, so each test states what the user is
/// told. A message left over from an earlier failure cannot satisfy it.
template <typename Call>
void expectError(Call &&call, te_status expected,
                 const std::vector<std::string> &fragments) {
  const char *stale = "<stale message>";
  te_dtype unused;
  ASSERT_EQ(te_dtype_from_name(stale, &unused), TE_ERROR_NOT_FOUND);
  te_status status = call();
  std::string message = te_last_error_message();
  EXPECT_EQ(status, expected)
      << "got " << te_status_string(status) << ", message: " << message;
  EXPECT_EQ(message.find(stale), std::string::npos)
      << "the failing call left no message of its own";
  for (const std::string &fragment : fragments)
    EXPECT_NE(message.find(fragment), std::string::npos)
        << "message lacks '" << fragment << "': " << message;
}

} // namespace te::runtime::testing

#endif // TE_UNITTESTS_RUNTIME_RUNTIMETESTUTILS_H
