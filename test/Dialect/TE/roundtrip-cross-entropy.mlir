// Round-trips te.cross_entropy and te.cross_entropy_backward through the custom and generic forms with every attribute, the vocab-parallel group included.
// RUN: te-opt %s | te-opt | FileCheck %s
// RUN: te-opt %s --mlir-print-op-generic | te-opt | FileCheck %s

// CHECK-LABEL: func @cross_entropy
// CHECK: te.cross_entropy %{{.*}}, %{{.*}} : tensor<2x16x1000xbf16>, tensor<2x16xi64> -> tensor<2x16xf32>, tensor<2x16x1000xbf16>
// CHECK: te.cross_entropy %{{.*}}, %{{.*}} label_smoothing 1.000000e-01 ignore_index -1 reduce_loss : tensor<32x1000xf32>, tensor<32xi32> -> tensor<f32>, tensor<32x1000xf32>
// CHECK: te.cross_entropy_backward %{{.*}}, %{{.*}} : tensor<2x16x1000xbf16>, tensor<2x16xf32> -> tensor<2x16x1000xbf16>
// CHECK: te.cross_entropy_backward %{{.*}}, %{{.*}} : tensor<32x1000xf32>, tensor<f32> -> tensor<32x1000xf32>
// CHECK: te.cross_entropy %{{.*}}, %{{.*}} reduce_loss : tensor<2x16x1000xbf16>, tensor<2x16xi64> -> tensor<f32>, tensor<2x16x1000xf32>
// CHECK: te.cross_entropy_backward %{{.*}}, %{{.*}} : tensor<2x16x1000xf32>, tensor<f32> -> tensor<2x16x1000xbf16>
func.func @cross_entropy(%x: tensor<2x16x1000xbf16>, %t: tensor<2x16xi64>, %x2: tensor<32x1000xf32>, %t2: tensor<32xi32>) {
  %l, %g = te.cross_entropy %x, %t : tensor<2x16x1000xbf16>, tensor<2x16xi64> -> tensor<2x16xf32>, tensor<2x16x1000xbf16>
  %l2, %g2 = te.cross_entropy %x2, %t2 label_smoothing 0.1 ignore_index -1 reduce_loss
      : tensor<32x1000xf32>, tensor<32xi32> -> tensor<f32>, tensor<32x1000xf32>
  %d = te.cross_entropy_backward %g, %l : tensor<2x16x1000xbf16>, tensor<2x16xf32> -> tensor<2x16x1000xbf16>
  %d2 = te.cross_entropy_backward %g2, %l2 : tensor<32x1000xf32>, tensor<f32> -> tensor<32x1000xf32>
  %l3, %g3 = te.cross_entropy %x, %t reduce_loss : tensor<2x16x1000xbf16>, tensor<2x16xi64> -> tensor<f32>, tensor<2x16x1000xf32>
  %d3 = te.cross_entropy_backward %g3, %l3 : tensor<2x16x1000xf32>, tensor<f32> -> tensor<2x16x1000xbf16>
  return
}

// CHECK-LABEL: func @vocab_parallel
// CHECK: te.cross_entropy %{{.*}}, %{{.*}} label_smoothing 1.000000e-01 reduce_loss group @tp : tensor<16x500xbf16>, tensor<16xi64> -> tensor<f32>, tensor<16x500xf32>
te.process_group @tp size 2
func.func @vocab_parallel(%x: tensor<16x500xbf16>, %t: tensor<16xi64>) {
  %l, %g = te.cross_entropy %x, %t label_smoothing 0.1 reduce_loss group @tp
      : tensor<16x500xbf16>, tensor<16xi64> -> tensor<f32>, tensor<16x500xf32>
  return
}
