//===- Passes.td - te conversion passes --------------------*- tablegen -*-===//

#ifndef TE_CONVERSION_PASSES_TD
#define TE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// TEToLinalg
//===----------------------------------------------------------------------===//

def ConvertTEToLinalg : Pass<"convert-te-to-linalg", "ModuleOp"> {
  let summary = "Lower te ops to linalg, scf, vector, tensor, arith and math";
  let description = [{
    The target-independent lowering of te ops for the host CPU: every op
    becomes `linalg.generic` / `linalg.reduce` ops on tensors whose bodies
    are `arith` and `math`; te.attention becomes scf loops over query rows
    with an online softmax on vectors of the head dimension (memory
    O(s * d): the score matrix never exists). FP8 casts are emitted as bit-exact integer
    arithmetic (round-to-nearest-even, saturation to the format's largest
    finite value, NaN kept), because neither `arith.truncf` nor LLVM can
    convert to FP8 on the host.

    Before:

    ```mlir
    %a = te.amax %x : tensor<4x8xbf16> -> tensor<f32>
    ```

    After:

    ```mlir
    %zero = arith.constant 0.0 : f32
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %a = linalg.generic {iterator_types = ["reduction", "reduction"], ...}
        ins(%x : tensor<4x8xbf16>) outs(%init : tensor<f32>) { ... }
    ```

    An op (or configuration) the host lowering does not cover yet is an
    error that names it; plugins that lower such ops run before this pass.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect"
  ];
}

#endif // TE_CONVERSION_PASSES_TD
