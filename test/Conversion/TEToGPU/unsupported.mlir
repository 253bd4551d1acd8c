// Ops and configurations the GPU lowering does not cover yet are reported
// by name, with the reason and the target, not lowered wrongly.
// RUN: te-opt %s -split-input-file --convert-te-to-gpu -verify-diagnostics

func.func @mxfp8(%x: tensor<64x64xbf16>) -> (tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>) {
  // expected-error @+1 {{te.quantize mode mxfp8_1x32 has no GPU kernel yet; per_tensor has}}
  %d, %s = te.quantize %x mode mxfp8_1x32
      : tensor<64x64xbf16> -> tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
  return %d, %s : tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
}

// -----

func.func @block_dequantize(%d: tensor<128x128xf8E4M3FN>, %s: tensor<1x1xf32>) -> tensor<128x128xf32> {
  // expected-error @+1 {{te.dequantize mode block_128x128 has no GPU kernel yet; per_tensor has}}
  %x = te.dequantize %d, %s mode block_128x128
      : tensor<128x128xf8E4M3FN>, tensor<1x1xf32> -> tensor<128x128xf32>
  return %x : tensor<128x128xf32>
}

// -----

func.func @attention(%q: tensor<1x16x2x16xbf16>) -> tensor<1x16x2x16xbf16> {
  // expected-error @+1 {{te.attention has no GPU code generation yet (a GPU with 32-lane warps)}}
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
