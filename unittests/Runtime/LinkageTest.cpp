//===- LinkageTest.cpp - What libTERuntime links and exports --------------===//
//
// The runtime must load in processes that have no MLIR or LLVM (deployed
// inference, Python without the compiler), so its ELF dependencies are
// checked on the built file rather than trusted to the build scripts.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

/// Returns the DT_NEEDED entries of a 64-bit ELF shared library, or fails the
/// test if the file is not one.
std::vector<std::string> neededLibraries(const char *path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes(std::istreambuf_iterator<char>(file), {});
  std::vector<std::string> needed;
  auto fits = [&](uint64_t offset, uint64_t size) {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  };
  Elf64_Ehdr header;
  if (!fits(0, sizeof(header))) {
    ADD_FAILURE() << path << " is too small to be an ELF file";
    return needed;
  }
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64) {
    ADD_FAILURE() << path << " is not a 64-bit ELF file";
    return needed;
  }
  auto section = [&](unsigned index) {
    Elf64_Shdr shdr = {};
    uint64_t offset = header.e_shoff + uint64_t(index) * header.e_shentsize;
    if (index < header.e_shnum && fits(offset, sizeof(shdr)))
      std::memcpy(&shdr, bytes.data() + offset, sizeof(shdr));
    return shdr;
  };
  for (unsigned i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr dynamic = section(i);
    if (dynamic.sh_type != SHT_DYNAMIC)
      continue;
    Elf64_Shdr strings = section(dynamic.sh_link);
    for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic.sh_size;
         at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      if (!fits(dynamic.sh_offset + at, sizeof(entry)))
        break;
      std::memcpy(&entry, bytes.data() + dynamic.sh_offset + at, sizeof(entry));
      if (entry.d_tag == DT_NULL)
        break;
      if (entry.d_tag != DT_NEEDED || entry.d_un.d_val >= strings.sh_size)
        continue;
      uint64_t nameOffset = strings.sh_offset + entry.d_un.d_val;
      if (!fits(nameOffset, 1))
        continue;
      const char *name = bytes.data() + nameOffset;
      needed.emplace_back(
          name, strnlen(name, bytes.size() - static_cast<size_t>(nameOffset)));
    }
  }
  return needed;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return text;
}

TEST(LinkageTest, RuntimeDependsOnlyOnSystemLibraries) {
  std::vector<std::string> needed = neededLibraries(TE_RUNTIME_LIBRARY_PATH);
  ASSERT_FALSE(needed.empty()) << "no DT_NEEDED entries found";
  // Sanitizer runtimes appear only in instrumented builds.
  const char *allowed[] = {"libc.so",      "libdl.so",     "libpthread.so",
                           "libm.so",      "libstdc++.so", "libc++.so",
                           "libc++abi.so", "libgcc_s.so",  "ld-linux",
                           "libasan.so",   "libubsan.so",  "libtsan.so",
                           "libclang_rt."};
  for (const std::string &library : needed) {
    EXPECT_EQ(lowercase(library).find("mlir"), std::string::npos) << library;
    EXPECT_EQ(lowercase(library).find("llvm"), std::string::npos) << library;
    bool isAllowed = std::any_of(
        std::begin(allowed), std::end(allowed), [&](const char *prefix) {
          return library.compare(0, std::strlen(prefix), prefix) == 0;
        });
    EXPECT_TRUE(isAllowed) << "unexpected dependency " << library;
  }
}

TEST(LinkageTest, OnlyTheCApiIsExported) {
  void *library = dlopen(TE_RUNTIME_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  EXPECT_NE(dlsym(library, "te_kernel_launch"), nullptr);
  EXPECT_NE(dlsym(library, "te_last_error_message"), nullptr);
  // Internal C++ helpers stay hidden (-fvisibility=hidden); both names are
  // defined in the library's object files.
  EXPECT_EQ(dlsym(library, "_ZN2te7runtime4failE9te_statusPKcz"), nullptr);
  EXPECT_EQ(dlsym(library, "_ZN2te7runtime16getHostDeviceOpsEv"), nullptr);
  dlclose(library);
}

} // namespace
