//===- TEAttrs.h - Attributes and enums of the te dialect -------*- C++ -*-===//
#ifndef TE_DIALECT_TE_IR_TEATTRS_H
#define TE_DIALECT_TE_IR_TEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Support/LLVM.h"

#include <optional>

#include "te/Dialect/TE/IR/TEEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "te/Dialect/TE/IR/TEAttrs.h.inc"

namespace mlir::te {

/// True for the four mask kinds that restrict keys by sequence length.
bool isPaddingMask(MaskKind kind);
/// True for the four causal mask kinds.
bool isCausalMask(MaskKind kind);
/// True for the two masks whose causal diagonal is aligned bottom-right.
bool isBottomRightMask(MaskKind kind);
/// The diagonal alignment of sliding windows and ALiBi, resolved as TE's
/// DotProductAttention resolves `bottom_right_diagonal`: top-left for causal
/// and padding_causal, bottom-right for the *_bottom_right masks, and for
/// every other mask the requested alignment, bottom-right when unset.
bool resolveBottomRightDiagonal(MaskKind kind, std::optional<bool> requested);
/// The alignment a mask kind forces on the diagonal, or nullopt when it
/// leaves the choice to `bottom_right_diagonal`.
std::optional<bool> getForcedBottomRightDiagonal(MaskKind kind);

/// The logical dimensions of a Q, K, V or O tensor: for `thd` there is no
/// batch dimension and Seq counts the packed tokens.
enum class HeadTensorDim : unsigned { Batch, Seq, Heads, HeadDim };

/// The one statement of what each layout means: the logical dimension of
/// each dimension of a tensor in `layout`, outermost first (bshd: batch,
/// seq, heads, head dim; thd: tokens, heads, head dim). Every user of a
/// layout (verifiers, lowerings, library calls) derives its positions,
/// indices and offsets from this, through the helpers below.
ArrayRef<HeadTensorDim> getLayoutOrder(QKVLayout layout);

/// The position of logical dimension `dim` in a tensor of `layout`;
/// nullopt for the batch of thd, which has none.
std::optional<unsigned> getLayoutPosition(QKVLayout layout, HeadTensorDim dim);

/// `batch`, `seq`, `heads` and `headDim` (indices, sizes, affine
/// expressions, names...) in the order `layout` lays the dimensions out,
/// the batch left out for thd: e.g. the indices of a row's first element.
template <typename T>
SmallVector<T, 4> arrangeInLayout(QKVLayout layout, T batch, T seq, T heads,
                                  T headDim) {
  T logical[] = {batch, seq, heads, headDim};
  SmallVector<T, 4> arranged;
  for (HeadTensorDim dim : getLayoutOrder(layout))
    arranged.push_back(logical[static_cast<unsigned>(dim)]);
  return arranged;
}

/// The four logical dimensions of a Q, K, V or O tensor in a layout;
/// `batch` is unknown (dynamic) for `thd`, where `seq` counts the packed
/// tokens.
struct HeadTensorDims {
  int64_t batch, seq, heads, headDim;
};
HeadTensorDims getHeadTensorDims(QKVLayout layout, ArrayRef<int64_t> shape);

/// The largest finite value of an FP8 format (448 for f8E4M3FN, 57344 for
/// f8E5M2); fails for any other type.
FailureOr<double> getFP8Max(Type fp8Type);

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEATTRS_H
