//===- FileTrustTest.cpp - The one routine that opens what te-mlir loads --===//
//
// openChecked refuses, by name and without ever blocking, every file that
// is not a regular file (FIFO, device, directory, and under refuseSymlink a
// symbolic link), every file and directory that someone else could have
// written, and loadLibrary loads the file it checked (through a descriptor
// of its checked directory) and checks the dependencies a library has
// beside itself ($ORIGIN) too.
//
//===----------------------------------------------------------------------===//

#include "te/Support/FileTrust.h"

#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace te::support;
namespace fs = std::filesystem;

namespace {

class FileTrustTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::random_device random;
    dir = fs::temp_directory_path() /
          ("te-trust-test-" + std::to_string(random()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(dir, fs::perms::owner_all, ignored);
    fs::remove_all(dir, ignored);
  }

  std::string path(const std::string &name) const { return dir / name; }

  std::string write(const std::string &name, const std::string &bytes,
                    mode_t mode = 0644) {
    std::string file = path(name);
    std::ofstream(file, std::ios::binary) << bytes;
    chmod(file.c_str(), mode);
    return file;
  }

  /// openChecked's outcome for `file`: the problem and the phrase.
  std::pair<FileProblem, std::string>
  check(const std::string &file, const FileRules &rules = FileRules()) {
    FileProblem problem;
    std::string why;
    CheckedFile opened = openChecked(file, rules, problem, why);
    EXPECT_EQ(bool(opened), problem == FileProblem::None) << why;
    return {problem, why};
  }

  fs::path dir;
};

TEST_F(FileTrustTest, ReadsARegularFileThroughItsDescriptor) {
  std::string file = write("data.bin", std::string("abc\0def", 7));
  FileProblem problem;
  std::string why, contents;
  CheckedFile opened = openChecked(file, FileRules(), problem, why);
  ASSERT_TRUE(opened) << why;
  EXPECT_TRUE(S_ISREG(opened.status().st_mode));
  ASSERT_TRUE(opened.readAll(contents, why)) << why;
  EXPECT_EQ(contents, std::string("abc\0def", 7));
  EXPECT_EQ(opened.realPath(), fs::canonical(file).string());
  // A limit below the size refuses before reading.
  EXPECT_FALSE(opened.readAll(contents, why, 3));
  EXPECT_NE(why.find("too large (7 bytes; at most 3)"), std::string::npos);
  FileRules small;
  small.maxBytes = 6;
  EXPECT_EQ(check(file, small).first, FileProblem::TooLarge);
}

// The open itself must not wait: a FIFO without a writer blocks a plain
// open(O_RDONLY) forever.
TEST_F(FileTrustTest, RefusesFifosDevicesAndDirectoriesWithoutBlocking) {
  std::string fifo = path("pipe.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  for (const FileRules &rules : {FileRules::library(), FileRules::data()}) {
    auto [problem, why] = check(fifo, rules);
    EXPECT_EQ(problem, FileProblem::NotRegular);
    EXPECT_EQ(why, "is a FIFO (named pipe), not a regular file");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  auto [zeroProblem, zeroWhy] = check("/dev/zero", FileRules::data());
  EXPECT_EQ(zeroProblem, FileProblem::NotRegular);
  EXPECT_EQ(zeroWhy, "is a character device, not a regular file");
  auto [dirProblem, dirWhy] = check(dir.string(), FileRules::data());
  EXPECT_EQ(dirProblem, FileProblem::NotRegular);
  EXPECT_EQ(dirWhy, "is a directory, not a regular file");
  auto [missing, missingWhy] = check(path("nothing.so"));
  EXPECT_EQ(missing, FileProblem::Missing);
  EXPECT_EQ(missingWhy, "does not exist");
  EXPECT_EQ(errno, ENOENT);
}

TEST_F(FileTrustTest, SymbolicLinksAreRefusedOnlyWhenAsked) {
  std::string target = write("target.so", "x");
  std::string link = path("link.so");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(check(link).first, FileProblem::None);
  FileRules strict;
  strict.refuseSymlink = true;
  auto [problem, why] = check(link, strict);
  EXPECT_EQ(problem, FileProblem::SymbolicLink);
  EXPECT_EQ(why, "is a symbolic link");
}

TEST_F(FileTrustTest, FilesOthersCanWriteAreRefused) {
  auto [world, worldWhy] = check(write("world.so", "x", 0666));
  EXPECT_EQ(world, FileProblem::Untrusted);
  EXPECT_EQ(worldWhy, "is writable by others (mode 0666)");
  auto [group, groupWhy] = check(write("group.so", "x", 0664));
  EXPECT_EQ(group, FileProblem::Untrusted);
  EXPECT_EQ(groupWhy, "is writable by its group (mode 0664)");
  // Data has no owner rules.
  EXPECT_EQ(check(path("world.so"), FileRules::data()).first,
            FileProblem::None);
}

// Whoever can write the directory can rename another file over the one
// checked; the sticky bit (as on /tmp) forbids that for others' files.
TEST_F(FileTrustTest, DirectoriesOthersCanChangeAreRefused) {
  fs::create_directories(dir / "shared");
  std::string file = write("shared/plugin.so", "x");
  std::string shared = path("shared");
  chmod(shared.c_str(), 0777);
  auto [world, worldWhy] = check(file);
  EXPECT_EQ(world, FileProblem::Untrusted);
  EXPECT_EQ(worldWhy, "is in " + shared +
                          ", which is writable by others without the sticky "
                          "bit (mode 0777)");
  chmod(shared.c_str(), 0775);
  auto [group, groupWhy] = check(file);
  EXPECT_EQ(group, FileProblem::Untrusted);
  EXPECT_NE(groupWhy.find("writable by its group without the sticky bit"),
            std::string::npos);
  chmod(shared.c_str(), 01777);
  EXPECT_EQ(check(file).first, FileProblem::None);
  chmod(shared.c_str(), 0755);
  EXPECT_EQ(check(file).first, FileProblem::None);
  // A symbolic link from a private directory into an open one: the
  // directory the file really is in counts too.
  chmod(shared.c_str(), 0777);
  std::string link = path("link.so");
  ASSERT_EQ(symlink(file.c_str(), link.c_str()), 0);
  auto [linked, linkedWhy] = check(link);
  EXPECT_EQ(linked, FileProblem::Untrusted);
  EXPECT_NE(linkedWhy.find("is in " + fs::canonical(shared).string()),
            std::string::npos)
      << linkedWhy;
  // Not checked where only the file matters (the kernel cache checks its
  // directory once).
  FileRules fileOnly;
  fileOnly.checkDirectory = false;
  EXPECT_EQ(check(file, fileOnly).first, FileProblem::None);
}

TEST_F(FileTrustTest, FilesAndDirectoriesOfAnotherUserAreRefused) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to give files away";
  std::string file = write("theirs.so", "x");
  ASSERT_EQ(chown(file.c_str(), 65534, 65534), 0);
  auto [problem, why] = check(file);
  EXPECT_EQ(problem, FileProblem::Untrusted);
  EXPECT_EQ(why, "is owned by another user (uid 65534; this process runs as "
                 "uid 0)");
  fs::create_directories(dir / "theirs");
  std::string mine = write("theirs/mine.so", "x");
  std::string theirs = path("theirs");
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  auto [inTheirs, inTheirsWhy] = check(mine);
  EXPECT_EQ(inTheirs, FileProblem::Untrusted);
  EXPECT_EQ(inTheirsWhy, "is in " + theirs +
                             ", which is owned by another user (uid 65534; "
                             "this process runs as uid 0)");
  // Root may own what others load, unless the rules say otherwise.
  ASSERT_EQ(chown(theirs.c_str(), 0, 0), 0);
  EXPECT_EQ(check(mine).first, FileProblem::None);
}

// The library and the dependency it finds beside itself are both checked,
// and the library loads with it; and libraries loaded one after the
// other through the same descriptor number each stay themselves (the
// loader knows libraries by name, and /proc/self/fd/N names whatever N is).
// One test, because which libraries are loaded is process-wide.
TEST_F(FileTrustTest, LoadsLibrariesAndTheirOriginDependenciesFromDescriptors) {
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "lib");
  fs::copy_file(TE_TRUST_USER_PATH, dir / "bin" / "libte-trust-user.so");
  fs::copy_file(TE_TRUST_DEP_PATH, dir / "lib" / "libte-trust-dep.so");
  std::string user = path("bin/libte-trust-user.so");
  std::string dependency = path("lib/libte-trust-dep.so");
  ASSERT_EQ(dlopen("libte-trust-dep.so", RTLD_NOLOAD | RTLD_LAZY), nullptr)
      << "the dependency must not be loaded before this test";

  // A dependency someone else could write refuses the library.
  chmod(dependency.c_str(), 0666);
  LoadedLibrary library;
  FileProblem problem;
  std::string why;
  EXPECT_FALSE(loadLibrary(user, FileRules::library(), RTLD_NOW | RTLD_LOCAL,
                           library, problem, why));
  EXPECT_EQ(problem, FileProblem::Untrusted);
  EXPECT_EQ(why, "needs " + fs::canonical(dir / "bin").string() +
                     "/../lib/libte-trust-dep.so" +
                     ", which is writable by others (mode 0666)");
  EXPECT_EQ(library.handle, nullptr);

  chmod(dependency.c_str(), 0644);
  ASSERT_TRUE(loadLibrary(user, FileRules::library(), RTLD_NOW | RTLD_LOCAL,
                          library, problem, why))
      << why;
  EXPECT_GE(library.fd, 0);
  auto value =
      reinterpret_cast<int (*)()>(dlsym(library.handle, "te_trust_value"));
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value(), 43);
  // The loader's name of the library is its real path (not the
  // descriptor's): a plugin finds its own files beside itself (dirname of
  // dladdr's name) and may hand their paths to other processes, as the
  // oneDNN plugin hands the linker its runtime library.
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void *>(value), &info), 0);
  EXPECT_EQ(std::string(info.dli_fname), fs::canonical(user).string());

  // Two libraries through one descriptor number, the first closed before
  // the second is opened: each load gets its own library.
  int first = open(dependency.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(first, 0);
  LoadedLibrary byDescriptor;
  ASSERT_TRUE(loadLibraryFromDescriptor(first, "dep", RTLD_NOW | RTLD_LOCAL,
                                        byDescriptor, why))
      << why;
  EXPECT_NE(dlsym(byDescriptor.handle, "te_trust_dep_value"), nullptr);
  int second = open(user.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(second, 0);
  if (second != first) {
    ASSERT_EQ(dup2(second, first), first);
    close(second);
  }
  LoadedLibrary again;
  ASSERT_TRUE(loadLibraryFromDescriptor(first, "user", RTLD_NOW | RTLD_LOCAL,
                                        again, why))
      << why;
  EXPECT_NE(dlsym(again.handle, "te_trust_value"), nullptr);
  // The same file (by inode) is the same library.
  EXPECT_EQ(again.handle, library.handle);
  unloadLibrary(again);
  unloadLibrary(byDescriptor);
  EXPECT_EQ(again.handle, nullptr);

  // A FIFO or a world-writable library is refused before any dlopen.
  std::string fifo = path("bin/fifo.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  LoadedLibrary refused;
  EXPECT_FALSE(
      loadLibrary(fifo, FileRules::library(), RTLD_NOW, refused, problem, why));
  EXPECT_EQ(problem, FileProblem::NotRegular);
  // The loader's messages name the file, not the descriptor.
  std::string text = write("bin/text.so", "not a library");
  EXPECT_FALSE(
      loadLibrary(text, FileRules::library(), RTLD_NOW, refused, problem, why));
  EXPECT_EQ(problem, FileProblem::LoadFailed);
  EXPECT_NE(why.find(text), std::string::npos) << why;
  EXPECT_EQ(why.find("/proc/self/fd"), std::string::npos) << why;
  unloadLibrary(library);
}

} // namespace
