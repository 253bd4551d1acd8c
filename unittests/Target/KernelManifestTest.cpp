//===- KernelManifestTest.cpp - The compiler's side of the manifest -------===//
//
// formatKernelManifest states the kernel entries through te/ABI's writer,
// and a target that adds steps reads the manifest back for the same
// entries. What the runtime would refuse, or a manifest of other entries,
// is an error at the module, not a manifest the runtime rejects at load.
//
//===----------------------------------------------------------------------===//

#include "te/Target/KernelManifest.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class KernelManifestTest : public ::testing::Test {
protected:
  KernelManifestTest() : loc(UnknownLoc::get(&context)) {
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diagnostic) {
          errors += diagnostic.str() + "\n";
          return success();
        });
  }

  mlir::te::KernelEntry entry(std::string name) {
    auto bf16 = RankedTensorType::get({2, 64}, BFloat16Type::get(&context));
    auto f32 = RankedTensorType::get({}, Float32Type::get(&context));
    return {std::move(name), {bf16}, {f32}};
  }

  MLIRContext context;
  Location loc;
  std::string errors;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

TEST_F(KernelManifestTest, StatesTheEntriesAsTheRuntimeReadsThem) {
  SmallVector<mlir::te::KernelEntry> entries = {entry("amax"), entry("scale")};
  FailureOr<std::string> text = mlir::te::formatKernelManifest(
      loc, entries, {{}, {"op 1: scale {0} is not positive"}},
      {{"positive"}, {}});
  ASSERT_TRUE(succeeded(text)) << errors;
  EXPECT_EQ(*text, "te-kernel-abi 2\n"
                   "entry amax amax__te_packed\n"
                   "in bf16 2x64 positive\n"
                   "out f32 scalar\n"
                   "end\n"
                   "entry scale scale__te_packed\n"
                   "in bf16 2x64\n"
                   "status i64 4\n"
                   "check op 1: scale {0} is not positive\n"
                   "end\n");
  FailureOr<::te::abi::Manifest> manifest =
      mlir::te::readKernelManifest(*text, entries, loc);
  ASSERT_TRUE(succeeded(manifest)) << errors;
  EXPECT_TRUE(manifest->entries[1].hasStatus);
}

TEST_F(KernelManifestTest, ANameTheRuntimeRefusesIsACompileError) {
  SmallVector<mlir::te::KernelEntry> entries = {entry("scale-it")};
  EXPECT_TRUE(failed(mlir::te::formatKernelManifest(loc, entries)));
  EXPECT_EQ(errors, "cannot state the kernel manifest: the manifest does not "
                    "read back: line 2: invalid symbol 'scale-it__te_packed'; "
                    "expected a C identifier\n");
}

TEST_F(KernelManifestTest, ReadingBackChecksTheEntries) {
  SmallVector<mlir::te::KernelEntry> entries = {entry("amax"), entry("scale")};
  FailureOr<std::string> text = mlir::te::formatKernelManifest(loc, entries);
  ASSERT_TRUE(succeeded(text)) << errors;

  SmallVector<mlir::te::KernelEntry> swapped = {entries[1], entries[0]};
  EXPECT_TRUE(failed(mlir::te::readKernelManifest(*text, swapped, loc)));
  SmallVector<mlir::te::KernelEntry> fewer = {entries[0]};
  EXPECT_TRUE(failed(mlir::te::readKernelManifest(*text, fewer, loc)));
  EXPECT_TRUE(
      failed(mlir::te::readKernelManifest("te-kernel-abi 9\n", fewer, loc)));
  EXPECT_EQ(errors,
            "the kernel manifest does not state entry 'scale' as entry 0\n"
            "the kernel manifest states 2 entries, the module has 1\n"
            "the kernel manifest does not read: line 1: unsupported manifest "
            "version '9'; this runtime reads versions 1 to 5, rebuild the "
            "kernels with a matching te-mlir\n");
}

TEST_F(KernelManifestTest, AManifestThatDoesNotReadBackIsNotWritten) {
  ::te::abi::Manifest manifest;
  EXPECT_TRUE(failed(mlir::te::writeKernelManifest(manifest, loc)));
  EXPECT_EQ(errors.rfind("cannot state the kernel manifest: the manifest "
                         "does not read back: line 2: the manifest declares "
                         "no kernels",
                         0),
            0u)
      << errors;
}

} // namespace
