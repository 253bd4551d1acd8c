//===- Npy.h - Reading and writing NumPy .npy files -------------*- C++ -*-===//
//
// te-run takes its inputs from, and leaves its outputs in, .npy files so that
// users can produce and check them with numpy. The format is described in
// numpy/lib/format.py: a magic string, a version, a Python dict literal with
// 'descr', 'fortran_order' and 'shape', then the raw elements.
//
// Arrays are held in C order with little-endian elements (the only host order
// supported). numpy has no bf16 or fp8 types: such arrays are written as their
// raw bits, as uint16 ('<u2') and uint8 ('|u1'), and read back as ui16/ui8;
// convertArray() takes those bits back as the narrow type.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_NPY_H
#define TE_SUPPORT_NPY_H

#include "te/Support/DType.h"
#include "te/Support/Expected.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace te::support {

/// A dense array in C (row-major) order.
struct NpyArray {
  DType dtype = DType::F32;
  /// Empty for a rank-0 array, which still holds one element.
  std::vector<int64_t> shape;
  /// numElements() * dtypeSize(dtype) bytes, little-endian elements.
  std::vector<uint8_t> data;

  /// Product of the dimensions (1 for rank 0). Assumes the shape is valid.
  int64_t numElements() const;
};

/// Reads a .npy file of format version 1.0, 2.0 or 3.0. Accepts the
/// little-endian, native ('=') and byte-order-free ('|') descrs of the DTypes
/// numpy has ('<f4', '<f8', '<f2', '|b1', '|i1', '|u1', '<i2', '<u2', '<i4',
/// '<i8'); big-endian files ('>f4', ...) are converted to little-endian.
/// Fails, with a message naming `path` and the problem, for anything else:
/// a file that is not .npy, a truncated header or body, trailing bytes,
/// Fortran order, a shape whose size overflows, structured or unsupported
/// dtypes (including those np.save writes for ml_dtypes arrays).
///
/// With a `sink`, the elements go where it says instead of into
/// `array.data` (which stays empty): it gets the array (type and shape, once
/// the header and the file's size agree) and the payload's byte size, and
/// returns the memory to read them into, nullptr to read the header alone,
/// or an error. Without one, a payload too large to hold fails with an
/// out-of-memory message instead of throwing.
using NpyPayloadSink =
    std::function<Expected<uint8_t *>(const NpyArray &array, size_t bytes)>;
Expected<NpyArray> readNpy(const std::string &path,
                           const NpyPayloadSink &sink = nullptr);

/// The element type and shape of a .npy file from its header, which is
/// checked as readNpy checks it (the file's size included); the payload is
/// not read, so this costs the same for any size of file.
Expected<NpyArray> readNpyHeader(const std::string &path);

/// Writes `array` to `path` in format version 1.0, or 2.0 when the header
/// does not fit in 1.0's 64 KiB, byte for byte as np.save would. bf16 and fp8
/// arrays are written as their raw bits ('<u2', '|u1'). The file is written
/// under a temporary name in the same directory and renamed into place, so
/// readers never see a partial file. Fails if the array's data size does not
/// match its shape.
Status writeNpy(const std::string &path, const NpyArray &array);

/// The numpy descr writeNpy uses for `dtype`: "<f4", "|b1", "<u2" for bf16...
std::string_view npyDescr(DType dtype);

} // namespace te::support

#endif // TE_SUPPORT_NPY_H
