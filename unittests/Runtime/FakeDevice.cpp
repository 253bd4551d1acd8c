//===- FakeDevice.cpp - Registration of the tests' plugin devices ---------===//

#include "FakeDevice.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>

using namespace te::runtime::testing;

FakeDevice &te::runtime::testing::registerFakeDevice(const std::string &name,
                                                     bool withModules,
                                                     bool withStreams,
                                                     bool withCollectives) {
  static std::mutex mutex;
  // Leaked like the registry: registered contexts must outlive the process.
  static auto *devices = new std::map<std::string, std::unique_ptr<FakeDevice>>;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<FakeDevice> &device = (*devices)[name];
  if (!device) {
    device = std::make_unique<FakeDevice>();
    device->name = name;
    te_device_ops table =
        device->ops(withModules, withStreams, withCollectives);
    EXPECT_EQ(te_device_register(&table, device.get()), TE_OK)
        << te_last_error_message();
  }
  return *device;
}
