//===- ManifestTest.cpp - The manifest's writer against its reader --------===//
//
// The compiler writes manifests with writeManifest and the runtime reads
// them with readManifest (te/ABI/Manifest.h). These tests hold the pair to
// each other: everything written reads back equal, each version is the
// oldest that states the manifest, and what the reader refuses the writer
// refuses too, so a compiler never hands a runtime a manifest it rejects.
// The reader's messages for malformed text are tested through the runtime
// (unittests/Runtime/ModuleTest.cpp), which reports them at load.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/Manifest.h"

#include <gtest/gtest.h>

using namespace te::abi;

namespace {

ManifestArgument tensor(ElementType type, std::vector<int64_t> dims,
                        bool isOutput = false, std::string role = "") {
  ManifestArgument argument;
  argument.isOutput = isOutput;
  argument.elementType = type;
  argument.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    argument.dims[d] = dims[d];
  argument.role = std::move(role);
  return argument;
}

/// `entry <name> <symbol>` with a bf16 input and an f32 output.
ManifestEntry simpleEntry(const std::string &name, std::string symbol = "") {
  ManifestEntry entry;
  entry.name = name;
  entry.symbol = symbol.empty() ? name + "__te_packed" : symbol;
  entry.arguments = {tensor(ElementType::BF16, {2, 128, 16, 64}),
                     tensor(ElementType::F32, {}, /*isOutput=*/true)};
  return entry;
}

LaunchGeometry geometry(unsigned grid, unsigned block, size_t shared) {
  LaunchGeometry result;
  result.grid[0] = grid;
  result.block[0] = block;
  result.sharedMemoryBytes = shared;
  return result;
}

/// Every directive of every version, in one manifest.
Manifest everyDirective() {
  Manifest manifest;
  manifest.entries.push_back(simpleEntry("plain"));

  ManifestEntry checked = simpleEntry("checked");
  checked.arguments[0].role = "positive";
  checked.hasStatus = true;
  checked.checks = {"op 3: scale {0} is not positive",
                    "op 4: {1} tokens in {2}"};
  manifest.entries.push_back(checked);

  ManifestEntry launched = simpleEntry("launched");
  launched.launch = geometry(128, 256, 49152);
  launched.launch->grid[1] = 4;
  manifest.entries.push_back(launched);

  ManifestEntry stepped = simpleEntry("stepped.v-1", "stepped.v$1");
  stepped.hasStatus = true;
  stepped.checks = {"op 0: failed"};
  stepped.plan.temporaries = {4, 1 << 20};
  stepped.plan.steps = {
      ManifestStep::kernel("te_amax_0123_init", geometry(1, 1, 0),
                           {ManifestOperand::temporary(0)}),
      ManifestStep::kernel("te_amax$0123.amax", geometry(64, 256, 1024),
                           {ManifestOperand::argument(0),
                            ManifestOperand::temporary(0),
                            ManifestOperand::status()}),
      ManifestStep::call("cublaslt.matmul", "m=64,n=32,k=16,a=bf16,scale=-1",
                         {ManifestOperand::argument(0),
                          ManifestOperand::temporary(1),
                          ManifestOperand::argument(1)})};
  manifest.entries.push_back(stepped);
  return manifest;
}

std::string write(const Manifest &manifest) {
  std::string error;
  std::string text = writeManifest(manifest, error);
  EXPECT_EQ(error, "");
  return text;
}

Manifest read(const std::string &text) {
  Manifest manifest;
  std::string error;
  EXPECT_TRUE(readManifest(text.c_str(), manifest, error)) << error;
  return manifest;
}

/// The error of writing `manifest`, which must fail.
std::string writeError(const Manifest &manifest) {
  std::string error;
  std::string text = writeManifest(manifest, error);
  EXPECT_EQ(text, "") << "written although the reader refuses it";
  EXPECT_NE(error, "");
  return error;
}

TEST(ManifestTest, WritesEveryDirectiveAsDocumented) {
  EXPECT_EQ(write(everyDirective()),
            "te-kernel-abi 5\n"
            "entry plain plain__te_packed\n"
            "in bf16 2x128x16x64\n"
            "out f32 scalar\n"
            "end\n"
            "entry checked checked__te_packed\n"
            "in bf16 2x128x16x64 positive\n"
            "out f32 scalar\n"
            "status i64 4\n"
            "check op 3: scale {0} is not positive\n"
            "check op 4: {1} tokens in {2}\n"
            "end\n"
            "entry launched launched__te_packed\n"
            "in bf16 2x128x16x64\n"
            "out f32 scalar\n"
            "launch 128x4x1 256x1x1 49152\n"
            "end\n"
            "entry stepped.v-1 stepped.v$1\n"
            "in bf16 2x128x16x64\n"
            "out f32 scalar\n"
            "status i64 4\n"
            "check op 0: failed\n"
            "temp 4\n"
            "temp 1048576\n"
            "step te_amax_0123_init 1x1x1 1x1x1 0 t0\n"
            "step te_amax$0123.amax 64x1x1 256x1x1 1024 a0 t0 s\n"
            "call cublaslt.matmul m=64,n=32,k=16,a=bf16,scale=-1 a0 t1 a1\n"
            "end\n");
}

TEST(ManifestTest, WhatIsWrittenReadsBackEqual) {
  Manifest manifest = everyDirective();
  std::string text = write(manifest);
  Manifest reread = read(text);
  EXPECT_TRUE(reread == manifest);
  EXPECT_EQ(write(reread), text);
  // The reader records where each entry and step was, for messages.
  EXPECT_EQ(reread.entries[0].line, 2);
  EXPECT_EQ(reread.entries[3].plan.steps[2].line, 27);
}

TEST(ManifestTest, EqualityComparesEveryField) {
  Manifest manifest = everyDirective();
  auto differs = [&](auto change) {
    Manifest changed = manifest;
    change(changed);
    return !(changed == manifest);
  };
  EXPECT_TRUE(
      differs([](Manifest &m) { m.entries[0].arguments[0].dims[3] = 65; }));
  EXPECT_TRUE(differs([](Manifest &m) {
    m.entries[0].arguments[1].elementType = ElementType::F8E4M3FN;
  }));
  EXPECT_TRUE(
      differs([](Manifest &m) { m.entries[1].arguments[0].role = ""; }));
  EXPECT_TRUE(differs([](Manifest &m) { m.entries[1].checks.pop_back(); }));
  EXPECT_TRUE(differs([](Manifest &m) { m.entries[2].launch->block[2] = 2; }));
  EXPECT_TRUE(
      differs([](Manifest &m) { m.entries[3].plan.temporaries[1] = 8; }));
  EXPECT_TRUE(differs([](Manifest &m) {
    m.entries[3].plan.steps[1].geometry.sharedMemoryBytes = 0;
  }));
  EXPECT_TRUE(differs([](Manifest &m) {
    m.entries[3].plan.steps[2].operands[1] = ManifestOperand::argument(1);
  }));
  EXPECT_TRUE(differs(
      [](Manifest &m) { m.entries[3].plan.steps[2].parameters += ",n=1"; }));
  // Where a step was read is not part of what it says.
  EXPECT_FALSE(
      differs([](Manifest &m) { m.entries[3].plan.steps[0].line = 9; }));
}

TEST(ManifestTest, WritesTheOldestVersionThatStatesIt) {
  Manifest manifest;
  manifest.entries.push_back(simpleEntry("k"));
  auto version = [&] {
    std::string text = write(manifest);
    return text.substr(0, text.find('\n'));
  };
  EXPECT_EQ(version(), "te-kernel-abi 1");
  manifest.entries[0].arguments[0].role = "nonnegative";
  EXPECT_EQ(version(), "te-kernel-abi 2");
  manifest.entries[0].arguments[0].role = "";
  manifest.entries[0].hasStatus = true;
  manifest.entries[0].checks = {"op 0: bad"};
  EXPECT_EQ(version(), "te-kernel-abi 2");
  manifest.entries[0].launch = geometry(1, 32, 0);
  EXPECT_EQ(version(), "te-kernel-abi 3");
  manifest.entries[0].launch.reset();
  manifest.entries[0].plan.steps = {ManifestStep::kernel(
      "k0", geometry(1, 1, 0), {ManifestOperand::argument(0)})};
  EXPECT_EQ(version(), "te-kernel-abi 4");
  manifest.entries[0].plan.steps.push_back(ManifestStep::call(
      "collective.all_reduce", "op=sum", {ManifestOperand::argument(1)}));
  EXPECT_EQ(version(), "te-kernel-abi 5");
  EXPECT_EQ(getManifestVersion(manifest), kNewestManifestVersion);
}

TEST(ManifestTest, ReadsTheShortFormsAndWritesTheFullOnes) {
  // The format allows one to three launch dimensions and a final newline
  // or none; the writer always writes three and ends every line.
  Manifest manifest = read("te-kernel-abi 3\n"
                           "entry k k\n"
                           "out i64 3\n"
                           "launch 8x2 32 0\n"
                           "end");
  ASSERT_TRUE(manifest.entries[0].launch.has_value());
  EXPECT_EQ(manifest.entries[0].launch->grid[1], 2u);
  EXPECT_EQ(manifest.entries[0].launch->grid[2], 1u);
  EXPECT_EQ(write(manifest), "te-kernel-abi 3\n"
                             "entry k k\n"
                             "out i64 3\n"
                             "launch 8x2x1 32x1x1 0\n"
                             "end\n");
}

TEST(ManifestTest, RefusesToWriteWhatTheReaderRefuses) {
  auto with = [](auto change) {
    Manifest manifest = everyDirective();
    change(manifest);
    return manifest;
  };
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[0].name = "a/b";
            })).find("invalid entry name 'a/b'"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[0].symbol = "9k";
            })).find("invalid symbol '9k'"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[1].name = "plain";
            })).find("duplicate entry 'plain'"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[1].checks[0] = "two\tcolumns";
            })).find("unexpected byte 0x09"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[1].checks[0] = "two\nlines";
            })).find("line 11: unknown directive 'lines'"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[3].plan.steps[0].operands[0] =
                  ManifestOperand::temporary(2);
            })).find("names temporary 2, but entry 'stepped.v-1' has 2"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[0].plan.steps = {ManifestStep::kernel(
                  "k", LaunchGeometry(), {ManifestOperand::status()})};
            })).find("has no 'status' line"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[3].plan.steps[2].parameters = "m=1 n=2";
            })).find("invalid operand 'n=2'"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[1].checks.clear();
            })).find("has a 'status' line but no 'check' lines"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[2].plan.steps = m.entries[3].plan.steps;
              m.entries[2].plan.temporaries = {4, 4};
              m.entries[2].hasStatus = true;
              m.entries[2].checks = {"x"};
            })).find("an entry is one kernel (launch) or several"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[0].arguments[0].dims[0] = int64_t(1) << 62;
            })).find("does not fit in the address space"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries[0].arguments[0].elementType =
                  static_cast<ElementType>(99);
            })).find("invalid element type or rank"),
            std::string::npos);
  EXPECT_NE(writeError(with([](Manifest &m) {
              m.entries.clear();
            })).find("declares no kernels"),
            std::string::npos);
  // Only inputs have roles.
  EXPECT_EQ(writeError(with([](Manifest &m) {
              m.entries[0].arguments[1].role = "positive";
            })),
            "the manifest does not read back: line 4: expected 'out <dtype> "
            "<dims>'");
}

TEST(ManifestTest, TemporariesKeepTheirPlaces) {
  // A GPU plan declares each buffer where the program allocates it.
  std::string text = "te-kernel-abi 4\n"
                     "entry k k\n"
                     "in f32 64\n"
                     "out f32 64\n"
                     "temp 4\n"
                     "step init 1x1x1 1x1x1 0 t0\n"
                     "step amax 64x1x1 256x1x1 0 a0 t0\n"
                     "temp 8\n"
                     "step scale 1x1x1 32x1x1 0 t0 t1 a1\n"
                     "temp 16\n"
                     "end\n";
  Manifest manifest = read(text);
  const StepPlan &plan = manifest.entries[0].plan;
  EXPECT_EQ(plan.declaredAfterSteps, (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(write(manifest), text);

  // Built in program order, a plan records the same places.
  StepPlan built;
  ManifestOperand t0 = built.addTemporary(4);
  built.steps.push_back(plan.steps[0]);
  built.steps.push_back(plan.steps[1]);
  EXPECT_TRUE(built.addTemporary(8) == ManifestOperand::temporary(1));
  built.steps.push_back(plan.steps[2]);
  built.addTemporary(16);
  EXPECT_TRUE(t0 == ManifestOperand::temporary(0));
  EXPECT_TRUE(built == plan);
  EXPECT_EQ(writeStepPlan(built)[3], "temp 8");

  // Places out of order cannot be written as they are.
  manifest.entries[0].plan.declaredAfterSteps = {2, 0, 3};
  EXPECT_EQ(writeError(manifest), "the manifest does not read back as written");
}

TEST(ManifestTest, StepPlansTravelAsTheirLines) {
  StepPlan plan = everyDirective().entries[3].plan;
  std::vector<std::string> lines = writeStepPlan(plan);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "temp 4");
  EXPECT_EQ(lines[3], "step te_amax$0123.amax 64x1x1 256x1x1 1024 a0 t0 s");
  StepPlan reread;
  std::string error;
  ASSERT_TRUE(readStepPlan(lines, reread, error)) << error;
  EXPECT_EQ(reread.temporaries, plan.temporaries);
  EXPECT_TRUE(reread.steps == plan.steps);

  // Lines that are not a plan's, and operands naming no temporary.
  auto refused = [&](std::vector<std::string> text) {
    StepPlan unused;
    std::string why;
    EXPECT_FALSE(readStepPlan(text, unused, why));
    return why;
  };
  EXPECT_EQ(refused({"temp 4", "end"}),
            "line 2: unexpected directive 'end'; a step plan has 'temp', "
            "'step' and 'call' lines only");
  EXPECT_NE(refused({"step k 1 1 0 t0"}).find("names temporary 0"),
            std::string::npos);
  EXPECT_NE(refused({"temp 4"}).find("but no 'step' or 'call' lines"),
            std::string::npos);
  EXPECT_EQ(refused({"step k 1 1 0 a0", ""}),
            "line 2: empty line; manifests have no blank lines");
}

TEST(ManifestTest, ElementTypesAreTheKernelTypesOfTheTable) {
  int count = 0;
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)                        \
  EXPECT_EQ(lookUpElementType(NAME), ElementType::ENUM);                       \
  EXPECT_STREQ(getElementTypeName(ElementType::ENUM), NAME);                   \
  ++count;
#include "te/ABI/ElementTypes.def"
  EXPECT_EQ(count, 11);
  // A type only files have is not a kernel type.
  EXPECT_EQ(lookUpElementType("ui8"), std::nullopt);
  EXPECT_EQ(lookUpElementType("F32"), std::nullopt);
  EXPECT_EQ(getElementTypeName(static_cast<ElementType>(count)), nullptr);
}

TEST(ManifestTest, RefusesUnterminatedAndOversizedText) {
  std::string huge(17u << 20, 'x');
  Manifest manifest;
  std::string error;
  EXPECT_FALSE(readManifest(huge.c_str(), manifest, error));
  EXPECT_EQ(error, "the manifest is longer than 16 MiB or not NUL-terminated");
}

} // namespace
