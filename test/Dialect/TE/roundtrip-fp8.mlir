// Round-trips the FP8 ops (te.amax, te.compute_scale, te.update_delayed_scaling, te.quantize, te.dequantize, te.scaled_matmul) through the custom and generic forms with every attribute value and optional operand.
// RUN: te-opt %s -split-input-file | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file --mlir-print-op-generic | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file > %t.1 && te-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2
// RUN: te-opt %s -split-input-file --mlir-print-op-generic > %t.g1 && te-opt %t.g1 -split-input-file --mlir-print-op-generic > %t.g2 && diff %t.g1 %t.g2

//===----------------------------------------------------------------------===//
// te.amax
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func @amax
// CHECK-SAME: (%[[X0:[a-zA-Z0-9_]+]]: tensor<1024x1024xbf16>, %[[X1:[a-zA-Z0-9_]+]]: tensor<8x?x64xf16>, %[[X2:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[A0:[a-zA-Z0-9_]+]] = te.amax %[[X0]] : tensor<1024x1024xbf16> -> tensor<f32>
// CHECK: %[[A1:[a-zA-Z0-9_]+]] = te.amax %[[X1]] : tensor<8x?x64xf16> -> tensor<f32>
// CHECK: %[[A2:[a-zA-Z0-9_]+]] = te.amax %[[X2]] : tensor<f32> -> tensor<f32>
// CHECK: return %[[A0]], %[[A1]], %[[A2]]
func.func @amax(%x0: tensor<1024x1024xbf16>, %x1: tensor<8x?x64xf16>, %x2: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %a0 = te.amax %x0 : tensor<1024x1024xbf16> -> tensor<f32>
  %a1 = te.amax %x1 : tensor<8x?x64xf16> -> tensor<f32>
  %a2 = te.amax %x2 : tensor<f32> -> tensor<f32>
  return %a0, %a1, %a2 : tensor<f32>, tensor<f32>, tensor<f32>
}

//===----------------------------------------------------------------------===//
// te.compute_scale
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @compute_scale
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<f32>, %[[B:[a-zA-Z0-9_]+]]: tensor<2x4xf32>)
// CHECK: %[[S0:[a-zA-Z0-9_]+]] = te.compute_scale %[[A]] fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
// CHECK: %[[S1:[a-zA-Z0-9_]+]] = te.compute_scale %[[A]] fp8_type f8E5M2 : tensor<f32> -> tensor<f32>
// CHECK: %[[S2:[a-zA-Z0-9_]+]] = te.compute_scale %[[A]] fp8_type f8E4M3FN epsilon 9.99999996E-13 : tensor<f32> -> tensor<f32>
// CHECK: %[[S3:[a-zA-Z0-9_]+]] = te.compute_scale %[[A]] fp8_type f8E5M2 pow2_scales : tensor<f32> -> tensor<f32>
// CHECK: %[[S4:[a-zA-Z0-9_]+]] = te.compute_scale %[[B]] fp8_type f8E4M3FN epsilon 1.000000e+00 pow2_scales : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK: %[[S5:[a-zA-Z0-9_]+]] = te.compute_scale %[[A]] fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
// CHECK: return %[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[S4]], %[[S5]]
func.func @compute_scale(%amax: tensor<f32>, %block_amax: tensor<2x4xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<2x4xf32>, tensor<f32>) {
  %s0 = te.compute_scale %amax fp8_type f8E4M3FN : tensor<f32> -> tensor<f32>
  %s1 = te.compute_scale %amax fp8_type f8E5M2 : tensor<f32> -> tensor<f32>
  %s2 = te.compute_scale %amax fp8_type f8E4M3FN epsilon 1.0e-12 : tensor<f32> -> tensor<f32>
  %s3 = te.compute_scale %amax fp8_type f8E5M2 pow2_scales : tensor<f32> -> tensor<f32>
  %s4 = te.compute_scale %block_amax fp8_type f8E4M3FN epsilon 1.0 pow2_scales : tensor<2x4xf32> -> tensor<2x4xf32>
  // An explicit zero epsilon is the default and is elided.
  %s5 = te.compute_scale %amax fp8_type f8E4M3FN epsilon 0.0 : tensor<f32> -> tensor<f32>
  return %s0, %s1, %s2, %s3, %s4, %s5 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<2x4xf32>, tensor<f32>
}

//===----------------------------------------------------------------------===//
// te.update_delayed_scaling
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @update_delayed_scaling_scalar
// CHECK-SAME: (%[[H:[a-zA-Z0-9_]+]]: tensor<16xf32>, %[[A:[a-zA-Z0-9_]+]]: tensor<f32>, %[[S:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[H0:[a-zA-Z0-9_]+]], %[[S0:[a-zA-Z0-9_]+]] = te.update_delayed_scaling %[[H]], %[[A]], %[[S]] fp8_type f8E4M3FN : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
// CHECK: %[[H1:[a-zA-Z0-9_]+]], %[[S1:[a-zA-Z0-9_]+]] = te.update_delayed_scaling %[[H]], %[[A]], %[[S]] fp8_type f8E5M2 : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
// CHECK: %[[H2:[a-zA-Z0-9_]+]], %[[S2:[a-zA-Z0-9_]+]] = te.update_delayed_scaling %[[H]], %[[A]], %[[S]] fp8_type f8E4M3FN amax_algo{{ +}}most_recent : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
// CHECK: %[[H3:[a-zA-Z0-9_]+]], %[[S3:[a-zA-Z0-9_]+]] = te.update_delayed_scaling %[[H]], %[[A]], %[[S]] fp8_type f8E5M2 margin 3 : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
// CHECK: return %[[H0]], %[[S0]], %[[H1]], %[[S1]], %[[H2]], %[[S2]], %[[H3]], %[[S3]]
func.func @update_delayed_scaling_scalar(%hist: tensor<16xf32>, %amax: tensor<f32>, %scale: tensor<f32>) -> (tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>) {
  // amax_algo max and margin 0 are the defaults and are elided.
  %h0, %s0 = te.update_delayed_scaling %hist, %amax, %scale fp8_type f8E4M3FN amax_algo max margin 0
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  %h1, %s1 = te.update_delayed_scaling %hist, %amax, %scale fp8_type f8E5M2
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  %h2, %s2 = te.update_delayed_scaling %hist, %amax, %scale fp8_type f8E4M3FN amax_algo most_recent
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  %h3, %s3 = te.update_delayed_scaling %hist, %amax, %scale fp8_type f8E5M2 margin 3
      : tensor<16xf32>, tensor<f32>, tensor<f32> -> tensor<16xf32>, tensor<f32>
  return %h0, %s0, %h1, %s1, %h2, %s2, %h3, %s3 : tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>, tensor<16xf32>, tensor<f32>
}

// -----

// One history column per tensor of a module (a vector of amaxes and scales).
// CHECK-LABEL: func @update_delayed_scaling_vector
// CHECK-SAME: (%[[H:[a-zA-Z0-9_]+]]: tensor<1024x3xf32>, %[[A:[a-zA-Z0-9_]+]]: tensor<3xf32>, %[[S:[a-zA-Z0-9_]+]]: tensor<3xf32>)
// CHECK: %[[H0:[a-zA-Z0-9_]+]], %[[S0:[a-zA-Z0-9_]+]] = te.update_delayed_scaling %[[H]], %[[A]], %[[S]] fp8_type f8E4M3FN amax_algo{{ +}}most_recent margin 1 : tensor<1024x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1024x3xf32>, tensor<3xf32>
// CHECK: return %[[H0]], %[[S0]]
func.func @update_delayed_scaling_vector(%hist: tensor<1024x3xf32>, %amax: tensor<3xf32>, %scale: tensor<3xf32>) -> (tensor<1024x3xf32>, tensor<3xf32>) {
  %h, %s = te.update_delayed_scaling %hist, %amax, %scale fp8_type f8E4M3FN amax_algo most_recent margin 1
      : tensor<1024x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<1024x3xf32>, tensor<3xf32>
  return %h, %s : tensor<1024x3xf32>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func @update_delayed_scaling_dynamic
// CHECK: te.update_delayed_scaling %{{.*}}, %{{.*}}, %{{.*}} fp8_type f8E5M2 amax_algo{{ +}}most_recent margin 2 : tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<?x2x4xf32>, tensor<2x4xf32>
func.func @update_delayed_scaling_dynamic(%hist: tensor<?x2x4xf32>, %amax: tensor<2x4xf32>, %scale: tensor<2x4xf32>) -> (tensor<?x2x4xf32>, tensor<2x4xf32>) {
  %h, %s = te.update_delayed_scaling %hist, %amax, %scale fp8_type f8E5M2 amax_algo most_recent margin 2
      : tensor<?x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<?x2x4xf32>, tensor<2x4xf32>
  return %h, %s : tensor<?x2x4xf32>, tensor<2x4xf32>
}

//===----------------------------------------------------------------------===//
// te.quantize: per_tensor
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @quantize_per_tensor
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<256x512xbf16>, %[[S:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[R:[a-zA-Z0-9_]+]]:3 = te.quantize %[[X]] scale(%[[S]]) mode{{ +}}per_tensor : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
// CHECK: %[[C:[a-zA-Z0-9_]+]]:3 = te.quantize %[[X]] scale(%[[S]]) mode{{ +}}per_tensor usage{{ +}}columnwise : tensor<256x512xbf16>, tensor<f32> -> tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<f32>
// CHECK: %[[B:[a-zA-Z0-9_]+]]:4 = te.quantize %[[X]] scale(%[[S]]) mode{{ +}}per_tensor usage{{ +}}both : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<f32>
// CHECK: %[[E:[a-zA-Z0-9_]+]]:3 = te.quantize %[[X]] scale(%[[S]]) mode{{ +}}per_tensor : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E5M2>, tensor<f32>, tensor<f32>
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[C]]#0, %[[B]]#1, %[[B]]#3, %[[E]]#0
func.func @quantize_per_tensor(%x: tensor<256x512xbf16>, %s: tensor<f32>) -> (tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<512x256xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<256x512xf8E5M2>) {
  // usage rowwise is the default and is elided.
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor usage rowwise
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  %ct, %csi, %camax = te.quantize %x scale(%s) mode per_tensor usage columnwise
      : tensor<256x512xbf16>, tensor<f32> -> tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %bd, %bt, %bsi, %bamax = te.quantize %x scale(%s) mode per_tensor usage both
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<f32>
  %ed, %esi, %eamax = te.quantize %x scale(%s) mode per_tensor
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E5M2>, tensor<f32>, tensor<f32>
  return %d, %si, %amax, %ct, %bt, %bamax, %ed : tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<512x256xf8E4M3FN>, tensor<512x256xf8E4M3FN>, tensor<f32>, tensor<256x512xf8E5M2>
}

// -----

// Row-wise per-tensor quantization of a non-2-D tensor (f32 and f16 inputs).
// CHECK-LABEL: func @quantize_per_tensor_nd
// CHECK: te.quantize %{{.*}} scale(%{{.*}}) mode{{ +}}per_tensor : tensor<4x8x64xf32>, tensor<f32> -> tensor<4x8x64xf8E5M2>, tensor<f32>, tensor<f32>
// CHECK: te.quantize %{{.*}} scale(%{{.*}}) mode{{ +}}per_tensor : tensor<?xf16>, tensor<f32> -> tensor<?xf8E4M3FN>, tensor<f32>, tensor<f32>
func.func @quantize_per_tensor_nd(%x: tensor<4x8x64xf32>, %y: tensor<?xf16>, %s: tensor<f32>) -> (tensor<4x8x64xf8E5M2>, tensor<?xf8E4M3FN>) {
  %d, %si, %amax = te.quantize %x scale(%s) mode per_tensor
      : tensor<4x8x64xf32>, tensor<f32> -> tensor<4x8x64xf8E5M2>, tensor<f32>, tensor<f32>
  %e, %esi, %eamax = te.quantize %y scale(%s) mode per_tensor
      : tensor<?xf16>, tensor<f32> -> tensor<?xf8E4M3FN>, tensor<f32>, tensor<f32>
  return %d, %e : tensor<4x8x64xf8E5M2>, tensor<?xf8E4M3FN>
}

//===----------------------------------------------------------------------===//
// te.quantize: mxfp8_1x32
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @quantize_mxfp8
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<256x512xbf16>)
// CHECK: %[[R:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}mxfp8_1x32 : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>
// CHECK: %[[C:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}mxfp8_1x32 usage{{ +}}columnwise : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>
// CHECK: %[[B:[a-zA-Z0-9_]+]]:4 = te.quantize %[[X]] mode{{ +}}mxfp8_1x32 usage{{ +}}both : tensor<256x512xbf16> -> tensor<256x512xf8E5M2>, tensor<256x16xf8E8M0FNU>, tensor<256x512xf8E5M2>, tensor<8x512xf8E8M0FNU>
// CHECK: return %[[R]]#0, %[[R]]#1, %[[C]]#0, %[[C]]#1, %[[B]]#2, %[[B]]#3
func.func @quantize_mxfp8(%x: tensor<256x512xbf16>) -> (tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>, tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>, tensor<256x512xf8E5M2>, tensor<8x512xf8E8M0FNU>) {
  %d, %si = te.quantize %x mode mxfp8_1x32
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>
  %dc, %sic = te.quantize %x mode mxfp8_1x32 usage columnwise
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>
  %bd, %bsi, %bdc, %bsic = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<256x512xbf16> -> tensor<256x512xf8E5M2>, tensor<256x16xf8E8M0FNU>, tensor<256x512xf8E5M2>, tensor<8x512xf8E8M0FNU>
  return %d, %si, %dc, %sic, %bdc, %bsic : tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU>, tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU>, tensor<256x512xf8E5M2>, tensor<8x512xf8E8M0FNU>
}

// -----

// MXFP8 blocks on a 3-D input run along the last (row-wise) and the
// second-to-last (column-wise) dimension.
// CHECK-LABEL: func @quantize_mxfp8_3d
// CHECK: te.quantize %{{.*}} mode{{ +}}mxfp8_1x32 usage{{ +}}both : tensor<4x64x96xf16> -> tensor<4x64x96xf8E4M3FN>, tensor<4x64x3xf8E8M0FNU>, tensor<4x64x96xf8E4M3FN>, tensor<4x2x96xf8E8M0FNU>
func.func @quantize_mxfp8_3d(%x: tensor<4x64x96xf16>) -> (tensor<4x64x3xf8E8M0FNU>, tensor<4x2x96xf8E8M0FNU>) {
  %d, %si, %dc, %sic = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<4x64x96xf16> -> tensor<4x64x96xf8E4M3FN>, tensor<4x64x3xf8E8M0FNU>, tensor<4x64x96xf8E4M3FN>, tensor<4x2x96xf8E8M0FNU>
  return %si, %sic : tensor<4x64x3xf8E8M0FNU>, tensor<4x2x96xf8E8M0FNU>
}

//===----------------------------------------------------------------------===//
// te.quantize: block_1x128 and block_128x128
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @quantize_block_1x128
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<256x512xbf16>)
// CHECK: %[[R:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}block_1x128 : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>
// CHECK: %[[C:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}block_1x128 usage{{ +}}columnwise : tensor<256x512xbf16> -> tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
// CHECK: %[[B:[a-zA-Z0-9_]+]]:4 = te.quantize %[[X]] mode{{ +}}block_1x128 usage{{ +}}both pow2_scales false epsilon 9.99999997E-7 : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>, tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
// CHECK: %[[E:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}block_1x128 epsilon 1.000000e+00 : tensor<256x512xbf16> -> tensor<256x512xf8E5M2>, tensor<256x4xf32>
// CHECK: return %[[R]]#1, %[[C]]#1, %[[B]]#3, %[[E]]#0
func.func @quantize_block_1x128(%x: tensor<256x512xbf16>) -> (tensor<256x4xf32>, tensor<512x2xf32>, tensor<512x2xf32>, tensor<256x512xf8E5M2>) {
  // pow2_scales true is the default and is elided.
  %d, %si = te.quantize %x mode block_1x128 pow2_scales true
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>
  %dt, %sit = te.quantize %x mode block_1x128 usage columnwise
      : tensor<256x512xbf16> -> tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
  %bd, %bsi, %bdt, %bsit = te.quantize %x mode block_1x128 usage both pow2_scales false epsilon 1.0e-6
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>, tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
  %e, %esi = te.quantize %x mode block_1x128 epsilon 1.0
      : tensor<256x512xbf16> -> tensor<256x512xf8E5M2>, tensor<256x4xf32>
  return %si, %sit, %bsit, %e : tensor<256x4xf32>, tensor<512x2xf32>, tensor<512x2xf32>, tensor<256x512xf8E5M2>
}

// -----

// CHECK-LABEL: func @quantize_block_128x128
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<256x512xf32>)
// CHECK: %[[R:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}block_128x128 pow2_scales false : tensor<256x512xf32> -> tensor<256x512xf8E4M3FN>, tensor<2x4xf32>
// CHECK: %[[C:[a-zA-Z0-9_]+]]:2 = te.quantize %[[X]] mode{{ +}}block_128x128 usage{{ +}}columnwise epsilon 9.99999996E-13 : tensor<256x512xf32> -> tensor<512x256xf8E5M2>, tensor<4x2xf32>
// CHECK: %[[B:[a-zA-Z0-9_]+]]:4 = te.quantize %[[X]] mode{{ +}}block_128x128 usage{{ +}}both : tensor<256x512xf32> -> tensor<256x512xf8E4M3FN>, tensor<2x4xf32>, tensor<512x256xf8E4M3FN>, tensor<4x2xf32>
// CHECK: return %[[R]]#1, %[[C]]#1, %[[B]]#1, %[[B]]#3
func.func @quantize_block_128x128(%x: tensor<256x512xf32>) -> (tensor<2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>, tensor<4x2xf32>) {
  %d, %si = te.quantize %x mode block_128x128 pow2_scales false
      : tensor<256x512xf32> -> tensor<256x512xf8E4M3FN>, tensor<2x4xf32>
  %dt, %sit = te.quantize %x mode block_128x128 usage columnwise epsilon 1.0e-12
      : tensor<256x512xf32> -> tensor<512x256xf8E5M2>, tensor<4x2xf32>
  %bd, %bsi, %bdt, %bsit = te.quantize %x mode block_128x128 usage both
      : tensor<256x512xf32> -> tensor<256x512xf8E4M3FN>, tensor<2x4xf32>, tensor<512x256xf8E4M3FN>, tensor<4x2xf32>
  return %si, %sit, %bsi, %bsit : tensor<2x4xf32>, tensor<4x2xf32>, tensor<2x4xf32>, tensor<4x2xf32>
}

// -----

// Partial blocks at the edges get their own scales.
// CHECK-LABEL: func @quantize_block_partial
// CHECK: te.quantize %{{.*}} mode{{ +}}block_128x128 usage{{ +}}both : tensor<300x200xf16> -> tensor<300x200xf8E4M3FN>, tensor<3x2xf32>, tensor<200x300xf8E4M3FN>, tensor<2x3xf32>
// CHECK: te.quantize %{{.*}} mode{{ +}}block_1x128 usage{{ +}}both : tensor<300x200xf16> -> tensor<300x200xf8E4M3FN>, tensor<300x2xf32>, tensor<200x300xf8E4M3FN>, tensor<200x3xf32>
func.func @quantize_block_partial(%x: tensor<300x200xf16>) -> (tensor<2x3xf32>, tensor<200x3xf32>) {
  %a:4 = te.quantize %x mode block_128x128 usage both
      : tensor<300x200xf16> -> tensor<300x200xf8E4M3FN>, tensor<3x2xf32>, tensor<200x300xf8E4M3FN>, tensor<2x3xf32>
  %b:4 = te.quantize %x mode block_1x128 usage both
      : tensor<300x200xf16> -> tensor<300x200xf8E4M3FN>, tensor<300x2xf32>, tensor<200x300xf8E4M3FN>, tensor<200x3xf32>
  return %a#3, %b#3 : tensor<2x3xf32>, tensor<200x3xf32>
}

//===----------------------------------------------------------------------===//
// te.dequantize
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @dequantize_per_tensor
// CHECK-SAME: (%[[D:[a-zA-Z0-9_]+]]: tensor<256x512xf8E4M3FN>, %[[E:[a-zA-Z0-9_]+]]: tensor<512x256xf8E5M2>, %[[S:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[Y0:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[S]] mode{{ +}}per_tensor : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xf32>
// CHECK: %[[Y1:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[S]] mode{{ +}}per_tensor : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xf16>
// CHECK: %[[Y2:[a-zA-Z0-9_]+]] = te.dequantize %[[E]], %[[S]] mode{{ +}}per_tensor : tensor<512x256xf8E5M2>, tensor<f32> -> tensor<512x256xbf16>
// CHECK: return %[[Y0]], %[[Y1]], %[[Y2]]
func.func @dequantize_per_tensor(%d: tensor<256x512xf8E4M3FN>, %e: tensor<512x256xf8E5M2>, %s: tensor<f32>) -> (tensor<256x512xf32>, tensor<256x512xf16>, tensor<512x256xbf16>) {
  %y0 = te.dequantize %d, %s mode per_tensor : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xf32>
  %y1 = te.dequantize %d, %s mode per_tensor : tensor<256x512xf8E4M3FN>, tensor<f32> -> tensor<256x512xf16>
  %y2 = te.dequantize %e, %s mode per_tensor : tensor<512x256xf8E5M2>, tensor<f32> -> tensor<512x256xbf16>
  return %y0, %y1, %y2 : tensor<256x512xf32>, tensor<256x512xf16>, tensor<512x256xbf16>
}

// -----

// CHECK-LABEL: func @dequantize_mxfp8
// CHECK-SAME: (%[[D:[a-zA-Z0-9_]+]]: tensor<256x512xf8E4M3FN>, %[[SR:[a-zA-Z0-9_]+]]: tensor<256x16xf8E8M0FNU>, %[[SC:[a-zA-Z0-9_]+]]: tensor<8x512xf8E8M0FNU>)
// CHECK: %[[Y0:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[SR]] mode{{ +}}mxfp8_1x32 : tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU> -> tensor<256x512xbf16>
// CHECK: %[[Y1:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[SC]] mode{{ +}}mxfp8_1x32 columnwise : tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU> -> tensor<256x512xf32>
// CHECK: %[[Y2:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[SC]] mode{{ +}}mxfp8_1x32 columnwise : tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU> -> tensor<256x512xf16>
// CHECK: return %[[Y0]], %[[Y1]], %[[Y2]]
func.func @dequantize_mxfp8(%d: tensor<256x512xf8E4M3FN>, %s_row: tensor<256x16xf8E8M0FNU>, %s_col: tensor<8x512xf8E8M0FNU>) -> (tensor<256x512xbf16>, tensor<256x512xf32>, tensor<256x512xf16>) {
  %y0 = te.dequantize %d, %s_row mode mxfp8_1x32 : tensor<256x512xf8E4M3FN>, tensor<256x16xf8E8M0FNU> -> tensor<256x512xbf16>
  %y1 = te.dequantize %d, %s_col mode mxfp8_1x32 columnwise : tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU> -> tensor<256x512xf32>
  %y2 = te.dequantize %d, %s_col mode mxfp8_1x32 columnwise : tensor<256x512xf8E4M3FN>, tensor<8x512xf8E8M0FNU> -> tensor<256x512xf16>
  return %y0, %y1, %y2 : tensor<256x512xbf16>, tensor<256x512xf32>, tensor<256x512xf16>
}

// -----

// CHECK-LABEL: func @dequantize_block
// CHECK-SAME: (%[[D:[a-zA-Z0-9_]+]]: tensor<256x512xf8E4M3FN>, %[[T:[a-zA-Z0-9_]+]]: tensor<512x256xf8E5M2>, %[[S1:[a-zA-Z0-9_]+]]: tensor<256x4xf32>, %[[S1T:[a-zA-Z0-9_]+]]: tensor<512x2xf32>, %[[S2:[a-zA-Z0-9_]+]]: tensor<2x4xf32>, %[[S2T:[a-zA-Z0-9_]+]]: tensor<4x2xf32>)
// CHECK: %[[Y0:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[S1]] mode{{ +}}block_1x128 : tensor<256x512xf8E4M3FN>, tensor<256x4xf32> -> tensor<256x512xbf16>
// CHECK: %[[Y1:[a-zA-Z0-9_]+]] = te.dequantize %[[T]], %[[S1T]] mode{{ +}}block_1x128 : tensor<512x256xf8E5M2>, tensor<512x2xf32> -> tensor<512x256xf32>
// CHECK: %[[Y2:[a-zA-Z0-9_]+]] = te.dequantize %[[D]], %[[S2]] mode{{ +}}block_128x128 : tensor<256x512xf8E4M3FN>, tensor<2x4xf32> -> tensor<256x512xf16>
// CHECK: %[[Y3:[a-zA-Z0-9_]+]] = te.dequantize %[[T]], %[[S2T]] mode{{ +}}block_128x128 : tensor<512x256xf8E5M2>, tensor<4x2xf32> -> tensor<512x256xbf16>
// CHECK: return %[[Y0]], %[[Y1]], %[[Y2]], %[[Y3]]
func.func @dequantize_block(%d: tensor<256x512xf8E4M3FN>, %t: tensor<512x256xf8E5M2>, %s1: tensor<256x4xf32>, %s1t: tensor<512x2xf32>, %s2: tensor<2x4xf32>, %s2t: tensor<4x2xf32>) -> (tensor<256x512xbf16>, tensor<512x256xf32>, tensor<256x512xf16>, tensor<512x256xbf16>) {
  %y0 = te.dequantize %d, %s1 mode block_1x128 : tensor<256x512xf8E4M3FN>, tensor<256x4xf32> -> tensor<256x512xbf16>
  %y1 = te.dequantize %t, %s1t mode block_1x128 : tensor<512x256xf8E5M2>, tensor<512x2xf32> -> tensor<512x256xf32>
  %y2 = te.dequantize %d, %s2 mode block_128x128 : tensor<256x512xf8E4M3FN>, tensor<2x4xf32> -> tensor<256x512xf16>
  %y3 = te.dequantize %t, %s2t mode block_128x128 : tensor<512x256xf8E5M2>, tensor<4x2xf32> -> tensor<512x256xbf16>
  return %y0, %y1, %y2, %y3 : tensor<256x512xbf16>, tensor<512x256xf32>, tensor<256x512xf16>, tensor<512x256xbf16>
}

// -----

// The results of te.quantize feed te.dequantize.
// CHECK-LABEL: func @quantize_dequantize_chain
// CHECK: %[[Q:[a-zA-Z0-9_]+]]:4 = te.quantize %{{.*}} mode{{ +}}mxfp8_1x32 usage{{ +}}both
// CHECK: te.dequantize %[[Q]]#0, %[[Q]]#1 mode{{ +}}mxfp8_1x32 :
// CHECK: te.dequantize %[[Q]]#2, %[[Q]]#3 mode{{ +}}mxfp8_1x32 columnwise :
func.func @quantize_dequantize_chain(%x: tensor<64x128xbf16>) -> (tensor<64x128xbf16>, tensor<64x128xbf16>) {
  %d, %s, %dc, %sc = te.quantize %x mode mxfp8_1x32 usage both
      : tensor<64x128xbf16> -> tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU>, tensor<64x128xf8E4M3FN>, tensor<2x128xf8E8M0FNU>
  %y0 = te.dequantize %d, %s mode mxfp8_1x32 : tensor<64x128xf8E4M3FN>, tensor<64x4xf8E8M0FNU> -> tensor<64x128xbf16>
  %y1 = te.dequantize %dc, %sc mode mxfp8_1x32 columnwise : tensor<64x128xf8E4M3FN>, tensor<2x128xf8E8M0FNU> -> tensor<64x128xbf16>
  return %y0, %y1 : tensor<64x128xbf16>, tensor<64x128xbf16>
}

//===----------------------------------------------------------------------===//
// te.scaled_matmul
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func @scaled_matmul_transposes
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<128x256xf8E4M3FN>, %[[AT:[a-zA-Z0-9_]+]]: tensor<256x128xf8E4M3FN>, %[[B:[a-zA-Z0-9_]+]]: tensor<256x64xf8E4M3FN>, %[[BT:[a-zA-Z0-9_]+]]: tensor<64x256xf8E5M2>, %[[SA:[a-zA-Z0-9_]+]]: tensor<f32>, %[[SB:[a-zA-Z0-9_]+]]: tensor<f32>)
// CHECK: %[[D0:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[B]] scales(%[[SA]], %[[SB]]) : tensor<128x256xf8E4M3FN>, tensor<256x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xf32>
// CHECK: %[[D1:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[BT]] scales(%[[SA]], %[[SB]]) transpose_b : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E5M2>, tensor<f32>, tensor<f32> -> tensor<128x64xbf16>
// CHECK: %[[D2:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[AT]], %[[B]] scales(%[[SA]], %[[SB]]) transpose_a : tensor<256x128xf8E4M3FN>, tensor<256x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xf16>
// CHECK: %[[D3:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[AT]], %[[BT]] scales(%[[SA]], %[[SB]]) transpose_a transpose_b : tensor<256x128xf8E4M3FN>, tensor<64x256xf8E5M2>, tensor<f32>, tensor<f32> -> tensor<128x64xbf16>
// CHECK: return %[[D0]], %[[D1]], %[[D2]], %[[D3]]
func.func @scaled_matmul_transposes(%a: tensor<128x256xf8E4M3FN>, %at: tensor<256x128xf8E4M3FN>, %b: tensor<256x64xf8E4M3FN>, %bt: tensor<64x256xf8E5M2>, %sa: tensor<f32>, %sb: tensor<f32>) -> (tensor<128x64xf32>, tensor<128x64xbf16>, tensor<128x64xf16>, tensor<128x64xbf16>) {
  %d0 = te.scaled_matmul %a, %b scales(%sa, %sb)
      : tensor<128x256xf8E4M3FN>, tensor<256x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xf32>
  %d1 = te.scaled_matmul %a, %bt scales(%sa, %sb) transpose_b
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E5M2>, tensor<f32>, tensor<f32> -> tensor<128x64xbf16>
  %d2 = te.scaled_matmul %at, %b scales(%sa, %sb) transpose_a
      : tensor<256x128xf8E4M3FN>, tensor<256x64xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xf16>
  %d3 = te.scaled_matmul %at, %bt scales(%sa, %sb) transpose_a transpose_b
      : tensor<256x128xf8E4M3FN>, tensor<64x256xf8E5M2>, tensor<f32>, tensor<f32> -> tensor<128x64xbf16>
  return %d0, %d1, %d2, %d3 : tensor<128x64xf32>, tensor<128x64xbf16>, tensor<128x64xf16>, tensor<128x64xbf16>
}

// -----

// CHECK-LABEL: func @scaled_matmul_bias_gelu
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<128x256xf8E4M3FN>, %[[B:[a-zA-Z0-9_]+]]: tensor<64x256xf8E4M3FN>, %[[SA:[a-zA-Z0-9_]+]]: tensor<f32>, %[[SB:[a-zA-Z0-9_]+]]: tensor<f32>, %[[BIAS:[a-zA-Z0-9_]+]]: tensor<64xbf16>, %[[BIAS32:[a-zA-Z0-9_]+]]: tensor<64xf32>)
// CHECK: %[[D0:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[B]] scales(%[[SA]], %[[SB]]) bias(%[[BIAS]]) transpose_b : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xbf16> -> tensor<128x64xbf16>
// CHECK: %[[D1:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[B]] scales(%[[SA]], %[[SB]]) transpose_b gelu : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xf16>
// CHECK: %[[D2:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[B]] scales(%[[SA]], %[[SB]]) bias(%[[BIAS32]]) transpose_b gelu : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32> -> tensor<128x64xf32>
// CHECK: return %[[D0]], %[[D1]], %[[D2]]
func.func @scaled_matmul_bias_gelu(%a: tensor<128x256xf8E4M3FN>, %b: tensor<64x256xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %bias: tensor<64xbf16>, %bias32: tensor<64xf32>) -> (tensor<128x64xbf16>, tensor<128x64xf16>, tensor<128x64xf32>) {
  %d0 = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) transpose_b
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xbf16> -> tensor<128x64xbf16>
  %d1 = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_b gelu
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<128x64xf16>
  %d2 = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias32) transpose_b gelu
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xf32> -> tensor<128x64xf32>
  return %d0, %d1, %d2 : tensor<128x64xbf16>, tensor<128x64xf16>, tensor<128x64xf32>
}

// -----

// An FP8 output takes out_scale and returns the amax of the output.
// CHECK-LABEL: func @scaled_matmul_fp8_output
// CHECK-SAME: (%[[A:[a-zA-Z0-9_]+]]: tensor<128x256xf8E4M3FN>, %[[B:[a-zA-Z0-9_]+]]: tensor<64x256xf8E4M3FN>, %[[SA:[a-zA-Z0-9_]+]]: tensor<f32>, %[[SB:[a-zA-Z0-9_]+]]: tensor<f32>, %[[OS:[a-zA-Z0-9_]+]]: tensor<f32>, %[[BIAS:[a-zA-Z0-9_]+]]: tensor<64xbf16>)
// CHECK: %[[D0:[a-zA-Z0-9_]+]], %[[M0:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[B]] scales(%[[SA]], %[[SB]]) out_scale(%[[OS]]) transpose_b : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<f32> -> tensor<128x64xf8E4M3FN>, tensor<f32>
// CHECK: %[[D1:[a-zA-Z0-9_]+]], %[[M1:[a-zA-Z0-9_]+]] = te.scaled_matmul %[[A]], %[[B]] scales(%[[SA]], %[[SB]]) bias(%[[BIAS]]) out_scale(%[[OS]]) transpose_b gelu : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xbf16>, tensor<f32> -> tensor<128x64xf8E5M2>, tensor<f32>
// CHECK: return %[[D0]], %[[M0]], %[[D1]], %[[M1]]
func.func @scaled_matmul_fp8_output(%a: tensor<128x256xf8E4M3FN>, %b: tensor<64x256xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>, %out_scale: tensor<f32>, %bias: tensor<64xbf16>) -> (tensor<128x64xf8E4M3FN>, tensor<f32>, tensor<128x64xf8E5M2>, tensor<f32>) {
  %d0, %amax0 = te.scaled_matmul %a, %b scales(%sa, %sb) out_scale(%out_scale) transpose_b
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<f32> -> tensor<128x64xf8E4M3FN>, tensor<f32>
  %d1, %amax1 = te.scaled_matmul %a, %b scales(%sa, %sb) bias(%bias) out_scale(%out_scale) transpose_b gelu
      : tensor<128x256xf8E4M3FN>, tensor<64x256xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<64xbf16>, tensor<f32> -> tensor<128x64xf8E5M2>, tensor<f32>
  return %d0, %amax0, %d1, %amax1 : tensor<128x64xf8E4M3FN>, tensor<f32>, tensor<128x64xf8E5M2>, tensor<f32>
}

// -----

// CHECK-LABEL: func @scaled_matmul_dynamic
// CHECK: te.scaled_matmul %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}}) transpose_a : tensor<?x?xf8E5M2>, tensor<?x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<?x32xbf16>
func.func @scaled_matmul_dynamic(%a: tensor<?x?xf8E5M2>, %b: tensor<?x32xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<?x32xbf16> {
  %d = te.scaled_matmul %a, %b scales(%sa, %sb) transpose_a
      : tensor<?x?xf8E5M2>, tensor<?x32xf8E4M3FN>, tensor<f32>, tensor<f32> -> tensor<?x32xbf16>
  return %d : tensor<?x32xbf16>
}

// -----

// An explicit default (`pow2_scales true`) is accepted with every mode and
// elided when printed; an epsilon of -0.0 is zero.
// CHECK-LABEL: func @explicit_defaults
// CHECK: te.quantize %{{.*}} scale(%{{.*}}) mode{{ +}}per_tensor :
// CHECK: te.quantize %{{.*}} mode{{ +}}block_1x128 epsilon -0.000000e+00 :
func.func @explicit_defaults(%x: tensor<256x512xbf16>, %s: tensor<f32>) {
  %d, %si, %a = te.quantize %x scale(%s) mode per_tensor pow2_scales true
      : tensor<256x512xbf16>, tensor<f32> -> tensor<256x512xf8E4M3FN>, tensor<f32>, tensor<f32>
  %b, %bs = te.quantize %x mode block_1x128 epsilon -0.0
      : tensor<256x512xbf16> -> tensor<256x512xf8E4M3FN>, tensor<256x4xf32>
  return
}
