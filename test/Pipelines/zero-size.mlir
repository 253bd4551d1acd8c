// Zero-size problems through every pipeline: te-fold-empty writes their
// results, so no lowering meets them (once: division by zero in the
// attention tiling, out-of-bounds offsets in the MXFP8 cast).
// RUN: te-opt %s -split-input-file --te-lower-cpu | FileCheck %s
// RUN: te-opt %s -split-input-file --te-lower-cpu-reference | FileCheck %s

// CHECK-LABEL: llvm.func @mm
func.func @mm(%a: tensor<0x32xf8E4M3FN>, %b: tensor<8x32xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<0x8xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b : tensor<0x32xf8E4M3FN>, tensor<8x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<0x8xbf16>
  return %d : tensor<0x8xbf16>
}
// -----
// CHECK-LABEL: llvm.func @mmk
func.func @mmk(%a: tensor<16x0xf8E4M3FN>, %b: tensor<8x0xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<8xbf16>) -> tensor<16x8xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_b : tensor<16x0xf8E4M3FN>, tensor<8x0xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8xbf16> -> tensor<16x8xbf16>
  return %d : tensor<16x8xbf16>
}
// -----
// CHECK-LABEL: llvm.func @mx
func.func @mx(%x: tensor<0x64xf32>) -> (tensor<0x64xf8E4M3FN>, tensor<0x2xf8E8M0FNU>) {
  %d, %s = te.quantize %x mode mxfp8_1x32 : tensor<0x64xf32> -> tensor<0x64xf8E4M3FN>, tensor<0x2xf8E8M0FNU>
  return %d, %s : tensor<0x64xf8E4M3FN>, tensor<0x2xf8E8M0FNU>
}
// -----
// CHECK-LABEL: llvm.func @mxc
func.func @mxc(%x: tensor<64x0xf32>) -> (tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU>) {
  %d, %s = te.quantize %x mode mxfp8_1x32 : tensor<64x0xf32> -> tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU>
  return %d, %s : tensor<64x0xf8E4M3FN>, tensor<64x0xf8E8M0FNU>
}
// -----
// CHECK-LABEL: llvm.func @dq
func.func @dq(%x: tensor<0x64xf8E4M3FN>, %s: tensor<0x2xf8E8M0FNU>) -> tensor<0x64xbf16> {
  %r = te.dequantize %x, %s mode mxfp8_1x32 : tensor<0x64xf8E4M3FN>, tensor<0x2xf8E8M0FNU> -> tensor<0x64xbf16>
  return %r : tensor<0x64xbf16>
}
// -----
// CHECK-LABEL: llvm.func @hist
func.func @hist(%h: tensor<16xf32>, %a: tensor<f32>, %s: tensor<f32>) -> (tensor<16xf32>, tensor<f32>) {
  %h0, %s0 = te.update_delayed_scaling %h, %a, %s fp8_type f8E4M3FN : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  return %h0, %s0 : tensor<16xf32>, tensor<f32>
}
// -----
// CHECK-LABEL: llvm.func @attention_no_queries
func.func @attention_no_queries(%q: tensor<2x0x4x8xbf16>, %k: tensor<2x16x4x8xbf16>,
                                %v: tensor<2x16x4x8xbf16>)
    -> (tensor<2x0x4x8xbf16>, tensor<2x4x0x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<2x0x4x8xbf16>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>)
      -> (tensor<2x0x4x8xbf16>, tensor<2x4x0x1xf32>)
  return %o, %lse : tensor<2x0x4x8xbf16>, tensor<2x4x0x1xf32>
}
// -----
// CHECK-LABEL: llvm.func @attention_no_keys
func.func @attention_no_keys(%q: tensor<2x5x4x8xbf16>, %k: tensor<2x0x4x8xbf16>,
                             %v: tensor<2x0x4x8xbf16>, %alpha: tensor<1x4x1x1xf32>)
    -> (tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal
      softmax learnable softmax_offset(%alpha) {return_lse}
      : (tensor<2x5x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>,
         tensor<1x4x1x1xf32>) -> (tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>)
  return %o, %lse : tensor<2x5x4x8xbf16>, tensor<2x4x5x1xf32>
}
// -----
// CHECK-LABEL: llvm.func @backward_no_keys
func.func @backward_no_keys(%q: tensor<2x3x4x8xbf16>, %k: tensor<2x0x4x8xbf16>,
                            %lse: tensor<2x4x3x1xf32>)
    -> (tensor<2x3x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %k, %q, %q, %lse
      layout bshd mask causal
      : (tensor<2x3x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>,
         tensor<2x3x4x8xbf16>, tensor<2x3x4x8xbf16>, tensor<2x4x3x1xf32>)
      -> (tensor<2x3x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>)
  return %dq, %dk, %dv : tensor<2x3x4x8xbf16>, tensor<2x0x4x8xbf16>, tensor<2x0x4x8xbf16>
}
