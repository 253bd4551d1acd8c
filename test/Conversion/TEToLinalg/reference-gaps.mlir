// Configurations te-decompose-reference has no reference for are errors
// that name them: a differential check must not compare the production
// lowering with itself.
// RUN: te-opt %s -split-input-file --te-decompose-reference -verify-diagnostics

func.func @dynamic(%q: tensor<?x8x2x16xf32>) -> tensor<?x8x2x16xf32> {
  // expected-error @+1 {{no reference decomposition for te.attention with dynamic shapes}}
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>)
      -> tensor<?x8x2x16xf32>
  return %o : tensor<?x8x2x16xf32>
}

// -----

func.func @dynamic_backward(%q: tensor<?x8x2x16xf32>, %lse: tensor<?x2x8x1xf32>)
    -> (tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>) {
  // expected-error @+1 {{no reference decomposition for te.attention_backward with dynamic shapes}}
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %q, %q, %lse layout bshd
      : (tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>,
         tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x2x8x1xf32>)
      -> (tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>)
  return %dq, %dk, %dv : tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>, tensor<?x8x2x16xf32>
}

// -----

func.func @dynamic_grouped(%x: tensor<?x16xbf16>, %w: tensor<2x8x16xbf16>, %m: tensor<2xi64>)
    -> tensor<?x8xbf16> {
  // expected-error @+1 {{no reference decomposition for te.grouped_matmul with dynamic shapes}}
  %y = te.grouped_matmul %x, %w splits(%m) transpose_b
      : tensor<?x16xbf16>, tensor<2x8x16xbf16>, tensor<2xi64> -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}
