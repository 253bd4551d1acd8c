//===- NpyTest.cpp - Reading and writing .npy files -----------------------===//
//
// Round trips for every element type and rank, hand-made files for the
// header variants numpy and other writers produce, and one test per way a
// file can be broken, each checking that the message names the file and the
// problem. Interoperability with numpy itself is tested by lit
// (test/Support/npy-numpy-interop.test).
//
//===----------------------------------------------------------------------===//

#include "te/Support/Npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>

using namespace te::support;
namespace fs = std::filesystem;

namespace {

class NpyTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::random_device random;
    dir = fs::temp_directory_path() /
          ("te-npy-test-" + std::to_string(random()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string path(const std::string &name) const { return (dir / name); }

  /// Writes raw bytes as a file and returns its path.
  std::string writeBytes(const std::string &name, const std::string &bytes) {
    std::string file = path(name);
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }

  std::string readBytes(const std::string &file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }

  /// Expects reading `bytes` to fail with a message that starts with the
  /// file's path and contains `expected`.
  void expectReadError(const std::string &bytes, const std::string &expected) {
    std::string file = writeBytes("bad.npy", bytes);
    Expected<NpyArray> array = readNpy(file);
    ASSERT_FALSE(array.ok()) << "read succeeded; expected: " << expected;
    EXPECT_EQ(array.message().rfind(file + ": ", 0), 0u) << array.message();
    EXPECT_NE(array.message().find(expected), std::string::npos)
        << "message: " << array.message() << "\nexpected: " << expected;
  }

  fs::path dir;
};

/// A .npy file of the given version around a header dict; the header is
/// padded to 64 bytes like numpy's, unless `padded` is false.
std::string npyFile(const std::string &dict, const std::string &data,
                    int major = 1, bool padded = true) {
  size_t lengthBytes = major == 1 ? 2 : 4;
  std::string header = dict;
  if (padded)
    while ((8 + lengthBytes + header.size() + 1) % 64)
      header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  for (size_t i = 0; i < lengthBytes; ++i)
    bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

std::string floatBytes(std::initializer_list<float> values) {
  std::string bytes;
  for (float value : values)
    bytes.append(reinterpret_cast<const char *>(&value), sizeof(value));
  return bytes;
}

NpyArray makeArray(DType dtype, std::vector<int64_t> shape) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.data.resize(array.numElements() * dtypeSize(dtype));
  for (size_t i = 0; i < array.data.size(); ++i)
    array.data[i] = dtype == DType::I1 ? i % 3 == 0 : (i * 37 + 11) & 0xff;
  return array;
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

// Every dtype and rank 0..4, with and without zero-size dimensions, reads
// back with the same shape and bytes. bf16 and fp8 have no numpy type and
// come back as the raw bits they were written as: ui16 and ui8.
TEST_F(NpyTest, RoundTripEveryDTypeAndRank) {
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {5}, {2, 3}, {2, 3, 4}, {1, 2, 3, 2}, {0}, {3, 0, 2}, {2, 1, 1, 0}};
  for (DType dtype : kAllDTypes) {
    DType expected = dtype;
    if (dtype == DType::BF16)
      expected = DType::U16;
    if (dtype == DType::F8E4M3FN || dtype == DType::F8E5M2 ||
        dtype == DType::F8E8M0FNU)
      expected = DType::U8;
    for (const std::vector<int64_t> &shape : shapes) {
      NpyArray array = makeArray(dtype, shape);
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " rank " +
                   std::to_string(shape.size()));
      std::string file = path("a.npy");
      Status written = writeNpy(file, array);
      ASSERT_TRUE(written.ok()) << written.message();
      Expected<NpyArray> read = readNpy(file);
      ASSERT_TRUE(read.ok()) << read.message();
      EXPECT_EQ(read->dtype, expected);
      EXPECT_EQ(read->shape, shape);
      EXPECT_EQ(read->data, array.data);
    }
  }
}

TEST_F(NpyTest, WritesExactlyWhatNumpyWrites) {
  // Bytes of np.save(f, np.zeros((2, 3), np.float32)) from numpy 2.4.
  std::string header = "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header +
                         "\n" + std::string(24, '\0');
  NpyArray array = makeArray(DType::F32, {2, 3});
  std::fill(array.data.begin(), array.data.end(), 0);
  ASSERT_TRUE(writeNpy(path("z.npy"), array).ok());
  EXPECT_EQ(readBytes(path("z.npy")), expected);

  // Rank 0 gets no room for a growing first axis; rank 1 a trailing comma.
  NpyArray scalar = makeArray(DType::I1, {});
  ASSERT_TRUE(writeNpy(path("s.npy"), scalar).ok());
  std::string bytes = readBytes(path("s.npy"));
  std::string dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (), }";
  EXPECT_EQ(bytes.substr(8), std::string("\x76\x00", 2) + dict +
                                 std::string(118 - dict.size() - 1, ' ') +
                                 "\n" + std::string(1, '\x01'));
  ASSERT_TRUE(writeNpy(path("v.npy"), makeArray(DType::BF16, {7})).ok());
  EXPECT_NE(readBytes(path("v.npy")).find("'descr': '<u2'"), std::string::npos);
  EXPECT_NE(readBytes(path("v.npy")).find("'shape': (7,), }"),
            std::string::npos);
}

// A header too long for version 1.0's 16-bit length needs version 2.0.
TEST_F(NpyTest, LongHeaderUsesVersion2) {
  NpyArray array = makeArray(DType::I16, std::vector<int64_t>(30000, 1));
  ASSERT_TRUE(writeNpy(path("long.npy"), array).ok());
  std::string bytes = readBytes(path("long.npy"));
  EXPECT_EQ(bytes[6], '\x02');
  EXPECT_EQ((bytes.size() - array.data.size()) % 64, 0u);
  Expected<NpyArray> read = readNpy(path("long.npy"));
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(read->shape, array.shape);
  EXPECT_EQ(read->data, array.data);
}

TEST_F(NpyTest, WriteReplacesAtomicallyAndLeavesNoTemporaries) {
  ASSERT_TRUE(writeNpy(path("out.npy"), makeArray(DType::F64, {4})).ok());
  ASSERT_TRUE(writeNpy(path("out.npy"), makeArray(DType::I8, {2})).ok());
  Expected<NpyArray> read = readNpy(path("out.npy"));
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(read->dtype, DType::I8);
  EXPECT_EQ(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

//===----------------------------------------------------------------------===//
// Header variants that must be accepted
//===----------------------------------------------------------------------===//

TEST_F(NpyTest, ReadsVersions2And3) {
  for (int major : {2, 3}) {
    std::string file =
        writeBytes("v.npy", npyFile("{'descr': '<f4', 'fortran_order': False, "
                                    "'shape': (2,), }",
                                    floatBytes({1.5f, -2.0f}), major));
    Expected<NpyArray> read = readNpy(file);
    ASSERT_TRUE(read.ok()) << read.message();
    EXPECT_EQ(read->dtype, DType::F32);
    EXPECT_EQ(read->shape, std::vector<int64_t>{2});
    EXPECT_EQ(read->data.size(), 8u);
  }
}

TEST_F(NpyTest, ReadsByteOrderNeutralAndNativeDescrs) {
  const std::pair<const char *, DType> cases[] = {
      {"=f4", DType::F32}, {"|f4", DType::F32}, {"f4", DType::F32},
      {"=f8", DType::F64}, {"<f2", DType::F16}, {"|b1", DType::I1},
      {"|i1", DType::I8},  {"<i1", DType::I8},  {"|u1", DType::U8},
      {"=i2", DType::I16}, {"<u2", DType::U16}, {"<i4", DType::I32},
      {"=i8", DType::I64}, {">u1", DType::U8}};
  for (const auto &[descr, dtype] : cases) {
    std::string file = writeBytes(
        "d.npy", npyFile(std::string("{'descr': '") + descr +
                             "', 'fortran_order': False, 'shape': (3,), }",
                         std::string(3 * dtypeSize(dtype), '\x01')));
    Expected<NpyArray> read = readNpy(file);
    ASSERT_TRUE(read.ok()) << descr << ": " << read.message();
    EXPECT_EQ(read->dtype, dtype) << descr;
    EXPECT_EQ(read->data, std::vector<uint8_t>(3 * dtypeSize(dtype), 1));
  }
}

TEST_F(NpyTest, ConvertsBigEndianToLittleEndian) {
  std::string file = writeBytes(
      "be.npy", npyFile("{'descr': '>f4', 'fortran_order': False, "
                        "'shape': (2,), }",
                        std::string("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8)));
  Expected<NpyArray> read = readNpy(file);
  ASSERT_TRUE(read.ok()) << read.message();
  std::string expected = floatBytes({1.0f, -2.0f});
  EXPECT_EQ(read->data, std::vector<uint8_t>(expected.begin(), expected.end()));

  file = writeBytes(
      "be.npy",
      npyFile("{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }",
              std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8)));
  read = readNpy(file);
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(read->data, (std::vector<uint8_t>{8, 7, 6, 5, 4, 3, 2, 1}));
}

// Key order, quotes, spacing, trailing commas and Python 2's long suffix
// vary between writers; ast.literal_eval accepts them all.
TEST_F(NpyTest, ReadsHeaderSpellingsOfOtherWriters) {
  const char *dicts[] = {
      "{'shape': (2, 1), 'fortran_order': False, 'descr': '<i4'}",
      "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,1)}",
      "{ 'descr' : '<i4' ,\t'fortran_order':False,'shape':( 2 , 1 , ) , }",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 1L), }"};
  for (const char *dict : dicts) {
    std::string file = writeBytes(
        "h.npy", npyFile(dict, std::string(8, 'x'), 1, /*padded=*/false));
    Expected<NpyArray> read = readNpy(file);
    ASSERT_TRUE(read.ok()) << dict << ": " << read.message();
    EXPECT_EQ(read->dtype, DType::I32);
    EXPECT_EQ(read->shape, (std::vector<int64_t>{2, 1}));
  }
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

const std::string kF32Header2x3 =
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

TEST_F(NpyTest, RejectsWrongMagic) {
  expectReadError("hello world, this is text",
                  "expected a .npy file (magic \\x93NUMPY), got \"hello \"");
  expectReadError("", "expected a .npy file (magic \\x93NUMPY), got an empty "
                      "file");
  expectReadError(std::string("\x93NUMPZ\x01\x00", 8), "got \"\\x93NUMPZ\"");
  expectReadError(std::string("PK\x03\x04\x14\x00\x00\x00", 8),
                  "this looks like a .npz archive (np.savez)");
}

TEST_F(NpyTest, RejectsTruncatedHeaders) {
  expectReadError("\x93NUMPY", "truncated header: the file ends inside the "
                               "format version");
  expectReadError(std::string("\x93NUMPY\x01\x00\x76", 9),
                  "truncated header: the file ends inside the header length");
  std::string full = npyFile(kF32Header2x3, std::string(24, '\0'));
  expectReadError(full.substr(0, 60), "truncated header: the header should "
                                      "have 118 bytes but the file ends "
                                      "after 50");
  std::string version2 = npyFile(kF32Header2x3, "", 2);
  expectReadError(version2.substr(0, 11),
                  "truncated header: the file ends inside the header length");
}

TEST_F(NpyTest, RejectsUnknownVersions) {
  std::string file = npyFile(kF32Header2x3, std::string(24, '\0'));
  file[6] = 4;
  expectReadError(file, "unsupported .npy format version 4.0 (supported are "
                        "1.0, 2.0 and 3.0)");
  file[6] = 1;
  file[7] = 1;
  expectReadError(file, "unsupported .npy format version 1.1");
}

TEST_F(NpyTest, RejectsTruncatedData) {
  expectReadError(npyFile(kF32Header2x3, std::string(20, '\0')),
                  "truncated data: shape (2, 3) of f32 needs 24 bytes but "
                  "only 20 follow the header");
  // A shape far larger than the file is caught before allocating anything.
  expectReadError(npyFile("{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (1000000000000,), }",
                          ""),
                  "needs 8000000000000 bytes but only 0 follow");
  expectReadError(npyFile("{'descr': '<i8', 'fortran_order': False, "
                          "'shape': (), }",
                          "1234567"),
                  "truncated data: shape () of i64 needs 8 bytes but only 7");
}

TEST_F(NpyTest, RejectsTrailingBytes) {
  expectReadError(npyFile(kF32Header2x3, std::string(28, '\0')),
                  "4 unexpected bytes after the data of shape (2, 3) of f32");
}

TEST_F(NpyTest, RejectsShapeOverflow) {
  expectReadError(npyFile("{'descr': '|u1', 'fortran_order': False, "
                          "'shape': (4294967296, 4294967296), }",
                          ""),
                  "shape overflow: (4294967296, 4294967296) has more than "
                  "2^63-1 elements");
  expectReadError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (4611686018427387904,), }",
                          ""),
                  "shape overflow: (4611686018427387904,) of f32 has more "
                  "than 2^63-1 bytes");
  expectReadError(npyFile("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (99999999999999999999, 1), }",
                          ""),
                  "shape overflow: dimension 99999999999999999999 does not "
                  "fit in 64 bits");
}

TEST_F(NpyTest, RejectsUnsupportedDescrs) {
  auto withDescr = [](const std::string &descr) {
    return npyFile("{'descr': " + descr +
                       ", 'fortran_order': False, 'shape': (1,), }",
                   std::string(16, '\0'));
  };
  expectReadError(withDescr("'<c8'"), "unsupported dtype '<c8': supported "
                                      "are '<f8', '<f4'");
  expectReadError(withDescr("'<u4'"), "unsupported dtype '<u4': te-mlir has "
                                      "no unsigned integer types wider");
  expectReadError(withDescr("'<U3'"), "unsupported dtype '<U3'");
  expectReadError(withDescr("'|O'"), "unsupported dtype '|O': arrays of "
                                     "Python objects are stored with pickle");
  expectReadError(withDescr("'<f3'"), "unsupported dtype '<f3'");
  expectReadError(withDescr("[('a', '<f4'), ('b', '<i4')]"),
                  "structured dtypes (records with named fields) are not "
                  "supported");
  expectReadError(withDescr("3"), "malformed .npy header: expected a string");
}

// np.save writes ml_dtypes arrays with stand-in descrs that lose the type.
TEST_F(NpyTest, RejectsMlDtypesStandIns) {
  for (const char *descr : {"'<V2'", "'|V1'", "'<V1'"}) {
    std::string file = npyFile(std::string("{'descr': ") + descr +
                                   ", 'fortran_order': False, 'shape': (1,), }",
                               std::string(2, '\0'));
    expectReadError(file, "this is what np.save writes for ml_dtypes arrays");
    expectReadError(file, "a.view(np.uint16) for bf16 or a.view(np.uint8) for "
                          "fp8");
  }
  expectReadError(npyFile("{'descr': '<f1', 'fortran_order': False, "
                          "'shape': (1,), }",
                          std::string(1, '\0')),
                  "this is what np.save writes for ml_dtypes.float8_e5m2");
}

TEST_F(NpyTest, RejectsFortranOrder) {
  expectReadError(npyFile("{'descr': '<f4', 'fortran_order': True, "
                          "'shape': (2, 3), }",
                          std::string(24, '\0')),
                  "Fortran-order (column-major) arrays are not supported; "
                  "save np.ascontiguousarray(a) instead");
}

TEST_F(NpyTest, RejectsMalformedDicts) {
  const std::pair<const char *, const char *> cases[] = {
      {"[1, 2]", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
       "'extra': 1}",
       "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4'}", "duplicate key 'descr'"},
      {"{'descr' '<f4'}", "expected ':' after 'descr'"},
      {"{'descr': '<f4' 'shape': (1,)}", "expected ',' or '}'"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
       "expected True or False for 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
       "expected a tuple for 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}",
       "expected ',' after a dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
       "expected a non-negative integer dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}",
       "expected ',' after a dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x",
       "unexpected text after the dict"},
  };
  for (const auto &[dict, expected] : cases) {
    SCOPED_TRACE(dict);
    expectReadError(npyFile(dict, std::string(4, '\0')),
                    std::string("malformed .npy header: ") + expected);
  }
}

TEST_F(NpyTest, ReportsMissingFilesAndDirectories) {
  Expected<NpyArray> missing = readNpy(path("nope.npy"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(),
            path("nope.npy") + ": cannot open: No such file or directory");
  Expected<NpyArray> directory = readNpy(dir.string());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.message().rfind(dir.string() + ": cannot ", 0), 0u)
      << directory.message();
}

// A FIFO would block the open (and the reads) forever, and /dev/zero has
// no size and no end: neither is a .npy file, and each is named for what it
// is (issue 32: a FIFO hung te-run, /dev/zero was "an empty file").
TEST_F(NpyTest, RefusesFilesThatAreNotRegular) {
  std::string fifo = path("pipe.npy");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Expected<NpyArray> fromFifo = readNpy(fifo);
  ASSERT_FALSE(fromFifo.ok());
  EXPECT_EQ(fromFifo.message(),
            fifo + ": cannot read: it is a FIFO (named pipe), not a regular "
                   "file; give a .npy file");
  Expected<NpyArray> zero = readNpy("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.message(), "/dev/zero: cannot read: it is a character "
                            "device, not a regular file; give a .npy file");
  EXPECT_EQ(zero.message().find("empty"), std::string::npos);
}

TEST_F(NpyTest, WriteRejectsInconsistentArraysAndBadPaths) {
  NpyArray array = makeArray(DType::F32, {2, 3});
  array.data.pop_back();
  Status status = writeNpy(path("x.npy"), array);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), path("x.npy") +
                                  ": cannot write: shape (2, 3) of f32 needs "
                                  "24 bytes of data but the array has 23");
  EXPECT_FALSE(fs::exists(path("x.npy")));

  NpyArray negative = makeArray(DType::F32, {});
  negative.shape = {2, -1};
  status = writeNpy(path("x.npy"), negative);
  EXPECT_EQ(status.message(),
            path("x.npy") +
                ": cannot write: invalid shape (2, -1): negative dimension");

  status = writeNpy(path("no/such/dir/x.npy"), makeArray(DType::F32, {1}));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind(path("no/such/dir/x.npy") +
                                       ": cannot create temporary file ",
                                   0),
            0u)
      << status.message();
  EXPECT_NE(status.message().find("No such file or directory"),
            std::string::npos);

  // Renaming onto a directory fails, and the temporary is cleaned up.
  fs::create_directories(path("taken.npy"));
  status = writeNpy(path("taken.npy"), makeArray(DType::F32, {1}));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("cannot rename into place"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

} // namespace
