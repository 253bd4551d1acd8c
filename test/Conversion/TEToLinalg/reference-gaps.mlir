// Configurations te-decompose-reference has no reference for are errors
// that name them: a differential check must not compare the production
// lowering with itself.
// RUN: te-opt %s -split-input-file --te-decompose-reference -verify-diagnostics

func.func @thd(%q: tensor<24x2x16xf32>, %cu: tensor<4xi32>) -> tensor<24x2x16xf32> {
  // expected-error @+1 {{no reference decomposition for te.attention with layout thd}}
  %o = te.attention %q, %q, %q layout thd mask padding cu_seqlens(%cu, %cu)
      : (tensor<24x2x16xf32>, tensor<24x2x16xf32>, tensor<24x2x16xf32>, tensor<4xi32>, tensor<4xi32>)
      -> tensor<24x2x16xf32>
  return %o : tensor<24x2x16xf32>
}

// -----

func.func @dropout(%q: tensor<1x8x2x16xf32>, %rng: tensor<2xi64>) -> tensor<1x8x2x16xf32> {
  // expected-error @+1 {{no reference decomposition for te.attention with dropout}}
  %o = te.attention %q, %q, %q layout bshd dropout 0.25 rng_state(%rng)
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<2xi64>)
      -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// -----

func.func @backward(%q: tensor<1x8x2x16xf32>, %lse: tensor<1x2x8x1xf32>)
    -> (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{no reference decomposition for te.attention_backward}}
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %q, %q, %lse layout bshd
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>,
         tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x1xf32>)
      -> (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
  return %dq, %dk, %dv : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>
}
