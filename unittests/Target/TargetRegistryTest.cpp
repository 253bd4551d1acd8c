//===- TargetRegistryTest.cpp - Which target makes modules for a device ---===//
//
// The registry's order (built-in first, then registration order), what
// withdrawing a registrant's targets does, the refusals of validate, and
// what the host asks of targets built for older plugin ABIs.
//
//===----------------------------------------------------------------------===//

#include "te/Target/TargetRegistry.h"
#include "te/Plugin/PluginABI.h"
#include "te/Target/InitAllTargets.h"

#include <gtest/gtest.h>

using namespace mlir;
using te::TargetRef;
using te::TargetRegistry;

namespace {

class NamedTarget : public te::plugin::TargetBackend {
public:
  NamedTarget(std::string name, std::string device)
      : TargetBackend(std::move(name), std::move(device)) {}
  te::plugin::TargetInfo getTargetInfo() const override {
    return {getName(), "test-none-none", "test-1", ""};
  }
  void buildPipeline(OpPassManager &) const override {}
  LogicalResult serialize(ModuleOp, ArrayRef<te::KernelEntry>, StringRef,
                          StringRef, unsigned) const override {
    return failure();
  }
};

TEST(TargetRegistry, BuiltinTargetsComeFirstAndCannotBeClaimed) {
  te::registerBuiltinTargets();
  TargetRegistry &registry = TargetRegistry::get();
  TargetRef cpu = registry.find("cpu");
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(cpu.isBuiltin());
  EXPECT_EQ(cpu.describe(), "cpu (built-in)");
  EXPECT_EQ(cpu.getPipelineIdentity(), "te-lower-cpu abi=4");
  EXPECT_NE(cpu.getNativeLowering(), nullptr);
  EXPECT_EQ(registry.getTargets().front().target, cpu.target);

  NamedTarget clash("mine", "cpu");
  EXPECT_EQ(registry.validate(&clash),
            "target 'mine' for device 'cpu', which clashes with the built-in "
            "target 'cpu' for device 'cpu'");
  NamedTarget badName("a b", "dev");
  EXPECT_EQ(registry.validate(&badName),
            "a target named 'a b' for device 'dev' (names are 1 to 63 "
            "characters from [A-Za-z0-9_.-])");
  EXPECT_EQ(registry.validate(nullptr), "a null target");
}

TEST(TargetRegistry, RegistrationOrderIsPriorityAndWithdrawnTargetsStayKnown) {
  TargetRegistry &registry = TargetRegistry::get();
  static const int first = 0, second = 0;
  registry.add(std::make_unique<NamedTarget>("one", "shared-dev"), &first,
               "plugin first 1.0", TE_PLUGIN_ABI_MINOR);
  registry.add(std::make_unique<NamedTarget>("two", "shared-dev"), &second,
               "plugin second 1.0", TE_PLUGIN_ABI_MINOR);
  EXPECT_EQ(registry.find("shared-dev").describe(), "one (plugin first 1.0)");
  EXPECT_EQ(registry.getTargetsOf(&second).size(), 1u);

  registry.withdraw(&first);
  EXPECT_EQ(registry.find("shared-dev").describe(), "two (plugin second 1.0)");
  EXPECT_TRUE(registry.getTargetsOf(&first).empty());
  EXPECT_EQ(registry.findWithdrawn("shared-dev").describe(),
            "one (plugin first 1.0)");
  registry.withdraw(&second);
  EXPECT_FALSE(registry.find("shared-dev"));
  EXPECT_EQ(registry.describeDevices().find("shared-dev"), std::string::npos);
}

TEST(TargetRegistry, OlderPluginTargetsGetWhatTheirABIPromised) {
  te::registerBuiltinTargets();
  TargetRegistry &registry = TargetRegistry::get();
  static const int old = 0, current = 0;
  registry.add(std::make_unique<NamedTarget>("old", "old-dev"), &old,
               "plugin old 1.0", /*abiMinor=*/1);
  registry.add(std::make_unique<NamedTarget>("new", "new-dev"), &current,
               "plugin new 1.0", TE_PLUGIN_ABI_MINOR);
  // ABI 1.1: native meant the host's lowering, and the interface ended at
  // serialize, so nothing after it is called.
  TargetRef oldRef = registry.find("old-dev");
  EXPECT_EQ(oldRef.getNativeLowering(),
            registry.find("cpu").getNativeLowering());
  EXPECT_EQ(oldRef.getPipelineIdentity(), "old");
  EXPECT_TRUE(oldRef.getArtifactNames().empty());
  // ABI 1.2: the target's own answers (here, the defaults).
  TargetRef newRef = registry.find("new-dev");
  EXPECT_EQ(newRef.getNativeLowering(), nullptr);
  EXPECT_EQ(newRef.getPipelineIdentity(), "new");
  OpPassManager pm(ModuleOp::getOperationName());
  EXPECT_FALSE(newRef.buildReferencePipeline(pm));
  registry.withdraw(&old);
  registry.withdraw(&current);
}

} // namespace
