// Ops and configurations the host lowering does not cover yet are reported
// by name, with the reason, instead of a generic legalization failure.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg -verify-diagnostics

func.func @attention_dynamic(%q: tensor<1x?x2x16xf32>) -> tensor<1x?x2x16xf32> {
  // expected-error @+1 {{te.attention with dynamic shapes has no CPU lowering yet}}
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>) -> tensor<1x?x2x16xf32>
  return %o : tensor<1x?x2x16xf32>
}

// -----

te.process_group @tp size 2
func.func @all_reduce(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{te.all_reduce with dynamic shapes cannot run yet}}
  %y = te.all_reduce %x group @tp : tensor<?xf32>
  return %y : tensor<?xf32>
}
