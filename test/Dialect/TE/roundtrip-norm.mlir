// Round-trips te.norm and te.norm_backward through the custom and generic forms with every kind, optional operand and attribute.
// RUN: te-opt %s -split-input-file | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file --mlir-print-op-generic | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file > %t.1 && te-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2

// CHECK-LABEL: func @norm_forward
// CHECK: te.norm %{{.*}}, %{{.*}}, %{{.*}} kind layernorm epsilon 9.99999974E-6 : tensor<2x128x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16> -> tensor<2x128x1024xbf16>, tensor<2x128xf32>, tensor<2x128xf32>
// CHECK: te.norm %{{.*}}, %{{.*}} kind layernorm epsilon 0.000000e+00 zero_centered_gamma : tensor<64x256xf32>, tensor<256xf32> -> tensor<64x256xbf16>, tensor<64xf32>, tensor<64xf32>
// CHECK: te.norm %{{.*}}, %{{.*}} kind rmsnorm epsilon 9.99999997E-7 zero_centered_gamma : tensor<2x128x1024xbf16>, tensor<1024xbf16> -> tensor<2x128x1024xbf16>, tensor<2x128xf32>
// CHECK: te.norm %{{.*}}, %{{.*}} kind rmsnorm epsilon 9.99999974E-6 : tensor<?x512xf16>, tensor<512xf16> -> tensor<?x512xf16>, tensor<?xf32>
func.func @norm_forward(%x: tensor<2x128x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>,
                        %x32: tensor<64x256xf32>, %g32: tensor<256xf32>,
                        %xd: tensor<?x512xf16>, %gd: tensor<512xf16>) {
  %z, %mu, %rs = te.norm %x, %g, %b kind layernorm epsilon 1.0e-05
      : tensor<2x128x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
      -> tensor<2x128x1024xbf16>, tensor<2x128xf32>, tensor<2x128xf32>
  %z2, %mu2, %rs2 = te.norm %x32, %g32 kind layernorm epsilon 0.0 zero_centered_gamma
      : tensor<64x256xf32>, tensor<256xf32> -> tensor<64x256xbf16>, tensor<64xf32>, tensor<64xf32>
  %z3, %rs3 = te.norm %x, %g kind rmsnorm epsilon 1.0e-06 zero_centered_gamma
      : tensor<2x128x1024xbf16>, tensor<1024xbf16> -> tensor<2x128x1024xbf16>, tensor<2x128xf32>
  %z4, %rs4 = te.norm %xd, %gd kind rmsnorm epsilon 1.0e-05
      : tensor<?x512xf16>, tensor<512xf16> -> tensor<?x512xf16>, tensor<?xf32>
  return
}

// -----

// CHECK-LABEL: func @norm_backward
// CHECK: te.norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mean(%{{.*}}) kind layernorm : tensor<256x1024xbf16>, tensor<256x1024xbf16>, tensor<256xf32>, tensor<1024xbf16>, tensor<256xf32> -> tensor<256x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
// CHECK: te.norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mean(%{{.*}}) kind layernorm zero_centered_gamma : tensor<256x1024xbf16>, tensor<256x1024xf32>, tensor<256xf32>, tensor<1024xbf16>, tensor<256xf32> -> tensor<256x1024xf32>, tensor<1024xbf16>, tensor<1024xbf16>
// CHECK: te.norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} kind rmsnorm : tensor<2x8x64xf16>, tensor<2x8x64xf16>, tensor<2x8xf32>, tensor<64xf16> -> tensor<2x8x64xf16>, tensor<64xf16>
// CHECK: te.norm_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} add(%{{.*}}) kind rmsnorm zero_centered_gamma : tensor<2x8x64xf16>, tensor<2x8x64xf16>, tensor<2x8xf32>, tensor<64xf16>, tensor<2x8x64xf16> -> tensor<2x8x64xf16>, tensor<64xf16>
func.func @norm_backward(%dz: tensor<256x1024xbf16>, %x: tensor<256x1024xbf16>, %x32: tensor<256x1024xf32>,
                         %rs: tensor<256xf32>, %mu: tensor<256xf32>, %g: tensor<1024xbf16>,
                         %dz3: tensor<2x8x64xf16>, %x3: tensor<2x8x64xf16>, %rs3: tensor<2x8xf32>,
                         %g3: tensor<64xf16>, %add: tensor<2x8x64xf16>) {
  %dx, %dg, %db = te.norm_backward %dz, %x, %rs, %g mean(%mu) kind layernorm
      : tensor<256x1024xbf16>, tensor<256x1024xbf16>, tensor<256xf32>, tensor<1024xbf16>, tensor<256xf32>
      -> tensor<256x1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
  %dx2, %dg2, %db2 = te.norm_backward %dz, %x32, %rs, %g mean(%mu) kind layernorm zero_centered_gamma
      : tensor<256x1024xbf16>, tensor<256x1024xf32>, tensor<256xf32>, tensor<1024xbf16>, tensor<256xf32>
      -> tensor<256x1024xf32>, tensor<1024xbf16>, tensor<1024xbf16>
  %dx3, %dg3 = te.norm_backward %dz3, %x3, %rs3, %g3 kind rmsnorm
      : tensor<2x8x64xf16>, tensor<2x8x64xf16>, tensor<2x8xf32>, tensor<64xf16>
      -> tensor<2x8x64xf16>, tensor<64xf16>
  %dx4, %dg4 = te.norm_backward %dz3, %x3, %rs3, %g3 add(%add) kind rmsnorm zero_centered_gamma
      : tensor<2x8x64xf16>, tensor<2x8x64xf16>, tensor<2x8xf32>, tensor<64xf16>, tensor<2x8x64xf16>
      -> tensor<2x8x64xf16>, tensor<64xf16>
  return
}

// -----

// The quantized outputs: delayed scaling's fused cast (no z), z kept beside
// a both-copies cast, the amax of z, MXFP8 and block scaling.
// CHECK-LABEL: func @norm_quantized
// CHECK: te.norm %{{.*}}, %{{.*}} scale(%{{.*}}) kind rmsnorm epsilon 9.99999974E-6 quantize per_tensor : tensor<64x256xbf16>, tensor<256xbf16>, tensor<f32> -> tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32>
// CHECK: te.norm %{{.*}}, %{{.*}}, %{{.*}} scale(%{{.*}}) kind layernorm epsilon 9.99999974E-6 quantize per_tensor usage both : tensor<64x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<f32> -> tensor<64x256xbf16>, tensor<64x256xf8E5M2>, tensor<256x64xf8E5M2>, tensor<f32>, tensor<f32>, tensor<64xf32>, tensor<64xf32>
// CHECK: te.norm %{{.*}}, %{{.*}} kind rmsnorm epsilon 9.99999974E-6 zero_centered_gamma amax : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xbf16>, tensor<f32>, tensor<64xf32>
// CHECK: te.norm %{{.*}}, %{{.*}} kind rmsnorm epsilon 9.99999974E-6 quantize mxfp8_1x32 usage columnwise : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<2x256xf8E8M0FNU>, tensor<64xf32>
// CHECK: te.norm %{{.*}}, %{{.*}} kind rmsnorm epsilon 9.99999974E-6 quantize block_128x128 usage both pow2_scales false amax_epsilon 9.99999974E-5 : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<1x2xf32>, tensor<256x64xf8E4M3FN>, tensor<2x1xf32>, tensor<64xf32>
func.func @norm_quantized(%x: tensor<64x256xbf16>, %g: tensor<256xbf16>, %b: tensor<256xbf16>, %s: tensor<f32>) {
  %d, %si, %am, %rs = te.norm %x, %g scale(%s) kind rmsnorm epsilon 1.0e-05 quantize per_tensor
      : tensor<64x256xbf16>, tensor<256xbf16>, tensor<f32>
      -> tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32>
  %z2:7 = te.norm %x, %g, %b scale(%s) kind layernorm epsilon 1.0e-05 quantize per_tensor usage both
      : tensor<64x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<f32>
      -> tensor<64x256xbf16>, tensor<64x256xf8E5M2>, tensor<256x64xf8E5M2>, tensor<f32>, tensor<f32>, tensor<64xf32>, tensor<64xf32>
  %z3:3 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 zero_centered_gamma amax
      : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xbf16>, tensor<f32>, tensor<64xf32>
  %z4:3 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 quantize mxfp8_1x32 usage columnwise
      : tensor<64x256xbf16>, tensor<256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<2x256xf8E8M0FNU>, tensor<64xf32>
  %z5:5 = te.norm %x, %g kind rmsnorm epsilon 1.0e-05 quantize block_128x128 usage both pow2_scales false amax_epsilon 1.0e-04
      : tensor<64x256xbf16>, tensor<256xbf16>
      -> tensor<64x256xf8E4M3FN>, tensor<1x2xf32>, tensor<256x64xf8E4M3FN>, tensor<2x1xf32>, tensor<64xf32>
  return
}
