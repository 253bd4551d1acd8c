// Ops and configurations the GPU lowering does not cover yet are reported
// by name, with the reason and the target, not lowered wrongly.
// RUN: te-opt %s -split-input-file --convert-te-to-gpu -verify-diagnostics

func.func @scaled_matmul(%a: tensor<16x32xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>) -> tensor<16x16xbf16> {
  // expected-error @+1 {{te.scaled_matmul needs 16x8x16 matrix multiply-accumulate units, which a GPU with 32-lane warps lacks}}
  %y = te.scaled_matmul %a, %b scales(%s, %s)
      : tensor<16x32xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<16x16xbf16>
  return %y : tensor<16x16xbf16>
}

// -----

func.func @attention(%q: tensor<1x16x2x16xbf16>) -> tensor<1x16x2x16xbf16> {
  // expected-error @+1 {{te.attention needs 16x8x16 matrix multiply-accumulate units, which a GPU with 32-lane warps lacks}}
  %o = te.attention %q, %q, %q layout bshd
      : (tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>) -> tensor<1x16x2x16xbf16>
  return %o : tensor<1x16x2x16xbf16>
}

// -----

func.func @dynamic(%x: tensor<?xf32>) -> tensor<f32> {
  // expected-error @+1 {{te.amax with dynamic shapes has no GPU lowering (a GPU with 32-lane warps): kernels are generated for static shapes}}
  %a = te.amax %x : tensor<?xf32> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

func.func @scalar_amax(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{te.amax of a rank-0 tensor has no GPU kernel}}
  %a = te.amax %x : tensor<f32> -> tensor<f32>
  return %a : tensor<f32>
}

// -----

func.func @scalar_quantize(%x: tensor<f32>, %s: tensor<f32>) -> tensor<f8E4M3FN> {
  // expected-error @+1 {{te.quantize of a rank-0 tensor has no GPU kernel}}
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor
      : tensor<f32>, tensor<f32> -> tensor<f8E4M3FN>, tensor<f32>, tensor<f32>
  return %d : tensor<f8E4M3FN>
}
