// Ops and configurations the host lowering does not cover yet are reported
// by name, with the reason, instead of a generic legalization failure.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg -verify-diagnostics

func.func @attention_backward_dropout(%q: tensor<1x8x2x16xf32>, %lse: tensor<1x2x8x1xf32>, %rng: tensor<2xi64>)
    -> (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{te.attention_backward with dropout has no CPU lowering yet}}
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %q, %q, %lse layout bshd dropout 1.000000e-01 rng_state(%rng)
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>,
         tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x8x1xf32>, tensor<2xi64>)
      -> (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>)
  return %dq, %dk, %dv : tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>
}

// -----

func.func @attention_dropout(%q: tensor<1x8x2x16xf32>, %rng: tensor<2xi64>) -> tensor<1x8x2x16xf32> {
  // expected-error @+1 {{te.attention with dropout has no CPU lowering yet}}
  %o = te.attention %q, %q, %q layout bshd dropout 1.000000e-01 rng_state(%rng)
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<2xi64>) -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// -----

te.process_group @tp size 2
func.func @all_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{te.all_reduce has no CPU lowering yet}}
  %y = te.all_reduce %x group @tp : tensor<4xf32>
  return %y : tensor<4xf32>
}
