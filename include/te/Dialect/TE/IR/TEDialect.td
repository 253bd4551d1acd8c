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
