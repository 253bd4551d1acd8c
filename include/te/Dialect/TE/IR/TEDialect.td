//===- TEDialect.td - The te dialect definition ------------*- tablegen -*-===//
//
// The `te` dialect: the operator contract of Transformer Engine.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEDIALECT_TD
#define TE_DIALECT_TE_IR_TEDIALECT_TD

include "mlir/IR/OpBase.td"

def TE_Dialect : Dialect {
  let name = "te";
  let cppNamespace = "::mlir::te";
  let summary = "Transformer Engine's fused attention, FP8 and collective operations";
  let description = [{
    The `te` dialect states the operations of NVIDIA's Transformer Engine (TE)
    precisely enough to be a contract between frameworks, the native backends
    and vendor plugins: fused attention forward and backward with every layout,
    mask, window, bias and softmax kind TE supports; FP8 amax, scaling-factor
    computation, quantization and dequantization in each of TE's scaling
    recipes, and the FP8 GEMM; and the collectives TE uses for tensor, sequence
    and context parallelism.

    All ops work on ranked tensors with value semantics. Every invariant that
    the semantics depend on (shapes, element types, head counts, attribute
    ranges, which optional operands a configuration needs) is checked by the
    op's verifier, so a verified `te` op always has one meaning.

    Zero-size tensors (an empty micro-batch, an empty key/value cache) are
    valid operands, and their results are defined: `te.attention` with no
    batch entries, query heads, queries or keys returns `o` = 0 (no
    elements unless only the keys are missing), and every query row that
    sees no key has the LSE of a row a mask empties (-inf for `vanilla`, 0
    for `off_by_one`, alpha_h for `learnable`); `te.attention_backward` of
    such a problem returns gradients of 0; `te.amax` of an empty tensor is
    0; casts of empty tensors give empty data and scales (and an amax of
    0); a `te.scaled_matmul` without rows or columns gives an empty
    product with an FP8 amax of 0, and one with k = 0 gives 0 plus the
    bias, through its epilogue. Every pipeline writes these results down before any lowering sees
    the op (the `te-fold-empty` pass), so backends and plugins never meet a
    zero-size problem. Heads without features (d_qk or d_v of 0) have no
    meaning and are refused by the verifier, as are heads of more than
    1024 features (te's attention lowerings hold a head's row in vector
    registers; TE's fused attention backends stop at 256). Kernel entry points (the
    functions te-run and the runtime call) take and return tensors with at
    least one element: empty problems arise inside a program.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes; defined next to their storage in TEAttrs.cpp.
    void registerAttributes();
  }];
}

class TE_Op<string mnemonic, list<Trait> traits = []>
    : Op<TE_Dialect, mnemonic, traits>;

#endif // TE_DIALECT_TE_IR_TEDIALECT_TD
