// Round-trips te.activation and te.activation_backward through the custom and generic forms with every kind, optional operand and attribute.
// RUN: te-opt %s -split-input-file | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file --mlir-print-op-generic | te-opt -split-input-file | FileCheck %s

// Every kind, forward and backward, round-trips.
// CHECK-LABEL: func @kinds
// CHECK: te.activation %{{.*}} kind gelu : tensor<8x64xbf16> -> tensor<8x64xbf16>
// CHECK: te.activation %{{.*}} kind qgelu : tensor<8x64xbf16> -> tensor<8x64xf32>
// CHECK: te.activation %{{.*}} kind relu : tensor<8x64xbf16> -> tensor<8x64xbf16>
// CHECK: te.activation %{{.*}} kind srelu : tensor<8x64xbf16> -> tensor<8x64xbf16>
// CHECK: te.activation %{{.*}} kind silu : tensor<8x64xbf16> -> tensor<8x64xbf16>
// CHECK: te.activation %{{.*}} kind geglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation %{{.*}} kind qgeglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation %{{.*}} kind reglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation %{{.*}} kind sreglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation %{{.*}} kind swiglu : tensor<?x64xbf16> -> tensor<?x32xbf16>
// CHECK: te.activation %{{.*}} kind clamped_swiglu limit 7.000000e+00 : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation %{{.*}} kind clamped_swiglu limit 7.000000e+00 alpha 1.000000e+00 linear_offset 0.000000e+00 : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation %{{.*}} kind glu : tensor<8x64xbf16> -> tensor<8x32xbf16>
// CHECK: te.activation_backward %{{.*}}, %{{.*}} kind glu : tensor<8x32xbf16>, tensor<8x64xbf16> -> tensor<8x64xbf16>
func.func @kinds(%x: tensor<8x64xbf16>, %xd: tensor<?x64xbf16>) {
  %0 = te.activation %x kind gelu : tensor<8x64xbf16> -> tensor<8x64xbf16>
  %1 = te.activation %x kind qgelu : tensor<8x64xbf16> -> tensor<8x64xf32>
  %2 = te.activation %x kind relu : tensor<8x64xbf16> -> tensor<8x64xbf16>
  %3 = te.activation %x kind srelu : tensor<8x64xbf16> -> tensor<8x64xbf16>
  %4 = te.activation %x kind silu : tensor<8x64xbf16> -> tensor<8x64xbf16>
  %5 = te.activation %x kind geglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %6 = te.activation %x kind qgeglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %7 = te.activation %x kind reglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %8 = te.activation %x kind sreglu : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %9 = te.activation %xd kind swiglu : tensor<?x64xbf16> -> tensor<?x32xbf16>
  %10 = te.activation %x kind clamped_swiglu limit 7.0 : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %11 = te.activation %x kind clamped_swiglu limit 7.0 alpha 1.0 linear_offset 0.0 : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %12 = te.activation %x kind glu : tensor<8x64xbf16> -> tensor<8x32xbf16>
  %13 = te.activation_backward %11, %x kind glu : tensor<8x32xbf16>, tensor<8x64xbf16> -> tensor<8x64xbf16>
  return
}

// -----

// Quantized outputs and amax, forward and backward; dbias.
// CHECK-LABEL: func @quantized
// CHECK: te.activation %{{.*}} scale(%{{.*}}) kind geglu quantize per_tensor : tensor<64x256xbf16>, tensor<f32> -> tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>
// CHECK: te.activation %{{.*}} kind swiglu quantize mxfp8_1x32 usage both : tensor<64x256xbf16> -> tensor<64x128xbf16>, tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>, tensor<64x128xf8E4M3FN>, tensor<2x128xf8E8M0FNU>
// CHECK: te.activation %{{.*}} kind silu amax : tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<f32>
// CHECK: te.activation_backward %{{.*}}, %{{.*}} kind gelu dbias : tensor<64x256xbf16>, tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<256xbf16>
// CHECK: te.activation_backward %{{.*}}, %{{.*}} scale(%{{.*}}) kind gelu dbias quantize per_tensor usage both : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<f32> -> tensor<64x256xf8E5M2>, tensor<256x64xf8E5M2>, tensor<f32>, tensor<f32>, tensor<256xbf16>
// CHECK: te.activation_backward %{{.*}}, %{{.*}} kind swiglu quantize block_1x128 : tensor<64x128xbf16>, tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x2xf32>
func.func @quantized(%x: tensor<64x256xbf16>, %g: tensor<64x256xbf16>, %gh: tensor<64x128xbf16>, %s: tensor<f32>) {
  %0:3 = te.activation %x scale(%s) kind geglu quantize per_tensor
      : tensor<64x256xbf16>, tensor<f32> -> tensor<64x128xf8E4M3FN>, tensor<f32>, tensor<f32>
  %1:5 = te.activation %x kind swiglu quantize mxfp8_1x32 usage both
      : tensor<64x256xbf16> -> tensor<64x128xbf16>, tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>, tensor<64x128xf8E4M3FN>, tensor<2x128xf8E8M0FNU>
  %2:2 = te.activation %x kind silu amax : tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<f32>
  %3:2 = te.activation_backward %g, %x kind gelu dbias
      : tensor<64x256xbf16>, tensor<64x256xbf16> -> tensor<64x256xbf16>, tensor<256xbf16>
  %4:5 = te.activation_backward %g, %x scale(%s) kind gelu dbias quantize per_tensor usage both
      : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<f32>
      -> tensor<64x256xf8E5M2>, tensor<256x64xf8E5M2>, tensor<f32>, tensor<f32>, tensor<256xbf16>
  %5:2 = te.activation_backward %gh, %x kind swiglu quantize block_1x128
      : tensor<64x128xbf16>, tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x2xf32>
  return
}
