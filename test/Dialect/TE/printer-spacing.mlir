// RUN: te-opt %s | FileCheck %s --strict-whitespace
// The printer writes one space between a keyword and its enum value (the
// attribute printer's own space; the op formats add none), and the generic
// form keeps the space after the mnemonic.
// RUN: te-opt %s --mlir-print-op-generic | FileCheck %s --strict-whitespace --check-prefix=GENERIC

// CHECK-LABEL: func.func @spacing
func.func @spacing(%q: tensor<1x8x2x16xf32>, %x: tensor<16xf32>,
                   %s: tensor<f32>) -> (tensor<1x8x2x16xf32>,
                                        tensor<16xf8E4M3FN>) {
  // CHECK: te.attention %{{.*}}, %{{.*}}, %{{.*}} layout bshd mask causal softmax off_by_one :
  // GENERIC: layout = #te<layout bshd>, mask_kind = #te<mask causal>
  %o = te.attention %q, %q, %q layout bshd mask causal bias no_bias softmax off_by_one
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
      -> tensor<1x8x2x16xf32>
  // CHECK: te.quantize %{{.*}} scale(%{{.*}}) mode per_tensor :
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<16xf32>, tensor<f32>
      -> tensor<16xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %o, %d : tensor<1x8x2x16xf32>, tensor<16xf8E4M3FN>
}
