// Ops and configurations the host lowering does not cover yet are reported
// by name, with the reason, instead of a generic legalization failure.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg -verify-diagnostics

func.func @attention(%q: tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32> {
  // expected-error @+1 {{te.attention has no CPU lowering yet}}
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>) -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// -----

func.func @mxfp8(%x: tensor<4x64xbf16>) -> (tensor<4x64xf8E4M3FN>, tensor<4x2xf8E8M0FNU>) {
  // expected-error @+1 {{te.quantize mode mxfp8_1x32 has no CPU lowering yet}}
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<4x64xbf16> -> tensor<4x64xf8E4M3FN>, tensor<4x2xf8E8M0FNU>
  return %d, %s : tensor<4x64xf8E4M3FN>, tensor<4x2xf8E8M0FNU>
}
