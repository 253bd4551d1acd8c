//===- ConvertArray.h - te-run's rule for typing input arrays ---*- C++ -*-===//
//
// What te-run accepts as the value of a kernel operand of a given element
// type. Floats may be given in f32 or f64 and are rounded like a GPU cast;
// narrow floats, which numpy cannot hold, may also be given as their raw bits;
// integers and booleans must match exactly, because silently narrowing or
// reinterpreting them would hide mistakes in the inputs.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_CONVERTARRAY_H
#define TE_SUPPORT_CONVERTARRAY_H

#include "te/Support/Expected.h"
#include "te/Support/Npy.h"

#include <string_view>

namespace te::support {

/// Returns `src` as an array of `target` elements, with the same shape:
///  - same dtype: unchanged;
///  - f32/f64 to f32, f64, bf16, f16, f8E4M3FN or f8E5M2: rounded to nearest
///    even, fp8 saturating (see FloatConversion.h);
///  - ui16 to bf16/f16 and ui8 to any fp8: taken as raw bits;
///  - anything else fails, naming `context` (the file or operand the array
///    came from), both dtypes and what the user can give instead.
Expected<NpyArray> convertArray(const NpyArray &src, DType target,
                                std::string_view context);

} // namespace te::support

#endif // TE_SUPPORT_CONVERTARRAY_H
