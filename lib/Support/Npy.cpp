//===- Npy.cpp - Reading and writing NumPy .npy files ---------------------===//
//
// The reader trusts nothing in the file: every size is checked against the
// file's actual length before anything is allocated, so a corrupt or hostile
// header yields a message, not a huge allocation or a crash. The writer
// reproduces np.save's bytes exactly, which lets tests compare files with
// numpy's own output.
//
//===----------------------------------------------------------------------===//

#include "te/Support/Npy.h"
#include "te/Support/FileTrust.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>

using namespace te::support;

// Elements are copied between files and memory unchanged.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "te::support's .npy code assumes a little-endian host");

static constexpr char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;
// np.save pads the header so that the data starts at a multiple of this.
static constexpr size_t kHeaderAlignment = 64;
// ... and leaves room for the first dimension to grow to this many digits.
static constexpr size_t kGrowthAxisMaxDigits = 21;

int64_t NpyArray::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string_view te::support::npyDescr(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::BF16:
  case DType::U16:
    return "<u2";
  case DType::F8E4M3FN:
  case DType::F8E5M2:
  case DType::F8E8M0FNU:
  case DType::U8:
    return "|u1";
  case DType::I1:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  }
  return "";
}

/// Python's repr of a shape tuple: "()", "(3,)", "(2, 3)".
static std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text.append(i ? ", " : "").append(std::to_string(shape[i]));
  return text.append(shape.size() == 1 ? ",)" : ")");
}

/// Python's repr of bytes, without the b'': printable ASCII as is, the rest
/// as \xNN, so that binary garbage in a message stays readable.
static std::string escapeBytes(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      text += static_cast<char>(c);
      continue;
    }
    text.append("\\x").append(1, kHex[c >> 4]).append(1, kHex[c & 15]);
  }
  return text;
}

static Status fileError(const std::string &path, const std::string &what) {
  return Status::error(path + ": " + what);
}

//===----------------------------------------------------------------------===//
// Header parsing
//===----------------------------------------------------------------------===//

namespace {

struct NpyHeader {
  DType dtype = DType::F32;
  /// The file's elements are big-endian and need swapping.
  bool bigEndian = false;
  std::vector<int64_t> shape;
};

/// Parses the Python dict literal of a .npy header. It accepts what numpy's
/// reader (ast.literal_eval) accepts for the three keys and nothing more:
/// any key order, either quote character, whitespace anywhere, a trailing
/// comma, and Python 2's long suffix on dimensions ("3L").
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : text(text) {}

  /// On failure returns a message without the path, which the caller adds.
  Expected<NpyHeader> parse();

private:
  Status error(const std::string &what) const;
  void skipSpace();
  bool consume(char c);
  Expected<std::string> parseString();
  Status parseDescr(NpyHeader &header);
  Status parseFortranOrder();
  Status parseShape(NpyHeader &header);

  std::string_view text;
  size_t pos = 0;
};

} // namespace

Status HeaderParser::error(const std::string &what) const {
  // Quote the header up to the problem, which is where the eye should go.
  std::string shown =
      escapeBytes(text.substr(0, std::min(pos + 1, text.size())));
  if (shown.size() > 120)
    shown = "..." + shown.substr(shown.size() - 117);
  return Status::error("malformed .npy header: " + what + " at offset " +
                       std::to_string(pos) + " in \"" + shown + "\"");
}

void HeaderParser::skipSpace() {
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                               text[pos] == '\n' || text[pos] == '\r'))
    ++pos;
}

bool HeaderParser::consume(char c) {
  skipSpace();
  if (pos < text.size() && text[pos] == c) {
    ++pos;
    return true;
  }
  return false;
}

Expected<std::string> HeaderParser::parseString() {
  skipSpace();
  if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
    return error("expected a string");
  char quote = text[pos++];
  size_t start = pos;
  while (pos < text.size() && text[pos] != quote) {
    // No key or descr numpy reads needs escapes; refusing them keeps this
    // parser small and exact.
    if (text[pos] == '\\')
      return error("unsupported escape in string");
    if (text[pos] == '\n')
      break;
    ++pos;
  }
  if (pos >= text.size() || text[pos] != quote)
    return error("unterminated string");
  return std::string(text.substr(start, pos++ - start));
}

/// Maps a numpy type string ('<f4', '|b1', '>i8', ...) to a DType, or says
/// why it cannot be used.
static Expected<std::pair<DType, bool>>
parseTypeString(const std::string &descr) {
  auto unsupported = [&](const std::string &why) {
    return Status::error("unsupported dtype '" + descr + "': " + why);
  };
  std::string_view body = descr;
  char order = '|';
  if (!body.empty() && std::strchr("<>=|", body.front())) {
    order = body.front();
    body.remove_prefix(1);
  }
  // ml_dtypes' types are not known to numpy, so np.save writes a stand-in
  // that loses the element type; the user must pick a representation.
  if (!body.empty() && body.front() == 'V')
    return unsupported(
        "an opaque void type; this is what np.save writes for ml_dtypes "
        "arrays (bfloat16 is '<V2', float8_e4m3fn and float8_e8m0fnu are "
        "'<V1'), whose element type it does not record. Save the raw bits "
        "instead, a.view(np.uint16) for bf16 or a.view(np.uint8) for fp8, or "
        "the values as a.astype(np.float32)");
  if (body == "f1")
    return unsupported(
        "a 1-byte float; this is what np.save writes for ml_dtypes.float8_e5m2 "
        "arrays, and numpy itself cannot read it back. Save the raw bits, "
        "a.view(np.uint8), or the values, a.astype(np.float32)");

  static const struct {
    std::string_view code;
    DType dtype;
  } kCodes[] = {{"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64},
                {"b1", DType::I1},  {"i1", DType::I8},  {"u1", DType::U8},
                {"i2", DType::I16}, {"u2", DType::U16}, {"i4", DType::I32},
                {"i8", DType::I64}};
  for (const auto &code : kCodes)
    if (body == code.code)
      return std::make_pair(code.dtype,
                            order == '>' && dtypeSize(code.dtype) > 1);

  if (body == "u4" || body == "u8")
    return unsupported("te-mlir has no unsigned integer types wider than 16 "
                       "bits; use a signed type");
  if (!body.empty() && body.front() == 'O')
    return unsupported("arrays of Python objects are stored with pickle, "
                       "which .npy readers outside numpy cannot load");
  return unsupported("supported are '<f8', '<f4', '<f2', '|b1', '|i1', "
                     "'|u1', '<i2', '<u2', '<i4' and '<i8' (also with '>', "
                     "'=' or '|' byte order)");
}

Status HeaderParser::parseDescr(NpyHeader &header) {
  skipSpace();
  if (pos < text.size() && text[pos] == '[')
    return Status::error("structured dtypes (records with named fields) are "
                         "not supported; save each field as its own array");
  Expected<std::string> descr = parseString();
  if (!descr)
    return descr.status();
  Expected<std::pair<DType, bool>> type = parseTypeString(*descr);
  if (!type)
    return type.status();
  header.dtype = type->first;
  header.bigEndian = type->second;
  return Status::success();
}

Status HeaderParser::parseFortranOrder() {
  skipSpace();
  if (text.substr(pos, 5) == "False") {
    pos += 5;
    return Status::success();
  }
  if (text.substr(pos, 4) == "True")
    return Status::error("Fortran-order (column-major) arrays are not "
                         "supported; save np.ascontiguousarray(a) instead");
  return error("expected True or False for 'fortran_order'");
}

Status HeaderParser::parseShape(NpyHeader &header) {
  if (!consume('('))
    return error("expected a tuple for 'shape'");
  while (!consume(')')) {
    skipSpace();
    if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
      return error("expected a non-negative integer dimension");
    int64_t dim = 0;
    size_t start = pos;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
      int digit = text[pos] - '0';
      if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return Status::error(
            "shape overflow: dimension " +
            std::string(
                text.substr(start, text.find_first_of(",) ", pos) - start)) +
            " does not fit in 64 bits");
      dim = dim * 10 + digit;
    }
    if (pos < text.size() && text[pos] == 'L')
      ++pos;
    header.shape.push_back(dim);
    // (3) is the integer 3, not a tuple: numpy would not read it either.
    if (consume(','))
      continue;
    if (header.shape.size() == 1 || !consume(')'))
      return error("expected ',' after a dimension");
    break;
  }
  return Status::success();
}

Expected<NpyHeader> HeaderParser::parse() {
  NpyHeader header;
  bool seenDescr = false, seenFortranOrder = false, seenShape = false;
  if (!consume('{'))
    return error("expected '{'");
  while (!consume('}')) {
    Expected<std::string> key = parseString();
    if (!key)
      return key.status();
    if (!consume(':'))
      return error("expected ':' after '" + *key + "'");
    bool *seen = *key == "descr"           ? &seenDescr
                 : *key == "fortran_order" ? &seenFortranOrder
                 : *key == "shape"         ? &seenShape
                                           : nullptr;
    if (!seen)
      return error("unexpected key '" + *key +
                   "' (the header has exactly 'descr', 'fortran_order' and "
                   "'shape')");
    if (*seen)
      return error("duplicate key '" + *key + "'");
    *seen = true;
    Status status = *key == "descr"           ? parseDescr(header)
                    : *key == "fortran_order" ? parseFortranOrder()
                                              : parseShape(header);
    if (!status)
      return status;
    if (consume(','))
      continue;
    if (!consume('}'))
      return error("expected ',' or '}'");
    break;
  }
  skipSpace();
  if (pos != text.size())
    return error("unexpected text after the dict");
  if (!seenDescr || !seenFortranOrder || !seenShape)
    return error(std::string("missing key '") +
                 (!seenDescr   ? "descr"
                  : !seenShape ? "shape"
                               : "fortran_order") +
                 "'");
  return header;
}

/// Bytes of an array of `shape` and `dtype`, or an error if that overflows.
static Expected<int64_t> byteSize(const std::vector<int64_t> &shape,
                                  DType dtype) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return int64_t(0);
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return Status::error("invalid shape " + formatShape(shape) +
                           ": negative dimension");
    if (count > kMax / dim)
      return Status::error("shape overflow: " + formatShape(shape) +
                           " has more than 2^63-1 elements");
    count *= dim;
  }
  int64_t size = static_cast<int64_t>(dtypeSize(dtype));
  if (count > kMax / size)
    return Status::error("shape overflow: " + formatShape(shape) + " of " +
                         std::string(dtypeName(dtype)) +
                         " has more than 2^63-1 bytes");
  return count * size;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
struct FileCloser {
  void operator()(std::FILE *file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;
} // namespace

static void swapElementBytes(uint8_t *data, size_t bytes, size_t size) {
  for (size_t i = 0; i + size <= bytes; i += size)
    std::reverse(data + i, data + i + size);
}

Expected<NpyArray> te::support::readNpyHeader(const std::string &path) {
  return readNpy(path, [](const NpyArray &, size_t) -> Expected<uint8_t *> {
    return static_cast<uint8_t *>(nullptr);
  });
}

Expected<NpyArray> te::support::readNpy(const std::string &path,
                                        const NpyPayloadSink &sink) {
  // Opened once, without blocking, through te/Support/FileTrust.h: a FIFO
  // would hang the open and the reads, /dev/zero reads as an endless (or,
  // by its size, empty) file, and what reading a directory does varies. Only
  // a regular file is read.
  FileProblem problem;
  std::string why;
  CheckedFile checked = openChecked(path, FileRules::data(), problem, why);
  if (!checked) {
    if (problem == FileProblem::Missing || problem == FileProblem::CannotOpen)
      return fileError(path,
                       std::string("cannot open: ") + std::strerror(errno));
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
      return fileError(path, "cannot read: it is a directory, not a .npy file");
    return fileError(path, "cannot read: it " + why + "; give a .npy file");
  }
  errno = 0;
  FilePtr file(fdopen(checked.fd(), "rb"));
  if (!file)
    return fileError(path, std::string("cannot open: ") + std::strerror(errno));
  checked.release(); // the FILE owns the descriptor now
  if (std::fseek(file.get(), 0, SEEK_END) != 0)
    return fileError(path, std::string("cannot read: ") + std::strerror(errno));
  long endOffset = std::ftell(file.get());
  if (endOffset < 0 || std::fseek(file.get(), 0, SEEK_SET) != 0)
    return fileError(path, std::string("cannot read: ") + std::strerror(errno));
  uint64_t fileSize = static_cast<uint64_t>(endOffset);

  auto readExactly = [&](void *buffer, size_t size) -> Status {
    if (size && std::fread(buffer, 1, size, file.get()) != size)
      return fileError(path,
                       std::ferror(file.get())
                           ? std::string("cannot read: ") + std::strerror(errno)
                           : "file shrank while being read");
    return Status::success();
  };

  // Magic, version and header length: at most 12 bytes, read up front so a
  // short file gets the right message.
  std::string prefix(std::min<uint64_t>(fileSize, 12), '\0');
  if (Status status = readExactly(prefix.data(), prefix.size()); !status)
    return status;
  if (prefix.compare(0, kMagicSize, kMagic) != 0) {
    std::string got =
        fileSize == 0 ? "an empty file"
                      : "\"" + escapeBytes(prefix.substr(0, kMagicSize)) + "\"";
    std::string hint = prefix.compare(0, 4, "PK\x03\x04") == 0
                           ? "; this looks like a .npz archive (np.savez): "
                             "save each array with np.save"
                           : "";
    return fileError(path, "expected a .npy file (magic \\x93NUMPY), got " +
                               got + hint);
  }
  if (prefix.size() < 8)
    return fileError(path, "truncated header: the file ends inside the "
                           "format version");
  int major = static_cast<uint8_t>(prefix[6]);
  int minor = static_cast<uint8_t>(prefix[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fileError(
        path, "unsupported .npy format version " + std::to_string(major) + "." +
                  std::to_string(minor) + " (supported are 1.0, 2.0 and 3.0)");
  // Version 1.0 has a 2-byte header length, later versions a 4-byte one.
  size_t lengthBytes = major == 1 ? 2 : 4;
  uint64_t headerStart = 8 + lengthBytes;
  if (fileSize < headerStart)
    return fileError(path, "truncated header: the file ends inside the "
                           "header length");
  uint64_t headerSize = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerSize |= uint64_t(static_cast<uint8_t>(prefix[8 + i])) << (8 * i);
  if (fileSize - headerStart < headerSize)
    return fileError(path, "truncated header: the header should have " +
                               std::to_string(headerSize) +
                               " bytes but the file ends after " +
                               std::to_string(fileSize - headerStart));

  // The prefix read may have gone past the header's start (version 1.0).
  std::string headerText(headerSize, '\0');
  if (std::fseek(file.get(), static_cast<long>(headerStart), SEEK_SET) != 0)
    return fileError(path, std::string("cannot read: ") + std::strerror(errno));
  if (Status status = readExactly(headerText.data(), headerText.size());
      !status)
    return status;
  Expected<NpyHeader> header = HeaderParser(headerText).parse();
  if (!header)
    return fileError(path, header.message());

  Expected<int64_t> dataSize = byteSize(header->shape, header->dtype);
  if (!dataSize)
    return fileError(path, dataSize.message());
  uint64_t available = fileSize - headerStart - headerSize;
  std::string description = "shape " + formatShape(header->shape) + " of " +
                            std::string(dtypeName(header->dtype));
  if (available < static_cast<uint64_t>(*dataSize))
    return fileError(path, "truncated data: " + description + " needs " +
                               std::to_string(*dataSize) + " bytes but only " +
                               std::to_string(available) +
                               " follow the header");
  if (available > static_cast<uint64_t>(*dataSize))
    return fileError(path, std::to_string(available - *dataSize) +
                               " unexpected bytes after the data of " +
                               description);

  NpyArray array;
  array.dtype = header->dtype;
  array.shape = std::move(header->shape);
  size_t bytes = static_cast<size_t>(*dataSize);
  uint8_t *payload = nullptr;
  if (sink) {
    Expected<uint8_t *> target = sink(array, bytes);
    if (!target)
      return fileError(path, target.message());
    // The header alone was asked for.
    if (!*target)
      return array;
    payload = *target;
  } else {
    try {
      array.data.resize(bytes);
    } catch (const std::bad_alloc &) {
      return fileError(path, "out of memory: cannot hold the " +
                                 std::to_string(bytes) + " bytes of " +
                                 description);
    }
    payload = array.data.data();
  }
  if (Status status = readExactly(payload, bytes); !status)
    return status;
  if (header->bigEndian)
    swapElementBytes(payload, bytes, dtypeSize(array.dtype));
  return array;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The bytes np.save writes before the data (numpy/lib/format.py,
/// _write_array_header and _wrap_header).
static std::string makeHeader(const NpyArray &array) {
  std::string dict =
      "{'descr': '" + std::string(npyDescr(array.dtype)) +
      "', 'fortran_order': False, 'shape': " + formatShape(array.shape) + ", }";
  if (!array.shape.empty())
    dict.append(kGrowthAxisMaxDigits -
                    std::min(kGrowthAxisMaxDigits,
                             std::to_string(array.shape[0]).size()),
                ' ');
  // The dict is followed by spaces and a newline up to the alignment, and
  // always at least the newline.
  auto wrap = [&](int major, size_t lengthBytes) {
    size_t unpadded = kMagicSize + 2 + lengthBytes + dict.size() + 1;
    size_t headerSize =
        dict.size() + 1 + kHeaderAlignment - unpadded % kHeaderAlignment;
    std::string bytes(kMagic, kMagicSize);
    bytes += static_cast<char>(major);
    bytes += '\0';
    for (size_t i = 0; i < lengthBytes; ++i)
      bytes += static_cast<char>((headerSize >> (8 * i)) & 0xff);
    bytes += dict;
    bytes.append(headerSize - dict.size() - 1, ' ');
    bytes += '\n';
    return std::make_pair(bytes, headerSize);
  };
  auto [version1, size1] = wrap(1, 2);
  if (size1 <= std::numeric_limits<uint16_t>::max())
    return version1;
  return wrap(2, 4).first;
}

Status te::support::writeNpy(const std::string &path, const NpyArray &array) {
  Expected<int64_t> dataSize = byteSize(array.shape, array.dtype);
  if (!dataSize)
    return fileError(path, "cannot write: " + dataSize.message());
  if (static_cast<uint64_t>(*dataSize) != array.data.size())
    return fileError(path, "cannot write: shape " + formatShape(array.shape) +
                               " of " + std::string(dtypeName(array.dtype)) +
                               " needs " + std::to_string(*dataSize) +
                               " bytes of data but the array has " +
                               std::to_string(array.data.size()));
  std::string header = makeHeader(array);

  // Same directory, so that the rename stays within one file system and is
  // atomic; 'x' so that two writers cannot share a temporary.
  std::random_device random;
  std::string tempPath;
  FilePtr file;
  for (int attempt = 0; !file && attempt < 16; ++attempt) {
    tempPath = path + ".tmp" + std::to_string(random());
    errno = 0;
    file.reset(std::fopen(tempPath.c_str(), "wbx"));
    if (!file && errno != EEXIST)
      break;
  }
  if (!file)
    return fileError(path, "cannot create temporary file " + tempPath + ": " +
                               std::strerror(errno));

  auto fail = [&](const char *what) {
    std::string reason = std::strerror(errno);
    file.reset();
    std::remove(tempPath.c_str());
    return fileError(path, std::string(what) + " " + tempPath + ": " + reason);
  };
  if (std::fwrite(header.data(), 1, header.size(), file.get()) !=
          header.size() ||
      (!array.data.empty() &&
       std::fwrite(array.data.data(), 1, array.data.size(), file.get()) !=
           array.data.size()) ||
      std::fflush(file.get()) != 0)
    return fail("cannot write");
  if (std::fclose(file.release()) != 0)
    return fail("cannot write");
  if (std::rename(tempPath.c_str(), path.c_str()) != 0)
    return fail("cannot rename into place");
  return Status::success();
}
