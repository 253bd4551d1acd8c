//===- TEInterfaces.td - Interfaces te ops share ------------*- tablegen -*-===//
//
// What several te ops have in common, stated once in the dialect, so that
// passes, lowerings and targets handle the family instead of each op.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEINTERFACES_TD
#define TE_DIALECT_TE_IR_TEINTERFACES_TD

include "mlir/IR/OpBase.td"

def TE_AttentionOpInterface : OpInterface<"AttentionOpInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    One attention's configuration: its Q, K and V, the layout, mask,
    window, diagonal, scale, bias, softmax and dropout, and the optional
    index and parameter operands, which te.attention and
    te.attention_backward share exactly (their semantics section in
    docs/TEDialect.md). Code that needs only the configuration (checks,
    strategy choices, library-call parameters, dimension helpers) takes this
    interface; `isBackward` tells the two ops apart where the work differs.
  }];
  let methods = [
    InterfaceMethod<"The query tensor.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getQ">,
    InterfaceMethod<"The key tensor.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getK">,
    InterfaceMethod<"The value tensor.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getV">,
    InterfaceMethod<"The memory layout of Q, K, V (and O, dO).",
      "::mlir::te::QKVLayout", "getLayout">,
    InterfaceMethod<"The mask kind.",
      "::mlir::te::MaskKind", "getMaskKind">,
    InterfaceMethod<"The bias kind.",
      "::mlir::te::BiasKind", "getBiasKind">,
    InterfaceMethod<"The softmax kind.",
      "::mlir::te::SoftmaxKind", "getSoftmaxKind">,
    InterfaceMethod<"The dropout probability.",
      "::llvm::APFloat", "getDropout">,
    InterfaceMethod<"The window bounds (left, right); -1 is unbounded.",
      "std::pair<int64_t, int64_t>", "getWindowBounds">,
    InterfaceMethod<"The softmax scale, TE's 1/sqrt(d_qk) when unset; nullopt when unset and d_qk is dynamic.",
      "std::optional<double>", "getEffectiveScale">,
    InterfaceMethod<"Whether windows and ALiBi align to the bottom-right diagonal.",
      "bool", "isBottomRightDiagonal">,
    InterfaceMethod<"cu_seqlens of the queries (thd), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getCuSeqlensQ">,
    InterfaceMethod<"cu_seqlens of the keys (thd), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getCuSeqlensKv">,
    InterfaceMethod<"seq_offsets of the queries (thd), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getSeqOffsetsQ">,
    InterfaceMethod<"seq_offsets of the keys (thd), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getSeqOffsetsKv">,
    InterfaceMethod<"seqlens of the queries (padding masks), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getSeqlensQ">,
    InterfaceMethod<"seqlens of the keys (padding masks), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getSeqlensKv">,
    InterfaceMethod<"The arbitrary mask tensor, or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getMask">,
    InterfaceMethod<"The bias tensor (pre_scale, post_scale), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getBias">,
    InterfaceMethod<"The ALiBi slopes, or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getAlibiSlopes">,
    InterfaceMethod<"The dropout's (seed, offset), or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getRngState">,
    InterfaceMethod<"The learnable softmax's offsets, or null.",
      "::mlir::TypedValue<::mlir::RankedTensorType>", "getSoftmaxOffset">,
    InterfaceMethod<"Whether this is te.attention_backward (which also takes O, dO and the LSE, and returns gradients).",
      "bool", "isBackward">,
  ];
}

#endif // TE_DIALECT_TE_IR_TEINTERFACES_TD
