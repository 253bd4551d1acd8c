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
